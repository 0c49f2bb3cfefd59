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
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/ca.h"
#include "lib/challenge_state.h"
#include "lib/join_evidence.h"
#include "lib/join_wire.h"
#include "lib/tpm.h"
#include "lib/tpm_credential.h"
#include "lib/tpm_join_evidence.h"
#include "lib/x509_ek.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/join_client.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/tpm_join.h"

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

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

/* ---- the runs: join (both rounds) and renew, against a service of the
 * test's own that checks what it is sent with lib's verifiers ------------- */

#define TD "fleet.example"
#define PCRS "sha256:0,1,2,3,4,5,6,7"

enum plan { ANSWER, CHALLENGE_ALWAYS };

struct svc {
	struct fleet_ca *ca;
	enum plan plan;
	int calls, rounds2;
	uint8_t challenge_key[FLEET_CHALLENGE_KEY_LEN];
	struct fleet_buf csr1;   /* round 1's CSR: round 2 must send it again */
	TPM2B_PUBLIC ek, ak;     /* round 1's EK and AK */
	struct fleet_buf event_log; /* what round 2 must carry (empty: none) */
	char node_id[32];
	bool no_statement; /* a join whose certificate names no AK */
	/* renew */
	bool saw_key_attestation;
	uint8_t certified_spki[32]; /* the key the AK certified at the last renewal */
};

static void svc_serve(const struct svc *v, const struct fleet_join_response *r,
		      struct fleet_buf *wire)
{
	struct fleet_join_envelope env = {0};
	struct fleet_errctx ec = {0};
	struct fleet_buf body, sig;
	fb_init(&body);
	fb_init(&sig);
	assert_int_equal(fleet_join_body_encode(r, &body), FLEET_OK);
	assert_int_equal(fleet_ca_sign(v->ca, body.data, body.len, &sig, &ec), FLEET_OK);
	env.body = (struct fleet_wire_bytes){body.data, body.len};
	env.sig = (struct fleet_wire_bytes){sig.data, sig.len};
	assert_int_equal(fleet_join_kid(fleet_ca_cert(v->ca), env.kid), FLEET_OK);
	fb_reset(wire);
	assert_int_equal(fleet_join_envelope_encode(&env, wire), FLEET_OK);
	fb_free(&body);
	fb_free(&sig);
}

/* The joined answer: a leaf for the CSR's key naming the AK (a statement
 * whose name is ak_name), and the CA. */
static void svc_joined(const struct svc *v, const struct fleet_wire_bytes *csr,
		       const uint8_t *ak_name, size_t ak_name_len, struct fleet_buf *wire)
{
	struct fleet_join_response r;
	struct fleet_errctx ec = {0};
	char uri[FLEET_TPM_AK_URI_MAX + 1];
	X509 *leaf = NULL;
	memset(&r, 0, sizeof(r));
	struct fleet_node_cert_request nr = {
		.csr_der = csr->data, .csr_len = csr->len, .trust_domain = TD,
		.node_id = v->node_id, .role = "node", .validity_seconds = 3600,
	};
	if (ak_name_len) { /* else a leaf with no statement */
		assert_int_equal(fleet_tpm_ak_uri(ak_name, ak_name_len, uri, sizeof(uri)),
				 FLEET_OK);
		nr.statements[0] = uri;
	}
	if (fleet_ca_issue_node(v->ca, &nr, &leaf, &ec) != FLEET_OK)
		fail_msg("issue: %s", ec.detail);
	r.status = FLEET_JOIN_JOINED;
	assert_int_equal(fleet_join_csr_sha256(csr, r.csr_sha256), FLEET_OK);
	snprintf(r.node_id, sizeof(r.node_id), "%s", v->node_id);
	r.n_chain = 2;
	X509 *c[2] = {leaf, fleet_ca_cert(v->ca)};
	for (int i = 0; i < 2; i++) {
		unsigned char *d = NULL;
		int n = i2d_X509(c[i], &d);
		assert_true(n > 0);
		r.chain[i].data = malloc((size_t)n);
		memcpy(r.chain[i].data, d, (size_t)n);
		r.chain[i].len = (size_t)n;
		OPENSSL_free(d);
	}
	svc_serve(v, &r, wire);
	fleet_join_response_free(&r);
	X509_free(leaf);
}

/* Round 1: the EK (its certificate its own), the AK (an AK); answered with
 * MakeCredential to the EK for the AK's name and the secret sealed. ev
 * NULL: challenge round 1's keys again (CHALLENGE_ALWAYS). */
