/*
 * test_admission_sessions.c: fleetd's open-session table
 * (fleetd/admission/sessions.c): one session per serial whatever its case
 * (I2), the cap, expiry by the clock the caller passes, checked-out
 * entries that no other request can touch or reap, and the gauge.
 */
#include "tests/testutil.h"

#include <string.h>

#include "fleetd/admission/sessions.h"

#define T0 1000000

/* A published session for serial with this id byte, expiring at deadline. */
static struct adm_session *open_one(struct adm_sessions *t, const char *serial, uint8_t id,
				    time_t deadline)
{
	struct adm_session *e = NULL;
	assert_int_equal(adm_sessions_reserve(t, serial, T0, &e), ADM_SESS_OK);
	assert_non_null(e);
	memset(e->s.id, id, sizeof(e->s.id));
	e->s.state = FLEET_SESSION_CHALLENGED;
	e->s.deadline = deadline;
	adm_sessions_publish(t, e);
	return e;
}

static void one_session_per_serial(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL;
	assert_int_equal(adm_sessions_init(&t, 8, NULL), 0);
	open_one(&t, "SER-1", 1, T0 + 600);
	/* the same serial in another case is the same machine (I2) */
	assert_int_equal(adm_sessions_reserve(&t, "ser-1", T0 + 1, &e), ADM_SESS_OPEN);
	assert_null(e);
	assert_int_equal(adm_sessions_reserve(&t, "SER-1", T0 + 600, &e), ADM_SESS_OPEN);
	/* the open session is untouched: still found by its id */
	uint8_t id[FLEET_WIRE_ID_LEN];
	memset(id, 1, sizeof(id));
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 2, &e), ADM_SESS_OK);
	assert_string_equal(e->s.serial, "SER-1");
	adm_sessions_release(&t, e);
	/* once expired, a new intake replaces it */
	assert_int_equal(adm_sessions_reserve(&t, "SER-1", T0 + 601, &e), ADM_SESS_OK);
	assert_int_equal(adm_sessions_count(&t), 1);
	adm_sessions_drop(&t, e);
	assert_int_equal(adm_sessions_count(&t), 0);
	adm_sessions_destroy(&t);
}

static void an_intake_still_deciding_blocks_its_serial(void **state)
{
	(void)state;
	struct adm_sessions t;
	struct adm_session *e = NULL, *e2 = NULL;
	assert_int_equal(adm_sessions_init(&t, 8, NULL), 0);
	assert_int_equal(adm_sessions_reserve(&t, "SER-2", T0, &e), ADM_SESS_OK);
	/* not published, deadline 0: still not "expired" for a second intake */
	assert_int_equal(adm_sessions_reserve(&t, "SER-2", T0 + 99999, &e2), ADM_SESS_OPEN);
	/* and not reapable while the first intake holds it */
	assert_int_equal(adm_sessions_reap(&t, T0 + 99999), 0);
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
	assert_int_equal(adm_sessions_reserve(&t, "C", T0, &e), ADM_SESS_FULL);
	assert_null(e);
	assert_int_equal(adm_sessions_count(&t), 2);
	/* the clock frees room */
	assert_int_equal(adm_sessions_reap(&t, T0 + 11), 2);
	assert_int_equal(adm_sessions_reserve(&t, "C", T0 + 11, &e), ADM_SESS_OK);
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
	assert_int_equal(adm_sessions_reap(&t, T0 + 11), 0);
	adm_sessions_release(&t, e);
	/* the deadline itself is still in time; a second later is not */
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 10, &e), ADM_SESS_OK);
	adm_sessions_release(&t, e);
	assert_int_equal(adm_sessions_acquire(&t, id, T0 + 11, &e), ADM_SESS_EXPIRED);
	assert_int_equal(adm_sessions_reap(&t, T0 + 11), 1);
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
	assert_int_equal(adm_sessions_reserve(&t, "B", T0, &e), ADM_SESS_OK);
	assert_int_equal(fleet_metric_get(g, NULL), 2);
	adm_sessions_drop(&t, e);
	assert_int_equal(fleet_metric_get(g, NULL), 1);
	adm_sessions_reap(&t, T0 + 11);
	assert_int_equal(fleet_metric_get(g, NULL), 0);
	adm_sessions_destroy(&t);
	fleet_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_session_per_serial),
		cmocka_unit_test(an_intake_still_deciding_blocks_its_serial),
		cmocka_unit_test(cap),
		cmocka_unit_test(acquire),
		cmocka_unit_test(gauge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
