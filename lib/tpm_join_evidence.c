/*
 * tpm_join_evidence.c: the tpm attestor's messages (lib/tpm_join_evidence.h
 * is the format and its rules TE1..TE5). The JSON goes through the checked
 * readers of attest_wire_json.c, as join_evidence.c's does; each field has
 * one cap that the decoder and the encoder both use (TE2).
 */
#include "lib/tpm_join_evidence.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include "lib/attest_wire_json.h"
#include "lib/hex.h"
#include "lib/tpm_alg.h"

_Static_assert(FLEET_TPM_MAX_STATE <= FLEET_JOIN_MAX_PAYLOAD, "the state fits its challenge");
_Static_assert(FLEET_JOIN_MAX_ATTESTATION <= FLEET_WIRE_MAX_BODY, "wj_load's cap is the outer one");
_Static_assert(FLEET_JOIN_MAX_PAYLOAD <= FLEET_WIRE_MAX_BODY, "wj_load's cap is the outer one");

#define SELECTION_SET "abcdefghijklmnopqrstuvwxyz0123456789:,+"


/* ---- shared steps ---------------------------------------------------------- */

static bool selection_ok(const char *s)
{
	size_t n = strnlen(s, FLEET_TPM_MAX_SELECTION + 1);
	if (n < 1 || n > FLEET_TPM_MAX_SELECTION)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr(SELECTION_SET, s[i]))
			return false;
	return true;
}

/* An optional byte field: absent leaves out empty. */
static fleet_err optional_bytes(const json_t *obj, const char *key, size_t max,
				struct fleet_wire_bytes *out, struct fleet_errctx *ec)
{
	const json_t *v = json_object_get(obj, key);
	return v ? wj_bytes(v, key, max, out, ec) : FLEET_OK;
}

static bool bytes_none(const struct fleet_wire_bytes *b)
{
	return !b->data && b->len == 0;
}

/* Keys present that this round does not take (TE1: only that round's). */
static fleet_err only_keys(const json_t *root, const char *const *keys, const char *what,
			   struct fleet_errctx *ec)
{
	return wj_keys(root, keys, what, ec);
}

/* ---- the AK's certification of a key --------------------------------------- */

static const char *const node_key_keys[] = {"public", "certify_info", "signature", NULL};
static const char *const key_att_keys[] = {"ak_public", "key_public", "certify_info", "signature",
					   NULL};

static fleet_err certification_read(const json_t *obj, const char *key_name, const char *path,
				    struct fleet_tpm_certification *out, struct fleet_errctx *ec)
{
	fleet_err e;
	char p[64];
	snprintf(p, sizeof(p), "%s.%s", path, key_name);
	if ((e = wj_bytes(json_object_get(obj, key_name), p, FLEET_TPM_MAX_PUBLIC,
			  &out->key_public, ec)))
		return e;
	snprintf(p, sizeof(p), "%s.certify_info", path);
	if ((e = wj_bytes(json_object_get(obj, "certify_info"), p, FLEET_TPM_MAX_ATTEST,
			  &out->certify_info, ec)))
		return e;
	snprintf(p, sizeof(p), "%s.signature", path);
	return wj_bytes(json_object_get(obj, "signature"), p, FLEET_TPM_MAX_SIG, &out->signature,
			ec);
}

static bool certification_ok(const struct fleet_tpm_certification *c)
{
	return wj_bytes_ok(&c->key_public, FLEET_TPM_MAX_PUBLIC) &&
	       wj_bytes_ok(&c->certify_info, FLEET_TPM_MAX_ATTEST) &&
	       wj_bytes_ok(&c->signature, FLEET_TPM_MAX_SIG);
}

static void certification_free(struct fleet_tpm_certification *c)
{
	wj_bytes_free(&c->key_public);
	wj_bytes_free(&c->certify_info);
	wj_bytes_free(&c->signature);
}

/* A new object with the certification's three members under key_name for
 * the key's public area; NULL when out of memory. */