static void svc_round1(struct svc *v, const struct fleet_wire_bytes *csr,
		       const struct fleet_tpm_evidence *ev, struct fleet_buf *wire)
{
	struct fleet_errctx ec = {0};
	X509 *cert = NULL;
	const char *reason = NULL;
	uint8_t secret[32], name[TINK_NAME_MAX], csr_sha[32];
	size_t nlen = 0;
	struct fleet_buf id, es, sealed, payload;
	struct fleet_tpm_challenge ch;
	struct fleet_join_response r;

	if (!ev)
		goto challenge;
	assert_int_equal(ev->round, 1);
	assert_int_equal(fleet_tpm_public_parse(ev->ek_public.data, ev->ek_public.len, &v->ek,
						&ec),
			 FLEET_OK);
	assert_int_equal(fleet_tpm_public_parse(ev->ak_public.data, ev->ak_public.len, &v->ak,
						&ec),
			 FLEET_OK);
	assert_int_equal(fleet_tpm_ak_check(&v->ak.publicArea, &reason), FLEET_OK);
	assert_true(ev->ek_cert.len > 0); /* swtpm's RSA EK is certified */
	assert_int_equal(fleet_ek_cert_load(ev->ek_cert.data, ev->ek_cert.len, &cert, &ec),
			 FLEET_OK);
	assert_int_equal(fleet_ek_cert_matches_public(cert, &v->ek.publicArea, &reason), FLEET_OK);
	X509_free(cert);
	fb_reset(&v->csr1);
	fb_put(&v->csr1, csr->data, csr->len);
challenge:
	fb_init(&id);
	fb_init(&es);
	fb_init(&sealed);
	fb_init(&payload);
	assert_int_equal(RAND_bytes(secret, sizeof(secret)), 1);
	assert_int_equal(fleet_tpm_name(&v->ak.publicArea, name, sizeof(name), &nlen), FLEET_OK);
	assert_int_equal(fleet_make_credential(&v->ek.publicArea, secret, sizeof(secret), name, nlen,
					       &id, &es, &reason),
			 FLEET_OK);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, csr->data, csr->len, csr_sha), FLEET_OK);
	assert_int_equal(fleet_challenge_seal(v->challenge_key, csr_sha, (int64_t)time(NULL), 300,
					      secret, sizeof(secret), &sealed),
			 FLEET_OK);
	memset(&ch, 0, sizeof(ch));
	ch.id_object = (struct fleet_wire_bytes){id.data, id.len};
	ch.enc_secret = (struct fleet_wire_bytes){es.data, es.len};
	snprintf(ch.pcrs, sizeof(ch.pcrs), "%s", PCRS);
	ch.state = (struct fleet_wire_bytes){sealed.data, sealed.len};
	assert_int_equal(fleet_tpm_challenge_encode(&ch, &payload), FLEET_OK);
	memset(&r, 0, sizeof(r));
	r.status = FLEET_JOIN_CHALLENGE;
	assert_int_equal(fleet_join_csr_sha256(csr, r.csr_sha256), FLEET_OK);
	strcpy(r.deferral.attestor, "tpm");
	r.deferral.payload = (struct fleet_wire_bytes){payload.data, payload.len};
	r.deferral.not_after = (int64_t)time(NULL) + 300;
	svc_serve(v, &r, wire);
	fb_free(&id);
	fb_free(&es);
	fb_free(&sealed);
	fb_free(&payload);
}

/* Round 2, checked as policy/attestors/tpm.c will: the same CSR, the state
 * opened, the secret, the quote over the nonce, the PCR values, the node
 * key certified over SHA-256(csr) and the CSR's key. */
