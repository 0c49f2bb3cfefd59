/*
 * attest_wire.c: encode and decode the six protocol messages
 * (lib/attest_wire.h is the format). A decoder fills its structure only
 * through the checked readers of attest_wire_json.c; on any error the
 * structure is freed and zeroed again, so a caller never holds half a
 * message.
 */
#include "lib/attest_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/attest_wire_json.h"
#include "lib/hex.h"

/* A member that may be absent or null (both mean "none"). */
static json_t *optional(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_null(v) ? NULL : v;
}

#define MISSING(path)                                                          \
	do {                                                                   \
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", path); \
		goto fail;                                                     \
	} while (0)
#define TRY(call)                         \
	do {                              \
		if ((e = (call)) != FLEET_OK) \
			goto fail;        \
	} while (0)

/* ---- intake ------------------------------------------------------------- */

static const char *const intake_keys[] = {
	"v", "serial", "product_uuid", "bios_version", "macs", "network_report", "ek_rsa",
	"ek_ecc", "ak_public", "ldevid", NULL};
static const char *const ek_keys[] = {"public", "cert", NULL};
static const char *const ldevid_keys[] = {"public", "request", "certify_attest",
					  "certify_signature", NULL};

static fleet_err decode_ek(const json_t *root, const char *key, struct fleet_wire_ek *ek,
			   struct fleet_errctx *ec)
{
	fleet_err e = FLEET_OK;
	char path[32];
	json_t *o;

	/* Required, but null when the machine has no such EK. */
	if (!wj_need(root, key, "", &e, ec))
		return e;
	if (!(o = optional(root, key)))
		return FLEET_OK;
	if (!json_is_object(o))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not an object or null", key);
	if ((e = wj_keys(o, ek_keys, key, ec)) != FLEET_OK)
		return e;
	ek->present = true;
	snprintf(path, sizeof(path), "%s.public", key);
	e = wj_bytes(json_object_get(o, "public"), path, FLEET_WIRE_MAX_TPM_STRUCT, &ek->pub, ec);
	if (e != FLEET_OK)
		return e;
	snprintf(path, sizeof(path), "%s.cert", key);
	return wj_bytes(json_object_get(o, "cert"), path, FLEET_WIRE_MAX_CERT, &ek->cert, ec);
}

fleet_err fleet_wire_intake_decode(const uint8_t *body, size_t len, struct fleet_wire_intake *out,
				   struct fleet_errctx *ec)
{
	json_t *root = NULL, *macs, *ld, *v;
	fleet_err e;
	size_t i;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(wj_load(body, len, intake_keys, &root, ec));
	TRY(wj_string(json_object_get(root, "serial"), "serial", 1, FLEET_WIRE_MAX_SERIAL, out->serial,
		      ec));
	TRY(wj_string(json_object_get(root, "product_uuid"), "product_uuid", 0, FLEET_WIRE_MAX_UUID,
		      out->product_uuid, ec));
	TRY(wj_string(json_object_get(root, "bios_version"), "bios_version", 0, FLEET_WIRE_MAX_BIOS,
		      out->bios_version, ec));
	if (!(macs = json_object_get(root, "macs")))
		MISSING("macs");
	if (!json_is_array(macs)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "macs: not an array");
		goto fail;
	}
	if (json_array_size(macs) > FLEET_WIRE_MAX_MACS) {
		e = fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "macs: %zu entries, over %u",
				     json_array_size(macs), FLEET_WIRE_MAX_MACS);
		goto fail;
	}
	json_array_foreach(macs, i, v) {
		char path[32];
		snprintf(path, sizeof(path), "macs[%zu]", i);
		TRY(wj_string(v, path, 0, FLEET_WIRE_MAC_LEN, out->macs[i], ec));
		if (!wj_mac_ok(out->macs[i])) {
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					     "%s: not a lowercase aa:bb:cc:dd:ee:ff address", path);
			goto fail;
		}
		out->n_macs = i + 1;
	}
	TRY(wj_bytes(json_object_get(root, "network_report"), "network_report", FLEET_WIRE_MAX_REPORT,
		     &out->network_report, ec));
	TRY(decode_ek(root, "ek_rsa", &out->ek_rsa, ec));
	TRY(decode_ek(root, "ek_ecc", &out->ek_ecc, ec));
	TRY(wj_bytes(json_object_get(root, "ak_public"), "ak_public", FLEET_WIRE_MAX_TPM_STRUCT,
		     &out->ak_public, ec));
	if (!(ld = json_object_get(root, "ldevid")))
		MISSING("ldevid");
	if (!json_is_object(ld)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "ldevid: not an object");
		goto fail;
	}
	TRY(wj_keys(ld, ldevid_keys, "ldevid", ec));
	TRY(wj_bytes(json_object_get(ld, "public"), "ldevid.public", FLEET_WIRE_MAX_TPM_STRUCT,
		     &out->ldevid_public, ec));
	TRY(wj_bytes(json_object_get(ld, "request"), "ldevid.request", FLEET_WIRE_MAX_REQUEST,
		     &out->ldevid_request, ec));
	TRY(wj_bytes(json_object_get(ld, "certify_attest"), "ldevid.certify_attest",
		     FLEET_WIRE_MAX_TPM_STRUCT, &out->ldevid_certify_attest, ec));
	TRY(wj_bytes(json_object_get(ld, "certify_signature"), "ldevid.certify_signature",
		     FLEET_WIRE_MAX_TPM_STRUCT, &out->ldevid_certify_sig, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_wire_intake_free(out);
	return e;
}

static int put_ek(json_t *root, const char *key, const struct fleet_wire_ek *ek)
{
	json_t *o;

	if (!ek->present)
		return json_object_set_new(root, key, json_null());
	if (ek->pub.len > FLEET_WIRE_MAX_TPM_STRUCT || ek->cert.len > FLEET_WIRE_MAX_CERT ||
	    !(o = json_object()))
		return -1;
	if (json_object_set_new(root, key, o) != 0)
		return -1;
	return wj_put_bytes(o, "public", ek->pub.data, ek->pub.len) |
	       wj_put_bytes(o, "cert", ek->cert.data, ek->cert.len);
}

fleet_err fleet_wire_intake_encode(const struct fleet_wire_intake *in, struct fleet_buf *out)
{
	json_t *root, *macs, *ld;
	int rc = 0;

	if (!in || !out || in->n_macs > FLEET_WIRE_MAX_MACS ||
	    in->network_report.len > FLEET_WIRE_MAX_REPORT ||
	    in->ak_public.len > FLEET_WIRE_MAX_TPM_STRUCT ||
	    in->ldevid_public.len > FLEET_WIRE_MAX_TPM_STRUCT ||
	    in->ldevid_request.len > FLEET_WIRE_MAX_REQUEST ||
	    in->ldevid_certify_attest.len > FLEET_WIRE_MAX_TPM_STRUCT ||
	    in->ldevid_certify_sig.len > FLEET_WIRE_MAX_TPM_STRUCT || in->serial[0] == '\0')
		return FLEET_E_INVALID_ARG;
	if (!(root = json_object()))
		return FLEET_E_NOMEM;
	rc |= json_object_set_new(root, "v", json_integer(FLEET_WIRE_VERSION));
	rc |= wj_put_string(root, "serial", in->serial);
	rc |= wj_put_string(root, "product_uuid", in->product_uuid);
	rc |= wj_put_string(root, "bios_version", in->bios_version);
	rc |= json_object_set_new(root, "macs", macs = json_array());
	for (size_t i = 0; rc == 0 && i < in->n_macs; i++)
		rc |= wj_mac_ok(in->macs[i])
			      ? json_array_append_new(macs, json_string(in->macs[i]))
			      : -1;
	rc |= wj_put_bytes(root, "network_report", in->network_report.data,
			   in->network_report.len);
	rc |= put_ek(root, "ek_rsa", &in->ek_rsa);
	rc |= put_ek(root, "ek_ecc", &in->ek_ecc);
	rc |= wj_put_bytes(root, "ak_public", in->ak_public.data, in->ak_public.len);
	rc |= json_object_set_new(root, "ldevid", ld = json_object());
	if (rc == 0) {
		rc |= wj_put_bytes(ld, "public", in->ldevid_public.data, in->ldevid_public.len);
		rc |= wj_put_bytes(ld, "request", in->ldevid_request.data, in->ldevid_request.len);
		rc |= wj_put_bytes(ld, "certify_attest", in->ldevid_certify_attest.data,
				   in->ldevid_certify_attest.len);
		rc |= wj_put_bytes(ld, "certify_signature", in->ldevid_certify_sig.data,
				   in->ldevid_certify_sig.len);
	}
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

void fleet_wire_intake_free(struct fleet_wire_intake *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->network_report);
	wj_bytes_free(&m->ek_rsa.pub);
	wj_bytes_free(&m->ek_rsa.cert);
	wj_bytes_free(&m->ek_ecc.pub);
	wj_bytes_free(&m->ek_ecc.cert);
	wj_bytes_free(&m->ak_public);
	wj_bytes_free(&m->ldevid_public);
	wj_bytes_free(&m->ldevid_request);
	wj_bytes_free(&m->ldevid_certify_attest);
	wj_bytes_free(&m->ldevid_certify_sig);
	memset(m, 0, sizeof(*m));
}

/* ---- credentials (intake reply, confirm reply) -------------------------- */

static const char *const cred_keys[] = {"id_object", "encrypted_secret", NULL};

static fleet_err decode_cred(const json_t *o, const char *key, struct fleet_wire_credential *c,
			     struct fleet_errctx *ec)
{
	fleet_err e = FLEET_OK;
	char path[48];

	if (!o)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", key);
	if (!json_is_object(o))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not an object", key);
	if ((e = wj_keys(o, cred_keys, key, ec)) != FLEET_OK)
		return e;
	c->present = true;
	snprintf(path, sizeof(path), "%s.id_object", key);
	e = wj_bytes(json_object_get(o, "id_object"), path, FLEET_WIRE_MAX_TPM_STRUCT,
		     &c->id_object, ec);
	if (e != FLEET_OK)
		return e;
	snprintf(path, sizeof(path), "%s.encrypted_secret", key);
	return wj_bytes(json_object_get(o, "encrypted_secret"), path, FLEET_WIRE_MAX_TPM_STRUCT,
			&c->enc_secret, ec);
}

static int put_cred(json_t *o, const struct fleet_wire_credential *c)
{
	if (c->id_object.len > FLEET_WIRE_MAX_TPM_STRUCT ||
	    c->enc_secret.len > FLEET_WIRE_MAX_TPM_STRUCT)
		return -1;
	return wj_put_bytes(o, "id_object", c->id_object.data, c->id_object.len) |
	       wj_put_bytes(o, "encrypted_secret", c->enc_secret.data, c->enc_secret.len);
}

static void cred_free(struct fleet_wire_credential *c)
{
	wj_bytes_free(&c->id_object);
	wj_bytes_free(&c->enc_secret);
	c->present = false;
}

/* ---- intake reply ------------------------------------------------------- */

static const char *const reply_keys[] = {"v", "status", "session", "nonce", "credential_rsa",
					 "credential_ecc", "pcr_selection", "deadline", NULL};
static const char *const reply_brief_keys[] = {"v", "status", NULL};

/* A pending or refused reply carries nothing else. */
static fleet_err only_status(const json_t *root, struct fleet_errctx *ec)
{
	return wj_keys(root, reply_brief_keys, "body", ec);
}

fleet_err fleet_wire_intake_reply_decode(const uint8_t *body, size_t len,
					 struct fleet_wire_intake_reply *out,
					 struct fleet_errctx *ec)
{
	static const char *const names[] = {"challenge", "pending", "refused"};
	static const enum fleet_wire_status vals[] = {FLEET_WIRE_CHALLENGE, FLEET_WIRE_PENDING,
						      FLEET_WIRE_REFUSED};
	json_t *root = NULL, *v;
	TPML_PCR_SELECTION sel;
	char when[21];
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(wj_load(body, len, reply_keys, &root, ec));
	TRY(wj_status(root, names, vals, 3, &out->status, ec));
	if (out->status != FLEET_WIRE_CHALLENGE) {
		TRY(only_status(root, ec));
		json_decref(root);
		return FLEET_OK;
	}
	TRY(wj_fixed(json_object_get(root, "session"), "session", out->session, FLEET_WIRE_ID_LEN, ec));
	TRY(wj_fixed(json_object_get(root, "nonce"), "nonce", out->nonce, FLEET_WIRE_ID_LEN, ec));
	TRY(decode_cred(json_object_get(root, "credential_rsa"), "credential_rsa", &out->cred_rsa, ec));
	if (!json_object_get(root, "credential_ecc"))
		MISSING("credential_ecc");
	if ((v = optional(root, "credential_ecc")))
		TRY(decode_cred(v, "credential_ecc", &out->cred_ecc, ec));
	TRY(wj_string(json_object_get(root, "pcr_selection"), "pcr_selection", 1,
		      FLEET_WIRE_MAX_SELECTION, out->pcr_selection, ec));
	if (fleet_pcr_selection_parse(out->pcr_selection, &sel) != FLEET_OK) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcr_selection: not bank:pcr,...");
		goto fail;
	}
	TRY(wj_string(json_object_get(root, "deadline"), "deadline", 20, 20, when, ec));
	if (wj_time_parse(when, &out->deadline) != FLEET_OK) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				     "deadline: not YYYY-MM-DDThh:mm:ssZ (UTC)");
		goto fail;
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_wire_intake_reply_free(out);
	return e;
}

