/*
 * admission.c: the admission object (admission.h): its profiles, metrics and
 * session table, and the pieces every round shares (replies, the journal,
 * verdicts, reading the inventory again). The rounds themselves are in
 * admission_intake.c and admission_answer.c.
 */
#include "fleetd/admission/admission_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "lib/ca.h"

#include "fleetd/obs/journal.h"

static const char *const intake_results[] = {"challenge", "pending", "refused", "unavailable",
					     "full", "busy", "late", "error", NULL};
static const char *const round_results[] = {"admitted",  "confirmed",   "refused", "pending",
					    "auth-failure", "unavailable", "session-unknown",
					    "busy",      "late",        "error",   NULL};
static const char *const verdict_results[] = {"pass", "fail", NULL};
static const char *const unproven_reasons[] = {ADM_UNPROVEN_INTAKE, ADM_UNPROVEN_CAPS,
					       ADM_UNPROVEN_BUDGET, ADM_UNPROVEN_ANSWER,
					       ADM_UNPROVEN_CONFIRM, ADM_UNPROVEN_REATTEST, NULL};
static const char *const reattest_results[] = {"pass",        "refused", "unproven",
					       "unavailable", "error",   NULL};
static const char *const reattest_roles[] = {"worker", "controlplane", NULL};
static const char *const renewal_results[] = {"renewed", "refused", "unavailable", NULL};

time_t adm_now(const struct fleet_admission *a)
{
	return a->d.now ? a->d.now(a->d.now_ctx) : time(NULL);
}

uint64_t adm_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool adm_round_late(const struct fleet_admission *a, uint64_t t0, uint64_t *elapsed_ms)
{
	uint64_t now = adm_mono_ms();
	*elapsed_ms = now > t0 ? now - t0 : 0;
	return *elapsed_ms >= (uint64_t)a->d.config->session_round_seconds * 1000u;
}

void adm_env(const struct fleet_admission *a, const struct fleet_profile *profile,
	     struct fleet_attest_env *env)
{
	memset(env, 0, sizeof(*env));
	env->roots = a->d.roots;
	env->profile = profile;
	env->ca = a->d.ca;
	env->now = adm_now(a);
	env->challenge_ttl_s = a->d.config->session_ttl_seconds;
	env->cert_validity_days = a->d.config->cert_validity_days;
}

const struct fleet_profile *adm_profile_for(const struct fleet_admission *a, const char *cls)
{
	for (size_t i = 0; i < a->n_classes; i++)
		if (strcmp(a->classes[i].name, cls) == 0)
			return a->classes[i].profile;
	return NULL;
}

/* A shared session's profile again, on whichever replica opened it
 * (sessions.h profile_for): a claim and a classless device have none. */
static const struct fleet_profile *session_profile(void *ctx, const struct adm_session *e,
						   bool *ok)
{
	const struct fleet_admission *a = ctx;
	*ok = true;
	if (e->claim || !e->snap.class_name[0])
		return NULL;
	const struct fleet_profile *p = adm_profile_for(a, e->snap.class_name);
	*ok = p != NULL;
	return p;
}

int adm_reply_status(struct fleet_buf *reply, const char *status)
{
	char body[48];
	int n = snprintf(body, sizeof(body), "{\"v\":1,\"status\":\"%s\"}", status);
	fb_put(reply, body, (size_t)n);
	return 200;
}

int adm_reply_malformed(fleet_err e, const struct fleet_errctx *ec, const char **reject)
{
	/* The decoder's own sentences (lib/attest_wire_json.c) tell a body that
	 * is not JSON and a wrong version from a bad field. */
	if (e == FLEET_E_TOO_LARGE)
		*reject = "field-too-large";
	else if (strncmp(ec->detail, "body: not", 9) == 0)
		*reject = "malformed-json";
	else if (strncmp(ec->detail, "v: ", 3) == 0)
		*reject = "unsupported-version";
	else
		*reject = "malformed-message";
	return 400;
}

void adm_count(struct fleet_metric *f, const char *label)
{
	if (label)
		(void)fleet_metric_inc_label(f, label);
	else
		fleet_metric_inc(f);
}

void adm_session_hex(const uint8_t id[FLEET_WIRE_ID_LEN], char out[65])
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < FLEET_WIRE_ID_LEN; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[64] = '\0';
}

static void adm_vlog(int priority, const char *event, const struct adm_logf *f, const char *fmt,
		     va_list ap) __attribute__((format(printf, 4, 0)));
