/*
 * reattest_wire.c: encode and decode the re-check's and renewal's messages
 * (lib/reattest_wire.h is the format), through the checked readers of
 * attest_wire_json.c, so the admission and the re-check read JSON alike.
 */
#include "lib/reattest_wire.h"

#include <stdlib.h>
#include <string.h>

#include "lib/attest_wire_json.h"

/* ---- nonce request ------------------------------------------------------ */

static const char *const nonce_req_keys[] = {"v", "lak_cert", NULL};

fleet_err fleet_reattest_nonce_req_decode(const uint8_t *body, size_t len,
					  struct fleet_reattest_nonce_req *out,
					  struct fleet_errctx *ec)
{
	json_t *root = NULL;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load(body, len, nonce_req_keys, &root, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "lak_cert"), "lak_cert", FLEET_WIRE_MAX_CERT,
		        &out->lak_cert, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_reattest_nonce_req_free(out);
	return e;
}

fleet_err fleet_reattest_nonce_req_encode(const struct fleet_reattest_nonce_req *in,
					  struct fleet_buf *out)
{
	json_t *root;

	if (!in || !out || !wj_bytes_ok(&in->lak_cert, FLEET_WIRE_MAX_CERT))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	return wj_end(root, wj_put_bytes(root, "lak_cert", in->lak_cert.data, in->lak_cert.len),
		      out);
}

void fleet_reattest_nonce_req_free(struct fleet_reattest_nonce_req *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->lak_cert);
	memset(m, 0, sizeof(*m));
}

/* ---- nonce reply -------------------------------------------------------- */

static const char *const nonce_reply_keys[] = {"v", "nonce", "expires_in", "pcr_selection",
					       NULL};

fleet_err fleet_reattest_nonce_reply_decode(const uint8_t *body, size_t len,
					    struct fleet_reattest_nonce_reply *out,
					    struct fleet_errctx *ec)
{
	json_t *root = NULL;
	json_int_t expires;
	fleet_err e = FLEET_OK;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load(body, len, nonce_reply_keys, &root, ec));
	WJ_TRY(wj_fixed(json_object_get(root, "nonce"), "nonce", out->nonce, FLEET_WIRE_ID_LEN, ec));
	WJ_TRY(wj_int(json_object_get(root, "expires_in"), "expires_in", 1,
		         FLEET_REATTEST_MAX_EXPIRES, &expires, ec));
	out->expires_in = (unsigned)expires;
	WJ_TRY(wj_string(json_object_get(root, "pcr_selection"), "pcr_selection", 1,
		         FLEET_WIRE_MAX_SELECTION, out->pcr_selection, ec));
	TPML_PCR_SELECTION sel;
	if (fleet_pcr_selection_parse(out->pcr_selection, &sel) != FLEET_OK) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "pcr_selection: not bank:pcr,...");
		goto fail;
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_reattest_nonce_reply_free(out);
	return e;
}

fleet_err fleet_reattest_nonce_reply_encode(const struct fleet_reattest_nonce_reply *in,
					    struct fleet_buf *out)
{
	json_t *root;
	int rc = 0;

	TPML_PCR_SELECTION sel;
	if (!in || !out || in->expires_in < 1 || in->expires_in > FLEET_REATTEST_MAX_EXPIRES ||
	    strlen(in->pcr_selection) > FLEET_WIRE_MAX_SELECTION ||
	    fleet_pcr_selection_parse(in->pcr_selection, &sel) != FLEET_OK)
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_bytes(root, "nonce", in->nonce, FLEET_WIRE_ID_LEN);
	rc |= json_object_set_new(root, "expires_in", json_integer((json_int_t)in->expires_in));
	rc |= wj_put_string(root, "pcr_selection", in->pcr_selection);
	return wj_end(root, rc, out);
}

void fleet_reattest_nonce_reply_free(struct fleet_reattest_nonce_reply *m)
{
	if (m)
		memset(m, 0, sizeof(*m));
}

/* ---- check -------------------------------------------------------------- */

static const char *const check_keys[] = {"v",		 "lak_cert", "nonce",
					 "quote",	 "eventlog", "bios_version",
					 "report",	 "report_signature", "ldevid", NULL};
static const char *const quote_keys[] = {"attest", "signature", NULL};
static const char *const ldevid_keys[] = {"public", "request", "certify_attest",
					  "certify_signature", NULL};

/* The renewal's "ldevid" object, when the message has one. */
static fleet_err renew_decode(json_t *root, struct fleet_reattest_check *out,
			      struct fleet_errctx *ec)
{
	json_t *ld = json_object_get(root, "ldevid");
	fleet_err e;

