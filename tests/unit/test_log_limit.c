/*
 * test_log_limit.c: the journal limiter (fleetd/obs/log_limit.c).
 *
 * A flood of one kind gives one full entry (admit true) and one summary
 * line with the exact count when the window ends, whether the caller
 * flushes or admit does it lazily; keys past max_keys share "other" and
 * ended keys free their slot; keys are copied and capped at 128 bytes; the
 * summary's FLEET_KEY is escaped like a claimed value; and 8 threads
 * hammering one limiter lose and double no count. Summary lines are read
 * from the stderr target (log_target=stderr), captured in a file.
 */
#include "tests/testutil.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleetd/obs/journal.h"
#include "fleetd/obs/log_limit.h"

/* The stderr target at LOG_INFO, captured (tests/testutil.h). */
static void capture_start(struct stderr_capture *c)
{
	fleet_log_set_target(FLEET_LOG_STDERR);
	fleet_log_set_max_priority(LOG_INFO);
	stderr_capture_start(c);
}


/* Sum of FLEET_SUPPRESSED over the lines; each line must be a summary. */
static uint64_t sum_suppressed(const char *s, size_t *lines)
{
	uint64_t sum = 0;
	*lines = 0;
	for (const char *line = s; *line;) {
		const char *end = strchr(line, '\n');
		assert_non_null(end);
		const char *f = strstr(line, " FLEET_SUPPRESSED=");
		assert_true(f && f < end);
		assert_non_null(strstr(line, " notice event=log-suppressed "));
		sum += strtoull(f + strlen(" FLEET_SUPPRESSED="), NULL, 10);
		(*lines)++;
		line = end + 1;
	}
	return sum;
}

#define KEY "intake-refused/ek-chain-untrusted"

static void test_flood_then_summary(void **state)
{
	struct fleet_log_limit *l = fleet_log_limit_new(60, 1024);
	assert_non_null(l);
	struct stderr_capture c;
	capture_start(&c);
	/* 1,000 in the window [1000, 1060): the first in full, 999 counted. */
	assert_true(fleet_log_limit_admit(l, KEY, 1000));
	for (int i = 1; i < 1000; i++)
		if (fleet_log_limit_admit(l, KEY, 1000 + i % 60))
			fail_msg("occurrence %d admitted", i);
	assert_int_equal(fleet_log_limit_suppressed(l), 999);
	assert_int_equal(fleet_log_limit_flush(l, 1059), 0); /* still open */
	char *out = stderr_capture_end(&c);
	assert_string_equal(out, "");
	free(out);

	/* The window ends: exactly one summary, with the count. */
	capture_start(&c);
	assert_int_equal(fleet_log_limit_flush(l, 1060), 1);
	assert_int_equal(fleet_log_limit_flush(l, 1060), 0);
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " notice event=log-suppressed "));
	assert_non_null(strstr(out, " FLEET_KEY=" KEY " "));
	assert_non_null(strstr(out, " FLEET_SUPPRESSED=999 "));
	free(out);

	/* A new window admits again; nothing suppressed in it, no summary. */
	capture_start(&c);
	assert_true(fleet_log_limit_admit(l, KEY, 1060));
	assert_int_equal(fleet_log_limit_flush(l, 1200), 0);
	assert_true(fleet_log_limit_admit(l, KEY, 1200));
	assert_false(fleet_log_limit_admit(l, KEY, 1201));
	out = stderr_capture_end(&c);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(fleet_log_limit_suppressed(l), 1000);
	capture_start(&c);
	fleet_log_limit_free(l); /* the open window's 1 is written here */
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " FLEET_KEY=" KEY " FLEET_SUPPRESSED=1 "));
	free(out);
}

