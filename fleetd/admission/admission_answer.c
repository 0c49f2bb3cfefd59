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
	/* What lf.detail points at when a step words its own detail: it lives
	 * as long as the round, so no journal entry after that step reads a
	 * buffer of a function that has returned. */
	char detail[512];
	uint64_t t0; /* adm_mono_ms() when the round began */
	struct fleet_inv_device fresh; /* the last re-read (A4, C2), when the same */
};

static void round_begin(struct round *r, struct fleet_admission *a, struct fleet_metric *counter,
			struct adm_session *e)
{
	memset(r, 0, sizeof(*r));
	r->t0 = adm_mono_ms();
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
	case ADM_SESS_STORE:
		adm_count(a->m.store_errors, NULL);
		adm_count(counter, "unavailable");
		return 503;
	case ADM_SESS_EXPIRED:
	case ADM_SESS_UNKNOWN:
	default:
		adm_count(counter, "session-unknown");
		return adm_reply_status(reply, "refused");
	}
}

/* A2 / C1: the request is not proven to come from the challenged TPM. It
 * proves nothing, so it is counted, and journaled as the first of its
 * reason in the window. */
static int auth_failure(struct round *r, const char *unproven, const char *reason,
			struct fleet_buf *reply)
{
	char key[96];
	r->lf.reason = reason ? reason : "unauthenticated";
	snprintf(key, sizeof(key), "auth-failure/%s", r->lf.reason);
	adm_count(r->a->m.auth_failures, NULL);
	adm_count(r->a->m.unproven, unproven);
	adm_count(r->counter, "auth-failure");
	adm_log_limited(r->a, key, LOG_WARNING, "auth-failure", &r->lf,
			"not proven to come from the challenged TPM: no verdict, the session is "
			"left as it was");
	round_keep(r);
	return adm_reply_status(reply, "refused");
}

static int internal_error(struct round *r, const char *what, fleet_err e)
{
	/* A crypto library failure's cause is still on this thread's OpenSSL
	 * queue: read it (and empty the queue) for the journal. */
	char ossl[160] = "";
	fleet_openssl_drain(ossl, sizeof(ossl));
	adm_count(r->counter, "error");
	adm_log(LOG_ERR, "admission-error", &r->lf,
		"%s failed: %s%s%s%s; the session is left as it was", what, fleet_err_str(e),
		ossl[0] ? " (openssl: " : "", ossl, ossl[0] ? ")" : "");
	round_keep(r);
	return 500;
}

/* A4 / C2: the round's deadline, checked after its last inventory read and
 * before anything is issued or recorded (what follows is local: signing and
 * one store transaction). A round past it keeps the session exactly as it
 * was and answers 503: the machine, which gives up on a request after its
 * own longer timeout, retries the same session, and nothing it never
 * received (certificates, an admission) exists. Returns 0 when in time. */
static int check_deadline(struct round *r, const char *what)
{
	uint64_t ran_ms;
	if (!adm_round_late(r->a, r->t0, &ran_ms))
		return 0;
	snprintf(r->detail, sizeof(r->detail), "%llu ms", (unsigned long long)ran_ms);
	r->lf.reason = "round-late";
	r->lf.detail = r->detail;
	adm_count(r->counter, "late");
	adm_log(LOG_WARNING, "round-late", &r->lf,
		"the round ran past sessions.round_seconds: %s, the session is left as it "
		"was, the machine retries",
		what);
	round_keep(r);
	return 503;
}

/* A4 / C2: the inventory read again. Returns 0 when unchanged, else the
 * status of the reply written (the session kept or closed as the rule says). */
