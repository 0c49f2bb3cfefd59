/*
 * test_attest_intake_ek.c: the EK stage of fleet_attest_intake with EK
 * certificates minted here, for the cases no swtpm certificate shows: an
 * RSA EK certificate that labels its key id-RSAES-OAEP (as some real ones
 * do), one whose rsaEncryption SPKI omits its NULL parameters (so its
 * ek_hash is not the key's canonical SPKI hash), public areas whose
 * attributes are not an EK's, and public areas of the certified key whose
 * nameAlg, symmetric or scheme MakeCredential cannot use (refused at intake
 * with the reason fleet_make_credential gives for the same area).
 *
 * The intake carries a one-byte AK, so an intake whose EKs pass stops at
 * "ak-malformed": that reason says the EK stage let it through.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>
#include <tss2/tss2_mu.h>

#include "fleetd/attest/attest_server.h"
#include "lib/hex.h"
#include "lib/tpm_alg.h"
#include "lib/tpm_credential.h"
#include "tests/unit/x509_mint.h"

#define EK_ATTRS                                                                         \
	(TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | \
	 TPMA_OBJECT_ADMINWITHPOLICY | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT)

static const time_t NOW = 1796018400; /* 2026-11-30 */
#define YEAR (365 * 24 * 3600)

struct fx {
	EVP_PKEY *root_key, *ek_key, *ecc_ek_key;
	X509 *root;
	char *dir;
	struct fleet_ek_roots *roots;
	struct fleet_attest_env env;
};
static struct fx F;

static int setup(void **st)
{
	char path[600];
	FILE *f;
	(void)st;
	F.root_key = mint_key_ec();
	F.ek_key = mint_key_rsa();
	F.ecc_ek_key = mint_key_ec();
	struct mint r = {.key = F.root_key, .cn = "Mint Attest EK Root", .ca = 1,
			 .not_before = NOW - YEAR, .not_after = NOW + 10 * YEAR};
	F.root = mint_cert(&r);
	F.dir = make_temp_dir("attestek");
	snprintf(path, sizeof(path), "%s/root.pem", F.dir);
	if (!(f = fopen(path, "w")) || PEM_write_X509(f, F.root) != 1)
		return -1;
	fclose(f);
	if (fleet_ek_roots_load(F.dir, &F.roots, NULL) != FLEET_OK)
		return -1;
	F.env.roots = F.roots;
	F.env.now = NOW;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	fleet_ek_roots_free(F.roots);
	rm_rf(F.dir);
	free(F.dir);
	X509_free(F.root);
	EVP_PKEY_free(F.root_key);
	EVP_PKEY_free(F.ek_key);
	EVP_PKEY_free(F.ecc_ek_key);
	return 0;
}

/* An intake with this RSA EK certificate and public area and nothing
 * else that is valid. */
static void intake_with_spki(struct fleet_wire_intake *in, int oaep, const char *spki_oid,
			     TPMA_OBJECT attrs)
{
	struct mint m = {.key = F.ek_key, .issuer = F.root, .issuer_key = F.root_key,
			 .not_before = NOW - YEAR, .not_after = NOW + YEAR, .tcg_san = 1,
			 .oaep_spki = oaep, .spki_oid = spki_oid};
	X509 *x = mint_cert(&m);
	TPM2B_PUBLIC pub = {0};
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;

	memset(in, 0, sizeof(*in));
	strcpy(in->serial, "SN-1");
	in->ek_rsa.present = true;
	in->ek_rsa.cert.data = mint_der(x, &in->ek_rsa.cert.len);
	X509_free(x);
	mint_tpm_public(F.ek_key, attrs, &pub.publicArea);
	/* An EK template's symmetric definition (AES-128-CFB). */
	pub.publicArea.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_AES;
	pub.publicArea.parameters.rsaDetail.symmetric.keyBits.aes = 128;
	pub.publicArea.parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CFB;
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off), 0);
	in->ek_rsa.pub.data = malloc(off);
	memcpy(in->ek_rsa.pub.data, buf, off);
	in->ek_rsa.pub.len = off;
	in->ak_public.data = malloc(1);
	in->ak_public.data[0] = 0;
	in->ak_public.len = 1;
}

static void intake_with(struct fleet_wire_intake *in, int oaep, TPMA_OBJECT attrs)
{
	intake_with_spki(in, oaep, NULL, attrs);
}

static const char *intake_reason(const struct fleet_wire_intake *in)
{
	struct fleet_attest_session s;
	memset(&s, 0, sizeof(s));
	struct fleet_decision d = fleet_attest_intake(&F.env, in, &s);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_non_null(d.reason);
	return d.reason;
}

