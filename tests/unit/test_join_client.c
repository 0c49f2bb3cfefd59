/*
 * test_join_client.c: fleet-join's own code (tink-attest/join_client.h,
 * FJ1..FJ8) without a server: a CA made with fleet_ca_init signs the
 * answers and issues the certificates, and a transport of the test's own
 * plays the join service (decoding what the client sent, answering
 * pending, joined, denied or a challenge), on a clock of its own. The
 * HTTPS end-to-end runs against fleetd are another test's.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "lib/join_evidence.h"
#include "lib/join_token.h"
#include "lib/join_wire.h"
#include "lib/token_seal.h"
#include "tink-attest/join_client.h"

#define TD "fleet.example"

struct fx {
	char *base;
	struct fleet_ca *ca, *other; /* the pinned CA, and one nobody pinned */
	struct fj_pins pins;
};

static struct fleet_ca *make_ca(const char *base, const char *name)
{
	struct fleet_errctx ec = {0};
	struct fleet_ca *ca = NULL;
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/%s", base, name);
	if (fleet_ca_init(dir, name, 30, &ec) != FLEET_OK || fleet_ca_load(dir, &ca, &ec) != FLEET_OK)
		fail_msg("ca %s: %s", name, ec.detail);
	return ca;
}

static int setup(void **state)
{
	static struct fx f;
	struct fleet_buf pem;
	struct fleet_errctx ec = {0};
	char path[700];
	memset(&f, 0, sizeof(f));
	f.base = make_temp_dir("join-client");
	assert_non_null(f.base);
	f.ca = make_ca(f.base, "ca");
	f.other = make_ca(f.base, "other");
	/* the pins as fleet-join reads them: --ca's PEM */
	snprintf(path, sizeof(path), "%s/ca/ca.crt", f.base);
	fb_init(&pem);
	read_file_or_fail(path, &pem);
	if (fj_pins_from_pem(pem.data, pem.len, &f.pins, &ec) != FLEET_OK)
		fail_msg("pins: %s", ec.detail);
	assert_int_equal(f.pins.n, 1);
	fb_free(&pem);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fj_pins_free(&f->pins);
	fleet_ca_free(f->ca);
	fleet_ca_free(f->other);
	rm_rf(f->base);
	free(f->base);
	return 0;
}

/* ---- the server's side -------------------------------------------------- */

/* A node certificate for the CSR's key (the join service's issuing). */
static X509 *issue(const struct fleet_ca *ca, const uint8_t *csr, size_t len, const char *node_id,
		   const char *role)
{
	struct fleet_node_cert_request r = {
		.csr_der = csr, .csr_len = len, .trust_domain = TD, .node_id = node_id,
		.role = role, .validity_seconds = 3600,
	};
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	if (fleet_ca_issue_node(ca, &r, &x, &ec) != FLEET_OK)
		fail_msg("issue: %s", ec.detail);
	return x;
}

static struct fleet_wire_bytes der_of(X509 *x)
{
	unsigned char *d = NULL;
	int n = i2d_X509(x, &d);
	assert_true(n > 0);
	struct fleet_wire_bytes b = {malloc((size_t)n), (size_t)n};
	assert_non_null(b.data);
	memcpy(b.data, d, (size_t)n);
	OPENSSL_free(d);
	return b;
}

/* body -> sign (by signer) -> envelope naming kid_of's key. */
static void wrap(const struct fleet_ca *signer, const struct fleet_ca *kid_of, const uint8_t *body,
		 size_t len, struct fleet_buf *wire)
{
	struct fleet_join_envelope env = {0};
	struct fleet_errctx ec = {0};
	struct fleet_buf sig;
	fb_init(&sig);
	assert_int_equal(fleet_ca_sign(signer, body, len, &sig, &ec), FLEET_OK);
	env.body = (struct fleet_wire_bytes){(uint8_t *)body, len};
	env.sig = (struct fleet_wire_bytes){sig.data, sig.len};
	assert_int_equal(fleet_join_kid(fleet_ca_cert(kid_of), env.kid), FLEET_OK);
	fb_reset(wire);
	assert_int_equal(fleet_join_envelope_encode(&env, wire), FLEET_OK);
	fb_free(&sig);
}

static void serve(const struct fleet_ca *ca, const struct fleet_join_response *r,
		  struct fleet_buf *wire)
{
	struct fleet_buf body;
	fb_init(&body);
	assert_int_equal(fleet_join_body_encode(r, &body), FLEET_OK);
	wrap(ca, ca, body.data, body.len, wire);
	fb_free(&body);
}

/* A joined body for csr: chain = the leaf (issued by ca for node_id),
 * then ca's certificate. */
static void joined_body(const struct fleet_ca *issuer, const uint8_t *csr, size_t len,
			const char *node_id, struct fleet_join_response *r)
{
	struct fleet_wire_bytes c = {(uint8_t *)csr, len};
	memset(r, 0, sizeof(*r));
	r->status = FLEET_JOIN_JOINED;
	assert_int_equal(fleet_join_csr_sha256(&c, r->csr_sha256), FLEET_OK);
	snprintf(r->node_id, sizeof(r->node_id), "%s", node_id);
	X509 *leaf = issue(issuer, csr, len, node_id, "node");
	r->n_chain = 2;
	r->chain[0] = der_of(leaf);
	r->chain[1] = der_of(fleet_ca_cert(issuer));
	X509_free(leaf);
}

/* ---- FJ1 ---------------------------------------------------------------- */

static void test_key_csr(void **state)
{
	struct fx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr, csr2;
	EVP_PKEY *k = NULL, *k2 = NULL;
	uint8_t h[32];
	char cn[64], group[32];
	size_t glen = 0;
	fb_init(&csr);
	fb_init(&csr2);
	assert_int_equal(fj_key_csr(&k, &csr, &ec), FLEET_OK);
	assert_int_equal(fj_key_csr(&k2, &csr2, &ec), FLEET_OK);
	/* a fresh P-256 key each time */
	assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_group_name(k, group, sizeof(group), &glen), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_not_equal(EVP_PKEY_eq(k, k2), 1);
	/* PKCS#10 DER, CN=fleet-join, ecdsa-with-SHA256, self-signed by the key */
	const unsigned char *p = csr.data;
	X509_REQ *req = d2i_X509_REQ(NULL, &p, (long)csr.len);
	assert_non_null(req);
	assert_ptr_equal(p, csr.data + csr.len);
	assert_int_equal(X509_NAME_get_text_by_NID(X509_REQ_get_subject_name(req), NID_commonName,
						   cn, sizeof(cn)),
			 (int)strlen(FJ_CSR_CN));
	assert_string_equal(cn, FJ_CSR_CN);
	assert_int_equal(X509_REQ_get_signature_nid(req), NID_ecdsa_with_SHA256);
	assert_int_equal(X509_REQ_verify(req, k), 1);
	assert_int_equal(EVP_PKEY_eq(X509_REQ_get0_pubkey(req), k), 1);
	X509_REQ_free(req);
	/* what the server's NC1-NC3 take, and issues for */
	assert_int_equal(fleet_csr_spki_sha256(csr.data, csr.len, h, &ec), FLEET_OK);
	X509 *x = issue(f->ca, csr.data, csr.len, "node_01k", "node");
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), k), 1);
	X509_free(x);
	assert_int_equal(ERR_peek_error(), 0);
	EVP_PKEY_free(k);
	EVP_PKEY_free(k2);
	fb_free(&csr);
	fb_free(&csr2);
}

