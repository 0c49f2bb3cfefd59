/*
 * admission_intake.c: round 1 (admission.h, rules I1..I8).
 *
 * The intake decides whether this machine may be challenged. Nothing it
 * holds is TPM-authenticated yet, so nothing here writes a verdict: the
 * outcomes are a challenge, a pending claim, a refusal (journaled with its
 * reason; the machine hears only "refused") or 503 when fleetd cannot
 * decide now (the inventory or the store did not answer).
 */
#include "fleetd/admission/admission_int.h"

#include <stdio.h>
#include <string.h>

#include "fleetd/obs/journal.h"

/* What one intake is working with. */
struct intake {
	struct fleet_admission *a;
	const struct fleet_wire_intake *in;
	struct adm_session *e; /* reserved entry (checked out) */
	struct fleet_attest_session s; /* filled by fleet_attest_intake */
	struct fleet_inv_device dev;
	struct adm_logf lf;
	uint64_t t0; /* adm_mono_ms() when the round began */
};

/* The limiter's key for what this intake caused: the reason, and the
 * inventory's device name once there is one (never the claimed serial: an
 * attacker varies that at will). */
static void key_of(const struct intake *t, const char *what, const char *reason, char *key,
		   size_t cap)
{
	snprintf(key, cap, "%s/%s%s%s", what, reason, t->lf.device ? "/" : "",
		 t->lf.device ? t->lf.device : "");
}

/* A refusal. An intake proves nothing, so the journal holds the first of
 * each kind per window (per device once the inventory named one: the spec
 * journals a port mismatch or an unexpected boot, and one device's line
 * cannot hide another's), the counters every one. */
static int refuse(struct intake *t, const char *reason, struct fleet_buf *reply,
		  const char *fmt, const char *detail)
{
	char key[256];
	t->lf.reason = reason;
	t->lf.detail = detail;
	key_of(t, "intake-refused", reason, key, sizeof(key));
	adm_log_limited(t->a, key, LOG_WARNING, "intake-refused", &t->lf, "%s", fmt);
	adm_count(t->a->m.intake, "refused");
	return adm_reply_status(reply, "refused");
}

static int unavailable(struct intake *t, const char *what, fleet_err r,
		       const struct fleet_errctx *ec)
{
	char err[sizeof(ec->detail) + 80];
	t->lf.reason = adm_inventory_reason(r);
	t->lf.detail = fleet_errctx_text(ec, err, sizeof(err));
	adm_log_limited(t->a, "intake-unavailable", LOG_WARNING, "intake-unavailable", &t->lf,
			"%s %s; the machine will retry, nothing is recorded", what,
			r == FLEET_INV_NOMEM ? "could not be read: fleetd is out of memory"
					     : "did not answer");
	t->lf.detail = NULL; /* err is this function's */
	adm_count(t->a->m.intake, "unavailable");
	return 503;
}

/* Not now, for reasons that say nothing about the machine: 503, retried. */
static int busy(struct intake *t, const char *unproven, const char *reason)
{
	char key[64];
	t->lf.reason = reason;
	snprintf(key, sizeof(key), "intake-busy/%s", reason);
	adm_log_limited(t->a, key, LOG_NOTICE, "intake-busy", &t->lf,
			"not now (%s): the machine retries; nothing is recorded", reason);
	adm_count(t->a->m.unproven, unproven);
	adm_count(t->a->m.intake, "busy");
	return 503;
}

static int challenge(struct intake *t, const struct fleet_profile *profile,
		     const struct adm_snapshot *snap, const char *claim, struct fleet_buf *reply);

/* I3 / I7: no decision can be made for this machine, and an intake alone
 * proves nothing: challenge it without a profile, and let the answer write
 * the pending claim once its TPM proved the EKs (admission_answer.c). */
static int pending(struct intake *t, const struct adm_snapshot *snap, const char *why,
		   struct fleet_buf *reply)
{
	return challenge(t, NULL, snap, why, reply);
}

/* expected_port names the switch port the machine's LLDP neighbour reports:
 * the port id alone ("Ethernet12"), or qualified by the neighbour's system
 * name as "sw1/Ethernet12" or "sw1:Ethernet12". Each form is an exact
 * match. LLDP is not authenticated (the AK signs what the machine saw), so
 * this catches miswiring, not an attacker. */
static bool port_matches(const char *expected, const struct fleet_network_report *r)
{
	size_t sl = strlen(r->system_name);
	if (!r->port_id[0])
		return false;
	if (strcmp(expected, r->port_id) == 0)
		return true;
	return sl > 0 && strncmp(expected, r->system_name, sl) == 0 &&
	       (expected[sl] == '/' || expected[sl] == ':') &&
	       strcmp(expected + sl + 1, r->port_id) == 0;
}