static void test_plain_ek_passes(void **st)
{
	struct fleet_wire_intake in;
	(void)st;
	intake_with(&in, 0, EK_ATTRS);
	assert_string_equal(intake_reason(&in), "ak-malformed");
	fleet_wire_intake_free(&in);
}

/* An OAEP-labelled SPKI: the key parameters match, and ek_hash is the
 * key's canonical hash, the public area's (SPIRE's pub_hash), not a hash of
 * the label. */
static void test_oaep_labelled_ek_passes(void **st)
{
	struct fleet_wire_intake in;
	X509 *x = NULL;
	char cert_hash[65], pub_hex[65];
	uint8_t pub_hash[32];
	TPM2B_PUBLIC pub;
	(void)st;
	intake_with(&in, 1, EK_ATTRS);
	assert_int_equal(fleet_ek_cert_load(in.ek_rsa.cert.data, in.ek_rsa.cert.len, &x, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_ek_hash(x, cert_hash), FLEET_OK);
	X509_free(x);
	assert_int_equal(fleet_tpm_public_parse(in.ek_rsa.pub.data, in.ek_rsa.pub.len, &pub, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_tpm_public_spki_sha256(&pub.publicArea, pub_hash), FLEET_OK);
	fleet_hex_encode(pub_hash, 32, pub_hex);
	assert_string_equal(cert_hash, pub_hex); /* one key, one hash */
	assert_string_equal(intake_reason(&in), "ak-malformed");
	fleet_wire_intake_free(&in);
}

/* rsaEncryption without its NULL parameters: OpenSSL reads the same key,
 * and ek_hash, computed from the key and not from the certificate's SPKI
 * bytes, is the public area's: one key has one ek_hash, so the binding is
 * not ambiguous and the EK passes. */
static void test_ek_spki_without_null_passes(void **st)
{
	struct fleet_wire_intake in;
	(void)st;
	intake_with_spki(&in, 0, "1.2.840.113549.1.1.1", EK_ATTRS);
	assert_string_equal(intake_reason(&in), "ak-malformed");
	fleet_wire_intake_free(&in);
}

static void test_ek_attributes(void **st)
{
	static const struct {
		TPMA_OBJECT attrs;
		const char *reason;
	} cases[] = {
		{EK_ATTRS & ~TPMA_OBJECT_RESTRICTED, "ek-not-restricted"},
		{EK_ATTRS & ~TPMA_OBJECT_DECRYPT, "ek-not-decrypt"},
		{EK_ATTRS | TPMA_OBJECT_SIGN_ENCRYPT, "ek-sign-set"},
		{EK_ATTRS & ~TPMA_OBJECT_FIXEDTPM, "ek-not-fixedtpm"},
		{EK_ATTRS & ~TPMA_OBJECT_FIXEDPARENT, "ek-not-fixedparent"},
	};
	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fleet_wire_intake in;
		intake_with(&in, 1, cases[i].attrs);
		assert_string_equal(intake_reason(&in), cases[i].reason);
		fleet_wire_intake_free(&in);
	}
}

/* A certificate for another key than the public area's. */
static void test_ek_key_mismatch(void **st)
{
	struct fleet_wire_intake in;
	EVP_PKEY *other = mint_key_rsa();
	TPM2B_PUBLIC pub = {0};
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	(void)st;
	intake_with(&in, 0, EK_ATTRS);
	mint_tpm_public(other, EK_ATTRS, &pub.publicArea);
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off), 0);
	free(in.ek_rsa.pub.data);
	in.ek_rsa.pub.data = malloc(off);
	memcpy(in.ek_rsa.pub.data, buf, off);
	in.ek_rsa.pub.len = off;
	assert_string_equal(intake_reason(&in), "ek-key-mismatch");
	fleet_wire_intake_free(&in);
	EVP_PKEY_free(other);
}

/* The EK public area of slot ek, parsed back, changed by mutate, and
 * marshaled into the intake again: the key (so the certificate's match)
 * stays what it was. */
static void mutate_public(struct fleet_wire_ek *ek, void (*mutate)(TPMT_PUBLIC *),
			  TPMT_PUBLIC *out)
{
	TPM2B_PUBLIC pub;
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	assert_int_equal(fleet_tpm_public_parse(ek->pub.data, ek->pub.len, &pub, NULL), FLEET_OK);
	mutate(&pub.publicArea);
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off), 0);
	free(ek->pub.data);
	ek->pub.data = malloc(off);
	memcpy(ek->pub.data, buf, off);
	ek->pub.len = off;
	*out = pub.publicArea;
}