static void adm_vlog(int priority, const char *event, const struct adm_logf *f, const char *fmt,
		     va_list ap)
{
	char msg[512], serial[FLEET_LOG_CLAIMED_BUF], device[FLEET_LOG_CLAIMED_BUF];
	char status[FLEET_LOG_CLAIMED_BUF], detail[600];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fleet_log(priority, event,
		  FLEET_LOG_FIELDS(
			  {"FLEET_SERIAL", f->claimed_serial ? fleet_log_claimed(f->claimed_serial,
										  serial,
										  sizeof(serial))
							     : NULL},
			  {"FLEET_DEVICE",
			   f->device && f->device[0]
				   ? fleet_log_claimed(f->device, device, sizeof(device))
				   : NULL},
			  {"FLEET_SESSION", f->session},
			  {"FLEET_REASON", f->reason},
			  {"FLEET_EK_HASH", f->ek_hash && f->ek_hash[0] ? f->ek_hash : NULL},
			  {"FLEET_EK_HASH_ECC",
			   f->ek_hash_ecc && f->ek_hash_ecc[0] ? f->ek_hash_ecc : NULL},
			  {"FLEET_STATUS", f->status && f->status[0]
						   ? fleet_log_claimed(f->status, status,
								       sizeof(status))
						   : NULL},
			  {"FLEET_LDEVID_SHA1", f->ldevid_sha1},
			  {"FLEET_DETAIL", f->detail && f->detail[0]
						   ? fleet_log_escape_n(f->detail,
									strlen(f->detail), detail,
									sizeof(detail))
						   : NULL}),
		  "%s", msg);
}

void adm_log(int priority, const char *event, const struct adm_logf *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	adm_vlog(priority, event, f, fmt, ap);
	va_end(ap);
}

void adm_log_limited(struct fleet_admission *a, const char *key, int priority, const char *event,
		     const struct adm_logf *f, const char *fmt, ...)
{
	if (!fleet_log_limit_admit(a->limit, key, adm_now(a)))
		return;
	va_list ap;
	va_start(ap, fmt);
	adm_vlog(priority, event, f, fmt, ap);
	va_end(ap);
}

void adm_verdicts_lock(struct fleet_admission *a)
{
	pthread_mutex_lock(&a->verdict_mu);
}

void adm_verdicts_unlock(struct fleet_admission *a)
{
	pthread_mutex_unlock(&a->verdict_mu);
}

/* Who a verdict is about, from a session. */
static struct adm_verdict_who session_who(const struct adm_session *e, char sid[65])
{
	adm_session_hex(e->s.id, sid);
	return (struct adm_verdict_who){
		.device = e->snap.name[0] ? e->snap.name : NULL,
		.serial = e->snap.serial[0] ? e->snap.serial : e->s.serial,
		.claimed_serial = e->s.serial,
		.session = sid,
		.ek_hash = e->s.ek_hash,
		.ek_hash_ecc = e->s.ek_hash_ecc,
	};
}

int adm_record_verdict(struct fleet_admission *a, const struct adm_session *e, bool pass,
		       const char *const *reasons, size_t n_reasons)
{
	char sid[65];
	struct adm_verdict_who w = session_who(e, sid);
	return adm_record_verdict_who(a, &w, pass, reasons, n_reasons, NULL);
}

int adm_record_verdict_who(struct fleet_admission *a, const struct adm_verdict_who *w, bool pass,
			   const char *const *reasons, size_t n_reasons, int64_t *id_out)
{
	struct fleet_store_verdict_in v = {
		.time = adm_now(a),
		.device = w->device,
		.serial = w->serial,
		.session = w->session,
		.pass = pass,
		.reasons = reasons,
		.n_reasons = n_reasons > FLEET_STORE_MAX_REASONS ? FLEET_STORE_MAX_REASONS
								 : n_reasons,
		.ek_hash = w->ek_hash,
		.ek_hash_ecc = w->ek_hash_ecc,
	};
	struct adm_logf lf = {.claimed_serial = w->claimed_serial, .device = w->device,
			      .session = w->session, .ek_hash = w->ek_hash,
			      .ek_hash_ecc = w->ek_hash_ecc};
	int64_t id = 0;
	adm_verdicts_lock(a);
	fleet_err se = fleet_store_verdict_insert(a->d.store, &v, &id);
	if (se != FLEET_STORE_OK) {
		lf.detail = fleet_store_errmsg(a->d.store); /* this thread's own copy */
		lf.reason = fleet_err_str(se);
		adm_count(a->m.store_errors, NULL);
		adm_log(LOG_ERR, "verdict-store-failed", &lf,
			"the store refused a %s verdict; nothing else is recorded for this round",
			pass ? "passing" : "failed");
	}
	else
		adm_vlog_append_who(a, id, w, pass, reasons, n_reasons);
	adm_verdicts_unlock(a);
	if (id_out)
		*id_out = id;
	return se == FLEET_STORE_OK ? 0 : -1;
}