/* --ca with more than one certificate, and what is not one */
static void test_pins(void **state)
{
	struct fx *f = *state;
	struct fleet_errctx ec = {0};
	struct fj_pins p;
	BIO *b = BIO_new(BIO_s_mem());
	char *pem;
	assert_int_equal(PEM_write_bio_X509(b, fleet_ca_cert(f->ca)), 1);
	assert_int_equal(PEM_write_bio_X509(b, fleet_ca_cert(f->other)), 1);
	long n = BIO_get_mem_data(b, &pem);
	assert_int_equal(fj_pins_from_pem((uint8_t *)pem, (size_t)n, &p, &ec), FLEET_OK);
	assert_int_equal(p.n, 2);
	fj_pins_free(&p);
	/* a broken second block is no pin set */
	char *cut = strndup(pem, (size_t)n - 40);
	assert_int_equal(fj_pins_from_pem((uint8_t *)cut, strlen(cut), &p, &ec), FLEET_E_MALFORMED);
	assert_int_equal(p.n, 0);
	free(cut);
	BIO_free(b);
	assert_int_equal(fj_pins_from_pem((const uint8_t *)"no pem here", 11, &p, &ec),
			 FLEET_E_MALFORMED);
	assert_int_equal(fj_pins_from_pem(NULL, 0, &p, &ec), FLEET_E_MALFORMED);
	assert_int_equal(ERR_peek_error(), 0);
}

/* ---- FJ2, FJ3 ------------------------------------------------------------ */

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* wire refused with reason; *out zeroed; OpenSSL's queue empty. */
static void answer_refused(const struct fx *f, const struct fleet_buf *wire,
			   const struct fj_expect *x, const char *reason)
{
	struct fleet_join_response out;
	struct fleet_errctx ec = {0};
	X509 *signer = (X509 *)1;
	memset(&out, 0xa5, sizeof(out));
	fleet_err e = fj_answer_verify(&f->pins, wire->data, wire->len, x, &out, &signer, &ec);
	if (e == FLEET_OK)
		fail_msg("accepted; want %s", reason);
	if (!ec.reason || strcmp(ec.reason, reason) != 0)
		fail_msg("refused for %s (%s), want %s", ec.reason ? ec.reason : "(none)", ec.detail,
			 reason);
	assert_true(all_zero(&out, sizeof(out)));
	assert_null(signer);
	assert_int_equal(ERR_peek_error(), 0);
}

static void answer_accepted(const struct fx *f, const struct fleet_buf *wire,
			    const struct fj_expect *x, enum fleet_join_status want)
{
	struct fleet_join_response out;
	struct fleet_errctx ec = {0};
	X509 *signer = NULL;
	if (fj_answer_verify(&f->pins, wire->data, wire->len, x, &out, &signer, &ec) != FLEET_OK)
		fail_msg("refused: %s (%s)", ec.detail, ec.reason ? ec.reason : "");
	assert_int_equal(out.status, want);
	assert_ptr_equal(signer, f->pins.certs[0]);
	fleet_join_response_free(&out);
	assert_int_equal(ERR_peek_error(), 0);
}

static void test_answer_refusals(void **state)
{
	struct fx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr, csr2, wire, body;
	EVP_PKEY *k = NULL, *k2 = NULL;
	struct fleet_join_response r;
	fb_init(&csr);
	fb_init(&csr2);
	fb_init(&wire);
	fb_init(&body);
	assert_int_equal(fj_key_csr(&k, &csr, &ec), FLEET_OK);
	assert_int_equal(fj_key_csr(&k2, &csr2, &ec), FLEET_OK);
	struct fleet_wire_bytes sent = {csr.data, csr.len};
	struct fj_expect x = {.csr = &sent, .key = k, .attestor = ""};

	/* the good one */
	joined_body(f->ca, csr.data, csr.len, "node_01k", &r);
	serve(f->ca, &r, &wire);
	answer_accepted(f, &wire, &x, FLEET_JOIN_JOINED);
	/* a node's certificate for a request that asked to be a site (FJ3) */
	{
		struct fj_expect xs = x;
		xs.role = "site";
		answer_refused(f, &wire, &xs, FJ_REASON_ROLE);
		xs.role = "node";
		answer_accepted(f, &wire, &xs, FLEET_JOIN_JOINED);
	}
	/* (a) not an envelope */
	{
		struct fleet_buf junk;
		fb_init(&junk);
		fb_put(&junk, "{\"v\":1}", 7);
		answer_refused(f, &junk, &x, FJ_REASON_ENVELOPE);
		fb_reset(&junk);
		fb_put(&junk, "<html>502</html>", 16);
		answer_refused(f, &junk, &x, FJ_REASON_ENVELOPE);
		fb_free(&junk);
	}
	/* (b) another kid: the other CA's key, signed by it or by ours */
	fb_reset(&body);
	assert_int_equal(fleet_join_body_encode(&r, &body), FLEET_OK);
	wrap(f->other, f->other, body.data, body.len, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_KID);
	wrap(f->ca, f->other, body.data, body.len, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_KID);
	/* a bad signature: our kid over another key's signature, and over
	 * one changed byte of the body */
	wrap(f->other, f->ca, body.data, body.len, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_SIGNATURE);
	{
		struct fleet_join_envelope env;
		serve(f->ca, &r, &wire);
		assert_int_equal(fleet_join_envelope_decode(wire.data, wire.len, &env, &ec), FLEET_OK);
		uint8_t *at = memmem(env.body.data, env.body.len, "node_01k", 8);
		assert_non_null(at);
		at[5] = '2';
		fb_reset(&wire);
		assert_int_equal(fleet_join_envelope_encode(&env, &wire), FLEET_OK);
		answer_refused(f, &wire, &x, FJ_REASON_SIGNATURE);
		fleet_join_envelope_free(&env);
	}
	/* (c) signed, but no body */
	wrap(f->ca, f->ca, (const uint8_t *)"{\"v\":1,\"status\":\"won\"}", 23, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_BODY);
	/* (d) a body for another CSR */
	fleet_join_response_free(&r);
	joined_body(f->ca, csr2.data, csr2.len, "node_01k", &r);
	serve(f->ca, &r, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_CSR);
	/* FJ3: a joined chain whose leaf is for another key (csr2's), though
	 * the body names our CSR */
	{
		struct fleet_wire_bytes mine = {csr.data, csr.len};
		assert_int_equal(fleet_join_csr_sha256(&mine, r.csr_sha256), FLEET_OK);
		serve(f->ca, &r, &wire);
		answer_refused(f, &wire, &x, FJ_REASON_LEAF_KEY);
	}
	fleet_join_response_free(&r);
	/* a leaf the other CA issued, in an answer our CA signed */
	joined_body(f->other, csr.data, csr.len, "node_01k", &r);
	serve(f->ca, &r, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_LEAF_ISSUER);
	fleet_join_response_free(&r);
	/* a body naming another node than its certificate */
	joined_body(f->ca, csr.data, csr.len, "node_01k", &r);
	strcpy(r.node_id, "node_02k");
	serve(f->ca, &r, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_NODE_ID);
	strcpy(r.node_id, "node_01k");
	/* a chain entry that is no certificate, or one with bytes after it */
	free(r.chain[1].data);
	r.chain[1].data = (uint8_t *)strdup("not DER");
	r.chain[1].len = 7;
	serve(f->ca, &r, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_CHAIN);
	{
		uint8_t *grown = realloc(r.chain[0].data, r.chain[0].len + 1);
		assert_non_null(grown);
		grown[r.chain[0].len] = 0;
		r.chain[0].data = grown;
		r.chain[0].len++;
		serve(f->ca, &r, &wire);
		answer_refused(f, &wire, &x, FJ_REASON_CHAIN);
	}
	fleet_join_response_free(&r);

	/* the deferrals: bound to the CSR too; a challenge to the request's
	 * attestor; denied carries nothing to check */
	memset(&r, 0, sizeof(r));
	r.status = FLEET_JOIN_PENDING;
	assert_int_equal(fleet_join_csr_sha256(&sent, r.csr_sha256), FLEET_OK);
	strcpy(r.deferral.request_id, "jr_1");
	r.deferral.retry_after_seconds = 5;
	serve(f->ca, &r, &wire);
	answer_accepted(f, &wire, &x, FLEET_JOIN_PENDING);
	{
		struct fleet_wire_bytes other = {csr2.data, csr2.len};
		struct fj_expect x2 = {.csr = &other, .key = k2, .attestor = ""};
		answer_refused(f, &wire, &x2, FJ_REASON_CSR);
	}
	memset(&r.deferral, 0, sizeof(r.deferral));
	r.status = FLEET_JOIN_CHALLENGE;
	strcpy(r.deferral.attestor, "tpm");
	r.deferral.payload = (struct fleet_wire_bytes){(uint8_t *)"abc", 3};
	r.deferral.not_after = 1790000000;
	serve(f->ca, &r, &wire);
	answer_refused(f, &wire, &x, FJ_REASON_ATTESTOR);
	{
		struct fj_expect xt = {.csr = &sent, .key = k, .attestor = "tpm"};
		answer_accepted(f, &wire, &xt, FLEET_JOIN_CHALLENGE);
	}
	memset(&r, 0, sizeof(r));
	r.status = FLEET_JOIN_DENIED;
	serve(f->ca, &r, &wire);
	answer_accepted(f, &wire, &x, FLEET_JOIN_DENIED);

	EVP_PKEY_free(k);
	EVP_PKEY_free(k2);
	fb_free(&csr);
	fb_free(&csr2);
	fb_free(&wire);
	fb_free(&body);
}