	if (!ld)
		return FLEET_OK;
	if (!json_is_object(ld))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "ldevid: not an object");
	out->has_renew = true;
	if ((e = wj_keys(ld, ldevid_keys, "ldevid", ec)) ||
	    (e = wj_bytes(json_object_get(ld, "public"), "ldevid.public",
			  FLEET_WIRE_MAX_TPM_STRUCT, &out->renew_public, ec)) ||
	    (e = wj_bytes(json_object_get(ld, "request"), "ldevid.request",
			  FLEET_WIRE_MAX_REQUEST, &out->renew_request, ec)) ||
	    (e = wj_bytes(json_object_get(ld, "certify_attest"), "ldevid.certify_attest",
			  FLEET_WIRE_MAX_TPM_STRUCT, &out->renew_certify_attest, ec)) ||
	    (e = wj_bytes(json_object_get(ld, "certify_signature"), "ldevid.certify_signature",
			  FLEET_WIRE_MAX_TPM_STRUCT, &out->renew_certify_sig, ec)))
		return e;
	return FLEET_OK;
}

static int renew_encode(json_t *root, const struct fleet_reattest_check *in)
{
	json_t *ld;
	int rc = 0;

	if (!in->has_renew)
		return 0;
	if (!(ld = json_object()) || json_object_set_new(root, "ldevid", ld) != 0)
		return -1;
	rc |= wj_put_bytes(ld, "public", in->renew_public.data, in->renew_public.len);
	rc |= wj_put_bytes(ld, "request", in->renew_request.data, in->renew_request.len);
	rc |= wj_put_bytes(ld, "certify_attest", in->renew_certify_attest.data,
			   in->renew_certify_attest.len);
	rc |= wj_put_bytes(ld, "certify_signature", in->renew_certify_sig.data,
			   in->renew_certify_sig.len);
	return rc;
}

fleet_err fleet_reattest_check_decode(const uint8_t *body, size_t len,
				      struct fleet_reattest_check *out, struct fleet_errctx *ec)
{
	json_t *root = NULL, *q;
	fleet_err e = FLEET_OK;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load(body, len, check_keys, &root, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "lak_cert"), "lak_cert", FLEET_WIRE_MAX_CERT,
		        &out->lak_cert, ec));
	WJ_TRY(wj_fixed(json_object_get(root, "nonce"), "nonce", out->nonce, FLEET_WIRE_ID_LEN, ec));
	if (!(q = wj_need(root, "quote", "", &e, ec)))
		goto fail;
	if (!json_is_object(q)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "quote: not an object");
		goto fail;
	}
	WJ_TRY(wj_keys(q, quote_keys, "quote", ec));
	WJ_TRY(wj_bytes(json_object_get(q, "attest"), "quote.attest", FLEET_WIRE_MAX_TPM_STRUCT,
		        &out->quote_attest, ec));
	WJ_TRY(wj_bytes(json_object_get(q, "signature"), "quote.signature",
		        FLEET_WIRE_MAX_TPM_STRUCT, &out->quote_sig, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "eventlog"), "eventlog", FLEET_WIRE_MAX_EVENTLOG,
		        &out->eventlog, ec));
	WJ_TRY(wj_string(json_object_get(root, "bios_version"), "bios_version", 0,
		         FLEET_WIRE_MAX_BIOS, out->bios_version, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "report"), "report", FLEET_WIRE_MAX_REPORT,
		        &out->report, ec));
	WJ_TRY(wj_bytes(json_object_get(root, "report_signature"), "report_signature",
		        FLEET_WIRE_MAX_TPM_STRUCT, &out->report_sig, ec));
	WJ_TRY(renew_decode(root, out, ec));
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_reattest_check_free(out);
	return e;
}

fleet_err fleet_reattest_check_encode(const struct fleet_reattest_check *in,
				      struct fleet_buf *out)
{
	json_t *root, *q;
	int rc = 0;

	if (!in || !out || !wj_bytes_ok(&in->lak_cert, FLEET_WIRE_MAX_CERT) ||
	    !wj_bytes_ok(&in->quote_attest, FLEET_WIRE_MAX_TPM_STRUCT) ||
	    !wj_bytes_ok(&in->quote_sig, FLEET_WIRE_MAX_TPM_STRUCT) ||
	    !wj_bytes_ok(&in->eventlog, FLEET_WIRE_MAX_EVENTLOG) ||
	    !wj_bytes_ok(&in->report, FLEET_WIRE_MAX_REPORT) ||
	    !wj_bytes_ok(&in->report_sig, FLEET_WIRE_MAX_TPM_STRUCT) ||
	    strnlen(in->bios_version, sizeof(in->bios_version)) > FLEET_WIRE_MAX_BIOS ||
	    (in->has_renew && (!wj_bytes_ok(&in->renew_public, FLEET_WIRE_MAX_TPM_STRUCT) ||
			       !wj_bytes_ok(&in->renew_request, FLEET_WIRE_MAX_REQUEST) ||
			       !wj_bytes_ok(&in->renew_certify_attest, FLEET_WIRE_MAX_TPM_STRUCT) ||
			       !wj_bytes_ok(&in->renew_certify_sig, FLEET_WIRE_MAX_TPM_STRUCT))))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc |= wj_put_bytes(root, "lak_cert", in->lak_cert.data, in->lak_cert.len);
	rc |= wj_put_bytes(root, "nonce", in->nonce, FLEET_WIRE_ID_LEN);
	if (!(q = json_object()) || json_object_set_new(root, "quote", q) != 0) {
		json_decref(root);
		return FLEET_E_NOMEM;
	}
	rc |= wj_put_bytes(q, "attest", in->quote_attest.data, in->quote_attest.len);
	rc |= wj_put_bytes(q, "signature", in->quote_sig.data, in->quote_sig.len);
	rc |= wj_put_bytes(root, "eventlog", in->eventlog.data, in->eventlog.len);
	rc |= wj_put_string(root, "bios_version", in->bios_version);
	rc |= wj_put_bytes(root, "report", in->report.data, in->report.len);
	rc |= wj_put_bytes(root, "report_signature", in->report_sig.data, in->report_sig.len);
	rc |= renew_encode(root, in);
	return wj_end(root, rc, out);
}