static const char *status_name(enum fleet_wire_status s)
{
	switch (s) {
	case FLEET_WIRE_CHALLENGE: return "challenge";
	case FLEET_WIRE_PENDING: return "pending";
	case FLEET_WIRE_REFUSED: return "refused";
	case FLEET_WIRE_ADMITTED: return "admitted";
	case FLEET_WIRE_CONFIRMED: return "confirmed";
	}
	return NULL;
}

/* {"v":1,"status":".."}; the status must be one this message may carry. */
static json_t *start(enum fleet_wire_status s, enum fleet_wire_status full)
{
	json_t *root;

	if (s != full && s != FLEET_WIRE_PENDING && s != FLEET_WIRE_REFUSED)
		return NULL;
	if (full == FLEET_WIRE_CONFIRMED && s == FLEET_WIRE_PENDING)
		return NULL; /* a confirmation is never pending */
	if (!(root = json_object()))
		return NULL;
	if (json_object_set_new(root, "v", json_integer(FLEET_WIRE_VERSION)) != 0 ||
	    json_object_set_new(root, "status", json_string(status_name(s))) != 0) {
		json_decref(root);
		return NULL;
	}
	return root;
}

fleet_err fleet_wire_intake_reply_encode(const struct fleet_wire_intake_reply *in,
					 struct fleet_buf *out)
{
	json_t *root, *c;
	TPML_PCR_SELECTION sel;
	char when[21];
	int rc = 0;

