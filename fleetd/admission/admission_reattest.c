/*
 * admission_reattest.c: the hourly re-check's two rounds (admission.h
 * R-1..R-6; fleetd/reattest/reattest.h decides, this file writes what the
 * decision allows: the verdict, the quarantine, the cordon, the alert).
 */
#include "fleetd/admission/admission_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fleetd/obs/journal.h"
#include "lib/hex.h"
#include "lib/reattest_wire.h"
#include "policy/profile.h"

/* What both rounds need first: the device a LAK certificate names, as the
 * store holds it, and its class as the inventory says (bounded: R-1). 0,
 * or the status of the reply written. */
struct rdev {
	char device[FLEET_STORE_NAME_MAX + 1];
	struct fleet_store_device row;
	struct fleet_inv_device inv;
	const struct fleet_profile *profile;
};

static int unproven(struct fleet_admission *a, const char *reason, struct fleet_buf *reply)
{
	struct adm_logf lf = {.reason = reason};
	char key[96];
	snprintf(key, sizeof(key), "reattest-unproven:%s", reason);
	adm_count(a->m.unproven, ADM_UNPROVEN_REATTEST);
	adm_count(a->m.reattest, "unproven");
	adm_log_limited(a, key, LOG_WARNING, "reattest-unproven", &lf,
			"a re-check proved nothing (%s): nothing written", reason);
	return adm_reply_status(reply, "refused");
}

static int unavailable(struct fleet_admission *a, const char *what, const char *detail)
{
	struct adm_logf lf = {.reason = what, .detail = detail};
	adm_count(a->m.reattest, "unavailable");
	adm_log_limited(a, what, LOG_WARNING, "reattest-unavailable", &lf,
			"a re-check could not be judged now (%s): nothing written; the node "
			"retries",
			what);
	return 503;
}

static int find_device(struct fleet_admission *a, const struct fleet_reattest_env *env,
		       const struct fleet_wire_bytes *lak, struct rdev *d, struct fleet_buf *reply)
{
	memset(d, 0, sizeof(*d));
	struct fleet_decision dd = fleet_reattest_lak_device(env, lak, d->device);
	if (dd.outcome == FLEET_REFUSED)
		return unproven(a, dd.reason, reply);
	if (dd.outcome != FLEET_PASSED)
		return unavailable(a, "lak-check-failed", NULL);
	fleet_err se = fleet_store_device_get_by_name(a->d.store, d->device, &d->row);
	if (se == FLEET_STORE_E_NOT_FOUND)
		return unproven(a, "lak-unknown", reply);
	if (se != FLEET_STORE_OK)
		return unavailable(a, "store-error", fleet_store_errmsg(a->d.store));
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	bool over = false;
	fleet_err r = adm_lookup_device(&a->lookup, d->row.serial, &d->inv, &over, &ec);
	if (over)
		return unavailable(a, "lookup-budget", NULL);
	if (r == FLEET_INV_NOT_FOUND)
		return unproven(a, "device-not-in-inventory", reply);
	if (r != FLEET_INV_OK)
		return unavailable(a, adm_inventory_reason(r), fleet_errctx_text(&ec, err, sizeof(err)));
	if (strcmp(d->inv.name, d->device) != 0)
		return unproven(a, "device-renamed", reply);
	if (!(d->profile = adm_profile_for(a, d->inv.class_name)))
		return unproven(a, "class-unknown", reply);
	return 0;
}

static void env_of(struct fleet_admission *a, struct fleet_reattest_env *env)
{
	*env = (struct fleet_reattest_env){
		.ca = a->d.ca,
		.store = a->d.store,
		.nonces = a->nonces,
		.now = adm_now(a),
		.cert_validity_days = a->d.config->cert_validity_days,
	};
}

int fleet_admission_reattest_nonce(struct fleet_admission *a, const uint8_t *body, size_t len,
				   struct fleet_buf *reply, const char **reject)
{
	struct fleet_reattest_nonce_req in;
	struct fleet_errctx ec = {0};
	*reject = NULL;
	fleet_err fe = fleet_reattest_nonce_req_decode(body, len, &in, &ec);
	if (fe != FLEET_OK) {
		fleet_reattest_nonce_req_free(&in);
		return adm_reply_malformed(fe, &ec, reject);
	}
	struct fleet_reattest_env env;
	env_of(a, &env);
	struct rdev d;
	int status = find_device(a, &env, &in.lak_cert, &d, reply);
	if (status) {
		fleet_reattest_nonce_req_free(&in);
		/* A nonce reply has no status: a refusal is the HTTP status
		 * (403), its body the generic refusal. */
		return status == 200 ? 403 : status;
	}
	struct fleet_reattest_nonce_reply out;
	memset(&out, 0, sizeof(out));
	struct fleet_decision dn = fleet_reattest_nonce(&env, &in, &out);
	fleet_reattest_nonce_req_free(&in);
	if (dn.outcome == FLEET_REFUSED)
		return unproven(a, dn.reason, reply) == 200 ? 403 : 503;
	if (dn.outcome != FLEET_PASSED)
		return unavailable(a, "nonce-failed", NULL);
	if (fleet_profile_selection(d.profile, out.pcr_selection, sizeof(out.pcr_selection)) !=
		    FLEET_OK ||
	    fleet_reattest_nonce_reply_encode(&out, reply) != FLEET_OK) {
		adm_count(a->m.reattest, "error");
		return 500;
	}
	return 200;
}

