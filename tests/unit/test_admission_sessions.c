/*
 * test_admission_sessions.c: fleetd's open-session table
 * (fleetd/admission/sessions.c): parallel challenges per serial whatever
 * its case (I2) and their caps, a source's own unproven try replaced,
 * the first proof ending the others, the unproven answer window, the cap,
 * expiry by the clock the caller passes, checked-out entries that no other
 * request can touch or reap, and the gauge.
 *
 * The same cases run on the shared table (sessions.h SH1-SH4) when
 * FLEET_TEST_SESSIONS_SHARED=1: in a store of their own (SQLite, or a fresh
 * PostgreSQL database under FLEET_TEST_PG: tests/store/store_location.h),
 * with the shared-only cases after them: two replicas on one store, a
 * checkout's lease, sealed state that opens only where it was sealed.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <string.h>

#include <stdlib.h>
#include <unistd.h>

#include "fleetd/admission/sessions.h"
#include "fleetd/admission/sessions_shared.h"
#include "fleetd/store/store.h"
#include "tests/store/store_location.h"

#define T0 1000000
#define LEASE 60

/* The shared mode's store, one per case. */
static bool shared;
static char *dir, loc[512];
static struct fleet_store *st;
static const uint8_t key_a[32] = {1, 2, 3};

static void table_init_key(struct adm_sessions *t, size_t cap, struct fleet_metric *g,
			   const uint8_t key[32])
{
	assert_int_equal(adm_sessions_init(t, cap, g), 0);
	if (!shared)
		return;
	if (!st) {
		dir = make_temp_dir("sessions");
		store_location_new(dir, loc, sizeof(loc));
		assert_int_equal(fleet_store_open(loc, FLEET_STORE_RW, &st, NULL), FLEET_STORE_OK);
	}
	assert_int_equal(adm_sessions_share(t, st, key, LEASE, NULL, NULL), 0);
}

static void table_init(struct adm_sessions *t, size_t cap, struct fleet_metric *g)
{
	table_init_key(t, cap, g, key_a);
}

static void table_destroy(struct adm_sessions *t)
{
	adm_sessions_destroy(t);
	if (st) {
		fleet_store_close(st);
		st = NULL;
		store_location_free(loc);
		rm_rf(dir);
		free(dir);
		dir = NULL;
	}
}

/* 64 hex of one repeated digit: an EK hash as the store takes it. */
static const char *ek(char c)
{
	static char b[2][65];
	static int k;
	char *o = b[k++ % 2];
	memset(o, c, 64);
	o[64] = '\0';
	return o;
}

/* A published session for serial from peer with this id byte, expiring at
 * deadline. */
static void open_ex(struct adm_sessions *t, const char *serial, const char *peer, uint8_t id,
		    time_t deadline, time_t answer_by, const char *ek_hash, bool claim)
{
	struct adm_session *e = NULL;
	assert_int_equal(adm_sessions_reserve(t, serial, peer, T0, &e), ADM_SESS_OK);
	assert_non_null(e);
	memset(e->s.id, id, sizeof(e->s.id));
	memset(e->s.secret_rsa, 0x5a, sizeof(e->s.secret_rsa));
	e->s.state = FLEET_SESSION_CHALLENGED;
	e->s.deadline = deadline;
	e->answer_by = answer_by;
	e->claim = claim;
	if (ek_hash)
		snprintf(e->s.ek_hash, sizeof(e->s.ek_hash), "%s", ek_hash);
	/* the entry is the table's from here (shared: freed) */
	if (!adm_sessions_publish(t, e))
		fail_msg("publish: %s", st ? fleet_store_errmsg(st) : "?");
}

static void open_from(struct adm_sessions *t, const char *serial, const char *peer, uint8_t id,
		      time_t deadline)
{
	open_ex(t, serial, peer, id, deadline, 0, NULL, false);
}

static void open_one(struct adm_sessions *t, const char *serial, uint8_t id, time_t deadline)
{
	open_from(t, serial, "192.0.2.1", id, deadline);
}

static size_t reap(struct adm_sessions *t, time_t now)
{
	return adm_sessions_reap(t, now, NULL, NULL);
}

