/*
 * test_eventlog_interop.c: every real log in ../shared/data/eventlogs (from
 * tpm2-tools and go-attestation) replays to exactly its *.expected.json, and
 * `fleetctl eventlog show` lists each without error. Skips (77) when the
 * shared data is not beside the checkout.
 */
#include "tests/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/eventlog.h"

static char dir[4096];

/* Calls fn for each *.bin, in directory order; returns how many. */
static int each_log(void (*fn)(const char *bin, const char *expected))
{
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 4, ".bin") != 0)
			continue;
		char bin[8192], exp[8192];
		snprintf(bin, sizeof(bin), "%s/%s", dir, de->d_name);
		snprintf(exp, sizeof(exp), "%s/%.*s.expected.json", dir, (int)(len - 4),
			 de->d_name);
		fn(bin, exp);
		n++;
	}
	closedir(d);
	return n;
}

static void check_replay(const char *bin, const char *expected)
{
	struct fleet_buf b;
	read_file_or_fail(bin, &b);
	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_evlog_parse(b.data, b.len, &log, &ec);
	if (e != FLEET_OK)
		fail_msg("%s: %s at byte %zu: %s", bin, fleet_err_str(e), ec.offset, ec.detail);
	struct fleet_pcr_replay r;
	e = fleet_evlog_replay(log, &r, &ec);
	if (e != FLEET_OK)
		fail_msg("%s: replay: %s", bin, ec.detail);
	json_t *got = fleet_evlog_replay_json(&r, log->format);
	json_error_t jerr;
	json_t *want = json_load_file(expected, 0, &jerr);
	if (!want)
		fail_msg("%s: %s", expected, jerr.text);
	if (!got || !json_equal(got, want)) {
		char *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
		fail_msg("%s: replay differs from %s\n got: %s", bin, expected, g ? g : "(null)");
	}
	/* Real firmware measures these types over their data: the check a
	 * policy relies on must not refuse honest logs. */
	for (size_t i = 0; i < log->n_events; i++) {
		const struct fleet_evlog_event *ev = &log->events[i];
		if (fleet_evlog_type_binds_data(ev->type) &&
		    fleet_evlog_event_data_matches(ev) != FLEET_OK)
			fail_msg("%s: event %zu (%s at byte %zu): data does not match digests",
				 bin, i, fleet_evlog_type_name(ev->type), ev->offset);
	}
	/* Replaying one bank alone (what fleetd does for a quote) gives that
	 * bank exactly as the full replay does. */
	for (uint32_t k = 0; k < r.n_banks; k++) {
		struct fleet_pcr_replay one;
		assert_int_equal(fleet_evlog_replay_one(log, r.banks[k].alg, &one, &ec), FLEET_OK);
		assert_int_equal(one.n_banks, 1);
		assert_memory_equal(&one.banks[0], &r.banks[k], sizeof(one.banks[0]));
	}
	struct fleet_pcr_replay none;
	assert_int_equal(fleet_evlog_replay_one(log, FLEET_ALG_SM3_256, &none, &ec), FLEET_OK);
	assert_int_equal(none.n_banks, 0);
	printf("ok: %s\n", bin);
	json_decref(got);
	json_decref(want);
	fleet_evlog_free(log);
	fb_free(&b);
}

static void test_replay_matches_expected(void **state)
{
	(void)state;
	/* Zero logs would pass vacuously: the shared set has eighteen. */
	assert_true(each_log(check_replay) > 0);
}

static void check_show(const char *bin, const char *expected)
{
	(void)expected;
	char cmd[9000];
	snprintf(cmd, sizeof(cmd), "'%s' eventlog show '%s' 2>&1", fleetctl_path(), bin);
	struct fleet_buf out;
	fb_init(&out);
	int rc = run_capture(cmd, &out);
	if (rc != 0)
		fail_msg("%s: exit %d: %s", cmd, rc, out.data ? (char *)out.data : "");
	/* One line per event after the summary, each with its type name. */
	assert_non_null(out.data);
	assert_non_null(strstr((char *)out.data, "format: "));
	assert_non_null(strstr((char *)out.data, "#0 @0 PCR "));
	fb_free(&out);
}

static void test_show_lists_every_log(void **state)
{
	(void)state;
	assert_true(each_log(check_show) > 0);
}

int main(void)
{
	require_shared_data_or_skip();
	snprintf(dir, sizeof(dir), "%s/eventlogs", shared_data_dir());
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_matches_expected),
		cmocka_unit_test(test_show_lists_every_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
