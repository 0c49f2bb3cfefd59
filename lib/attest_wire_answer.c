/*
 * attest_wire_answer.c: the answer message (round 2) and the two small
 * JSON documents the protocol carries as exact bytes: the network report
 * (bound by the quote) and the LDevID request (bound by the certify).
 */
#include "lib/attest_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/attest_wire_json.h"
#include "lib/hex.h"

#include <openssl/crypto.h>

#define TRY(call)                         \
	do {                              \
		if ((e = (call)) != FLEET_OK) \
			goto fail;        \
	} while (0)

static json_t *need(const json_t *obj, const char *key, fleet_err *e, struct fleet_errctx *ec)
{
	return wj_need(obj, key, "", e, ec);
}

/* ---- answer ------------------------------------------------------------- */

static const char *const answer_keys[] = {"v", "session", "proof", "quote_attest",
					  "quote_signature", "pcrs", "event_log",
					  "network_report", NULL};

/* A PCR index as a JSON key: "0".."23", decimal, no leading zero. */
static bool pcr_key(const char *k, uint8_t *out)
{
	size_t n = strlen(k);
	unsigned v = 0;

	if (n == 0 || n > 2 || (n == 2 && k[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (k[i] < '0' || k[i] > '9')
			return false;
		v = v * 10 + (unsigned)(k[i] - '0');
	}
	if (v >= FLEET_PCR_COUNT)
		return false;
	*out = (uint8_t)v;
	return true;
}

static int pcr_cmp(const void *a, const void *b)
{
	const struct fleet_pcr_value *x = a, *y = b;
	if (x->alg != y->alg)
		return x->alg < y->alg ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

#define MAX_PCRS (sizeof(((struct fleet_wire_answer *)0)->pcrs) / sizeof(struct fleet_pcr_value))

/* {"sha256":{"0":"<hex>",..},..} into out->pcrs, sorted: banks by
 * algorithm id, PCRs ascending (the order fleet_quote_verify wants). */
static fleet_err decode_pcrs(const json_t *pcrs, struct fleet_wire_answer *out,
			     struct fleet_errctx *ec)
{
	const char *bank_name, *idx;
	json_t *bank, *hex;
	size_t nb = 0;

	if (!json_is_object(pcrs))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcrs: not an object");
	json_object_foreach((json_t *)pcrs, bank_name, bank) {
		uint16_t alg = fleet_hash_alg_from_name(bank_name);
		size_t dsize = fleet_hash_alg_size(alg);
		nb++;
		if (alg == 0 || dsize == 0 || dsize > FLEET_DIGEST_MAX)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"pcrs: bank %zu is not a known hash", nb);
		if (!json_is_object(bank) || json_object_size(bank) == 0)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"pcrs.%s: not a non-empty object",
						fleet_hash_alg_name(alg));
		json_object_foreach(bank, idx, hex) {
			struct fleet_pcr_value *v;
			if (out->n_pcrs >= MAX_PCRS)
				return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
							"pcrs: over %zu values", MAX_PCRS);
			v = &out->pcrs[out->n_pcrs];
			memset(v, 0, sizeof(*v));
			if (!pcr_key(idx, &v->index))
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
							"pcrs.%s: a PCR index not in 0..23",
							fleet_hash_alg_name(alg));
			if (!json_is_string(hex) || json_string_length(hex) != 2 * dsize ||
			    !fleet_hex_is_lower(json_string_value(hex), 2 * dsize) ||
			    fleet_hex_decode(json_string_value(hex), 2 * dsize, v->digest, dsize) !=
				    FLEET_OK)
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
							"pcrs.%s.%u: not %zu lowercase hex digits",
							fleet_hash_alg_name(alg), v->index,
							2 * dsize);
			v->alg = alg;
			v->size = (uint8_t)dsize;
			out->n_pcrs++;
		}
	}
	qsort(out->pcrs, out->n_pcrs, sizeof(out->pcrs[0]), pcr_cmp);
	return FLEET_OK;
}

