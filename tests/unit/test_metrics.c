/*
 * test_metrics.c: the metrics registry (fleetd/obs/metrics.c): the exact
 * Prometheus text it renders, the names and labels it refuses, values
 * outside a label's fixed set counting nothing, and increments from several
 * threads adding up exactly.
 */
#include "tests/testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/obs/metrics.h"

static char *render(struct fleet_metrics *m)
{
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_metrics_render(m, &b), FLEET_OK);
	fb_put_u8(&b, 0);
	char *s = strdup((const char *)b.data);
	fb_free(&b);
	return s;
}

static const char *const reasons[] = {"malformed-json", "body-too-large", NULL};

static void test_render_exact(void **state)
{
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_metric *plain, *rej, *g;
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_COUNTER, "fleetd_passes_total",
						"Passes run.", NULL, NULL, &plain, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_COUNTER,
						"fleetd_requests_rejected_total",
						"Requests refused.", "reason", reasons, &rej, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_GAUGE, "fleetd_sessions_open",
						"Open sessions.", NULL, NULL, &g, NULL),
			 FLEET_OK);
	fleet_metric_add(plain, 3);
	fleet_metric_inc(plain);
	assert_int_equal(fleet_metric_inc_label(rej, "malformed-json"), FLEET_OK);
	assert_int_equal(fleet_metric_inc_label(rej, "malformed-json"), FLEET_OK);
	fleet_metric_set(g, -7);

	char *text = render(m);
	assert_string_equal(text,
			    "# HELP fleetd_passes_total Passes run.\n"
			    "# TYPE fleetd_passes_total counter\n"
			    "fleetd_passes_total 4\n"
			    "# HELP fleetd_requests_rejected_total Requests refused.\n"
			    "# TYPE fleetd_requests_rejected_total counter\n"
			    "fleetd_requests_rejected_total{reason=\"malformed-json\"} 2\n"
			    "fleetd_requests_rejected_total{reason=\"body-too-large\"} 0\n"
			    "# HELP fleetd_sessions_open Open sessions.\n"
			    "# TYPE fleetd_sessions_open gauge\n"
			    "fleetd_sessions_open -7\n");
	free(text);
	assert_int_equal(fleet_metric_get(plain, NULL), 4);
	assert_int_equal(fleet_metric_get(rej, "malformed-json"), 2);
	assert_int_equal(fleet_metric_get(g, NULL), -7);
	fleet_metrics_free(m);
}

static void test_escaping(void **state)
{
	static const char *const odd[] = {"a\"b", "c\\d", NULL};
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_metric *f;
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_COUNTER, "x_total",
						"line one\nback\\slash", "k", odd, &f, NULL),
			 FLEET_OK);
	char *text = render(m);
	assert_string_equal(text, "# HELP x_total line one\\nback\\\\slash\n"
				  "# TYPE x_total counter\n"
				  "x_total{k=\"a\\\"b\"} 0\n"
				  "x_total{k=\"c\\\\d\"} 0\n");
	free(text);
	fleet_metrics_free(m);
}

static fleet_err reg(struct fleet_metrics *m, enum fleet_metric_type t, const char *name,
		     const char *label, const char *const *values)
{
	struct fleet_metric *f;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_metrics_register(m, t, name, "help", label, values, &f, &ec);
	if (e != FLEET_OK) {
		assert_null(f);
		assert_true(ec.detail[0] != '\0'); /* every refusal says why */
	}
	return e;
}

