/*
 * MakeCredential in software against TPM2_ActivateCredential in a real TPM
 * (swtpm/libtpms): the blob fleetd makes must open in the TPM that holds the
 * EK and the named AK, and nowhere else.
 *
 * EKs: the manufactured RSA-2048 EK (0x81010001, TCG L-1), the manufactured
 * ECC P-384 EK (0x81010016, TCG high-range template: nameAlg SHA-384,
 * AES-256-CFB, policy B), and an ECC P-256 EK created here from the TCG L-2
 * template. The AK is a restricted ECDSA P-256 signing primary under the
 * owner hierarchy; its name is computed here the way fleetd computes names
 * (nameAlg || SHA-256(marshaled TPMT_PUBLIC)) and checked against the name
 * the TPM itself reports.
 *
 * Every refusal test first shows the TPM refusing the altered input, then
 * activates the unaltered blob with the same handles, so a refusal caused
 * by anything other than the alteration (a bad policy session, a wrong
 * handle) fails the test instead of passing it.
 */
#include "tests/testutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <tss2/tss2_mu.h>

#include "lib/tpm_credential.h"
#include "tests/tpm/swtpm_harness.h"

#define EK_RSA_HANDLE 0x81010001
#define EK_P384_HANDLE 0x81010016

/* The TCG EK Credential Profile's policy digests, which its templates are
 * built from (the same values are in go-tpm's EK tests; PolicyA-SHA256 is
 * also the authPolicy swtpm_setup gives the RSA EK). PolicyA = PolicySecret
 * (TPM_RH_ENDORSEMENT); the high-range templates' policy B is
 * PolicyOR(PolicyA, PolicyC) with PolicyC = PolicyAuthorizeNV(0x01C07F02).
 * The TPM checks these: PolicyOR refuses a list without the session's
 * digest, and ActivateCredential refuses a final digest that is not the
 * EK's authPolicy (asserted again below with PolicyGetDigest). */
static const uint8_t policy_a_sha256[32] = {
	0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xb3, 0xf8, 0x1a, 0x90, 0xcc,
	0x8d, 0x46, 0xa5, 0xd7, 0x24, 0xfd, 0x52, 0xd7, 0x6e, 0x06, 0x52,
	0x0b, 0x64, 0xf2, 0xa1, 0xda, 0x1b, 0x33, 0x14, 0x69, 0xaa};
static const uint8_t policy_c_sha384[48] = {
	0xd6, 0x03, 0x2c, 0xe6, 0x1f, 0x2f, 0xb3, 0xc2, 0x40, 0xeb, 0x3c, 0xf6,
	0xa3, 0x32, 0x37, 0xef, 0x2b, 0x6a, 0x16, 0xf4, 0x29, 0x3c, 0x22, 0xb4,
	0x55, 0xe2, 0x61, 0xcf, 0xfd, 0x21, 0x7a, 0xd5, 0xb4, 0x94, 0x7c, 0x2d,
	0x73, 0xe6, 0x30, 0x05, 0xee, 0xd2, 0xdc, 0x2b, 0x35, 0x93, 0xd1, 0x65};

/* A key the tests use. swtpm holds only three transient objects (and a
 * persistent EK takes a slot while a command uses it), so the primaries
 * created here are loaded only while a test needs them: a primary made again
 * from the same template in the same hierarchy is the same key. */
struct key {
	ESYS_TR tr;
	TPM2B_PUBLIC *pub;
	uint8_t name[2 + 64];
	size_t name_len;
	bool transient;
	ESYS_TR hierarchy;
	TPM2B_PUBLIC tmpl;
};

struct fx {
	struct swtpm t;
	ESYS_CONTEXT *e;
	struct key ak, ak2, ek_rsa, ek_p384, ek_p256;
};

/* The AK: restricted ECDSA-SHA256 P-256 signing key. unique_tag makes a
 * second, different object from the same template. */