static void svc_round2(struct svc *v, const struct fleet_wire_bytes *csr,
		       const struct fleet_tpm_evidence *ev, struct fleet_buf *wire)
{
	struct fleet_errctx ec = {0};
	struct fleet_buf secret;
	uint8_t csr_sha[32], nonce[32], spki[32], want[32], name[TINK_NAME_MAX];
	size_t nlen = 0;
	TPML_PCR_SELECTION sel;
	struct fleet_pcr_value vals[FLEET_TPM_MAX_PCRS];
	const char *reason = NULL;
	TPM2B_PUBLIC node;

	v->rounds2++;
	assert_int_equal(ev->round, 2);
	assert_int_equal(csr->len, v->csr1.len);
	assert_memory_equal(csr->data, v->csr1.data, csr->len); /* the same CSR */
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, csr->data, csr->len, csr_sha), FLEET_OK);
	fb_init_secret(&secret, FLEET_CHALLENGE_MAX_STATE);
	if (fleet_challenge_open(v->challenge_key, csr_sha, (int64_t)time(NULL), ev->state.data,
				 ev->state.len, &secret, &ec) != FLEET_OK)
		fail_msg("state: %s", ec.detail);
	assert_int_equal(ev->secret.len, secret.len);
	assert_memory_equal(ev->secret.data, secret.data, secret.len);
	assert_int_equal(fleet_tpm_quote_nonce(secret.data, secret.len, csr_sha, nonce), FLEET_OK);
	fb_free(&secret);
	assert_int_equal(fleet_pcr_selection_parse(PCRS, &sel), FLEET_OK);
	assert_int_equal(ev->n_pcr_values, 8);
	for (size_t i = 0; i < ev->n_pcr_values; i++) {
		vals[i].alg = TPM2_ALG_SHA256;
		vals[i].index = (uint8_t)i;
		assert_true(ev->pcr_values[i].len <= FLEET_DIGEST_MAX);
		vals[i].size = (uint8_t)ev->pcr_values[i].len;
		memcpy(vals[i].digest, ev->pcr_values[i].data, ev->pcr_values[i].len);
	}
	struct fleet_quote_check q = {
		.ak = &v->ak.publicArea, .attest = ev->quote.data, .attest_len = ev->quote.len,
		.sig = ev->quote_sig.data, .sig_len = ev->quote_sig.len, .extra_data = nonce,
		.extra_data_len = 32, .selection = &sel, .values = vals,
		.n_values = ev->n_pcr_values,
	};
	if (fleet_quote_verify(&q, NULL, &reason) != FLEET_OK)
		fail_msg("quote: %s", reason ? reason : "?");
	assert_int_equal(ev->event_log.len, v->event_log.len);
	if (v->event_log.len)
		assert_memory_equal(ev->event_log.data, v->event_log.data, v->event_log.len);
	assert_true(ev->has_node_key);
	assert_int_equal(fleet_tpm_public_parse(ev->node_key.key_public.data,
						ev->node_key.key_public.len, &node, &ec),
			 FLEET_OK);
	struct fleet_certify_check cc = {
		.ak = &v->ak.publicArea, .attest = ev->node_key.certify_info.data,
		.attest_len = ev->node_key.certify_info.len, .sig = ev->node_key.signature.data,
		.sig_len = ev->node_key.signature.len, .extra_data = csr_sha,
		.extra_data_len = 32, .object = &node.publicArea,
	};
	if (fleet_certify_verify(&cc, spki, &reason) != FLEET_OK)
		fail_msg("certify: %s", reason ? reason : "?");
	assert_int_equal(fleet_csr_spki_sha256(csr->data, csr->len, want, &ec), FLEET_OK);
	assert_memory_equal(spki, want, 32);
	assert_int_equal(fleet_tpm_name(&v->ak.publicArea, name, sizeof(name), &nlen), FLEET_OK);
	svc_joined(v, csr, name, v->no_statement ? 0 : nlen, wire);
}

/* A renewal, checked as fleetd/join/join_renew.c will: the proof by the
 * current leaf's key; a leaf naming an AK needs key_attestation by that AK
 * certifying the new CSR's key over SHA-256(csr). */
static void svc_renew(struct svc *v, const struct fleet_buf *body, struct fleet_buf *wire)
{
	struct fleet_renew_request rr;
	struct fleet_errctx ec = {0};
	struct fleet_buf input;
	bool names_ak = false;
	uint8_t name[TINK_NAME_MAX], got[TINK_NAME_MAX], csr_sha[32], spki[32], want[32];
	size_t nlen = 0, glen = 0;
	const char *reason = NULL;

	fb_init(&input);
	if (fleet_renew_request_decode(body->data, body->len, &rr, &ec) != FLEET_OK)
		fail_msg("renew request: %s", ec.detail);
	const unsigned char *p = rr.cert.data;
	X509 *leaf = d2i_X509(NULL, &p, (long)rr.cert.len);
	assert_non_null(leaf);
	assert_int_equal(fleet_renew_signing_input(rr.csr.data, rr.csr.len, rr.cert.data,
						   rr.cert.len, &input),
			 FLEET_OK);
	assert_int_equal(fleet_es256_verify(X509_get0_pubkey(leaf), input.data, input.len, rr.sig,
					    &ec),
			 FLEET_OK);
	assert_int_equal(fj_leaf_ak_statement(leaf, &names_ak, name, sizeof(name), &nlen, &ec),
			 FLEET_OK);
	v->saw_key_attestation = rr.has_key_attestation;
	if (names_ak) {
		TPM2B_PUBLIC ak, key;
		assert_true(rr.has_key_attestation);
		const struct fleet_tpm_key_attestation *ka = &rr.key_attestation;
		assert_int_equal(fleet_tpm_public_parse(ka->ak_public.data, ka->ak_public.len, &ak,
							&ec),
				 FLEET_OK);
		assert_int_equal(fleet_tpm_name(&ak.publicArea, got, sizeof(got), &glen), FLEET_OK);
		assert_int_equal(glen, nlen);
		assert_memory_equal(got, name, nlen);
		assert_int_equal(fleet_tpm_public_parse(ka->cert.key_public.data,
							ka->cert.key_public.len, &key, &ec),
				 FLEET_OK);
		assert_int_equal(fleet_hash(FLEET_ALG_SHA256, rr.csr.data, rr.csr.len, csr_sha),
				 FLEET_OK);
		struct fleet_certify_check cc = {
			.ak = &ak.publicArea, .attest = ka->cert.certify_info.data,
			.attest_len = ka->cert.certify_info.len, .sig = ka->cert.signature.data,
			.sig_len = ka->cert.signature.len, .extra_data = csr_sha,
			.extra_data_len = 32, .object = &key.publicArea,
		};
		if (fleet_certify_verify(&cc, spki, &reason) != FLEET_OK)
			fail_msg("key_attestation: %s", reason ? reason : "?");
		assert_int_equal(fleet_csr_spki_sha256(rr.csr.data, rr.csr.len, want, &ec),
				 FLEET_OK);
		assert_memory_equal(spki, want, 32);
		memcpy(v->certified_spki, spki, 32);
	}
	/* the statement carried forward */
	svc_joined(v, &rr.csr, name, names_ak ? nlen : 0, wire);
	X509_free(leaf);
	fleet_renew_request_free(&rr);
	fb_free(&input);
}