void adm_vlog_append(struct fleet_admission *a, int64_t id, const struct adm_session *e,
		     bool pass, const char *const *reasons, size_t n_reasons)
{
	char sid[65];
	struct adm_verdict_who w = session_who(e, sid);
	adm_vlog_append_who(a, id, &w, pass, reasons, n_reasons);
}

void adm_vlog_append_who(struct fleet_admission *a, int64_t id, const struct adm_verdict_who *w,
			 bool pass, const char *const *reasons, size_t n_reasons)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	adm_count(a->m.verdicts, pass ? "pass" : "fail");
	if (a->vlog_behind)
		return; /* the catch-up writes it, in order (fleet_admission_reap) */
	struct fleet_vlog_record r = {
		.id = id,
		.time = adm_now(a),
		.device = w->device,
		.serial = w->serial,
		.session = w->session,
		.pass = pass,
		.reasons = reasons,
		.n_reasons = n_reasons,
		.ek_hash = w->ek_hash,
		.ek_hash_ecc = w->ek_hash_ecc,
	};
	if (fleet_vlog_append(a->d.verdicts, &r, &ec) != FLEET_OK) {
		struct adm_logf lf = {.claimed_serial = w->claimed_serial, .device = w->device,
				      .session = w->session,
				      .detail = fleet_errctx_text(&ec, err, sizeof(err))};
		adm_count(a->m.verdict_log_errors, NULL);
		adm_log(LOG_ERR, "verdict-log-failed", &lf,
			"verdicts.jsonl append failed; the verdict is in the store, and the "
			"catch-up appends it and every later one, in order");
		a->vlog_behind = true;
	}
}

/* verdicts.jsonl behind the store (a failed append, or the start): append
 * what it lacks, in id order, under verdict_mu so no new verdict can come
 * between. */
static void vlog_catch_up(struct fleet_admission *a)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	size_t appended = 0;
	bool ahead = false;
	adm_verdicts_lock(a);
	if (a->vlog_behind) {
		if (fleet_vlog_reconcile(a->d.verdicts, a->d.store, &appended, &ahead, &ec) ==
		    FLEET_OK)
			a->vlog_behind = false;
		else if (fleet_log_limit_admit(a->limit, "verdict-log-behind", adm_now(a)))
			fleet_log(LOG_ERR, "verdict-log-behind", NULL, 0,
				  "verdicts.jsonl is behind the store and cannot be caught up yet: "
				  "%s", fleet_errctx_text(&ec, err, sizeof(err)));
		if (appended)
			fleet_log(LOG_NOTICE, "verdicts-reconciled", NULL, 0,
				  "%zu verdict%s appended to verdicts.jsonl from the store", appended,
				  appended == 1 ? "" : "s");
		if (ahead)
			fleet_log(LOG_WARNING, "verdicts-ahead", NULL, 0,
				  "verdicts.jsonl holds verdicts newer than the store's newest: was "
				  "the store restored from an older copy?");
	}
	adm_verdicts_unlock(a);
}

/* A session whose revocation failed (retry_mu held): retried every
 * second by the reaper until the store takes it, so its certificates do
 * not wait for a restart. The list is bounded; past it the start revokes
 * what is left (its sessions are gone by then). */
static void remember_revocation(struct fleet_admission *a, const char sid[65])
{
	for (size_t i = 0; i < a->n_retry; i++)
		if (strcmp(a->retry[i], sid) == 0)
			return;
	if (a->n_retry < ADM_REVOKE_RETRY)
		memcpy(a->retry[a->n_retry++], sid, 65);
}