/* ---- FJ4 ---------------------------------------------------------------- */

static void write_file(const char *path, const void *p, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static char *b64(const uint8_t *p, size_t n, const char *tail)
{
	struct fleet_buf t;
	fb_init(&t);
	assert_int_equal(fleet_b64url_encode(p, n, &t), FLEET_OK);
	size_t cap = t.len + strlen(tail) + 1;
	char *s = malloc(cap);
	assert_non_null(s);
	snprintf(s, cap, "%.*s%s", (int)t.len, (const char *)t.data, tail);
	fb_free(&t);
	return s;
}

static void token_refused(const char *text, const uint8_t *spki, size_t spki_len, fleet_err want,
			  const char *reason)
{
	struct fleet_buf sealed;
	struct fleet_errctx ec = {0};
	fb_init_secret(&sealed, FLEET_SEAL_MAX_SEALED);
	fb_put(&sealed, "x", 1);
	assert_int_equal(fj_token_from_text((const uint8_t *)text, strlen(text), spki, spki_len,
					    &sealed, &ec),
			 want);
	assert_string_equal(ec.reason, reason);
	assert_int_equal(sealed.len, 0);
	/* the detail never repeats the token's text */
	if (strlen(text) >= 8) {
		char head[9];
		memcpy(head, text, 8);
		head[8] = '\0';
		assert_null(strstr(ec.detail, head));
	}
	fb_free(&sealed);
}

static void test_token_read(void **state)
{
	struct fx *f = *state;
	struct fleet_seal_key *sk = NULL, *sk2 = NULL;
	struct fleet_buf spki, sealed, out, pt;
	struct fleet_errctx ec = {0};
	struct fleet_join_token t;
	uint8_t tok[FLEET_JOIN_TOKEN_LEN];
	char path[700], pub[700];
	fb_init(&spki);
	fb_init_secret(&sealed, FLEET_SEAL_MAX_SEALED);
	fb_init_secret(&out, FLEET_SEAL_MAX_SEALED);
	fb_init_secret(&pt, FLEET_SEAL_MAX_PLAINTEXT);
	assert_int_equal(fleet_seal_key_generate(&sk), FLEET_OK);
	assert_int_equal(fleet_seal_key_generate(&sk2), FLEET_OK);
	assert_int_equal(fleet_seal_key_public_spki(sk, &spki), FLEET_OK);
	assert_int_equal(fleet_join_token_new(&t), FLEET_OK);
	assert_int_equal(fleet_join_token_encode(&t, tok), FLEET_OK);

	/* sealed (as `fleetctl token create` prints it): sent as it is */
	assert_int_equal(fleet_seal(spki.data, spki.len, FLEET_JOIN_TOKEN_PURPOSE, tok, sizeof(tok),
				    &sealed),
			 FLEET_OK);
	char *text = b64(sealed.data, sealed.len, "\n");
	assert_int_equal(fj_token_from_text((const uint8_t *)text, strlen(text), NULL, 0, &out, &ec),
			 FLEET_OK);
	assert_int_equal(out.len, sealed.len);
	assert_memory_equal(out.data, sealed.data, sealed.len);
	free(text);

	/* unsealed: sealed here, and it opens with the service's key only */
	text = b64(tok, sizeof(tok), " \r\n\t\n");
	assert_int_equal(fj_token_from_text((const uint8_t *)text, strlen(text), spki.data, spki.len,
					    &out, &ec),
			 FLEET_OK);
	assert_int_equal(out.len, FLEET_SEAL_OVERHEAD + FLEET_JOIN_TOKEN_LEN);
	assert_int_equal(fleet_unseal(sk, FLEET_JOIN_TOKEN_PURPOSE, out.data, out.len, &pt, &ec),
			 FLEET_OK);
	assert_int_equal(pt.len, sizeof(tok));
	assert_memory_equal(pt.data, tok, sizeof(tok));
	assert_int_not_equal(fleet_unseal(sk2, FLEET_JOIN_TOKEN_PURPOSE, out.data, out.len, &pt,
					  &ec),
			     FLEET_OK);
	/* without --seal-pub it cannot go */
	token_refused(text, NULL, 0, FLEET_E_INVALID_ARG, FJ_REASON_NO_SEAL_PUB);
	/* to a key that is not a sealing key's SPKI */
	{
		struct fleet_buf so;
		fb_init_secret(&so, FLEET_SEAL_MAX_SEALED);
		assert_int_not_equal(fj_token_from_text((const uint8_t *)text, strlen(text),
							(const uint8_t *)"junk", 4, &so, &ec),
				     FLEET_OK);
		assert_int_equal(so.len, 0);
		fb_free(&so);
	}
	free(text);

	/* garbage */
	token_refused("tok!garbage", spki.data, spki.len, FLEET_E_MALFORMED, FJ_REASON_TOKEN);
	token_refused("", spki.data, spki.len, FLEET_E_MALFORMED, FJ_REASON_TOKEN);
	token_refused(" \n", spki.data, spki.len, FLEET_E_MALFORMED, FJ_REASON_TOKEN);
	{
		uint8_t bad[FLEET_JOIN_TOKEN_LEN];
		memcpy(bad, tok, sizeof(bad));
		text = b64(bad, sizeof(bad) - 1, ""); /* 61 bytes */
		token_refused(text, spki.data, spki.len, FLEET_E_MALFORMED, FJ_REASON_TOKEN);
		free(text);
		bad[0] = 'X'; /* no "fjt1" */
		text = b64(bad, sizeof(bad), "");
		token_refused(text, spki.data, spki.len, FLEET_E_MALFORMED, FJ_REASON_TOKEN);
		free(text);
		text = b64(tok, sizeof(tok), "");
		char *inner = malloc(strlen(text) + 3);
		assert_non_null(inner);
		snprintf(inner, strlen(text) + 3, "%.10s\n%s", text, text + 10); /* a newline inside */
		token_refused(inner, spki.data, spki.len, FLEET_E_MALFORMED, FJ_REASON_TOKEN);
		free(inner);
		free(text);
	}
	/* out must be a wiping buffer */
	{
		struct fleet_buf plain;
		fb_init(&plain);
		assert_int_equal(fj_token_from_text((const uint8_t *)"AAAA", 4, NULL, 0, &plain, &ec),
				 FLEET_E_INVALID_ARG);
		fb_free(&plain);
	}

	/* the files: the token a secret (0600), seal.pub as `fleetctl join
	 * init` writes it (PEM), or DER */
	snprintf(path, sizeof(path), "%s/token", f->base);
	snprintf(pub, sizeof(pub), "%s/seal.pub", f->base);
	text = b64(tok, sizeof(tok), "\n");
	write_file(path, text, strlen(text), 0600);
	{
		const unsigned char *p = spki.data;
		EVP_PKEY *k = d2i_PUBKEY(NULL, &p, (long)spki.len);
		BIO *b = BIO_new(BIO_s_mem());
		char *pem;
		assert_int_equal(PEM_write_bio_PUBKEY(b, k), 1);
		long n = BIO_get_mem_data(b, &pem);
		write_file(pub, pem, (size_t)n, 0644);
		BIO_free(b);
		EVP_PKEY_free(k);
	}
	assert_int_equal(fj_token_read(path, pub, &out, &ec), FLEET_OK);
	assert_int_equal(fleet_unseal(sk, FLEET_JOIN_TOKEN_PURPOSE, out.data, out.len, &pt, &ec),
			 FLEET_OK);
	assert_memory_equal(pt.data, tok, sizeof(tok));
	write_file(pub, spki.data, spki.len, 0644);
	assert_int_equal(fj_token_read(path, pub, &out, &ec), FLEET_OK);
	assert_int_equal(fleet_unseal(sk, FLEET_JOIN_TOKEN_PURPOSE, out.data, out.len, &pt, &ec),
			 FLEET_OK);
	/* a token others may read is refused, as every secret file is */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(fj_token_read(path, pub, &out, &ec), FLEET_E_UNSAFE);
	assert_int_equal(out.len, 0);
	free(text);

	fleet_join_token_wipe(&t);
	fleet_seal_key_free(sk);
	fleet_seal_key_free(sk2);
	fb_free(&spki);
	fb_free(&sealed);
	fb_free(&out);
	fb_free(&pt);
	assert_int_equal(ERR_peek_error(), 0);
}

/* ---- FJ5 ---------------------------------------------------------------- */

static void test_x509pop_build(void **state)
{
	struct fx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf old_csr, csr, ev, input;
	EVP_PKEY *old = NULL, *k = NULL;
	struct fj_pins chain = {0};
	struct fleet_x509pop_evidence m;
	uint8_t h[32];
	fb_init(&old_csr);
	fb_init(&csr);
	fb_init(&ev);
	fb_init(&input);
	/* the previous identity: its key and chain */
	assert_int_equal(fj_key_csr(&old, &old_csr, &ec), FLEET_OK);
	chain.certs[0] = issue(f->ca, old_csr.data, old_csr.len, "node_01k", "node");
	chain.certs[1] = X509_dup(fleet_ca_cert(f->ca));
	chain.n = 2;
	/* the new CSR the proof binds */
	assert_int_equal(fj_key_csr(&k, &csr, &ec), FLEET_OK);
	struct fleet_wire_bytes c = {csr.data, csr.len};
	assert_int_equal(fj_x509pop_build(old, &chain, "node_01k", &c, 1790000000123, &ev, &ec),
			 FLEET_OK);
	assert_int_equal(fleet_x509pop_decode(ev.data, ev.len, &m, &ec), FLEET_OK);
	assert_string_equal(m.node_id, "node_01k");
	assert_int_equal(m.client_time_ms, 1790000000123);
	assert_int_equal(m.n_chain, 2);
	for (size_t i = 0; i < 2; i++) {
		struct fleet_wire_bytes d = der_of(chain.certs[i]);
		assert_int_equal(m.chain[i].len, d.len);
		assert_memory_equal(m.chain[i].data, d.data, d.len);
		free(d.data);
	}
	/* it verifies with the leaf's key, over this CSR, node and time */
	assert_int_equal(EVP_Digest(csr.data, csr.len, h, NULL, EVP_sha256(), NULL), 1);
	assert_int_equal(fleet_x509pop_signing_input(h, "node_01k", 1790000000123, &input), FLEET_OK);
	assert_int_equal(fleet_es256_verify(X509_get0_pubkey(chain.certs[0]), input.data, input.len,
					    m.sig, &ec),
			 FLEET_OK);
	/* and for no other CSR */
	h[0] ^= 1;
	fb_reset(&input);
	assert_int_equal(fleet_x509pop_signing_input(h, "node_01k", 1790000000123, &input), FLEET_OK);
	assert_int_equal(fleet_es256_verify(X509_get0_pubkey(chain.certs[0]), input.data, input.len,
					    m.sig, &ec),
			 FLEET_E_VERIFY);
	fleet_x509pop_free(&m);
	/* refusals: the key not the leaf's; a node id the leaf does not name */
	fb_reset(&ev);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fj_x509pop_build(k, &chain, "node_01k", &c, 1, &ev, &ec),
			 FLEET_E_INVALID_ARG);
	assert_string_equal(ec.reason, FJ_REASON_X509POP_KEY);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fj_x509pop_build(old, &chain, "node_02k", &c, 1, &ev, &ec),
			 FLEET_E_INVALID_ARG);
	assert_string_equal(ec.reason, FJ_REASON_X509POP_NODE_ID);
	assert_int_equal(ev.len, 0);
	/* a node id or a time no evidence carries */
	assert_int_equal(fj_x509pop_build(old, &chain, "Node", &c, 1, &ev, &ec),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fj_x509pop_build(old, &chain, "node_01k", &c, -1, &ev, &ec),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(ERR_peek_error(), 0);
	fj_pins_free(&chain);
	EVP_PKEY_free(old);
	EVP_PKEY_free(k);
	fb_free(&old_csr);
	fb_free(&csr);
	fb_free(&ev);
	fb_free(&input);
}