static int check_again(struct round *r, struct fleet_buf *reply)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	const char *reason = NULL;
	switch (adm_reread(r->a, &r->e->snap, &reason, &ec, &r->fresh)) {
	case ADM_REREAD_SAME:
		return 0;
	case ADM_REREAD_UNAVAILABLE:
		r->lf.reason = reason ? reason : "inventory-unavailable";
		r->lf.detail = fleet_errctx_text(&ec, err, sizeof(err));
		adm_count(r->counter, "unavailable");
		/* fleetd's own out of memory, whichever layer ran out, is said
		 * as such: the inventory may well have answered. */
		if (fleet_err_code(ec.err) == FLEET_CODE_NOMEM)
			adm_log(LOG_WARNING, "inventory-unavailable", &r->lf,
				"the inventory could not be read again: fleetd is out of memory; "
				"no verdict, nothing changed, the machine will retry");
		else
			adm_log(LOG_WARNING, "inventory-unavailable", &r->lf,
				"the inventory did not answer when read again: no verdict, nothing "
				"changed, the machine will retry");
		r->lf.detail = NULL; /* err is this function's */
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

/* The session ends here without an admission: what it was issued is
 * revoked (adm_session_ended journals exactly which), then it closes. */
static void round_end(struct round *r, const char *why)
{
	(void)adm_session_ended(r->a, r->e, why);
	round_close(r);
}

/* A2 / C1: what the round's judging said. 0 when it passed; else the
 * status of the reply written: a refusal is unproven (the session kept),
 * a failure fleetd's own (500, the session kept). */
static int judged(struct round *r, struct fleet_decision d, const char *unproven,
		  const char *what, struct fleet_buf *reply)
{
	switch (d.outcome) {
	case FLEET_PASSED:
		return 0;
	case FLEET_REFUSED:
		return auth_failure(r, unproven, d.reason, reply);
	case FLEET_FAILED:
	default: /* a decision never made is no pass */
		return internal_error(r, what, d.err);
	}
}

/* A4 / C2: the inventory read again, then the round's deadline. 0 when
 * both hold; else the status of the reply written. */
static int recheck(struct round *r, const char *what, struct fleet_buf *reply)
{
	int status = check_again(r, reply);
	if (status < 0) {
		round_end(r, r->lf.reason);
		return adm_reply_status(reply, "refused");
	}
	if (status)
		return status;
	return check_deadline(r, what);
}

/* A2, proven, for a proof-only session: the pending claim, with the EK
 * hashes the TPM just proved. Claims grant nothing; they show an operator
 * which machines wait, with which EKs. */
static int record_claim(struct round *r, struct fleet_buf *reply)
{
	struct fleet_admission *a = r->a;
	const char *serial = r->e->snap.serial[0] ? r->e->snap.serial : r->e->s.serial;
	r->detail[0] = '\0';
	fleet_err se = fleet_store_claim_upsert(a->d.store, serial, r->e->claim_reason,
							   r->s.ek_hash, r->s.ek_hash_ecc,
							   adm_now(a));
	if (se != FLEET_STORE_OK)
		snprintf(r->detail, sizeof(r->detail), "%s", fleet_store_errmsg(a->d.store));
	r->lf.reason = r->e->claim_reason;
	r->lf.detail = r->detail;
	if (se == FLEET_STORE_OK) {
		adm_count(r->counter, "pending");
		adm_log(LOG_NOTICE, "intake-pending", &r->lf,
			"the TPM proved its EKs; no decision: pending claim recorded (%s)",
			r->e->claim_reason);
	} else {
		adm_log(LOG_ERR, "claim-store-failed", &r->lf,
			"the pending claim could not be recorded (%s)", fleet_err_str(se));
	}
	/* The secrets are spent: the machine starts again with an intake. */
	adm_lookup_forget(&a->lookup, r->e->s.serial);
	round_close(r);
	if (se == FLEET_STORE_E_BUSY || se == FLEET_STORE_E_IO) {
		adm_count(a->m.store_errors, NULL);
		adm_count(r->counter, "unavailable");
		return 503;
	}
	if (se != FLEET_STORE_OK && se != FLEET_STORE_E_FULL)
		adm_count(a->m.store_errors, NULL);
	/* A full claims table still answers "pending": the machine has no
	 * decision either way, and the journal says the claim was not kept. */
	return adm_reply_status(reply, "pending");
}

/* A5, the store's part: both certificates, provisionally, in one
 * transaction. Returns 0, or the status of a failure (the session kept:
 * nothing was recorded and nothing sent, so the answer may come again). */
static int record_provisional(struct round *r, const struct fleet_wire_verdict *v)
{
	struct fleet_admission *a = r->a;
	char lak[41] = "", ldevid[41] = "";
	struct fleet_store_issue_in in = {
		.session = r->sid,
		.serial = r->e->snap.serial,
		.device = r->e->snap.name,
		.lak_der = v->lak_cert.data,
		.lak_len = v->lak_cert.len,
		.ldevid_der = v->ldevid_cert.data,
		.ldevid_len = v->ldevid_cert.len,
		.now = adm_now(a),
	};
	fleet_err se = fleet_store_provisional_issue(a->d.store, &in, lak, ldevid);
	if (se != FLEET_STORE_OK)
		snprintf(r->detail, sizeof(r->detail), "%s", fleet_store_errmsg(a->d.store));
	if (se != FLEET_STORE_OK) {
		r->lf.reason = fleet_err_str(se);
		r->lf.detail = r->detail;
		adm_count(a->m.store_errors, NULL);
		adm_count(r->counter, "unavailable");
		adm_log(LOG_ERR, "admission-store-failed", &r->lf,
			"the certificates could not be recorded: none sent, the session is left "
			"as it was");
		round_keep(r);
		return 503;
	}
	memcpy(r->e->lak_sha1, lak, sizeof(lak));
	memcpy(r->e->ldevid_sha1, ldevid, sizeof(ldevid));
	return 0;
}

/* C2, the inventory's part: what the pass proved, for the owner and SPIRE.
 * It authorizes nothing; a failure is journaled and the store stays the
 * authority. */
static void write_inventory(struct round *r)
{
	struct fleet_admission *a = r->a;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	if (strcmp(r->e->ek_hash_inv, r->s.ek_hash) == 0 &&
	    strcmp(r->e->ek_hash_ecc_inv, r->s.ek_hash_ecc) == 0)
		return; /* already what this pass proved */
	fleet_err ir = a->d.inventory->ops->write_ek_hashes(
		a->d.inventory, r->e->snap.device_id, r->s.ek_hash, r->s.ek_hash_ecc, &ec);
	if (ir != FLEET_INV_OK) {
		adm_count(a->m.inventory_errors, NULL);
		r->lf.reason = fleet_err_str(ir);
		r->lf.detail = fleet_errctx_text(&ec, err, sizeof(err));
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
	int status;

	*reject = NULL;
	memset(&ec, 0, sizeof(ec));
	memset(&v, 0, sizeof(v));
	memset(&verdict, 0, sizeof(verdict));
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
	status = judged(&r, fleet_attest_answer(&env, &r.s, &in, &verdict), ADM_UNPROVEN_ANSWER,
			"judging the answer", reply);
	if (status)
		goto out;
	/* TPM-authenticated: this machine's latest proof wins. The other
	 * sessions of its serial (forgeries, or its own earlier tries) end,
	 * and the reaper revokes whatever they were issued. */
	size_t superseded = adm_sessions_prove(&a->sessions, r.e);
	if (superseded)
		adm_log(LOG_INFO, "sessions-superseded", &r.lf,
			"the TPM proved this session: %zu other session%s of the serial end",
			superseded, superseded == 1 ? "" : "s");
	if (r.e->claim) {
		status = record_claim(&r, reply);
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
		round_end(&r, "verdict-failed");
		status = adm_reply_status(reply, "refused");
		goto out;
	}

	/* A4 */
	if ((status = recheck(&r, "no certificates issued", reply)) != 0)
		goto out;

	/* A5: provisional until C2. */
	fe = fleet_attest_issue(&env, &r.s, r.e->snap.name, &v);
	if (fe != FLEET_OK) {
		status = internal_error(&r, "issuing the certificates", fe);
		goto out;
	}
	if ((status = record_provisional(&r, &v)) != 0)
		goto out;
	fe = fleet_wire_verdict_encode(&v, reply);
	if (fe != FLEET_OK) {
		/* Nothing left fleetd: revoke the rows at once. */
		adm_count(r.counter, "error");
		adm_log(LOG_ERR, "admission-error", &r.lf, "encoding the verdict failed: %s",
			fleet_err_str(fe));
		round_end(&r, "internal-error");
		status = 500;
		goto out;
	}
	r.e->s = r.s; /* commit: ISSUED, awaiting confirm */
	r.lf.reason = NULL;
	r.lf.detail = NULL;
	r.lf.ldevid_sha1 = r.e->ldevid_sha1;
	adm_count(r.counter, "admitted");
	adm_log(LOG_NOTICE, "certificates-issued", &r.lf,
		"boot verified, binding unchanged: LAK and LDevID certificates issued, "
		"provisional until the device confirms");
	adm_sessions_release(&a->sessions, r.e);
	fleet_attest_session_wipe(&r.s);
	status = 200;
out:
	OPENSSL_cleanse(&verdict, sizeof(verdict));
	fleet_wire_verdict_free(&v);
	fleet_wire_answer_free(&in);
	return status;
}

/* C2: the admission, in one transaction. Returns 0, or the status of the
 * reply written (the session kept or ended as the outcome says). */
static int admit(struct round *r, struct fleet_buf *reply)
{
	struct fleet_admission *a = r->a;
	const struct adm_snapshot *snap = &r->e->snap;
	r->detail[0] = '\0';
	int64_t verdict_id = 0;
	struct fleet_store_admit_in in = {
		.session = r->sid,
		.device = snap->name,
		.serial = snap->serial,
		.inventory_id = snap->device_id,
		.ek_hash = r->s.ek_hash,
		.ek_hash_ecc = r->s.ek_hash_ecc,
		.may_create = r->e->first_admission,
		.now = adm_now(a),
	};
	/* The passing verdict's line right after its commit (verdict_mu). */
	adm_verdicts_lock(a);
	fleet_err se = fleet_store_admit(a->d.store, &in, &verdict_id);
	if (se != FLEET_STORE_OK)
		snprintf(r->detail, sizeof(r->detail), "%s", fleet_store_errmsg(a->d.store));
	else
		adm_vlog_append(a, verdict_id, r->e, true, NULL, 0);
	adm_verdicts_unlock(a);
	if (se == FLEET_STORE_OK)
		return 0;
	r->lf.detail = r->detail;
	if (se == FLEET_STORE_E_BUSY || se == FLEET_STORE_E_IO || se == FLEET_STORE_E_NOMEM) {
		r->lf.reason = fleet_err_str(se);
		adm_count(a->m.store_errors, NULL);
		adm_count(r->counter, "unavailable");
		adm_log(LOG_ERR, "confirm-store-failed", &r->lf,
			"the admission could not be recorded; the session is left as it was");
		round_keep(r);
		return 503;
	}
	/* The store never rebinds a serial, nor renames a device; a device
	 * past planned must be one it admitted; and the session's
	 * certificates must still be there, unrevoked. */
	r->lf.reason = se == FLEET_STORE_E_EK_MISMATCH ? "ek-mismatch"
		       : se == FLEET_STORE_E_NOT_FOUND ? "ek-not-recorded"
						       : "store-conflict";
	adm_count(r->counter, "refused");
	adm_log(LOG_WARNING, "admission-refused", &r->lf,
		"the store refuses this admission: refused, the certificates revoked");
	round_end(r, r->lf.reason);
	return adm_reply_status(reply, "refused");
}

int fleet_admission_confirm(struct fleet_admission *a, const uint8_t *body, size_t len,
			    struct fleet_buf *reply, const char **reject)
{
	struct fleet_wire_confirm in;
	struct fleet_errctx ec;
	struct fleet_attest_env env;
	struct adm_session *e = NULL;
	struct round r;
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
	status = judged(&r, fleet_attest_confirm(&env, &r.s, &in), ADM_UNPROVEN_CONFIRM,
			"checking the confirmation", reply);
	if (status)
		goto out;

	/* C2 */
	if ((status = recheck(&r, "not admitted", reply)) != 0)
		goto out;
	if ((status = admit(&r, reply)) != 0)
		goto out;
	write_inventory(&r);
	struct fleet_wire_confirm_reply cr;
	memset(&cr, 0, sizeof(cr));
	cr.status = FLEET_WIRE_CONFIRMED;
	/* Authorise installation, in the same process, on the fresh read the
	 * admission was decided on (install.h S1-S8); whatever it says, the
	 * machine is admitted. */
	if (a->d.provision)
		a->d.provision(a->d.provision_ctx, &r.fresh, &r.s, &cr);
	fe = fleet_wire_confirm_reply_encode(&cr, reply);
	fleet_wire_confirm_reply_free(&cr);
	if (fe != FLEET_OK) {
		/* Admitted already (the store says so); the machine's retry of
		 * the confirm finds no session and starts again. */
		adm_count(r.counter, "error");
		adm_log(LOG_ERR, "admission-error", &r.lf, "encoding the confirmation failed: %s",
			fleet_err_str(fe));
		round_close(&r);
		status = 500;
		goto out;
	}
	r.lf.reason = NULL;
	r.lf.detail = NULL;
	r.lf.ldevid_sha1 = r.e->ldevid_sha1;
	adm_count(r.counter, "confirmed");
	adm_log(LOG_NOTICE, "device-admitted", &r.lf,
		"confirmation signed by the LDevID key, binding unchanged: admitted");
	adm_lookup_forget(&a->lookup, r.e->s.serial);
	round_close(&r);
	status = 200;
out:
	fleet_wire_confirm_free(&in);
	return status;
}