static json_t *certification_value(const struct fleet_tpm_certification *c, const char *ak_public,
				   const struct fleet_wire_bytes *ak, const char *key_name)
{
	json_t *o = json_object();
	int rc = 0;
	if (!o)
		return NULL;
	if (ak_public)
		rc |= wj_put_bytes(o, ak_public, ak->data, ak->len);
	rc |= wj_put_bytes(o, key_name, c->key_public.data, c->key_public.len);
	rc |= wj_put_bytes(o, "certify_info", c->certify_info.data, c->certify_info.len);
	rc |= wj_put_bytes(o, "signature", c->signature.data, c->signature.len);
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- the evidence ------------------------------------------------------------ */

static const char *const any_round_keys[] = {
	"v",	"round", "ek_public", "ek_cert",    "ak_public", "state",    "secret",
	"quote", "quote_sig", "pcr_values", "event_log", "node_key", NULL};
static const char *const round1_keys[] = {"v", "round", "ek_public", "ek_cert", "ak_public", NULL};
static const char *const round2_keys[] = {"v",		"round",     "state",	 "secret",
					  "quote",	"quote_sig", "pcr_values", "event_log",
					  "node_key", NULL};

static fleet_err pcr_values_read(const json_t *v, struct fleet_tpm_evidence *out,
				 struct fleet_errctx *ec)
{
	size_t n;
	char path[32];
	fleet_err e;
	if (!v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcr_values: missing");
	if (!json_is_array(v))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcr_values: not an array");
	n = json_array_size(v);
	if (n == 0)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcr_values: empty");
	if (n > FLEET_TPM_MAX_PCRS)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "pcr_values: %zu entries, over %d",
					n, FLEET_TPM_MAX_PCRS);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "pcr_values[%zu]", i);
		if ((e = wj_bytes(json_array_get(v, i), path, FLEET_DIGEST_MAX,
				  &out->pcr_values[i], ec)))
			return e;
		out->n_pcr_values = i + 1;
	}
	return FLEET_OK;
}

fleet_err fleet_tpm_evidence_decode(const uint8_t *msg, size_t len,
				    struct fleet_tpm_evidence *out, struct fleet_errctx *ec)
{
	json_t *root = NULL;
	json_int_t round;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_ATTESTATION, "tpm evidence", any_round_keys,
			      &root, ec));
	WJ_TRY(wj_int(json_object_get(root, "round"), "round", 1, 2, &round, ec));
	out->round = (int)round;
	if (round == 1) {
		WJ_TRY(only_keys(root, round1_keys, "tpm evidence (round 1)", ec));
		WJ_TRY(wj_bytes(json_object_get(root, "ek_public"), "ek_public",
				FLEET_TPM_MAX_PUBLIC, &out->ek_public, ec));
		WJ_TRY(optional_bytes(root, "ek_cert", FLEET_JOIN_MAX_CERT, &out->ek_cert, ec));
		WJ_TRY(wj_bytes(json_object_get(root, "ak_public"), "ak_public",
				FLEET_TPM_MAX_PUBLIC, &out->ak_public, ec));
	} else {
		const json_t *nk;
		WJ_TRY(only_keys(root, round2_keys, "tpm evidence (round 2)", ec));
		WJ_TRY(wj_bytes(json_object_get(root, "state"), "state", FLEET_TPM_MAX_STATE,
				&out->state, ec));
		WJ_TRY(wj_bytes(json_object_get(root, "secret"), "secret", FLEET_TPM_MAX_SECRET,
				&out->secret, ec));
		WJ_TRY(wj_bytes(json_object_get(root, "quote"), "quote", FLEET_TPM_MAX_ATTEST,
				&out->quote, ec));
		WJ_TRY(wj_bytes(json_object_get(root, "quote_sig"), "quote_sig", FLEET_TPM_MAX_SIG,
				&out->quote_sig, ec));
		WJ_TRY(pcr_values_read(json_object_get(root, "pcr_values"), out, ec));
		WJ_TRY(optional_bytes(root, "event_log", FLEET_TPM_MAX_EVENTLOG, &out->event_log,
				      ec));
		if ((nk = json_object_get(root, "node_key"))) {
			if (!json_is_object(nk)) {
				e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						     "node_key: not an object");
				goto fail;
			}
			WJ_TRY(wj_keys(nk, node_key_keys, "node_key", ec));
			WJ_TRY(certification_read(nk, "public", "node_key", &out->node_key, ec));
			out->has_node_key = true;
		}
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_tpm_evidence_free(out);
	return e;
}

