/*
 * join_client.c: fleet-join's work (join_client.h, FJ1..FJ8): the key and
 * its CSR, the token and the evidence a request carries, the answer's
 * checks in JW10's order, and the files a joined answer leaves.
 */
#include "tink-attest/join_client.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "lib/file_read.h"
#include "lib/join_token.h"
#include "lib/token_seal.h"
#include "tink-attest/output.h"
#include "tink-attest/tpm_join.h"

/* What a file may hold, at most (FLEET_FILE_POLICY_*, docs/files.md). */
#define MAX_KEY_FILE (16u * 1024)
#define MAX_CERT_FILE (256u * 1024)
#define MAX_TOKEN_FILE (16u * 1024)

const char *fj_exit_name(int code)
{
	switch (code) {
	case FJ_EXIT_OK:
		return "joined";
	case FJ_EXIT_USAGE:
		return "usage";
	case FJ_EXIT_DENIED:
		return "denied";
	case FJ_EXIT_FAILED:
		return "failed";
	case FJ_EXIT_PENDING:
		return "pending";
	case FJ_EXIT_CHALLENGE:
		return "challenge";
	case FJ_EXIT_LOCAL:
		return "local";
	default:
		return "unknown";
	}
}

/* ---- small helpers ------------------------------------------------------ */

/* DER of x into malloc'd bytes (what a fleet_wire_bytes owns: free()d, not
 * OPENSSL_free()d). */
static fleet_err cert_der(X509 *x, struct fleet_wire_bytes *out)
{
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);

	out->data = NULL;
	out->len = 0;
	if (n <= 0) {
		ERR_clear_error();
		return FLEET_E_CRYPTO;
	}
	if (!(out->data = malloc((size_t)n))) {
		OPENSSL_free(der);
		return FLEET_E_NOMEM;
	}
	memcpy(out->data, der, (size_t)n);
	out->len = (size_t)n;
	OPENSSL_free(der);
	return FLEET_OK;
}

static void bytes_free(struct fleet_wire_bytes *b)
{
	if (b->data)
		OPENSSL_cleanse(b->data, b->len);
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

/* ---- FJ1: the key and its CSR ------------------------------------------- */

fleet_err fj_key_csr(EVP_PKEY **key, struct fleet_buf *csr, struct fleet_errctx *ec)
{
	X509_REQ *req = NULL;
	X509_NAME *name;
	unsigned char *der = NULL;
	int n = 0;
	fleet_err e;

	if (!key || !csr)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no key or CSR output");
	if (!(*key = EVP_EC_gen("P-256")))
		return fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "cannot make a P-256 key");
	/* The server takes the key and nothing else (lib/ca.h NC4): the
	 * subject is a constant, no attribute or extension is asked for. */
	if (!(req = X509_REQ_new()) || X509_REQ_set_version(req, X509_REQ_VERSION_1) != 1 ||
	    !(name = X509_REQ_get_subject_name(req)) ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
				       (const unsigned char *)FJ_CSR_CN, -1, -1, 0) != 1 ||
	    X509_REQ_set_pubkey(req, *key) != 1 || X509_REQ_sign(req, *key, EVP_sha256()) <= 0 ||
	    (n = i2d_X509_REQ(req, &der)) <= 0) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "cannot make the CSR");
		goto fail;
	}
	if ((e = fb_put(csr, der, (size_t)n)) != FLEET_OK) {
		e = fleet_errctx_msg(ec, e, "no room for the CSR");
		goto fail;
	}
	OPENSSL_free(der);
	X509_REQ_free(req);
	return FLEET_OK;
fail:
	OPENSSL_free(der);
	X509_REQ_free(req);
	EVP_PKEY_free(*key);
	*key = NULL;
	return e;
}

/* ---- certificates ------------------------------------------------------- */

fleet_err fj_pins_from_pem(const uint8_t *pem, size_t len, struct fj_pins *out,
			   struct fleet_errctx *ec)
{
	BIO *b;
	X509 *x;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	if (!pem || len == 0 || len > INT32_MAX)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "no PEM certificate");
	if (!(b = BIO_new_mem_buf(pem, (int)len)))
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "BIO_new_mem_buf");
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		if (out->n == FJ_MAX_PINNED) {
			X509_free(x);
			BIO_free(b);
			fj_pins_free(out);
			return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "more than %d certificates",
						FJ_MAX_PINNED);
		}
		out->certs[out->n++] = x;
	}
	/* The loop ends at the end of the PEM blocks (PEM_R_NO_START_LINE) or
	 * at one that does not parse: only the first is the end. */
	unsigned long err = ERR_peek_last_error();
	BIO_free(b);
	if (out->n == 0 || (err && ERR_GET_REASON(err) != PEM_R_NO_START_LINE)) {
		fj_pins_free(out);
		return fleet_errctx_openssl(ec, FLEET_E_MALFORMED,
					    "not a sequence of PEM certificates");
	}
	ERR_clear_error();
	return FLEET_OK;
}

void fj_pins_free(struct fj_pins *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		X509_free(p->certs[i]);
	memset(p, 0, sizeof(*p));
}

fleet_err fj_chain_read(const char *path, struct fj_pins *out, struct fleet_errctx *ec)
{
	/* Certificates: public, and their content is checked by whoever
	 * relies on them (the server verifies the chain it was sent). */
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_DATA("the certificate chain", MAX_CERT_FILE);
	struct fleet_buf b;
	fleet_err e;

	fb_init(&b);
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec)) != FLEET_OK)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	e = fj_pins_from_pem(b.data, b.len, out, ec);
	fb_free(&b);
	if (e != FLEET_OK)
		return fleet_errctx_wrap(ec, e, path, NULL);
	if (out->n > FLEET_JOIN_MAX_CHAIN) {
		fj_pins_free(out);
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "%s: more than %d certificates", path,
					FLEET_JOIN_MAX_CHAIN);
	}
	return FLEET_OK;
}

fleet_err fj_key_read(const char *path, EVP_PKEY **out, struct fleet_errctx *ec)
{
	struct fj_key k;
	fleet_err e = fj_key_load(path, &k, ec);

	*out = NULL;
	if (e != FLEET_OK)
		return e;
	if (k.in_tpm) {
		fj_key_free(&k);
		return fleet_errctx_msg(ec, FLEET_E_UNSUPPORTED,
					"%s: a TPM-held key (" FJ_TPM_KEY_PEM "), which needs its TPM "
					"(--tcti)",
					path);
	}
	*out = k.pkey;
	return FLEET_OK;
}

/* ---- FJ2, FJ3: the answer ----------------------------------------------- */