	if (!in || !out || !(root = start(in->status, FLEET_WIRE_CHALLENGE)))
		return FLEET_E_INVALID_ARG;
	if (in->status != FLEET_WIRE_CHALLENGE)
		return wj_finish(root, out);
	if (!in->cred_rsa.present || strlen(in->pcr_selection) > FLEET_WIRE_MAX_SELECTION ||
	    fleet_pcr_selection_parse(in->pcr_selection, &sel) != FLEET_OK ||
	    wj_time_format(in->deadline, when) != FLEET_OK)
		rc = -1;
	rc |= wj_put_bytes(root, "session", in->session, FLEET_WIRE_ID_LEN);
	rc |= wj_put_bytes(root, "nonce", in->nonce, FLEET_WIRE_ID_LEN);
	rc |= json_object_set_new(root, "credential_rsa", c = json_object());
	rc |= rc == 0 ? put_cred(c, &in->cred_rsa) : -1;
	if (in->cred_ecc.present) {
		rc |= json_object_set_new(root, "credential_ecc", c = json_object());
		rc |= rc == 0 ? put_cred(c, &in->cred_ecc) : -1;
	} else {
		rc |= json_object_set_new(root, "credential_ecc", json_null());
	}
	rc |= rc == 0 ? wj_put_string(root, "pcr_selection", in->pcr_selection) : -1;
	rc |= rc == 0 ? wj_put_string(root, "deadline", when) : -1;
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

void fleet_wire_intake_reply_free(struct fleet_wire_intake_reply *m)
{
	if (!m)
		return;
	cred_free(&m->cred_rsa);
	cred_free(&m->cred_ecc);
	memset(m, 0, sizeof(*m));
}

/* ---- verdict ------------------------------------------------------------ */

static const char *const verdict_keys[] = {"v", "status", "lak_cert", "ldevid_cert", "ca_cert",
					   NULL};

fleet_err fleet_wire_verdict_decode(const uint8_t *body, size_t len, struct fleet_wire_verdict *out,
				    struct fleet_errctx *ec)
{
	static const char *const names[] = {"admitted", "pending", "refused"};
	static const enum fleet_wire_status vals[] = {FLEET_WIRE_ADMITTED, FLEET_WIRE_PENDING,
						      FLEET_WIRE_REFUSED};
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(wj_load(body, len, verdict_keys, &root, ec));
	TRY(wj_status(root, names, vals, 3, &out->status, ec));
	if (out->status != FLEET_WIRE_ADMITTED) {
		TRY(only_status(root, ec));
		json_decref(root);
		return FLEET_OK;
	}
	TRY(wj_bytes(json_object_get(root, "lak_cert"), "lak_cert", FLEET_WIRE_MAX_CERT, &out->lak_cert,
		     ec));
	TRY(wj_bytes(json_object_get(root, "ldevid_cert"), "ldevid_cert", FLEET_WIRE_MAX_CERT,
		     &out->ldevid_cert, ec));
	TRY(wj_bytes(json_object_get(root, "ca_cert"), "ca_cert", FLEET_WIRE_MAX_CERT, &out->ca_cert,
		     ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_wire_verdict_free(out);
	return e;
}

fleet_err fleet_wire_verdict_encode(const struct fleet_wire_verdict *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || !(root = start(in->status, FLEET_WIRE_ADMITTED)))
		return FLEET_E_INVALID_ARG;
	if (in->status == FLEET_WIRE_ADMITTED) {
		if (in->lak_cert.len > FLEET_WIRE_MAX_CERT ||
		    in->ldevid_cert.len > FLEET_WIRE_MAX_CERT ||
		    in->ca_cert.len > FLEET_WIRE_MAX_CERT)
			rc = -1;
		rc |= wj_put_bytes(root, "lak_cert", in->lak_cert.data, in->lak_cert.len);
		rc |= wj_put_bytes(root, "ldevid_cert", in->ldevid_cert.data, in->ldevid_cert.len);
		rc |= wj_put_bytes(root, "ca_cert", in->ca_cert.data, in->ca_cert.len);
	}
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

void fleet_wire_verdict_free(struct fleet_wire_verdict *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->lak_cert);
	wj_bytes_free(&m->ldevid_cert);
	wj_bytes_free(&m->ca_cert);
	memset(m, 0, sizeof(*m));
}

/* ---- confirm ------------------------------------------------------------ */

static const char *const confirm_keys[] = {"v", "session", "signature", NULL};

fleet_err fleet_wire_confirm_decode(const uint8_t *body, size_t len, struct fleet_wire_confirm *out,
				    struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(wj_load(body, len, confirm_keys, &root, ec));
	TRY(wj_fixed(json_object_get(root, "session"), "session", out->session, FLEET_WIRE_ID_LEN, ec));
	TRY(wj_bytes(json_object_get(root, "signature"), "signature", FLEET_WIRE_MAX_TPM_STRUCT,
		     &out->signature, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_wire_confirm_free(out);
	return e;
}

fleet_err fleet_wire_confirm_encode(const struct fleet_wire_confirm *in, struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	if (!in || !out || in->signature.len > FLEET_WIRE_MAX_TPM_STRUCT)
		return FLEET_E_INVALID_ARG;
	if (!(root = json_object()))
		return FLEET_E_NOMEM;
	rc |= json_object_set_new(root, "v", json_integer(FLEET_WIRE_VERSION));
	rc |= wj_put_bytes(root, "session", in->session, FLEET_WIRE_ID_LEN);
	rc |= wj_put_bytes(root, "signature", in->signature.data, in->signature.len);
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

void fleet_wire_confirm_free(struct fleet_wire_confirm *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->signature);
	memset(m, 0, sizeof(*m));
}

/* ---- confirm reply ------------------------------------------------------ */

static const char *const confirm_reply_keys[] = {"v", "status", "provision", NULL};
static const char *const provision_keys[] = {"id_object", "encrypted_secret", "proof", NULL};

fleet_err fleet_wire_confirm_reply_decode(const uint8_t *body, size_t len,
					  struct fleet_wire_confirm_reply *out,
					  struct fleet_errctx *ec)
{
	static const char *const names[] = {"confirmed", "refused"};
	static const enum fleet_wire_status vals[] = {FLEET_WIRE_CONFIRMED, FLEET_WIRE_REFUSED};
	json_t *root = NULL, *p, *sub = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	TRY(wj_load(body, len, confirm_reply_keys, &root, ec));
	TRY(wj_status(root, names, vals, 2, &out->status, ec));
	if (out->status != FLEET_WIRE_CONFIRMED) {
		TRY(only_status(root, ec));
		json_decref(root);
		return FLEET_OK;
	}
	if (!json_object_get(root, "provision"))
		MISSING("provision");
	if (!(p = optional(root, "provision"))) {
		json_decref(root);
		return FLEET_OK;
	}
	if (!json_is_object(p)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "provision: not an object or null");
		goto fail;
	}
	TRY(wj_keys(p, provision_keys, "provision", ec));
	/* The code's credential is the two fields beside the proof. */
	if (!json_object_get(p, "id_object"))
		MISSING("provision.id_object");
	if (!json_object_get(p, "encrypted_secret"))
		MISSING("provision.encrypted_secret");
	if (!(sub = json_object()) ||
	    json_object_set(sub, "id_object", json_object_get(p, "id_object")) != 0 ||
	    json_object_set(sub, "encrypted_secret", json_object_get(p, "encrypted_secret")) != 0) {
		e = FLEET_E_NOMEM;
		goto fail;
	}
	TRY(decode_cred(sub, "provision", &out->code, ec));
	TRY(wj_bytes(json_object_get(p, "proof"), "provision.proof", FLEET_WIRE_MAX_CERT,
		     &out->proof, ec));
	out->has_provision = true;
	json_decref(sub);
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(sub);
	json_decref(root);
	fleet_wire_confirm_reply_free(out);
	return e;
}

fleet_err fleet_wire_confirm_reply_encode(const struct fleet_wire_confirm_reply *in,
					  struct fleet_buf *out)
{
	json_t *root, *p;
	int rc = 0;

	if (!in || !out || !(root = start(in->status, FLEET_WIRE_CONFIRMED)))
		return FLEET_E_INVALID_ARG;
	if (in->status == FLEET_WIRE_CONFIRMED) {
		if (!in->has_provision) {
			rc |= json_object_set_new(root, "provision", json_null());
		} else if (!in->code.present || in->proof.len > FLEET_WIRE_MAX_CERT) {
			rc = -1;
		} else {
			rc |= json_object_set_new(root, "provision", p = json_object());
			rc |= rc == 0 ? put_cred(p, &in->code) : -1;
			rc |= rc == 0 ? wj_put_bytes(p, "proof", in->proof.data, in->proof.len) : -1;
		}
	}
	if (rc != 0) {
		json_decref(root);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(root, out);
}

void fleet_wire_confirm_reply_free(struct fleet_wire_confirm_reply *m)
{
	if (!m)
		return;
	cred_free(&m->code);
	wj_bytes_free(&m->proof);
	memset(m, 0, sizeof(*m));
}
