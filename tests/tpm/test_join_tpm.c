/*
 * test_join_tpm.c: the tpm attestor and the renewal of a TPM-held key
 * (issue 14; policy/attestors/tpm.c, fleetd/join/join_renew.c), through the
 * join service itself (fleet_join_handle, fleet_join_renew: the code the
 * HTTPS routes call) over a real store, a real CA and real TPMs: two
 * swtpm machines, each with its own manufacturer CA. The TPM side is
 * tink-attest's ESYS client (tink-attest/tpm_client.h), the node key an
 * owner-hierarchy P-256 key of that TPM (an LDevID template generation)
 * and the CSR signed in the TPM.
 *
 * Every test is named after the rule it holds, and each refusal is seen as
 * exactly one more count of fleetd_join_refused_total{reason="tpm:<r>"} (or
 * "renew:<r>") and a "denied" answer; so removing the rule fails the test.
 */
#include "tests/store/store_location.h"
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <tss2/tss2_mu.h>

#include "fleetd/join/join.h"
#include "fleetd/join/join_int.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"
#include "lib/ca.h"
#include "lib/challenge_state.h"
#include "lib/hex.h"
#include "lib/join_evidence.h"
#include "lib/join_wire.h"
#include "lib/tpm.h"
#include "lib/tpm_join_evidence.h"
#include "lib/token_seal.h"
#include "lib/x509_ek.h"
#include "policy/profile.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/tpm_internal.h"

/* ---- a machine: a TPM and its keys ------------------------------------------ */

struct machine {
	struct swtpm sw;
	struct tink_tpm tt;
	struct tink_ek ek;
	TPM2B_PUBLIC ak;
	char ek_hash[65];
};

static struct machine A, B; /* B: another TPM, another manufacturer */

static void machine_start(struct machine *m)
{
	uint8_t h[32];
	if (swtpm_start(&m->sw, NULL) != 0)
		fail_msg("swtpm did not start");
	if (tink_tpm_open(&m->tt, m->sw.tcti) || tink_tpm_read_ek_rsa(&m->tt, &m->ek) ||
	    !m->ek.present || tink_tpm_public(&m->tt, TINK_KEY_AK, &m->ak))
		fail_msg("TPM: %s", m->tt.err);
	assert_int_equal(fleet_tpm_public_spki_sha256(&m->ek.pub.publicArea, h), FLEET_OK);
	fleet_hex_encode(h, 32, m->ek_hash);
}

static void machine_stop(struct machine *m)
{
	tink_ek_free(&m->ek);
	tink_tpm_close(&m->tt);
	swtpm_stop(&m->sw);
}

static void marshal_public(const TPM2B_PUBLIC *p, struct fleet_buf *out)
{
	uint8_t b[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(p, b, sizeof(b), &off), TSS2_RC_SUCCESS);
	fb_reset(out);
	assert_int_equal(fb_put(out, b, off), FLEET_OK);
}

static TPM2B_PUBLIC node_key(struct machine *m, unsigned gen)
{
	TPM2B_PUBLIC pub;
	m->tt.ldevid_gen = gen;
	if (tink_tpm_public(&m->tt, TINK_KEY_LDEVID, &pub))
		fail_msg("TPM: %s", m->tt.err);
	return pub;
}

/* A PKCS#10 request for the node key of generation gen, signed in the TPM. */
static void tpm_csr(struct machine *m, unsigned gen, struct fleet_buf *csr)
{
	TPM2B_PUBLIC pub = node_key(m, gen);
	EVP_PKEY *k = NULL;
	X509_REQ *r = X509_REQ_new();
	X509_ALGOR *alg = X509_ALGOR_new();
	struct fleet_buf sig;
	struct fleet_errctx ec = {0};
	TPMT_SIGNATURE ts;
	unsigned char *tbs = NULL, *der = NULL;
	fb_init(&sig);
	assert_int_equal(fleet_tpm_public_to_pkey(&pub.publicArea, &k), FLEET_OK);
	assert_non_null(r);
	assert_int_equal(X509_REQ_set_version(r, 0), 1);
	assert_int_equal(X509_REQ_set_pubkey(r, k), 1);
	X509_ALGOR_set0(alg, OBJ_nid2obj(NID_ecdsa_with_SHA256), V_ASN1_UNDEF, NULL);
	assert_int_equal(X509_REQ_set1_signature_algo(r, alg), 1);
	int n = i2d_re_X509_REQ_tbs(r, &tbs);
	assert_true(n > 0);
	m->tt.ldevid_gen = gen;
	if (tink_tpm_sign_ldevid(&m->tt, tbs, (size_t)n, &sig))
		fail_msg("TPM: %s", m->tt.err);
	assert_int_equal(fleet_tpm_signature_parse(sig.data, sig.len, &ts, &ec), FLEET_OK);
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *br = BN_bin2bn(ts.signature.ecdsa.signatureR.buffer,
			       ts.signature.ecdsa.signatureR.size, NULL);
	BIGNUM *bs = BN_bin2bn(ts.signature.ecdsa.signatureS.buffer,
			       ts.signature.ecdsa.signatureS.size, NULL);
	assert_int_equal(ECDSA_SIG_set0(es, br, bs), 1);
	unsigned char *sd = NULL;
	int sl = i2d_ECDSA_SIG(es, &sd);
	assert_true(sl > 0);
	ASN1_BIT_STRING *bits = ASN1_BIT_STRING_new();
	assert_int_equal(ASN1_BIT_STRING_set(bits, sd, sl), 1);
	bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
	bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
	X509_REQ_set0_signature(r, bits);
	assert_int_equal(X509_REQ_verify(r, k), 1);
	int dl = i2d_X509_REQ(r, &der);
	assert_true(dl > 0);
	fb_reset(csr);
	assert_int_equal(fb_put(csr, der, (size_t)dl), FLEET_OK);
	OPENSSL_free(der);
	OPENSSL_free(sd);
	OPENSSL_free(tbs);
	ECDSA_SIG_free(es);
	X509_ALGOR_free(alg);
	X509_REQ_free(r);
	EVP_PKEY_free(k);
	fb_free(&sig);
}

static void sha256(const struct fleet_buf *b, uint8_t out[32])
{
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, b->data, b->len, out), FLEET_OK);
}

/* ---- the server: a store, a CA, the join service ------------------------------ */

struct server {
	char dir[256];
	char loc[1024]; /* dir, or its PostgreSQL database (store_location.h) */
	struct fleet_store *st;
	struct fleet_ca *ca;
	struct fleet_seal_key *seal;
	struct fleet_metrics *metrics;
	struct fleet_ek_roots *roots;
	struct fleet_tpm_resolve resolve;
	struct fleet_tpm_attestor_config tpm;
	struct fleet_join *j;
};

static struct server S;
static uint8_t challenge_key[32];

/* A service of its own registry (a second one registers its families
 * again), the registry in *m. */
static struct fleet_join *service_m(struct server *s, const struct fleet_tpm_attestor_config *tpm,
				    struct fleet_metrics **m)
{
	struct fleet_errctx ec = {0};
	struct fleet_join_config jc = {
		.store = s->st,
		.ca = s->ca,
		.seal = s->seal,
		.trust_domain = "fleet.test",
		.cert_ttl_seconds = 3600,
		.metrics = *m = fleet_metrics_new(),
		.tpm = tpm,
		.x509pop = {.grace_seconds = 7 * 86400, .window_seconds = 60},
	};
	struct fleet_join *j = fleet_join_new(&jc, &ec);
	if (!j)
		fail_msg("join service: %s", ec.detail);
	return j;
}

/* Another service over the same store and CA; free with service_free. */
static struct fleet_metrics *other_metrics;
static struct fleet_join *service(struct server *s, const struct fleet_tpm_attestor_config *tpm)
{
	return service_m(s, tpm, &other_metrics);
}

static void service_free(struct fleet_join *j)
{
	fleet_join_free(j);
	fleet_metrics_free(other_metrics);
	other_metrics = NULL;
}

/* The resolve list: machine A's EK joins pool-a. */
static void resolve_set(struct server *s, const char *text)
{
	struct fleet_errctx ec = {0};
	fleet_tpm_resolve_free(&s->resolve);
	if (fleet_tpm_resolve_parse((const uint8_t *)text, strlen(text), &s->resolve, &ec))
		fail_msg("resolve: %s", ec.detail);
}

static void server_config_default(struct server *s)
{
	char line[256];
	memset(&s->tpm, 0, sizeof(s->tpm));
	memcpy(s->tpm.challenge_key, challenge_key, 32);
	s->tpm.ek_roots = s->roots;
	s->tpm.challenge_ttl_seconds = 300;
	snprintf(s->tpm.role, sizeof(s->tpm.role), "node");
	snprintf(line, sizeof(line), "# the delivery manifest\n%s pool=pool-a\n", A.ek_hash);
	resolve_set(s, line);
	s->tpm.resolve = &s->resolve;
	s->tpm.pending_ttl_seconds = 3600;
	s->tpm.retry_after_seconds = 5;
}