static void acquire_ok(struct adm_sessions *t, uint8_t idb, time_t now, const char *serial)
{
	uint8_t id[FLEET_WIRE_ID_LEN];
	struct adm_session *e = NULL;
	memset(id, idb, sizeof(id));
	assert_int_equal(adm_sessions_acquire(t, id, now, &e), ADM_SESS_OK);
	assert_string_equal(e->s.serial, serial);
	adm_sessions_release(t, e);
}

/* I2: an intake proves nothing, so it neither ends nor is blocked by the
 * serial's other sessions, up to the per-serial cap. */
static void parallel_challenges_per_serial(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	char peer[32];
	table_init(&t, 64, NULL);
	open_one(&t, "SER-1", 1, T0 + 600);
	/* other sources, the same serial in another case: parallel sessions */
	for (int i = 2; i <= ADM_SESSIONS_PER_SERIAL; i++) {
		snprintf(peer, sizeof(peer), "198.51.100.%d", i);
		open_from(&t, i % 2 ? "ser-1" : "SER-1", peer, (uint8_t)i, T0 + 600);
	}
	/* the first session is untouched: still found by its id */
	acquire_ok(&t, 1, T0 + 2, "SER-1");
	/* the cap: nothing opened, nothing ended */
	assert_int_equal(adm_sessions_reserve(&t, "SER-1", "203.0.113.9", T0 + 1, &e),
			 ADM_SESS_OPEN);
	assert_null(e);
	assert_int_equal(adm_sessions_count(&t), ADM_SESSIONS_PER_SERIAL);
	acquire_ok(&t, 1, T0 + 3, "SER-1");
	/* another serial is not affected */
	assert_int_equal(adm_sessions_reserve(&t, "SER-2", "203.0.113.9", T0 + 1, &e), ADM_SESS_OK);
	adm_sessions_drop(&t, e);
	/* once expired, they no longer count, and the reaper ends them */
	assert_int_equal(adm_sessions_reserve(&t, "SER-1", "203.0.113.9", T0 + 601, &e),
			 ADM_SESS_OK);
	adm_sessions_drop(&t, e);
	assert_int_equal(reap(&t, T0 + 601), ADM_SESSIONS_PER_SERIAL);
	assert_int_equal(adm_sessions_count(&t), 0);
	table_destroy(&t);
}

/* A source's new intake for a serial replaces its own earlier unproven
 * one, never another source's, and never a proven one. */
static void same_source_replaces_its_own(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	table_init(&t, 64, NULL);
	open_from(&t, "SER-3", "192.0.2.7", 1, T0 + 600);   /* the machine */
	open_from(&t, "SER-3", "203.0.113.5", 2, T0 + 600); /* a forger */
	for (int i = 0; i < 100; i++) /* the forger again and again */
		open_from(&t, "SER-3", "203.0.113.5", (uint8_t)(3 + i % 2), T0 + 600);
	assert_int_equal(adm_sessions_count(&t), 2);
	acquire_ok(&t, 1, T0 + 1, "SER-3"); /* the machine's session is still there */
	memset(id, 2, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 1, &e), ADM_SESS_UNKNOWN);
	/* proven: not replaced by the same source's next intake */
	memset(id, 1, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 1, &e), ADM_SESS_OK);
	adm_sessions_prove(&t, e);
	adm_sessions_release(&t, e);
	open_from(&t, "SER-3", "192.0.2.7", 9, T0 + 600);
	acquire_ok(&t, 9, T0 + 1, "SER-3");
	table_destroy(&t);
}