/* The pinned certificate whose key id is kid, or NULL. */
static X509 *pin_of(const struct fj_pins *pins, const char *kid)
{
	char k[FLEET_JOIN_KID_LEN + 1];

	for (size_t i = 0; i < pins->n; i++)
		if (fleet_join_kid(pins->certs[i], k) == FLEET_OK && strcmp(k, kid) == 0)
			return pins->certs[i];
	return NULL;
}

/* FJ3: the joined chain, its leaf for the CSR's key, from ca, for the
 * body's node id. */
static fleet_err joined_check(X509 *ca, const struct fleet_join_response *r,
			      const struct fj_expect *x, struct fleet_errctx *ec)
{
	X509 *leaf = NULL;
	struct fleet_node_identity id;
	fleet_err e = FLEET_OK;

	for (size_t i = 0; i < r->n_chain && e == FLEET_OK; i++) {
		const unsigned char *p = r->chain[i].data;
		X509 *c = d2i_X509(NULL, &p, (long)r->chain[i].len);
		if (!c || p != r->chain[i].data + r->chain[i].len) {
			fleet_openssl_drain(NULL, 0);
			e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_CHAIN,
						"chain[%zu]: not one DER certificate", i);
		}
		if (i == 0 && e == FLEET_OK)
			leaf = c;
		else
			X509_free(c);
	}
	if (e != FLEET_OK)
		goto out;
	if (EVP_PKEY_eq(X509_get0_pubkey(leaf), x->key) != 1) {
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_LEAF_KEY,
					"the certificate is not for the key this request sent");
		goto out;
	}
	if (X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(ca)) != 0 ||
	    X509_verify(leaf, X509_get0_pubkey(ca)) != 1) {
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_LEAF_ISSUER,
					"the certificate is not the pinned CA's");
		goto out;
	}
	/* The node id a client believes is its certificate's (lib/ca.h NR1-NR6). */
	if (fleet_node_cert_spiffe_id(leaf, &id, ec) != FLEET_OK ||
	    strcmp(id.node_id, r->node_id) != 0) {
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_NODE_ID,
					"the certificate's SPIFFE ID does not name node %s",
					r->node_id);
		goto out;
	}
	/* ... and of the role this request asked for (a renewal keeps
	 * whichever role its certificate had: x->role NULL). */
	if (x->role && strcmp(id.role, x->role) != 0) {
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_ROLE,
					"the certificate is a %s's, not the %s asked for", id.role,
					x->role);
		goto out;
	}
out:
	fleet_openssl_drain(NULL, 0);
	X509_free(leaf);
	return e;
}

fleet_err fj_answer_verify(const struct fj_pins *pins, const uint8_t *reply, size_t len,
			   const struct fj_expect *x, struct fleet_join_response *out,
			   X509 **signer, struct fleet_errctx *ec)
{
	struct fleet_join_envelope env;
	char mine[FLEET_JOIN_SHA256_HEX + 1];
	X509 *ca;
	fleet_err e;

	if (signer)
		*signer = NULL;
	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	if (!pins || !x || !x->csr || !x->key)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no pins or request to check");
	/* (a) */
	if ((e = fleet_join_envelope_decode(reply, len, &env, ec)) != FLEET_OK) {
		ec->reason = FJ_REASON_ENVELOPE;
		return e;
	}
	/* (b) the key the envelope names, if it is pinned, and nothing else */
	if (!(ca = pin_of(pins, env.kid))) {
		fleet_join_envelope_free(&env);
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_KID,
					   "the answer is signed by a key no pinned CA holds");
	}
	e = fleet_ca_verify(ca, env.body.data, env.body.len, env.sig.data, env.sig.len, ec);
	if (e != FLEET_OK) {
		fleet_join_envelope_free(&env);
		ec->reason = FJ_REASON_SIGNATURE;
		return e;
	}
	/* (c) only now are the body's bytes read */
	e = fleet_join_body_decode(env.body.data, env.body.len, out, ec);
	fleet_join_envelope_free(&env);
	if (e != FLEET_OK) {
		ec->reason = FJ_REASON_BODY;
		return e;
	}
	if (out->status == FLEET_JOIN_DENIED) {
		if (signer)
			*signer = ca;
		return FLEET_OK; /* (f): nothing to check */
	}
	/* (d) an answer to this request, no other */
	if ((e = fleet_join_csr_sha256(x->csr, mine)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "the CSR sent cannot be hashed");
		goto fail;
	}
	if (strcmp(mine, out->csr_sha256) != 0) {
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_CSR,
					"the answer is for another CSR");
		goto fail;
	}
	/* (e) */
	if (out->status == FLEET_JOIN_CHALLENGE &&
	    strcmp(out->deferral.attestor, x->attestor ? x->attestor : "") != 0) {
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FJ_REASON_ATTESTOR,
					"a challenge for another attestor than the request's");
		goto fail;
	}
	if (out->status == FLEET_JOIN_JOINED && (e = joined_check(ca, out, x, ec)) != FLEET_OK)
		goto fail;
	if (signer)
		*signer = ca;
	return FLEET_OK;
fail:
	fleet_join_response_free(out);
	return e;
}

/* ---- FJ4: the token ------------------------------------------------------ */

fleet_err fj_token_from_text(const uint8_t *text, size_t len, const uint8_t *spki,
			     size_t spki_len, struct fleet_buf *sealed, struct fleet_errctx *ec)
{
	static const uint8_t magic[] = {'f', 's', 'l'}; /* any version: the server reads it */
	struct fleet_wire_bytes raw = {0};
	struct fleet_join_token t;
	struct fleet_errctx tec = {0};
	fleet_err e;

	memset(&t, 0, sizeof(t));

	if (!text || !sealed || !sealed->secret)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"the token's output must be a wiping buffer");
	fb_reset(sealed);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' ||
			   text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	/* No detail of the decoders below reaches ec: they would describe
	 * the token's bytes. */
	if (fleet_b64url_decode((const char *)text, len, FLEET_JOIN_MAX_TOKEN, &raw) != FLEET_OK) {
		e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, FJ_REASON_TOKEN,
					"the token file is not base64url of a join token");
		goto out;
	}
	if (raw.len >= sizeof(magic) && memcmp(raw.data, magic, sizeof(magic)) == 0) {
		if ((e = fb_put(sealed, raw.data, raw.len)) != FLEET_OK)
			fleet_errctx_msg(ec, e, "no room for the sealed token");
		goto out;
	}
	if (raw.len != FLEET_JOIN_TOKEN_LEN || fleet_join_token_decode(raw.data, raw.len, &t,
								      &tec) != FLEET_OK) {
		fleet_join_token_wipe(&t);
		e = fleet_errctx_refuse(ec, FLEET_E_MALFORMED, FJ_REASON_TOKEN,
					"the token file holds neither a sealed nor an unsealed "
					"join token");
		goto out;
	}
	fleet_join_token_wipe(&t);
	if (!spki || spki_len == 0) {
		e = fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, FJ_REASON_NO_SEAL_PUB,
					"the token is not sealed: --seal-pub names the key to seal "
					"it to");
		goto out;
	}
	e = fleet_seal(spki, spki_len, FLEET_JOIN_TOKEN_PURPOSE, raw.data, raw.len, sealed);
	if (e != FLEET_OK)
		fleet_errctx_msg(ec, e, "cannot seal the token to --seal-pub's key (a P-256 key "
					"in its canonical SPKI)");