static bool ek_equal(const char *presented, const char *approved)
{
	return strcmp(presented, approved) == 0;
}

/* I7 when the change log holds no change that set the binding (NetBox
 * purged it after CHANGELOG_RETENTION): the author is proven only by
 * fleetd's own record of that change, made by a pass while the log held
 * it, and only while the record is of exactly this device id, serial and
 * both approved hashes. Returns 0 to go on, else the reply's status. */
static int author_from_record(struct intake *t, struct adm_snapshot *snap,
			      struct fleet_buf *reply)
{
	struct fleet_admission *a = t->a;
	struct fleet_store_binding_author rec;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	switch (adm_author_recorded(a, snap->device_id, snap->serial, snap->approved_ek_hash,
				    snap->approved_ek_hash_ecc, &rec, &ec)) {
	case ADM_AUTHOR_RECORDED:
		break;
	case ADM_AUTHOR_NONE:
		return refuse(t, "binding-author", reply,
			      "the binding was not written by the binding author",
			      "no recorded change set the binding, and fleetd holds no record of "
			      "its author for these values");
	default:
		t->lf.reason = "store-error";
		t->lf.detail = fleet_errctx_text(&ec, err, sizeof(err));
		adm_log_limited(a, "intake-store-failed", LOG_ERR, "intake-store-failed", &t->lf,
				"the store could not be read; nothing is decided");
		t->lf.detail = NULL; /* err is this function's */
		adm_count(a->m.intake, "unavailable");
		return 503;
	}
	char key[256], at[32], detail[FLEET_STORE_NAME_MAX + 96];
	adm_author_time(rec.recorded_at, at);
	snprintf(detail, sizeof(detail), "change %lld by %s recorded at %s",
		 (long long)rec.change_id, rec.user, at);
	t->lf.detail = detail;
	key_of(t, "binding-author-from-record", "record", key, sizeof(key));
	adm_log_limited(a, key, LOG_NOTICE, "binding-author-from-record", &t->lf,
			"the change log holds no change that set the binding; its author came "
			"from fleetd's record of change %lld, recorded at %s",
			(long long)rec.change_id, at);
	t->lf.detail = NULL;
	snap->change_found = false;
	snap->author_record = true;
	snap->change_id = (long)rec.change_id;
	return 0;
}

/* I7 for a planned device. Returns 0 to go on to the challenge, else the
 * HTTP status of the reply already written. */
static int check_planned(struct intake *t, struct adm_snapshot *snap, struct fleet_buf *reply)
{
	struct fleet_admission *a = t->a;
	const struct fleet_inv_device *d = &t->dev;
	struct fleet_inv_binding_change ch;
	struct fleet_errctx ec = {0};
	bool has_ecc = t->s.ek_hash_ecc[0] != '\0';

	/* An approved RSA EK that is not this one is a different machine, whatever
	 * else the binding lacks: refused, never a claim on the device's serial. */
	if (d->approved_ek_hash[0] && !ek_equal(t->s.ek_hash, d->approved_ek_hash))
		return refuse(t, "ek-not-approved", reply,
			      "an EK is not the approved one; the binding is left as it is", NULL);
	if (!d->approved_ek_hash[0] || (has_ecc && !d->approved_ek_hash_ecc[0]))
		return pending(t, snap, FLEET_STORE_CLAIM_NO_BINDING, reply);
	if (!ek_equal(t->s.ek_hash_ecc, d->approved_ek_hash_ecc))
		return refuse(t, "ek-not-approved", reply,
			      "an EK is not the approved one; the binding is left as it is",
			      !has_ecc && d->approved_ek_hash_ecc[0]
				      ? "the binding approves an ECC EK the machine did not present"
				      : NULL);
	memset(&ch, 0, sizeof(ch));
	if (!adm_lookup_budget(&a->lookup))
		return busy(t, ADM_UNPROVEN_BUDGET, "inventory-budget");
	fleet_err r =
		a->d.inventory->ops->binding_change(a->d.inventory, d->id, &ch, &ec);
	if (r != FLEET_INV_OK) {
		adm_count(a->m.inventory_errors, NULL);
		return unavailable(t, "the inventory's change log", r, &ec);
	}
	/* A change the log holds wins over any record: a later change by
	 * anyone else is refused, whatever fleetd recorded before it. */
	if (!ch.found)
		return author_from_record(t, snap, reply);
	if (strcmp(ch.user, a->d.config->binding_author) != 0) {
		char who[FLEET_LOG_CLAIMED_BUF + 64];
		snprintf(who, sizeof(who), "latest binding change %ld by %s", ch.change_id,
			 ch.user);
		return refuse(t, "binding-author", reply,
			      "the binding was not written by the binding author", who);
	}
	snap->change_found = true;
	snap->change_id = ch.change_id;
	return 0;
}

