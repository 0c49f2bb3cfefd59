/*
 * join_evidence.c: the token-based attestors' evidence, the discovery
 * assertion and the renewal's request, their signing inputs and ES256
 * (lib/join_evidence.h is the format and its rules JE1..JE6). The JSON goes
 * through the checked readers of attest_wire_json.c, as join_wire.c's does;
 * each value has one predicate that the decoder and the encoder both use,
 * so an encoder cannot write what its decoder refuses (JE3).
 */
#include "lib/join_evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>

#include "lib/attest_wire_json.h"

_Static_assert(FLEET_JOIN_MAX_CERT <= FLEET_WIRE_MAX_CERT, "chain entries are certificates");
_Static_assert(FLEET_JOIN_MAX_ATTESTATION <= FLEET_WIRE_MAX_BODY, "wj_load's cap is the outer one");
_Static_assert(FLEET_JOIN_MAX_REQUEST <= FLEET_WIRE_MAX_BODY, "wj_load's cap is the outer one");
_Static_assert(FLEET_EVIDENCE_MAX_BODY <= FLEET_JOIN_MAX_ATTESTATION,
	       "an assertion's body fits in the attestation that carries it");
_Static_assert(FLEET_JOIN_MAX_ID <= 255, "a node id's length is one byte of the x509pop input");

/* ---- the predicates (JE2) ----------------------------------------------- */

#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define DIGITS "0123456789"
#define SET_ID LOWER DIGITS "_-"         /* nodeId, signer: node ids (JW7) */
#define SET_SITE LOWER DIGITS "-"        /* a site's name */
#define SET_IP DIGITS "abcdef.:"         /* an IPv4 or IPv6 literal, lowercase */
#define SET_WORKFLOW LOWER DIGITS "._-"  /* a workflow's name */
/* epoch 1..2^53: the integers a JSON reader that holds numbers as doubles
 * still reads exactly. */
#define EPOCH_MAX (1LL << 53)
#define CLIENT_TIME_MAX (FLEET_JOIN_MAX_NOT_AFTER * 1000)

/* min..max bytes, each one of set; s need not be terminated past max. */
static bool chars_ok(const char *s, size_t min, size_t max, const char *set)
{
	size_t n = strnlen(s, max + 1);

	if (n < min || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr(set, s[i])) /* s[i] is never the NUL strchr would find */
			return false;
	return true;
}

static bool node_id_ok(const char *s)
{
	return chars_ok(s, 1, FLEET_JOIN_MAX_ID, SET_ID);
}

/* 8-4-4-4-12 lowercase hex: the spelling of join_wire.c's
 * claims.product_uuid (JW5), so a claim and an assertion compare as bytes. */