out:
	bytes_free(&raw);
	OPENSSL_cleanse(&tec, sizeof(tec));
	if (e != FLEET_OK)
		fb_reset(sealed);
	return e;
}

fleet_err fj_seal_pub_read(const char *path, struct fleet_buf *spki, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the join service's sealing key", MAX_KEY_FILE);
	static const char begin[] = "-----BEGIN";
	struct fleet_buf b;
	fleet_err e;

	fb_init(&b);
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec)) != FLEET_OK)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	fb_reset(spki);
	if (b.len >= sizeof(begin) - 1 && memcmp(b.data, begin, sizeof(begin) - 1) == 0) {
		/* what `fleetctl join init` writes: seal.pub, a PEM PUBLIC KEY */
		BIO *bio = BIO_new_mem_buf(b.data, (int)b.len);
		EVP_PKEY *k = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
		unsigned char *der = NULL;
		int n = k ? i2d_PUBKEY(k, &der) : -1;
		BIO_free(bio);
		EVP_PKEY_free(k);
		e = n > 0 ? fb_put(spki, der, (size_t)n) : FLEET_E_MALFORMED;
		OPENSSL_free(der);
		if (e != FLEET_OK)
			fleet_errctx_openssl(ec, e, "%s: not a PEM public key", path);
	} else {
		/* DER as it is: fleet_seal judges it (lib/token_seal.h TS4) */
		e = b.len ? fb_put(spki, b.data, b.len) : FLEET_E_MALFORMED;
		if (e != FLEET_OK)
			fleet_errctx_msg(ec, e, "%s: empty", path);
	}
	fb_free(&b);
	return e;
}

fleet_err fj_token_read(const char *token_path, const char *seal_pub_path,
			struct fleet_buf *sealed, struct fleet_errctx *ec)
{
	/* A token is a secret (docs/files.md): mode 0600 or stricter. */
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_SECRET("the join token file", MAX_TOKEN_FILE);
	struct fleet_buf text, spki;
	fleet_err e;

	fb_init(&text);
	fb_init(&spki);
	if (!sealed || !sealed->secret)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"the token's output must be a wiping buffer");
	fb_reset(sealed); /* nothing of an earlier token is left in it on a refusal */
	if (seal_pub_path && (e = fj_seal_pub_read(seal_pub_path, &spki, ec)) != FLEET_OK)
		goto out;
	if ((e = fleet_file_read(AT_FDCWD, token_path, &policy, &text, ec)) != FLEET_OK) {
		fleet_errctx_wrap(ec, e, "cannot read ", NULL);
		goto out;
	}
	if ((e = fj_token_from_text(text.data, text.len, spki.data, spki.len, sealed, ec)) !=
	    FLEET_OK)
		fleet_errctx_wrap(ec, e, token_path, NULL);
out:
	fb_free(&text); /* a secret buffer: wiped */
	fb_free(&spki);
	return e;
}

/* ---- FJ5: x509pop -------------------------------------------------------- */

fleet_err fj_x509pop_build(EVP_PKEY *key, const struct fj_pins *chain, const char *node_id,
			   const struct fleet_wire_bytes *csr, int64_t client_time_ms,
			   struct fleet_buf *out, struct fleet_errctx *ec)
{
	struct fj_key k = {.pkey = key};

	return fj_x509pop_build_key(&k, chain, node_id, csr, client_time_ms, out, ec);
}

fleet_err fj_x509pop_build_key(const struct fj_key *key, const struct fj_pins *chain,
			       const char *node_id, const struct fleet_wire_bytes *csr,
			       int64_t client_time_ms, struct fleet_buf *out,
			       struct fleet_errctx *ec)
{
	struct fleet_x509pop_evidence ev;
	struct fleet_node_identity id;
	struct fleet_errctx iec = {0};
	struct fleet_buf input;
	uint8_t h[32];
	fleet_err e;

	memset(&ev, 0, sizeof(ev));
	fb_init(&input);
	if (!key || !key->pkey || !chain || chain->n < 1 || chain->n > FLEET_JOIN_MAX_CHAIN ||
	    !node_id ||
	    strlen(node_id) > FLEET_JOIN_MAX_ID || !csr || !csr->data || csr->len == 0 || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"x509pop: a key, a chain of 1..%d, a node id and a CSR",
					FLEET_JOIN_MAX_CHAIN);
	if (EVP_PKEY_eq(X509_get0_pubkey(chain->certs[0]), key->pkey) != 1) {
		ERR_clear_error();
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, FJ_REASON_X509POP_KEY,
					   "x509pop: the key is not the leaf certificate's");
	}
	/* The server names the node by its certificate; a --node-id that
	 * says otherwise could only be refused there. */
	if (fleet_node_cert_spiffe_id(chain->certs[0], &id, &iec) == FLEET_OK &&
	    strcmp(id.node_id, node_id) != 0)
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, FJ_REASON_X509POP_NODE_ID,
					   "x509pop: the leaf is node %s's, not %s's", id.node_id,
					   node_id);
	ERR_clear_error();
	memcpy(ev.node_id, node_id, strlen(node_id) + 1);
	ev.n_chain = chain->n;
	ev.client_time_ms = client_time_ms;
	for (size_t i = 0; i < chain->n; i++)
		if ((e = cert_der(chain->certs[i], &ev.chain[i])) != FLEET_OK) {
			fleet_errctx_msg(ec, e, "x509pop: chain[%zu] cannot be encoded", i);
			goto out;
		}
	if (EVP_Digest(csr->data, csr->len, h, NULL, EVP_sha256(), NULL) != 1) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "SHA-256");
		goto out;
	}
	if ((e = fleet_x509pop_signing_input(h, node_id, client_time_ms, &input)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "x509pop: the node id or the time is not one evidence "
					"carries");
		goto out;
	}
	if ((e = fj_key_sign(key, input.data, input.len, ev.sig, ec)) != FLEET_OK)
		goto out;
	if ((e = fleet_x509pop_encode(&ev, out)) != FLEET_OK)
		fleet_errctx_msg(ec, e, "x509pop: the evidence cannot be encoded");