/* I7 for a device past planned: its EKs are held to fleetd's own store. */
static int check_known(struct intake *t, struct adm_snapshot *snap, struct fleet_buf *reply)
{
	struct fleet_admission *a = t->a;
	const struct fleet_inv_device *d = &t->dev;
	struct fleet_inv_binding_change ch;
	struct fleet_errctx ec = {0};

	struct fleet_decision dec =
		fleet_store_device_check_eks(a->d.store, d->serial, t->s.ek_hash, t->s.ek_hash_ecc);
	switch (dec.outcome) {
	case FLEET_PASSED:
		break;
	case FLEET_REFUSED:
		return refuse(t, dec.reason, reply,
			      dec.err == FLEET_STORE_E_NOT_FOUND
				      ? "a device past planned that fleetd never admitted"
				      : "the EKs are not the ones fleetd's store holds for this device",
			      NULL);
	case FLEET_FAILED:
	default: /* a decision never made is no pass */
		t->lf.reason = fleet_err_str(dec.err);
		t->lf.detail = fleet_store_errmsg(a->d.store);
		adm_log_limited(a, "intake-store-failed", LOG_ERR, "intake-store-failed", &t->lf,
				"the store could not be read; nothing is decided");
		adm_count(a->m.store_errors, NULL);
		adm_count(a->m.intake, "unavailable");
		return 503;
	}
	if (strcmp(d->status, "active") == 0 &&
	    (!d->desired_action[0] || strcmp(d->desired_action, "none") == 0)) {
		adm_count(a->m.unexpected_boot, NULL);
		return refuse(t, "unexpected-boot", reply,
			      "an active device booted HookOS without a requested run; its "
			      "identity is left untouched",
			      NULL);
	}
	memset(&ch, 0, sizeof(ch));
	if (!adm_lookup_budget(&a->lookup))
		return busy(t, ADM_UNPROVEN_BUDGET, "inventory-budget");
	fleet_err r =
		a->d.inventory->ops->binding_change(a->d.inventory, d->id, &ch, &ec);
	if (r != FLEET_INV_OK) {
		adm_count(a->m.inventory_errors, NULL);
		return unavailable(t, "the inventory's change log", r, &ec);
	}
	snap->change_found = ch.found;
	snap->change_id = ch.change_id;
	return 0;
}

/* I8: the challenge; the entry becomes an open session. claim: the
 * pending claim's reason for a proof-only session (profile NULL). */
static int challenge(struct intake *t, const struct fleet_profile *profile,
		     const struct adm_snapshot *snap, const char *claim, struct fleet_buf *reply)
{
	struct fleet_admission *a = t->a;
	struct fleet_attest_env env;
	struct fleet_wire_intake_reply out;
	char sid[65];
	int status = 200;

	/* The round's deadline, after its last inventory read: a challenge
	 * the machine may no longer be waiting for would hold a place in the
	 * session table for nothing. */
	uint64_t ran_ms;
	if (adm_round_late(a, t->t0, &ran_ms)) {
		char detail[48];
		snprintf(detail, sizeof(detail), "%llu ms", (unsigned long long)ran_ms);
		t->lf.reason = "round-late";
		t->lf.detail = detail;
		adm_log_limited(a, "intake-late", LOG_WARNING, "round-late", &t->lf,
				"the intake ran past sessions.round_seconds: no challenge, the "
				"machine retries");
		adm_count(a->m.intake, "late");
		return 503;
	}
	adm_env(a, profile, &env);
	memset(&out, 0, sizeof(out));
	if (fleet_attest_challenge(&env, t->in, &t->s, &out) != FLEET_OK ||
	    fleet_wire_intake_reply_encode(&out, reply) != FLEET_OK) {
		fleet_wire_intake_reply_free(&out);
		adm_log_limited(a, "intake-error", LOG_ERR, "intake-error", &t->lf,
				"the challenge could not be made");
		adm_count(a->m.intake, "error");
		return 500;
	}
	fleet_wire_intake_reply_free(&out);
	t->e->s = t->s;
	t->e->snap = *snap;
	t->e->profile = profile;
	t->e->first_admission = strcmp(snap->status, "planned") == 0;
	t->e->claim = claim != NULL;
	if (claim)
		snprintf(t->e->claim_reason, sizeof(t->e->claim_reason), "%s", claim);
	/* Unproven until its answer: it holds its place this long at most. */
	t->e->answer_by = t->s.created + (time_t)a->d.config->session_answer_seconds;
	if (!t->e->answer_by || t->e->answer_by > t->s.deadline)
		t->e->answer_by = t->s.deadline;
	memcpy(t->e->ek_hash_inv, t->dev.ek_hash, sizeof(t->e->ek_hash_inv));
	memcpy(t->e->ek_hash_ecc_inv, t->dev.ek_hash_ecc, sizeof(t->e->ek_hash_ecc_inv));
	adm_session_hex(t->s.id, sid);
	t->lf.session = sid;
	t->lf.reason = claim;
	char key[256];
	key_of(t, "intake-challenged", claim ? claim : "admission", key, sizeof(key));
	adm_log_limited(a, key, LOG_INFO, "intake-challenged", &t->lf,
			"challenge sent%s; unproven, it ends at %lld unless answered",
			claim ? " (proof only: a pending claim once the TPM answers)" : "",
			(long long)t->e->answer_by);
	adm_count(a->m.intake, "challenge");
	return status;
}