static bool uuid_ok(const char *s)
{
	if (strnlen(s, FLEET_JOIN_UUID_LEN + 1) != FLEET_JOIN_UUID_LEN)
		return false;
	for (size_t i = 0; i < FLEET_JOIN_UUID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		char c = s[i];
		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

static bool mac_ok(const char *s)
{
	return strnlen(s, FLEET_WIRE_MAC_LEN + 1) == FLEET_WIRE_MAC_LEN && wj_mac_ok(s);
}

static bool bytes_none(const struct fleet_wire_bytes *b)
{
	return !b->data && b->len == 0;
}

static bool time_ok(int64_t t)
{
	return t >= 1 && t <= FLEET_JOIN_MAX_NOT_AFTER;
}

static bool client_time_ok(int64_t ms)
{
	return ms >= 0 && ms <= CLIENT_TIME_MAX;
}

/* ---- shared reading steps ----------------------------------------------- */


/* A string of min..max bytes of set; what names the set in the detail. */
static fleet_err chars_read(const json_t *v, const char *path, size_t min, size_t max,
			    const char *set, const char *what, char *dst, struct fleet_errctx *ec)
{
	fleet_err e = wj_string(v, path, min, max, dst, ec);

	if (e == FLEET_OK && !chars_ok(dst, min, max, set))
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not of %s", path, what);
	return e;
}

/* An optional string: absent leaves dst "". */
static fleet_err optional_chars(const json_t *obj, const char *key, size_t max, const char *set,
				const char *what, char *dst, struct fleet_errctx *ec)
{
	const json_t *v = json_object_get(obj, key);

	return v ? chars_read(v, key, 1, max, set, what, dst, ec) : FLEET_OK;
}

/* An integer of Unix seconds (JE2). */
static fleet_err time_read(const json_t *v, const char *path, int64_t *out,
			   struct fleet_errctx *ec)
{
	json_int_t n;
	fleet_err e = wj_int(v, path, 1, FLEET_JOIN_MAX_NOT_AFTER, &n, ec);

	if (e == FLEET_OK)
		*out = (int64_t)n;
	return e;
}

/* ---- x509pop ------------------------------------------------------------ */

static const char *const x509pop_keys[] = {"v", "nodeId", "chain", "clientTime", "sig", NULL};

static fleet_err chain_read(const json_t *v, struct fleet_x509pop_evidence *out,
			    struct fleet_errctx *ec)
{
	return fleet_join_chain_read(v, out->chain, &out->n_chain, ec);
}

fleet_err fleet_x509pop_decode(const uint8_t *msg, size_t len, struct fleet_x509pop_evidence *out,
			       struct fleet_errctx *ec)
{
	json_t *root = NULL;
	json_int_t t;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_ATTESTATION, "x509pop evidence",
			      x509pop_keys, &root, ec));
	WJ_TRY(chars_read(json_object_get(root, "nodeId"), "nodeId", 1, FLEET_JOIN_MAX_ID, SET_ID,
			  "a-z 0-9 _ -", out->node_id, ec));
	WJ_TRY(chain_read(json_object_get(root, "chain"), out, ec));
	WJ_TRY(wj_int(json_object_get(root, "clientTime"), "clientTime", 0, CLIENT_TIME_MAX, &t,
		      ec));
	out->client_time_ms = (int64_t)t;
	WJ_TRY(wj_fixed(json_object_get(root, "sig"), "sig", out->sig, FLEET_ES256_SIG_LEN, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_x509pop_free(out);
	return e;
}

static bool x509pop_ok(const struct fleet_x509pop_evidence *in)
{
	if (!node_id_ok(in->node_id) || in->n_chain < 1 || in->n_chain > FLEET_JOIN_MAX_CHAIN ||
	    !client_time_ok(in->client_time_ms))
		return false;
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		if (i < in->n_chain ? !wj_bytes_ok(&in->chain[i], FLEET_JOIN_MAX_CERT)
				    : !bytes_none(&in->chain[i]))
			return false;
	return true;
}

fleet_err fleet_x509pop_encode(const struct fleet_x509pop_evidence *in, struct fleet_buf *out)
{
	json_t *root, *a;
	int rc = 0;

	if (!in || !out || !x509pop_ok(in))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_string(root, "nodeId", in->node_id);
	if (!(a = json_array()) || json_object_set_new(root, "chain", a) != 0)
		rc = -1;
	for (size_t i = 0; rc == 0 && i < in->n_chain; i++)
		rc |= json_array_append_new(a, wj_bytes_value(in->chain[i].data, in->chain[i].len));
	rc |= json_object_set_new(root, "clientTime", json_integer((json_int_t)in->client_time_ms));
	rc |= wj_put_bytes(root, "sig", in->sig, FLEET_ES256_SIG_LEN);
	return wj_end(root, rc, out);
}

void fleet_x509pop_free(struct fleet_x509pop_evidence *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		wj_bytes_free(&m->chain[i]);
	OPENSSL_cleanse(m, sizeof(*m));
}

fleet_err fleet_x509pop_signing_input(const uint8_t csr_sha256[32], const char *node_id,
				      int64_t client_time_ms, struct fleet_buf *out)
{
	size_t n;

	/* The decoder's predicates: an input no evidence could carry is never
	 * signed (JE4). */
	if (!csr_sha256 || !node_id || !out || !node_id_ok(node_id) ||
	    !client_time_ok(client_time_ms))
		return FLEET_E_INVALID_ARG;
	n = strlen(node_id);
	fb_put(out, FLEET_X509POP_PURPOSE, sizeof(FLEET_X509POP_PURPOSE)); /* with its NUL */
	fb_put(out, csr_sha256, 32);
	fb_put_u8(out, (uint8_t)n);
	fb_put(out, node_id, n);
	fb_put_u32be(out, (uint32_t)((uint64_t)client_time_ms >> 32));
	fb_put_u32be(out, (uint32_t)((uint64_t)client_time_ms & 0xffffffffu));
	return fb_err(out);
}

/* ---- the discovery assertion, as carried -------------------------------- */

static const char *const signed_keys[] = {"v", "assertion", "cert", "sig", NULL};

fleet_err fleet_discovery_signed_decode(const uint8_t *msg, size_t len,
					struct fleet_discovery_signed *out, struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_ATTESTATION, "discovery attestation",
			      signed_keys, &root, ec));
	/* The body stays bytes: the signature is over them exactly, and they
	 * are read only once it verified (as join_wire's envelope, JW9). */
	WJ_TRY(wj_bytes(json_object_get(root, "assertion"), "assertion", FLEET_EVIDENCE_MAX_BODY,
			&out->body, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "cert"), "cert", FLEET_JOIN_MAX_CERT, &out->cert,
			ec));
	WJ_TRY(wj_fixed(json_object_get(root, "sig"), "sig", out->sig, FLEET_ES256_SIG_LEN, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_discovery_signed_free(out);
	return e;
}

fleet_err fleet_discovery_signed_encode(const struct fleet_discovery_signed *in,
					struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !wj_bytes_ok(&in->body, FLEET_EVIDENCE_MAX_BODY) ||
	    !wj_bytes_ok(&in->cert, FLEET_JOIN_MAX_CERT))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_bytes(root, "assertion", in->body.data, in->body.len);
	rc |= wj_put_bytes(root, "cert", in->cert.data, in->cert.len);
	rc |= wj_put_bytes(root, "sig", in->sig, FLEET_ES256_SIG_LEN);
	return wj_end(root, rc, out);
}