static void retry_revocations(struct fleet_admission *a)
{
	char sha1s[FLEET_STORE_REVOKE_SHA1S][41];
	size_t n;
	pthread_mutex_lock(&a->retry_mu);
	for (size_t i = 0; i < a->n_retry;) {
		if (fleet_store_provisional_revoke(a->d.store, a->retry[i], "session-ended",
						   adm_now(a), sha1s, &n) != FLEET_STORE_OK) {
			i++;
			continue;
		}
		struct adm_logf lf = {.session = a->retry[i], .reason = "session-ended"};
		if (n)
			fleet_metric_add(a->m.revoked, n);
		adm_log(LOG_NOTICE, "provisional-revoked", &lf,
			"revoked at a retry: %zu provisional certificate%s of a session that ended",
			n, n == 1 ? "" : "s");
		memcpy(a->retry[i], a->retry[--a->n_retry], 65);
	}
	pthread_mutex_unlock(&a->retry_mu);
}

bool adm_session_ended(struct fleet_admission *a, const struct adm_session *e, const char *why)
{
	char sid[65], sha1s[FLEET_STORE_REVOKE_SHA1S][41], list[FLEET_STORE_REVOKE_SHA1S * 41 + 1];
	size_t n = 0;
	adm_lookup_forget(&a->lookup, e->s.serial);
	if (!e->lak_sha1[0] && !e->ldevid_sha1[0])
		return true; /* nothing was issued */
	adm_session_hex(e->s.id, sid);
	struct adm_logf lf = {.claimed_serial = e->s.serial, .device = e->snap.name,
			      .session = sid, .reason = why, .ek_hash = e->s.ek_hash,
			      .ek_hash_ecc = e->s.ek_hash_ecc};
	fleet_err se =
		fleet_store_provisional_revoke(a->d.store, sid, why, adm_now(a), sha1s, &n);
	if (se != FLEET_STORE_OK) {
		lf.detail = fleet_store_errmsg(a->d.store);
		adm_count(a->m.store_errors, NULL);
		adm_log(LOG_ERR, "provisional-revoke-failed", &lf,
			"the session's provisional certificates could not be marked revoked (%s); "
			"the next start revokes them", fleet_err_str(se));
		pthread_mutex_lock(&a->retry_mu);
		remember_revocation(a, sid);
		pthread_mutex_unlock(&a->retry_mu);
		return false;
	}
	list[0] = '\0';
	for (size_t i = 0, o = 0; i < n && i < FLEET_STORE_REVOKE_SHA1S; i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? " " : "", sha1s[i]);
	lf.detail = list;
	if (n)
		fleet_metric_add(a->m.revoked, n);
	adm_log(LOG_NOTICE, "provisional-revoked", &lf,
		"the session ended without an admission (%s): %zu provisional certificate%s "
		"revoked, nothing else of it was recorded",
		why, n, n == 1 ? "" : "s");
	return true;
}

static bool same_str(const char *x, const char *y)
{
	return strcmp(x, y) == 0;
}

const char *adm_inventory_reason(fleet_err r)
{
	return r == FLEET_INV_NOMEM ? "inventory-out-of-memory" : "inventory-unavailable";
}

const char *adm_missing_declaration(const struct fleet_inv_device *d)
{
	if (!d->class_name[0])
		return "class";
	if (!d->install_disk[0])
		return "install_disk";
	if (!d->install_disk_serial[0])
		return "install_disk_serial";
	if (!d->bmc_type[0])
		return "bmc_type";
	if (!d->tpm_version[0])
		return "tpm_version";
	if (d->amt < 0)
		return "amt";
	if (d->secure_boot_expected < 0)
		return "secure_boot_expected";
	if (!d->expected_port[0])
		return "expected_port";
	if (!d->primary_ip4[0])
		return "primary_ip4";
	return NULL;
}