/* ---- FJ6 ---------------------------------------------------------------- */

/* The signed assertion in out decodes, its body is a, and its signature
 * is the certificate's over the body's bytes. */
static void assertion_ok(const uint8_t *p, size_t n, X509 *cert,
			 const struct fleet_discovery_assertion *a)
{
	struct fleet_discovery_signed s;
	struct fleet_discovery_assertion b;
	struct fleet_errctx ec = {0};
	struct fleet_buf input;
	fb_init(&input);
	if (fleet_discovery_signed_decode(p, n, &s, &ec) != FLEET_OK)
		fail_msg("assertion: %s", ec.detail);
	assert_int_equal(fleet_discovery_body_decode(s.body.data, s.body.len, &b, &ec), FLEET_OK);
	assert_string_equal(b.site, a->site);
	assert_string_equal(b.signer, a->signer);
	assert_int_equal(b.epoch, a->epoch);
	assert_string_equal(b.mac, a->mac);
	assert_string_equal(b.ip, a->ip);
	assert_string_equal(b.product_uuid, a->product_uuid);
	assert_string_equal(b.workflow, a->workflow);
	assert_int_equal(b.issued_at, a->issued_at);
	assert_int_equal(b.not_after, a->not_after);
	struct fleet_wire_bytes d = der_of(cert);
	assert_int_equal(s.cert.len, d.len);
	assert_memory_equal(s.cert.data, d.data, d.len);
	free(d.data);
	assert_int_equal(fleet_discovery_signing_input(s.body.data, s.body.len, &input), FLEET_OK);
	assert_int_equal(fleet_es256_verify(X509_get0_pubkey(cert), input.data, input.len, s.sig,
					    &ec),
			 FLEET_OK);
	fleet_discovery_signed_free(&s);
	fb_free(&input);
}

