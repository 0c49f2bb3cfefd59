/*
 * join_wire.c: encode and decode the join service's messages
 * (lib/join_wire.h is the format and its rules JW1..JW14), through the
 * checked readers of attest_wire_json.c. Each value has one predicate that
 * both directions use, so an encoder cannot write what its decoder refuses
 * (JW11).
 */
#include "lib/join_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/attest_wire_json.h"
#include "lib/hex.h"
#include "lib/token_seal.h"

_Static_assert(FLEET_JOIN_MAX_TOKEN == FLEET_SEAL_MAX_SEALED, "a token is one sealing");
_Static_assert(FLEET_JOIN_MAX_CERT <= FLEET_WIRE_MAX_CERT, "chain entries are certificates");
_Static_assert(FLEET_JOIN_MAX_ENVELOPE <= FLEET_WIRE_MAX_BODY, "wj_load's cap is the outer one");

/* ---- the predicates (JW4, JW5, JW7, JW8) -------------------------------- */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define ID_ATTESTOR "-" /* a-z 0-9 and these */
#define ID_NODE "_-"

/* min..max bytes of a-z 0-9 and extra; s need not be terminated past max. */
static bool id_ok(const char *s, size_t min, size_t max, const char *extra)
{
	size_t n = strnlen(s, max + 1);

	if (n < min || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      strchr(extra, s[i])))
			return false;
	return true;
}

/* Exactly n lowercase hex digits. */
static bool hex_ok(const char *s, size_t n)
{
	return strnlen(s, n + 1) == n && fleet_hex_is_lower(s, n);
}

/* 8-4-4-4-12 lowercase hex. */
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

/* Bytes that are absent: no pointer, no length. */
static bool bytes_none(const struct fleet_wire_bytes *b)
{
	return !b->data && b->len == 0;
}

/* An optional byte field agrees with its flag. */
static bool optional_ok(bool has, const struct fleet_wire_bytes *b, size_t max)
{
	return has ? wj_bytes_ok(b, max) : bytes_none(b);
}

/* MAC i of m is one none of the earlier ones repeats. */
static bool mac_new(const struct fleet_join_request *m, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (strcmp(m->macs[j], m->macs[i]) == 0)
			return false;
	return true;
}

static const char *const role_names[] = {"node", "site", "ramdisk"};

const char *fleet_join_role_name(enum fleet_join_role r)
{
	if (r < FLEET_JOIN_ROLE_NODE || r > FLEET_JOIN_ROLE_RAMDISK)
		return NULL;
	return role_names[r - FLEET_JOIN_ROLE_NODE];
}

/* ---- shared reading steps ----------------------------------------------- */


/* A string of min..max bytes of a-z 0-9 and extra. */
static fleet_err id_read(const json_t *v, const char *path, size_t min, size_t max,
			 const char *extra, char *dst, struct fleet_errctx *ec)
{
	fleet_err e = wj_string(v, path, min, max, dst, ec);

	if (e == FLEET_OK && !id_ok(dst, min, max, extra))
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not of a-z 0-9 %s", path, extra);
	return e;
}

/* Exactly n lowercase hex digits. */
static fleet_err hex_read(const json_t *v, const char *path, size_t n, char *dst,
			  struct fleet_errctx *ec)
{
	fleet_err e = wj_string(v, path, n, n, dst, ec);

	if (e == FLEET_OK && !hex_ok(dst, n))
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not %zu lowercase hex digits",
				     path, n);
	return e;
}

/* An optional byte field: absent leaves *has false. */
static fleet_err optional_read(const json_t *obj, const char *key, size_t max, bool *has,
			       struct fleet_wire_bytes *out, struct fleet_errctx *ec)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return FLEET_OK;
	*has = true;
	return wj_bytes(v, key, max, out, ec);
}