/* I3..I8 once the entry is reserved and the intake's proofs held. */
static int decide(struct intake *t, struct fleet_buf *reply)
{
	struct fleet_admission *a = t->a;
	struct fleet_inv_device *d = &t->dev;
	struct adm_snapshot snap;
	struct fleet_errctx ec = {0};
	int status;

	/* I3 */
	memset(&snap, 0, sizeof(snap));
	bool over_budget;
	fleet_err r =
		adm_lookup_device(&a->lookup, t->in->serial, d, &over_budget, &ec);
	if (over_budget)
		return busy(t, ADM_UNPROVEN_BUDGET, "inventory-budget");
	switch (r) {
	case FLEET_INV_OK:
		break;
	case FLEET_INV_NOT_FOUND:
		return pending(t, &snap, FLEET_STORE_CLAIM_UNKNOWN_SERIAL, reply);
	case FLEET_INV_AMBIGUOUS:
		return refuse(t, "serial-ambiguous", reply,
			      "more than one inventory device has this serial", NULL);
	default:
		adm_count(a->m.inventory_errors, NULL);
		return unavailable(t, "the inventory", r, &ec);
	}
	t->lf.device = d->name;
	t->lf.status = d->status;
	const char *unusable = NULL;
	if (!fleet_ca_subject_ok(d->name, t->s.serial, &unusable))
		return refuse(t, unusable, reply,
			      "the certificate subject cannot carry the device's name or serial",
			      NULL);

	/* I4 */
	const struct fleet_profile *profile = adm_profile_for(a, d->class_name);
	if (!profile && d->class_name[0])
		return refuse(t, "class-unknown", reply,
			      "the device's class has no profile in fleetd.yaml", d->class_name);

	/* I6 */
	const char *missing = adm_missing_declaration(d);
	if (missing)
		return refuse(t, "declaration-missing", reply,
			      "a declaration admission needs is not set; fleetd fills in none",
			      missing);
	if (!port_matches(d->expected_port, &t->s.report)) {
		char detail[2 * FLEET_LOG_CLAIMED_BUF + 64], sys[FLEET_LOG_CLAIMED_BUF],
			port[FLEET_LOG_CLAIMED_BUF];
		snprintf(detail, sizeof(detail), "expected %s, reported %s/%s", d->expected_port,
			 fleet_log_claimed(t->s.report.system_name, sys, sizeof(sys)),
			 fleet_log_claimed(t->s.report.port_id, port, sizeof(port)));
		return refuse(t, "port-mismatch", reply,
			      "the LLDP port is not the device's expected_port", detail);
	}

	/* I7 */
	snap.device_id = d->id;
	memcpy(snap.name, d->name, sizeof(snap.name));
	memcpy(snap.serial, d->serial, sizeof(snap.serial));
	memcpy(snap.status, d->status, sizeof(snap.status));
	memcpy(snap.class_name, d->class_name, sizeof(snap.class_name));
	memcpy(snap.desired_action, d->desired_action, sizeof(snap.desired_action));
	memcpy(snap.expected_port, d->expected_port, sizeof(snap.expected_port));
	memcpy(snap.approved_ek_hash, d->approved_ek_hash, sizeof(snap.approved_ek_hash));
	memcpy(snap.approved_ek_hash_ecc, d->approved_ek_hash_ecc,
	       sizeof(snap.approved_ek_hash_ecc));
	if (strcmp(d->status, "planned") == 0)
		status = check_planned(t, &snap, reply);
	else if (strcmp(d->status, "staged") == 0 || strcmp(d->status, "active") == 0)
		status = check_known(t, &snap, reply);
	else {
		char reason[48];
		/* NetBox's status values are short lowercase words; anything
		 * else is named "other" rather than carried into a reason. */
		bool word = d->status[0] && strspn(d->status, "abcdefghijklmnopqrstuvwxyz") ==
						    strlen(d->status);
		snprintf(reason, sizeof(reason), "status-%s", word ? d->status : "other");
		return refuse(t, reason, reply, "the device's status does not allow admission",
			      NULL);
	}
	if (status != 0)
		return status;

	/* I8 */
	return challenge(t, profile, &snap, NULL, reply);
}