void fleet_discovery_signed_free(struct fleet_discovery_signed *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->body);
	wj_bytes_free(&m->cert);
	OPENSSL_cleanse(m, sizeof(*m));
}

/* ---- its body ----------------------------------------------------------- */

static const char *const body_keys[] = {"v",	       "site",	       "signer",   "epoch",
					"mac",	       "ip",	       "product_uuid", "workflow",
					"issued_at",   "not_after",    NULL};

fleet_err fleet_discovery_body_decode(const uint8_t *body, size_t len,
				      struct fleet_discovery_assertion *out,
				      struct fleet_errctx *ec)
{
	json_t *root = NULL;
	const json_t *v;
	json_int_t n;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(body, len, FLEET_EVIDENCE_MAX_BODY, "discovery assertion", body_keys,
			      &root, ec));
	WJ_TRY(chars_read(json_object_get(root, "site"), "site", 1, FLEET_EVIDENCE_SITE_MAX,
			  SET_SITE, "a-z 0-9 -", out->site, ec));
	WJ_TRY(chars_read(json_object_get(root, "signer"), "signer", 1, FLEET_JOIN_MAX_ID, SET_ID,
			  "a-z 0-9 _ -", out->signer, ec));
	WJ_TRY(wj_int(json_object_get(root, "epoch"), "epoch", 1, EPOCH_MAX, &n, ec));
	out->epoch = (int64_t)n;
	WJ_TRY(wj_string(json_object_get(root, "mac"), "mac", 0, FLEET_WIRE_MAC_LEN, out->mac, ec));
	if (!mac_ok(out->mac)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "mac: not a lowercase aa:bb:cc:dd:ee:ff");
		goto fail;
	}
	WJ_TRY(optional_chars(root, "ip", FLEET_EVIDENCE_IP_MAX, SET_IP, "0-9 a-f . :", out->ip,
			      ec));
	if ((v = json_object_get(root, "product_uuid"))) {
		WJ_TRY(wj_string(v, "product_uuid", FLEET_JOIN_UUID_LEN, FLEET_JOIN_UUID_LEN,
				 out->product_uuid, ec));
		if (!uuid_ok(out->product_uuid)) {
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					     "product_uuid: not a lowercase UUID");
			goto fail;
		}
	}
	WJ_TRY(optional_chars(root, "workflow", FLEET_EVIDENCE_WORKFLOW_MAX, SET_WORKFLOW,
			      "a-z 0-9 . _ -", out->workflow, ec));
	WJ_TRY(time_read(json_object_get(root, "issued_at"), "issued_at", &out->issued_at, ec));
	WJ_TRY(time_read(json_object_get(root, "not_after"), "not_after", &out->not_after, ec));
	if (out->issued_at > out->not_after) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "not_after: before issued_at");
		goto fail;
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	/* No byte fields: zeroing is the whole of freeing it (JE1). */
	OPENSSL_cleanse(out, sizeof(*out));
	return e;
}