/* One of names[0..n) into *idx. */
static fleet_err name_read(const json_t *v, const char *path, const char *const *names, size_t n,
			   size_t *idx, struct fleet_errctx *ec)
{
	if (!v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", path);
	for (size_t i = 0; json_is_string(v) && i < n; i++)
		if (strcmp(json_string_value(v), names[i]) == 0) {
			*idx = i;
			return FLEET_OK;
		}
	return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not one of the values it may have",
				path);
}

/* ---- request ------------------------------------------------------------ */

static const char *const request_keys[] = {"v",	  "attestor", "token",  "attestation",
					   "csr", "role",     "claims", NULL};
static const char *const claims_keys[] = {"macs", "product_uuid", NULL};

static fleet_err claims_read(const json_t *root, struct fleet_join_request *out,
			     struct fleet_errctx *ec)
{
	const json_t *c = json_object_get(root, "claims"), *macs, *v;
	fleet_err e;
	size_t i;

	if (!c)
		return FLEET_OK;
	if (!json_is_object(c))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "claims: not an object");
	if ((e = wj_keys(c, claims_keys, "claims", ec)) != FLEET_OK)
		return e;
	if ((macs = json_object_get(c, "macs"))) {
		if (!json_is_array(macs))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "claims.macs: not an array");
		if (json_array_size(macs) > FLEET_JOIN_MAX_MACS)
			return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
						"claims.macs: %zu entries, over %d",
						json_array_size(macs), FLEET_JOIN_MAX_MACS);
		json_array_foreach(macs, i, v) {
			char path[40];
			snprintf(path, sizeof(path), "claims.macs[%zu]", i);
			if ((e = wj_string(v, path, 0, FLEET_WIRE_MAC_LEN, out->macs[i], ec)))
				return e;
			if (!wj_mac_ok(out->macs[i]))
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
							"%s: not a lowercase aa:bb:cc:dd:ee:ff",
							path);
			if (!mac_new(out, i))
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: repeated", path);
			out->n_macs = i + 1;
		}
	}
	if ((v = json_object_get(c, "product_uuid"))) {
		if ((e = wj_string(v, "claims.product_uuid", FLEET_JOIN_UUID_LEN,
				   FLEET_JOIN_UUID_LEN, out->product_uuid, ec)))
			return e;
		if (!uuid_ok(out->product_uuid))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"claims.product_uuid: not a lowercase UUID");
	}
	return FLEET_OK;
}

