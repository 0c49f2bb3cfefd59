/*
 * admission_answer.c: rounds 2 and 3 (admission.h, rules A1..A5, C1..C2).
 *
 * Each round checks its session out of the table and works on a copy of the
 * protocol state. The copy is committed only when the outcome should stick
 * (certificates issued); a round that fails authentication, or that cannot
 * finish because the inventory or the store did not answer, gives the
 * session back exactly as it was, so an unproven request ends nothing and
 * the machine can retry.
 */
#include "fleetd/admission/admission_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "fleetd/obs/journal.h"

/* One round on one checked-out session. */
struct round {
	struct fleet_admission *a;
	struct fleet_metric *counter; /* fleetd_answer_total or fleetd_confirm_total */
	struct adm_session *e;
	struct fleet_attest_session s; /* the working copy */
	char sid[65];
	struct adm_logf lf;
};

static void round_begin(struct round *r, struct fleet_admission *a, struct fleet_metric *counter,
			struct adm_session *e)
{
	memset(r, 0, sizeof(*r));
	r->a = a;
	r->counter = counter;
	r->e = e;
	r->s = e->s;
	adm_session_hex(e->s.id, r->sid);
	r->lf.claimed_serial = e->s.serial;
	r->lf.device = e->snap.name;
	r->lf.status = e->snap.status;
	r->lf.session = r->sid;
	r->lf.ek_hash = e->s.ek_hash;
	r->lf.ek_hash_ecc = e->s.ek_hash_ecc;
}

/* The session stays as it was: the working copy is thrown away. */
static void round_keep(struct round *r)
{
	adm_sessions_release(&r->a->sessions, r->e);
	fleet_attest_session_wipe(&r->s);
}

/* The session ends. */
static void round_close(struct round *r)
{
	adm_sessions_drop(&r->a->sessions, r->e);
	fleet_attest_session_wipe(&r->s);
}

/* A1: find the session. Returns 0 with *e checked out, or the status of the
 * reply written. Nothing about an unknown id is journaled: it proves
 * nothing, and a flood of them must not fill the journal. */
static int find_session(struct fleet_admission *a, struct fleet_metric *counter,
			const uint8_t id[FLEET_WIRE_ID_LEN], struct adm_session **e,
			struct fleet_buf *reply)
{
	switch (adm_sessions_acquire(&a->sessions, id, adm_now(a), e)) {
	case ADM_SESS_OK:
		return 0;
	case ADM_SESS_BUSY:
		/* the same machine's earlier try is still running: retry later */
		adm_count(counter, "busy");
		return 503;
	case ADM_SESS_EXPIRED:
	case ADM_SESS_UNKNOWN:
	default:
		adm_count(counter, "session-unknown");
		return adm_reply_status(reply, "refused");
	}
}

/* A2 / C1: the request is not proven to come from the challenged TPM. */
static int auth_failure(struct round *r, const char *reason, struct fleet_buf *reply)
{
	r->lf.reason = reason ? reason : "unauthenticated";
	adm_count(r->a->m.auth_failures, NULL);
	adm_count(r->counter, "auth-failure");
	adm_log(LOG_WARNING, "auth-failure", &r->lf,
		"not proven to come from the challenged TPM: no verdict, the session is "
		"left as it was");
	round_keep(r);
	return adm_reply_status(reply, "refused");
}

static int internal_error(struct round *r, const char *what, fleet_err e)
{
	adm_count(r->counter, "error");
	adm_log(LOG_ERR, "admission-error", &r->lf, "%s failed: %s; the session is left as it was",
		what, fleet_err_str(e));
	round_keep(r);
	return 500;
}

/* A4 / C2: the inventory read again. Returns 0 when unchanged, else the
 * status of the reply written (the session kept or closed as the rule says). */