/* An optional string is "" or valid; a string field must end within its
 * array, or reading it would run past. */
static bool body_ok(const struct fleet_discovery_assertion *in)
{
	return chars_ok(in->site, 1, FLEET_EVIDENCE_SITE_MAX, SET_SITE) &&
	       node_id_ok(in->signer) && in->epoch >= 1 && in->epoch <= EPOCH_MAX &&
	       mac_ok(in->mac) &&
	       (in->ip[0] == '\0' || chars_ok(in->ip, 1, FLEET_EVIDENCE_IP_MAX, SET_IP)) &&
	       (in->product_uuid[0] == '\0' || uuid_ok(in->product_uuid)) &&
	       (in->workflow[0] == '\0' ||
		chars_ok(in->workflow, 1, FLEET_EVIDENCE_WORKFLOW_MAX, SET_WORKFLOW)) &&
	       time_ok(in->issued_at) && time_ok(in->not_after) && in->issued_at <= in->not_after;
}

fleet_err fleet_discovery_body_encode(const struct fleet_discovery_assertion *in,
				      struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !body_ok(in))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_string(root, "site", in->site);
	rc |= wj_put_string(root, "signer", in->signer);
	rc |= json_object_set_new(root, "epoch", json_integer((json_int_t)in->epoch));
	rc |= wj_put_string(root, "mac", in->mac);
	if (in->ip[0])
		rc |= wj_put_string(root, "ip", in->ip);
	if (in->product_uuid[0])
		rc |= wj_put_string(root, "product_uuid", in->product_uuid);
	if (in->workflow[0])
		rc |= wj_put_string(root, "workflow", in->workflow);
	rc |= json_object_set_new(root, "issued_at", json_integer((json_int_t)in->issued_at));
	rc |= json_object_set_new(root, "not_after", json_integer((json_int_t)in->not_after));
	return wj_end(root, rc, out);
}

fleet_err fleet_discovery_signing_input(const uint8_t *body, size_t len, struct fleet_buf *out)
{
	if (!body || len == 0 || len > FLEET_EVIDENCE_MAX_BODY || !out)
		return FLEET_E_INVALID_ARG;
	fb_put(out, FLEET_DISCOVERY_PURPOSE, sizeof(FLEET_DISCOVERY_PURPOSE)); /* with its NUL */
	fb_put(out, body, len);
	return fb_err(out);
}

/* ---- the renewal -------------------------------------------------------- */

static const char *const renew_keys[] = {"v", "cert", "csr", "sig", "key_attestation", NULL};