fleet_err fleet_join_request_decode(const uint8_t *msg, size_t len,
				    struct fleet_join_request *out, struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;
	size_t role = 0;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_REQUEST, "request", request_keys, &root,
			      ec));
	WJ_TRY(id_read(json_object_get(root, "attestor"), "attestor", 0, FLEET_JOIN_MAX_ATTESTOR,
		       ID_ATTESTOR, out->attestor, ec));
	WJ_TRY(optional_read(root, "token", FLEET_JOIN_MAX_TOKEN, &out->has_token, &out->token,
			     ec));
	WJ_TRY(optional_read(root, "attestation", FLEET_JOIN_MAX_ATTESTATION,
			     &out->has_attestation, &out->attestation, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "csr"), "csr", FLEET_JOIN_MAX_CSR, &out->csr, ec));
	WJ_TRY(name_read(json_object_get(root, "role"), "role", role_names,
			 ARRAY_LEN(role_names), &role, ec));
	out->role = (enum fleet_join_role)(FLEET_JOIN_ROLE_NODE + role);
	WJ_TRY(claims_read(root, out, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_join_request_free(out);
	return e;
}

static bool request_ok(const struct fleet_join_request *in)
{
	if (!id_ok(in->attestor, 0, FLEET_JOIN_MAX_ATTESTOR, ID_ATTESTOR) ||
	    !optional_ok(in->has_token, &in->token, FLEET_JOIN_MAX_TOKEN) ||
	    !optional_ok(in->has_attestation, &in->attestation, FLEET_JOIN_MAX_ATTESTATION) ||
	    !wj_bytes_ok(&in->csr, FLEET_JOIN_MAX_CSR) || !fleet_join_role_name(in->role) ||
	    in->n_macs > FLEET_JOIN_MAX_MACS ||
	    (in->product_uuid[0] && !uuid_ok(in->product_uuid)))
		return false;
	for (size_t i = 0; i < in->n_macs; i++)
		if (strnlen(in->macs[i], sizeof(in->macs[i])) > FLEET_WIRE_MAC_LEN ||
		    !wj_mac_ok(in->macs[i]) || !mac_new(in, i))
			return false;
	return true;
}

static int claims_put(json_t *root, const struct fleet_join_request *in)
{
	json_t *c, *macs;
	int rc = 0;

	if (in->n_macs == 0 && !in->product_uuid[0])
		return 0; /* JW12: no empty claims */
	if (!(c = json_object()) || json_object_set_new(root, "claims", c) != 0)
		return -1;
	if (in->n_macs) {
		if (!(macs = json_array()) || json_object_set_new(c, "macs", macs) != 0)
			return -1;
		for (size_t i = 0; i < in->n_macs; i++)
			rc |= json_array_append_new(macs, json_string(in->macs[i]));
	}
	if (in->product_uuid[0])
		rc |= wj_put_string(c, "product_uuid", in->product_uuid);
	return rc;
}

fleet_err fleet_join_request_encode(const struct fleet_join_request *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !request_ok(in))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_string(root, "attestor", in->attestor);
	if (in->has_token)
		rc |= wj_put_bytes(root, "token", in->token.data, in->token.len);
	if (in->has_attestation)
		rc |= wj_put_bytes(root, "attestation", in->attestation.data, in->attestation.len);
	rc |= wj_put_bytes(root, "csr", in->csr.data, in->csr.len);
	rc |= wj_put_string(root, "role", fleet_join_role_name(in->role));
	rc |= claims_put(root, in);
	return wj_end(root, rc, out);
}

void fleet_join_request_free(struct fleet_join_request *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->token);
	wj_bytes_free(&m->attestation);
	wj_bytes_free(&m->csr);
	OPENSSL_cleanse(m, sizeof(*m));
}

/* ---- body --------------------------------------------------------------- */

/* The body's fields after "status", in their order on the wire (JW12). */
enum {
	F_NODE_ID = 1u << 0,
	F_CHAIN = 1u << 1,
	F_REQUEST_ID = 1u << 2,
	F_RETRY = 1u << 3,
	F_ATTESTOR = 1u << 4,
	F_PAYLOAD = 1u << 5,
	F_NOT_AFTER = 1u << 6,
	F_CSR = 1u << 7,
	F__COUNT = 8,
};
static const char *const field_names[F__COUNT] = {
	"node_id",   "chain",   "request_id", "retry_after_seconds",
	"attestor",  "payload", "not_after",  "csr_sha256"};
static const char *const body_keys[] = {
	"v",	    "status",  "node_id",   "chain",	  "request_id", "retry_after_seconds",
	"attestor", "payload", "not_after", "csr_sha256", NULL};

/* Each status and exactly its fields (JW6). */
static const char *const status_names[] = {"joined", "pending", "challenge", "denied"};
static const unsigned status_fields[] = {
	F_NODE_ID | F_CHAIN | F_CSR,
	F_REQUEST_ID | F_RETRY | F_CSR,
	F_ATTESTOR | F_PAYLOAD | F_NOT_AFTER | F_CSR,
	0,
};
_Static_assert(ARRAY_LEN(status_fields) == ARRAY_LEN(status_names), "one field set per status");
_Static_assert(ARRAY_LEN(status_names) == FLEET_JOIN_DENIED, "the enum's statuses");
_Static_assert(ARRAY_LEN(role_names) == FLEET_JOIN_ROLE_RAMDISK, "the enum's roles");

static unsigned fields_of(enum fleet_join_status s)
{
	return status_fields[s - FLEET_JOIN_JOINED];
}

static bool status_ok(enum fleet_join_status s)
{
	return s >= FLEET_JOIN_JOINED && s <= FLEET_JOIN_DENIED;
}

