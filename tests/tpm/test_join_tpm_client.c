/*
 * test_join_tpm_client.c: fleet-join's tpm attestor on a real TPM (swtpm,
 * tests/tpm/swtpm_harness.c): the node key made in the TPM and its CSR
 * (tink-attest/tpm_join.h), the challenge's answer checked with the
 * server's own verifiers (lib/tpm.h, lib/tpm_credential.h), and the join
 * and renew runs of tink-attest/join_client.h over a transport of the
 * test's own that plays the join service.
 */
#include "tests/testutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/ca.h"
#include "lib/join_evidence.h"
#include "lib/tpm.h"
#include "lib/tpm_credential.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/tpm_join.h"

struct tfx {
	struct swtpm sw;
	struct tink_tpm tpm;
};

static int tsetup(void **state)
{
	struct tfx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	if (swtpm_start(&f->sw, NULL) != 0) {
		free(f);
		return -1;
	}
	if (tink_tpm_open(&f->tpm, f->sw.tcti) != 0)
		fail_msg("open: %s", f->tpm.err);
	*state = f;
	return 0;
}

static int tteardown(void **state)
{
	struct tfx *f = *state;
	tink_tpm_close(&f->tpm);
	swtpm_stop(&f->sw);
	free(f);
	return 0;
}

static X509_REQ *req_of(const struct fleet_buf *csr)
{
	const unsigned char *p = csr->data;
	X509_REQ *r = d2i_X509_REQ(NULL, &p, (long)csr->len);
	assert_non_null(r);
	assert_ptr_equal(p, csr->data + csr->len);
	return r;
}

/* ---- the node key and its CSR ------------------------------------------- */

static void csr_signed_by_the_tpm_key_verifies(void **state)
{
	struct tfx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr;
	TPM2B_PUBLIC pub;
	EVP_PKEY *pk = NULL, *csr_key = NULL;
	uint8_t h1[32], h2[32];

	fb_init(&csr);
	if (tink_node_csr(&f->tpm, 0, &csr, &csr_key) != 0)
		fail_msg("csr: %s", f->tpm.err);
	assert_int_equal(tink_node_public(&f->tpm, 0, &pub, &pk), 0);
	/* the CSR is the TPM key's, and its signature is that key's */
	X509_REQ *r = req_of(&csr);
	assert_int_equal(EVP_PKEY_eq(X509_REQ_get0_pubkey(r), pk), 1);
	assert_int_equal(EVP_PKEY_eq(csr_key, pk), 1);
	assert_int_equal(X509_REQ_verify(r, pk), 1);
	assert_int_equal(X509_REQ_get_signature_nid(r), NID_ecdsa_with_SHA256);
	/* what the join service binds: the CSR's SPKI hash is the public area's */
	assert_int_equal(fleet_csr_spki_sha256(csr.data, csr.len, h1, &ec), FLEET_OK);
	assert_int_equal(fleet_tpm_public_spki_sha256(&pub.publicArea, h2), FLEET_OK);
	assert_memory_equal(h1, h2, 32);
	/* the template: an unrestricted signing key that never leaves the TPM */
	TPMA_OBJECT want = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			   TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
			   TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_NODA;
	assert_int_equal(pub.publicArea.objectAttributes, want);
	assert_int_equal(pub.publicArea.type, TPM2_ALG_ECC);
	assert_int_equal(pub.publicArea.parameters.eccDetail.curveID, TPM2_ECC_NIST_P256);
	X509_REQ_free(r);
	EVP_PKEY_free(pk);
	EVP_PKEY_free(csr_key);
	fb_free(&csr);
}

/* Each generation is its own key, none an LDevID's; the same generation is
 * the same key after the TPM is closed and opened again. */