static void server_restart(struct server *s)
{
	fleet_join_free(s->j);
	fleet_metrics_free(s->metrics);
	s->j = NULL;
	s->metrics = NULL;
	s->j = service_m(s, &s->tpm, &s->metrics);
}

static int group_setup(void **state)
{
	(void)state;
	struct fleet_errctx ec = {0};
	char cadir[300];
	swtpm_require_or_skip();
	machine_start(&A);
	machine_start(&B);
	snprintf(S.dir, sizeof(S.dir), "/tmp/fleet-join-tpm-XXXXXX");
	assert_non_null(mkdtemp(S.dir));
	store_location_new(S.dir, S.loc, sizeof(S.loc));
	assert_int_equal(fleet_store_open(S.loc, FLEET_STORE_RW, &S.st, &ec), FLEET_OK);
	struct fleet_store_pool p = {.id = "pool-a", .owner = "root", .created_at = 1};
	assert_int_equal(fleet_store_pool_create(S.st, &p), FLEET_OK);
	struct fleet_store_pool p2 = {.id = "pool-b", .owner = "root", .created_at = 1};
	assert_int_equal(fleet_store_pool_create(S.st, &p2), FLEET_OK);
	snprintf(cadir, sizeof(cadir), "%s/ca", S.dir);
	assert_int_equal(fleet_ca_init(cadir, "fleet test CA", 30, &ec), FLEET_OK);
	assert_int_equal(fleet_ca_load(cadir, &S.ca, &ec), FLEET_OK);
	assert_int_equal(fleet_seal_key_generate(&S.seal), FLEET_OK);
	/* Machine A's manufacturer only: B's EK certificate chains nowhere. */
	if (fleet_ek_roots_load(A.sw.roots, &S.roots, &ec))
		fail_msg("roots: %s", ec.detail);
	assert_int_equal(RAND_bytes(challenge_key, 32), 1);
	server_config_default(&S);
	S.j = service_m(&S, &S.tpm, &S.metrics);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	char cmd[300];
	fleet_join_free(S.j);
	fleet_tpm_resolve_free(&S.resolve);
	fleet_ek_roots_free(S.roots);
	fleet_metrics_free(S.metrics);
	fleet_seal_key_free(S.seal);
	fleet_ca_free(S.ca);
	fleet_store_close(S.st);
	store_location_free(S.loc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", S.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", S.dir);
	machine_stop(&A);
	machine_stop(&B);
	return 0;
}

/* Each test starts from the default configuration. */
static int test_setup(void **state)
{
	(void)state;
	server_config_default(&S);
	server_restart(&S);
	return 0;
}

static int64_t refused_in(struct fleet_metrics *m, const char *label);
static int64_t refused(const char *label)
{
	return refused_in(S.metrics, label);
}

static int64_t refused_in(struct fleet_metrics *m, const char *label)
{
	struct fleet_buf b;
	char needle[160];
	int64_t n = 0;
	fb_init(&b);
	assert_int_equal(fleet_metrics_render(m, &b), FLEET_OK);
	assert_int_equal(fb_put(&b, "", 1), FLEET_OK);
	snprintf(needle, sizeof(needle), "fleetd_join_refused_total{reason=\"%s\"} ", label);
	const char *p = strstr((const char *)b.data, needle);
	if (p)
		n = strtoll(p + strlen(needle), NULL, 10);
	fb_free(&b);
	return n;
}

/* ---- the rounds ------------------------------------------------------------------ */

struct answer {
	int status;
	struct fleet_join_response r;
};

static void answer_free(struct answer *a)
{
	fleet_join_response_free(&a->r);
	memset(a, 0, sizeof(*a));
}

static void decode_answer(const struct fleet_buf *out, struct answer *a)
{
	struct fleet_join_envelope env;
	struct fleet_errctx ec = {0};
	if (fleet_join_envelope_decode(out->data, out->len, &env, &ec) ||
	    fleet_join_body_decode(env.body.data, env.body.len, &a->r, &ec))
		fail_msg("answer (HTTP %d): %s", a->status, ec.detail);
	fleet_join_envelope_free(&env);
}

static struct answer join_as(struct fleet_join *j, const struct fleet_buf *csr,
			     const struct fleet_buf *att, enum fleet_join_role role)
{
	struct fleet_join_request rq;
	struct fleet_buf body, out;
	struct answer a;
	const char *reason = NULL;
	memset(&rq, 0, sizeof(rq));
	memset(&a, 0, sizeof(a));
	fb_init(&body);
	fb_init(&out);
	snprintf(rq.attestor, sizeof(rq.attestor), "tpm");
	rq.has_attestation = true;
	rq.attestation.data = att->data;
	rq.attestation.len = att->len;
	rq.csr.data = csr->data;
	rq.csr.len = csr->len;
	rq.role = role;
	assert_int_equal(fleet_join_request_encode(&rq, &body), FLEET_OK);
	a.status = fleet_join_handle(j, "127.0.0.1", body.data, body.len, &out, &reason);
	if (a.status == 200 || a.status == 403)
		decode_answer(&out, &a);
	fb_free(&body);
	fb_free(&out);
	return a;
}

static struct answer join(const struct fleet_buf *csr, const struct fleet_buf *att)
{
	return join_as(S.j, csr, att, FLEET_JOIN_ROLE_NODE);
}

static void round1_evidence(struct machine *m, struct fleet_buf *out)
{
	struct fleet_tpm_evidence ev;
	struct fleet_buf ek, ak;
	memset(&ev, 0, sizeof(ev));
	fb_init(&ek);
	fb_init(&ak);
	marshal_public(&m->ek.pub, &ek);
	marshal_public(&m->ak, &ak);
	ev.round = 1;
	ev.ek_public.data = ek.data;
	ev.ek_public.len = ek.len;
	ev.ek_cert.data = m->ek.cert.data;
	ev.ek_cert.len = m->ek.cert.len;
	ev.ak_public.data = ak.data;
	ev.ak_public.len = ak.len;
	fb_reset(out);
	assert_int_equal(fleet_tpm_evidence_encode(&ev, out), FLEET_OK);
	fb_free(&ek);
	fb_free(&ak);
}

/* What round 2 is built from, owned here (ev's fields point into it). */
struct round2 {
	struct fleet_tpm_evidence ev;
	struct fleet_buf state, secret, quote, quote_sig, key_public, certify, certify_sig;
	struct fleet_pcr_value values[FLEET_TPM_MAX_PCRS];
	size_t n_values;
};

static void round2_free(struct round2 *r)
{
	fb_free(&r->state);
	fb_free(&r->secret);
	fb_free(&r->quote);
	fb_free(&r->quote_sig);
	fb_free(&r->key_public);
	fb_free(&r->certify);
	fb_free(&r->certify_sig);
	memset(r, 0, sizeof(*r));
}

static void set_bytes(struct fleet_wire_bytes *w, const struct fleet_buf *b)
{
	w->data = b->data;
	w->len = b->len;
}

/* The AK's TPM2_Certify of node key gen over q (32 bytes). */
static void certify(struct machine *m, unsigned gen, const uint8_t q[32], struct fleet_buf *attest,
		    struct fleet_buf *sig)
{
	m->tt.ldevid_gen = gen;
	fb_reset(attest);
	fb_reset(sig);
	if (tink_tpm_certify_ldevid(&m->tt, q, 32, attest, sig))
		fail_msg("TPM: %s", m->tt.err);
}

/* r's node key: key gen of machine m, certified by m's AK over q. */
static void recertify(struct round2 *r, struct machine *m, unsigned gen, const uint8_t q[32])
{
	certify(m, gen, q, &r->certify, &r->certify_sig);
	TPM2B_PUBLIC k = node_key(m, gen);
	marshal_public(&k, &r->key_public);
	r->ev.has_node_key = true;
	set_bytes(&r->ev.node_key.key_public, &r->key_public);
	set_bytes(&r->ev.node_key.certify_info, &r->certify);
	set_bytes(&r->ev.node_key.signature, &r->certify_sig);
}

/* The machine's answer to a challenge, as an honest agent gives it: the
 * activated secret, a quote of the challenge's selection over
 * SHA-256(secret || SHA-256(csr)), the node key gen certified over
 * SHA-256(csr). */