static fleet_err chain_read(const json_t *v, struct fleet_join_response *out,
			    struct fleet_errctx *ec)
{
	return fleet_join_chain_read(v, out->chain, &out->n_chain, ec);
}

/* Shared with lib/join_evidence.c (x509pop's chain): 1..FLEET_JOIN_MAX_CHAIN
 * DER certificates of 1..FLEET_JOIN_MAX_CERT bytes, named chain[i]. */
fleet_err fleet_join_chain_read(const json_t *v, struct fleet_wire_bytes *chain, size_t *n,
				struct fleet_errctx *ec)
{
	const json_t *c;
	fleet_err e;
	size_t i;

	if (!v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "chain: missing");
	if (!json_is_array(v))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "chain: not an array");
	if (json_array_size(v) == 0)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "chain: empty");
	if (json_array_size(v) > FLEET_JOIN_MAX_CHAIN)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "chain: %zu entries, over %d",
					json_array_size(v), FLEET_JOIN_MAX_CHAIN);
	json_array_foreach(v, i, c) {
		char path[32];
		snprintf(path, sizeof(path), "chain[%zu]", i);
		if ((e = wj_bytes(c, path, FLEET_JOIN_MAX_CERT, &chain[i], ec)))
			return e;
		*n = i + 1;
	}
	return FLEET_OK;
}

/* Read field f (present: v is not NULL) into out. */
static fleet_err field_read(unsigned f, const json_t *v, struct fleet_join_response *out,
			    struct fleet_errctx *ec)
{
	struct fleet_join_deferral *d = &out->deferral;
	json_int_t n;
	fleet_err e;

	switch (f) {
	case F_NODE_ID:
		return id_read(v, "node_id", 1, FLEET_JOIN_MAX_ID, ID_NODE, out->node_id, ec);
	case F_CHAIN:
		return chain_read(v, out, ec);
	case F_REQUEST_ID:
		return id_read(v, "request_id", 1, FLEET_JOIN_MAX_ID, ID_NODE, d->request_id, ec);
	case F_RETRY:
		if ((e = wj_int(v, "retry_after_seconds", 1, FLEET_JOIN_MAX_RETRY_AFTER, &n, ec)))
			return e;
		d->retry_after_seconds = (unsigned)n;
		return FLEET_OK;
	case F_ATTESTOR:
		return id_read(v, "attestor", 1, FLEET_JOIN_MAX_ATTESTOR, ID_ATTESTOR, d->attestor,
			       ec);
	case F_PAYLOAD:
		return wj_bytes(v, "payload", FLEET_JOIN_MAX_PAYLOAD, &d->payload, ec);
	case F_NOT_AFTER:
		if ((e = wj_int(v, "not_after", 1, FLEET_JOIN_MAX_NOT_AFTER, &n, ec)))
			return e;
		d->not_after = (int64_t)n;
		return FLEET_OK;
	default: /* F_CSR */
		return hex_read(v, "csr_sha256", FLEET_JOIN_SHA256_HEX, out->csr_sha256, ec);
	}
}

fleet_err fleet_join_body_decode(const uint8_t *body, size_t len, struct fleet_join_response *out,
				 struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e = FLEET_OK;
	unsigned fields;
	size_t st = 0;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(body, len, FLEET_JOIN_MAX_BODY, "body", body_keys, &root, ec));
	WJ_TRY(name_read(json_object_get(root, "status"), "status", status_names,
			 ARRAY_LEN(status_names), &st, ec));
	out->status = (enum fleet_join_status)(FLEET_JOIN_JOINED + st);
	fields = fields_of(out->status);
	for (unsigned i = 0; i < F__COUNT; i++) {
		const json_t *v = json_object_get(root, field_names[i]);
		if (!(fields & (1u << i))) {
			if (v) {
				e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						     "%s: not with status %s", field_names[i],
						     status_names[st]);
				goto fail;
			}
			continue;
		}
		if (!v) {
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", field_names[i]);
			goto fail;
		}
		WJ_TRY(field_read(1u << i, v, out, ec));
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_join_response_free(out);
	return e;
}