static void write_key_pem(const char *path, EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem;
	assert_int_equal(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL), 1);
	long n = BIO_get_mem_data(b, &pem);
	write_file(path, pem, (size_t)n, 0600);
	BIO_free(b);
}

static void write_certs_pem(const char *path, X509 *const *x, size_t n)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(PEM_write_bio_X509(b, x[i]), 1);
	long len = BIO_get_mem_data(b, &pem);
	write_file(path, pem, (size_t)len, 0644);
	BIO_free(b);
}

static const char *fleet_join_bin(void)
{
	return FLEET_BINARY_DIR "/tink-attest/fleet-join";
}

static int run_status(const char *cmd, struct fleet_buf *out)
{
	return run_capture(cmd, out); /* the exit status, or -1 */
}

static void test_assert_build(void **state)
{
	struct fx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr, out;
	EVP_PKEY *k = NULL, *other = NULL;
	struct fleet_discovery_assertion a;
	fb_init(&csr);
	fb_init(&out);
	/* the site node's identity */
	assert_int_equal(fj_key_csr(&k, &csr, &ec), FLEET_OK);
	X509 *cert = issue(f->ca, csr.data, csr.len, "node_site1", "site");
	memset(&a, 0, sizeof(a));
	strcpy(a.site, "rack-a1");
	strcpy(a.signer, "node_site1");
	a.epoch = 4;
	strcpy(a.mac, "aa:bb:cc:dd:ee:01");
	strcpy(a.ip, "10.0.0.5");
	strcpy(a.product_uuid, "4c4c4544-0042-3510-8052-b4c04f4e3232");
	strcpy(a.workflow, "boot.ramdisk_1");
	a.issued_at = 1790000000;
	a.not_after = 1790000600;
	assert_int_equal(fj_assert_build(k, cert, &a, &out, &ec), FLEET_OK);
	assertion_ok(out.data, out.len, cert, &a);
	/* another key than the certificate's; a body JE2 refuses */
	fb_reset(&out);
	other = EVP_EC_gen("P-256");
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fj_assert_build(other, cert, &a, &out, &ec), FLEET_E_INVALID_ARG);
	assert_string_equal(ec.reason, FJ_REASON_ASSERT_KEY);
	a.not_after = a.issued_at - 1;
	assert_int_equal(fj_assert_build(k, cert, &a, &out, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	a.not_after = 1790000600;

	/* the command: `fleet-join assert ... > FILE` gives the same */
	{
		char key[700], crt[700], cmd[3000];
		snprintf(key, sizeof(key), "%s/site.key", f->base);
		snprintf(crt, sizeof(crt), "%s/site.pem", f->base);
		write_key_pem(key, k);
		write_certs_pem(crt, &cert, 1);
		snprintf(cmd, sizeof(cmd),
			 "'%s' assert --key '%s' --cert '%s' --site rack-a1 --signer node_site1 "
			 "--epoch 4 --mac AA:BB:CC:DD:EE:01 --ip 10.0.0.5 "
			 "--product-uuid 4C4C4544-0042-3510-8052-B4C04F4E3232 "
			 "--workflow boot.ramdisk_1 --issued-at 1790000000",
			 fleet_join_bin(), key, crt);
		fb_reset(&out);
		assert_int_equal(run_status(cmd, &out), 0);
		assertion_ok(out.data, out.len, cert, &a); /* --ttl's default is 600 s */
		/* --ttl caps at 900; a short one */
		snprintf(cmd, sizeof(cmd),
			 "'%s' assert --key '%s' --cert '%s' --site rack-a1 --signer node_site1 "
			 "--epoch 4 --mac aa:bb:cc:dd:ee:01 --ttl 901 2>/dev/null",
			 fleet_join_bin(), key, crt);
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd),
			 "'%s' assert --key '%s' --cert '%s' --site rack-a1 --signer node_site1 "
			 "--epoch 4 --mac aa:bb:cc:dd:ee:01 --ttl 60 --issued-at 1790000000",
			 fleet_join_bin(), key, crt);
		fb_reset(&out);
		assert_int_equal(run_status(cmd, &out), 0);
		struct fleet_discovery_assertion b = a;
		b.ip[0] = b.product_uuid[0] = b.workflow[0] = '\0';
		b.not_after = 1790000060;
		assertion_ok(out.data, out.len, cert, &b);
		/* a key that is not the certificate's: usage */
		write_key_pem(key, other);
		snprintf(cmd, sizeof(cmd),
			 "'%s' assert --key '%s' --cert '%s' --site rack-a1 --signer node_site1 "
			 "--epoch 4 --mac aa:bb:cc:dd:ee:01 2>/dev/null",
			 fleet_join_bin(), key, crt);
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		/* a required option missing, a value out of its form */
		snprintf(cmd, sizeof(cmd),
			 "'%s' assert --key '%s' --cert '%s' --site Rack --signer node_site1 "
			 "--epoch 4 --mac aa:bb:cc:dd:ee:01 2>/dev/null",
			 fleet_join_bin(), key, crt);
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd), "'%s' assert --key '%s' 2>/dev/null", fleet_join_bin(),
			 key);
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd), "'%s' frobnicate 2>/dev/null", fleet_join_bin());
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
	}
	X509_free(cert);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
	fb_free(&csr);
	fb_free(&out);
	assert_int_equal(ERR_peek_error(), 0);
}