fleet_err fleet_renew_request_decode(const uint8_t *msg, size_t len,
				     struct fleet_renew_request *out, struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_REQUEST, "renew request", renew_keys, &root,
			      ec));
	WJ_TRY(wj_bytes(json_object_get(root, "cert"), "cert", FLEET_JOIN_MAX_CERT, &out->cert,
			ec));
	WJ_TRY(wj_bytes(json_object_get(root, "csr"), "csr", FLEET_JOIN_MAX_CSR, &out->csr, ec));
	WJ_TRY(wj_fixed(json_object_get(root, "sig"), "sig", out->sig, FLEET_ES256_SIG_LEN, ec));
	const json_t *ka = json_object_get(root, "key_attestation");
	if (ka) {
		WJ_TRY(fleet_tpm_key_attestation_read(ka, "key_attestation", &out->key_attestation,
						      ec));
		out->has_key_attestation = true;
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_renew_request_free(out);
	return e;
}

fleet_err fleet_renew_request_encode(const struct fleet_renew_request *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !wj_bytes_ok(&in->cert, FLEET_JOIN_MAX_CERT) ||
	    !wj_bytes_ok(&in->csr, FLEET_JOIN_MAX_CSR))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_bytes(root, "cert", in->cert.data, in->cert.len);
	rc |= wj_put_bytes(root, "csr", in->csr.data, in->csr.len);
	rc |= wj_put_bytes(root, "sig", in->sig, FLEET_ES256_SIG_LEN);
	if (in->has_key_attestation) {
		json_t *ka = fleet_tpm_key_attestation_value(&in->key_attestation);
		rc |= ka ? json_object_set_new(root, "key_attestation", ka) : -1;
	}
	return wj_end(root, rc, out);
}

void fleet_renew_request_free(struct fleet_renew_request *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->cert);
	wj_bytes_free(&m->csr);
	fleet_tpm_key_attestation_free(&m->key_attestation);
	OPENSSL_cleanse(m, sizeof(*m));
}

fleet_err fleet_renew_signing_input(const uint8_t *csr, size_t csr_len, const uint8_t *leaf,
				    size_t leaf_len, struct fleet_buf *out)
{
	uint8_t h[2][32];

	/* What the request's decoder would refuse is never signed (JE4). */
	if (!csr || csr_len == 0 || csr_len > FLEET_JOIN_MAX_CSR || !leaf || leaf_len == 0 ||
	    leaf_len > FLEET_JOIN_MAX_CERT || !out)
		return FLEET_E_INVALID_ARG;
	if (EVP_Digest(csr, csr_len, h[0], NULL, EVP_sha256(), NULL) != 1 ||
	    EVP_Digest(leaf, leaf_len, h[1], NULL, EVP_sha256(), NULL) != 1) {
		ERR_clear_error();
		return FLEET_E_CRYPTO;
	}
	fb_put(out, FLEET_RENEW_PURPOSE, sizeof(FLEET_RENEW_PURPOSE)); /* with its NUL */
	fb_put(out, h, sizeof(h));
	return fb_err(out);
}

/* ---- ES256 (JE5) -------------------------------------------------------- */