enum adm_reread adm_reread(struct fleet_admission *a, const struct adm_snapshot *snap,
			   const char **reason, struct fleet_errctx *ec,
			   struct fleet_inv_device *fresh)
{
	struct fleet_inventory *inv = a->d.inventory;
	struct fleet_inv_device d;
	struct fleet_inv_binding_change ch;
	fleet_err r;
	memset(&d, 0, sizeof(d));
	memset(&ch, 0, sizeof(ch));
	memset(ec, 0, sizeof(*ec));
	*reason = NULL;
	r = inv->ops->get(inv, snap->device_id, &d, ec);
	if (r == FLEET_INV_NOT_FOUND) {
		*reason = "device-changed"; /* deleted while the session ran */
		return ADM_REREAD_CHANGED;
	}
	if (r == FLEET_INV_OK)
		r = inv->ops->binding_change(inv, snap->device_id, &ch, ec);
	if (r != FLEET_INV_OK) {
		if (ec->detail[0])
			ec->err = r;
		else
			fleet_errctx_msg(ec, r, "inventory: %s", fleet_err_str(r));
		*reason = adm_inventory_reason(r);
		adm_count(a->m.inventory_errors, NULL);
		return ADM_REREAD_UNAVAILABLE;
	}
	if (!same_str(d.approved_ek_hash, snap->approved_ek_hash) ||
	    !same_str(d.approved_ek_hash_ecc, snap->approved_ek_hash_ecc) ||
	    ch.found != snap->change_found || (ch.found && ch.change_id != snap->change_id)) {
		*reason = "binding-changed";
		return ADM_REREAD_CHANGED;
	}
	/* An author proven by fleetd's record must still be: the same record
	 * (change id), still of exactly these values. */
	if (snap->author_record) {
		struct fleet_store_binding_author rec;
		enum adm_author au = adm_author_recorded(a, snap->device_id, d.serial,
							 d.approved_ek_hash, d.approved_ek_hash_ecc,
							 &rec, ec);
		if (au == ADM_AUTHOR_STORE_ERROR)
			return ADM_REREAD_UNAVAILABLE;
		/* none now, or another record: another proof than the intake's */
		if (au != ADM_AUTHOR_RECORDED || rec.change_id != snap->change_id) {
			*reason = "binding-changed";
			return ADM_REREAD_CHANGED;
		}
	}
	if (strcasecmp(d.serial, snap->serial) != 0 ||
	    !same_str(d.name, snap->name) ||
	    !same_str(d.status, snap->status) ||
	    !same_str(d.class_name, snap->class_name) ||
	    !same_str(d.desired_action, snap->desired_action)) {
		*reason = "device-changed";
		return ADM_REREAD_CHANGED;
	}
	/* I6 again on this read: the owner may have cleared a declaration, or
	 * moved the machine's port, since intake. A port other than the one
	 * the report was held to is a port the machine was never checked
	 * against. */
	const char *missing = adm_missing_declaration(&d);
	if (missing) {
		*reason = "declaration-missing";
		return ADM_REREAD_CHANGED;
	}
	if (!same_str(d.expected_port, snap->expected_port)) {
		*reason = "port-mismatch";
		return ADM_REREAD_CHANGED;
	}
	if (fresh)
		*fresh = d;
	return ADM_REREAD_SAME;
}

static fleet_err reg(struct fleet_metrics *m, enum fleet_metric_type t, const char *name,
		     const char *help, const char *label, const char *const *values,
		     struct fleet_metric **out, struct fleet_errctx *ec)
{
	fleet_err e = fleet_metrics_register(m, t, name, help, label, values, out, ec);
	if (e != FLEET_OK) {
		char before[96];
		snprintf(before, sizeof(before), "metric %s: ", name);
		return fleet_errctx_wrap(ec, e, before, NULL);
	}
	return e;
}