static TPM2B_PUBLIC ak_template(uint8_t unique_tag)
{
	TPM2B_PUBLIC p = {0};
	p.publicArea.type = TPM2_ALG_ECC;
	p.publicArea.nameAlg = TPM2_ALG_SHA256;
	p.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
					TPMA_OBJECT_SENSITIVEDATAORIGIN |
					TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_RESTRICTED |
					TPMA_OBJECT_SIGN_ENCRYPT;
	TPMS_ECC_PARMS *c = &p.publicArea.parameters.eccDetail;
	c->symmetric.algorithm = TPM2_ALG_NULL;
	c->scheme.scheme = TPM2_ALG_ECDSA;
	c->scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	c->curveID = TPM2_ECC_NIST_P256;
	c->kdf.scheme = TPM2_ALG_NULL;
	p.publicArea.unique.ecc.x.size = 1;
	p.publicArea.unique.ecc.x.buffer[0] = unique_tag;
	return p;
}

/* TCG EK Credential Profile, template L-2 (ECC NIST P-256). */
static TPM2B_PUBLIC ek_l2_template(void)
{
	TPM2B_PUBLIC p = {0};
	p.publicArea.type = TPM2_ALG_ECC;
	p.publicArea.nameAlg = TPM2_ALG_SHA256;
	p.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
					TPMA_OBJECT_SENSITIVEDATAORIGIN |
					TPMA_OBJECT_ADMINWITHPOLICY | TPMA_OBJECT_RESTRICTED |
					TPMA_OBJECT_DECRYPT;
	p.publicArea.authPolicy.size = sizeof(policy_a_sha256);
	memcpy(p.publicArea.authPolicy.buffer, policy_a_sha256, sizeof(policy_a_sha256));
	TPMS_ECC_PARMS *c = &p.publicArea.parameters.eccDetail;
	c->symmetric.algorithm = TPM2_ALG_AES;
	c->symmetric.keyBits.aes = 128;
	c->symmetric.mode.aes = TPM2_ALG_CFB;
	c->scheme.scheme = TPM2_ALG_NULL;
	c->curveID = TPM2_ECC_NIST_P256;
	c->kdf.scheme = TPM2_ALG_NULL;
	p.publicArea.unique.ecc.x.size = 32;
	p.publicArea.unique.ecc.y.size = 32;
	return p;
}

/* Name = nameAlg || H_nameAlg(marshaled TPMT_PUBLIC), computed in software
 * and required to equal the name the TPM reports for the loaded object. */
static void fill_name(struct fx *f, struct key *k)
{
	uint8_t buf[sizeof(TPMT_PUBLIC)];
	size_t off = 0;
	unsigned int n = 0;
	TPMI_ALG_HASH alg = k->pub->publicArea.nameAlg;
	const EVP_MD *md = alg == TPM2_ALG_SHA256 ? EVP_sha256() : EVP_sha384();
	assert_true(alg == TPM2_ALG_SHA256 || alg == TPM2_ALG_SHA384);
	assert_int_equal(Tss2_MU_TPMT_PUBLIC_Marshal(&k->pub->publicArea, buf, sizeof(buf), &off),
			 TSS2_RC_SUCCESS);
	k->name[0] = (uint8_t)(alg >> 8);
	k->name[1] = (uint8_t)alg;
	assert_int_equal(EVP_Digest(buf, off, k->name + 2, &n, md, NULL), 1);
	k->name_len = 2 + n;

	TPM2B_NAME *tpm_name = NULL;
	assert_int_equal(Esys_TR_GetName(f->e, k->tr, &tpm_name), TSS2_RC_SUCCESS);
	assert_int_equal(tpm_name->size, k->name_len);
	assert_memory_equal(tpm_name->name, k->name, k->name_len);
	Esys_Free(tpm_name);
}