static enum tink_tx_result svc_post(void *ctx, const char *path, const struct fleet_buf *body,
				    size_t max_reply, struct fleet_buf *reply, long *http,
				    struct fleet_errctx *ec)
{
	struct svc *v = ctx;
	struct fleet_join_request req;
	struct fleet_tpm_evidence ev;
	struct fleet_errctx dec = {0};
	(void)max_reply;
	(void)ec;
	v->calls++;
	*http = 200;
	if (strcmp(path, "/v1/renew") == 0) {
		svc_renew(v, body, reply);
		return TINK_TX_OK;
	}
	assert_string_equal(path, "/v1/join");
	if (fleet_join_request_decode(body->data, body->len, &req, &dec) != FLEET_OK)
		fail_msg("join request: %s", dec.detail);
	assert_string_equal(req.attestor, "tpm");
	assert_false(req.has_token); /* the TPM is the credential */
	assert_true(req.has_attestation);
	if (fleet_tpm_evidence_decode(req.attestation.data, req.attestation.len, &ev, &dec) !=
	    FLEET_OK)
		fail_msg("evidence: %s", dec.detail);
	if (ev.round == 1 || v->plan == CHALLENGE_ALWAYS)
		svc_round1(v, &req.csr, ev.round == 1 ? &ev : NULL, reply);
	else
		svc_round2(v, &req.csr, &ev, reply);
	fleet_tpm_evidence_free(&ev);
	fleet_join_request_free(&req);
	return TINK_TX_OK;
}

struct jfx {
	struct swtpm sw;
	char *dir;
	char key[600], chain[600], log[600];
	struct fj_pins pins;
	struct svc v;
};

