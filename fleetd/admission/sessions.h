/*
 * sessions.h: fleetd's open attestation sessions, in memory only (they hold
 * challenge secrets that never reach disk; a restart makes a machine start
 * intake again).
 *
 * One table, one mutex, a cap. An entry is checked out ("busy") while a
 * round works on it, so the slow parts of a round (the inventory, the
 * store) run without the lock, and no second request for the same session
 * can touch it meanwhile: such a request is told "busy" and the entry is
 * left as it was (trust rule 4). A round works on a copy of the protocol
 * session and commits it only when the round's outcome should stick, so a
 * round that ends in "try again" leaves the session exactly as it found it.
 *
 * Serials are compared ignoring ASCII case, as the inventory looks them up:
 * "SER-1" and "ser-1" are one machine with one open session.
 * Session ids are compared in constant time.
 */
#ifndef FLEET_ADMISSION_SESSIONS_H
#define FLEET_ADMISSION_SESSIONS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "lib/attest_server.h"
#include "policy/profile.h"

/* What intake read from the inventory: answer and confirm read it again and
 * compare (trust rule 5). */
struct adm_snapshot {
	long device_id;
	char name[FLEET_INV_STR];
	char serial[FLEET_INV_STR];
	char status[32];
	char approved_ek_hash[65];
	char approved_ek_hash_ecc[65];
	bool change_found;
	long change_id;
};

struct adm_session {
	struct fleet_attest_session s; /* the protocol's state; holds secrets */
	struct adm_snapshot snap;
	const struct fleet_profile *profile;
	bool first_admission; /* the device was planned at intake */
	char ek_hash_inv[65]; /* the inventory's ek_hash at intake */
	char ek_hash_ecc_inv[65];
	char lak_sha1[41];    /* the certificates issued in answer, once issued */
	char ldevid_sha1[41];
	/* table bookkeeping: under the table's lock */
	bool busy;
	bool published; /* false: an intake still deciding (reserved) */
};

struct adm_sessions {
	pthread_mutex_t mu;
	struct adm_session **v;
	size_t n, cap;
	struct fleet_metric *gauge; /* fleetd_open_sessions; may be NULL */
};

enum adm_sess_result {
	ADM_SESS_OK = 0,
	ADM_SESS_OPEN,    /* reserve: this serial has an open session */
	ADM_SESS_FULL,    /* reserve: the cap is reached */
	ADM_SESS_UNKNOWN, /* acquire: no such session */
	ADM_SESS_EXPIRED, /* acquire: past its deadline */
	ADM_SESS_BUSY,    /* acquire: another request is working on it */
	ADM_SESS_NOMEM,
};

int adm_sessions_init(struct adm_sessions *t, size_t cap, struct fleet_metric *gauge);
void adm_sessions_destroy(struct adm_sessions *t);

/* Intake: reserve an entry for serial, checked out to the caller. An
 * unexpired session for the serial (or another intake still deciding)
 * is ADM_SESS_OPEN and is not touched; an expired one that nobody holds is
 * dropped to make room. */
enum adm_sess_result adm_sessions_reserve(struct adm_sessions *t, const char *serial, time_t now,
					  struct adm_session **out);
/* Intake done: the session is open for answer and confirm. */
void adm_sessions_publish(struct adm_sessions *t, struct adm_session *e);

/* Answer, confirm: check out the published session with this id. */
enum adm_sess_result adm_sessions_acquire(struct adm_sessions *t,
					  const uint8_t id[FLEET_WIRE_ID_LEN], time_t now,
					  struct adm_session **out);
/* Give a checked-out entry back unchanged (or as the caller committed it). */
void adm_sessions_release(struct adm_sessions *t, struct adm_session *e);
/* Remove a checked-out entry: wiped and freed. */
void adm_sessions_drop(struct adm_sessions *t, struct adm_session *e);

/* Drop every expired entry nobody holds; returns how many. */
size_t adm_sessions_reap(struct adm_sessions *t, time_t now);
size_t adm_sessions_count(struct adm_sessions *t);

#endif