static void answer_challenge(struct machine *m, const struct answer *ch, const struct fleet_buf *csr,
			     unsigned gen, struct round2 *r)
{
	struct fleet_tpm_challenge c;
	struct fleet_errctx ec = {0};
	TPML_PCR_SELECTION sel;
	uint8_t secret[64], csr_sha[32], nonce[32];
	size_t slen = 0;
	round2_free(r); /* a test answers again with the same r */
	fb_init(&r->state);
	fb_init(&r->secret);
	fb_init(&r->quote);
	fb_init(&r->quote_sig);
	fb_init(&r->key_public);
	fb_init(&r->certify);
	fb_init(&r->certify_sig);
	assert_int_equal(ch->status, 200);
	assert_int_equal(ch->r.status, FLEET_JOIN_CHALLENGE);
	assert_string_equal(ch->r.deferral.attestor, "tpm");
	if (fleet_tpm_challenge_decode(ch->r.deferral.payload.data, ch->r.deferral.payload.len, &c,
				       &ec))
		fail_msg("challenge: %s", ec.detail);
	if (tink_tpm_activate(&m->tt, &m->ek, c.id_object.data, c.id_object.len,
			      c.enc_secret.data, c.enc_secret.len, secret, sizeof(secret), &slen))
		fail_msg("TPM: %s", m->tt.err);
	assert_int_equal(fb_put(&r->state, c.state.data, c.state.len), FLEET_OK);
	assert_int_equal(fb_put(&r->secret, secret, slen), FLEET_OK);
	sha256(csr, csr_sha);
	assert_int_equal(fleet_tpm_quote_nonce(secret, slen, csr_sha, nonce), FLEET_OK);
	assert_int_equal(fleet_pcr_selection_parse(c.pcrs, &sel), FLEET_OK);
	if (tink_tpm_quote(&m->tt, &sel, nonce, 32, &r->quote, &r->quote_sig, r->values,
			   FLEET_TPM_MAX_PCRS, &r->n_values))
		fail_msg("TPM: %s", m->tt.err);
	fleet_tpm_challenge_free(&c);
	r->ev.round = 2;
	set_bytes(&r->ev.state, &r->state);
	set_bytes(&r->ev.secret, &r->secret);
	set_bytes(&r->ev.quote, &r->quote);
	set_bytes(&r->ev.quote_sig, &r->quote_sig);
	r->ev.n_pcr_values = r->n_values;
	for (size_t i = 0; i < r->n_values; i++) {
		r->ev.pcr_values[i].data = r->values[i].digest;
		r->ev.pcr_values[i].len = r->values[i].size;
	}
	recertify(r, m, gen, csr_sha);
}

static struct answer send_round2(const struct round2 *r, const struct fleet_buf *csr)
{
	struct fleet_buf att;
	fb_init(&att);
	assert_int_equal(fleet_tpm_evidence_encode(&r->ev, &att), FLEET_OK);
	struct answer a = join(csr, &att);
	fb_free(&att);
	return a;
}

/* Both rounds; the final answer. */
static struct answer join_tpm(struct machine *m, unsigned gen, struct fleet_buf *csr)
{
	struct fleet_buf att;
	struct round2 r = {0};
	fb_init(&att);
	tpm_csr(m, gen, csr);
	round1_evidence(m, &att);
	struct answer ch = join(csr, &att);
	answer_challenge(m, &ch, csr, gen, &r);
	struct answer a = send_round2(&r, csr);
	answer_free(&ch);
	round2_free(&r);
	fb_free(&att);
	return a;
}

/* The answer is a refusal counted exactly once under label. */
static void assert_refused(struct answer *a, const char *label, int64_t before)
{
	assert_int_equal(a->status, 403);
	assert_int_equal(a->r.status, FLEET_JOIN_DENIED);
	if (refused(label) != before + 1)
		fail_msg("%s counted %lld times, expected %lld", label,
			 (long long)refused(label), (long long)before + 1);
	answer_free(a);
}

static X509 *leaf_of(const struct answer *a)
{
	const unsigned char *p = a->r.chain[0].data;
	X509 *x = d2i_X509(NULL, &p, (long)a->r.chain[0].len);
	assert_non_null(x);
	return x;
}

/* The URI SANs of the answer's leaf, joined by spaces. */
static void uris_of(const struct answer *a, char *out, size_t cap)
{
	X509 *x = leaf_of(a);
	GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	out[0] = '\0';
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		if (g->type != GEN_URI)
			continue;
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s%s", n ? " " : "",
			 (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier));
	}
	GENERAL_NAMES_free(sans);
	X509_free(x);
}

static void ak_uri(struct machine *m, char *out, size_t cap)
{
	uint8_t name[2 + 64];
	size_t n;
	assert_int_equal(fleet_tpm_name(&m->ak.publicArea, name, sizeof(name), &n), FLEET_OK);
	assert_int_equal(fleet_tpm_ak_uri(name, n, out, cap), FLEET_OK);
}

static void node_of_ek(const char *ek_hash, char node[FLEET_STORE_NODE_ID_MAX + 1]);

/* ---- round 1 ------------------------------------------------------------------ */

static void test_round1_writes_nothing_and_challenges(void **state)
{
	(void)state;
	struct fleet_buf csr, att;
	fb_init(&csr);
	fb_init(&att);
	tpm_csr(&A, 0, &csr);
	round1_evidence(&A, &att);
	struct answer ch = join(&csr, &att);
	assert_int_equal(ch.status, 200);
	assert_int_equal(ch.r.status, FLEET_JOIN_CHALLENGE);
	assert_true(ch.r.deferral.not_after > time(NULL));
	assert_true(ch.r.deferral.not_after <= time(NULL) + FLEET_CHALLENGE_MAX_TTL + 1);
	char node[FLEET_STORE_NODE_ID_MAX + 1];
	node_of_ek(A.ek_hash, node);
	assert_string_equal(node, ""); /* no row, no binding */
	answer_free(&ch);
	fb_free(&csr);
	fb_free(&att);
}

static void test_tpm_malformed(void **state)
{
	(void)state;
	struct fleet_buf csr, att;
	fb_init(&csr);
	fb_init(&att);
	tpm_csr(&A, 0, &csr);
	assert_int_equal(fb_put(&att, "{\"v\":1,\"round\":3}", 18), FLEET_OK);
	int64_t n = refused("tpm:tpm-malformed");
	struct answer a = join(&csr, &att);
	assert_refused(&a, "tpm:tpm-malformed", n);
	fb_free(&csr);
	fb_free(&att);
}

static void test_tpm_role(void **state)
{
	(void)state;
	struct fleet_buf csr, att;
	fb_init(&csr);
	fb_init(&att);
	tpm_csr(&A, 0, &csr);
	round1_evidence(&A, &att);
	int64_t n = refused("tpm:tpm-role");
	struct answer a = join_as(S.j, &csr, &att, FLEET_JOIN_ROLE_SITE);
	assert_refused(&a, "tpm:tpm-role", n);
	fb_free(&csr);
	fb_free(&att);
}

/* Round 1 with one field replaced. */
static struct answer round1_with(const struct fleet_buf *csr, const TPM2B_PUBLIC *ek,
				 const struct fleet_buf *cert, const TPM2B_PUBLIC *ak)
{
	struct fleet_tpm_evidence ev;
	struct fleet_buf e, k, att;
	memset(&ev, 0, sizeof(ev));
	fb_init(&e);
	fb_init(&k);
	fb_init(&att);
	marshal_public(ek, &e);
	marshal_public(ak, &k);
	ev.round = 1;
	set_bytes(&ev.ek_public, &e);
	if (cert)
		set_bytes(&ev.ek_cert, cert);
	set_bytes(&ev.ak_public, &k);
	assert_int_equal(fleet_tpm_evidence_encode(&ev, &att), FLEET_OK);
	struct answer a = join(csr, &att);
	fb_free(&e);
	fb_free(&k);
	fb_free(&att);
	return a;
}

static void test_tpm_ek_unsupported(void **state)
{
	(void)state;
	struct fleet_buf csr;
	fb_init(&csr);
	tpm_csr(&A, 0, &csr);
	TPM2B_PUBLIC ek = A.ek.pub;
	ek.publicArea.nameAlg = TPM2_ALG_SHA1; /* no credential is wrapped to it */
	int64_t n = refused("tpm:tpm-ek-unsupported");
	struct answer a = round1_with(&csr, &ek, &A.ek.cert, &A.ak);
	assert_refused(&a, "tpm:tpm-ek-unsupported", n);
	fb_free(&csr);
}

static void test_ek_certificate_missing(void **state)
{
	(void)state;
	struct fleet_buf csr;
	fb_init(&csr);
	tpm_csr(&A, 0, &csr);
	int64_t n = refused("tpm:ek-certificate-missing");
	struct answer a = round1_with(&csr, &A.ek.pub, NULL, &A.ak);
	assert_refused(&a, "tpm:ek-certificate-missing", n);
	/* allow_uncertified_ek (labs) takes it: a challenge. */
	S.tpm.allow_uncertified_ek = true;
	server_restart(&S);
	a = round1_with(&csr, &A.ek.pub, NULL, &A.ak);
	assert_int_equal(a.r.status, FLEET_JOIN_CHALLENGE);
	answer_free(&a);
	fb_free(&csr);
}

static void test_ek_certificate_mismatch(void **state)
{
	(void)state;
	struct fleet_buf csr;
	fb_init(&csr);
	tpm_csr(&A, 0, &csr);
	int64_t n = refused("tpm:ek-certificate-mismatch");
	struct answer a = round1_with(&csr, &A.ek.pub, &B.ek.cert, &A.ak); /* B's certificate */
	assert_refused(&a, "tpm:ek-certificate-mismatch", n);
	fb_free(&csr);
}

