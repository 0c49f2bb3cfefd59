/*
 * test_admission_sessions.c: fleetd's open-session table
 * (fleetd/admission/sessions.c): parallel challenges per serial whatever
 * its case (I2) and their caps, a source's own unproven try replaced,
 * the first proof ending the others, the unproven answer window, the cap,
 * expiry by the clock the caller passes, checked-out entries that no other
 * request can touch or reap, and the gauge.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <string.h>

#include "fleetd/admission/sessions.h"

#define T0 1000000

/* A published session for serial from peer with this id byte, expiring at
 * deadline. */
static struct adm_session *open_from(struct adm_sessions *t, const char *serial,
				     const char *peer, uint8_t id, time_t deadline)
{
	struct adm_session *e = NULL;
	assert_int_equal(adm_sessions_reserve(t, serial, peer, T0, &e), ADM_SESS_OK);
	assert_non_null(e);
	memset(e->s.id, id, sizeof(e->s.id));
	e->s.state = FLEET_SESSION_CHALLENGED;
	e->s.deadline = deadline;
	adm_sessions_publish(t, e);
	return e;
}

static struct adm_session *open_one(struct adm_sessions *t, const char *serial, uint8_t id,
				    time_t deadline)
{
	return open_from(t, serial, "192.0.2.1", id, deadline);
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
	assert_int_equal(adm_sessions_init(&t, 64, NULL), 0);
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
	adm_sessions_destroy(&t);
}

/* A source's new intake for a serial replaces its own earlier unproven
 * one, never another source's, and never a proven one. */
static void same_source_replaces_its_own(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	assert_int_equal(adm_sessions_init(&t, 64, NULL), 0);
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
	adm_sessions_destroy(&t);
}

/* A source holds at most ADM_SESSIONS_PER_PEER unproven sessions. */
static void per_source_cap(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	char serial[32];
	assert_int_equal(adm_sessions_init(&t, 1024, NULL), 0);
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
	adm_sessions_destroy(&t);
}

/* The first TPM-authenticated answer ends every other session of its
 * serial: at once when idle, when given back when busy. */
static void first_proof_ends_the_others(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL, *busy = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	assert_int_equal(adm_sessions_init(&t, 64, NULL), 0);
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
	adm_sessions_destroy(&t);
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
	assert_int_equal(adm_sessions_init(&t, 64, NULL), 0);
	struct adm_session *mine = open_from(&t, "SER-10", "192.0.2.7", 1, T0 + 600);
	struct adm_session *forged = open_from(&t, "SER-10", "203.0.113.5", 2, T0 + 600);
	struct adm_session *other = open_from(&t, "SER-10", "198.51.100.9", 3, T0 + 600);
	strcpy(mine->s.ek_hash, "aa");
	strcpy(forged->s.ek_hash, "aa"); /* the machine's public EK certificate */
	strcpy(other->s.ek_hash, "bb");  /* another TPM, claiming the serial */
	other->claim = true;
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
	adm_sessions_destroy(&t);
}

/* Only the exact address replaces its own try: a neighbour in the same
 * IPv6 /64 opens a parallel session. */
static void neighbour_does_not_replace(void **state)
{
	(void)state;
	struct adm_sessions t;
	assert_int_equal(adm_sessions_init(&t, 64, NULL), 0);
	open_from(&t, "SER-11", "2001:db8:1:2::7", 1, T0 + 600);
	open_from(&t, "SER-11", "2001:db8:1:2::8", 2, T0 + 600);
	open_from(&t, "SER-11", "fe80::1%eth0", 3, T0 + 600);
	open_from(&t, "SER-11", "fe80::1%eth0", 4, T0 + 600); /* replaces 3 */
	assert_int_equal(adm_sessions_count(&t), 3);
	acquire_ok(&t, 1, T0, "SER-11");
	acquire_ok(&t, 2, T0, "SER-11");
	acquire_ok(&t, 4, T0, "SER-11");
	adm_sessions_destroy(&t);
}