static fleet_err register_metrics(struct fleet_admission *a, struct fleet_errctx *ec)
{
	struct fleet_metrics *m = a->d.metrics;
	const enum fleet_metric_type C = FLEET_METRIC_COUNTER;
	fleet_err e;
	if ((e = reg(m, C, "fleetd_intake_total", "Intake requests that decoded, by outcome.",
		     "result", intake_results, &a->m.intake, ec)) ||
	    (e = reg(m, C, "fleetd_answer_total", "Answer requests that decoded, by outcome.",
		     "result", round_results, &a->m.answer, ec)) ||
	    (e = reg(m, C, "fleetd_confirm_total", "Confirm requests that decoded, by outcome.",
		     "result", round_results, &a->m.confirm, ec)) ||
	    (e = reg(m, C, "fleetd_verdicts_total",
		     "Verdicts written for TPM-authenticated evidence.", "result",
		     verdict_results, &a->m.verdicts, ec)) ||
	    (e = reg(m, C, "fleetd_auth_failures_total",
		     "Answers or confirmations not proven to come from the challenged TPM.", NULL,
		     NULL, &a->m.auth_failures, ec)) ||
	    (e = reg(m, C, "fleetd_unexpected_boot_total",
		     "Active devices that booted HookOS without a requested run.", NULL, NULL,
		     &a->m.unexpected_boot, ec)) ||
	    (e = reg(m, C, "fleetd_inventory_errors_total",
		     "Inventory requests that got no usable answer (or a failed write).", NULL,
		     NULL, &a->m.inventory_errors, ec)) ||
	    (e = reg(m, C, "fleetd_store_errors_total", "Store operations that failed.", NULL,
		     NULL, &a->m.store_errors, ec)) ||
	    (e = reg(m, C, "fleetd_verdict_log_errors_total",
		     "verdicts.jsonl appends that failed (the store kept the verdict).", NULL,
		     NULL, &a->m.verdict_log_errors, ec)) ||
	    (e = reg(m, C, "fleetd_sessions_reaped_total", "Expired sessions dropped.", NULL,
		     NULL, &a->m.reaped, ec)) ||
	    (e = reg(m, C, "fleetd_unproven_total",
		     "Requests that proved nothing, by class; counted, journaled only as the "
		     "first of their kind in a window.", "reason", unproven_reasons,
		     &a->m.unproven, ec)) ||
	    (e = reg(m, C, "fleetd_provisional_revoked_total",
		     "Certificates issued at an answer whose session ended without an admission.",
		     NULL, NULL, &a->m.revoked, ec)) ||
	    (e = reg(m, C, "fleetd_reattest_total",
		     "Re-checks of running nodes (tpm-reattest) that decoded, by outcome.", "result",
		     reattest_results, &a->m.reattest, ec)) ||
	    (e = reg(m, C, "fleetd_reattest_failed_total",
		     "Re-checks whose TPM-authenticated evidence failed the boot policy (a failed "
		     "verdict), by the class's role.",
		     "role", reattest_roles, &a->m.reattest_failed, ec)) ||
	    (e = reg(m, C, "fleetd_renewals_total",
		     "Renewals of a running node's certificates (after a passing re-check), by "
		     "outcome.",
		     "result", renewal_results, &a->m.renewals, ec)) ||
	    (e = reg(m, FLEET_METRIC_GAUGE, "fleetd_open_sessions",
		     "Attestation sessions open now (intakes deciding included).", NULL, NULL,
		     &a->m.open_sessions, ec)))
		return e;
	return FLEET_OK;
}

static fleet_err load_profiles(struct fleet_admission *a, struct fleet_errctx *ec)
{
	const struct fleet_config *c = a->d.config;
	for (size_t i = 0; i < c->n_classes; i++) {
		char path[2 * FLEET_CONFIG_PATH_MAX + 2];
		struct adm_class *cl = &a->classes[i];
		snprintf(path, sizeof(path), "%s/%s", c->profiles_dir, c->classes[i].profile);
		cl->name = c->classes[i].name;
		fleet_err e = fleet_profile_load(path, &cl->profile, ec);
		if (e != FLEET_OK) {
			/* the profile's context (its line, errno, reason) kept */
			char before[sizeof(path) + sizeof(c->classes[i].name) + 48];
			snprintf(before, sizeof(before), "class %s: profile %s:%u: ", cl->name, path,
				 ec ? ec->line : 0);
			return fleet_errctx_wrap(ec, e, before, NULL);
		}
		a->n_classes = i + 1;
		if (strcmp(cl->profile->class_name, cl->name) != 0)
			return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
						"class %s: profile %s is for class \"%s\"; a profile "
						"judges the class it names",
						cl->name, path, cl->profile->class_name);
	}
	return FLEET_OK;
}