/* ---- the runs (FJ1, FJ7, FJ8) over a transport of the test's own ------- */

enum plan { JOINED, JOINED_AFTER_PENDING, ALWAYS_PENDING, DENIED, CHALLENGE, UNREACHABLE,
	    UNSIGNED, DENIED_403, RENEW };

struct fake {
	const struct fx *f;
	enum plan plan;
	int calls;
	struct fleet_buf first; /* the first request, byte for byte */
	bool all_same;
	struct fleet_join_request req; /* the last one decoded (join) */
	double t;                      /* the clock */
	unsigned slept;
	char old_leaf_path[800]; /* RENEW: the current chain */
};

static double fake_now(void *ctx)
{
	return ((struct fake *)ctx)->t;
}

static void fake_sleep(void *ctx, unsigned s)
{
	struct fake *k = ctx;
	k->t += s;
	k->slept += s;
}

/* The renew request's proof, checked as the service will. */
static void renew_check(struct fake *k, const struct fleet_buf *body, struct fleet_wire_bytes *csr)
{
	struct fleet_renew_request rr;
	struct fleet_errctx ec = {0};
	struct fleet_buf input;
	struct fj_pins cur;
	fb_init(&input);
	if (fleet_renew_request_decode(body->data, body->len, &rr, &ec) != FLEET_OK)
		fail_msg("renew request: %s", ec.detail);
	if (fj_chain_read(k->old_leaf_path, &cur, &ec) != FLEET_OK)
		fail_msg("the current chain %s: %s", k->old_leaf_path, ec.detail);
	struct fleet_wire_bytes leaf = der_of(cur.certs[0]);
	assert_int_equal(rr.cert.len, leaf.len);
	assert_memory_equal(rr.cert.data, leaf.data, leaf.len);
	assert_int_equal(fleet_renew_signing_input(rr.csr.data, rr.csr.len, rr.cert.data,
						   rr.cert.len, &input),
			 FLEET_OK);
	assert_int_equal(fleet_es256_verify(X509_get0_pubkey(cur.certs[0]), input.data, input.len,
					    rr.sig, &ec),
			 FLEET_OK);
	csr->data = malloc(rr.csr.len);
	assert_non_null(csr->data);
	memcpy(csr->data, rr.csr.data, rr.csr.len);
	csr->len = rr.csr.len;
	free(leaf.data);
	fj_pins_free(&cur);
	fleet_renew_request_free(&rr);
	fb_free(&input);
}

static enum tink_tx_result fake_post(void *ctx, const char *path, const struct fleet_buf *body,
				     size_t max_reply, struct fleet_buf *reply, long *http,
				     struct fleet_errctx *ec)
{
	struct fake *k = ctx;
	struct fleet_join_response r;
	struct fleet_wire_bytes csr = {0};
	(void)max_reply;
	k->calls++;
	if (k->plan == UNREACHABLE) {
		fleet_errctx_msg(ec, FLEET_E_IO, "connection refused");
		return TINK_TX_UNREACHABLE;
	}
	if (k->calls == 1) {
		fb_put(&k->first, body->data, body->len);
		k->all_same = true;
	} else if (body->len != k->first.len || memcmp(body->data, k->first.data, body->len) != 0) {
		k->all_same = false;
	}
	if (strcmp(path, "/v1/renew") == 0) {
		renew_check(k, body, &csr);
	} else {
		struct fleet_errctx dec = {0};
		assert_string_equal(path, "/v1/join");
		fleet_join_request_free(&k->req);
		if (fleet_join_request_decode(body->data, body->len, &k->req, &dec) != FLEET_OK)
			fail_msg("join request: %s", dec.detail);
		csr.data = malloc(k->req.csr.len);
		assert_non_null(csr.data);
		memcpy(csr.data, k->req.csr.data, k->req.csr.len);
		csr.len = k->req.csr.len;
	}
	*http = 200;
	memset(&r, 0, sizeof(r));
	bool pending = k->plan == ALWAYS_PENDING || (k->plan == JOINED_AFTER_PENDING && k->calls == 1);
	if (k->plan == UNSIGNED) {
		fb_reset(reply);
		fb_put(reply, "{\"v\":1,\"status\":\"denied\"}", 26);
		*http = 403;
	} else if (k->plan == DENIED || k->plan == DENIED_403) {
		r.status = FLEET_JOIN_DENIED;
		serve(k->f->ca, &r, reply);
		if (k->plan == DENIED_403)
			*http = 403;
	} else if (pending || k->plan == CHALLENGE) {
		assert_int_equal(fleet_join_csr_sha256(&csr, r.csr_sha256), FLEET_OK);
		if (pending) {
			r.status = FLEET_JOIN_PENDING;
			strcpy(r.deferral.request_id, "jr_01");
			r.deferral.retry_after_seconds = 30;
		} else {
			r.status = FLEET_JOIN_CHALLENGE;
			strcpy(r.deferral.attestor, k->req.attestor);
			r.deferral.payload = (struct fleet_wire_bytes){(uint8_t *)"nonce", 5};
			r.deferral.not_after = 1790000000;
		}
		serve(k->f->ca, &r, reply); /* r borrows the payload: not freed */
	} else {
		joined_body(k->f->ca, csr.data, csr.len, k->plan == RENEW ? "node_01k" : "node_07x",
			    &r);
		serve(k->f->ca, &r, reply);
		fleet_join_response_free(&r);
	}
	free(csr.data);
	return TINK_TX_OK;
}

static void fake_init(struct fake *k, const struct fx *f, enum plan plan)
{
	memset(k, 0, sizeof(*k));
	k->f = f;
	k->plan = plan;
	k->t = 1000;
	fb_init(&k->first);
}

static void fake_free(struct fake *k)
{
	fb_free(&k->first);
	fleet_join_request_free(&k->req);
}

