/*
 * test_policy_profiles.c: the example profiles in policy/profiles on real
 * firmware logs from ../shared/data/eventlogs. Every profile parses; each
 * admit/refuse pair gives exactly the verdict and reasons its header names.
 *
 * The quote is each log's .expected.json (PCR values computed outside this
 * project), not our own replay, so the log-vs-quote check is real too.
 */
#include "tests/testutil.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/eventlog.h"
#include "lib/hex.h"
#include "lib/tpm.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

static void test_every_profile_parses(void **state)
{
	(void)state;
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/policy/profiles", FLEET_SOURCE_DIR);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 5, ".yaml"))
			continue;
		char path[2048];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct fleet_profile *p;
		struct fleet_errctx err;
		if (fleet_profile_load(path, &p, &err) != FLEET_OK)
			fail_msg("%s:%u:%u: %s", path, err.line, err.column, err.detail);
		fleet_profile_free(p);
		n++;
	}
	closedir(d);
	assert_true(n >= 3);
}

/* The sha256 values of a log's .expected.json as a quote. */
static size_t expected_quote(const char *log, struct fleet_pcr_value *q, size_t cap)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/eventlogs/%s.expected.json", shared_data_dir(), log);
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr);
	if (!root)
		fail_msg("%s: %s", path, jerr.text);
	json_t *bank = json_object_get(json_object_get(root, "pcrs"), "sha256"), *v;
	const char *idx;
	size_t n = 0;
	json_object_foreach(bank, idx, v) {
		assert_true(n < cap);
		q[n].alg = FLEET_ALG_SHA256;
		q[n].index = (uint8_t)atoi(idx);
		q[n].size = 32;
		const char *h = json_string_value(v);
		assert_non_null(h);
		assert_int_equal(fleet_hex_decode(h, strlen(h), q[n].digest, 32), FLEET_OK);
		n++;
	}
	json_decref(root);
	assert_true(n > 0);
	return n;
}

struct pair {
	const char *profile;
	const char *log;
	const char *bios;
	const char *reasons[4]; /* exactly these, NULL-terminated; none = pass */
};

static const struct pair pairs[] = {
	{"worker-gce-shielded", "tpm2tools-event-gce-ubuntu-2104-log", "Google", {NULL}},
	{"worker-gce-shielded", "goattest-ubuntu_2104_shielded_vm_no_secure_boot_eventlog",
	 "Google", {"boot-application-not-allowed", NULL}},
	{"worker-gce-secureboot", "tpm2tools-event-gce-ubuntu-2104-log", "Google",
	 {"secure-boot-mismatch", NULL}},
	{"worker-uefi-secureboot", "goattest-sb_cert_eventlog", "sb-cert-lab",
	 {"no-boot-application", NULL}},
	/* The same admitted log with a BIOS the profile does not know. */
	{"worker-gce-shielded", "tpm2tools-event-gce-ubuntu-2104-log", "Google-2",
	 {"pcr0-unknown-bios", NULL}},
};

static void run_pair(const struct pair *pr)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/policy/profiles/%s.yaml", FLEET_SOURCE_DIR, pr->profile);
	struct fleet_profile *p;
	struct fleet_errctx err;
	if (fleet_profile_load(path, &p, &err) != FLEET_OK)
		fail_msg("%s:%u: %s", path, err.line, err.detail);
	snprintf(path, sizeof(path), "%s/eventlogs/%s.bin", shared_data_dir(), pr->log);
	struct fleet_buf raw;
	read_file_or_fail(path, &raw);
	struct fleet_evlog *log;
	struct fleet_pcr_replay replay;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_evlog_parse(raw.data, raw.len, &log, &ec), FLEET_OK);
	assert_int_equal(fleet_evlog_replay(log, &replay, &ec), FLEET_OK);
	fb_free(&raw);
	struct fleet_pcr_value q[FLEET_PCR_COUNT];
	size_t nq = expected_quote(pr->log, q, FLEET_PCR_COUNT);
	struct fleet_policy_input in = {.log = log, .replay = &replay, .quoted = q,
					.n_quoted = nq, .bios_version = pr->bios};
	struct fleet_verdict v;
	assert_int_equal(fleet_policy_evaluate(p, &in, &v), FLEET_OK);
	size_t want = 0;
	while (pr->reasons[want])
		want++;
	bool same = v.n_reasons == want && v.pass == (want == 0);
	for (size_t i = 0; same && i < want; i++)
		same = fleet_verdict_has(&v, pr->reasons[i]);
	if (!same) {
		for (size_t i = 0; i < v.n_reasons; i++)
			print_message("  got %s: %s\n", v.reasons[i].reason, v.reasons[i].detail);
		fail_msg("%s on %s: want %s%s", pr->profile, pr->log, want ? "fail with " : "pass",
			 want ? pr->reasons[0] : "");
	}
	assert_true(v.quote_checked);
	fleet_evlog_free(log);
	fleet_profile_free(p);
}

static void test_pairs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		run_pair(&pairs[i]);
}

int main(void)
{
	require_shared_data_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_profile_parses),
		cmocka_unit_test(test_pairs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