int fleet_admission_intake(struct fleet_admission *a, const char *peer, const uint8_t *body,
			   size_t len, struct fleet_buf *reply, const char **reject)
{
	struct fleet_wire_intake in;
	struct fleet_errctx ec;
	struct intake t;
	int status;

	*reject = NULL;
	memset(&ec, 0, sizeof(ec));
	/* I1: the HTTP layer counts what does not decode; nothing is journaled. */
	fleet_err e = fleet_wire_intake_decode(body, len, &in, &ec);
	if (e != FLEET_OK) {
		fleet_wire_intake_free(&in);
		return adm_reply_malformed(e, &ec, reject);
	}
	memset(&t, 0, sizeof(t));
	t.t0 = adm_mono_ms();
	t.a = a;
	t.in = &in;
	t.lf.claimed_serial = in.serial;

	/* I5 first: local, so an intake that proves nothing costs no inventory
	 * request and never holds its serial's place, not even briefly. */
	struct fleet_attest_env env;
	adm_env(a, NULL, &env);
	struct fleet_decision d = fleet_attest_intake(&env, &in, &t.s);
	switch (d.outcome) {
	case FLEET_PASSED:
		break;
	case FLEET_REFUSED:
		adm_count(a->m.unproven, ADM_UNPROVEN_INTAKE);
		status = refuse(&t, d.reason, reply,
				"the intake's own proofs failed; no verdict (nothing is "
				"TPM-authenticated)",
				NULL);
		goto out;
	case FLEET_FAILED:
	default: { /* a decision never made is no pass */
		char ossl[160] = ""; /* a crypto failure's cause, from this thread's queue */
		fleet_openssl_drain(ossl, sizeof(ossl));
		adm_log_limited(a, "intake-error", LOG_ERR, "intake-error", &t.lf,
				"intake checks failed: %s%s%s%s", fleet_err_str(d.err),
				ossl[0] ? " (openssl: " : "", ossl, ossl[0] ? ")" : "");
		adm_count(a->m.intake, "error");
		status = 500;
		goto out;
	}
	}
	t.lf.ek_hash = t.s.ek_hash;
	t.lf.ek_hash_ecc = t.s.ek_hash_ecc;

	/* I2 */
	switch (adm_sessions_reserve(&a->sessions, in.serial, peer, adm_now(a), &t.e)) {
	case ADM_SESS_OK:
		break;
	case ADM_SESS_OPEN:
		status = busy(&t, ADM_UNPROVEN_CAPS, "session-open");
		goto out;
	case ADM_SESS_PEER:
		status = busy(&t, ADM_UNPROVEN_CAPS, "session-peer");
		goto out;
	case ADM_SESS_FULL:
		adm_count(a->m.intake, "full");
		status = 503;
		goto out;
	case ADM_SESS_STORE:
		adm_count(a->m.store_errors, NULL);
		adm_count(a->m.intake, "unavailable");
		status = 503;
		goto out;
	default:
		adm_count(a->m.intake, "error");
		status = 500;
		goto out;
	}

	/* I3..I8 */
	status = decide(&t, reply);
	if (t.e->s.state == FLEET_SESSION_CHALLENGED) {
		if (!adm_sessions_publish(&a->sessions, t.e)) {
			/* SH3: the shared table did not keep it: no challenge
			 * goes out that no replica could finish */
			adm_count(a->m.store_errors, NULL);
			adm_count(a->m.intake, "unavailable");
			adm_log_limited(a, "session-store-failed", LOG_ERR, "session-store-failed",
					&t.lf, "the session could not be kept in the store");
			fb_reset(reply);
			status = 503;
		}
	} else
		adm_sessions_drop(&a->sessions, t.e);
out:
	fleet_attest_session_wipe(&t.s);
	fleet_wire_intake_free(&in);
	return status;
}