/* Add an ECC P-256 EK (L-2 template: SHA-256, AES-128-CFB, no scheme, no
 * KDF) with its certificate to an intake. */
static void add_ecc_ek(struct fleet_wire_intake *in)
{
	struct mint m = {.key = F.ecc_ek_key, .issuer = F.root, .issuer_key = F.root_key,
			 .not_before = NOW - YEAR, .not_after = NOW + YEAR, .tcg_san = 1};
	X509 *x = mint_cert(&m);
	TPM2B_PUBLIC pub = {0};
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	TPMS_ECC_PARMS *c = &pub.publicArea.parameters.eccDetail;

	in->ek_ecc.present = true;
	in->ek_ecc.cert.data = mint_der(x, &in->ek_ecc.cert.len);
	X509_free(x);
	mint_tpm_public(F.ecc_ek_key, EK_ATTRS, &pub.publicArea);
	c->symmetric.algorithm = TPM2_ALG_AES;
	c->symmetric.keyBits.aes = 128;
	c->symmetric.mode.aes = TPM2_ALG_CFB;
	c->scheme.scheme = TPM2_ALG_NULL;
	memset(&c->scheme.details, 0, sizeof(c->scheme.details));
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, buf, sizeof(buf), &off), 0);
	in->ek_ecc.pub.data = malloc(off);
	memcpy(in->ek_ecc.pub.data, buf, off);
	in->ek_ecc.pub.len = off;
}

static void name_sha1(TPMT_PUBLIC *p)
{
	p->nameAlg = TPM2_ALG_SHA1;
}

static void name_sm3(TPMT_PUBLIC *p)
{
	p->nameAlg = TPM2_ALG_SM3_256;
}

static void sym_null(TPMT_PUBLIC *p)
{
	memset(&p->parameters.asymDetail.symmetric, 0, sizeof(p->parameters.asymDetail.symmetric));
	p->parameters.asymDetail.symmetric.algorithm = TPM2_ALG_NULL;
}

static void sym_ctr(TPMT_PUBLIC *p)
{
	p->parameters.asymDetail.symmetric.mode.aes = TPM2_ALG_CTR;
}

static void sym_aes192(TPMT_PUBLIC *p)
{
	p->parameters.asymDetail.symmetric.keyBits.aes = 192;
}

static void rsa_oaep(TPMT_PUBLIC *p)
{
	p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_OAEP;
	p->parameters.rsaDetail.scheme.details.oaep.hashAlg = TPM2_ALG_SHA256;
}

static void rsa_rsaes(TPMT_PUBLIC *p)
{
	p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSAES;
}

static void ecc_ecdh(TPMT_PUBLIC *p)
{
	p->parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDH;
	p->parameters.eccDetail.scheme.details.ecdh.hashAlg = TPM2_ALG_SHA256;
}

static void ecc_kdf(TPMT_PUBLIC *p)
{
	p->parameters.eccDetail.kdf.scheme = TPM2_ALG_KDF1_SP800_108;
	p->parameters.eccDetail.kdf.details.kdf1_sp800_108.hashAlg = TPM2_ALG_SHA256;
}

static void unchanged(TPMT_PUBLIC *p)
{
	(void)p;
}

/* What fleet_make_credential says about this EK public area: the reason
 * the challenge would have failed with. */
static const char *credential_reason(const TPMT_PUBLIC *ek)
{
	static const uint8_t name[34] = {0x00, 0x0b};
	uint8_t secret[FLEET_WIRE_ID_LEN] = {1};
	struct fleet_buf id, es;
	const char *reason = NULL;
	fb_init(&id);
	fb_init(&es);
	fleet_err e = fleet_make_credential(ek, secret, sizeof(secret), name, sizeof(name), &id,
					    &es, &reason);
	fb_free(&id);
	fb_free(&es);
	if (e == FLEET_OK)
		return NULL;
	assert_non_null(reason); /* an EK refusal always says why */
	return reason;
}

static const struct {
	const char *what;
	void (*mutate)(TPMT_PUBLIC *);
	const char *reason;
} rsa_cases[] = {
	{"nameAlg SHA-1", name_sha1, "ek-name-alg-unsupported"},
	{"nameAlg SM3-256", name_sm3, "ek-name-alg-unsupported"},
	{"symmetric NULL", sym_null, "ek-symmetric-unsupported"},
	{"symmetric AES-128-CTR", sym_ctr, "ek-symmetric-unsupported"},
	{"symmetric AES-192-CFB", sym_aes192, "ek-symmetric-unsupported"},
	{"scheme OAEP", rsa_oaep, "ek-scheme-unsupported"},
	{"scheme RSAES", rsa_rsaes, "ek-scheme-unsupported"},
}, ecc_cases[] = {
	{"nameAlg SHA-1", name_sha1, "ek-name-alg-unsupported"},
	{"nameAlg SM3-256", name_sm3, "ek-name-alg-unsupported"},
	{"symmetric NULL", sym_null, "ek-symmetric-unsupported"},
	{"symmetric AES-128-CTR", sym_ctr, "ek-symmetric-unsupported"},
	{"scheme ECDH", ecc_ecdh, "ek-scheme-unsupported"},
	{"KDF SP800-108", ecc_kdf, "ek-kdf-unsupported"},
};