/* A source holds at most ADM_SESSIONS_PER_PEER unproven sessions. */
static void per_source_cap(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	char serial[32];
	table_init(&t, 1024, NULL);
	for (int i = 0; i < ADM_SESSIONS_PER_PEER; i++) {
		snprintf(serial, sizeof(serial), "S-%d", i);
		open_from(&t, serial, "203.0.113.5", (uint8_t)i, T0 + 600);
	}
	assert_int_equal(adm_sessions_reserve(&t, "S-new", "203.0.113.5", T0, &e), ADM_SESS_PEER);
	assert_null(e);
	/* another source is not held back */
	assert_int_equal(adm_sessions_reserve(&t, "S-new", "192.0.2.7", T0, &e), ADM_SESS_OK);
	adm_sessions_drop(&t, e);
	/* an IPv6 source is its /64: other addresses in it are the same source */
	for (int i = 0; i < ADM_SESSIONS_PER_PEER; i++) {
		char peer[64];
		snprintf(serial, sizeof(serial), "V6-%d", i);
		snprintf(peer, sizeof(peer), "2001:db8:1:2::%x", i + 1);
		open_from(&t, serial, peer, (uint8_t)(100 + i), T0 + 600);
	}
	assert_int_equal(adm_sessions_reserve(&t, "V6-new", "2001:db8:1:2:ffff::1", T0, &e),
			 ADM_SESS_PEER);
	assert_int_equal(adm_sessions_reserve(&t, "V6-new", "2001:db8:1:3::1", T0, &e), ADM_SESS_OK);
	adm_sessions_drop(&t, e);
	table_destroy(&t);
}

/* The first TPM-authenticated answer ends every other session of its
 * serial: at once when idle, when given back when busy. */
static void first_proof_ends_the_others(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL, *busy = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	table_init(&t, 64, NULL);
	open_from(&t, "SER-4", "192.0.2.7", 1, T0 + 600);
	open_from(&t, "SER-4", "203.0.113.5", 2, T0 + 600);
	open_from(&t, "SER-4", "203.0.113.6", 3, T0 + 600);
	open_from(&t, "SER-5", "203.0.113.6", 4, T0 + 600);
	memset(id, 3, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &busy), ADM_SESS_OK);
	memset(id, 1, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_OK);
	assert_int_equal(adm_sessions_prove(&t, e), 2);
	adm_sessions_release(&t, e);
	/* superseded: refused at once, reaped when idle */
	memset(id, 2, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_EXPIRED);
	assert_int_equal(reap(&t, T0), 1); /* 2; 3 is still busy */
	adm_sessions_release(&t, busy);
	assert_int_equal(reap(&t, T0), 1);
	acquire_ok(&t, 1, T0, "SER-4"); /* the proven one stays */
	acquire_ok(&t, 4, T0, "SER-5"); /* another serial's stays */
	table_destroy(&t);
}

/* A proof supersedes only sessions for the same EKs: another TPM's proof
 * (here a proof-only claim for the serial) says nothing about this
 * machine's sessions. */
static void proof_supersedes_only_its_eks(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	table_init(&t, 64, NULL);
	open_ex(&t, "SER-10", "192.0.2.7", 1, T0 + 600, 0, ek('a'), false);
	/* the machine's public EK certificate */
	open_ex(&t, "SER-10", "203.0.113.5", 2, T0 + 600, 0, ek('a'), false);
	/* another TPM, claiming the serial */
	open_ex(&t, "SER-10", "198.51.100.9", 3, T0 + 600, 0, ek('b'), true);
	memset(id, 3, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_OK);
	assert_int_equal(adm_sessions_prove(&t, e), 0);
	adm_sessions_release(&t, e);
	acquire_ok(&t, 1, T0, "SER-10");
	acquire_ok(&t, 2, T0, "SER-10");
	memset(id, 1, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_OK);
	assert_int_equal(adm_sessions_prove(&t, e), 1); /* the forged one, not the claim */
	adm_sessions_release(&t, e);
	acquire_ok(&t, 3, T0, "SER-10");
	memset(id, 2, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_EXPIRED);
	table_destroy(&t);
}

/* Only the exact address replaces its own try: a neighbour in the same
 * IPv6 /64 opens a parallel session. */
static void neighbour_does_not_replace(void **state)
{
	(void)state;
	struct adm_sessions t;
	table_init(&t, 64, NULL);
	open_from(&t, "SER-11", "2001:db8:1:2::7", 1, T0 + 600);
	open_from(&t, "SER-11", "2001:db8:1:2::8", 2, T0 + 600);
	open_from(&t, "SER-11", "fe80::1%eth0", 3, T0 + 600);
	open_from(&t, "SER-11", "fe80::1%eth0", 4, T0 + 600); /* replaces 3 */
	assert_int_equal(adm_sessions_count(&t), 3);
	acquire_ok(&t, 1, T0, "SER-11");
	acquire_ok(&t, 2, T0, "SER-11");
	acquire_ok(&t, 4, T0, "SER-11");
	table_destroy(&t);
}

