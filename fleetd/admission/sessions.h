/*
 * sessions.h: fleetd's open attestation sessions, in memory only (they hold
 * challenge secrets that never reach disk; a restart makes a machine start
 * intake again, and start-up revokes whatever certificates the lost
 * sessions had provisionally issued).
 *
 * One table, one mutex, caps. An entry is checked out ("busy") while a
 * round works on it, so the slow parts of a round (the inventory, the
 * store) run without the lock, and no second request for the same session
 * can touch it meanwhile: such a request is told "busy" and the entry is
 * left as it was. A round works on a copy of the protocol session and
 * commits it only when the round's outcome should stick.
 *
 * Parallel challenges (trust rule 4 without a lock-out): an intake proves
 * nothing (the EK certificates are public, any key can claim to be an AK),
 * so it must neither end another session nor be blocked by one. Each
 * intake opens its own session beside the others of its serial, up to
 * ADM_SESSIONS_PER_SERIAL; the first session whose answer is
 * TPM-authenticated ends the others for the same EKs (adm_sessions_prove),
 * unproven or proven alike, so the machine's latest proof wins; a proof
 * by other EKs (another TPM's, e.g. a proof-only claim) ends nothing. An unproven
 * session lives the answer window (answer_by), not the whole session TTL,
 * so forgeries age out quickly; and an intake from exactly the address of
 * an unproven session of the same serial replaces it (that address's own
 * earlier try), so one address holds at most one unproven session per
 * serial; a source (an IPv4 address, an IPv6 /64) holds
 * ADM_SESSIONS_PER_PEER in all. Blocking a machine therefore takes
 * ADM_SESSIONS_PER_SERIAL distinct addresses sustaining intakes, each
 * within its rate limit (docs/admission.md).
 *
 * Ending a session is the reaper's (adm_sessions_reap): an entry past its
 * deadline, past its answer window while unproven, or superseded, is
 * unlinked and handed to a callback (which revokes provisional
 * certificates) before it is wiped. The daemon reaps every second.
 *
 * Serials are compared ignoring ASCII case, as the inventory looks them up.
 * Session ids are compared in constant time.
 *
 * Shared (adm_sessions_share; fleetd does it on a PostgreSQL store, where
 * several replicas serve one fleet): the same rules, with the table in the
 * store (store.h SS1-SS4) instead of this process's memory, so any replica
 * finishes a session another started (sessions_shared.c):
 * SH1 The store holds the bookkeeping in columns and the session sealed:
 *     AES-256-GCM under a key derived from the CA key (fleet_ca_derive_key,
 *     purpose "admission-sessions"), with the row's handle and the layout's
 *     size in the associated data. The challenge secrets never reach the
 *     store in the clear; a blob moved to another row, changed, or sealed by
 *     a replica with another CA key or layout does not open, and its
 *     session is then unknown (the machine starts intake again).
 * SH2 A checked-out entry is a copy: release writes it back (sealed again)
 *     and frees it, drop deletes the row and frees it; the caller never
 *     touches an entry after either. A checkout is a lease of lease_s
 *     seconds, so a replica killed mid-round holds nothing for ever.
 * SH3 A store failure is ADM_SESS_STORE (reserve, acquire), or a session
 *     that the next round finds unknown (publish, release): never a session
 *     admitted on a state the store did not keep.
 * SH4 Reaping ends each row on exactly one replica (SS3), and hands it to
 *     the callback opened, or, when it does not open, as its columns say
 *     with its certificates to revoke by the session id whatever they are.
 */
#ifndef FLEET_ADMISSION_SESSIONS_H
#define FLEET_ADMISSION_SESSIONS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/attest/attest_server.h"
#include "policy/profile.h"

/* What intake read from the inventory: answer and confirm read it again and
 * compare (trust rule 5). */
struct adm_snapshot {
	long device_id;
	char name[FLEET_INV_STR];
	char serial[FLEET_INV_STR];
	char status[32];
	/* what intake decided by besides the binding (the class's profile, an
	 * active device's requested run): a stale lookup must not outlive the
	 * re-read */
	char class_name[FLEET_INV_STR];
	char desired_action[32];
	/* the port I6 held the machine's report to: a later read must name
	 * the same one (the report cannot change: the quote binds it) */
	char expected_port[FLEET_INV_STR];
	char approved_ek_hash[65];
	char approved_ek_hash_ecc[65];
	bool change_found;
	/* The binding's author came from fleetd's record (I7), not from the
	 * change log, which holds no change that set it: change_id is the
	 * record's, and the re-reads require the same record. */
	bool author_record;
	long change_id;
};

#define ADM_SESSIONS_PER_SERIAL 8 /* open sessions of one serial at once */
#define ADM_SESSIONS_PER_PEER 32  /* unproven sessions of one source address */
#define ADM_PEER_MAX 48           /* a numeric IPv6 address and its NUL */