/* KEY is a PKCS#8 PEM of mode 0600, CHAIN's leaf is for it and the CA's. */
static void identity_ok(const struct fx *f, const char *key_path, const char *chain_path,
			const char *node_id)
{
	struct fleet_errctx ec = {0};
	struct fleet_buf kb;
	struct fj_pins chain;
	struct fleet_node_identity id;
	struct stat st;
	EVP_PKEY *k = NULL;
	assert_int_equal(stat(key_path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(chain_path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	fb_init(&kb);
	read_file_or_fail(key_path, &kb);
	assert_true(kb.len > 28 && memcmp(kb.data, "-----BEGIN PRIVATE KEY-----", 27) == 0);
	fb_free(&kb);
	assert_int_equal(fj_key_read(key_path, &k, &ec), FLEET_OK);
	assert_int_equal(fj_chain_read(chain_path, &chain, &ec), FLEET_OK);
	assert_int_equal(chain.n, 2);
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(chain.certs[0]), k), 1);
	assert_int_equal(X509_verify(chain.certs[0], X509_get0_pubkey(fleet_ca_cert(f->ca))), 1);
	assert_int_equal(X509_cmp(chain.certs[1], fleet_ca_cert(f->ca)), 0);
	assert_int_equal(fleet_node_cert_spiffe_id(chain.certs[0], &id, &ec), FLEET_OK);
	assert_string_equal(id.node_id, node_id);
	fj_pins_free(&chain);
	EVP_PKEY_free(k);
	/* no temporary file left beside them */
	char cmd[800];
	struct fleet_buf ls;
	fb_init(&ls);
	snprintf(cmd, sizeof(cmd), "ls -A '%s/out' | grep -c '^\\.' || true", f->base);
	run_capture(cmd, &ls);
	assert_string_equal((const char *)ls.data, "0\n");
	fb_free(&ls);
}

static void test_join_pending_then_joined(void **state)
{
	struct fx *f = *state;
	struct fleet_seal_key *sk = NULL;
	struct fleet_buf spki, pt;
	struct fleet_join_token t;
	struct fleet_errctx ec = {0};
	uint8_t tok[FLEET_JOIN_TOKEN_LEN];
	char dir[700], key[760], chain[760], token[760], pub[760];
	struct fake k;
	struct fj_result res;
	fb_init(&spki);
	fb_init_secret(&pt, FLEET_SEAL_MAX_PLAINTEXT);
	snprintf(dir, sizeof(dir), "%s/out", f->base);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(key, sizeof(key), "%s/node.key", dir);
	snprintf(chain, sizeof(chain), "%s/node.pem", dir);
	snprintf(token, sizeof(token), "%s/token.in", f->base);
	snprintf(pub, sizeof(pub), "%s/seal.der", f->base);
	/* an unsealed token, sealed to the service's key by the client */
	assert_int_equal(fleet_seal_key_generate(&sk), FLEET_OK);
	assert_int_equal(fleet_seal_key_public_spki(sk, &spki), FLEET_OK);
	write_file(pub, spki.data, spki.len, 0644);
	assert_int_equal(fleet_join_token_new(&t), FLEET_OK);
	assert_int_equal(fleet_join_token_encode(&t, tok), FLEET_OK);
	char *text = b64(tok, sizeof(tok), "\n");
	write_file(token, text, strlen(text), 0600);
	free(text);

	struct fj_join_opts o = {
		.attestor = "", .role = FLEET_JOIN_ROLE_NODE, .token_file = token, .seal_pub = pub,
		.n_macs = 2, .macs = {"aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"},
		.product_uuid = "4c4c4544-0042-3510-8052-b4c04f4e3232",
		.max_wait = FJ_DEFAULT_MAX_WAIT, .key_out = key, .cert_out = chain,
	};
	fake_init(&k, f, JOINED_AFTER_PENDING);
	struct tink_transport tx = {.post = fake_post, .ctx = &k};
	struct fj_clock clk = {.now = fake_now, .sleep = fake_sleep, .ctx = &k};
	int rc = fj_join(&o, &f->pins, &tx, &clk, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("join: %d %s", rc, res.message);
	assert_string_equal(res.node_id, "node_07x");
	/* pending: one wait of what it asked, then the same request (FJ1) */
	assert_int_equal(k.calls, 2);
	assert_int_equal(k.slept, 30);
	assert_true(k.all_same);
	/* what was sent */
	assert_string_equal(k.req.attestor, "");
	assert_int_equal(k.req.role, FLEET_JOIN_ROLE_NODE);
	assert_int_equal(k.req.n_macs, 2);
	assert_string_equal(k.req.macs[1], "aa:bb:cc:dd:ee:02");
	assert_string_equal(k.req.product_uuid, "4c4c4544-0042-3510-8052-b4c04f4e3232");
	assert_false(k.req.has_attestation);
	assert_true(k.req.has_token);
	assert_int_equal(fleet_unseal(sk, FLEET_JOIN_TOKEN_PURPOSE, k.req.token.data,
				      k.req.token.len, &pt, &ec),
			 FLEET_OK);
	assert_memory_equal(pt.data, tok, sizeof(tok));
	identity_ok(f, key, chain, "node_07x");
	fake_free(&k);

	/* x509pop: the evidence from the identity just written, re-joining
	 * as that node; the new files replace the old ones */
	struct fj_join_opts p = {
		.attestor = "x509pop", .x509pop_cert = chain, .x509pop_key = key,
		.node_id = "node_07x", .max_wait = 0, .key_out = key, .cert_out = chain,
	};
	struct fj_pins old;
	assert_int_equal(fj_chain_read(chain, &old, &ec), FLEET_OK);
	fake_init(&k, f, JOINED);
	rc = fj_join(&p, &f->pins, &tx, &clk, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("x509pop join: %d %s", rc, res.message);
	assert_string_equal(k.req.attestor, "x509pop");
	assert_false(k.req.has_token);
	assert_true(k.req.has_attestation);
	{
		struct fleet_x509pop_evidence m;
		struct fleet_buf input;
		uint8_t h[32];
		fb_init(&input);
		assert_int_equal(fleet_x509pop_decode(k.req.attestation.data, k.req.attestation.len,
						      &m, &ec),
				 FLEET_OK);
		assert_string_equal(m.node_id, "node_07x");
		assert_int_equal(EVP_Digest(k.req.csr.data, k.req.csr.len, h, NULL, EVP_sha256(),
					    NULL),
				 1);
		assert_int_equal(fleet_x509pop_signing_input(h, m.node_id, m.client_time_ms, &input),
				 FLEET_OK);
		assert_int_equal(fleet_es256_verify(X509_get0_pubkey(old.certs[0]), input.data,
						    input.len, m.sig, &ec),
				 FLEET_OK);
		fleet_x509pop_free(&m);
		fb_free(&input);
	}
	identity_ok(f, key, chain, "node_07x");
	{
		struct fj_pins now;
		assert_int_equal(fj_chain_read(chain, &now, &ec), FLEET_OK);
		assert_int_not_equal(X509_cmp(now.certs[0], old.certs[0]), 0);
		fj_pins_free(&now);
	}
	fj_pins_free(&old);
	fake_free(&k);

	/* discovery: the file's bytes, as they are */
	{
		char disc[760];
		static const char bytes[] = "{\"v\":1,\"assertion\":\"AAEC\"} \n";
		snprintf(disc, sizeof(disc), "%s/assertion.json", f->base);
		write_file(disc, bytes, strlen(bytes), 0644);
		struct fj_join_opts d = {
			.attestor = "discovery", .role = FLEET_JOIN_ROLE_RAMDISK,
			.token_file = token, .seal_pub = pub, .discovery_file = disc,
			.key_out = key, .cert_out = chain,
		};
		fake_init(&k, f, DENIED);
		assert_int_equal(fj_join(&d, &f->pins, &tx, &clk, &res), FJ_EXIT_DENIED);
		assert_string_equal(res.message, "access denied");
		assert_int_equal(k.req.role, FLEET_JOIN_ROLE_RAMDISK);
		assert_int_equal(k.req.attestation.len, strlen(bytes));
		assert_memory_equal(k.req.attestation.data, bytes, strlen(bytes));
		fake_free(&k);
	}
	fleet_join_token_wipe(&t);
	fleet_seal_key_free(sk);
	fb_free(&spki);
	fb_free(&pt);
	rm_rf(dir);
}

/* FJ8 and the other endings */
static void test_join_max_wait(void **state)
{
	struct fx *f = *state;
	char dir[700], key[760], chain[760];
	struct fake k;
	struct fj_result res;
	struct stat st;
	snprintf(dir, sizeof(dir), "%s/out", f->base);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(key, sizeof(key), "%s/node.key", dir);
	snprintf(chain, sizeof(chain), "%s/node.pem", dir);
	struct fj_join_opts o = {.max_wait = 100, .key_out = key, .cert_out = chain};
	struct tink_transport tx = {.post = fake_post, .ctx = &k};
	struct fj_clock clk = {.now = fake_now, .sleep = fake_sleep, .ctx = &k};

	/* 30 s waits: after 0, 30, 60 and 90 s; a fifth try at 120 would pass 100 */
	fake_init(&k, f, ALWAYS_PENDING);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_PENDING);
	assert_int_equal(k.calls, 4);
	assert_int_equal(k.slept, 90);
	assert_true(k.all_same);
	assert_non_null(strstr(res.message, "pending"));
	fake_free(&k);
	/* --max-wait 0: one try */
	o.max_wait = 0;
	fake_init(&k, f, ALWAYS_PENDING);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_PENDING);
	assert_int_equal(k.calls, 1);
	assert_int_equal(k.slept, 0);
	fake_free(&k);
	/* exactly enough: 30 fits in 30 */
	o.max_wait = 30;
	fake_init(&k, f, JOINED_AFTER_PENDING);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_OK);
	assert_int_equal(k.calls, 2);
	fake_free(&k);
	rm_rf(dir);
	assert_int_equal(mkdir(dir, 0700), 0);

	/* denied (whatever the HTTP status), a challenge, no answer, an
	 * unsigned answer: nothing written */
	fake_init(&k, f, DENIED);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_DENIED);
	fake_free(&k);
	fake_init(&k, f, DENIED_403);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_DENIED);
	fake_free(&k);
	o.attestor = "cloud-iid"; /* a challenge fleet-join does not answer (tpm's it does) */
	fake_init(&k, f, CHALLENGE);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_CHALLENGE);
	fake_free(&k);
	o.attestor = "";
	fake_init(&k, f, UNREACHABLE);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_FAILED);
	fake_free(&k);
	fake_init(&k, f, UNSIGNED);
	assert_int_equal(fj_join(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_FAILED);
	assert_non_null(strstr(res.message, "HTTP 403"));
	assert_non_null(strstr(res.message, FJ_REASON_ENVELOPE));
	fake_free(&k);
	assert_int_not_equal(stat(key, &st), 0);
	assert_int_not_equal(stat(chain, &st), 0);
	/* inputs that cannot be used: usage, nothing sent */
	{
		struct fj_join_opts u = o;
		u.attestor = "x509pop"; /* without its files */
		fake_init(&k, f, DENIED);
		assert_int_equal(fj_join(&u, &f->pins, &tx, &clk, &res), FJ_EXIT_USAGE);
		u = o;
		u.token_file = "/nonexistent/token";
		assert_int_equal(fj_join(&u, &f->pins, &tx, &clk, &res), FJ_EXIT_USAGE);
		u = o;
		u.attestor = "Bad_Attestor";
		assert_int_equal(fj_join(&u, &f->pins, &tx, &clk, &res), FJ_EXIT_USAGE);
		assert_int_equal(k.calls, 0);
		fake_free(&k);
	}
	/* the CLI's usage errors */
	{
		char cmd[1600];
		snprintf(cmd, sizeof(cmd), "'%s' join --server http://x --ca /dev/null "
			 "--key-out a --cert-out b 2>/dev/null", fleet_join_bin());
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd), "'%s' join --server https://x --ca /dev/null "
			 "--key-out a --cert-out b --mac aa:bb 2>/dev/null", fleet_join_bin());
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd), "'%s' join --server https://x --ca /dev/null "
			 "--key-out a --cert-out b --attestor x509pop 2>/dev/null", fleet_join_bin());
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd), "'%s' renew --server https://x --ca /dev/null "
			 "--key a 2>/dev/null", fleet_join_bin());
		assert_int_equal(run_status(cmd, NULL), FJ_EXIT_USAGE);
		snprintf(cmd, sizeof(cmd), "'%s' --help >/dev/null", fleet_join_bin());
		assert_int_equal(run_status(cmd, NULL), 0);
	}
	rm_rf(dir);
}