/* The order n of P-256 (SEC 2, 2.4.2), big-endian. */
static const uint8_t p256_n[32] = {
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

/* An EC key on the named curve P-256, nothing else (explicit parameters
 * have no group name and are refused with the rest). */
static bool is_p256(EVP_PKEY *k)
{
	char name[64];
	size_t n = 0;
	bool ok = EVP_PKEY_get_base_id(k) == EVP_PKEY_EC &&
		  EVP_PKEY_get_group_name(k, name, sizeof(name), &n) == 1 &&
		  strcmp(name, SN_X9_62_prime256v1) == 0;

	ERR_clear_error(); /* a key without a group name leaves an entry */
	return ok;
}

/* 1 <= x < n, x 32 bytes big-endian. */
static bool scalar_ok(const uint8_t x[32])
{
	static const uint8_t zero[32];

	return memcmp(x, zero, 32) != 0 && memcmp(x, p256_n, 32) < 0;
}

fleet_err fleet_es256_sign(EVP_PKEY *key, const uint8_t *msg, size_t len,
			   uint8_t sig[FLEET_ES256_SIG_LEN], struct fleet_errctx *ec)
{
	EVP_MD_CTX *md = NULL;
	ECDSA_SIG *s = NULL;
	const BIGNUM *r_bn, *s_bn;
	unsigned char der[80]; /* P-256's DER signature is at most 72 bytes */
	const unsigned char *p = der;
	size_t n = sizeof(der);
	fleet_err e;

	if (!key || (!msg && len) || !sig)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "es256: no key, message or output");
	if (!is_p256(key))
		return fleet_errctx_refuse(ec, FLEET_E_UNSUPPORTED, FLEET_ES256_REASON_KEY,
					   "es256: the key is not an EC P-256 key");
	if (!(md = EVP_MD_CTX_new()))
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "EVP_MD_CTX_new");
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, der, &n, msg ? msg : (const uint8_t *)"", len) != 1) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "es256: EVP_DigestSign");
		goto out;
	}
	/* JOSE's form (RFC 7518 3.4): r and s, each left-padded to 32 bytes. */
	if (!(s = d2i_ECDSA_SIG(NULL, &p, (long)n)) || p != der + n) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "es256: the signature's DER");
		goto out;
	}
	ECDSA_SIG_get0(s, &r_bn, &s_bn);
	if (BN_bn2binpad(r_bn, sig, 32) != 32 || BN_bn2binpad(s_bn, sig + 32, 32) != 32) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "es256: r or s over 32 bytes");
		goto out;
	}
	e = FLEET_OK;
out:
	ECDSA_SIG_free(s);
	EVP_MD_CTX_free(md);
	return e;
}

fleet_err fleet_es256_verify(EVP_PKEY *pub, const uint8_t *msg, size_t len,
			     const uint8_t sig[FLEET_ES256_SIG_LEN], struct fleet_errctx *ec)
{
	EVP_MD_CTX *md = NULL;
	ECDSA_SIG *s = NULL;
	BIGNUM *r_bn = NULL, *s_bn = NULL;
	unsigned char *der = NULL;
	int n, ok;
	fleet_err e;

	if (!pub || (!msg && len) || !sig)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"es256: no key, message or signature");
	if (!is_p256(pub))
		return fleet_errctx_refuse(ec, FLEET_E_UNSUPPORTED, FLEET_ES256_REASON_KEY,
					   "es256: the key is not an EC P-256 key");
	/* Checked here, not left to the library: the rule is this file's, and
	 * a signature no signer could have made is refused before any math. */
	if (!scalar_ok(sig) || !scalar_ok(sig + 32))
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE,
					   "es256: r or s is 0 or not below the curve's order");
	if (!(s = ECDSA_SIG_new()) || !(r_bn = BN_bin2bn(sig, 32, NULL)) ||
	    !(s_bn = BN_bin2bn(sig + 32, 32, NULL)) || ECDSA_SIG_set0(s, r_bn, s_bn) != 1) {
		BN_free(r_bn);
		BN_free(s_bn);
		e = fleet_errctx_openssl(ec, FLEET_E_NOMEM, "es256: ECDSA_SIG");
		goto out;
	}
	/* s owns r_bn and s_bn now. */
	if ((n = i2d_ECDSA_SIG(s, &der)) <= 0) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "es256: i2d_ECDSA_SIG");
		goto out;
	}
	if (!(md = EVP_MD_CTX_new())) {
		e = fleet_errctx_openssl(ec, FLEET_E_NOMEM, "EVP_MD_CTX_new");
		goto out;
	}
	if (EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) != 1) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "es256: EVP_DigestVerifyInit");
		goto out;
	}
	ok = EVP_DigestVerify(md, der, (size_t)n, msg ? msg : (const uint8_t *)"", len);
	if (ok != 1) {
		/* A "no" leaves entries on the queue; the refusal is ours. */
		fleet_openssl_drain(NULL, 0);
		e = fleet_errctx_refuse(ec, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE,
					"es256: the signature is not the key's over these bytes");
		goto out;
	}
	e = FLEET_OK;
out:
	OPENSSL_free(der);
	ECDSA_SIG_free(s);
	EVP_MD_CTX_free(md);
	return e;
}