struct adm_session {
	struct fleet_attest_session s; /* the protocol's state; holds secrets */
	char peer[ADM_PEER_MAX];       /* the intake's source address, exactly */
	char peer_key[ADM_PEER_MAX];   /* the same as the caps count it: IPv6 by its /64 */
	time_t answer_by;              /* unproven after this: ended */
	bool proven;                   /* an answer was TPM-authenticated */
	bool superseded;               /* another session of the serial proved itself */
	bool claim;                    /* a pending-claim challenge: no profile */
	char claim_reason[16];         /* FLEET_STORE_CLAIM_* */
	struct adm_snapshot snap;
	const struct fleet_profile *profile;
	bool first_admission; /* the device was planned at intake */
	char ek_hash_inv[65]; /* the inventory's ek_hash at intake */
	char ek_hash_ecc_inv[65];
	char lak_sha1[41];    /* the certificates issued in answer, once issued */
	char ldevid_sha1[41];
	char handle[33];      /* shared: the store row's key */
	/* table bookkeeping: under the table's lock */
	bool busy;
	bool published; /* false: an intake still deciding (reserved) */
};

struct adm_sessions {
	pthread_mutex_t mu;
	struct adm_session **v;
	size_t n, cap;
	struct fleet_metric *gauge; /* fleetd_open_sessions; may be NULL */
	/* shared (SH1-SH4): the table is in st */
	struct fleet_store *st;
	uint8_t seal_key[32];
	unsigned lease_s;
	/* a session's profile again, after it was opened: NULL with *ok true
	 * for a claim; *ok false when this replica has no such class */
	const struct fleet_profile *(*profile_for)(void *ctx, const struct adm_session *e,
						    bool *ok);
	void *profile_ctx;
};

enum adm_sess_result {
	ADM_SESS_OK = 0,
	ADM_SESS_OPEN,    /* reserve: this serial has ADM_SESSIONS_PER_SERIAL open */
	ADM_SESS_PEER,    /* reserve: this source has ADM_SESSIONS_PER_PEER unproven */
	ADM_SESS_FULL,    /* reserve: the cap is reached */
	ADM_SESS_UNKNOWN, /* acquire: no such session */
	ADM_SESS_EXPIRED, /* acquire: past its deadline */
	ADM_SESS_BUSY,    /* acquire: another request is working on it */
	ADM_SESS_NOMEM,
	ADM_SESS_STORE, /* shared: the store failed (SH3) */
};

int adm_sessions_init(struct adm_sessions *t, size_t cap, struct fleet_metric *gauge);
void adm_sessions_destroy(struct adm_sessions *t);

/* Keep the table in st from now on (before any entry). The key is
 * copied; lease_s > 0. */
struct fleet_store;
int adm_sessions_share(struct adm_sessions *t, struct fleet_store *st, const uint8_t key[32],
		       unsigned lease_s,
		       const struct fleet_profile *(*profile_for)(void *ctx,
								   const struct adm_session *e,
								   bool *ok),
		       void *profile_ctx);

/* Intake: reserve an entry for serial from peer, checked out to the
 * caller (who sets answer_by once it has challenged). Other sessions of the serial are left as they are, except an
 * idle unproven one from the same peer, which this one replaces; an
 * expired entry is left for the reaper (it may hold certificates to
 * revoke) and does not count. */
enum adm_sess_result adm_sessions_reserve(struct adm_sessions *t, const char *serial,
					  const char *peer, time_t now,
					  struct adm_session **out);
/* Intake done: the session is open for answer and confirm. false: the
 * shared table could not keep it (the entry is gone; SH3). */
bool adm_sessions_publish(struct adm_sessions *t, struct adm_session *e);

/* Answer, confirm: check out the published session with this id. */
enum adm_sess_result adm_sessions_acquire(struct adm_sessions *t,
					  const uint8_t id[FLEET_WIRE_ID_LEN], time_t now,
					  struct adm_session **out);
/* The checked-out e's answer is TPM-authenticated: it is proven, and every
 * other session of its serial is superseded (the reaper ends them at once
 * if idle, or when their round gives them back). Returns how many. */
size_t adm_sessions_prove(struct adm_sessions *t, struct adm_session *e);
/* Give a checked-out entry back unchanged (or as the caller committed it). */
void adm_sessions_release(struct adm_sessions *t, struct adm_session *e);
/* Remove a checked-out entry: wiped and freed. */
void adm_sessions_drop(struct adm_sessions *t, struct adm_session *e);

/* Unlink every idle entry that is expired, past its answer window while
 * unproven, or superseded; call ended(ctx, e, why) for each outside the
 * lock (why: "session-expired" or "superseded"), then wipe and free it.
 * Returns how many. */
typedef void (*adm_sess_ended)(void *ctx, struct adm_session *e, const char *why);
size_t adm_sessions_reap(struct adm_sessions *t, time_t now, adm_sess_ended ended, void *ctx);
size_t adm_sessions_count(struct adm_sessions *t);

#endif