out:
	fleet_x509pop_free(&ev);
	fb_free(&input);
	return e;
}

/* ---- FJ6: the assertion -------------------------------------------------- */

fleet_err fj_assert_build(EVP_PKEY *key, X509 *cert, const struct fleet_discovery_assertion *a,
			  struct fleet_buf *out, struct fleet_errctx *ec)
{
	struct fj_key k = {.pkey = key};

	return fj_assert_build_key(&k, cert, a, out, ec);
}

fleet_err fj_assert_build_key(const struct fj_key *key, X509 *cert,
			      const struct fleet_discovery_assertion *a, struct fleet_buf *out,
			      struct fleet_errctx *ec)
{
	struct fleet_discovery_signed s;
	struct fleet_buf body, input;
	fleet_err e;

	memset(&s, 0, sizeof(s));
	if (!key || !key->pkey || !cert || !a || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "assert: no key, certificate or body");
	if (EVP_PKEY_eq(X509_get0_pubkey(cert), key->pkey) != 1) {
		ERR_clear_error();
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, FJ_REASON_ASSERT_KEY,
					   "assert: the key is not the certificate's");
	}
	fb_init(&body);
	fb_init(&input);
	if ((e = fleet_discovery_body_encode(a, &body)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "assert: a field is not in its form (lib/join_evidence.h "
					"JE2)");
		goto out;
	}
	if ((e = fleet_discovery_signing_input(body.data, body.len, &input)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "assert: no signing input");
		goto out;
	}
	if ((e = fj_key_sign(key, input.data, input.len, s.sig, ec)) != FLEET_OK)
		goto out;
	if ((e = cert_der(cert, &s.cert)) != FLEET_OK) {
		fleet_errctx_msg(ec, e, "assert: the certificate cannot be encoded");
		goto out;
	}
	/* The body's bytes exactly as signed: they travel as bytes. */
	s.body.data = body.data;
	s.body.len = body.len;
	e = fleet_discovery_signed_encode(&s, out);
	s.body.data = NULL;
	s.body.len = 0;
	if (e != FLEET_OK)
		fleet_errctx_msg(ec, e, "assert: the signed assertion cannot be encoded");
out:
	fleet_discovery_signed_free(&s);
	fb_free(&body);
	fb_free(&input);
	return e;
}

/* ---- FJ7: the files ------------------------------------------------------ */

/* path's directory and last component, for tink_write_file. */
static fleet_err split(const char *path, char dir[4096], char base[4096], struct fleet_errctx *ec)
{
	char a[4096], b[4096];

	if (snprintf(a, sizeof(a), "%s", path) >= (int)sizeof(a))
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "path too long: %s", path);
	memcpy(b, a, sizeof(a));
	snprintf(dir, 4096, "%s", dirname(a));
	snprintf(base, 4096, "%s", basename(b));
	if (!base[0] || strcmp(base, "/") == 0 || strcmp(base, ".") == 0 ||
	    strcmp(base, "..") == 0)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "not a file name: %s", path);
	return FLEET_OK;
}

static fleet_err write_key(const char *path, const struct fj_key *key, struct fleet_errctx *ec)
{
	char dir[4096], base[4096];
	BIO *b;
	char *pem = NULL;
	long n;
	fleet_err e;

	if ((e = split(path, dir, base, ec)) != FLEET_OK)
		return e;
	if (key->in_tpm) {
		/* FJ10: what lets the TPM derive the key again, and no more */
		struct fleet_buf rec;
		fb_init_secret(&rec, 4096);
		if ((e = fj_tpm_key_record(key->gen, &rec)) != FLEET_OK)
			e = fleet_errctx_msg(ec, e, "cannot encode the TPM key's record");
		else
			e = tink_write_file(dir, base, rec.data, rec.len, 0600, ec);
		fb_free(&rec);
		return e;
	}
	/* OpenSSL's wiping memory BIO: the PEM's every block is cleared when
	 * freed or grown. */
	if (!(b = BIO_new(BIO_s_secmem())))
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "BIO_s_secmem");
	if (PEM_write_bio_PrivateKey(b, key->pkey, NULL, NULL, 0, NULL, NULL) != 1 ||
	    (n = BIO_get_mem_data(b, &pem)) <= 0) {
		BIO_free(b);
		return fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "cannot encode the key as PEM");
	}
	e = tink_write_file(dir, base, pem, (size_t)n, 0600, ec);
	BIO_free(b);
	return e;
}

static fleet_err write_chain(const char *path, const struct fleet_join_response *r,
			     struct fleet_errctx *ec)
{
	char dir[4096], base[4096];
	BIO *b;
	char *pem = NULL;
	long n;
	fleet_err e;

	if ((e = split(path, dir, base, ec)) != FLEET_OK)
		return e;
	if (!(b = BIO_new(BIO_s_mem())))
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "BIO_s_mem");
	for (size_t i = 0; i < r->n_chain; i++) {
		const unsigned char *p = r->chain[i].data;
		X509 *x = d2i_X509(NULL, &p, (long)r->chain[i].len);
		int ok = x && PEM_write_bio_X509(b, x) == 1;
		X509_free(x);
		if (!ok) {
			BIO_free(b);
			return fleet_errctx_openssl(ec, FLEET_E_CRYPTO,
						    "cannot encode chain[%zu] as PEM", i);
		}
	}
	if ((n = BIO_get_mem_data(b, &pem)) <= 0) {
		BIO_free(b);
		return fleet_errctx_msg(ec, FLEET_E_CRYPTO, "no chain to write");
	}
	e = tink_write_file(dir, base, pem, (size_t)n, 0644, ec);
	BIO_free(b);
	return e;
}

fleet_err fj_write_identity(const char *key_path, const char *chain_path, EVP_PKEY *key,
			    const struct fleet_join_response *r, struct fleet_errctx *ec)
{
	struct fj_key k = {.pkey = key};

	return fj_write_identity_key(key_path, chain_path, &k, r, ec);
}

fleet_err fj_write_identity_key(const char *key_path, const char *chain_path,
				const struct fj_key *key, const struct fleet_join_response *r,
				struct fleet_errctx *ec)
{
	fleet_err e;

	if (!key_path || !chain_path || !key || (!key->in_tpm && !key->pkey) || !r ||
	    r->status != FLEET_JOIN_JOINED || r->n_chain < 1)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no joined answer to write");
	/* The key first: a chain is never left naming a key not on disk. */
	if ((e = write_key(key_path, key, ec)) != FLEET_OK)
		return e;
	return write_chain(chain_path, r, ec);
}