/* An unproven session ends at its answer window; a proven one lives to
 * its deadline. */
static void answer_window(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	assert_int_equal(adm_sessions_init(&t, 8, NULL), 0);
	open_one(&t, "SER-6", 1, T0 + 600)->answer_by = T0 + 30;
	open_one(&t, "SER-7", 2, T0 + 600)->answer_by = T0 + 30;
	memset(id, 2, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 5, &e), ADM_SESS_OK);
	adm_sessions_prove(&t, e);
	adm_sessions_release(&t, e);
	assert_int_equal(reap(&t, T0 + 30), 0);
	memset(id, 1, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 31, &e), ADM_SESS_EXPIRED);
	assert_int_equal(reap(&t, T0 + 31), 1);
	acquire_ok(&t, 2, T0 + 31, "SER-7");
	adm_sessions_destroy(&t);
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
	assert_int_equal(adm_sessions_init(&t, 8, NULL), 0);
	open_from(&t, "SER-8", "192.0.2.1", 1, T0 + 10);
	open_from(&t, "SER-9", "192.0.2.1", 2, T0 + 600);
	open_from(&t, "SER-9", "192.0.2.2", 3, T0 + 600);
	memset(id, 3, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0, &e), ADM_SESS_OK);
	adm_sessions_prove(&t, e);
	adm_sessions_release(&t, e);
	assert_int_equal(adm_sessions_reap(&t, T0 + 11, count_ended, NULL), 2);
	assert_int_equal(n_ended, 2);
	adm_sessions_destroy(&t);
}

static void an_intake_still_deciding_is_not_reaped(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	assert_int_equal(adm_sessions_init(&t, 8, NULL), 0);
	assert_int_equal(adm_sessions_reserve(&t, "SER-2", "192.0.2.1", T0, &e), ADM_SESS_OK);
	/* not published, deadline 0: not reapable while the intake holds it */
	assert_int_equal(reap(&t, T0 + 99999), 0);
	assert_int_equal(adm_sessions_count(&t), 1);
	adm_sessions_drop(&t, e);
	adm_sessions_destroy(&t);
}

static void cap(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	assert_int_equal(adm_sessions_init(&t, 2, NULL), 0);
	open_one(&t, "A", 1, T0 + 10);
	open_one(&t, "B", 2, T0 + 10);
	assert_int_equal(adm_sessions_reserve(&t, "C", "192.0.2.1", T0, &e), ADM_SESS_FULL);
	assert_null(e);
	assert_int_equal(adm_sessions_count(&t), 2);
	/* the clock frees room */
	assert_int_equal(reap(&t, T0 + 11), 2);
	assert_int_equal(adm_sessions_reserve(&t, "C", "192.0.2.1", T0 + 11, &e), ADM_SESS_OK);
	adm_sessions_drop(&t, e);
	adm_sessions_destroy(&t);
}

static void acquire(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL, *x = NULL;
	uint8_t id[FLEET_WIRE_ID_LEN];
	assert_int_equal(adm_sessions_init(&t, 8, NULL), 0);
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
	adm_sessions_destroy(&t);
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
	assert_int_equal(adm_sessions_init(&t, 4, g), 0);
	open_one(&t, "A", 1, T0 + 10);
	assert_int_equal(adm_sessions_reserve(&t, "B", "192.0.2.1", T0, &e), ADM_SESS_OK);
	assert_int_equal(fleet_metric_get(g, NULL), 2);
	adm_sessions_drop(&t, e);
	assert_int_equal(fleet_metric_get(g, NULL), 1);
	reap(&t, T0 + 11);
	assert_int_equal(fleet_metric_get(g, NULL), 0);
	adm_sessions_destroy(&t);
	fleet_metrics_free(m);
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
	return cmocka_run_group_tests(tests, NULL, NULL);
}