/* was the device's last verdict a pass? (false when it has none) */
static bool last_passed(struct fleet_admission *a, const char *device)
{
	struct fleet_store_verdict *v = NULL;
	size_t n = 0;
	bool pass = false;
	if (fleet_store_verdicts_list(a->d.store, device, 1, &v, &n) == FLEET_STORE_OK && n)
		pass = v[0].pass;
	free(v);
	return pass;
}

static int judged(struct fleet_admission *a, const struct rdev *d,
		  const struct fleet_reattest_result *res, struct fleet_decision dc,
		  const char *nonce_hex, struct fleet_buf *reply);

/* the check passed; now the renewal (RN1-RN8). The reply is
 * "renewed" with both certificates, or "pass": the check stands, the
 * renewal was refused, and the reason stays here. */
static int renew(struct fleet_admission *a, const struct fleet_reattest_env *env,
		 const struct fleet_reattest_input *ri, const struct fleet_reattest_result *res,
		 const struct rdev *d, const char *nonce_hex, struct fleet_buf *reply)
{
	struct fleet_reattest_renewed out;
	struct fleet_decision dr = fleet_reattest_renew(env, ri, res, &out);
	struct adm_logf lf = {.device = d->device, .session = nonce_hex, .status = d->inv.status};
	char key[FLEET_STORE_NAME_MAX + 64]; /* the limiter keeps its first 128 bytes */

	fb_reset(reply); /* the check's "pass" is replaced by the renewal's answer */
	if (dr.outcome == FLEET_FAILED) {
		adm_count(a->m.renewals, "unavailable");
		return unavailable(a, "renewal-failed", NULL);
	}
	if (dr.outcome == FLEET_REFUSED) {
		/* The node proved itself (the check passed): this is its own
		 * state, journaled once per device and reason per window. */
		lf.reason = dr.reason;
		snprintf(key, sizeof(key), "renewal-refused:%.40s:%s", dr.reason, d->device);
		adm_count(a->m.renewals, "refused");
		adm_log_limited(a, key, LOG_WARNING, "renewal-refused", &lf,
				"%s passed its re-check but may not renew (%s): nothing issued",
				d->device, dr.reason);
		return adm_reply_status(reply, "pass");
	}
	struct fleet_reattest_check_reply r = {
		.status = FLEET_REATTEST_RENEWED, .lak_cert = out.lak_cert, .ldevid_cert = out.ldevid_cert};
	fleet_err e = fleet_reattest_check_reply_encode(&r, reply);
	lf.ldevid_sha1 = out.ldevid_sha1;
	lf.detail = out.lak_sha1;
	adm_count(a->m.renewals, "renewed");
	if (out.again)
		adm_log(LOG_NOTICE, "certificates-renewed", &lf,
			"%s asked again for the renewal of a key it already has a certificate "
			"for (an answer lost): LDevID %s and LAK %s sent again, nothing issued",
			d->device, out.ldevid_sha1, out.lak_sha1);
	else
		adm_log(LOG_NOTICE, "certificates-renewed", &lf,
			"%s renewed with a key its LAK certified: LDevID %s, LAK %s; the old ones "
			"stay listed until their notAfter",
			d->device, out.ldevid_sha1, out.lak_sha1);
	fleet_reattest_renewed_free(&out);
	if (e != FLEET_OK) {
		/* Recorded but not answered: the node still holds certificates
		 * that work (RA5) and renews again (RN5 counts this one). */
		adm_count(a->m.reattest, "error");
		return 500;
	}
	return 200;
}

static int reattest_round(struct fleet_admission *a, const uint8_t *body, size_t len,
			  bool renewal, struct fleet_buf *reply, const char **reject)
{
	struct fleet_reattest_check in;
	struct fleet_errctx ec = {0};
	*reject = NULL;
	fleet_err fe = fleet_reattest_check_decode(body, len, &in, &ec);
	if (fe == FLEET_OK && in.has_renew != renewal)
		fe = fleet_errctx_msg(&ec, FLEET_E_MALFORMED,
				      renewal ? "ldevid: a renewal carries the next key"
					      : "ldevid: only in a renewal (/v1/reattest/renew)");
	if (fe != FLEET_OK) {
		fleet_reattest_check_free(&in);
		return adm_reply_malformed(fe, &ec, reject);
	}
	struct fleet_reattest_env env;
	env_of(a, &env);
	struct rdev d;
	int status = find_device(a, &env, &in.lak_cert, &d, reply);
	if (status) {
		fleet_reattest_check_free(&in);
		return status;
	}
	struct fleet_reattest_input ri = {
		.msg = &in, .profile = d.profile, .inventory_status = d.inv.status, .renewal = renewal};
	struct fleet_reattest_result res;
	struct fleet_decision dc = fleet_reattest_check(&env, &ri, &res);
	char nonce_hex[2 * FLEET_WIRE_ID_LEN + 1];
	fleet_hex_encode(in.nonce, FLEET_WIRE_ID_LEN, nonce_hex);

	if (dc.outcome == FLEET_FAILED) {
		fleet_reattest_check_free(&in);
		return unavailable(a, "check-failed", NULL);
	}
	if (!res.authenticated) { /* */
		fleet_reattest_check_free(&in);
		return dc.outcome == FLEET_PASSED ? unavailable(a, "check-failed", NULL)
						  : unproven(a, dc.reason, reply);
	}
	status = judged(a, &d, &res, dc, nonce_hex, reply);
	if (status == 200 && dc.outcome == FLEET_PASSED && renewal)
		status = renew(a, &env, &ri, &res, &d, nonce_hex, reply);
	fleet_reattest_check_free(&in);
	return status;
}