/* An unproven session ends at its answer window; a proven one lives to
 * its deadline. */
static void answer_window(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	table_init(&t, 8, NULL);
	open_ex(&t, "SER-6", "192.0.2.1", 1, T0 + 600, T0 + 30, NULL, false);
	open_ex(&t, "SER-7", "192.0.2.1", 2, T0 + 600, T0 + 30, NULL, false);
	memset(id, 2, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 5, &e), ADM_SESS_OK);
	adm_sessions_prove(&t, e);
	adm_sessions_release(&t, e);
	assert_int_equal(reap(&t, T0 + 30), 0);
	memset(id, 1, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 31, &e), ADM_SESS_EXPIRED);
	assert_int_equal(reap(&t, T0 + 31), 1);
	acquire_ok(&t, 2, T0 + 31, "SER-7");
	table_destroy(&t);
}

/* The reaper hands every ended entry to its callback with why. */
static unsigned n_ended;
static void count_ended(void *ctx, struct adm_session *e, const char *why)
{
	(void)ctx;
	assert_string_equal(why, e->s.id[0] == 1 ? "session-expired" : "superseded");
	n_ended++;
}

static void reaper_callback(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	table_init(&t, 8, NULL);
	open_from(&t, "SER-8", "192.0.2.1", 1, T0 + 10);
	open_from(&t, "SER-9", "192.0.2.1", 2, T0 + 600);
	open_from(&t, "SER-9", "192.0.2.2", 3, T0 + 600);
	memset(id, 3, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_OK);
	adm_sessions_prove(&t, e);
	adm_sessions_release(&t, e);
	assert_int_equal(adm_sessions_reap(&t, T0 + 11, count_ended, NULL), 2);
	assert_int_equal(n_ended, 2);
	table_destroy(&t);
}

static void an_intake_still_deciding_is_not_reaped(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	table_init(&t, 8, NULL);
	assert_int_equal(adm_sessions_reserve(&t, "SER-2", "192.0.2.1", T0, &e), ADM_SESS_OK);
	/* not published, deadline 0: not reapable while the intake holds it */
	if (!shared) {
		assert_int_equal(reap(&t, T0 + 99999), 0);
		assert_int_equal(adm_sessions_count(&t), 1);
	} else {
		/* SS2/SS3: held for its lease; after it, an intake that never
		 * finished (its replica died) is the reaper's */
		assert_int_equal(reap(&t, T0 + LEASE), 0);
		assert_int_equal(adm_sessions_count(&t), 1);
		assert_int_equal(reap(&t, T0 + LEASE + 1), 1);
		assert_int_equal(adm_sessions_count(&t), 0);
	}
	adm_sessions_drop(&t, e);
	table_destroy(&t);
}

static void cap(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	table_init(&t, 2, NULL);
	open_one(&t, "A", 1, T0 + 10);
	open_one(&t, "B", 2, T0 + 10);
	assert_int_equal(adm_sessions_reserve(&t, "C", "192.0.2.1", T0, &e), ADM_SESS_FULL);
	assert_null(e);
	assert_int_equal(adm_sessions_count(&t), 2);
	/* the clock frees room */
	assert_int_equal(reap(&t, T0 + 11), 2);
	assert_int_equal(adm_sessions_reserve(&t, "C", "192.0.2.1", T0 + 11, &e), ADM_SESS_OK);
	adm_sessions_drop(&t, e);
	table_destroy(&t);
}

static void acquire(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL, *x = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	table_init(&t, 8, NULL);
	open_one(&t, "A", 7, T0 + 10);
	memset(id, 8, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_UNKNOWN);
	id[FLEET_WIRE_ID_LEN - 1] = 7; /* all but the last byte wrong */
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_UNKNOWN);
	memset(id, 7, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_OK);
	/* checked out: a second request neither gets it nor reaps it */
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &x), ADM_SESS_BUSY);
	assert_null(x);
	assert_int_equal(reap(&t, T0 + 11), 0);
	adm_sessions_release(&t, e);
	/* the deadline itself is still in time; a second later is not */
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 10, &e), ADM_SESS_OK);
	adm_sessions_release(&t, e);
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 11, &e), ADM_SESS_EXPIRED);
	assert_int_equal(reap(&t, T0 + 11), 1);
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 11, &e), ADM_SESS_UNKNOWN);
	table_destroy(&t);
}

