/*
 * test_verdict_log.c: verdicts.jsonl. One verdict is one line of JSON with
 * the documented fields; claimed strings are capped and their control
 * characters escaped; the file rotates by size keeping a bounded number of
 * old files; a failed write says so and leaves no half line behind.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetd/store/store.h"
#include "fleetd/store/verdict_log.h"

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct fx {
	char *dir;
	char path[512];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->dir = make_temp_dir("vlog");
	snprintf(f->path, sizeof(f->path), "%s/verdicts.jsonl", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static struct fleet_vlog *open_log(struct fx *f, uint64_t max_bytes, unsigned max_files)
{
	struct fleet_vlog *log;
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_vlog_open(f->dir, max_bytes, max_files, &log, &sec))
		fail_msg("open: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	return log;
}

static void slurp(const char *path, struct fleet_buf *b)
{
	fb_init(b);
	read_file_or_fail(path, b);
	fb_put_u8(b, 0);
	b->len--;
}

/* Each line of a file parsed; fails on a line that is not one JSON object. */
static size_t lines(const char *path, json_t **out, size_t cap)
{
	struct fleet_buf b;
	slurp(path, &b);
	size_t n = 0;
	char *p = (char *)b.data;
	assert_true(b.len == 0 || p[b.len - 1] == '\n');
	while (*p) {
		char *nl = strchr(p, '\n');
		assert_non_null(nl);
		json_error_t je;
		json_t *o = json_loadb(p, (size_t)(nl - p), 0, &je);
		if (!json_is_object(o))
			fail_msg("line %zu of %s is not a JSON object: %s", n + 1, path, je.text);
		if (n < cap)
			out[n] = o;
		else
			json_decref(o);
		n++;
		p = nl + 1;
	}
	fb_free(&b);
	return n;
}

static void test_line_format(void **state)
{
	struct fx *f = *state;
	struct fleet_vlog *log = open_log(f, 1 << 20, 3);
	const char *reasons[] = {"pcr7-authority", "pcr4-app"};
	struct fleet_vlog_record r = {.time = 1764484200, .device = "w1", .serial = "SER-1",
				      .session = "0a1b", .pass = false, .reasons = reasons,
				      .n_reasons = 2, .ek_hash = HA, .ek_hash_ecc = ""};
	assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	struct fleet_vlog_record p = {.time = 0, .serial = "SER-2", .session = "ff", .pass = true};
	assert_int_equal(fleet_vlog_append(log, &p, NULL), FLEET_OK);
	fleet_vlog_close(log);
	struct fleet_buf b;
	slurp(f->path, &b);
	const char *want =
		"{\"time\":\"2025-11-30T06:30:00Z\",\"device\":\"w1\",\"serial\":\"SER-1\","
		"\"session\":\"0a1b\",\"result\":\"fail\",\"reasons\":[\"pcr7-authority\","
		"\"pcr4-app\"],\"ek_hash\":\"" HA "\",\"ek_hash_ecc\":null}\n"
		"{\"time\":\"1970-01-01T00:00:00Z\",\"device\":null,\"serial\":\"SER-2\","
		"\"session\":\"ff\",\"result\":\"pass\",\"reasons\":[],\"ek_hash\":null,"
		"\"ek_hash_ecc\":null}\n";
	assert_string_equal((char *)b.data, want);
	fb_free(&b);
	struct stat sb;
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
}