/* The caller never flushes: admit writes the ended windows' summaries. */
static void test_lazy_flush(void **state)
{
	struct fleet_log_limit *l = fleet_log_limit_new(60, 1024);
	assert_non_null(l);
	struct stderr_capture c;
	capture_start(&c);
	for (int i = 0; i < 5; i++)
		fleet_log_limit_admit(l, "a", 0);
	for (int i = 0; i < 3; i++)
		fleet_log_limit_admit(l, "b", 10);
	assert_true(fleet_log_limit_admit(l, "c", 30)); /* nothing ended yet */
	char *out = stderr_capture_end(&c);
	assert_string_equal(out, "");
	free(out);

	capture_start(&c);
	assert_false(fleet_log_limit_admit(l, "c", 60)); /* a's window ended, c's not */
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " FLEET_KEY=a FLEET_SUPPRESSED=4 "));
	free(out);

	capture_start(&c);
	assert_true(fleet_log_limit_admit(l, "a", 75)); /* b's ended too */
	assert_int_equal(fleet_log_limit_flush(l, 75), 0);
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " FLEET_KEY=b FLEET_SUPPRESSED=2 "));
	free(out);

	/* The clock stepped back by a window or more ends the window too. */
	capture_start(&c);
	assert_false(fleet_log_limit_admit(l, "a", 74)); /* a second back: same window */
	assert_true(fleet_log_limit_admit(l, "a", 10)); /* 65 s back */
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1); /* c's window (30) is 20 s away */
	assert_non_null(strstr(out, " FLEET_KEY=a FLEET_SUPPRESSED=1 "));
	free(out);

	/* Freeing writes what is still open: c's 1. */
	capture_start(&c);
	fleet_log_limit_free(l);
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " FLEET_KEY=c FLEET_SUPPRESSED=1 "));
	free(out);
}

static void test_overflow_key(void **state)
{
	struct fleet_log_limit *l = fleet_log_limit_new(60, 4);
	assert_non_null(l);
	char k[16];
	for (int i = 0; i < 4; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		assert_true(fleet_log_limit_admit(l, k, 0));
	}
	/* The table is full: k4 opens "other", k5 and k6 share it. */
	assert_true(fleet_log_limit_admit(l, "k4", 0));
	assert_false(fleet_log_limit_admit(l, "k5", 0));
	assert_false(fleet_log_limit_admit(l, "k6", 1));
	assert_false(fleet_log_limit_admit(l, "k4", 2));
	assert_false(fleet_log_limit_admit(l, FLEET_LOG_LIMIT_OTHER, 3));
	assert_false(fleet_log_limit_admit(l, "k0", 4)); /* tracked keys still count */
	assert_int_equal(fleet_log_limit_suppressed(l), 5);

	struct stderr_capture c;
	capture_start(&c);
	assert_int_equal(fleet_log_limit_flush(l, 60), 2);
	char *out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 2);
	assert_non_null(strstr(out, " FLEET_KEY=k0 FLEET_SUPPRESSED=1 "));
	assert_non_null(strstr(out, " FLEET_KEY=other FLEET_SUPPRESSED=4 "));
	free(out);

	/* The ended keys freed their slots: four new keys get their own. */
	for (int i = 0; i < 4; i++) {
		snprintf(k, sizeof(k), "n%d", i);
		assert_true(fleet_log_limit_admit(l, k, 60));
	}
	assert_true(fleet_log_limit_admit(l, "n4", 60)); /* "other" again */
	assert_false(fleet_log_limit_admit(l, "n5", 60));

	/* A full table whose oldest key has ended: admit frees it before it
	 * sends a new key to "other". */
	struct fleet_log_limit *m = fleet_log_limit_new(60, 2);
	assert_non_null(m);
	assert_true(fleet_log_limit_admit(m, "old", 0));
	assert_true(fleet_log_limit_admit(m, "mid", 30));
	assert_true(fleet_log_limit_admit(m, "new", 60));
	assert_false(fleet_log_limit_admit(m, "new", 61));
	assert_true(fleet_log_limit_admit(m, "x", 61)); /* now "other" */
	assert_false(fleet_log_limit_admit(m, "y", 61));
	capture_start(&c);
	fleet_log_limit_free(m); /* writes the open windows' counts */
	out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 2);
	assert_non_null(strstr(out, " FLEET_KEY=new FLEET_SUPPRESSED=1 "));
	assert_non_null(strstr(out, " FLEET_KEY=other FLEET_SUPPRESSED=1 "));
	free(out);

	/* max_keys 0: every key is "other". */
	struct fleet_log_limit *z = fleet_log_limit_new(60, 0);
	assert_non_null(z);
	assert_true(fleet_log_limit_admit(z, "a", 0));
	assert_false(fleet_log_limit_admit(z, "b", 0));
	capture_start(&c);
	fleet_log_limit_free(z);
	fleet_log_limit_free(l);
	out = stderr_capture_end(&c);
	free(out);
}