static void key_load(struct fx *f, struct key *k)
{
	if (!k->transient || k->tr != ESYS_TR_NONE)
		return;
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION pcrs = {0};
	TPM2B_PUBLIC *pub = NULL;
	assert_int_equal(Esys_CreatePrimary(f->e, k->hierarchy, ESYS_TR_PASSWORD, ESYS_TR_NONE,
					    ESYS_TR_NONE, &sens, &k->tmpl, &outside, &pcrs, &k->tr,
					    &pub, NULL, NULL, NULL),
			 TSS2_RC_SUCCESS);
	if (!k->pub) {
		k->pub = pub;
		fill_name(f, k);
		return;
	}
	/* Re-created: it must be the very key the blobs were made for. */
	assert_memory_equal(&pub->publicArea.unique, &k->pub->publicArea.unique,
			    sizeof(pub->publicArea.unique));
	Esys_Free(pub);
}

static void key_unload(struct fx *f, struct key *k)
{
	if (!k->transient || k->tr == ESYS_TR_NONE)
		return;
	assert_int_equal(Esys_FlushContext(f->e, k->tr), TSS2_RC_SUCCESS);
	k->tr = ESYS_TR_NONE;
}

static void primary(struct fx *f, ESYS_TR hierarchy, TPM2B_PUBLIC tmpl, struct key *k)
{
	k->transient = true;
	k->hierarchy = hierarchy;
	k->tmpl = tmpl;
	k->tr = ESYS_TR_NONE;
	key_load(f, k);
}

static void load_persistent(struct fx *f, TPM2_HANDLE h, struct key *k)
{
	assert_int_equal(Esys_TR_FromTPMPublic(f->e, h, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       &k->tr),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_ReadPublic(f->e, k->tr, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					 &k->pub, NULL, NULL),
			 TSS2_RC_SUCCESS);
	fill_name(f, k);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f || swtpm_start(&f->t, NULL) != 0 || !(f->e = swtpm_esys(&f->t))) {
		free(f);
		return -1;
	}
	/* Loaded at all times: the AK. The others only while used. */
	primary(f, ESYS_TR_RH_OWNER, ak_template(1), &f->ak);
	primary(f, ESYS_TR_RH_OWNER, ak_template(2), &f->ak2);
	key_unload(f, &f->ak2);
	primary(f, ESYS_TR_RH_ENDORSEMENT, ek_l2_template(), &f->ek_p256);
	key_unload(f, &f->ek_p256);
	load_persistent(f, EK_RSA_HANDLE, &f->ek_rsa);
	load_persistent(f, EK_P384_HANDLE, &f->ek_p384);
	/* The two AKs must differ, or the wrong-name test proves nothing. */
	assert_memory_not_equal(f->ak.name, f->ak2.name, f->ak.name_len);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct key *keys[] = {&f->ak, &f->ak2, &f->ek_rsa, &f->ek_p384, &f->ek_p256};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		Esys_Free(keys[i]->pub);
	swtpm_stop(&f->t);
	free(f);
	return 0;
}

/* A policy session that satisfies the EK's authPolicy: PolicySecret
 * (TPM_RH_ENDORSEMENT) in the EK's nameAlg, then, for the high-range
 * templates, PolicyOR(PolicyA, PolicyC). */