static void test_ek_certificate_chain(void **state)
{
	(void)state;
	struct fleet_buf csr, att;
	fb_init(&csr);
	fb_init(&att);
	tpm_csr(&B, 0, &csr);
	round1_evidence(&B, &att); /* B's manufacturer is not among the roots */
	int64_t n = refused("tpm:ek-certificate-chain");
	struct answer a = join(&csr, &att);
	assert_refused(&a, "tpm:ek-certificate-chain", n);
	/* No roots at all is no chain either. */
	S.tpm.ek_roots = NULL;
	server_restart(&S);
	tpm_csr(&A, 0, &csr);
	round1_evidence(&A, &att);
	n = refused("tpm:ek-certificate-chain");
	a = join(&csr, &att);
	assert_refused(&a, "tpm:ek-certificate-chain", n);
	fb_free(&csr);
	fb_free(&att);
}

static void test_tpm_ak_attributes(void **state)
{
	(void)state;
	struct fleet_buf csr;
	fb_init(&csr);
	tpm_csr(&A, 0, &csr);
	TPM2B_PUBLIC notak = node_key(&A, 0); /* unrestricted: no attestation key */
	int64_t n = refused("tpm:tpm-ak-attributes");
	struct answer a = round1_with(&csr, &A.ek.pub, &A.ek.cert, &notak);
	assert_refused(&a, "tpm:tpm-ak-attributes", n);
	fb_free(&csr);
}

/* ---- round 2 ------------------------------------------------------------------ */

struct bound_arg {
	const char *ek;
	char node[FLEET_STORE_NODE_ID_MAX + 1];
};

static fleet_err bound_fn(struct fleet_store_tx *tx, void *arg)
{
	struct bound_arg *b = arg;
	fleet_err e = fleet_store_tx_binding(tx, "ek", b->ek, b->node);
	return e == FLEET_STORE_E_NOT_FOUND ? FLEET_OK : e;
}

/* The node the EK is bound to ("" none), through the store's own reader. */
static void node_of_ek(const char *ek_hash, char node[FLEET_STORE_NODE_ID_MAX + 1])
{
	struct bound_arg b = {.ek = ek_hash};
	assert_int_equal(fleet_store_join_tx(S.st, bound_fn, &b), FLEET_OK);
	memcpy(node, b.node, sizeof(b.node));
}

/* Round 1 of machine m for node key gen, answered; r is round 2 as an
 * honest agent sends it, for a test to change one thing. */
static void challenged(struct machine *m, unsigned gen, struct fleet_buf *csr, struct round2 *r)
{
	struct fleet_buf att;
	fb_init(&att);
	tpm_csr(m, gen, csr);
	round1_evidence(m, &att);
	struct answer ch = join(csr, &att);
	answer_challenge(m, &ch, csr, gen, r);
	answer_free(&ch);
	fb_free(&att);
}

static void refused_round2(struct round2 *r, const struct fleet_buf *csr, const char *reason)
{
	char label[96];
	snprintf(label, sizeof(label), "tpm:%s", reason);
	int64_t n = refused(label);
	struct answer a = send_round2(r, csr);
	assert_refused(&a, label, n);
}

static void test_challenge_malformed(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.ev.state.len = 20; /* shorter than the layout */
	refused_round2(&r, &csr, "challenge-malformed");
	round2_free(&r);
	fb_free(&csr);
}

static void test_challenge_tag(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.state.data[r.state.len - 1] ^= 1;
	refused_round2(&r, &csr, "challenge-tag");
	/* Another replica's key is another key. */
	challenged(&A, 0, &csr, &r);
	S.tpm.challenge_key[0] ^= 1;
	server_restart(&S);
	refused_round2(&r, &csr, "challenge-tag");
	round2_free(&r);
	fb_free(&csr);
}

static void test_challenge_for_another_csr(void **state)
{
	(void)state;
	struct fleet_buf csr, other;
	struct round2 r = {0};
	fb_init(&csr);
	fb_init(&other);
	challenged(&A, 0, &csr, &r);
	tpm_csr(&A, 1, &other);
	refused_round2(&r, &other, "challenge-for-another-csr");
	round2_free(&r);
	fb_free(&csr);
	fb_free(&other);
}

static void test_challenge_expired(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	S.tpm.challenge_ttl_seconds = 1;
	server_restart(&S);
	challenged(&A, 0, &csr, &r);
	sleep(3); /* the store's clock is unixepoch(): past not_after */
	refused_round2(&r, &csr, "challenge-expired");
	round2_free(&r);
	fb_free(&csr);
}

static void test_tpm_credential(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.secret.data[0] ^= 1; /* a secret the TPM did not activate */
	refused_round2(&r, &csr, "tpm-credential");
	round2_free(&r);
	fb_free(&csr);
}

static void test_tpm_quote_malformed(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	/* Signed by the AK, but a certification, not a quote. */
	set_bytes(&r.ev.quote, &r.certify);
	set_bytes(&r.ev.quote_sig, &r.certify_sig);
	refused_round2(&r, &csr, "tpm-quote-malformed");
	round2_free(&r);
	fb_free(&csr);
}

static void test_tpm_quote_signature(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.quote_sig.data[r.quote_sig.len - 1] ^= 1;
	refused_round2(&r, &csr, "tpm-quote-signature");
	/* The quote of another TPM's AK over the same nonce. */
	challenged(&A, 0, &csr, &r);
	uint8_t csr_sha[32], nonce[32];
	TPML_PCR_SELECTION sel;
	struct fleet_pcr_value v[FLEET_TPM_MAX_PCRS];
	size_t nv = 0;
	sha256(&csr, csr_sha);
	fleet_tpm_quote_nonce(r.secret.data, r.secret.len, csr_sha, nonce);
	fleet_pcr_selection_parse("sha256:0,1,2,3,4,5,6,7", &sel);
	fb_reset(&r.quote);
	fb_reset(&r.quote_sig);
	if (tink_tpm_quote(&B.tt, &sel, nonce, 32, &r.quote, &r.quote_sig, v, FLEET_TPM_MAX_PCRS,
			   &nv))
		fail_msg("TPM: %s", B.tt.err);
	set_bytes(&r.ev.quote, &r.quote);
	set_bytes(&r.ev.quote_sig, &r.quote_sig);
	refused_round2(&r, &csr, "tpm-quote-signature");
	round2_free(&r);
	fb_free(&csr);
}

static void requote(struct machine *m, struct round2 *r, const char *selection,
		    const uint8_t nonce[32])
{
	TPML_PCR_SELECTION sel;
	assert_int_equal(fleet_pcr_selection_parse(selection, &sel), FLEET_OK);
	fb_reset(&r->quote);
	fb_reset(&r->quote_sig);
	if (tink_tpm_quote(&m->tt, &sel, nonce, 32, &r->quote, &r->quote_sig, r->values,
			   FLEET_TPM_MAX_PCRS, &r->n_values))
		fail_msg("TPM: %s", m->tt.err);
	set_bytes(&r->ev.quote, &r->quote);
	set_bytes(&r->ev.quote_sig, &r->quote_sig);
	r->ev.n_pcr_values = r->n_values;
	for (size_t i = 0; i < r->n_values; i++) {
		r->ev.pcr_values[i].data = r->values[i].digest;
		r->ev.pcr_values[i].len = r->values[i].size;
	}
}

static void test_tpm_quote_nonce(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	uint8_t csr_sha[32];
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	/* SHA-256(csr) alone: the secret is not in it, so the quote is no
	 * proof of the activation. */
	sha256(&csr, csr_sha);
	requote(&A, &r, "sha256:0,1,2,3,4,5,6,7", csr_sha);
	refused_round2(&r, &csr, "tpm-quote-nonce");
	round2_free(&r);
	fb_free(&csr);
}

static void test_tpm_quote_selection(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	uint8_t csr_sha[32], nonce[32];
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	sha256(&csr, csr_sha);
	fleet_tpm_quote_nonce(r.secret.data, r.secret.len, csr_sha, nonce);
	/* PCRs 0..6 and 8 rather than 0..7: as many values, another set. */
	requote(&A, &r, "sha256:0,1,2,3,4,5,6,8", nonce);
	refused_round2(&r, &csr, "tpm-quote-selection");
	round2_free(&r);
	fb_free(&csr);
}

static void test_tpm_pcr_values(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.values[7].digest[0] ^= 1; /* PCR 7 claimed other than quoted */
	refused_round2(&r, &csr, "tpm-pcr-values");
	challenged(&A, 0, &csr, &r);
	r.ev.n_pcr_values = 7; /* one value short of the selection */
	refused_round2(&r, &csr, "tpm-pcr-values");
	round2_free(&r);
	fb_free(&csr);
}

static void test_pcr_policy(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	struct fleet_profile *p = NULL;
	struct fleet_errctx ec = {0};
	char path[512];
	fb_init(&csr);
	snprintf(path, sizeof(path), "%s/policy/profiles/", FLEET_SOURCE_DIR);
	/* Any shipped profile: the swtpm booted nothing, and no log is sent. */
	FILE *ls = popen("ls " FLEET_SOURCE_DIR "/policy/profiles/*.yaml | head -1", "r");
	assert_non_null(ls);
	assert_non_null(fgets(path, sizeof(path), ls));
	pclose(ls);
	path[strcspn(path, "\n")] = '\0';
	if (fleet_profile_load(path, &p, &ec))
		fail_msg("profile %s: %s", path, ec.detail);
	S.tpm.pcr_profile = p;
	server_restart(&S);
	challenged(&A, 0, &csr, &r);
	refused_round2(&r, &csr, "pcr-policy");
	round2_free(&r);
	S.tpm.pcr_profile = NULL;
	server_restart(&S);
	fleet_profile_free(p);
	fb_free(&csr);
}