static void test_escaping_and_caps(void **state)
{
	struct fx *f = *state;
	struct fleet_vlog *log = open_log(f, 1 << 20, 3);
	char longs[600];
	memset(longs, 'S', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = '\0';
	const char *many[40];
	for (int i = 0; i < 40; i++)
		many[i] = "r";
	struct fleet_vlog_record r = {
		.time = 1, .device = "evil\n{\"result\":\"pass\"}\x1b[2J\r", .serial = longs,
		.session = "\xff\xfe" "ab", .pass = false, .reasons = many, .n_reasons = 40};
	assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	fleet_vlog_close(log);
	struct fleet_buf b;
	slurp(f->path, &b);
	/* One line; no raw control byte and nothing outside ASCII in it. */
	for (size_t i = 0; i + 1 < b.len; i++)
		assert_true(b.data[i] >= 0x20 && b.data[i] < 0x7f);
	assert_int_equal(b.data[b.len - 1], '\n');
	assert_non_null(strstr((char *)b.data, "\\n{\\\"result\\\":\\\"pass\\\"}\\u001B[2J\\r"));
	fb_free(&b);
	json_t *o[1];
	assert_int_equal(lines(f->path, o, 1), 1);
	assert_string_equal(json_string_value(json_object_get(o[0], "device")),
			    "evil\n{\"result\":\"pass\"}\x1b[2J\r");
	const char *serial = json_string_value(json_object_get(o[0], "serial"));
	assert_int_equal(strlen(serial), FLEET_VLOG_STR_MAX);
	assert_string_equal(serial + FLEET_VLOG_STR_MAX - 3, "...");
	assert_string_equal(json_string_value(json_object_get(o[0], "session")), "??ab");
	json_t *rs = json_object_get(o[0], "reasons");
	assert_int_equal(json_array_size(rs), FLEET_VLOG_MAX_REASONS);
	assert_string_equal(json_string_value(json_array_get(rs, FLEET_VLOG_MAX_REASONS - 1)),
			    "+9 more");
	json_decref(o[0]);
}

static void test_rotation_bounded(void **state)
{
	struct fx *f = *state;
	struct fleet_vlog *log = open_log(f, 4096, 3);
	for (int i = 0; i < 300; i++) {
		char serial[32];
		snprintf(serial, sizeof(serial), "S%d", i);
		struct fleet_vlog_record r = {.time = i, .serial = serial, .session = "00",
					      .pass = true, .ek_hash = HA};
		assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	}
	fleet_vlog_close(log);
	/* Oldest to newest: .3 .2 .1 and the current file, each under the
	 * cap, the lines consecutive, the newest last; no .4. */
	const char *suffix[] = {".3", ".2", ".1", ""};
	int expect = -1;
	for (int k = 0; k < 4; k++) {
		char p[600];
		struct stat sb;
		snprintf(p, sizeof(p), "%s%s", f->path, suffix[k]);
		assert_int_equal(stat(p, &sb), 0);
		assert_true(sb.st_size <= 4096);
		json_t *o[64];
		size_t n = lines(p, o, 64);
		assert_true(n > 0 && n <= 64);
		for (size_t i = 0; i < n; i++) {
			int s = atoi(json_string_value(json_object_get(o[i], "serial")) + 1);
			if (expect >= 0)
				assert_int_equal(s, expect);
			expect = s + 1;
			json_decref(o[i]);
		}
	}
	assert_int_equal(expect, 300);
	char p4[600];
	snprintf(p4, sizeof(p4), "%s.4", f->path);
	assert_int_not_equal(access(p4, F_OK), 0);
}

static void test_unfinished_line_cut(void **state)
{
	struct fx *f = *state;
	FILE *fp = fopen(f->path, "w");
	fputs("{\"time\":\"x\"}\n{\"time\":\"half", fp);
	fclose(fp);
	struct fleet_vlog *log = open_log(f, 1 << 20, 3);
	struct fleet_vlog_record r = {.time = 5, .serial = "S", .session = "00", .pass = true};
	assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	fleet_vlog_close(log);
	json_t *o[4];
	assert_int_equal(lines(f->path, o, 4), 2);
	assert_string_equal(json_string_value(json_object_get(o[1], "serial")), "S");
	json_decref(o[0]);
	json_decref(o[1]);
}

static void test_failed_write_reported_and_undone(void **state)
{
	struct fx *f = *state;
	struct fleet_vlog *log = open_log(f, 1 << 20, 3);
	struct fleet_vlog_record r = {.time = 5, .serial = "S", .session = "00", .pass = true};
	assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	struct stat before;
	assert_int_equal(stat(f->path, &before), 0);
	/* Let the next write get 10 bytes in and then fail (EFBIG). */
	struct rlimit saved, lim;
	getrlimit(RLIMIT_FSIZE, &saved);
	lim = saved;
	lim.rlim_cur = (rlim_t)before.st_size + 10;
	void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	struct fleet_errctx sec = {0};
	fleet_err e = fleet_vlog_append(log, &r, &sec);
	setrlimit(RLIMIT_FSIZE, &saved);
	signal(SIGXFSZ, old);
	assert_int_equal(e, FLEET_E_IO);
	assert_non_null(strstr(sec.detail, "cannot write"));
	/* the system's reason recorded beside the sentence, not in it */
	assert_int_equal(sec.sys_errno, EFBIG);
	char err[sizeof(sec.detail) + 80];
	assert_non_null(strstr(fleet_errctx_text(&sec, err, sizeof(err)), strerror(EFBIG)));
	struct stat after;
	assert_int_equal(stat(f->path, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	/* And the log goes on. */
	assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	fleet_vlog_close(log);
	json_t *o[4];
	assert_int_equal(lines(f->path, o, 4), 2);
	json_decref(o[0]);
	json_decref(o[1]);
}

static void test_open_refusals(void **state)
{
	struct fx *f = *state;
	struct fleet_vlog *log;
	assert_int_equal(fleet_vlog_open(f->dir, 100, 3, &log, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_vlog_open(f->dir, 1 << 20, 0, &log, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_vlog_open("rel", 1 << 20, 3, &log, NULL), FLEET_E_INVALID_ARG);
	/* A symbolic link where the log belongs is not followed. */
	assert_int_equal(symlink("/etc/passwd", f->path), 0);
	struct fleet_errctx sec = {0};
	assert_int_equal(fleet_vlog_open(f->dir, 1 << 20, 3, &log, &sec), FLEET_E_IO);
	assert_null(log);
	assert_int_equal(sec.sys_errno, ELOOP); /* O_NOFOLLOW */
}

/* The newest line's id, across a rotation, and an old line without one. */
static void test_last_id(void **state)
{
	struct fx *f = *state;
	struct fleet_vlog *log = open_log(f, FLEET_VLOG_MIN_BYTES, 3);
	int64_t id = -1;
	bool found = true;
	assert_int_equal(fleet_vlog_last_id(log, &id, &found, NULL), FLEET_OK);
	assert_false(found);
	assert_int_equal(id, 0);
	struct fleet_vlog_record r = {.serial = "SER-1", .session = "ab", .pass = true};
	for (int64_t i = 1; i <= 40; i++) { /* ~170 bytes a line: rotates */
		r.id = i;
		assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	}
	assert_int_equal(fleet_vlog_last_id(log, &id, &found, NULL), FLEET_OK);
	assert_true(found);
	assert_int_equal(id, 40);
	r.id = 0; /* a line from before ids */
	assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	assert_int_equal(fleet_vlog_last_id(log, &id, &found, NULL), FLEET_OK);
	assert_true(found);
	assert_int_equal(id, 0);
	fleet_vlog_close(log);
}

/* A crash between the store's commit and the append: the start appends
 * exactly the missing verdicts, in order, once. */
static void test_reconcile(void **state)
{
	struct fx *f = *state;
	char sdir[600];
	struct fleet_errctx sec = {0};
	struct fleet_store *st;
	snprintf(sdir, sizeof(sdir), "%s/state", f->dir);
	assert_int_equal(fleet_store_open(sdir, FLEET_STORE_RW, &st, &sec), 0);
	struct fleet_vlog *log;
	assert_int_equal(fleet_vlog_open(sdir, 1 << 20, 3, &log, &sec), FLEET_OK);
	const char *why[] = {"pcr4-app"};
	struct fleet_store_verdict_in v = {.time = 1764484200, .device = "w1", .serial = "SER-1",
					   .session = "0a1b", .pass = false, .reasons = why,
					   .n_reasons = 1};
	int64_t ids[5];
	for (int i = 0; i < 5; i++)
		assert_int_equal(fleet_store_verdict_insert(st, &v, &ids[i]), 0);
	/* only the first two made it to the file */
	for (int i = 0; i < 2; i++) {
		struct fleet_vlog_record r = {.id = ids[i], .time = v.time, .device = "w1",
					      .serial = "SER-1", .session = "0a1b",
					      .reasons = why, .n_reasons = 1};
		assert_int_equal(fleet_vlog_append(log, &r, NULL), FLEET_OK);
	}
	size_t appended = 0;
	bool ahead = true;
	assert_int_equal(fleet_vlog_reconcile(log, st, &appended, &ahead, &sec),
			 FLEET_OK);
	assert_int_equal(appended, 3);
	assert_false(ahead);
	assert_int_equal(fleet_vlog_reconcile(log, st, &appended, &ahead, &sec),
			 FLEET_OK);
	assert_int_equal(appended, 0);
	fleet_vlog_close(log);
	char path[700];
	json_t *o[8];
	snprintf(path, sizeof(path), "%s/verdicts.jsonl", sdir);
	assert_int_equal(lines(path, o, 8), 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(json_integer_value(json_object_get(o[i], "id")), ids[i]);
		assert_string_equal(json_string_value(json_array_get(json_object_get(o[i], "reasons"),
								     0)),
				    "pcr4-app");
		json_decref(o[i]);
	}
	fleet_store_close(st);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_line_format),        T(test_escaping_and_caps),
		T(test_rotation_bounded),   T(test_unfinished_line_cut),
		T(test_failed_write_reported_and_undone), T(test_open_refusals),
		T(test_last_id),            T(test_reconcile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