static void gauge(void **state)
{
	(void)state;
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_metric *g = NULL;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_GAUGE, "fleetd_open_sessions",
						"open", NULL, NULL, &g, NULL),
			 FLEET_OK);
	table_init(&t, 4, g);
	open_one(&t, "A", 1, T0 + 10);
	assert_int_equal(adm_sessions_reserve(&t, "B", "192.0.2.1", T0, &e), ADM_SESS_OK);
	if (!shared) {
		assert_int_equal(fleet_metric_get(g, NULL), 2);
		adm_sessions_drop(&t, e);
		assert_int_equal(fleet_metric_get(g, NULL), 1);
	} else {
		/* shared: the whole fleet's sessions, counted as the reaper runs */
		reap(&t, T0);
		assert_int_equal(fleet_metric_get(g, NULL), 2);
		adm_sessions_drop(&t, e);
	}
	reap(&t, T0 + 11);
	assert_int_equal(fleet_metric_get(g, NULL), 0);
	table_destroy(&t);
	fleet_metrics_free(m);
}

/* --- the shared table only (sessions.h SH1-SH4) --- */

static struct adm_session *take(struct adm_sessions *t, uint8_t idb, time_t now,
				enum adm_sess_result want)
{
	uint8_t id[FLEET_WIRE_ID_LEN];
	struct adm_session *e = NULL;
	memset(id, idb, sizeof(id));
	assert_int_equal(adm_sessions_acquire(t, id, now, &e), want);
	return e;
}

/* Two replicas on one store: either finishes what the other started; a
 * checkout on one is busy on the other; a proof on one is seen by both. */
static void two_replicas_one_table(void **state)
{
	(void)state;
	struct adm_sessions a, b;
	table_init(&a, 64, NULL);
	table_init(&b, 64, NULL);
	open_ex(&a, "SER-20", "192.0.2.7", 1, T0 + 600, T0 + 30, ek('c'), false);
	open_ex(&a, "SER-20", "203.0.113.5", 2, T0 + 600, T0 + 30, ek('c'), false);
	struct adm_session *e = take(&b, 1, T0 + 1, ADM_SESS_OK);
	assert_string_equal(e->s.serial, "SER-20");
	assert_memory_equal(e->s.secret_rsa, (uint8_t[32]){[0 ... 31] = 0x5a}, 32);
	assert_null(take(&a, 1, T0 + 1, ADM_SESS_BUSY));
	assert_int_equal(adm_sessions_prove(&b, e), 1); /* 2, on a's side too */
	snprintf(e->lak_sha1, sizeof(e->lak_sha1), "%040d", 7);
	adm_sessions_release(&b, e);
	assert_null(take(&a, 2, T0 + 1, ADM_SESS_EXPIRED));
	e = take(&a, 1, T0 + 31, ADM_SESS_OK); /* proven: past the answer window */
	assert_true(e->proven);
	assert_string_equal(e->lak_sha1, "0000000000000000000000000000000000000007");
	adm_sessions_release(&a, e);
	/* one reaper gets each row */
	assert_int_equal(reap(&b, T0 + 31) + reap(&a, T0 + 31), 1);
	assert_int_equal(adm_sessions_count(&a), 1);
	adm_sessions_destroy(&b);
	table_destroy(&a);
}

/* SS2: a replica killed mid-round holds its checkout for the lease, not
 * for ever. */
static void lease_ends_a_dead_replicas_checkout(void **state)
{
	(void)state;
	struct adm_sessions a, b;
	table_init(&a, 64, NULL);
	table_init(&b, 64, NULL);
	open_one(&a, "SER-21", 1, T0 + 600);
	struct adm_session *e = take(&a, 1, T0, ADM_SESS_OK);
	/* a dies: its copy is gone, the row still checked out */
	fleet_attest_session_wipe(&e->s);
	free(e);
	assert_null(take(&b, 1, T0 + LEASE, ADM_SESS_BUSY));
	assert_int_equal(reap(&b, T0 + LEASE), 0);
	e = take(&b, 1, T0 + LEASE + 1, ADM_SESS_OK);
	assert_string_equal(e->s.serial, "SER-21");
	adm_sessions_release(&b, e);
	adm_sessions_destroy(&b);
	table_destroy(&a);
}