/* The node key's certification, one check at a time. */
static void test_node_key_malformed(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.ev.node_key.key_public.len = 6;
	refused_round2(&r, &csr, "node-key-malformed");
	challenged(&A, 0, &csr, &r);
	/* Signed by the AK, but a quote, not a certification. */
	set_bytes(&r.ev.node_key.certify_info, &r.quote);
	set_bytes(&r.ev.node_key.signature, &r.quote_sig);
	refused_round2(&r, &csr, "node-key-malformed");
	round2_free(&r);
	fb_free(&csr);
}

static void test_node_key_signature(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	uint8_t csr_sha[32];
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.certify_sig.data[r.certify_sig.len - 1] ^= 1;
	refused_round2(&r, &csr, "node-key-signature");
	/* Certified by another TPM's AK: not the AK that just proved the EK. */
	challenged(&A, 0, &csr, &r);
	sha256(&csr, csr_sha);
	recertify(&r, &B, 0, csr_sha);
	refused_round2(&r, &csr, "node-key-signature");
	round2_free(&r);
	fb_free(&csr);
}

static void test_node_key_nonce(void **state)
{
	(void)state;
	struct fleet_buf csr, other;
	struct round2 r = {0};
	uint8_t other_sha[32];
	fb_init(&csr);
	fb_init(&other);
	challenged(&A, 0, &csr, &r);
	/* A certification made for another CSR, replayed. */
	tpm_csr(&A, 0, &other);
	other.data[other.len - 1] ^= 0; /* the same key, another request: */
	sha256(&other, other_sha);
	other_sha[0] ^= 1;
	certify(&A, 0, other_sha, &r.certify, &r.certify_sig);
	set_bytes(&r.ev.node_key.certify_info, &r.certify);
	set_bytes(&r.ev.node_key.signature, &r.certify_sig);
	refused_round2(&r, &csr, "node-key-nonce");
	round2_free(&r);
	fb_free(&csr);
	fb_free(&other);
}

static void test_node_key_name(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	/* The certification is of key 0; the public area says key 1. */
	TPM2B_PUBLIC k1 = node_key(&A, 1);
	marshal_public(&k1, &r.key_public);
	set_bytes(&r.ev.node_key.key_public, &r.key_public);
	refused_round2(&r, &csr, "node-key-name");
	round2_free(&r);
	fb_free(&csr);
}

/* A key the AK certifies that may leave the TPM or decrypt: made here from
 * the node key's template with decrypt set (an unrestricted ECC key may do
 * both) and certified by the AK over SHA-256(csr). */
static void test_node_key_attributes(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	uint8_t csr_sha[32];
	ESYS_TR ak = ESYS_TR_NONE, key = ESYS_TR_NONE;
	TPM2B_PUBLIC *out_pub = NULL;
	TPM2B_ATTEST *attest = NULL;
	TPMT_SIGNATURE *sig = NULL;
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	sha256(&csr, csr_sha);
	TPM2B_PUBLIC tmpl = tink_ldevid_template(7);
	tmpl.publicArea.objectAttributes |= TPMA_OBJECT_DECRYPT;
	tmpl.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL; /* sign|decrypt */
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPML_PCR_SELECTION none = {0};
	TPM2B_DATA outside = {0};
	if (Esys_CreatePrimary(A.tt.esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE,
			       ESYS_TR_NONE, &sens, &tmpl, &outside, &none, &key, &out_pub, NULL,
			       NULL, NULL) != TSS2_RC_SUCCESS)
		fail_msg("CreatePrimary (sign|decrypt)");
	assert_int_equal(tink_tpm_load(&A.tt, TINK_KEY_AK, &ak, NULL), 0);
	TPM2B_DATA q = {.size = 32};
	memcpy(q.buffer, csr_sha, 32);
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	if (Esys_Certify(A.tt.esys, key, ak, ESYS_TR_PASSWORD, ESYS_TR_PASSWORD, ESYS_TR_NONE, &q,
			 &scheme, &attest, &sig) != TSS2_RC_SUCCESS)
		fail_msg("Certify");
	uint8_t sb[sizeof(TPMT_SIGNATURE)];
	size_t so = 0;
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(sig, sb, sizeof(sb), &so), TSS2_RC_SUCCESS);
	fb_reset(&r.certify);
	fb_reset(&r.certify_sig);
	fb_put(&r.certify, attest->attestationData, attest->size);
	fb_put(&r.certify_sig, sb, so);
	marshal_public(out_pub, &r.key_public);
	set_bytes(&r.ev.node_key.key_public, &r.key_public);
	set_bytes(&r.ev.node_key.certify_info, &r.certify);
	set_bytes(&r.ev.node_key.signature, &r.certify_sig);
	refused_round2(&r, &csr, "node-key-attributes");
	tink_tpm_unload(&A.tt, &ak);
	tink_tpm_unload(&A.tt, &key);
	Esys_Free(out_pub);
	Esys_Free(attest);
	Esys_Free(sig);
	round2_free(&r);
	fb_free(&csr);
}

static void test_node_key_not_csr(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	uint8_t csr_sha[32];
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	/* Key 1 made in this TPM and certified for this CSR, but the CSR's
	 * key is key 0. */
	sha256(&csr, csr_sha);
	recertify(&r, &A, 1, csr_sha);
	refused_round2(&r, &csr, "node-key-not-csr");
	round2_free(&r);
	fb_free(&csr);
}

static void test_node_key_not_certified(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 0, &csr, &r);
	r.ev.has_node_key = false;
	refused_round2(&r, &csr, "node-key-not-certified");
	round2_free(&r);
	fb_free(&csr);
}

static void test_tpm_unknown_ek(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	S.tpm.resolve = NULL; /* neither resolve nor enrollment */
	server_restart(&S);
	challenged(&A, 0, &csr, &r);
	refused_round2(&r, &csr, "tpm-unknown-ek");
	char node[FLEET_STORE_NODE_ID_MAX + 1];
	node_of_ek(A.ek_hash, node);
	assert_string_equal(node, "");
	round2_free(&r);
	fb_free(&csr);
}

/* ---- joins ------------------------------------------------------------------------ */

static char joined_a[FLEET_STORE_NODE_ID_MAX + 1];

static void test_join_certified_carries_the_ak(void **state)
{
	(void)state;
	struct fleet_buf csr;
	char uris[600], want[FLEET_TPM_AK_URI_MAX + 1], spiffe[300];
	fb_init(&csr);
	int64_t joins = refused("tpm:node-key-not-certified");
	struct answer a = join_tpm(&A, 0, &csr);
	assert_int_equal(a.status, 200);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	snprintf(joined_a, sizeof(joined_a), "%s", a.r.node_id);
	/* Exactly the SPIFFE ID, then the AK's statement. */
	uris_of(&a, uris, sizeof(uris));
	ak_uri(&A, want, sizeof(want));
	snprintf(spiffe, sizeof(spiffe), "spiffe://fleet.test/node/%s %s", a.r.node_id, want);
	assert_string_equal(uris, spiffe);
	char node[FLEET_STORE_NODE_ID_MAX + 1];
	node_of_ek(A.ek_hash, node);
	assert_string_equal(node, a.r.node_id); /* the EK is bound to it */
	assert_int_equal(refused("tpm:node-key-not-certified"), joins);
	answer_free(&a);
	fb_free(&csr);
}

static void test_reinstall_reclaims_the_same_node(void **state)
{
	(void)state;
	struct fleet_buf csr;
	fb_init(&csr);
	assert_string_not_equal(joined_a, "");
	/* A reinstall: the same TPM, a new node key (another generation). */
	struct answer a = join_tpm(&A, 2, &csr);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	assert_string_equal(a.r.node_id, joined_a);
	struct fleet_store_node n;
	assert_int_equal(fleet_store_node_get(S.st, joined_a, &n), FLEET_OK);
	assert_int_equal(n.generation, 2); /* reclaimed in place */
	answer_free(&a);
	fb_free(&csr);
}

static void test_bound_elsewhere(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	char line[3000];
	fb_init(&csr);
	assert_string_not_equal(joined_a, "");
	/* A list that hands A's node to B's TPM (B certified by B's
	 * manufacturer, now trusted too). */
	struct fleet_ek_roots *both = NULL;
	struct fleet_errctx ec = {0};
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/both-roots", S.dir);
	snprintf(line, sizeof(line), "mkdir -p %s && cp %s/* %s/ && cp %s/* %s/", dir, A.sw.roots,
		 dir, B.sw.roots, dir);
	assert_int_equal(system(line), 0);
	assert_int_equal(fleet_ek_roots_load(dir, &both, &ec), FLEET_OK);
	snprintf(line, sizeof(line), "%s pool=pool-a node=%s\n", B.ek_hash, joined_a);
	resolve_set(&S, line);
	S.tpm.resolve = &S.resolve;
	S.tpm.ek_roots = both;
	server_restart(&S);
	challenged(&B, 0, &csr, &r);
	refused_round2(&r, &csr, "bound-elsewhere");
	char node[FLEET_STORE_NODE_ID_MAX + 1];
	node_of_ek(B.ek_hash, node);
	assert_string_equal(node, "");
	round2_free(&r);
	S.tpm.ek_roots = S.roots;
	server_restart(&S);
	fleet_ek_roots_free(both);
	fb_free(&csr);
}