static int jsetup(void **state)
{
	struct jfx *f = calloc(1, sizeof(*f));
	struct fleet_errctx ec = {0};
	char cadir[600];
	assert_non_null(f);
	if (swtpm_start(&f->sw, NULL) != 0) {
		free(f);
		return -1;
	}
	f->dir = make_temp_dir("join-tpm");
	snprintf(cadir, sizeof(cadir), "%s/ca", f->dir);
	snprintf(f->key, sizeof(f->key), "%s/node.key", f->dir);
	snprintf(f->chain, sizeof(f->chain), "%s/node.pem", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/eventlog.bin", f->dir);
	if (fleet_ca_init(cadir, "ca", 30, &ec) != FLEET_OK ||
	    fleet_ca_load(cadir, &f->v.ca, &ec) != FLEET_OK)
		fail_msg("ca: %s", ec.detail);
	f->pins.n = 1;
	f->pins.certs[0] = X509_dup(fleet_ca_cert(f->v.ca));
	assert_int_equal(RAND_bytes(f->v.challenge_key, sizeof(f->v.challenge_key)), 1);
	fb_init(&f->v.csr1);
	fb_init(&f->v.event_log);
	snprintf(f->v.node_id, sizeof(f->v.node_id), "node_tpm1");
	*state = f;
	return 0;
}

static int jteardown(void **state)
{
	struct jfx *f = *state;
	fj_pins_free(&f->pins);
	fleet_ca_free(f->v.ca);
	fb_free(&f->v.csr1);
	fb_free(&f->v.event_log);
	swtpm_stop(&f->sw);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static int run_join(struct jfx *f, const char *event_log, struct fj_result *res)
{
	struct fj_join_opts o = {.attestor = "tpm", .tcti = f->sw.tcti, .event_log = event_log,
				 .max_wait = 0, .key_out = f->key, .cert_out = f->chain};
	struct tink_transport tx = {.post = svc_post, .ctx = &f->v};
	return fj_join(&o, &f->pins, &tx, NULL, res);
}

static int run_renew(struct jfx *f, struct fj_result *res)
{
	struct fj_renew_opts o = {.key = f->key, .cert = f->chain, .tcti = f->sw.tcti};
	struct tink_transport tx = {.post = svc_post, .ctx = &f->v};
	return fj_renew(&o, &f->pins, &tx, NULL, res);
}

/* KEY holds the record of gen (and nothing fleet_key_read would take),
 * mode 0600; the TPM derives CHAIN's leaf key from it. */
static void tpm_identity_ok(struct jfx *f, unsigned gen)
{
	struct fleet_errctx ec = {0};
	struct fleet_buf kb;
	struct fj_key k;
	struct fj_pins chain;
	struct tink_tpm t;
	struct stat st;
	EVP_PKEY *sw = NULL;
	static const char begin[] = "-----BEGIN " FJ_TPM_KEY_PEM "-----";

	assert_int_equal(stat(f->key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	fb_init(&kb);
	read_file_or_fail(f->key, &kb);
	assert_true(kb.len > sizeof(begin) && memcmp(kb.data, begin, sizeof(begin) - 1) == 0);
	fb_free(&kb);
	assert_int_not_equal(fj_key_read(f->key, &sw, &ec), FLEET_OK); /* no PKCS#8 here */
	assert_int_equal(fj_key_load(f->key, &k, &ec), FLEET_OK);
	assert_true(k.in_tpm);
	assert_int_equal(k.gen, gen);
	if (tink_tpm_open(&t, f->sw.tcti) != 0)
		fail_msg("open: %s", t.err);
	assert_int_equal(fj_key_attach(&k, &t, &ec), FLEET_OK);
	assert_int_equal(fj_chain_read(f->chain, &chain, &ec), FLEET_OK);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(chain.certs[0]), k.pkey), 1);
	tink_tpm_close(&t);
	fj_pins_free(&chain);
	fj_key_free(&k);
}

static void tpm_join_answers_the_challenge(void **state)
{
	struct jfx *f = *state;
	struct fj_result res;
	static const uint8_t log[] = "a TCG event log, carried as it is";

	fb_put(&f->v.event_log, log, sizeof(log));
	write_file(f->log, log, sizeof(log));
	int rc = run_join(f, f->log, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("join: %d %s", rc, res.message);
	assert_int_equal(f->v.calls, 2);   /* round 1, round 2 */
	assert_int_equal(f->v.rounds2, 1); /* checked by svc_round2 */
	assert_string_equal(res.node_id, "node_tpm1");
	tpm_identity_ok(f, 0);
}

static void tpm_join_answers_three_challenges_at_most(void **state)
{
	struct jfx *f = *state;
	struct fj_result res;

	f->v.plan = CHALLENGE_ALWAYS;
	assert_int_equal(run_join(f, NULL, &res), FJ_EXIT_CHALLENGE);
	assert_int_equal(f->v.calls, 1 + FJ_MAX_CHALLENGES);
	struct stat st;
	assert_int_not_equal(stat(f->key, &st), 0); /* nothing written */
}

static void tpm_join_sends_no_token(void **state)
{
	struct jfx *f = *state;
	struct fj_result res;
	struct fj_join_opts o = {.attestor = "tpm", .tcti = f->sw.tcti, .token_file = f->log,
				 .key_out = f->key, .cert_out = f->chain};
	struct tink_transport tx = {.post = svc_post, .ctx = &f->v};
	assert_int_equal(fj_join(&o, &f->pins, &tx, NULL, &res), FJ_EXIT_USAGE);
	o.token_file = NULL;
	o.tcti = NULL;
	assert_int_equal(fj_join(&o, &f->pins, &tx, NULL, &res), FJ_EXIT_USAGE);
	assert_int_equal(f->v.calls, 0);
}

static void tpm_renew_certifies_the_next_generation(void **state)
{
	struct jfx *f = *state;
	struct fj_result res;
	struct fleet_errctx ec = {0};
	struct fj_pins chain;
	uint8_t old_spki[32];

	int rc = run_join(f, NULL, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("join: %d %s", rc, res.message);
	assert_int_equal(fj_chain_read(f->chain, &chain, &ec), FLEET_OK);
	{
		unsigned char *d = NULL;
		int n = i2d_PUBKEY(X509_get0_pubkey(chain.certs[0]), &d);
		assert_true(n > 0);
		assert_int_equal(fleet_hash(FLEET_ALG_SHA256, d, (size_t)n, old_spki), FLEET_OK);
		OPENSSL_free(d);
	}
	fj_pins_free(&chain);
	f->v.calls = 0;
	rc = run_renew(f, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("renew: %d %s", rc, res.message);
	assert_int_equal(f->v.calls, 1);
	assert_true(f->v.saw_key_attestation); /* checked by svc_renew */
	assert_memory_not_equal(f->v.certified_spki, old_spki, 32); /* another key */
	tpm_identity_ok(f, 1);
	/* and the next renewal needs the AK again: generation 2 */
	rc = run_renew(f, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("renew 2: %d %s", rc, res.message);
	assert_true(f->v.saw_key_attestation);
	tpm_identity_ok(f, 2);
}

/* A TPM-held key whose leaf names no AK: the next generation, in the TPM,
 * and no key_attestation. */
static void tpm_renew_without_statement_is_uncertified(void **state)
{
	struct jfx *f = *state;
	struct fj_result res;

	f->v.no_statement = true;
	int rc = run_join(f, NULL, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("join: %d %s", rc, res.message);
	f->v.calls = 0;
	rc = run_renew(f, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("renew: %d %s", rc, res.message);
	assert_int_equal(f->v.calls, 1);
	assert_false(f->v.saw_key_attestation);
	tpm_identity_ok(f, 1);
	/* the TPM key needs its TPM: no --tcti is a usage error, nothing sent */
	struct fj_renew_opts o = {.key = f->key, .cert = f->chain};
	struct tink_transport tx = {.post = svc_post, .ctx = &f->v};
	f->v.calls = 0;
	assert_int_equal(fj_renew(&o, &f->pins, &tx, NULL, &res), FJ_EXIT_USAGE);
	assert_int_equal(f->v.calls, 0);
	/* a record of another generation than the leaf's key: refused here */
	struct fleet_buf rec;
	fb_init(&rec);
	assert_int_equal(fj_tpm_key_record(5, &rec), FLEET_OK);
	write_file(f->key, rec.data, rec.len);
	fb_free(&rec);
	assert_int_equal(run_renew(f, &res), FJ_EXIT_LOCAL);
	assert_non_null(strstr(res.message, "does not match the node certificate"));
	assert_int_equal(f->v.calls, 0);
}

/* A leaf that names another AK: refused before any request, KEY kept. */
static void tpm_renew_refuses_another_ak(void **state)
{
	struct jfx *f = *state;
	struct fj_result res;
	struct fleet_buf rec, csr, before, after;
	struct fleet_errctx ec = {0};
	struct tink_tpm t;
	TPM2B_PUBLIC other;
	uint8_t name[TINK_NAME_MAX];
	size_t nlen = 0;

	fb_init(&rec);
	fb_init(&csr);
	fb_init(&before);
	fb_init(&after);
	assert_int_equal(fj_tpm_key_record(0, &rec), FLEET_OK);
	write_file(f->key, rec.data, rec.len);
	assert_int_equal(chmod(f->key, 0600), 0);
	if (tink_tpm_open(&t, f->sw.tcti) != 0)
		fail_msg("open: %s", t.err);
	assert_int_equal(tink_node_csr(&t, 0, &csr, NULL), 0);
	/* another key's name where the AK's should be */
	assert_int_equal(tink_node_public(&t, 9, &other, NULL), 0);
	tink_tpm_close(&t);
	assert_int_equal(fleet_tpm_name(&other.publicArea, name, sizeof(name), &nlen), FLEET_OK);
	struct fleet_buf wire;
	struct fleet_join_response r;
	fb_init(&wire);
	struct fleet_wire_bytes c = {csr.data, csr.len};
	svc_joined(&f->v, &c, name, nlen, &wire);
	/* the chain as a join would have written it */
	{
		struct fj_expect x = {.csr = &c, .attestor = "tpm"};
		struct fj_key k = {.in_tpm = true, .gen = 0};
		if (tink_tpm_open(&t, f->sw.tcti) != 0)
			fail_msg("open: %s", t.err);
		assert_int_equal(fj_key_attach(&k, &t, &ec), FLEET_OK);
		tink_tpm_close(&t);
		x.key = k.pkey;
		assert_int_equal(fj_answer_verify(&f->pins, wire.data, wire.len, &x, &r, NULL, &ec),
				 FLEET_OK);
		assert_int_equal(fj_write_identity_key(f->key, f->chain, &k, &r, &ec), FLEET_OK);
		fleet_join_response_free(&r);
		fj_key_free(&k);
	}
	read_file_or_fail(f->key, &before);
	f->v.calls = 0;
	assert_int_equal(run_renew(f, &res), FJ_EXIT_LOCAL);
	assert_int_equal(f->v.calls, 0);
	assert_non_null(strstr(res.message, "this TPM's attestation key is not the one the "
					    "certificate names"));
	read_file_or_fail(f->key, &after);
	assert_int_equal(before.len, after.len);
	assert_memory_equal(before.data, after.data, before.len);
	/* no fallback either: a software key for that leaf is refused too */
	{
		EVP_PKEY *sw = EVP_EC_gen("P-256");
		FILE *fp = fopen(f->key, "w");
		assert_non_null(fp);
		assert_int_equal(PEM_write_PrivateKey(fp, sw, NULL, NULL, 0, NULL, NULL), 1);
		fclose(fp);
		assert_int_equal(run_renew(f, &res), FJ_EXIT_LOCAL);
		assert_int_equal(f->v.calls, 0);
		EVP_PKEY_free(sw);
	}
	fb_free(&wire);
	fb_free(&rec);
	fb_free(&csr);
	fb_free(&before);
	fb_free(&after);
}

/* FJ10: the record derives the same public key after the TPM is closed
 * and opened again; a record of another family is refused. */
static void tpm_key_record_rederives(void **state)
{
	struct jfx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf rec;
	struct tink_tpm t;
	struct fj_key k;
	EVP_PKEY *first = NULL, *want = NULL;
	uint8_t sig[64];
	static const uint8_t msg[] = "proof";

	fb_init(&rec);
	assert_int_equal(fj_tpm_key_record(7, &rec), FLEET_OK);
	write_file(f->key, rec.data, rec.len);
	assert_int_equal(chmod(f->key, 0600), 0);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(fj_key_load(f->key, &k, &ec), FLEET_OK);
		assert_true(k.in_tpm);
		assert_int_equal(k.gen, 7);
		if (tink_tpm_open(&t, f->sw.tcti) != 0)
			fail_msg("open: %s", t.err);
		assert_int_equal(fj_key_attach(&k, &t, &ec), FLEET_OK);
		assert_int_equal(fj_key_sign(&k, msg, sizeof(msg), sig, &ec), FLEET_OK);
		assert_int_equal(fleet_es256_verify(k.pkey, msg, sizeof(msg), sig, &ec), FLEET_OK);
		if (pass == 0) {
			first = k.pkey;
			k.pkey = NULL;
			assert_int_equal(tink_node_public(&t, 7, NULL, &want), 0);
			assert_int_equal(EVP_PKEY_eq(first, want), 1);
		} else {
			assert_int_equal(EVP_PKEY_eq(first, k.pkey), 1);
		}
		tink_tpm_close(&t);
		fj_key_free(&k);
	}
	/* a record whose unique is not its generation's template's */
	rec.data[rec.len / 2] ^= 0x01;
	write_file(f->key, rec.data, rec.len);
	assert_int_not_equal(fj_key_load(f->key, &k, &ec), FLEET_OK);
	EVP_PKEY_free(first);
	EVP_PKEY_free(want);
	fb_free(&rec);
}

/* The command line a script uses: the tpm attestor's usage errors, and
 * assert signing with a TPM-held --key through --tcti. */
static void fleet_join_cli_takes_tpm_keys(void **state)
{
	struct jfx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf out, rec, csr;
	struct tink_tpm t;
	EVP_PKEY *pk = NULL;
	char cmd[3000], ca[700], cert[700];
	const char *bin = FLEET_BINARY_DIR "/tink-attest/fleet-join";

	fb_init(&out);
	fb_init(&rec);
	fb_init(&csr);
	snprintf(ca, sizeof(ca), "%s/ca/ca.crt", f->dir);
	snprintf(cert, sizeof(cert), "%s/site.pem", f->dir);
	/* --token-file with --attestor tpm, tpm without --tcti, --tcti elsewhere */
	snprintf(cmd, sizeof(cmd),
		 "'%s' join --server https://127.0.0.1:1 --ca '%s' --attestor tpm --tcti '%s' "
		 "--token-file '%s' --key-out '%s' --cert-out '%s' 2>&1",
		 bin, ca, f->sw.tcti, f->log, f->key, f->chain);
	assert_int_equal(run_capture(cmd, &out), FJ_EXIT_USAGE);
	assert_non_null(strstr((const char *)out.data, "no token"));
	fb_reset(&out);
	snprintf(cmd, sizeof(cmd),
		 "'%s' join --server https://127.0.0.1:1 --ca '%s' --attestor tpm "
		 "--key-out '%s' --cert-out '%s' 2>&1",
		 bin, ca, f->key, f->chain);
	assert_int_equal(run_capture(cmd, &out), FJ_EXIT_USAGE);
	fb_reset(&out);
	snprintf(cmd, sizeof(cmd),
		 "'%s' join --server https://127.0.0.1:1 --ca '%s' --tcti '%s' "
		 "--key-out '%s' --cert-out '%s' 2>&1",
		 bin, ca, f->sw.tcti, f->key, f->chain);
	assert_int_equal(run_capture(cmd, &out), FJ_EXIT_USAGE);

	/* a site node whose key is in the TPM (generation 3) signs an assertion */
	assert_int_equal(fj_tpm_key_record(3, &rec), FLEET_OK);
	write_file(f->key, rec.data, rec.len);
	assert_int_equal(chmod(f->key, 0600), 0);
	if (tink_tpm_open(&t, f->sw.tcti) != 0)
		fail_msg("open: %s", t.err);
	assert_int_equal(tink_node_csr(&t, 3, &csr, &pk), 0);
	tink_tpm_close(&t);
	{
		struct fleet_node_cert_request nr = {
			.csr_der = csr.data, .csr_len = csr.len, .trust_domain = TD,
			.node_id = "node_site1", .role = "site", .validity_seconds = 3600,
		};
		X509 *leaf = NULL;
		if (fleet_ca_issue_node(f->v.ca, &nr, &leaf, &ec) != FLEET_OK)
			fail_msg("issue: %s", ec.detail);
		FILE *fp = fopen(cert, "w");
		assert_non_null(fp);
		assert_int_equal(PEM_write_X509(fp, leaf), 1);
		fclose(fp);
		X509_free(leaf);
	}
	snprintf(cmd, sizeof(cmd),
		 "'%s' assert --key '%s' --cert '%s' --site rack-a1 --signer node_site1 --epoch 4 "
		 "--mac aa:bb:cc:dd:ee:01 2>/dev/null",
		 bin, f->key, cert);
	fb_reset(&out);
	assert_int_equal(run_capture(cmd, &out), FJ_EXIT_USAGE); /* a record needs --tcti */
	snprintf(cmd, sizeof(cmd),
		 "'%s' assert --key '%s' --cert '%s' --site rack-a1 --signer node_site1 --epoch 4 "
		 "--mac aa:bb:cc:dd:ee:01 --tcti '%s'",
		 bin, f->key, cert, f->sw.tcti);
	fb_reset(&out);
	assert_int_equal(run_capture(cmd, &out), 0);
	{
		struct fleet_discovery_signed sg;
		struct fleet_buf input;
		fb_init(&input);
		assert_int_equal(fleet_discovery_signed_decode(out.data, out.len, &sg, &ec),
				 FLEET_OK);
		assert_int_equal(fleet_discovery_signing_input(sg.body.data, sg.body.len, &input),
				 FLEET_OK);
		assert_int_equal(fleet_es256_verify(pk, input.data, input.len, sg.sig, &ec),
				 FLEET_OK);
		fleet_discovery_signed_free(&sg);
		fb_free(&input);
	}
	EVP_PKEY_free(pk);
	fb_free(&out);
	fb_free(&rec);
	fb_free(&csr);
}

/* Round 1 of a TPM with no manufacturer certificate: the RSA EK from its
 * TCG template, ek_cert absent; of a certified one, the certificate as NV
 * holds it and the AK an AK. */
static void round1_evidence_decodes(void **state)
{
	(void)state;
	for (int certified = 1; certified >= 0; certified--) {
		struct swtpm sw;
		struct swtpm_opts so = {.no_ek_certs = !certified};
		struct tink_tpm t;
		struct tink_ek ek;
		struct fleet_buf att;
		struct fleet_tpm_evidence ev;
		struct fleet_errctx ec = {0};
		TPM2B_PUBLIC ekp, akp;
		const char *reason = NULL;
		if (swtpm_start(&sw, &so) != 0)
			fail_msg("swtpm did not start");
		if (tink_tpm_open(&t, sw.tcti) != 0)
			fail_msg("open: %s", t.err);
		fb_init(&att);
		if (fj_tpm_round1(&t, &ek, &att, &ec) != FLEET_OK)
			fail_msg("round 1: %s", ec.detail);
		if (fleet_tpm_evidence_decode(att.data, att.len, &ev, &ec) != FLEET_OK)
			fail_msg("decode: %s", ec.detail);
		assert_int_equal(ev.round, 1);
		assert_int_equal(fleet_tpm_public_parse(ev.ek_public.data, ev.ek_public.len, &ekp,
							&ec),
				 FLEET_OK);
		assert_int_equal(fleet_tpm_public_parse(ev.ak_public.data, ev.ak_public.len, &akp,
							&ec),
				 FLEET_OK);
		assert_int_equal(ekp.publicArea.type, TPM2_ALG_RSA);
		assert_int_equal(fleet_credential_ek_supported(&ekp.publicArea, &reason), FLEET_OK);
		assert_int_equal(fleet_tpm_ak_check(&akp.publicArea, &reason), FLEET_OK);
		if (certified) {
			X509 *cert = NULL;
			assert_int_equal(ev.ek_cert.len, ek.cert.len);
			assert_memory_equal(ev.ek_cert.data, ek.cert.data, ek.cert.len);
			assert_int_equal(fleet_ek_cert_load(ev.ek_cert.data, ev.ek_cert.len, &cert,
							    &ec),
					 FLEET_OK);
			assert_int_equal(fleet_ek_cert_matches_public(cert, &ekp.publicArea, &reason),
					 FLEET_OK);
			X509_free(cert);
		} else {
			assert_int_equal(ev.ek_cert.len, 0); /* absent */
		}
		fleet_tpm_evidence_free(&ev);
		fb_free(&att);
		tink_ek_free(&ek);
		tink_tpm_close(&t);
		swtpm_stop(&sw);
	}
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
		cmocka_unit_test(round1_evidence_decodes),
		cmocka_unit_test_setup_teardown(tpm_join_answers_the_challenge, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(tpm_join_answers_three_challenges_at_most, jsetup,
						jteardown),
		cmocka_unit_test_setup_teardown(tpm_join_sends_no_token, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(tpm_renew_certifies_the_next_generation, jsetup,
						jteardown),
		cmocka_unit_test_setup_teardown(tpm_renew_without_statement_is_uncertified, jsetup,
						jteardown),
		cmocka_unit_test_setup_teardown(tpm_renew_refuses_another_ak, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(tpm_key_record_rederives, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(fleet_join_cli_takes_tpm_keys, jsetup, jteardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