static int check_again(struct round *r, struct fleet_buf *reply)
{
	char err[256] = "";
	const char *reason = NULL;
	switch (adm_reread(r->a, &r->e->snap, &reason, err, sizeof(err))) {
	case ADM_REREAD_SAME:
		return 0;
	case ADM_REREAD_UNAVAILABLE:
		r->lf.reason = "inventory-unavailable";
		r->lf.detail = err;
		adm_count(r->counter, "unavailable");
		adm_log(LOG_WARNING, "inventory-unavailable", &r->lf,
			"the inventory did not answer when read again: no verdict, nothing "
			"changed, the machine will retry");
		round_keep(r);
		return 503;
	case ADM_REREAD_CHANGED:
	default:
		r->lf.reason = reason;
		adm_count(r->counter, "refused");
		adm_log(LOG_WARNING, reason, &r->lf,
			"the inventory changed while the session ran: refused, no certificates");
		return -1; /* the caller closes */
	}
}

static void revoke_issued(struct round *r)
{
	struct fleet_admission *a = r->a;
	const char *sha1s[2] = {r->e->lak_sha1, r->e->ldevid_sha1};
	adm_store_lock(a);
	for (size_t i = 0; i < 2; i++) {
		if (!sha1s[i][0])
			continue;
		enum fleet_store_err se = fleet_store_cert_revoke(a->d.store, sha1s[i], adm_now(a));
		if (se != FLEET_STORE_OK) {
			adm_count(a->m.store_errors, NULL);
			r->lf.detail = sha1s[i];
			adm_log(LOG_ERR, "cert-revoke-failed", &r->lf,
				"an issued certificate could not be marked revoked (%s)",
				fleet_store_err_str(se));
		}
	}
	adm_store_unlock(a);
}

/* A5, the store's part: the admission, both certificates and the passing
 * verdict. Returns 0, or the status of a failure (the session kept). */
static int record_admission(struct round *r, const struct fleet_wire_verdict *v,
			    struct fleet_buf *reply)
{
	struct fleet_admission *a = r->a;
	const struct adm_snapshot *snap = &r->e->snap;
	time_t now = adm_now(a);
	enum fleet_store_err se;
	char lak[41] = "", ldevid[41] = "", why[256] = "";

	adm_store_lock(a);
	se = fleet_store_device_record_admission(a->d.store, snap->name, snap->serial,
						 snap->device_id, r->s.ek_hash, r->s.ek_hash_ecc,
						 now);
	if (se == FLEET_STORE_OK)
		se = fleet_store_cert_insert(a->d.store, snap->name, FLEET_STORE_CERT_LAK,
					     v->lak_cert.data, v->lak_cert.len, now, lak);
	if (se == FLEET_STORE_OK)
		se = fleet_store_cert_insert(a->d.store, snap->name, FLEET_STORE_CERT_LDEVID,
					     v->ldevid_cert.data, v->ldevid_cert.len, now, ldevid);
	if (se != FLEET_STORE_OK) {
		/* copied: the handle's message is only stable under the lock */
		snprintf(why, sizeof(why), "%s", fleet_store_errmsg(a->d.store));
		r->lf.detail = why;
		r->lf.reason = fleet_store_err_str(se);
		if (lak[0])
			(void)fleet_store_cert_revoke(a->d.store, lak, now);
	}
	adm_store_unlock(a);

	if (se == FLEET_STORE_E_EK_MISMATCH || se == FLEET_STORE_E_CONFLICT) {
		/* The store never rebinds a serial, nor renames a device. */
		r->lf.reason = se == FLEET_STORE_E_EK_MISMATCH ? "ek-mismatch" : "name-conflict";
		adm_count(r->counter, "refused");
		adm_log(LOG_WARNING, "admission-refused", &r->lf,
			"the store holds this device with other EKs or another name: refused, "
			"no certificates");
		round_close(r);
		return adm_reply_status(reply, "refused");
	}
	if (se != FLEET_STORE_OK) {
		adm_count(a->m.store_errors, NULL);
		adm_count(r->counter, "unavailable");
		adm_log(LOG_ERR, "admission-store-failed", &r->lf,
			"the admission could not be recorded: no certificates sent, the session "
			"is left as it was");
		round_keep(r);
		return 503;
	}
	memcpy(r->e->lak_sha1, lak, sizeof(lak));
	memcpy(r->e->ldevid_sha1, ldevid, sizeof(ldevid));
	if (adm_record_verdict(a, r->e, true, NULL, 0) != 0) {
		revoke_issued(r);
		r->e->lak_sha1[0] = r->e->ldevid_sha1[0] = '\0';
		adm_count(r->counter, "unavailable");
		round_keep(r);
		return 503;
	}
	return 0;
}