/* ---- the runs ------------------------------------------------------------ */

static double real_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void real_sleep(void *ctx, unsigned seconds)
{
	struct timespec ts = {.tv_sec = (time_t)seconds};

	(void)ctx;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double clock_now(const struct fj_clock *c)
{
	return c && c->now ? c->now(c->ctx) : real_now(NULL);
}

static void clock_sleep(const struct fj_clock *c, unsigned s)
{
	if (c && c->sleep)
		c->sleep(c->ctx, s);
	else
		real_sleep(NULL, s);
}

static int say(struct fj_result *res, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int say(struct fj_result *res, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->message, sizeof(res->message), fmt, ap);
	va_end(ap);
	return code;
}

static int say_ec(struct fj_result *res, int code, const char *what, const struct fleet_errctx *ec)
{
	char text[sizeof(ec->detail) + sizeof(ec->ossl) + 80];

	return say(res, code, "%s: %s", what, fleet_errctx_text(ec, text, sizeof(text)));
}

static int64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_request(const char *path, const struct fleet_buf *body, struct fj_result *res)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		say(res, FJ_EXIT_LOCAL, "--dump-request %s: %s", path, strerror(errno));
		return -1;
	}
	size_t off = 0;
	while (off < body->len) {
		ssize_t w = write(fd, body->data + off, body->len - off);
		if (w <= 0) {
			close(fd);
			say(res, FJ_EXIT_LOCAL, "--dump-request %s: %s", path, strerror(errno));
			return -1;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0) {
		say(res, FJ_EXIT_LOCAL, "--dump-request %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Send req to path until an answer ends it (FJ8): FJ_EXIT_OK with *resp
 * the verified joined answer and *signer its CA; every other exit with
 * res->message saying why. The same bytes are sent every time (FJ1).
 */
/* *t0 (0: now) is when the run began, for --max-wait across calls. With
 * restart, a pending answer is waited out once and returned as
 * FJ_EXIT_PENDING with *restart set: the caller asks again from its first
 * round (the tpm attestor's challenge state lasts minutes, an operator's
 * decision may take hours: a fresh challenge follows the wait, as the spec's
 * agent does). */
static int exchange(const char *path, const struct fleet_buf *req, const struct fj_pins *pins,
		    const struct fj_expect *x, unsigned max_wait, const struct tink_transport *tx,
		    const struct fj_clock *clk, struct fleet_join_response *resp,
		    struct fj_result *res, double *t0, bool *restart)
{
	if (*t0 == 0)
		*t0 = clock_now(clk);
	double start = *t0;
	struct fleet_buf reply;
	int rc;

	bool deferred = false;
	fb_init(&reply);
	for (;;) {
		struct fleet_errctx ec = {0};
		long http = 0;
		enum tink_tx_result t =
			tx->post(tx->ctx, path, req, FLEET_JOIN_MAX_ENVELOPE, &reply, &http, &ec);
		/* Once fleetd has deferred the join, the request is its store's:
		 * a fleetd that restarts meanwhile answers it later, so a lost
		 * connection is waited out within max_wait like the deferral. */
		if (t != TINK_TX_OK && deferred && clock_now(clk) - start + 1 <= (double)max_wait) {
			clock_sleep(clk, 1);
			continue;
		}
		if (t != TINK_TX_OK) {
			rc = say_ec(res, FJ_EXIT_FAILED, "fleetd did not answer", &ec);
			break;
		}
		/* The signature decides, not the HTTP status: a signed answer
		 * is believed whatever the status line said. */
		if (fj_answer_verify(pins, reply.data, reply.len, x, resp, NULL, &ec) != FLEET_OK) {
			char what[96];
			snprintf(what, sizeof(what), "fleetd's answer (HTTP %ld) refused (%s)", http,
				 ec.reason ? ec.reason : "unreadable");
			rc = say_ec(res, FJ_EXIT_FAILED, what, &ec);
			break;
		}
		if (resp->status == FLEET_JOIN_JOINED) {
			rc = FJ_EXIT_OK;
			break;
		}
		if (resp->status == FLEET_JOIN_DENIED) {
			rc = say(res, FJ_EXIT_DENIED, "access denied");
			break;
		}
		if (resp->status == FLEET_JOIN_CHALLENGE && x->answers_challenge) {
			rc = say(res, FJ_EXIT_CHALLENGE, "the %s attestor's challenge (until %lld)",
				 resp->deferral.attestor, (long long)resp->deferral.not_after);
			break;
		}
		if (resp->status == FLEET_JOIN_CHALLENGE) {
			rc = say(res, FJ_EXIT_CHALLENGE,
				 "the %s attestor answered with a challenge (until %lld); fleet-join "
				 "answers only the tpm attestor's",
				 resp->deferral.attestor, (long long)resp->deferral.not_after);
			break;
		}
		/* pending: the same request again, after the wait it asks for,
		 * unless that wait ends past --max-wait */
		unsigned wait = resp->deferral.retry_after_seconds;
		double waited = clock_now(clk) - start;
		if (waited + wait > (double)max_wait) {
			rc = say(res, FJ_EXIT_PENDING,
				 "still pending (request %s) after %.0f s; the next try in %u s "
				 "would pass --max-wait %u",
				 resp->deferral.request_id, waited, wait, max_wait);
			break;
		}
		fprintf(stderr, "fleet-join: pending (request %s): trying again in %u s\n",
			resp->deferral.request_id, wait);
		fleet_join_response_free(resp);
		clock_sleep(clk, wait);
		if (restart) {
			*restart = true;
			rc = FJ_EXIT_PENDING;
			break;
		}
	}
	if (rc != FJ_EXIT_OK && !(rc == FJ_EXIT_CHALLENGE && x->answers_challenge))
		fleet_join_response_free(resp);
	fb_free(&reply);
	return rc;
}

/* A joined answer's files and node id. */
static int joined(const char *key_path, const char *chain_path, const struct fj_key *key,
		  const struct fleet_join_response *resp, struct fj_result *res)
{
	struct fleet_errctx ec = {0};

	if (fj_write_identity_key(key_path, chain_path, key, resp, &ec) != FLEET_OK)
		return say_ec(res, FJ_EXIT_LOCAL, "joined, but the identity was not written", &ec);
	snprintf(res->node_id, sizeof(res->node_id), "%s", resp->node_id);
	return say(res, FJ_EXIT_OK, "joined as %s: key %s, chain %s", resp->node_id, key_path,
		   chain_path);
}

int fj_key_open(struct fj_key *k, const char *tcti, struct tink_tpm *t, bool *t_open,
		struct fj_result *res)
{
	struct fleet_errctx ec = {0};

	*t_open = false;
	if (!k->in_tpm)
		return FJ_EXIT_OK;
	if (!tcti || !tcti[0])
		return say(res, FJ_EXIT_USAGE, "the key is TPM-held (" FJ_TPM_KEY_PEM "): --tcti "
					       "names its TPM");
	if (tink_tpm_open(t, tcti) != 0)
		return say(res, FJ_EXIT_LOCAL, "the key is in the TPM, which is unavailable: %s",
			   t->err);
	*t_open = true;
	if (fj_key_attach(k, t, &ec) != FLEET_OK)
		return say_ec(res, FJ_EXIT_LOCAL, "the key in the TPM", &ec);
	return FJ_EXIT_OK;
}

/* The attestation of x509pop (FJ5). */
static int x509pop_attestation(const struct fj_join_opts *o, const struct fleet_buf *csr,
			       struct fleet_buf *att, struct fj_result *res)
{
	struct fleet_errctx ec = {0};
	struct fj_pins chain;
	struct fj_key k;
	struct fleet_wire_bytes c = {csr->data, csr->len};
	struct tink_tpm t;
	bool t_open = false;
	int rc = FJ_EXIT_OK;
	fleet_err e;

	if (!o->x509pop_cert || !o->x509pop_key || !o->node_id)
		return say(res, FJ_EXIT_USAGE,
			   "--attestor x509pop needs --x509pop-cert, --x509pop-key and --node-id");
	if (fj_chain_read(o->x509pop_cert, &chain, &ec) != FLEET_OK)
		return say_ec(res, FJ_EXIT_USAGE, "--x509pop-cert", &ec);
	if (fj_key_load(o->x509pop_key, &k, &ec) != FLEET_OK) {
		fj_pins_free(&chain);
		return say_ec(res, FJ_EXIT_USAGE, "--x509pop-key", &ec);
	}
	if ((rc = fj_key_open(&k, o->tcti, &t, &t_open, res)) != FJ_EXIT_OK)
		goto out;
	e = fj_x509pop_build_key(&k, &chain, o->node_id, &c, unix_ms(), att, &ec);
	if (e != FLEET_OK)
		rc = say_ec(res, fleet_err_code(e) == FLEET_CODE_INVALID_ARG ||
					 fleet_err_code(e) == FLEET_CODE_UNSUPPORTED
				 ? FJ_EXIT_USAGE
				 : FJ_EXIT_LOCAL,
			    "x509pop", &ec);
out:
	fj_key_free(&k);
	if (t_open)
		tink_tpm_close(&t);
	fj_pins_free(&chain);
	return rc;
}

/* FJ9: the TPM of --attestor tpm, open, its EK read and its node key's CSR
 * made (key the key's public half). The round-1 attestation into att. */
struct tpm_join {
	bool open;
	struct tink_tpm t;
	struct tink_ek ek;
	struct fleet_buf event_log;
};

static int tpm_join_start(const struct fj_join_opts *o, struct tpm_join *tj, struct fj_key *key,
			  struct fleet_buf *csr, struct fleet_buf *att, struct fj_result *res)
{
	static const struct fleet_file_policy log_policy =
		FLEET_FILE_POLICY_DATA("the event log", FLEET_TPM_MAX_EVENTLOG);
	struct fleet_errctx ec = {0};

	if (!o->tcti || !o->tcti[0])
		return say(res, FJ_EXIT_USAGE, "--attestor tpm needs --tcti (the TPM)");
	if (o->token_file)
		return say(res, FJ_EXIT_USAGE, "--attestor tpm sends no token: the TPM is the "
					       "credential (drop --token-file)");
	if (o->key_gen > TINK_NODE_MAX_GEN)
		return say(res, FJ_EXIT_USAGE, "--key-generation %u: 0..%u", o->key_gen,
			   TINK_NODE_MAX_GEN);
	if (o->event_log) {
		fleet_err e = fleet_file_read(AT_FDCWD, o->event_log, &log_policy, &tj->event_log,
					      &ec);
		if (e != FLEET_OK) {
			fleet_errctx_wrap(&ec, e, "cannot read ", NULL);
			return say_ec(res, FJ_EXIT_USAGE, "--event-log", &ec);
		}
	}
	if (tink_tpm_open(&tj->t, o->tcti) != 0)
		return say(res, FJ_EXIT_LOCAL, "the TPM: %s", tj->t.err);
	tj->open = true;
	key->in_tpm = true;
	key->gen = o->key_gen;
	key->tpm = &tj->t;
	if (tink_node_csr(&tj->t, key->gen, csr, &key->pkey) != 0)
		return say(res, FJ_EXIT_LOCAL, "the node key in the TPM: %s", tj->t.err);
	if (fj_tpm_round1(&tj->t, &tj->ek, att, &ec) != FLEET_OK)
		return say_ec(res, FJ_EXIT_LOCAL, "the tpm attestor's round 1", &ec);
	return FJ_EXIT_OK;
}

static void tpm_join_end(struct tpm_join *tj)
{
	tink_ek_free(&tj->ek);
	fb_free(&tj->event_log);
	if (tj->open)
		tink_tpm_close(&tj->t);
	tj->open = false;
}

int fj_join(const struct fj_join_opts *o, const struct fj_pins *pins,
	    const struct tink_transport *tx, const struct fj_clock *clk, struct fj_result *res)
{
	static const struct fleet_file_policy att_policy =
		FLEET_FILE_POLICY_DATA("the discovery assertion", FLEET_JOIN_MAX_ATTESTATION);
	const char *attestor = o->attestor ? o->attestor : "";
	bool tpm = strcmp(attestor, FJ_TPM_ATTESTOR) == 0;
	struct fleet_join_request req;
	struct fleet_join_response resp;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr, sealed, att, body;
	struct tpm_join tj;
	struct fj_key key = {0};
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	memset(&tj, 0, sizeof(tj));
	fb_init(&tj.event_log);
	fb_init(&csr);
	/* A round-2 attestation holds the activated secret: wiped as well. */
	fb_init_secret(&att, FLEET_JOIN_MAX_ATTESTATION);
	/* The sealed token and the request that carries it are bearer
	 * credentials: wiped when freed. */
	fb_init_secret(&sealed, FLEET_SEAL_MAX_SEALED);
	fb_init_secret(&body, FLEET_JOIN_MAX_REQUEST);
	if (strlen(attestor) > FLEET_JOIN_MAX_ATTESTOR || o->n_macs > FLEET_JOIN_MAX_MACS ||
	    (o->product_uuid && strlen(o->product_uuid) > FLEET_JOIN_UUID_LEN)) {
		rc = say(res, FJ_EXIT_USAGE, "an attestor, MAC or UUID too long, or too many MACs");
		goto out;
	}
	if (!tpm && (o->event_log || (o->tcti && strcmp(attestor, "x509pop") != 0))) {
		rc = say(res, FJ_EXIT_USAGE, "--event-log is for --attestor tpm, --tcti for tpm and "
					     "a TPM-held --x509pop-key");
		goto out;
	}
	if (tpm) {
		if ((rc = tpm_join_start(o, &tj, &key, &csr, &att, res)) != FJ_EXIT_OK)
			goto out;
	} else if (fj_key_csr(&key.pkey, &csr, &ec) != FLEET_OK) {
		rc = say_ec(res, FJ_EXIT_LOCAL, "the key", &ec);
		goto out;
	}
	if (o->token_file && fj_token_read(o->token_file, o->seal_pub, &sealed, &ec) != FLEET_OK) {
		rc = say_ec(res, FJ_EXIT_USAGE, "--token-file", &ec);
		goto out;
	}
	if (strcmp(attestor, "x509pop") == 0) {
		if ((rc = x509pop_attestation(o, &csr, &att, res)) != FJ_EXIT_OK)
			goto out;
	} else if (strcmp(attestor, "discovery") == 0) {
		if (!o->discovery_file) {
			rc = say(res, FJ_EXIT_USAGE, "--attestor discovery needs --discovery-file");
			goto out;
		}
		/* Carried as it is: the boot server's signature is over its bytes. */
		fleet_err e = fleet_file_read(AT_FDCWD, o->discovery_file, &att_policy, &att, &ec);
		if (e != FLEET_OK) {
			fleet_errctx_wrap(&ec, e, "cannot read ", NULL);
			rc = say_ec(res, FJ_EXIT_USAGE, "--discovery-file", &ec);
			goto out;
		}
		if (att.len == 0) {
			rc = say(res, FJ_EXIT_USAGE, "--discovery-file %s is empty",
				 o->discovery_file);
			goto out;
		}
	}
	memcpy(req.attestor, attestor, strlen(attestor) + 1);
	req.has_token = sealed.len > 0;
	req.token = (struct fleet_wire_bytes){sealed.len ? sealed.data : NULL, sealed.len};
	req.csr = (struct fleet_wire_bytes){csr.data, csr.len};
	req.role = o->role ? o->role : FLEET_JOIN_ROLE_NODE;
	req.n_macs = o->n_macs;
	for (size_t i = 0; i < o->n_macs; i++)
		snprintf(req.macs[i], sizeof(req.macs[i]), "%s", o->macs[i]);
	if (o->product_uuid)
		snprintf(req.product_uuid, sizeof(req.product_uuid), "%s", o->product_uuid);
	struct fj_expect x = {.csr = &req.csr,
			      .key = key.pkey,
			      .attestor = attestor,
			      .role = fleet_join_role_name(req.role),
			      .answers_challenge = tpm};
	double t0 = 0;
	/* FJ9: the same CSR each round, the attestation the round's. */
	for (unsigned round = 0;; round++) {
		req.has_attestation = att.len > 0;
		req.attestation = (struct fleet_wire_bytes){att.len ? att.data : NULL, att.len};
		fb_reset(&body);
		/* The encoder holds JW4/JW5: what it refuses was never sendable. */
		if (fleet_join_request_encode(&req, &body) != FLEET_OK) {
			rc = say(res, FJ_EXIT_USAGE,
				 "the request cannot be sent: the attestor, role, a MAC or the UUID "
				 "is not in its form (lib/join_wire.h JW4, JW5), or a field is over "
				 "its cap");
			goto out;
		}
		if (o->dump_request && write_request(o->dump_request, &body, res) != 0) {
			rc = FJ_EXIT_LOCAL;
			goto out;
		}
		bool again = false;
		rc = exchange("/v1/join", &body, pins, &x, o->max_wait, tx, clk, &resp, res, &t0,
			      tpm ? &again : NULL);
		if (rc == FJ_EXIT_PENDING && again) {
			/* Waited for an operator: round 1 again, a fresh challenge. */
			struct fleet_errctx ec1 = {0};
			fb_reset(&att);
			tink_ek_free(&tj.ek); /* round 1 reads it again */
			if (fj_tpm_round1(&tj.t, &tj.ek, &att, &ec1) != FLEET_OK) {
				rc = say_ec(res, FJ_EXIT_LOCAL, "the tpm attestor's round 1", &ec1);
				goto out;
			}
			round = (unsigned)-1; /* the loop's ++ starts the count again */
			continue;
		}
		if (rc != FJ_EXIT_CHALLENGE || !tpm)
			break;
		if (round == FJ_MAX_CHALLENGES) {
			rc = say(res, FJ_EXIT_CHALLENGE,
				 "the tpm attestor still challenges after %d answers for this CSR",
				 FJ_MAX_CHALLENGES);
			break;
		}
		fleet_err e = fj_tpm_round2(&tj.t, &tj.ek, key.gen, &resp.deferral.payload, &req.csr,
					    o->event_log ? &tj.event_log : NULL, &att, &ec);
		fleet_join_response_free(&resp);
		if (e != FLEET_OK) {
			rc = say_ec(res, FJ_EXIT_LOCAL, "answering the tpm challenge", &ec);
			goto out;
		}
		fprintf(stderr, "fleet-join: the tpm attestor's challenge answered (round %u)\n",
			round + 2);
	}
	if (rc == FJ_EXIT_OK)
		rc = joined(o->key_out, o->cert_out, &key, &resp, res);
out:
	/* req borrows every byte field: it is wiped, not freed. */
	OPENSSL_cleanse(&req, sizeof(req));
	fleet_join_response_free(&resp);
	fj_key_free(&key);
	tpm_join_end(&tj);
	fb_free(&csr);
	fb_free(&att);
	fb_free(&sealed);
	fb_free(&body);
	return rc;
}

/* FJ11: what the renewal needs of the TPM: the current key's public half,
 * and with an AK statement, that AK's name equal to it. */
static int renew_tpm_checks(const struct fj_renew_opts *o, struct tink_tpm *t, bool *t_open,
			    struct fj_key *cur, X509 *leaf, bool *names_ak,
			    struct fj_result *res)
{
	struct fleet_errctx ec = {0};
	uint8_t want[TINK_NAME_MAX], have[TINK_NAME_MAX];
	size_t want_len = 0, have_len = 0;
	TPM2B_PUBLIC ak;

	if (fj_leaf_ak_statement(leaf, names_ak, want, sizeof(want), &want_len, &ec) != FLEET_OK)
		return say_ec(res, FJ_EXIT_LOCAL, "renewal: --cert's leaf", &ec);
	if (*names_ak && !cur->in_tpm)
		return say(res, FJ_EXIT_LOCAL,
			   "renewal: the certificate names a TPM attestation key, and --key %s is "
			   "a software key: the certificate cannot be renewed with it (no "
			   "fallback to a software key); join again with --attestor tpm",
			   o->key);
	if (!cur->in_tpm && !*names_ak)
		return FJ_EXIT_OK; /* a software key renews as before */
	int rc = fj_key_open(cur, o->tcti, t, t_open, res);
	if (rc != FJ_EXIT_OK) {
		char why[sizeof(res->message)];
		snprintf(why, sizeof(why), "%s", res->message);
		return say(res, rc, "renewal: the certificate's node key (--key %s): %s", o->key,
			   why);
	}
	if (EVP_PKEY_eq(X509_get0_pubkey(leaf), cur->pkey) != 1) {
		ERR_clear_error();
		return say(res, FJ_EXIT_LOCAL,
			   "renewal: the node key does not match the node certificate: the TPM "
			   "derives another key from %s (was the TPM cleared?); join again",
			   o->key);
	}
	if (!*names_ak)
		return FJ_EXIT_OK;
	if (tink_ak_name(t, &ak, have, &have_len) != 0)
		return say(res, FJ_EXIT_LOCAL, "renewal: the TPM's attestation key: %s", t->err);
	if (have_len != want_len || memcmp(have, want, have_len) != 0)
		return say(res, FJ_EXIT_LOCAL,
			   "renewal: this TPM's attestation key is not the one the certificate "
			   "names (another TPM, or its endorsement seed changed): the certificate "
			   "cannot be renewed here; join again with --attestor tpm");
	return FJ_EXIT_OK;
}

int fj_renew(const struct fj_renew_opts *o, const struct fj_pins *pins,
	     const struct tink_transport *tx, const struct fj_clock *clk, struct fj_result *res)
{
	struct fleet_renew_request req;
	struct fleet_join_response resp;
	struct fleet_errctx ec = {0};
	struct fleet_buf csr, input, body;
	struct fj_pins chain = {0};
	struct fj_key cur = {0}, key = {0};
	struct tink_tpm t;
	bool t_open = false, names_ak = false;
	int rc;
	fleet_err e;

	memset(res, 0, sizeof(*res));
	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	memset(&t, 0, sizeof(t));
	fb_init(&csr);
	fb_init(&input);
	fb_init(&body);
	if (fj_key_load(o->key, &cur, &ec) != FLEET_OK) {
		rc = say_ec(res, FJ_EXIT_USAGE, "--key", &ec);
		goto out;
	}
	if (fj_chain_read(o->cert, &chain, &ec) != FLEET_OK) {
		rc = say_ec(res, FJ_EXIT_USAGE, "--cert", &ec);
		goto out;
	}
	if ((rc = renew_tpm_checks(o, &t, &t_open, &cur, chain.certs[0], &names_ak, res)) !=
	    FJ_EXIT_OK)
		goto out;
	if (!cur.in_tpm && EVP_PKEY_eq(X509_get0_pubkey(chain.certs[0]), cur.pkey) != 1) {
		ERR_clear_error();
		rc = say(res, FJ_EXIT_USAGE, "--key %s is not the key of --cert %s's leaf", o->key,
			 o->cert);
		goto out;
	}
	/* The next key: the TPM's next generation for a TPM-held key, never
	 * a file key where the certificate names an AK (FJ11). */
	if (cur.in_tpm) {
		if (cur.gen >= TINK_NODE_MAX_GEN) {
			rc = say(res, FJ_EXIT_LOCAL, "renewal: node key generation %u is the last",
				 cur.gen);
			goto out;
		}
		key.in_tpm = true;
		key.gen = cur.gen + 1;
		key.tpm = &t;
		if (tink_node_csr(&t, key.gen, &csr, &key.pkey) != 0) {
			rc = say(res, FJ_EXIT_LOCAL, "renewal: the next node key in the TPM: %s",
				 t.err);
			goto out;
		}
	} else if (fj_key_csr(&key.pkey, &csr, &ec) != FLEET_OK) {
		rc = say_ec(res, FJ_EXIT_LOCAL, "the key", &ec);
		goto out;
	}
	struct fleet_wire_bytes sent = {csr.data, csr.len};
	if (names_ak) {
		if (fj_tpm_key_attestation(&t, key.gen, &sent, &req.key_attestation, &ec) !=
		    FLEET_OK) {
			rc = say_ec(res, FJ_EXIT_LOCAL, "renewal", &ec);
			goto out;
		}
		req.has_key_attestation = true;
	}
	if (cert_der(chain.certs[0], &req.cert) != FLEET_OK) {
		rc = say(res, FJ_EXIT_USAGE, "--cert %s: the leaf cannot be encoded", o->cert);
		goto out;
	}
	/* The proof: the current key over the new CSR and the current leaf. */
	if (fleet_renew_signing_input(csr.data, csr.len, req.cert.data, req.cert.len, &input) !=
	    FLEET_OK) {
		rc = say(res, FJ_EXIT_USAGE, "--cert %s: the leaf is over %d bytes", o->cert,
			 FLEET_JOIN_MAX_CERT);
		goto out;
	}
	if ((e = fj_key_sign(&cur, input.data, input.len, req.sig, &ec)) != FLEET_OK) {
		rc = say_ec(res, fleet_err_code(e) == FLEET_CODE_UNSUPPORTED ? FJ_EXIT_USAGE
									      : FJ_EXIT_LOCAL,
			    "--key", &ec);
		goto out;
	}
	req.csr = sent;
	e = fleet_renew_request_encode(&req, &body);
	req.csr = (struct fleet_wire_bytes){NULL, 0}; /* csr's, freed with it */
	if (e != FLEET_OK) {
		rc = say(res, FJ_EXIT_LOCAL, "the renew request cannot be encoded");
		goto out;
	}
	/* renew is no attestor's: "" never challenges, so a challenge is refused */
	struct fj_expect x = {.csr = &sent, .key = key.pkey, .attestor = ""};
	double t0 = 0;
	rc = exchange("/v1/renew", &body, pins, &x, o->max_wait, tx, clk, &resp, res, &t0, NULL);
	if (rc == FJ_EXIT_OK)
		rc = joined(o->key, o->cert, &key, &resp, res);
out:
	fleet_renew_request_free(&req);
	fleet_join_response_free(&resp);
	fj_pins_free(&chain);
	fj_key_free(&cur);
	fj_key_free(&key);
	if (t_open)
		tink_tpm_close(&t);
	fb_free(&csr);
	fb_free(&input);
	fb_free(&body);
	return rc;
}
