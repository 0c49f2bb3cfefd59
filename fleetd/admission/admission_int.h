/*
 * admission_int.h: what admission.c, admission_intake.c and
 * admission_answer.c share. Not for use outside fleetd/admission/.
 */
#ifndef FLEET_ADMISSION_INT_H
#define FLEET_ADMISSION_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/admission/admission.h"
#include "fleetd/reattest/reattest.h"
#include "fleetd/admission/lookup.h"
#include "fleetd/admission/sessions.h"
#include "fleetd/obs/log_limit.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

#define ADM_LOG_WINDOW_S 60 /* the journal limiter's window */
#define ADM_LOG_KEYS 1024    /* kinds it tracks at once */
#define ADM_REVOKE_RETRY 256 /* sessions whose revocation is retried */

struct adm_class {
	const char *name; /* the config's class name */
	struct fleet_profile *profile;
};

struct fleet_admission {
	struct fleet_admission_deps d;
	struct adm_sessions sessions;
	struct adm_lookup lookup;
	/* Journal lines of requests that prove nothing: the first of each
	 * kind in full, the rest counted (fleetd/obs/log_limit.h). */
	struct fleet_log_limit *limit;
	/*
	 * The store handle needs no lock of ours: it serialises its own calls
	 * (store.h, "Threads"). verdict_mu is for what the store cannot see:
	 * verdicts.jsonl follows the store's verdicts in id order, so a
	 * verdict's row and its line are written under verdict_mu together
	 * (no other verdict can take an id between them and append first),
	 * and the catch-up reads what the log lacks and appends it under it
	 * too (no new verdict comes between its read and its appends). Held
	 * around one store call each time, never the other way round.
	 */
	pthread_mutex_t verdict_mu;
	/* Under verdict_mu: verdicts.jsonl lacks store verdicts (a failed
	 * append, or not yet checked since the start): appends wait for the
	 * catch-up. */
	bool vlog_behind;
	/* Sessions whose revocation the store refused, retried by the reaper
	 * (admission.c); under retry_mu, which an ending session and the
	 * reaper share. */
	pthread_mutex_t retry_mu;
	size_t n_retry;
	char retry[ADM_REVOKE_RETRY][65];
	size_t n_classes;
	struct adm_class classes[FLEET_CONFIG_MAX_CLASSES];
	/* The re-check's nonces (fleetd/reattest/reattest.h RA2, RA3). */
	struct fleet_reattest_nonces *nonces;
	struct {
		struct fleet_metric *intake;   /* fleetd_intake_total{result} */
		struct fleet_metric *answer;   /* fleetd_answer_total{result} */
		struct fleet_metric *confirm;  /* fleetd_confirm_total{result} */
		struct fleet_metric *verdicts; /* fleetd_verdicts_total{result} */
		struct fleet_metric *auth_failures;
		struct fleet_metric *unexpected_boot;
		struct fleet_metric *inventory_errors;
		struct fleet_metric *store_errors;
		struct fleet_metric *verdict_log_errors;
		struct fleet_metric *open_sessions;
		struct fleet_metric *reattest;        /* fleetd_reattest_total{result} */
		struct fleet_metric *reattest_failed; /* fleetd_reattest_failed_total{role} */
		struct fleet_metric *renewals;        /* fleetd_renewals_total{result} */
		struct fleet_metric *reaped;
		struct fleet_metric *unproven; /* fleetd_unproven_total{reason} */
		struct fleet_metric *revoked;  /* fleetd_provisional_revoked_total */
	} m;
};

time_t adm_now(const struct fleet_admission *a);
/* CLOCK_MONOTONIC in ms: a round's own elapsed time, which no clock step
 * (and no test's time source) can shorten. */
uint64_t adm_mono_ms(void);
/* The round that began at t0 (adm_mono_ms) is past sessions.round_seconds;
 * *elapsed_ms says by how much it ran. */
bool adm_round_late(const struct fleet_admission *a, uint64_t t0, uint64_t *elapsed_ms);
/* The environment of the round functions for a profile (NULL: none). */
void adm_env(const struct fleet_admission *a, const struct fleet_profile *profile,
	     struct fleet_attest_env *env);
const struct fleet_profile *adm_profile_for(const struct fleet_admission *a, const char *cls);

/* {"v":1,"status":"pending"|"refused"}; returns 200. */
int adm_reply_status(struct fleet_buf *reply, const char *status);
/* The 4xx for a body that did not decode; sets *reject. */
int adm_reply_malformed(fleet_err e, const struct fleet_errctx *ec, const char **reject);

void adm_count(struct fleet_metric *f, const char *label);

/* Lowercase hex of a session id (65 bytes). */
void adm_session_hex(const uint8_t id[FLEET_WIRE_ID_LEN], char out[65]);

/*
 * One journal entry with fleetd's admission fields. Every value that came
 * from a machine (claimed_serial) is passed through fleet_log_claimed here;
 * inventory values (device) are capped the same way; detail (an inventory's
 * or library's error text) is escaped. NULL fields are left out.
 */