/* SH1: the store never holds a secret in the clear, and a sealed state
 * opens only under its key, for its row, unchanged. */
static void sealed_opens_only_where_sealed(void **state)
{
	(void)state;
	struct adm_sessions a, other;
	struct adm_session e = {0};
	uint8_t *b = NULL;
	size_t len = 0;
	table_init(&a, 64, NULL);
	table_init_key(&other, 64, NULL, (const uint8_t[32]){9});
	memset(e.handle, 'a', 32);
	memset(e.s.secret_rsa, 0x5a, sizeof(e.s.secret_rsa));
	snprintf(e.s.serial, sizeof(e.s.serial), "SER-22");
	assert_true(adm_sh_seal(&a, &e, &b, &len));
	assert_null(memmem(b, len, e.s.secret_rsa, sizeof(e.s.secret_rsa)));
	assert_null(memmem(b, len, "SER-22", 6));
	struct adm_session *o = adm_sh_open(&a, e.handle, b, len);
	assert_non_null(o);
	assert_memory_equal(o->s.secret_rsa, e.s.secret_rsa, sizeof(e.s.secret_rsa));
	free(o);
	char other_row[33];
	memset(other_row, 'b', 32);
	other_row[32] = '\0';
	assert_null(adm_sh_open(&a, other_row, b, len)); /* moved to another row */
	assert_null(adm_sh_open(&other, e.handle, b, len)); /* another CA key */
	assert_null(adm_sh_open(&a, e.handle, b, len - 1)); /* cut */
	for (size_t i = 0; i < len; i += 97) {
		b[i] ^= 1;
		assert_null(adm_sh_open(&a, e.handle, b, len)); /* changed */
		b[i] ^= 1;
	}
	free(b);
	/* through the store: a row given another row's state, or read by a
	 * replica with another key, is an unknown session */
	open_one(&a, "SER-23", 1, T0 + 600);
	open_one(&a, "SER-24", 2, T0 + 600);
	open_one(&a, "SER-25", 3, T0 + 600);
	struct raw *r = raw_open(loc);
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "UPDATE admission_sessions SET sealed = (SELECT sealed FROM admission_sessions "
		 "WHERE serial = 'SER-24') WHERE serial = 'SER-23'");
	assert_int_equal(raw_exec(r, sql), RAW_OK);
	raw_close(r);
	assert_null(take(&a, 1, T0, ADM_SESS_UNKNOWN));
	assert_null(take(&other, 3, T0, ADM_SESS_UNKNOWN));
	adm_sessions_release(&a, take(&a, 3, T0 + LEASE + 1, ADM_SESS_OK));
	adm_sessions_destroy(&other);
	table_destroy(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parallel_challenges_per_serial),
		cmocka_unit_test(same_source_replaces_its_own),
		cmocka_unit_test(per_source_cap),
		cmocka_unit_test(first_proof_ends_the_others),
		cmocka_unit_test(proof_supersedes_only_its_eks),
		cmocka_unit_test(neighbour_does_not_replace),
		cmocka_unit_test(answer_window),
		cmocka_unit_test(reaper_callback),
		cmocka_unit_test(an_intake_still_deciding_is_not_reaped),
		cmocka_unit_test(cap),
		cmocka_unit_test(acquire),
		cmocka_unit_test(gauge),
	};
	const struct CMUnitTest shared_tests[] = {
		cmocka_unit_test(two_replicas_one_table),
		cmocka_unit_test(lease_ends_a_dead_replicas_checkout),
		cmocka_unit_test(sealed_opens_only_where_sealed),
	};
	const char *sh = getenv("FLEET_TEST_SESSIONS_SHARED");
	shared = sh && strcmp(sh, "1") == 0;
	if (shared)
		(void)store_location_pg(); /* exits 77 (or fails) on a cluster that is not there */
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (shared)
		rc |= cmocka_run_group_tests(shared_tests, NULL, NULL);
	return rc;
}