static void test_names_validated(void **state)
{
	static const char *const dup[] = {"a", "b", "a", NULL};
	static const char *const ctl[] = {"ok", "bad\n", NULL};
	static const char *const empty_value[] = {"", NULL};
	static const char *const none[] = {NULL};
	static const char *const one[] = {"a", NULL};
	struct fleet_metrics *m = fleet_metrics_new();

	assert_int_equal(reg(m, FLEET_METRIC_COUNTER, "good_total", NULL, NULL), FLEET_OK);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "ns:good_gauge", NULL, NULL), FLEET_OK);
	assert_int_equal(reg(m, FLEET_METRIC_COUNTER, "good_total", NULL, NULL),
			 FLEET_E_INVALID_ARG); /* twice */
	assert_int_equal(reg(m, FLEET_METRIC_COUNTER, "requests", NULL, NULL),
			 FLEET_E_INVALID_ARG); /* counter without _total */
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "1st", NULL, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "a-b", NULL, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "a b", NULL, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "", NULL, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g1", "__name", one), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g2", "a:b", one), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g3", "k", dup), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g4", "k", ctl), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g5", "k", empty_value),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g6", "k", none), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g7", "k", NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g8", NULL, one), FLEET_E_INVALID_ARG);

	const char *many[FLEET_METRICS_MAX_VALUES + 2];
	char names[FLEET_METRICS_MAX_VALUES + 1][8];
	for (int i = 0; i <= FLEET_METRICS_MAX_VALUES; i++) {
		snprintf(names[i], sizeof(names[i]), "v%d", i);
		many[i] = names[i];
	}
	many[FLEET_METRICS_MAX_VALUES + 1] = NULL;
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g9", "k", many), FLEET_E_TOO_LARGE);
	many[FLEET_METRICS_MAX_VALUES] = NULL;
	assert_int_equal(reg(m, FLEET_METRIC_GAUGE, "g10", "k", many), FLEET_OK);

	/* Nothing refused was registered: the text holds the three good ones. */
	char *text = render(m);
	assert_non_null(strstr(text, "# TYPE good_total counter\n"));
	assert_non_null(strstr(text, "# TYPE ns:good_gauge gauge\n"));
	assert_null(strstr(text, "g3"));
	assert_null(strstr(text, "requests "));
	free(text);
	fleet_metrics_free(m);
}

static void test_fixed_label_set(void **state)
{
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_metric *rej, *plain, *gl;
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_COUNTER, "r_total", "h",
						"reason", reasons, &rej, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_COUNTER, "p_total", "h", NULL,
						NULL, &plain, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_GAUGE, "gl", "h", "state",
						reasons, &gl, NULL),
			 FLEET_OK);
	/* A value a client could choose creates no series and counts nothing. */
	assert_int_equal(fleet_metric_inc_label(rej, "attacker-chosen"), FLEET_E_NOT_FOUND);
	assert_int_equal(fleet_metric_inc_label(rej, NULL), FLEET_E_NOT_FOUND);
	assert_int_equal(fleet_metric_inc_label(plain, "malformed-json"), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_metric_set_label(rej, "malformed-json", 5),
			 FLEET_E_INVALID_ARG); /* counters only go up */
	fleet_metric_inc(rej);  /* a labelled family has no unlabelled series */
	fleet_metric_set(plain, 9);
	assert_int_equal(fleet_metric_set_label(gl, "body-too-large", 12), FLEET_OK);
	char *text = render(m);
	assert_null(strstr(text, "attacker"));
	assert_non_null(strstr(text, "r_total{reason=\"malformed-json\"} 0\n"));
	assert_non_null(strstr(text, "r_total{reason=\"body-too-large\"} 0\n"));
	assert_non_null(strstr(text, "p_total 0\n"));
	assert_non_null(strstr(text, "gl{state=\"body-too-large\"} 12\n"));
	free(text);
	fleet_metrics_free(m);
}

#define THREADS 4
#define PER_THREAD 100000

static void *hammer(void *arg)
{
	struct fleet_metric *f = arg;
	for (int i = 0; i < PER_THREAD; i++)
		fleet_metric_inc_label(f, (i & 1) ? "malformed-json" : "body-too-large");
	return NULL;
}

static void test_concurrent_increments(void **state)
{
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_metric *f;
	assert_int_equal(fleet_metrics_register(m, FLEET_METRIC_COUNTER, "c_total", "h",
						"reason", reasons, &f, NULL),
			 FLEET_OK);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, f), 0);
	for (int k = 0; k < 50; k++) { /* render while they count */
		char *text = render(m);
		free(text);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(fleet_metric_get(f, "malformed-json"), THREADS * PER_THREAD / 2);
	assert_int_equal(fleet_metric_get(f, "body-too-large"), THREADS * PER_THREAD / 2);
	fleet_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_exact),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_names_validated),
		cmocka_unit_test(test_fixed_label_set),
		cmocka_unit_test(test_concurrent_increments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