/* Field f of in: set (anything in it) and valid (what field_read accepts). */
static bool field_set(unsigned f, const struct fleet_join_response *in)
{
	const struct fleet_join_deferral *d = &in->deferral;

	switch (f) {
	case F_NODE_ID:
		return in->node_id[0] != '\0';
	case F_CHAIN:
		for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
			if (!bytes_none(&in->chain[i]))
				return true;
		return in->n_chain != 0;
	case F_REQUEST_ID:
		return d->request_id[0] != '\0';
	case F_RETRY:
		return d->retry_after_seconds != 0;
	case F_ATTESTOR:
		return d->attestor[0] != '\0';
	case F_PAYLOAD:
		return !bytes_none(&d->payload);
	case F_NOT_AFTER:
		return d->not_after != 0;
	default:
		return in->csr_sha256[0] != '\0';
	}
}

static bool field_valid(unsigned f, const struct fleet_join_response *in)
{
	const struct fleet_join_deferral *d = &in->deferral;

	switch (f) {
	case F_NODE_ID:
		return id_ok(in->node_id, 1, FLEET_JOIN_MAX_ID, ID_NODE);
	case F_CHAIN:
		if (in->n_chain < 1 || in->n_chain > FLEET_JOIN_MAX_CHAIN)
			return false;
		for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
			if (i < in->n_chain ? !wj_bytes_ok(&in->chain[i], FLEET_JOIN_MAX_CERT)
					    : !bytes_none(&in->chain[i]))
				return false;
		return true;
	case F_REQUEST_ID:
		return id_ok(d->request_id, 1, FLEET_JOIN_MAX_ID, ID_NODE);
	case F_RETRY:
		return d->retry_after_seconds >= 1 &&
		       d->retry_after_seconds <= FLEET_JOIN_MAX_RETRY_AFTER;
	case F_ATTESTOR:
		return id_ok(d->attestor, 1, FLEET_JOIN_MAX_ATTESTOR, ID_ATTESTOR);
	case F_PAYLOAD:
		return wj_bytes_ok(&d->payload, FLEET_JOIN_MAX_PAYLOAD);
	case F_NOT_AFTER:
		return d->not_after >= 1 && d->not_after <= FLEET_JOIN_MAX_NOT_AFTER;
	default:
		return hex_ok(in->csr_sha256, FLEET_JOIN_SHA256_HEX);
	}
}

static int field_put(unsigned f, const char *key, json_t *root,
		     const struct fleet_join_response *in)
{
	const struct fleet_join_deferral *d = &in->deferral;
	json_t *a;
	int rc = 0;

	switch (f) {
	case F_NODE_ID:
		return wj_put_string(root, key, in->node_id);
	case F_CHAIN:
		if (!(a = json_array()) || json_object_set_new(root, key, a) != 0)
			return -1;
		for (size_t i = 0; i < in->n_chain; i++)
			rc |= json_array_append_new(
				a, wj_bytes_value(in->chain[i].data, in->chain[i].len));
		return rc;
	case F_REQUEST_ID:
		return wj_put_string(root, key, d->request_id);
	case F_RETRY:
		return json_object_set_new(root, key, json_integer(d->retry_after_seconds));
	case F_ATTESTOR:
		return wj_put_string(root, key, d->attestor);
	case F_PAYLOAD:
		return wj_put_bytes(root, key, d->payload.data, d->payload.len);
	case F_NOT_AFTER:
		return json_object_set_new(root, key, json_integer((json_int_t)d->not_after));
	default:
		return wj_put_string(root, key, in->csr_sha256);
	}
}