static bool evidence_ok(const struct fleet_tpm_evidence *in)
{
	if (in->round == 1)
		return wj_bytes_ok(&in->ek_public, FLEET_TPM_MAX_PUBLIC) &&
		       (bytes_none(&in->ek_cert) || wj_bytes_ok(&in->ek_cert, FLEET_JOIN_MAX_CERT)) &&
		       wj_bytes_ok(&in->ak_public, FLEET_TPM_MAX_PUBLIC);
	if (in->round != 2)
		return false;
	if (!wj_bytes_ok(&in->state, FLEET_TPM_MAX_STATE) ||
	    !wj_bytes_ok(&in->secret, FLEET_TPM_MAX_SECRET) ||
	    !wj_bytes_ok(&in->quote, FLEET_TPM_MAX_ATTEST) ||
	    !wj_bytes_ok(&in->quote_sig, FLEET_TPM_MAX_SIG) || in->n_pcr_values < 1 ||
	    in->n_pcr_values > FLEET_TPM_MAX_PCRS)
		return false;
	for (size_t i = 0; i < in->n_pcr_values; i++)
		if (!wj_bytes_ok(&in->pcr_values[i], FLEET_DIGEST_MAX))
			return false;
	if (!bytes_none(&in->event_log) && !wj_bytes_ok(&in->event_log, FLEET_TPM_MAX_EVENTLOG))
		return false;
	return !in->has_node_key || certification_ok(&in->node_key);
}

fleet_err fleet_tpm_evidence_encode(const struct fleet_tpm_evidence *in, struct fleet_buf *out)
{
	json_t *root, *arr, *nk;
	int rc = 0;

	if (!in || !out || !evidence_ok(in))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= json_object_set_new(root, "round", json_integer(in->round));
	if (in->round == 1) {
		rc |= wj_put_bytes(root, "ek_public", in->ek_public.data, in->ek_public.len);
		if (!bytes_none(&in->ek_cert))
			rc |= wj_put_bytes(root, "ek_cert", in->ek_cert.data, in->ek_cert.len);
		rc |= wj_put_bytes(root, "ak_public", in->ak_public.data, in->ak_public.len);
		return wj_end(root, rc, out);
	}
	rc |= wj_put_bytes(root, "state", in->state.data, in->state.len);
	rc |= wj_put_bytes(root, "secret", in->secret.data, in->secret.len);
	rc |= wj_put_bytes(root, "quote", in->quote.data, in->quote.len);
	rc |= wj_put_bytes(root, "quote_sig", in->quote_sig.data, in->quote_sig.len);
	if (!(arr = json_array()))
		rc = -1;
	for (size_t i = 0; arr && i < in->n_pcr_values; i++)
		rc |= json_array_append_new(arr, wj_bytes_value(in->pcr_values[i].data,
								 in->pcr_values[i].len));
	rc |= json_object_set_new(root, "pcr_values", arr);
	if (!bytes_none(&in->event_log))
		rc |= wj_put_bytes(root, "event_log", in->event_log.data, in->event_log.len);
	if (in->has_node_key) {
		nk = certification_value(&in->node_key, NULL, NULL, "public");
		rc |= nk ? json_object_set_new(root, "node_key", nk) : -1;
	}
	return wj_end(root, rc, out);
}

void fleet_tpm_evidence_free(struct fleet_tpm_evidence *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->ek_public);
	wj_bytes_free(&m->ek_cert);
	wj_bytes_free(&m->ak_public);
	wj_bytes_free(&m->state);
	wj_bytes_free(&m->secret);
	wj_bytes_free(&m->quote);
	wj_bytes_free(&m->quote_sig);
	for (size_t i = 0; i < FLEET_TPM_MAX_PCRS; i++)
		wj_bytes_free(&m->pcr_values[i]);
	wj_bytes_free(&m->event_log);
	certification_free(&m->node_key);
	memset(m, 0, sizeof(*m));
}