static void test_any_admits_uncertified_without_a_claim(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	char uris[600];
	fb_init(&csr);
	S.tpm.node_key = FLEET_TPM_NODE_KEY_ANY;
	server_restart(&S);
	challenged(&A, 3, &csr, &r);
	r.ev.has_node_key = false;
	struct answer a = send_round2(&r, &csr);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	uris_of(&a, uris, sizeof(uris));
	assert_null(strstr(uris, FLEET_TPM_AK_URI_PREFIX)); /* no statement */
	answer_free(&a);
	round2_free(&r);
	fb_free(&csr);
}

/* Enrollment: an unknown EK waits for an operator; denied it is refused
 * until the decision ends, approved it joins the enrollment pool. */
static void test_enrollment_pending_denied_approved(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	/* B, now trusted, unlisted: enrollment. */
	struct fleet_ek_roots *both = NULL;
	struct fleet_errctx ec = {0};
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/both-roots", S.dir);
	assert_int_equal(fleet_ek_roots_load(dir, &both, &ec), FLEET_OK);
	S.tpm.ek_roots = both;
	snprintf(S.tpm.enrollment_pool, sizeof(S.tpm.enrollment_pool), "pool-b");
	S.tpm.pending_ttl_seconds = 2; /* each decision lasts as long */
	server_restart(&S);
	challenged(&B, 0, &csr, &r);
	struct answer a = send_round2(&r, &csr);
	assert_int_equal(a.r.status, FLEET_JOIN_PENDING);
	char rid[FLEET_JOIN_MAX_ID + 1];
	snprintf(rid, sizeof(rid), "%s", a.r.deferral.request_id);
	answer_free(&a);
	round2_free(&r);
	assert_int_equal(fleet_store_join_request_decide(S.st, rid, false, "operator", time(NULL)),
			 FLEET_OK);
	challenged(&B, 0, &csr, &r);
	refused_round2(&r, &csr, "tpm-denied");
	round2_free(&r);
	char node[FLEET_STORE_NODE_ID_MAX + 1];
	node_of_ek(B.ek_hash, node);
	assert_string_equal(node, "");
	sleep(3); /* the denial ends: the machine asks again */
	challenged(&B, 0, &csr, &r);
	a = send_round2(&r, &csr);
	assert_int_equal(a.r.status, FLEET_JOIN_PENDING);
	snprintf(rid, sizeof(rid), "%s", a.r.deferral.request_id);
	answer_free(&a);
	round2_free(&r);
	assert_int_equal(fleet_store_join_request_decide(S.st, rid, true, "operator", time(NULL)),
			 FLEET_OK);
	challenged(&B, 0, &csr, &r);
	a = send_round2(&r, &csr);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	struct fleet_store_node n;
	assert_int_equal(fleet_store_node_get(S.st, a.r.node_id, &n), FLEET_OK);
	assert_string_equal(n.pool, "pool-b");
	node_of_ek(B.ek_hash, node);
	assert_string_equal(node, a.r.node_id);
	answer_free(&a);
	round2_free(&r);
	S.tpm.ek_roots = S.roots;
	server_restart(&S);
	fleet_ek_roots_free(both);
	fb_free(&csr);
}

/* A challenge one service sealed, finished by another sharing only the key
 * and the store (a second replica). */
static void test_another_replica_finishes(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	challenged(&A, 4, &csr, &r);
	struct fleet_join *other = service(&S, &S.tpm);
	struct fleet_buf att, body, out;
	fb_init(&att);
	fb_init(&body);
	fb_init(&out);
	assert_int_equal(fleet_tpm_evidence_encode(&r.ev, &att), FLEET_OK);
	struct answer a = join_as(other, &csr, &att, FLEET_JOIN_ROLE_NODE);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	assert_string_equal(a.r.node_id, joined_a);
	answer_free(&a);
	service_free(other);
	fb_free(&att);
	fb_free(&body);
	fb_free(&out);
	round2_free(&r);
	fb_free(&csr);
}

/* A8: an attestor that returns a key statement renewals could not prove
 * (here the tpm attestor's own result with its statement replaced, as a
 * module of another kind would return one) is refused, not issued a
 * certificate that could never renew. */
static fleet_err lying_tpm_verify(const struct fleet_attestor *a, struct fleet_store_tx *tx,
				  const struct fleet_join_input *in,
				  struct fleet_attest_result *out)
{
	fleet_err e = fleet_attestor_tpm_verify(a, tx, in, out);
	if (!e && out->outcome == FLEET_ATTEST_RESULT)
		snprintf(out->node_key_uri, sizeof(out->node_key_uri), "urn:bc:file-key:%s",
			 "0123456789abcdef");
	return e;
}

static void test_node_key_statement(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	fb_init(&csr);
	struct fleet_attestor *tpm = NULL;
	for (size_t i = 0; i < sizeof(S.j->attestors) / sizeof(S.j->attestors[0]); i++)
		if (S.j->attestors[i].id && !strcmp(S.j->attestors[i].id, "tpm"))
			tpm = &S.j->attestors[i];
	assert_non_null(tpm);
	tpm->verify = lying_tpm_verify;
	challenged(&A, 30, &csr, &r);
	int64_t n = refused("tpm:node-key-statement");
	struct answer a = send_round2(&r, &csr);
	assert_refused(&a, "tpm:node-key-statement", n);
	round2_free(&r);
	fb_free(&csr);
}

/* ---- renewal --------------------------------------------------------------------- */

/* The current leaf of machine A's node (the last join's), DER. */
static struct fleet_buf leaf_a;
static unsigned gen_a; /* its key's generation */

static void join_a_fresh(unsigned gen)
{
	struct fleet_buf csr;
	fb_init(&csr);
	struct answer a = join_tpm(&A, gen, &csr);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	fb_reset(&leaf_a);
	fb_put(&leaf_a, a.r.chain[0].data, a.r.chain[0].len);
	gen_a = gen;
	answer_free(&a);
	fb_free(&csr);
}

/* An ES256 (r||s) by the TPM's node key gen over msg (TPM2_Sign's ECDSA). */
static void renew_sig_raw(struct machine *m, unsigned gen, const struct fleet_buf *msg,
			  uint8_t sig[64])
{
	struct fleet_buf s;
	struct fleet_errctx ec = {0};
	TPMT_SIGNATURE ts;
	fb_init(&s);
	m->tt.ldevid_gen = gen;
	if (tink_tpm_sign_ldevid(&m->tt, msg->data, msg->len, &s))
		fail_msg("TPM: %s", m->tt.err);
	assert_int_equal(fleet_tpm_signature_parse(s.data, s.len, &ts, &ec), FLEET_OK);
	memset(sig, 0, 64);
	memcpy(sig + 32 - ts.signature.ecdsa.signatureR.size, ts.signature.ecdsa.signatureR.buffer,
	       ts.signature.ecdsa.signatureR.size);
	memcpy(sig + 64 - ts.signature.ecdsa.signatureS.size, ts.signature.ecdsa.signatureS.buffer,
	       ts.signature.ecdsa.signatureS.size);
	fb_free(&s);
}

/* The renew proof by key gen over (csr, leaf). */
static void renew_sig(struct machine *m, unsigned gen, const struct fleet_buf *csr,
		      const struct fleet_buf *leaf, uint8_t sig[64])
{
	struct fleet_buf in;
	fb_init(&in);
	assert_int_equal(fleet_renew_signing_input(csr->data, csr->len, leaf->data, leaf->len, &in),
			 FLEET_OK);
	renew_sig_raw(m, gen, &in, sig);
	fb_free(&in);
}

struct renewal {
	struct fleet_renew_request rq;
	struct fleet_buf csr, ak, key, attest, sig;
};

static void renewal_free(struct renewal *w)
{
	fb_free(&w->csr);
	fb_free(&w->ak);
	fb_free(&w->key);
	fb_free(&w->attest);
	fb_free(&w->sig);
	memset(w, 0, sizeof(*w));
}

/* Renewal of leaf (key gen) to key next, with the AK of machine ak_of
 * certifying key next of machine m over SHA-256(new csr). */