int fleet_admission_reattest_check(struct fleet_admission *a, const uint8_t *body, size_t len,
				   struct fleet_buf *reply, const char **reject)
{
	return reattest_round(a, body, len, false, reply, reject);
}

int fleet_admission_reattest_renew(struct fleet_admission *a, const uint8_t *body, size_t len,
				   struct fleet_buf *reply, const char **reject)
{
	return reattest_round(a, body, len, true, reply, reject);
}

/* what the TPM-authenticated outcome writes. */
static int judged(struct fleet_admission *a, const struct rdev *d,
		  const struct fleet_reattest_result *res, struct fleet_decision dc,
		  const char *nonce_hex, struct fleet_buf *reply)
{
	struct adm_verdict_who who = {
		.device = d->device,
		.serial = d->row.serial,
		.claimed_serial = d->row.serial,
		.session = nonce_hex,
		.ek_hash = d->row.ek_hash,
		.ek_hash_ecc = d->row.ek_hash_ecc,
	};
	struct adm_logf lf = {.device = d->device, .session = nonce_hex, .status = d->inv.status};
	if (dc.outcome == FLEET_PASSED) {
		/* */
		if (!last_passed(a, d->device) && adm_record_verdict_who(a, &who, true, NULL, 0, NULL))
			return unavailable(a, "store-error", NULL);
		adm_count(a->m.reattest, "pass");
		return adm_reply_status(reply, "pass");
	}

	/* the TPM itself says this node no longer boots what its class
	 * allows (or its clock went backwards). */
	const char *reasons[FLEET_STORE_MAX_REASONS];
	size_t n = 0;
	reasons[n++] = dc.reason;
	for (size_t i = 0; i < res->verdict.n_reasons && n < FLEET_STORE_MAX_REASONS; i++)
		if (res->verdict.reasons[i].reason &&
		    strcmp(res->verdict.reasons[i].reason, dc.reason) != 0)
			reasons[n++] = res->verdict.reasons[i].reason;
	if (adm_record_verdict_who(a, &who, false, reasons, n, NULL))
		return unavailable(a, "store-error", NULL);
	adm_count(a->m.reattest, "refused");
	bool known = false;
	bool cp = !a->d.is_controlplane ||
		  a->d.is_controlplane(a->d.reattest_ctx, d->inv.class_name, &known) || !known;
	adm_count(a->m.reattest_failed, cp ? "controlplane" : "worker");
	lf.reason = dc.reason;
	lf.detail = res->verdict.n_reasons ? res->verdict.reasons[0].detail : NULL;
	if (cp) {
		adm_log(LOG_CRIT, "reattest-failed", &lf,
			"a %s failed its re-check with TPM-signed evidence (%s): failed verdict "
			"written, no cordon; it may lose its fleet-owned SPIRE registration at the "
			"next pass",
			known ? "control plane" : "node of a class of unknown role", dc.reason);
		return adm_reply_status(reply, "refused");
	}
	char why[FLEET_STORE_QREASON_MAX + 1];
	snprintf(why, sizeof(why), "reattest: %s", dc.reason);
	fleet_err se = fleet_store_device_set_quarantine(a->d.store, d->device, true, why, adm_now(a));
	if (se != FLEET_STORE_OK) {
		lf.detail = fleet_store_errmsg(a->d.store);
		adm_count(a->m.store_errors, NULL);
		adm_log(LOG_ERR, "quarantine-failed", &lf,
			"a worker failed its re-check with TPM-signed evidence but could not be "
			"quarantined in the store; its failed verdict stands");
		return adm_reply_status(reply, "refused");
	}
	adm_log(LOG_WARNING, "device-quarantined", &lf,
		"a worker failed its re-check with TPM-signed evidence (%s): failed verdict, "
		"quarantined, renewal blocked%s",
		dc.reason, a->d.cordon ? ", cordon requested" : "; no Kubernetes API: no cordon");
	if (a->d.cordon)
		a->d.cordon(a->d.reattest_ctx, d->device);
	return adm_reply_status(reply, "refused");
}