/* A5, the inventory's part: what the pass proved, for the owner and SPIRE.
 * It authorizes nothing; a failure is journaled and the store stays the
 * authority. */
static void write_inventory(struct round *r)
{
	struct fleet_admission *a = r->a;
	char err[256] = "";
	if (strcmp(r->e->ek_hash_inv, r->s.ek_hash) == 0 &&
	    strcmp(r->e->ek_hash_ecc_inv, r->s.ek_hash_ecc) == 0)
		return; /* already what this pass proved */
	enum fleet_inv_result ir = a->d.inventory->ops->write_ek_hashes(
		a->d.inventory, r->e->snap.device_id, r->s.ek_hash, r->s.ek_hash_ecc, err,
		sizeof(err));
	if (ir != FLEET_INV_OK) {
		adm_count(a->m.inventory_errors, NULL);
		r->lf.reason = fleet_inv_result_str(ir);
		r->lf.detail = err;
		adm_log(LOG_ERR, "inventory-write-failed", &r->lf,
			"ek_hash/ek_hash_ecc could not be written to the inventory; the store "
			"holds them and the next pass writes them");
	}
}

int fleet_admission_answer(struct fleet_admission *a, const uint8_t *body, size_t len,
			   struct fleet_buf *reply, const char **reject)
{
	struct fleet_wire_answer in;
	struct fleet_wire_verdict v;
	struct fleet_errctx ec;
	struct fleet_verdict verdict;
	struct fleet_attest_env env;
	struct adm_session *e = NULL;
	struct round r;
	const char *why = NULL;
	int status;

	*reject = NULL;
	memset(&ec, 0, sizeof(ec));
	memset(&v, 0, sizeof(v));
	fleet_err fe = fleet_wire_answer_decode(body, len, &in, &ec);
	if (fe != FLEET_OK) {
		fleet_wire_answer_free(&in);
		return adm_reply_malformed(fe, &ec, reject);
	}
	if ((status = find_session(a, a->m.answer, in.session, &e, reply)) != 0)
		goto out;
	round_begin(&r, a, a->m.answer, e);
	adm_env(a, e->profile, &env);

	/* A2 */
	fe = fleet_attest_answer(&env, &r.s, &in, &verdict, &why);
	if (fe != FLEET_OK && (fe == FLEET_E_VERIFY || why)) {
		status = auth_failure(&r, why, reply);
		goto out;
	}
	if (fe != FLEET_OK) {
		status = internal_error(&r, "judging the answer", fe);
		goto out;
	}

	/* A3: TPM-authenticated, and the profile refuses. */
	if (!verdict.pass) {
		const char *reasons[FLEET_VERDICT_MAX_REASONS];
		size_t n = 0;
		for (size_t i = 0; i < verdict.n_reasons && i < FLEET_VERDICT_MAX_REASONS; i++)
			reasons[n++] = verdict.reasons[i].reason;
		if (n == 0)
			reasons[n++] = "policy-failed";
		r.e->s = r.s; /* the verdict belongs to the authenticated session */
		(void)adm_record_verdict(a, r.e, false, reasons, n);
		r.lf.reason = reasons[0];
		r.lf.detail = verdict.n_reasons ? verdict.reasons[0].detail : NULL;
		adm_count(r.counter, "refused");
		adm_log(LOG_WARNING, "verdict-failed", &r.lf,
			"the TPM proved its boot and the profile refuses it (%zu reason%s): "
			"failed verdict written",
			n + verdict.n_dropped, n + verdict.n_dropped == 1 ? "" : "s");
		round_close(&r);
		status = adm_reply_status(reply, "refused");
		goto out;
	}

	/* A4 */
	if ((status = check_again(&r, reply)) != 0) {
		if (status < 0) {
			round_close(&r);
			status = adm_reply_status(reply, "refused");
		}
		goto out;
	}