fleet_err fleet_admission_new(const struct fleet_admission_deps *deps,
			      struct fleet_admission **out, struct fleet_errctx *ec)
{
	fleet_err e;
	*out = NULL;
	if (!deps || !deps->config || !deps->inventory || !deps->store || !deps->verdicts ||
	    !deps->metrics || !deps->roots || !deps->ca)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "admission: a dependency is missing");
	struct fleet_admission *a = calloc(1, sizeof(*a));
	if (!a)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "admission: out of memory");
	a->d = *deps;
	/* Caught up below, before anything is served; a catch-up that fails
	 * there is retried by every reap, and until it succeeds nothing is
	 * appended out of order. */
	a->vlog_behind = true;
	if (pthread_mutex_init(&a->verdict_mu, NULL) != 0) {
		free(a);
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "admission: no mutex");
	}
	if (pthread_mutex_init(&a->retry_mu, NULL) != 0) {
		pthread_mutex_destroy(&a->verdict_mu);
		free(a);
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "admission: no mutex");
	}
	if ((e = register_metrics(a, ec)) != FLEET_OK || (e = load_profiles(a, ec)) != FLEET_OK)
		goto fail;
	if (adm_sessions_init(&a->sessions, deps->config->max_open_sessions,
			      a->m.open_sessions) != 0) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM,
				     "admission: cannot make a table of %u sessions",
				     deps->config->max_open_sessions);
		goto fail;
	}
	/* Replicas on one PostgreSQL store share the table (sessions.h
	 * SH1-SH4): any of them finishes a session another started. A
	 * checkout outlives a round's cut-off by a margin. */
	if (fleet_store_is_shared(deps->store)) {
		uint8_t key[32];
		if (fleet_ca_derive_key(deps->ca, "admission-sessions", key) != FLEET_OK ||
		    adm_sessions_share(&a->sessions, deps->store, key,
				       deps->config->session_round_seconds + 10, session_profile,
				       a) != 0) {
			OPENSSL_cleanse(key, sizeof(key));
			adm_sessions_destroy(&a->sessions);
			e = fleet_errctx_msg(ec, FLEET_E_CRYPTO,
					     "admission: cannot derive the shared sessions' key");
			goto fail;
		}
		OPENSSL_cleanse(key, sizeof(key));
	}
	if (adm_lookup_init(&a->lookup, deps->inventory,
			    deps->config->inventory_lookups_per_second,
			    deps->config->inventory_lookup_cache_ms) != 0 ||
	    !(a->limit = fleet_log_limit_new(ADM_LOG_WINDOW_S, ADM_LOG_KEYS)) ||
	    fleet_reattest_nonces_new(0, &a->nonces) != FLEET_OK) {
		adm_lookup_destroy(&a->lookup);
		adm_sessions_destroy(&a->sessions);
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "admission: out of memory");
		goto fail;
	}
	/* verdicts.jsonl caught up with the store before anything is served:
	 * a crash between a verdict's commit and its line lost the line. */
	vlog_catch_up(a);
	*out = a;
	return FLEET_OK;
fail:
	for (size_t i = 0; i < a->n_classes; i++)
		fleet_profile_free(a->classes[i].profile);
	fleet_reattest_nonces_free(a->nonces);
	pthread_mutex_destroy(&a->retry_mu);
	pthread_mutex_destroy(&a->verdict_mu);
	free(a);
	return e;
}

void fleet_admission_free(struct fleet_admission *a)
{
	if (!a)
		return;
	adm_sessions_destroy(&a->sessions);
	adm_lookup_destroy(&a->lookup);
	if (a->limit) {
		fleet_log_limit_flush(a->limit, adm_now(a) + ADM_LOG_WINDOW_S + 1);
		fleet_log_limit_free(a->limit);
	}
	for (size_t i = 0; i < a->n_classes; i++)
		fleet_profile_free(a->classes[i].profile);
	fleet_reattest_nonces_free(a->nonces);
	pthread_mutex_destroy(&a->retry_mu);
	pthread_mutex_destroy(&a->verdict_mu);
	free(a);
}

static void reaped(void *ctx, struct adm_session *e, const char *why)
{
	(void)adm_session_ended(ctx, e, why);
}

size_t fleet_admission_reap(struct fleet_admission *a)
{
	vlog_catch_up(a);
	retry_revocations(a);
	size_t n = adm_sessions_reap(&a->sessions, adm_now(a), reaped, a);
	if (n)
		fleet_metric_add(a->m.reaped, n);
	fleet_log_limit_flush(a->limit, adm_now(a));
	return n;
}

void fleet_admission_prune(struct fleet_admission *a)
{
	size_t n = 0;
	if (fleet_store_provisional_prune(a->d.store, adm_now(a), &n) != FLEET_STORE_OK) {
		struct adm_logf lf = {.detail = fleet_store_errmsg(a->d.store)};
		adm_count(a->m.store_errors, NULL);
		adm_log(LOG_ERR, "provisional-prune-failed", &lf,
			"old revoked provisional certificates could not be removed");
	}
}

unsigned long fleet_admission_inventory_lookups(struct fleet_admission *a)
{
	pthread_mutex_lock(&a->lookup.mu);
	unsigned long n = a->lookup.requests;
	pthread_mutex_unlock(&a->lookup.mu);
	return n;
}