static void test_keys_copied_and_capped(void **state)
{
	struct fleet_log_limit *l = fleet_log_limit_new(60, 16);
	assert_non_null(l);
	char buf[16] = "port-mismatch";
	assert_true(fleet_log_limit_admit(l, buf, 0));
	strcpy(buf, "changed");
	assert_false(fleet_log_limit_admit(l, "port-mismatch", 0)); /* copied */
	assert_true(fleet_log_limit_admit(l, buf, 0));

	char big[301];
	memset(big, 'k', 300);
	big[300] = '\0';
	assert_true(fleet_log_limit_admit(l, big, 0));
	big[129] = '\0';
	assert_false(fleet_log_limit_admit(l, big, 0)); /* the same first 128 bytes */
	big[128] = '\0';
	assert_false(fleet_log_limit_admit(l, big, 0));
	big[127] = '\0';
	assert_true(fleet_log_limit_admit(l, big, 0)); /* 127 bytes: another key */

	assert_true(fleet_log_limit_admit(l, NULL, 0));
	assert_false(fleet_log_limit_admit(l, "(null)", 0));
	assert_true(fleet_log_limit_admit(NULL, "x", 0)); /* no limiter */
	assert_int_equal(fleet_log_limit_flush(NULL, 0), 0);
	assert_int_equal(fleet_log_limit_suppressed(NULL), 0);

	struct stderr_capture c;
	capture_start(&c);
	fleet_log_limit_free(l);
	char *out = stderr_capture_end(&c);
	char want[129];
	memset(want, 'k', 128);
	want[128] = '\0';
	char line_key[sizeof(want) + 40];
	snprintf(line_key, sizeof(line_key), " FLEET_KEY=%s FLEET_SUPPRESSED=2 ", want);
	assert_non_null(strstr(out, line_key));
	free(out);
}

/* A key that breaks the rule (a backslash and a newline in it) still gives
 * one line, escaped as a claimed value is: the backslash doubled. */
static void test_summary_key_escaped(void **state)
{
	struct fleet_log_limit *l = fleet_log_limit_new(60, 16);
	assert_non_null(l);
	const char *bad = "a\\x0A\nb\xe2\x80\xae";
	assert_true(fleet_log_limit_admit(l, bad, 0));
	assert_false(fleet_log_limit_admit(l, bad, 0));
	struct stderr_capture c;
	capture_start(&c);
	assert_int_equal(fleet_log_limit_flush(l, 60), 1);
	char *out = stderr_capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	/* Value a\\x0A\x0Ab\xE2\x80\xAE, quoted on the line with each
	 * backslash escaped once more. */
	assert_non_null(strstr(out, " FLEET_KEY=\"a\\\\\\\\x0A\\\\x0Ab\\\\xE2\\\\x80\\\\xAE\" "));
	assert_null(strstr(out, "\xe2\x80\xae"));
	free(out);
	fleet_log_limit_free(l);
}

/* ---- concurrency ---------------------------------------------------------- */

#define THREADS 8
#define PER_THREAD 10000
#define KEYS 16