/* ---- the challenge ------------------------------------------------------------ */

static const char *const challenge_keys[] = {"v", "id_object", "enc_secret", "pcrs", "state",
					     NULL};

fleet_err fleet_tpm_challenge_decode(const uint8_t *msg, size_t len,
				     struct fleet_tpm_challenge *out, struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load_capped(msg, len, FLEET_JOIN_MAX_PAYLOAD, "tpm challenge", challenge_keys,
			      &root, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "id_object"), "id_object", FLEET_TPM_MAX_BLOB,
			&out->id_object, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "enc_secret"), "enc_secret", FLEET_TPM_MAX_BLOB,
			&out->enc_secret, ec));
	WJ_TRY(wj_string(json_object_get(root, "pcrs"), "pcrs", 1, FLEET_TPM_MAX_SELECTION,
			 out->pcrs, ec));
	if (!selection_ok(out->pcrs)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcrs: not a PCR selection");
		goto fail;
	}
	WJ_TRY(wj_bytes(json_object_get(root, "state"), "state", FLEET_TPM_MAX_STATE, &out->state,
			ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_tpm_challenge_free(out);
	return e;
}

fleet_err fleet_tpm_challenge_encode(const struct fleet_tpm_challenge *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !wj_bytes_ok(&in->id_object, FLEET_TPM_MAX_BLOB) ||
	    !wj_bytes_ok(&in->enc_secret, FLEET_TPM_MAX_BLOB) || !selection_ok(in->pcrs) ||
	    !wj_bytes_ok(&in->state, FLEET_TPM_MAX_STATE))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_bytes(root, "id_object", in->id_object.data, in->id_object.len);
	rc |= wj_put_bytes(root, "enc_secret", in->enc_secret.data, in->enc_secret.len);
	rc |= wj_put_string(root, "pcrs", in->pcrs);
	rc |= wj_put_bytes(root, "state", in->state.data, in->state.len);
	return wj_end(root, rc, out);
}

void fleet_tpm_challenge_free(struct fleet_tpm_challenge *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->id_object);
	wj_bytes_free(&m->enc_secret);
	wj_bytes_free(&m->state);
	memset(m, 0, sizeof(*m));
}

/* ---- the renewal's key attestation -------------------------------------------- */

fleet_err fleet_tpm_key_attestation_read(const struct json_t *v, const char *path,
					 struct fleet_tpm_key_attestation *out,
					 struct fleet_errctx *ec)
{
	char p[64];
	fleet_err e;
	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	if (!v || !json_is_object(v))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not an object", path);
	if ((e = wj_keys(v, key_att_keys, path, ec)))
		return e;
	snprintf(p, sizeof(p), "%s.ak_public", path);
	if ((e = wj_bytes(json_object_get(v, "ak_public"), p, FLEET_TPM_MAX_PUBLIC,
			  &out->ak_public, ec)) ||
	    (e = certification_read(v, "key_public", path, &out->cert, ec)))
		fleet_tpm_key_attestation_free(out);
	return e;
}

bool fleet_tpm_key_attestation_ok(const struct fleet_tpm_key_attestation *in)
{
	return in && wj_bytes_ok(&in->ak_public, FLEET_TPM_MAX_PUBLIC) &&
	       certification_ok(&in->cert);
}

struct json_t *fleet_tpm_key_attestation_value(const struct fleet_tpm_key_attestation *in)
{
	if (!fleet_tpm_key_attestation_ok(in))
		return NULL;
	return certification_value(&in->cert, "ak_public", &in->ak_public, "key_public");
}

void fleet_tpm_key_attestation_free(struct fleet_tpm_key_attestation *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->ak_public);
	certification_free(&m->cert);
	memset(m, 0, sizeof(*m));
}

/* ---- the nonce and the statement ------------------------------------------------ */