struct adm_logf {
	const char *claimed_serial;
	const char *device;
	const char *session; /* hex */
	const char *reason;
	const char *ek_hash;
	const char *ek_hash_ecc;
	const char *status; /* the inventory's status */
	const char *ldevid_sha1;
	const char *detail;
};
void adm_log(int priority, const char *event, const struct adm_logf *f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* adm_log for what a request that proves nothing caused: journaled when
 * key's window admits it (the first of its kind), else only counted by the
 * limiter. key is made of stable reasons and inventory names, never of a
 * claimed value. */
void adm_log_limited(struct fleet_admission *a, const char *key, int priority, const char *event,
		     const struct adm_logf *f, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Classes of requests that proved nothing, counted in
 * fleetd_unproven_total{reason}. */
#define ADM_UNPROVEN_INTAKE "intake-proof"    /* I5 failed */
#define ADM_UNPROVEN_CAPS "session-caps"      /* per-serial or per-source cap */
#define ADM_UNPROVEN_BUDGET "lookup-budget"   /* the inventory budget said no */
#define ADM_UNPROVEN_ANSWER "answer-proof"    /* A2 failed */
#define ADM_UNPROVEN_CONFIRM "confirm-proof"  /* C1 failed */
#define ADM_UNPROVEN_REATTEST "reattest-proof" /* a re-check not proven by the LAK (RA11) */

/* A session ends other than by its confirm: its provisional certificates
 * (if it was issued any) are revoked with why, and the journal names
 * them; the inventory lookup cache forgets its serial. Returns false when
 * the store could not revoke (journaled and counted; the reaper retries,
 * and start-up revokes whatever is left). */
bool adm_session_ended(struct fleet_admission *a, const struct adm_session *e, const char *why);

/* A store call that writes a verdict, and that verdict's line, go between
 * these (verdict_mu above). */
void adm_verdicts_lock(struct fleet_admission *a);
void adm_verdicts_unlock(struct fleet_admission *a);

/*
 * A verdict for TPM-authenticated evidence only: the store's row first,
 * then the verdicts.jsonl line (a failed append is journaled and counted;
 * the row is the verdict). Reasons are static strings. Returns 0, or -1
 * when the store refused the row (journaled).
 */
/* Who a verdict is about, when no session holds it (a re-check). */
struct adm_verdict_who {
	const char *device, *serial, *claimed_serial;
	const char *session; /* lowercase hex: the session, or a re-check's nonce */
	const char *ek_hash, *ek_hash_ecc;
};
int adm_record_verdict_who(struct fleet_admission *a, const struct adm_verdict_who *w, bool pass,
			   const char *const *reasons, size_t n_reasons, int64_t *id_out);
void adm_vlog_append_who(struct fleet_admission *a, int64_t id, const struct adm_verdict_who *w,
			 bool pass, const char *const *reasons, size_t n_reasons);
int adm_record_verdict(struct fleet_admission *a, const struct adm_session *e, bool pass,
		       const char *const *reasons, size_t n_reasons);
/* The verdicts.jsonl line of a verdict the store holds as id; called under
 * adm_verdicts_lock, right after the commit, so lines go in id order. A
 * failed append is journaled and counted, and later appends wait for the
 * reaper's catch-up, which writes them all in order. */
void adm_vlog_append(struct fleet_admission *a, int64_t id, const struct adm_session *e,
		     bool pass, const char *const *reasons, size_t n_reasons);

/* I7's record (admission_author.c): the pass's copy of the change that set
 * a planned device's binding, for when the change log no longer holds it. */
enum adm_author {
	ADM_AUTHOR_RECORDED = 0, /* a record of exactly these values by binding_author */
	ADM_AUTHOR_NONE,         /* none, or one of other values (ignored) */
	ADM_AUTHOR_STORE_ERROR,  /* the store could not say; ec says why */
};
/* The store's record for device_id, when it proves these values (serial,
 * approved hashes; fleet_store_binding_author_matches); a store failure is
 * counted, and ec gets the store's context, its detail "the store: <the
 * store's sentence> (<code>)". */
enum adm_author adm_author_recorded(struct fleet_admission *a, long device_id,
				    const char *serial, const char *ek_hash,
				    const char *ek_hash_ecc, struct fleet_store_binding_author *rec,
				    struct fleet_errctx *ec);
/* RFC 3339 (UTC) of a record's time, for the journal. */
void adm_author_time(int64_t t, char out[32]);

enum adm_reread {
	ADM_REREAD_SAME = 0,
	ADM_REREAD_CHANGED,     /* *reason: binding-changed or device-changed */
	ADM_REREAD_UNAVAILABLE, /* the inventory (or the store, for a binding author
				   record) did not answer; ec says why (ec->err its
				   code: NOMEM when fleetd ran out of memory),
				   *reason is adm_inventory_reason's for the
				   inventory */
};
/* Read the device and its binding change again and compare them with the
 * intake's snapshot (trust rule 5). */
/* I6: the first declaration admission needs that d does not set ("class",
 * "install_disk", ..., "primary_ip4"), or NULL when all are set. */
const char *adm_missing_declaration(const struct fleet_inv_device *d);

/* fresh (may be NULL) gets the device as read, when it is the same. */
enum adm_reread adm_reread(struct fleet_admission *a, const struct adm_snapshot *snap,
			   const char **reason, struct fleet_errctx *ec,
			   struct fleet_inv_device *fresh);
/* FLEET_REASON for an inventory that could not answer (r): fleetd out of
 * memory is "inventory-out-of-memory", said as what it is; anything else
 * "inventory-unavailable". The outcome is the same: 503, nothing recorded. */
const char *adm_inventory_reason(fleet_err r);

#endif