static ESYS_TR ek_policy_session(struct fx *f, const TPMT_PUBLIC *ek)
{
	ESYS_TR s = ESYS_TR_NONE;
	TPMT_SYM_DEF sym = {.algorithm = TPM2_ALG_NULL};
	TPM2B_DIGEST *d = NULL;
	assert_int_equal(Esys_StartAuthSession(f->e, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       ESYS_TR_NONE, ESYS_TR_NONE, NULL, TPM2_SE_POLICY,
					       &sym, ek->nameAlg, &s),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_TRSess_SetAttributes(f->e, s, TPMA_SESSION_CONTINUESESSION, 0xff),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_PolicySecret(f->e, ESYS_TR_RH_ENDORSEMENT, s, ESYS_TR_PASSWORD,
					   ESYS_TR_NONE, ESYS_TR_NONE, NULL, NULL, NULL, 0, NULL,
					   NULL),
			 TSS2_RC_SUCCESS);
	assert_int_equal(Esys_PolicyGetDigest(f->e, s, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					      &d),
			 TSS2_RC_SUCCESS);
	if (ek->nameAlg == TPM2_ALG_SHA384) {
		TPML_DIGEST list = {.count = 2};
		list.digests[0] = *d;
		list.digests[1].size = sizeof(policy_c_sha384);
		memcpy(list.digests[1].buffer, policy_c_sha384, sizeof(policy_c_sha384));
		Esys_Free(d);
		assert_int_equal(Esys_PolicyOR(f->e, s, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
					       &list),
				 TSS2_RC_SUCCESS);
		assert_int_equal(Esys_PolicyGetDigest(f->e, s, ESYS_TR_NONE, ESYS_TR_NONE,
						      ESYS_TR_NONE, &d),
				 TSS2_RC_SUCCESS);
	}
	assert_int_equal(d->size, ek->authPolicy.size);
	assert_memory_equal(d->buffer, ek->authPolicy.buffer, d->size);
	Esys_Free(d);
	return s;
}

/* The blob as fleetd sends it: two marshaled structures, each of which must
 * parse back completely. */
struct blob {
	TPM2B_ID_OBJECT id;
	TPM2B_ENCRYPTED_SECRET es;
};

static struct blob make(const struct key *ek, const uint8_t *secret, size_t len,
			const struct key *obj)
{
	struct fleet_buf id, es;
	struct blob b = {0};
	size_t off = 0;
	fb_init(&id);
	fb_init(&es);
	assert_int_equal(fleet_make_credential(&ek->pub->publicArea, secret, len, obj->name,
					       obj->name_len, &id, &es, NULL),
			 FLEET_OK);
	assert_int_equal(Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(id.data, id.len, &off, &b.id),
			 TSS2_RC_SUCCESS);
	assert_int_equal(off, id.len);
	off = 0;
	assert_int_equal(Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(es.data, es.len, &off, &b.es),
			 TSS2_RC_SUCCESS);
	assert_int_equal(off, es.len);
	fb_free(&id);
	fb_free(&es);
	return b;
}

/* TPM2_ActivateCredential(activate, ek); on success *out holds the secret. */
static TSS2_RC activate(struct fx *f, const struct key *act, const struct key *ek,
			const struct blob *b, TPM2B_DIGEST **out)
{
	ESYS_TR s = ek_policy_session(f, &ek->pub->publicArea);
	*out = NULL;
	TSS2_RC rc = Esys_ActivateCredential(f->e, act->tr, ek->tr, ESYS_TR_PASSWORD, s,
					     ESYS_TR_NONE, &b->id, &b->es, out);
	assert_int_equal(Esys_FlushContext(f->e, s), TSS2_RC_SUCCESS);
	return rc;
}

static void assert_activates(struct fx *f, const struct key *act, const struct key *ek,
			     const struct blob *b, const uint8_t *secret, size_t len)
{
	TPM2B_DIGEST *got = NULL;
	TSS2_RC rc = activate(f, act, ek, b, &got);
	if (rc != TSS2_RC_SUCCESS)
		fail_msg("ActivateCredential failed: 0x%x", rc);
	assert_int_equal(got->size, len);
	assert_memory_equal(got->buffer, secret, len);
	Esys_Free(got);
}

/* The TPM's format-1 response code without its parameter/handle number. */
static TSS2_RC rc_base(TSS2_RC rc)
{
	return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3F)) : rc;
}

/* A refusal by the TPM on the blob itself, not by authorization: a failed
 * policy or password would make a negative test pass for the wrong reason. */