fleet_err fleet_tpm_quote_nonce(const uint8_t *secret, size_t secret_len,
				const uint8_t csr_sha256[32], uint8_t out[32])
{
	uint8_t buf[FLEET_TPM_MAX_SECRET + 32];
	fleet_err e;
	if (!secret || !csr_sha256 || !out || secret_len < 1 || secret_len > FLEET_TPM_MAX_SECRET)
		return FLEET_E_INVALID_ARG;
	memcpy(buf, secret, secret_len);
	memcpy(buf + secret_len, csr_sha256, 32);
	e = fleet_hash(TPM2_ALG_SHA256, buf, secret_len + 32, out);
	OPENSSL_cleanse(buf, sizeof(buf));
	return e;
}

/* A TPM name fleetd would compare: nameAlg SHA-256/384/512, then exactly
 * that digest. */
static bool name_ok(const uint8_t *name, size_t len)
{
	if (len < 2)
		return false;
	uint16_t alg = (uint16_t)(name[0] << 8 | name[1]);
	if (alg != TPM2_ALG_SHA256 && alg != TPM2_ALG_SHA384 && alg != TPM2_ALG_SHA512)
		return false;
	return len == 2 + fleet_hash_alg_size(alg);
}

fleet_err fleet_tpm_ak_uri(const uint8_t *name, size_t name_len, char *out, size_t cap)
{
	static const char hexd[] = "0123456789abcdef";
	size_t plen = sizeof(FLEET_TPM_AK_URI_PREFIX) - 1;
	if (!name || !out || !name_ok(name, name_len) || cap < plen + 2 * name_len + 1)
		return FLEET_E_INVALID_ARG;
	memcpy(out, FLEET_TPM_AK_URI_PREFIX, plen);
	for (size_t i = 0; i < name_len; i++) {
		out[plen + 2 * i] = hexd[name[i] >> 4];
		out[plen + 2 * i + 1] = hexd[name[i] & 15];
	}
	out[plen + 2 * name_len] = '\0';
	return FLEET_OK;
}

fleet_err fleet_tpm_ak_uri_parse(const char *uri, uint8_t *name, size_t cap, size_t *name_len)
{
	size_t plen = sizeof(FLEET_TPM_AK_URI_PREFIX) - 1, n, len;
	if (!uri || !name || !name_len)
		return FLEET_E_INVALID_ARG;
	*name_len = 0;
	n = strnlen(uri, FLEET_TPM_AK_URI_MAX + 1);
	if (n > FLEET_TPM_AK_URI_MAX || n <= plen || strncmp(uri, FLEET_TPM_AK_URI_PREFIX, plen))
		return FLEET_E_MALFORMED;
	n -= plen;
	if (n % 2)
		return FLEET_E_MALFORMED;
	len = n / 2;
	if (len > cap)
		return FLEET_E_MALFORMED;
	for (size_t i = 0; i < n; i++) { /* lowercase only: one spelling per AK */
		char c = uri[plen + i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return FLEET_E_MALFORMED;
	}
	if (fleet_hex_decode(uri + plen, n, name, len) != FLEET_OK || !name_ok(name, len)) {
		OPENSSL_cleanse(name, len);
		return FLEET_E_MALFORMED;
	}
	*name_len = len;
	return FLEET_OK;
}

/* ---- a leaf's statements (TE6) ------------------------------------------------ */

const char *fleet_tpm_leaf_statement(X509 *leaf, char *out, size_t cap)
{
	GENERAL_NAMES *sans = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	const char *why = NULL;
	out[0] = '\0';
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && !why; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		if (g->type != GEN_URI)
			continue;
		const char *u = (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
		int n = ASN1_STRING_length(g->d.uniformResourceIdentifier);
		if (n <= 0 || (size_t)n != strnlen(u, (size_t)n + 1) || !strncmp(u, "spiffe://", 9))
			continue;
		uint8_t name[2 + 64];
		size_t name_len;
		if (!strncmp(u, FLEET_TPM_AK_URI_PREFIX, sizeof(FLEET_TPM_AK_URI_PREFIX) - 1)) {
			if (out[0] || (size_t)n >= cap ||
			    fleet_tpm_ak_uri_parse(u, name, sizeof(name), &name_len))
				why = "tpm-ak-uri";
			else
				memcpy(out, u, (size_t)n + 1);
		} else {
			why = "key-statement-unknown";
		}
	}
	GENERAL_NAMES_free(sans);
	ERR_clear_error();
	return why;
}