fleet_err fleet_join_body_encode(const struct fleet_join_response *in, struct fleet_buf *out)
{
	unsigned fields;
	json_t *root;
	int rc;

	if (!in || !out || !status_ok(in->status))
		return FLEET_E_INVALID_ARG;
	fields = fields_of(in->status);
	for (unsigned i = 0; i < F__COUNT; i++) {
		unsigned f = 1u << i;
		if ((fields & f) ? !field_valid(f, in) : field_set(f, in))
			return FLEET_E_INVALID_ARG;
	}
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc = wj_put_string(root, "status", status_names[in->status - FLEET_JOIN_JOINED]);
	for (unsigned i = 0; i < F__COUNT; i++)
		if (fields & (1u << i))
			rc |= field_put(1u << i, field_names[i], root, in);
	return wj_end(root, rc, out);
}

void fleet_join_response_free(struct fleet_join_response *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		wj_bytes_free(&m->chain[i]);
	wj_bytes_free(&m->deferral.payload);
	OPENSSL_cleanse(m, sizeof(*m));
}

/* ---- envelope ----------------------------------------------------------- */

static const char *const envelope_keys[] = {"v", "body", "sig", "kid", NULL};

fleet_err fleet_join_envelope_decode(const uint8_t *msg, size_t len,
				     struct fleet_join_envelope *out, struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_ENVELOPE, "envelope", envelope_keys, &root,
			      ec));
	/* The body stays bytes: it is read only once its signature verified (JW10). */
	WJ_TRY(wj_bytes(json_object_get(root, "body"), "body", FLEET_JOIN_MAX_BODY, &out->body, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "sig"), "sig", FLEET_JOIN_MAX_SIG, &out->sig, ec));
	WJ_TRY(hex_read(json_object_get(root, "kid"), "kid", FLEET_JOIN_KID_LEN, out->kid, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_join_envelope_free(out);
	return e;
}

fleet_err fleet_join_envelope_encode(const struct fleet_join_envelope *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !wj_bytes_ok(&in->body, FLEET_JOIN_MAX_BODY) ||
	    !wj_bytes_ok(&in->sig, FLEET_JOIN_MAX_SIG) || !hex_ok(in->kid, FLEET_JOIN_KID_LEN))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_bytes(root, "body", in->body.data, in->body.len);
	rc |= wj_put_bytes(root, "sig", in->sig.data, in->sig.len);
	rc |= wj_put_string(root, "kid", in->kid);
	return wj_end(root, rc, out);
}

void fleet_join_envelope_free(struct fleet_join_envelope *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->body);
	wj_bytes_free(&m->sig);
	OPENSSL_cleanse(m, sizeof(*m));
}

/* ---- the key id and the binding ----------------------------------------- */

fleet_err fleet_join_kid(X509 *cert, char kid[FLEET_JOIN_KID_LEN + 1])
{
	unsigned char *der = NULL;
	EVP_PKEY *k;
	uint8_t md[32];
	int n, ok;

	if (!cert || !kid || !(k = X509_get0_pubkey(cert))) {
		ERR_clear_error();
		return FLEET_E_INVALID_ARG;
	}
	if ((n = i2d_PUBKEY(k, &der)) <= 0) {
		ERR_clear_error();
		return FLEET_E_CRYPTO;
	}
	ok = EVP_Digest(der, (size_t)n, md, NULL, EVP_sha256(), NULL);
	OPENSSL_free(der);
	if (ok != 1)
		return FLEET_E_CRYPTO;
	fleet_hex_encode(md, FLEET_JOIN_KID_LEN / 2, kid);
	return FLEET_OK;
}

fleet_err fleet_join_csr_sha256(const struct fleet_wire_bytes *csr,
				char hex[FLEET_JOIN_SHA256_HEX + 1])
{
	uint8_t md[32];

	if (!csr || !hex || !wj_bytes_ok(csr, FLEET_JOIN_MAX_CSR))
		return FLEET_E_INVALID_ARG;
	if (EVP_Digest(csr->data, csr->len, md, NULL, EVP_sha256(), NULL) != 1)
		return FLEET_E_CRYPTO;
	fleet_hex_encode(md, sizeof(md), hex);
	return FLEET_OK;
}