static void test_renew(void **state)
{
	struct fx *f = *state;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr;
	EVP_PKEY *cur = NULL, *stranger = NULL;
	char dir[700], key[760], chain[760];
	struct fake k;
	struct fj_result res;
	fb_init(&csr);
	snprintf(dir, sizeof(dir), "%s/out", f->base);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(key, sizeof(key), "%s/node.key", dir);
	snprintf(chain, sizeof(chain), "%s/node.pem", dir);
	/* the current identity */
	assert_int_equal(fj_key_csr(&cur, &csr, &ec), FLEET_OK);
	X509 *c[2] = {issue(f->ca, csr.data, csr.len, "node_01k", "node"), fleet_ca_cert(f->ca)};
	write_key_pem(key, cur);
	write_certs_pem(chain, c, 2);

	struct fj_renew_opts o = {.key = key, .cert = chain, .max_wait = 0};
	struct tink_transport tx = {.post = fake_post, .ctx = &k};
	struct fj_clock clk = {.now = fake_now, .sleep = fake_sleep, .ctx = &k};
	fake_init(&k, f, RENEW);
	snprintf(k.old_leaf_path, sizeof(k.old_leaf_path), "%s", chain);
	int rc = fj_renew(&o, &f->pins, &tx, &clk, &res);
	if (rc != FJ_EXIT_OK)
		fail_msg("renew: %d %s", rc, res.message);
	assert_int_equal(k.calls, 1);
	identity_ok(f, key, chain, "node_01k");
	{
		EVP_PKEY *now = NULL;
		assert_int_equal(fj_key_read(key, &now, &ec), FLEET_OK);
		assert_int_not_equal(EVP_PKEY_eq(now, cur), 1); /* a fresh key */
		EVP_PKEY_free(now);
	}
	fake_free(&k);
	/* denied: the files stay as they were */
	{
		struct fleet_buf before, after;
		fb_init(&before);
		fb_init(&after);
		read_file_or_fail(chain, &before);
		fake_init(&k, f, DENIED);
		snprintf(k.old_leaf_path, sizeof(k.old_leaf_path), "%s", chain);
		assert_int_equal(fj_renew(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_DENIED);
		assert_int_equal(k.calls, 1);
		read_file_or_fail(chain, &after);
		assert_int_equal(before.len, after.len);
		assert_memory_equal(before.data, after.data, before.len);
		fake_free(&k);
		fb_free(&before);
		fb_free(&after);
	}
	/* a key that is not the leaf's: usage, nothing sent */
	stranger = EVP_EC_gen("P-256");
	write_key_pem(key, stranger);
	fake_init(&k, f, RENEW);
	assert_int_equal(fj_renew(&o, &f->pins, &tx, &clk, &res), FJ_EXIT_USAGE);
	assert_int_equal(k.calls, 0);
	fake_free(&k);
	X509_free(c[0]);
	EVP_PKEY_free(cur);
	EVP_PKEY_free(stranger);
	fb_free(&csr);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key_csr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_x509pop_build, setup, teardown),
		cmocka_unit_test_setup_teardown(test_assert_build, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_pending_then_joined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_max_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