static void assert_refused(struct fx *f, const struct key *act, const struct key *ek,
			   const struct blob *b)
{
	TPM2B_DIGEST *got = NULL;
	TSS2_RC rc = activate(f, act, ek, b, &got);
	Esys_Free(got);
	printf("  refused with 0x%x\n", rc);
	assert_int_not_equal(rc, TSS2_RC_SUCCESS);
	assert_int_equal(rc & TSS2_RC_LAYER_MASK, TSS2_TPM_RC_LAYER); /* the TPM said no */
	TSS2_RC base = rc_base(rc);
	assert_int_not_equal(base, TPM2_RC_POLICY_FAIL);
	assert_int_not_equal(base, TPM2_RC_AUTH_FAIL);
	assert_int_not_equal(base, TPM2_RC_BAD_AUTH);
	assert_int_not_equal(base, TPM2_RC_HANDLE);
}

static void random_secret(uint8_t *s, size_t len)
{
	assert_int_equal(RAND_bytes(s, (int)len), 1);
}

static void round_trip(struct fx *f, const struct key *ek)
{
	uint8_t secret[32];
	random_secret(secret, sizeof(secret));
	struct blob b = make(ek, secret, sizeof(secret), &f->ak);
	assert_activates(f, &f->ak, ek, &b, secret, sizeof(secret));
}

static void rsa_ek_round_trip(void **state)
{
	struct fx *f = *state;
	assert_int_equal(f->ek_rsa.pub->publicArea.type, TPM2_ALG_RSA);
	struct blob b;
	round_trip(f, &f->ek_rsa);
	/* RSA-2048 OAEP carries the seed in one modulus-sized block. */
	b = make(&f->ek_rsa, (const uint8_t *)"x", 1, &f->ak);
	assert_int_equal(b.es.size, 256);
	assert_activates(f, &f->ak, &f->ek_rsa, &b, (const uint8_t *)"x", 1);
}

static void ecc_p384_ek_round_trip(void **state)
{
	struct fx *f = *state;
	const TPMT_PUBLIC *p = &f->ek_p384.pub->publicArea;
	/* The high-range template: the code must have read SHA-384 and
	 * AES-256 from the public area, or the TPM would not open it. */
	assert_int_equal(p->nameAlg, TPM2_ALG_SHA384);
	assert_int_equal(p->parameters.eccDetail.symmetric.keyBits.aes, 256);
	round_trip(f, &f->ek_p384);
	/* The largest secret the EK's nameAlg allows (48 bytes) opens too. */
	uint8_t big[48];
	random_secret(big, sizeof(big));
	struct blob b = make(&f->ek_p384, big, sizeof(big), &f->ak);
	assert_activates(f, &f->ak, &f->ek_p384, &b, big, sizeof(big));
}

static void ecc_p256_ek_round_trip(void **state)
{
	struct fx *f = *state;
	assert_int_equal(f->ek_p256.pub->publicArea.parameters.eccDetail.curveID,
			 TPM2_ECC_NIST_P256);
	key_load(f, &f->ek_p256);
	round_trip(f, &f->ek_p256);
	key_unload(f, &f->ek_p256);
}

/* A blob bound to ak2's name does not open with ak loaded: the name is in
 * both the symmetric key derivation and the integrity HMAC. */
static void refuses_blob_bound_to_another_name(void **state)
{
	struct fx *f = *state;
	const struct key *eks[] = {&f->ek_rsa, &f->ek_p384};
	for (size_t i = 0; i < 2; i++) {
		uint8_t secret[32];
		random_secret(secret, sizeof(secret));
		struct blob b = make(eks[i], secret, sizeof(secret), &f->ak2);
		TPM2B_DIGEST *got = NULL;
		TSS2_RC rc = activate(f, &f->ak, eks[i], &b, &got);
		Esys_Free(got);
		assert_int_equal(rc_base(rc), TPM2_RC_INTEGRITY);
		key_unload(f, &f->ak);
		key_load(f, &f->ak2);
		assert_activates(f, &f->ak2, eks[i], &b, secret, sizeof(secret));
		key_unload(f, &f->ak2);
		key_load(f, &f->ak);
	}
}

/* The seed is wrapped to one EK: another EK of the same TPM cannot open it.
 * (swtpm 0.7.1 answers TPM_RC_SIZE: an OAEP block is no TPMS_ECC_POINT.) */