void fleet_reattest_check_free(struct fleet_reattest_check *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->lak_cert);
	wj_bytes_free(&m->quote_attest);
	wj_bytes_free(&m->quote_sig);
	wj_bytes_free(&m->eventlog);
	wj_bytes_free(&m->report);
	wj_bytes_free(&m->report_sig);
	wj_bytes_free(&m->renew_public);
	wj_bytes_free(&m->renew_request);
	wj_bytes_free(&m->renew_certify_attest);
	wj_bytes_free(&m->renew_certify_sig);
	memset(m, 0, sizeof(*m));
}

/* ---- check reply -------------------------------------------------------- */

static const char *const check_reply_keys[] = {"v", "status", "lak_cert", "ldevid_cert", NULL};

fleet_err fleet_reattest_check_reply_decode(const uint8_t *body, size_t len,
					    struct fleet_reattest_check_reply *out,
					    struct fleet_errctx *ec)
{
	json_t *root = NULL, *v;
	fleet_err e = FLEET_OK;

	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	WJ_TRY(wj_load(body, len, check_reply_keys, &root, ec));
	if (!(v = wj_need(root, "status", "", &e, ec)))
		goto fail;
	if (json_is_string(v) && strcmp(json_string_value(v), "pass") == 0)
		out->status = FLEET_REATTEST_PASS;
	else if (json_is_string(v) && strcmp(json_string_value(v), "refused") == 0)
		out->status = FLEET_REATTEST_REFUSED;
	else if (json_is_string(v) && strcmp(json_string_value(v), "renewed") == 0)
		out->status = FLEET_REATTEST_RENEWED;
	else {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "status: not pass, refused or renewed");
		goto fail;
	}
	/* The certificates come with a renewal and only then. */
	if (out->status == FLEET_REATTEST_RENEWED) {
		WJ_TRY(wj_bytes(json_object_get(root, "lak_cert"), "lak_cert", FLEET_WIRE_MAX_CERT,
			        &out->lak_cert, ec));
		WJ_TRY(wj_bytes(json_object_get(root, "ldevid_cert"), "ldevid_cert",
			        FLEET_WIRE_MAX_CERT, &out->ldevid_cert, ec));
	} else if (json_object_get(root, "lak_cert") || json_object_get(root, "ldevid_cert")) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				     "lak_cert, ldevid_cert: only with status renewed");
		goto fail;
	}
	json_decref(root);
	return FLEET_OK;
fail:
	json_decref(root);
	fleet_reattest_check_reply_free(out);
	return e;
}

fleet_err fleet_reattest_check_reply_encode(const struct fleet_reattest_check_reply *in,
					    struct fleet_buf *out)
{
	json_t *root;
	const char *s;
	bool certs;
	int rc;

	if (!in || !out)
		return FLEET_E_INVALID_ARG;
	if (in->status == FLEET_REATTEST_PASS)
		s = "pass";
	else if (in->status == FLEET_REATTEST_REFUSED)
		s = "refused";
	else if (in->status == FLEET_REATTEST_RENEWED)
		s = "renewed";
	else
		return FLEET_E_INVALID_ARG;
	certs = in->status == FLEET_REATTEST_RENEWED;
	if (certs != (in->lak_cert.data != NULL) || certs != (in->ldevid_cert.data != NULL) ||
	    (certs && (!wj_bytes_ok(&in->lak_cert, FLEET_WIRE_MAX_CERT) ||
		       !wj_bytes_ok(&in->ldevid_cert, FLEET_WIRE_MAX_CERT))))
		return FLEET_E_INVALID_ARG;
	if (!(root = wj_start()))
		return FLEET_E_NOMEM;
	rc = wj_put_string(root, "status", s);
	if (certs) {
		rc |= wj_put_bytes(root, "lak_cert", in->lak_cert.data, in->lak_cert.len);
		rc |= wj_put_bytes(root, "ldevid_cert", in->ldevid_cert.data, in->ldevid_cert.len);
	}
	return wj_end(root, rc, out);
}

void fleet_reattest_check_reply_free(struct fleet_reattest_check_reply *m)
{
	if (!m)
		return;
	wj_bytes_free(&m->lak_cert);
	wj_bytes_free(&m->ldevid_cert);
	memset(m, 0, sizeof(*m));
}