fleet_err fleet_wire_answer_decode(const uint8_t *body, size_t len, struct fleet_wire_answer *out,
				   struct fleet_errctx *ec)
{
	json_t *root = NULL, *v;
	fleet_err e = FLEET_OK;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(wj_load(body, len, answer_keys, &root, ec));
	if (!(v = need(root, "session", &e, ec)))
		goto fail;
	TRY(wj_fixed(v, "session", out->session, FLEET_WIRE_ID_LEN, ec));
	if (!(v = need(root, "proof", &e, ec)))
		goto fail;
	TRY(wj_fixed(v, "proof", out->proof, FLEET_WIRE_ID_LEN, ec));
	if (!(v = need(root, "quote_attest", &e, ec)))
		goto fail;
	TRY(wj_bytes(v, "quote_attest", FLEET_WIRE_MAX_TPM_STRUCT, &out->quote_attest, ec));
	if (!(v = need(root, "quote_signature", &e, ec)))
		goto fail;
	TRY(wj_bytes(v, "quote_signature", FLEET_WIRE_MAX_TPM_STRUCT, &out->quote_sig, ec));
	if (!(v = need(root, "pcrs", &e, ec)))
		goto fail;
	TRY(decode_pcrs(v, out, ec));
	if (!(v = need(root, "event_log", &e, ec)))
		goto fail;
	TRY(wj_bytes(v, "event_log", FLEET_WIRE_MAX_EVENTLOG, &out->event_log, ec));
	if (!(v = need(root, "network_report", &e, ec)))
		goto fail;
	TRY(wj_bytes(v, "network_report", FLEET_WIRE_MAX_REPORT, &out->network_report, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_wire_answer_free(out);
	return e;
}

static int put_pcrs(json_t *root, const struct fleet_wire_answer *in)
{
	json_t *pcrs = json_object(), *bank = NULL;
	uint16_t cur = 0;
	int rc;

	if ((rc = json_object_set_new(root, "pcrs", pcrs)) != 0)
		return rc;
	if (in->n_pcrs > MAX_PCRS)
		return -1;
	for (size_t i = 0; i < in->n_pcrs; i++) {
		const struct fleet_pcr_value *v = &in->pcrs[i];
		const char *name = fleet_hash_alg_name(v->alg);
		char key[4], hex[2 * FLEET_DIGEST_MAX + 1];
		if (!name || v->index >= FLEET_PCR_COUNT || v->size != fleet_hash_alg_size(v->alg))
			return -1;
		if (!bank || v->alg != cur) {
			/* Each bank once: values must come grouped by bank. */
			if (json_object_get(pcrs, name) ||
			    json_object_set_new(pcrs, name, bank = json_object()) != 0)
				return -1;
			cur = v->alg;
		}
		snprintf(key, sizeof(key), "%u", v->index);
		if (json_object_get(bank, key))
			return -1;
		fleet_hex_encode(v->digest, v->size, hex);
		if (json_object_set_new(bank, key, json_string(hex)) != 0)
			return -1;
	}
	return 0;
}

fleet_err fleet_wire_answer_encode(const struct fleet_wire_answer *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || in->quote_attest.len > FLEET_WIRE_MAX_TPM_STRUCT ||
	    in->quote_sig.len > FLEET_WIRE_MAX_TPM_STRUCT ||
	    in->event_log.len > FLEET_WIRE_MAX_EVENTLOG ||
	    in->network_report.len > FLEET_WIRE_MAX_REPORT)
		return FLEET_E_INVALID_ARG;
	if (!(root = json_object()))
		return FLEET_E_NOMEM;
	rc |= json_object_set_new(root, "v", json_integer(FLEET_WIRE_VERSION));
	rc |= wj_put_bytes(root, "session", in->session, FLEET_WIRE_ID_LEN);
	rc |= wj_put_bytes(root, "proof", in->proof, FLEET_WIRE_ID_LEN);
	rc |= wj_put_bytes(root, "quote_attest", in->quote_attest.data, in->quote_attest.len);
	rc |= wj_put_bytes(root, "quote_signature", in->quote_sig.data, in->quote_sig.len);
	rc |= rc == 0 ? put_pcrs(root, in) : -1;
	rc |= wj_put_bytes(root, "event_log", in->event_log.data, in->event_log.len);
	rc |= wj_put_bytes(root, "network_report", in->network_report.data,
			   in->network_report.len);
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

void fleet_wire_answer_free(struct fleet_wire_answer *m)
{
	if (!m)
		return;
	free(m->quote_attest.data);
	free(m->quote_sig.data);
	free(m->event_log.data);
	free(m->network_report.data);
	/* The proof is derived from the activation secrets: wipe it too. */
	OPENSSL_cleanse(m, sizeof(*m));
}

/* ---- the documents carried as bytes ------------------------------------- */

static const char *const report_keys[] = {"chassis_id", "port_id", "system_name", NULL};
static const char *const request_keys[] = {"v", "serial", "spki_sha256", NULL};

/* Parse a small document (no "v" check: the report has none). */
static fleet_err load_doc(const struct fleet_wire_bytes *b, size_t max, const char *what,
			  const char *const *keys, json_t **out, struct fleet_errctx *ec)
{
	json_error_t jerr;
	json_t *root;
	fleet_err e;

	*out = NULL;
	if (!b || (!b->data && b->len))
		return FLEET_E_INVALID_ARG;
	if (b->len > max)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "%s: over %zu bytes", what, max);
	root = json_loadb((const char *)(b->data ? b->data : (const uint8_t *)""), b->len,
			  JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, (size_t)jerr.position,
					"%s: not valid JSON (or a duplicate key)", what);
	if (!json_is_object(root)) {
		json_decref(root);
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not a JSON object", what);
	}
	if ((e = wj_keys(root, keys, what, ec)) != FLEET_OK) {
		json_decref(root);
		return e;
	}
	*out = root;
	return FLEET_OK;
}

fleet_err fleet_network_report_parse(const struct fleet_wire_bytes *b,
				     struct fleet_network_report *out, struct fleet_errctx *ec)
{
	json_t *root = NULL, *v;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(load_doc(b, FLEET_WIRE_MAX_REPORT, "network_report", report_keys, &root, ec));
	if (!(v = need(root, "chassis_id", &e, ec)))
		goto fail;
	TRY(wj_string(v, "network_report.chassis_id", 0, FLEET_WIRE_MAX_LLDP_FIELD,
		      out->chassis_id, ec));
	if (!(v = need(root, "port_id", &e, ec)))
		goto fail;
	TRY(wj_string(v, "network_report.port_id", 0, FLEET_WIRE_MAX_LLDP_FIELD, out->port_id,
		      ec));
	if (!(v = need(root, "system_name", &e, ec)))
		goto fail;
	TRY(wj_string(v, "network_report.system_name", 0, FLEET_WIRE_MAX_LLDP_FIELD,
		      out->system_name, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	memset(out, 0, sizeof(*out));
	return e;
}

fleet_err fleet_network_report_encode(const struct fleet_network_report *in,
				      struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || strlen(in->chassis_id) > FLEET_WIRE_MAX_LLDP_FIELD ||
	    strlen(in->port_id) > FLEET_WIRE_MAX_LLDP_FIELD ||
	    strlen(in->system_name) > FLEET_WIRE_MAX_LLDP_FIELD)
		return FLEET_E_INVALID_ARG;
	if (!(root = json_object()))
		return FLEET_E_NOMEM;
	rc |= wj_put_string(root, "chassis_id", in->chassis_id);
	rc |= wj_put_string(root, "port_id", in->port_id);
	rc |= wj_put_string(root, "system_name", in->system_name);
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

fleet_err fleet_ldevid_request_parse(const struct fleet_wire_bytes *b,
				     struct fleet_ldevid_request *out, struct fleet_errctx *ec)
{
	json_t *root = NULL, *v;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(load_doc(b, FLEET_WIRE_MAX_REQUEST, "ldevid_request", request_keys, &root, ec));
	if (!(v = need(root, "v", &e, ec)))
		goto fail;
	if (!json_is_integer(v) || json_integer_value(v) != FLEET_WIRE_VERSION) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "ldevid_request.v: not %d",
				     FLEET_WIRE_VERSION);
		goto fail;
	}
	if (!(v = need(root, "serial", &e, ec)))
		goto fail;
	TRY(wj_string(v, "ldevid_request.serial", 1, FLEET_WIRE_MAX_SERIAL, out->serial, ec));
	if (!(v = need(root, "spki_sha256", &e, ec)))
		goto fail;
	if (!json_is_string(v) || !fleet_hex_is_lower(json_string_value(v), 64) ||
	    fleet_hex_decode(json_string_value(v), 64, out->spki_sha256, 32) != FLEET_OK) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				     "ldevid_request.spki_sha256: not 64 lowercase hex digits");
		goto fail;
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	memset(out, 0, sizeof(*out));
	return e;
}

fleet_err fleet_ldevid_request_encode(const struct fleet_ldevid_request *in,
				      struct fleet_buf *out)
{
	char hex[65];
	json_t *root;
	int rc = 0;

	if (!in || !out || in->serial[0] == '\0' || strlen(in->serial) > FLEET_WIRE_MAX_SERIAL)
		return FLEET_E_INVALID_ARG;
	if (!(root = json_object()))
		return FLEET_E_NOMEM;
	fleet_hex_encode(in->spki_sha256, 32, hex);
	rc |= json_object_set_new(root, "v", json_integer(FLEET_WIRE_VERSION));
	rc |= wj_put_string(root, "serial", in->serial);
	rc |= json_object_set_new(root, "spki_sha256", json_string(hex));
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}