static void generations_are_keys_of_their_own(void **state)
{
	struct tfx *f = *state;
	TPM2B_PUBLIC g0, g1, again, ldevid;

	assert_int_equal(tink_node_public(&f->tpm, 0, &g0, NULL), 0);
	assert_int_equal(tink_node_public(&f->tpm, 1, &g1, NULL), 0);
	f->tpm.ldevid_gen = 0;
	assert_int_equal(tink_tpm_public(&f->tpm, TINK_KEY_LDEVID, &ldevid), 0);
	assert_memory_not_equal(&g0.publicArea.unique.ecc, &g1.publicArea.unique.ecc,
				sizeof(g0.publicArea.unique.ecc));
	assert_memory_not_equal(&g0.publicArea.unique.ecc, &ldevid.publicArea.unique.ecc,
				sizeof(g0.publicArea.unique.ecc));
	tink_tpm_close(&f->tpm);
	if (tink_tpm_open(&f->tpm, f->sw.tcti) != 0)
		fail_msg("reopen: %s", f->tpm.err);
	assert_int_equal(tink_node_public(&f->tpm, 1, &again, NULL), 0);
	assert_memory_equal(&g1.publicArea.unique.ecc, &again.publicArea.unique.ecc,
			    sizeof(g1.publicArea.unique.ecc));
	/* past the last generation: refused with a sentence */
	assert_int_equal(tink_node_public(&f->tpm, TINK_NODE_MAX_GEN + 1, &again, NULL), -1);
	assert_non_null(strstr(f->tpm.err, "generation"));
}

/* The renewal's proof: ES256 r||s that the key's public half verifies. */
static void es256_by_the_tpm_key_verifies(void **state)
{
	struct tfx *f = *state;
	struct fleet_errctx ec = {0};
	static const uint8_t msg[] = "renew\0 the signing input";
	uint8_t sig[64];
	EVP_PKEY *pk = NULL, *other = NULL;

	assert_int_equal(tink_node_public(&f->tpm, 4, NULL, &pk), 0);
	assert_int_equal(tink_node_public(&f->tpm, 5, NULL, &other), 0);
	if (tink_node_es256(&f->tpm, 4, msg, sizeof(msg), sig) != 0)
		fail_msg("sign: %s", f->tpm.err);
	assert_int_equal(fleet_es256_verify(pk, msg, sizeof(msg), sig, &ec), FLEET_OK);
	assert_int_not_equal(fleet_es256_verify(other, msg, sizeof(msg), sig, &ec), FLEET_OK);
	assert_int_not_equal(fleet_es256_verify(pk, msg, sizeof(msg) - 1, sig, &ec), FLEET_OK);
	EVP_PKEY_free(pk);
	EVP_PKEY_free(other);
}

/* ---- the challenge, answered as the server checks it --------------------- */

struct server_challenge {
	uint8_t secret[32];
	struct fleet_buf id_object, enc_secret;
};

/* fleet_make_credential to ek for ak's name: round 1's answer. */
static void make_challenge(const TPM2B_PUBLIC *ek, const TPM2B_PUBLIC *ak,
			   struct server_challenge *c)
{
	uint8_t name[TINK_NAME_MAX];
	size_t nlen = 0;
	const char *reason = NULL;

	fb_init(&c->id_object);
	fb_init(&c->enc_secret);
	assert_int_equal(RAND_bytes(c->secret, sizeof(c->secret)), 1);
	assert_int_equal(fleet_tpm_name(&ak->publicArea, name, sizeof(name), &nlen), FLEET_OK);
	assert_int_equal(fleet_make_credential(&ek->publicArea, c->secret, sizeof(c->secret), name,
					       nlen, &c->id_object, &c->enc_secret, &reason),
			 FLEET_OK);
}

static void server_challenge_free(struct server_challenge *c)
{
	fb_free(&c->id_object);
	fb_free(&c->enc_secret);
}