static void renewal_build(struct machine *m, const struct fleet_buf *leaf, unsigned gen,
			  unsigned next, struct machine *ak_of, struct renewal *w)
{
	uint8_t csr_sha[32];
	memset(w, 0, sizeof(*w));
	fb_init(&w->csr);
	fb_init(&w->ak);
	fb_init(&w->key);
	fb_init(&w->attest);
	fb_init(&w->sig);
	tpm_csr(m, next, &w->csr);
	sha256(&w->csr, csr_sha);
	set_bytes(&w->rq.cert, leaf);
	set_bytes(&w->rq.csr, &w->csr);
	renew_sig(m, gen, &w->csr, leaf, w->rq.sig);
	marshal_public(&ak_of->ak, &w->ak);
	TPM2B_PUBLIC k = node_key(m, next);
	marshal_public(&k, &w->key);
	certify(ak_of, next, csr_sha, &w->attest, &w->sig);
	w->rq.has_key_attestation = true;
	set_bytes(&w->rq.key_attestation.ak_public, &w->ak);
	set_bytes(&w->rq.key_attestation.cert.key_public, &w->key);
	set_bytes(&w->rq.key_attestation.cert.certify_info, &w->attest);
	set_bytes(&w->rq.key_attestation.cert.signature, &w->sig);
}

static struct answer renew_with(struct fleet_join *j, const struct renewal *w)
{
	struct fleet_buf body, out;
	struct answer a;
	const char *reason = NULL;
	memset(&a, 0, sizeof(a));
	fb_init(&body);
	fb_init(&out);
	assert_int_equal(fleet_renew_request_encode(&w->rq, &body), FLEET_OK);
	a.status = fleet_join_renew(j, "127.0.0.1", body.data, body.len, &out, &reason);
	if (a.status == 200 || a.status == 403)
		decode_answer(&out, &a);
	fb_free(&body);
	fb_free(&out);
	return a;
}

static void refused_renewal(const struct renewal *w, const char *reason)
{
	char label[96];
	snprintf(label, sizeof(label), "renew:%s", reason);
	int64_t n = refused(label);
	struct answer a = renew_with(S.j, w);
	assert_refused(&a, label, n);
}

static void test_renewal_keeps_the_statement(void **state)
{
	(void)state;
	struct renewal w;
	char uris[600], want[FLEET_TPM_AK_URI_MAX + 1];
	join_a_fresh(10);
	renewal_build(&A, &leaf_a, 10, 11, &A, &w);
	struct answer a = renew_with(S.j, &w);
	assert_int_equal(a.status, 200);
	assert_int_equal(a.r.status, FLEET_JOIN_JOINED);
	uris_of(&a, uris, sizeof(uris));
	ak_uri(&A, want, sizeof(want));
	assert_non_null(strstr(uris, want)); /* carried forward */
	/* The next renewal needs the AK again: the new leaf has the statement. */
	struct fleet_buf next;
	fb_init(&next);
	fb_put(&next, a.r.chain[0].data, a.r.chain[0].len);
	struct renewal w2;
	renewal_build(&A, &next, 11, 12, &A, &w2);
	w2.rq.has_key_attestation = false;
	refused_renewal(&w2, "key-attestation-missing");
	renewal_free(&w2);
	fb_free(&next);
	answer_free(&a);
	renewal_free(&w);
}

static void test_key_attestation_missing(void **state)
{
	(void)state;
	struct renewal w;
	join_a_fresh(13);
	renewal_build(&A, &leaf_a, 13, 14, &A, &w);
	w.rq.has_key_attestation = false;
	refused_renewal(&w, "key-attestation-missing");
	renewal_free(&w);
}

static void test_key_attestation_ak(void **state)
{
	(void)state;
	struct renewal w;
	join_a_fresh(15);
	/* B's AK certifies B's key: a good certification by another TPM. */
	renewal_build(&A, &leaf_a, 15, 16, &B, &w);
	refused_renewal(&w, "key-attestation-ak");
	renewal_free(&w);
}

static void test_renewal_node_key_checks(void **state)
{
	(void)state;
	struct renewal w;
	uint8_t other[32];
	join_a_fresh(17);
	/* a certification for another CSR: node-key-nonce */
	renewal_build(&A, &leaf_a, 17, 18, &A, &w);
	memset(other, 0x5a, sizeof(other));
	certify(&A, 18, other, &w.attest, &w.sig);
	set_bytes(&w.rq.key_attestation.cert.certify_info, &w.attest);
	set_bytes(&w.rq.key_attestation.cert.signature, &w.sig);
	refused_renewal(&w, "node-key-nonce");
	renewal_free(&w);
	/* a certified key that is not the CSR's: node-key-not-csr */
	renewal_build(&A, &leaf_a, 17, 18, &A, &w);
	uint8_t csr_sha[32];
	sha256(&w.csr, csr_sha);
	certify(&A, 19, csr_sha, &w.attest, &w.sig);
	TPM2B_PUBLIC k19 = node_key(&A, 19);
	marshal_public(&k19, &w.key);
	set_bytes(&w.rq.key_attestation.cert.key_public, &w.key);
	set_bytes(&w.rq.key_attestation.cert.certify_info, &w.attest);
	set_bytes(&w.rq.key_attestation.cert.signature, &w.sig);
	refused_renewal(&w, "node-key-not-csr");
	renewal_free(&w);
	/* a bad signature: node-key-signature */
	renewal_build(&A, &leaf_a, 17, 18, &A, &w);
	w.sig.data[w.sig.len - 1] ^= 1;
	refused_renewal(&w, "node-key-signature");
	renewal_free(&w);
	/* the name of another key: node-key-name */
	renewal_build(&A, &leaf_a, 17, 18, &A, &w);
	marshal_public(&k19, &w.key);
	set_bytes(&w.rq.key_attestation.cert.key_public, &w.key);
	refused_renewal(&w, "node-key-name");
	renewal_free(&w);
	/* a public area that does not parse: node-key-malformed */
	renewal_build(&A, &leaf_a, 17, 18, &A, &w);
	w.rq.key_attestation.cert.key_public.len = 5;
	refused_renewal(&w, "node-key-malformed");
	renewal_free(&w);
}

struct cert_add_arg {
	const uint8_t *der;
	size_t len;
};

static fleet_err cert_add_fn(struct fleet_store_tx *tx, void *arg)
{
	struct cert_add_arg *a = arg;
	int64_t now;
	fleet_err e = fleet_store_tx_now(tx, &now);
	return e ? e : fleet_store_tx_node_cert_add(tx, joined_a, a->der, a->len, now);
}

/* A leaf with a statement fleetd wrote for no TPM join: issued here into
 * the node's rows, as a store with another writer's leaf would hold it. */
static void leaf_with_statement(const char *statement, unsigned gen, struct fleet_buf *leaf)
{
	struct fleet_node_cert_request cr;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr;
	X509 *x = NULL;
	fb_init(&csr);
	tpm_csr(&A, gen, &csr);
	memset(&cr, 0, sizeof(cr));
	cr.csr_der = csr.data;
	cr.csr_len = csr.len;
	cr.trust_domain = "fleet.test";
	cr.node_id = joined_a;
	cr.role = "node";
	cr.statements[0] = statement;
	cr.not_before = time(NULL);
	cr.validity_seconds = 3600;
	if (fleet_ca_issue_node(S.ca, &cr, &x, &ec))
		fail_msg("issue: %s", ec.detail);
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);
	fb_reset(leaf);
	fb_put(leaf, der, (size_t)n);
	struct cert_add_arg ca = {.der = der, .len = (size_t)n};
	assert_int_equal(fleet_store_join_tx(S.st, cert_add_fn, &ca), FLEET_OK);
	OPENSSL_free(der);
	X509_free(x);
	fb_free(&csr);
}

static void test_tpm_ak_uri_and_unknown_statements(void **state)
{
	(void)state;
	struct fleet_buf leaf;
	struct renewal w;
	fb_init(&leaf);
	join_a_fresh(20); /* a fresh generation: room under the renewal cap */
	leaf_with_statement("urn:bc:tpm-ak:000bzz", 20, &leaf);
	renewal_build(&A, &leaf, 20, 21, &A, &w);
	refused_renewal(&w, "tpm-ak-uri");
	renewal_free(&w);
	leaf_with_statement("urn:bc:something-else:1", 20, &leaf);
	renewal_build(&A, &leaf, 20, 21, &A, &w);
	refused_renewal(&w, "key-statement-unknown");
	renewal_free(&w);
	fb_free(&leaf);
}

static void test_key_statement_unsupported(void **state)
{
	(void)state;
	struct renewal w;
	join_a_fresh(22);
	/* A server without the tpm attestor cannot prove the statement. */
	struct fleet_join *plain = service(&S, NULL);
	renewal_build(&A, &leaf_a, 22, 23, &A, &w);
	int64_t n = refused_in(other_metrics, "renew:key-statement-unsupported");
	struct answer a = renew_with(plain, &w);
	assert_int_equal(a.status, 403);
	assert_int_equal(a.r.status, FLEET_JOIN_DENIED);
	assert_int_equal(refused_in(other_metrics, "renew:key-statement-unsupported"), n + 1);
	answer_free(&a);
	service_free(plain);
	renewal_free(&w);
}

/* An ES256 (r||s) by the TPM node key gen over msg. */
static void tpm_es256(struct machine *m, unsigned gen, const struct fleet_buf *msg, uint8_t sig[64])
{
	renew_sig_raw(m, gen, msg, sig);
}