	/* A5 */
	fe = fleet_attest_issue(&env, &r.s, r.e->snap.name, &v);
	if (fe != FLEET_OK) {
		status = internal_error(&r, "issuing the certificates", fe);
		goto out;
	}
	if ((status = record_admission(&r, &v, reply)) != 0)
		goto out;
	write_inventory(&r);
	fe = fleet_wire_verdict_encode(&v, reply);
	if (fe != FLEET_OK) {
		revoke_issued(&r);
		r.e->lak_sha1[0] = r.e->ldevid_sha1[0] = '\0';
		status = internal_error(&r, "encoding the verdict", fe);
		goto out;
	}
	r.e->s = r.s; /* commit: ISSUED, awaiting confirm */
	r.lf.reason = NULL;
	r.lf.detail = NULL;
	r.lf.ldevid_sha1 = r.e->ldevid_sha1;
	adm_count(r.counter, "admitted");
	adm_log(LOG_NOTICE, "certificates-issued", &r.lf,
		"boot verified, binding unchanged: LAK and LDevID certificates issued");
	adm_sessions_release(&a->sessions, r.e);
	fleet_attest_session_wipe(&r.s);
	status = 200;
out:
	OPENSSL_cleanse(&verdict, sizeof(verdict));
	fleet_wire_verdict_free(&v);
	fleet_wire_answer_free(&in);
	return status;
}

int fleet_admission_confirm(struct fleet_admission *a, const uint8_t *body, size_t len,
			    struct fleet_buf *reply, const char **reject)
{
	struct fleet_wire_confirm in;
	struct fleet_errctx ec;
	struct fleet_attest_env env;
	struct adm_session *e = NULL;
	struct round r;
	const char *why = NULL;
	int status;

	*reject = NULL;
	memset(&ec, 0, sizeof(ec));
	fleet_err fe = fleet_wire_confirm_decode(body, len, &in, &ec);
	if (fe != FLEET_OK) {
		fleet_wire_confirm_free(&in);
		return adm_reply_malformed(fe, &ec, reject);
	}
	if ((status = find_session(a, a->m.confirm, in.session, &e, reply)) != 0)
		goto out;
	round_begin(&r, a, a->m.confirm, e);
	adm_env(a, e->profile, &env);

	/* C1 */
	fe = fleet_attest_confirm(&env, &r.s, &in, &why);
	if (fe != FLEET_OK && (fe == FLEET_E_VERIFY || why)) {
		status = auth_failure(&r, why, reply);
		goto out;
	}
	if (fe != FLEET_OK) {
		status = internal_error(&r, "checking the confirmation", fe);
		goto out;
	}

	/* C2 */
	if ((status = check_again(&r, reply)) != 0) {
		if (status < 0) {
			revoke_issued(&r);
			round_close(&r);
			status = adm_reply_status(reply, "refused");
		}
		goto out;
	}
	adm_store_lock(a);
	enum fleet_store_err se = fleet_store_device_touch(a->d.store, r.e->snap.name, adm_now(a));
	if (se == FLEET_STORE_OK && r.e->first_admission)
		se = fleet_store_device_set_state(a->d.store, r.e->snap.name,
						  FLEET_STORE_STATE_ADMITTED);
	if (se != FLEET_STORE_OK) {
		r.lf.reason = fleet_store_err_str(se);
		r.lf.detail = fleet_store_errmsg(a->d.store);
		adm_count(a->m.store_errors, NULL);
		adm_log(LOG_ERR, "confirm-store-failed", &r.lf,
			"the confirmation could not be recorded; the session is left as it was");
	}
	adm_store_unlock(a);
	if (se != FLEET_STORE_OK) {
		adm_count(r.counter, "unavailable");
		round_keep(&r);
		status = 503;
		goto out;
	}
	struct fleet_wire_confirm_reply cr;
	memset(&cr, 0, sizeof(cr));
	cr.status = FLEET_WIRE_CONFIRMED;
	if ((fe = fleet_wire_confirm_reply_encode(&cr, reply)) != FLEET_OK) {
		status = internal_error(&r, "encoding the confirmation", fe);
		goto out;
	}
	r.lf.reason = NULL;
	r.lf.detail = NULL;
	adm_count(r.counter, "confirmed");
	adm_log(LOG_NOTICE, "device-admitted", &r.lf,
		"confirmation signed by the LDevID key, binding unchanged: admitted");
	round_close(&r);
	status = 200;
out:
	fleet_wire_confirm_free(&in);
	return status;
}