/* The quote and the node key's certification verify as round 2 is checked. */
static void verify_answer(const TPM2B_PUBLIC *ak, const struct server_challenge *c,
			  const struct fleet_buf *csr, const struct tink_answer *a,
			  const char *pcrs)
{
	struct fleet_errctx ec = {0};
	TPML_PCR_SELECTION sel;
	TPM2B_PUBLIC node;
	uint8_t csr_sha[32], nonce_in[64], nonce[32], spki[32], want_spki[32];
	const char *reason = NULL;

	assert_int_equal(a->secret.len, sizeof(c->secret));
	assert_memory_equal(a->secret.data, c->secret, sizeof(c->secret));
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, csr->data, csr->len, csr_sha), FLEET_OK);
	memcpy(nonce_in, c->secret, 32);
	memcpy(nonce_in + 32, csr_sha, 32);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, nonce_in, 64, nonce), FLEET_OK);
	assert_int_equal(fleet_pcr_selection_parse(pcrs, &sel), FLEET_OK);
	struct fleet_quote_check q = {
		.ak = &ak->publicArea, .attest = a->quote.data, .attest_len = a->quote.len,
		.sig = a->quote_sig.data, .sig_len = a->quote_sig.len, .extra_data = nonce,
		.extra_data_len = 32, .selection = &sel, .values = a->values,
		.n_values = a->n_values,
	};
	if (fleet_quote_verify(&q, NULL, &reason) != FLEET_OK)
		fail_msg("quote: %s", reason ? reason : "?");
	assert_int_equal(fleet_tpm_public_parse(a->node_public.data, a->node_public.len, &node,
						&ec),
			 FLEET_OK);
	struct fleet_certify_check cc = {
		.ak = &ak->publicArea, .attest = a->certify_info.data,
		.attest_len = a->certify_info.len, .sig = a->certify_sig.data,
		.sig_len = a->certify_sig.len, .extra_data = csr_sha, .extra_data_len = 32,
		.object = &node.publicArea,
	};
	if (fleet_certify_verify(&cc, spki, &reason) != FLEET_OK)
		fail_msg("certify: %s", reason ? reason : "?");
	assert_int_equal(fleet_csr_spki_sha256(csr->data, csr->len, want_spki, &ec), FLEET_OK);
	assert_memory_equal(spki, want_spki, 32);
}

static void challenge_answer_verifies(void **state)
{
	struct tfx *f = *state;
	struct tink_ek ek;
	TPM2B_PUBLIC ak;
	uint8_t name[TINK_NAME_MAX], csr_sha[32];
	size_t nlen;
	struct server_challenge c;
	struct tink_answer a;
	struct fleet_buf csr;
	static const char pcrs[] = "sha256:0,1,2,3,4,5,6,7";

	fb_init(&csr);
	if (tink_join_ek(&f->tpm, &ek) != 0)
		fail_msg("ek: %s", f->tpm.err);
	assert_true(ek.present);
	assert_int_equal(ek.key, TINK_KEY_EK_RSA); /* swtpm's RSA EK, certified */
	assert_true(ek.cert.len > 0);
	assert_int_equal(tink_ak_name(&f->tpm, &ak, name, &nlen), 0);
	assert_int_equal(nlen, 34);
	const char *why = NULL;
	assert_int_equal(fleet_tpm_ak_check(&ak.publicArea, &why), FLEET_OK);
	assert_int_equal(tink_node_csr(&f->tpm, 2, &csr, NULL), 0);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, csr.data, csr.len, csr_sha), FLEET_OK);
	make_challenge(&ek.pub, &ak, &c);
	tink_answer_init(&a);
	assert_true(a.secret.secret); /* a wiping buffer */
	if (tink_answer_challenge(&f->tpm, &ek, 2, c.id_object.data, c.id_object.len,
				  c.enc_secret.data, c.enc_secret.len, pcrs, csr_sha, &a) != 0)
		fail_msg("answer: %s", f->tpm.err);
	assert_int_equal(a.n_values, 8);
	verify_answer(&ak, &c, &csr, &a, pcrs);
	tink_answer_free(&a);

	/* a credential made for another object's name is not activated, and
	 * the error names the operation and the response code */
	{
		struct server_challenge other;
		TPM2B_PUBLIC node;
		assert_int_equal(tink_node_public(&f->tpm, 2, &node, NULL), 0);
		make_challenge(&ek.pub, &node, &other);
		tink_answer_init(&a);
		assert_int_equal(tink_answer_challenge(&f->tpm, &ek, 2, other.id_object.data,
						       other.id_object.len, other.enc_secret.data,
						       other.enc_secret.len, pcrs, csr_sha, &a),
				 -1);
		assert_non_null(strstr(f->tpm.err, "TPM2_ActivateCredential"));
		assert_non_null(strstr(f->tpm.err, "0x"));
		assert_int_equal(a.secret.len, 0);
		tink_answer_free(&a);
		server_challenge_free(&other);
	}
	server_challenge_free(&c);
	tink_ek_free(&ek);
	fb_free(&csr);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(csr_signed_by_the_tpm_key_verifies, tsetup,
						tteardown),
		cmocka_unit_test_setup_teardown(generations_are_keys_of_their_own, tsetup,
						tteardown),
		cmocka_unit_test_setup_teardown(es256_by_the_tpm_key_verifies, tsetup, tteardown),
		cmocka_unit_test_setup_teardown(challenge_answer_verifies, tsetup, tteardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