struct hammer {
	struct fleet_log_limit *l;
	int id;
	bool moving_clock; /* time advances, windows of 1 s end all along */
	_Atomic uint64_t *admitted;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;
	uint64_t admitted = 0;
	for (int j = 0; j < PER_THREAD; j++) {
		char key[32];
		snprintf(key, sizeof(key), "intake-refused/k%d", (j + h->id) % KEYS);
		time_t now = h->moving_clock ? 1000 + j / 500 : 1000 + j / 2000;
		admitted += fleet_log_limit_admit(h->l, key, now);
	}
	atomic_fetch_add(h->admitted, admitted);
	return NULL;
}

struct flusher {
	struct fleet_log_limit *l;
	_Atomic bool *stop;
	size_t lines;
};

static void *flusher(void *arg)
{
	struct flusher *f = arg;
	while (!atomic_load(f->stop))
		f->lines += fleet_log_limit_flush(f->l, 1004);
	return NULL;
}

static void run_hammer(bool moving_clock)
{
	struct fleet_log_limit *l = fleet_log_limit_new(moving_clock ? 1 : 60, 1024);
	assert_non_null(l);
	_Atomic uint64_t admitted = 0;
	_Atomic bool stop = false;
	struct hammer h[THREADS];
	pthread_t t[THREADS], ft;
	struct flusher f = {.l = l, .stop = &stop};
	struct stderr_capture c;
	capture_start(&c);
	if (!moving_clock)
		assert_int_equal(pthread_create(&ft, NULL, flusher, &f), 0);
	for (int i = 0; i < THREADS; i++) {
		h[i] = (struct hammer){.l = l, .id = i, .moving_clock = moving_clock,
				       .admitted = &admitted};
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &h[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (!moving_clock) {
		atomic_store(&stop, true);
		pthread_join(ft, NULL);
	}
	uint64_t total = (uint64_t)THREADS * PER_THREAD;
	uint64_t suppressed = fleet_log_limit_suppressed(l);
	assert_int_equal(atomic_load(&admitted) + suppressed, total);
	if (!moving_clock) {
		/* All inside one window: one admitted per key, no summary yet
		 * (the flusher ran at 1004 throughout). */
		assert_int_equal(atomic_load(&admitted), KEYS);
		assert_int_equal(f.lines, 0);
		assert_int_equal(fleet_log_limit_flush(l, 1060), KEYS);
	} else {
		fleet_log_limit_flush(l, 2000);
	}
	fleet_log_limit_free(l);
	char *out = stderr_capture_end(&c);
	size_t lines;
	assert_int_equal(sum_suppressed(out, &lines), suppressed);
	if (!moving_clock)
		assert_int_equal(lines, KEYS);
	printf("%s: %" PRIu64 " admitted, %" PRIu64 " suppressed, %zu summary line(s)\n",
	       moving_clock ? "1 s windows, moving clock" : "one window",
	       (uint64_t)atomic_load(&admitted), suppressed, lines);
	free(out);
}

/* Several rounds: a lost update does not show in every round (without the
 * mutex, one round caught it in about half the runs here, on two cores). */
#define ROUNDS 10

static void test_concurrent_one_window(void **state)
{
	for (int i = 0; i < ROUNDS; i++)
		run_hammer(false);
}

/* Windows end while the threads run (admit flushes lazily, threads see
 * slightly different clocks): every occurrence is either admitted or in
 * exactly one summary. */
static void test_concurrent_moving_clock(void **state)
{
	for (int i = 0; i < ROUNDS; i++)
		run_hammer(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_then_summary),
		cmocka_unit_test(test_lazy_flush),
		cmocka_unit_test(test_overflow_key),
		cmocka_unit_test(test_keys_copied_and_capped),
		cmocka_unit_test(test_summary_key_escaped),
		cmocka_unit_test(test_concurrent_one_window),
		cmocka_unit_test(test_concurrent_moving_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