static struct answer join_attestor_as(const char *attestor, const struct fleet_buf *csr,
				      const struct fleet_buf *att)
{
	struct fleet_join_request rq;
	struct fleet_buf body, out;
	struct answer a;
	const char *reason = NULL;
	memset(&rq, 0, sizeof(rq));
	memset(&a, 0, sizeof(a));
	fb_init(&body);
	fb_init(&out);
	snprintf(rq.attestor, sizeof(rq.attestor), "%s", attestor);
	rq.has_attestation = true;
	rq.attestation.data = att->data;
	rq.attestation.len = att->len;
	rq.csr.data = csr->data;
	rq.csr.len = csr->len;
	rq.role = FLEET_JOIN_ROLE_NODE;
	assert_int_equal(fleet_join_request_encode(&rq, &body), FLEET_OK);
	a.status = fleet_join_handle(S.j, "127.0.0.1", body.data, body.len, &out, &reason);
	if (a.status == 200 || a.status == 403)
		decode_answer(&out, &a);
	fb_free(&body);
	fb_free(&out);
	return a;
}

/* ---- the adversarial review's attacks, each refused ----------------------------- */

/* A P-256 key in a file (outside any TPM) and its CSR. */
static EVP_PKEY *file_key_csr(struct fleet_buf *csr)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509_REQ *r = X509_REQ_new();
	unsigned char *der = NULL;
	assert_non_null(k);
	assert_int_equal(X509_REQ_set_version(r, 0), 1);
	assert_int_equal(X509_REQ_set_pubkey(r, k), 1);
	assert_true(X509_REQ_sign(r, k, EVP_sha256()) > 0);
	int n = i2d_X509_REQ(r, &der);
	assert_true(n > 0);
	fb_reset(csr);
	fb_put(csr, der, (size_t)n);
	OPENSSL_free(der);
	X509_REQ_free(r);
	return k;
}

/* x509pop may not downgrade a TPM-held identity: the current leaf (with its
 * urn:bc:tpm-ak: statement) and one signature by its TPM key, for a CSR of
 * a key in a file, would give a certificate naming no AK that renews with
 * the file key for good. Refused x509pop-key-statement; nothing changes. */
static void test_x509pop_key_statement(void **state)
{
	(void)state;
	struct fleet_buf csr, att, msg;
	struct fleet_x509pop_evidence xe;
	struct fleet_store_node before, after;
	uint8_t csr_sha[32];
	char node[FLEET_STORE_NODE_ID_MAX + 1];
	fb_init(&csr);
	fb_init(&att);
	fb_init(&msg);
	join_a_fresh(40);
	node_of_ek(A.ek_hash, node);
	assert_int_equal(fleet_store_node_get(S.st, node, &before), FLEET_OK);
	EVP_PKEY *fk = file_key_csr(&csr);
	sha256(&csr, csr_sha);
	memset(&xe, 0, sizeof(xe));
	snprintf(xe.node_id, sizeof(xe.node_id), "%s", node);
	xe.n_chain = 1;
	xe.chain[0].data = leaf_a.data;
	xe.chain[0].len = leaf_a.len;
	xe.client_time_ms = (int64_t)time(NULL) * 1000;
	assert_int_equal(fleet_x509pop_signing_input(csr_sha, node, xe.client_time_ms, &msg),
			 FLEET_OK);
	tpm_es256(&A, 40, &msg, xe.sig); /* the one use of the TPM key it needs */
	assert_int_equal(fleet_x509pop_encode(&xe, &att), FLEET_OK);
	int64_t n = refused("x509pop:x509pop-key-statement");
	struct answer a = join_attestor_as("x509pop", &csr, &att);
	assert_refused(&a, "x509pop:x509pop-key-statement", n);
	assert_int_equal(fleet_store_node_get(S.st, node, &after), FLEET_OK);
	assert_int_equal(after.generation, before.generation);
	EVP_PKEY_free(fk);
	fb_free(&csr);
	fb_free(&att);
	fb_free(&msg);
}

/* A round 2 admits one join: sent again within the state's life (captured,
 * or a retry after a lost answer) it would reclaim the node once more and
 * revoke the certificate the first one issued. */
static void test_challenge_replayed(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	struct fleet_store_node n1, n2;
	fb_init(&csr);
	challenged(&A, 42, &csr, &r);
	struct answer a1 = send_round2(&r, &csr);
	assert_int_equal(a1.r.status, FLEET_JOIN_JOINED);
	assert_int_equal(fleet_store_node_get(S.st, a1.r.node_id, &n1), FLEET_OK);
	refused_round2(&r, &csr, "challenge-replayed");
	assert_int_equal(fleet_store_node_get(S.st, a1.r.node_id, &n2), FLEET_OK);
	assert_int_equal(n2.generation, n1.generation);
	answer_free(&a1);
	round2_free(&r);
	fb_free(&csr);
}

/* A resolve list naming a pool the store does not hold is the operator's to
 * fix: refused pool-unknown (said so), not a 503 "corrupt" on every retry. */
static void test_pool_unknown(void **state)
{
	(void)state;
	struct fleet_buf csr;
	struct round2 r = {0};
	char line[256], node[FLEET_STORE_NODE_ID_MAX + 1];
	fb_init(&csr);
	node_of_ek(A.ek_hash, node);
	assert_string_equal(node, ""); /* runs before A first joins */
	snprintf(line, sizeof(line), "%s pool=pool-typo\n", A.ek_hash);
	resolve_set(&S, line);
	S.tpm.resolve = &S.resolve;
	server_restart(&S);
	challenged(&A, 50, &csr, &r);
	refused_round2(&r, &csr, "pool-unknown");
	node_of_ek(A.ek_hash, node);
	assert_string_equal(node, "");
	round2_free(&r);
	fb_free(&csr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_round1_writes_nothing_and_challenges, test_setup),
		cmocka_unit_test_setup(test_tpm_malformed, test_setup),
		cmocka_unit_test_setup(test_tpm_role, test_setup),
		cmocka_unit_test_setup(test_tpm_ek_unsupported, test_setup),
		cmocka_unit_test_setup(test_ek_certificate_missing, test_setup),
		cmocka_unit_test_setup(test_ek_certificate_mismatch, test_setup),
		cmocka_unit_test_setup(test_ek_certificate_chain, test_setup),
		cmocka_unit_test_setup(test_tpm_ak_attributes, test_setup),
		cmocka_unit_test_setup(test_challenge_malformed, test_setup),
		cmocka_unit_test_setup(test_challenge_tag, test_setup),
		cmocka_unit_test_setup(test_challenge_for_another_csr, test_setup),
		cmocka_unit_test_setup(test_challenge_expired, test_setup),
		cmocka_unit_test_setup(test_tpm_credential, test_setup),
		cmocka_unit_test_setup(test_tpm_quote_malformed, test_setup),
		cmocka_unit_test_setup(test_tpm_quote_signature, test_setup),
		cmocka_unit_test_setup(test_tpm_quote_nonce, test_setup),
		cmocka_unit_test_setup(test_tpm_quote_selection, test_setup),
		cmocka_unit_test_setup(test_tpm_pcr_values, test_setup),
		cmocka_unit_test_setup(test_pcr_policy, test_setup),
		cmocka_unit_test_setup(test_node_key_malformed, test_setup),
		cmocka_unit_test_setup(test_node_key_signature, test_setup),
		cmocka_unit_test_setup(test_node_key_nonce, test_setup),
		cmocka_unit_test_setup(test_node_key_name, test_setup),
		cmocka_unit_test_setup(test_node_key_attributes, test_setup),
		cmocka_unit_test_setup(test_node_key_not_csr, test_setup),
		cmocka_unit_test_setup(test_node_key_not_certified, test_setup),
		cmocka_unit_test_setup(test_tpm_unknown_ek, test_setup),
		cmocka_unit_test_setup(test_pool_unknown, test_setup),
		cmocka_unit_test_setup(test_join_certified_carries_the_ak, test_setup),
		cmocka_unit_test_setup(test_reinstall_reclaims_the_same_node, test_setup),
		cmocka_unit_test_setup(test_bound_elsewhere, test_setup),
		cmocka_unit_test_setup(test_any_admits_uncertified_without_a_claim, test_setup),
		cmocka_unit_test_setup(test_enrollment_pending_denied_approved, test_setup),
		cmocka_unit_test_setup(test_another_replica_finishes, test_setup),
		cmocka_unit_test_setup(test_node_key_statement, test_setup),
		cmocka_unit_test_setup(test_renewal_keeps_the_statement, test_setup),
		cmocka_unit_test_setup(test_key_attestation_missing, test_setup),
		cmocka_unit_test_setup(test_key_attestation_ak, test_setup),
		cmocka_unit_test_setup(test_renewal_node_key_checks, test_setup),
		cmocka_unit_test_setup(test_tpm_ak_uri_and_unknown_statements, test_setup),
		cmocka_unit_test_setup(test_key_statement_unsupported, test_setup),
		cmocka_unit_test_setup(test_x509pop_key_statement, test_setup),
		cmocka_unit_test_setup(test_challenge_replayed, test_setup),
	};
	int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	fb_free(&leaf_a);
	return rc;
}