/* The reason intake gives: the rule's, except that an OpenSSL without SM3
 * makes an SM3 public area unparseable, refused one step earlier. */
static const char *intake_expects(void (*mutate)(TPMT_PUBLIC *), const char *reason)
{
	if (mutate == name_sm3 && !fleet_hash_alg_md(TPM2_ALG_SM3_256))
		return "ek-public-malformed";
	return reason;
}

/* The RSA EK: the certificate still names the public area's key, so each
 * refusal is the credential rule's, not the key match's; and it is the
 * reason MakeCredential gives for the very same area. */
static void test_rsa_ek_makecredential_cannot_use(void **st)
{
	(void)st;
	for (size_t i = 0; i < sizeof(rsa_cases) / sizeof(rsa_cases[0]); i++) {
		struct fleet_wire_intake in;
		TPMT_PUBLIC pub;
		print_message("RSA EK, %s\n", rsa_cases[i].what);
		intake_with(&in, 0, EK_ATTRS);
		mutate_public(&in.ek_rsa, rsa_cases[i].mutate, &pub);
		assert_string_equal(intake_reason(&in),
				    intake_expects(rsa_cases[i].mutate, rsa_cases[i].reason));
		assert_string_equal(credential_reason(&pub), rsa_cases[i].reason);
		fleet_wire_intake_free(&in);
	}
}

/* The ECC EK, behind a valid RSA EK. */
static void test_ecc_ek_makecredential_cannot_use(void **st)
{
	struct fleet_wire_intake in;
	TPMT_PUBLIC pub;
	(void)st;
	/* Unchanged, both EKs pass and MakeCredential takes both. */
	intake_with(&in, 0, EK_ATTRS);
	add_ecc_ek(&in);
	mutate_public(&in.ek_ecc, unchanged, &pub);
	assert_string_equal(intake_reason(&in), "ak-malformed");
	assert_null(credential_reason(&pub));
	mutate_public(&in.ek_rsa, unchanged, &pub);
	assert_null(credential_reason(&pub));
	fleet_wire_intake_free(&in);
	for (size_t i = 0; i < sizeof(ecc_cases) / sizeof(ecc_cases[0]); i++) {
		print_message("ECC EK, %s\n", ecc_cases[i].what);
		intake_with(&in, 0, EK_ATTRS);
		add_ecc_ek(&in);
		mutate_public(&in.ek_ecc, ecc_cases[i].mutate, &pub);
		assert_string_equal(intake_reason(&in),
				    intake_expects(ecc_cases[i].mutate, ecc_cases[i].reason));
		assert_string_equal(credential_reason(&pub), ecc_cases[i].reason);
		fleet_wire_intake_free(&in);
	}
}

/* SHA-1, and a modulus that is not the certificate's. */
static void sha1_other_key(TPMT_PUBLIC *p)
{
	p->nameAlg = TPM2_ALG_SHA1;
	p->unique.rsa.buffer[10] ^= 1;
}

/* The key match still comes first: a certificate for another key, with
 * a public area MakeCredential could not use either, is a mismatch. */
static void test_key_mismatch_before_credential_rule(void **st)
{
	struct fleet_wire_intake in;
	TPMT_PUBLIC pub;
	(void)st;
	intake_with(&in, 0, EK_ATTRS);
	mutate_public(&in.ek_rsa, sha1_other_key, &pub);
	assert_string_equal(intake_reason(&in), "ek-key-mismatch");
	fleet_wire_intake_free(&in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_ek_passes),
		cmocka_unit_test(test_oaep_labelled_ek_passes),
		cmocka_unit_test(test_ek_spki_without_null_passes),
		cmocka_unit_test(test_ek_attributes),
		cmocka_unit_test(test_ek_key_mismatch),
		cmocka_unit_test(test_rsa_ek_makecredential_cannot_use),
		cmocka_unit_test(test_ecc_ek_makecredential_cannot_use),
		cmocka_unit_test(test_key_mismatch_before_credential_rule),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