static void refuses_rsa_blob_on_ecc_ek(void **state)
{
	struct fx *f = *state;
	uint8_t secret[32];
	random_secret(secret, sizeof(secret));
	struct blob b = make(&f->ek_rsa, secret, sizeof(secret), &f->ak);
	assert_refused(f, &f->ak, &f->ek_p384, &b);
	key_load(f, &f->ek_p256);
	assert_refused(f, &f->ak, &f->ek_p256, &b);
	key_unload(f, &f->ek_p256);
	assert_activates(f, &f->ak, &f->ek_rsa, &b, secret, sizeof(secret));
}

/* One flipped bit anywhere in the credential blob (the HMAC or the
 * encrypted secret) fails the TPM's integrity check before decryption. */
static void refuses_flipped_credential_blob(void **state)
{
	struct fx *f = *state;
	struct key *eks[] = {&f->ek_rsa, &f->ek_p384, &f->ek_p256};
	for (size_t i = 0; i < 3; i++) {
		uint8_t secret[32];
		random_secret(secret, sizeof(secret));
		key_load(f, eks[i]);
		struct blob b = make(eks[i], secret, sizeof(secret), &f->ak);
		/* credential = TPM2B(outerHMAC) || encIdentity: flip one byte of
		 * the HMAC, then one of the ciphertext. */
		size_t where[2] = {2, b.id.size - 1};
		for (size_t w = 0; w < 2; w++) {
			struct blob bad = b;
			bad.id.credential[where[w]] ^= 0x01;
			TPM2B_DIGEST *got = NULL;
			TSS2_RC rc = activate(f, &f->ak, eks[i], &bad, &got);
			Esys_Free(got);
			assert_int_equal(rc_base(rc), TPM2_RC_INTEGRITY);
		}
		assert_activates(f, &f->ak, eks[i], &b, secret, sizeof(secret));
		key_unload(f, eks[i]);
	}
}

/* A flipped byte in the encrypted seed: RSA-OAEP fails to decode, or the
 * ECC point leaves the curve (or yields another seed, which the HMAC
 * catches). Either way nothing comes out. The codes differ by TPM (swtpm
 * 0.7.1: TPM_RC_FAILURE for the OAEP block, TPM_RC_ECC_POINT for the
 * point), so only "the TPM refused, and not for authorization" is pinned. */
static void refuses_flipped_encrypted_secret(void **state)
{
	struct fx *f = *state;
	struct key *eks[] = {&f->ek_rsa, &f->ek_p384, &f->ek_p256};
	for (size_t i = 0; i < 3; i++) {
		uint8_t secret[32];
		random_secret(secret, sizeof(secret));
		key_load(f, eks[i]);
		struct blob b = make(eks[i], secret, sizeof(secret), &f->ak);
		struct blob bad = b;
		/* The last byte: RSA ciphertext, or the point's y coordinate. */
		bad.es.secret[b.es.size - 1] ^= 0x01;
		assert_refused(f, &f->ak, eks[i], &bad);
		assert_activates(f, &f->ak, eks[i], &b, secret, sizeof(secret));
		key_unload(f, eks[i]);
	}
}

int main(void)
{
	swtpm_require_or_skip();
	/* The refusals are expected; ESYS would log each as an error. The
	 * tests print the response codes themselves. TSS2_LOG=esys+debug in
	 * the environment still wins. */
	setenv("TSS2_LOG", "esys+none", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rsa_ek_round_trip),
		cmocka_unit_test(ecc_p384_ek_round_trip),
		cmocka_unit_test(ecc_p256_ek_round_trip),
		cmocka_unit_test(refuses_blob_bound_to_another_name),
		cmocka_unit_test(refuses_rsa_blob_on_ecc_ek),
		cmocka_unit_test(refuses_flipped_credential_blob),
		cmocka_unit_test(refuses_flipped_encrypted_secret),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
