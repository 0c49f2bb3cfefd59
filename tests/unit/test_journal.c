/*
 * test_journal.c: the claimed-value sanitiser and the structured log
 * (fleetd/obs/sanitize.c, journal.c).
 *
 * The sanitiser: caps at 64 characters with a "[+N]" mark, escapes control
 * characters, DEL, C1, invalid UTF-8 and display-reordering characters as
 * \xNN, never splits an escape or a character when the buffer is small.
 *
 * The log: with log_target=stderr each entry is exactly one line carrying
 * the event, the FLEET_* fields and the message, with nothing a value holds
 * able to start a new line. When journald runs here the journal path is read
 * back with journalctl; when it does not (the usual case in a container),
 * the test checks that log_target=journal falls back to stderr, and says
 * which of the two it did.
 */
#include "tests/testutil.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fleetd/obs/journal.h"

static void claimed_is(const char *in, const char *want)
{
	char out[FLEET_LOG_CLAIMED_BUF];
	const char *r = fleet_log_claimed(in, out, sizeof(out));
	assert_ptr_equal(r, out);
	assert_string_equal(out, want);
}

static void test_plain_and_empty(void **state)
{
	claimed_is("SN-0001", "SN-0001");
	claimed_is("", "");
	claimed_is(NULL, "(null)");
	claimed_is("Dell Inc. 2.19.1 (x86_64)", "Dell Inc. 2.19.1 (x86_64)");
	claimed_is("back\\slash", "back\\\\slash"); /* so "\x41" typed by a client
						       cannot pass as our escape */
}

static void test_caps(void **state)
{
	char in[1001], want[200];
	memset(in, 'A', 64);
	in[64] = '\0';
	claimed_is(in, in); /* exactly at the cap: untouched, no mark */

	memset(in, 'A', 65);
	in[65] = '\0';
	memset(want, 'A', 64);
	strcpy(want + 64, "[+1]");
	claimed_is(in, want);

	memset(in, 'B', 1000);
	in[1000] = '\0';
	memset(want, 'B', 64);
	strcpy(want + 64, "[+936]");
	claimed_is(in, want);

	/* 65 two-byte characters: 64 shown, 2 bytes left. */
	char utf[200] = "";
	for (int i = 0; i < 65; i++)
		strcat(utf, "\xc3\xa9");
	char out[FLEET_LOG_CLAIMED_BUF];
	fleet_log_claimed(utf, out, sizeof(out));
	assert_int_equal(strlen(out), 128 + 4);
	assert_memory_equal(out, utf, 128);
	assert_string_equal(out + 128, "[+2]");

	/* An escaped byte is one character: 65 newlines show 64 escapes. */
	char nl[66];
	memset(nl, '\n', 65);
	nl[65] = '\0';
	fleet_log_claimed(nl, out, sizeof(out));
	assert_int_equal(strlen(out), 64 * 4 + 4);
	assert_string_equal(out + 64 * 4, "[+1]");
	assert_memory_equal(out, "\\x0A\\x0A", 8);
}

static void test_control_characters(void **state)
{
	claimed_is("a\nb\tc\rd", "a\\x0Ab\\x09c\\x0Dd");
	claimed_is("\x1b[31mred\x1b[0m", "\\x1B[31mred\\x1B[0m");
	claimed_is("del\x7f", "del\\x7F");
	claimed_is("bell\a", "bell\\x07");
	/* A forged journal line: the newline is escaped, so it stays one field. */
	claimed_is("SN1\nFLEET_REASON=admitted", "SN1\\x0AFLEET_REASON=admitted");
	/* C1 control U+0085 (NEL) is valid UTF-8 and still escaped. */
	claimed_is("x\xc2\x85y", "x\\xC2\\x85y");
	/* Characters that reorder or break what a reader sees. */
	claimed_is("abc\xe2\x80\xae" "fdp.exe", "abc\\xE2\\x80\\xAEfdp.exe");
	claimed_is("l1\xe2\x80\xa8l2", "l1\\xE2\\x80\\xA8l2");
	claimed_is("\xe2\x81\xa6x", "\\xE2\\x81\\xA6x");
}

static void test_utf8(void **state)
{
	/* Valid, displayable UTF-8 passes unchanged. */
	claimed_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* Invalid UTF-8: each offending byte escaped, the rest kept. */
	claimed_is("a\x80z", "a\\x80z");                       /* stray continuation */
	claimed_is("\xc0\xaf", "\\xC0\\xAF");                  /* overlong '/' */
	claimed_is("\xe0\x80\xaf", "\\xE0\\x80\\xAF");         /* overlong, 3 bytes */
	claimed_is("\xed\xa0\x80", "\\xED\\xA0\\x80");         /* surrogate U+D800 */
	claimed_is("\xf4\x90\x80\x80", "\\xF4\\x90\\x80\\x80"); /* past U+10FFFF */
	claimed_is("\xf5\x80", "\\xF5\\x80");
	claimed_is("\xff\xfe", "\\xFF\\xFE");
	claimed_is("end\xe2\x82", "end\\xE2\\x82");            /* truncated at the end */
	claimed_is("\xe2\x82" "A", "\\xE2\\x82A");             /* truncated in the middle */
	claimed_is("\xc3\xa9\xc3", "\xc3\xa9\\xC3");

	/* Bytes with NULs in them (the _n form). */
	char out[FLEET_LOG_CLAIMED_BUF];
	fleet_log_claimed_n("a\0b", 3, out, sizeof(out));
	assert_string_equal(out, "a\\x00b");
}

static void test_small_buffers(void **state)
{
	char out[16];
	/* The mark always fits; what is shown shrinks to make room. */
	fleet_log_claimed("abcdefghijklmnop", out, 10);
	assert_string_equal(out, "abcd[+12]");
	/* Never half an escape... */
	fleet_log_claimed("\n\n\n\n", out, 12);
	assert_string_equal(out, "\\x0A[+3]");
	/* ...nor half a character. */
	fleet_log_claimed("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", out, 8);
	assert_string_equal(out, "\xc3\xa9[+8]");
	/* Too small even for the mark: empty, and still terminated. */
	memset(out, 'x', sizeof(out));
	fleet_log_claimed("abcdef", out, 3);
	assert_string_equal(out, "");
	out[0] = 'x';
	fleet_log_claimed("abcdef", out, 1);
	assert_int_equal(out[0], '\0');
	/* Fits exactly: no mark. */
	fleet_log_claimed("abc", out, 4);
	assert_string_equal(out, "abc");

	/* fleet_log_escape_n escapes the same way without the 64 cap. */
	char big[300], longv[201];
	memset(longv, 'z', 200);
	longv[200] = '\0';
	fleet_log_escape_n(longv, 200, big, sizeof(big));
	assert_string_equal(big, longv);
}

/* ---- the log ------------------------------------------------------------- */

struct capture {
	int saved;
	char path[256];
};

static void capture_start(struct capture *c)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(c->path, sizeof(c->path), "%s/fleet-journal-XXXXXX", tmp ? tmp : "/tmp");
	int fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
}

/* Restore stderr; return what was written (caller frees). */
static char *capture_end(struct capture *c)
{
	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fb_read_file(&b, c->path, 1 << 20), FLEET_OK);
	fb_put_u8(&b, 0);
	unlink(c->path);
	char *s = strdup((const char *)b.data);
	fb_free(&b);
	return s;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_target_parse(void **state)
{
	enum fleet_log_target t;
	assert_int_equal(fleet_log_target_parse("journal", &t), FLEET_OK);
	assert_int_equal(t, FLEET_LOG_JOURNAL);
	assert_int_equal(fleet_log_target_parse("stderr", &t), FLEET_OK);
	assert_int_equal(t, FLEET_LOG_STDERR);
	assert_int_equal(fleet_log_target_parse("syslog", &t), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_log_target_parse("", &t), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_log_target_parse(NULL, &t), FLEET_E_INVALID_ARG);
}

static void test_stderr_line(void **state)
{
	fleet_log_set_target(FLEET_LOG_STDERR);
	fleet_log_set_max_priority(LOG_INFO);
	char serial[FLEET_LOG_CLAIMED_BUF];
	struct capture c;
	capture_start(&c);
	fleet_log(LOG_WARNING, "intake-refused",
		  FLEET_LOG_FIELDS({"FLEET_SERIAL", fleet_log_claimed("SN 1\nx", serial,
								      sizeof(serial))},
				   {"FLEET_REASON", "ek-mismatch"},
				   {"FLEET_DEVICE", NULL},
				   /* a value that was not sanitised: the logger still
				    * keeps it on one line */
				   {"FLEET_SESSION", "raw\nFLEET_REASON=admitted"}),
		  "refused intake from %s", "10.0.0.9");
	char *out = capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " fleetd["));
	assert_non_null(strstr(out, " warning event=intake-refused "));
	assert_non_null(strstr(out, " FLEET_SERIAL=\"SN 1\\\\x0Ax\""));
	assert_non_null(strstr(out, " FLEET_REASON=ek-mismatch "));
	assert_non_null(strstr(out, " FLEET_SESSION=\"raw\\\\x0AFLEET_REASON=admitted\""));
	assert_null(strstr(out, "FLEET_DEVICE"));
	assert_non_null(strstr(out, " msg=\"refused intake from 10.0.0.9\"\n"));
	free(out);
}

static void test_bad_names_and_priority(void **state)
{
	fleet_log_set_target(FLEET_LOG_STDERR);
	struct capture c;
	capture_start(&c);
	fleet_log(LOG_ERR, "Bad Event", FLEET_LOG_FIELDS({"serial", "x"}, {"FLEET_ok", "y"},
							 {"FLEET_GOOD", "z"}),
		  "m");
	fleet_log_set_max_priority(LOG_WARNING);
	fleet_log(LOG_INFO, "too-chatty", NULL, 0, "dropped");
	fleet_log_set_max_priority(LOG_INFO);
	char *out = capture_end(&c);
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, " err event=invalid-event-name "));
	assert_non_null(strstr(out, " FLEET_GOOD=z "));
	assert_null(strstr(out, "serial="));
	assert_null(strstr(out, "FLEET_ok"));
	assert_non_null(strstr(out, "2 field(s) dropped"));
	assert_null(strstr(out, "too-chatty"));
	free(out);
}

static void test_journal_target(void **state)
{
	struct stat st;
	bool journald = stat("/run/systemd/journal/socket", &st) == 0;
	char id[32];
	snprintf(id, sizeof(id), "test-%ld-%ld", (long)getpid(), (long)time(NULL));
	fleet_log_set_target(FLEET_LOG_JOURNAL);
	struct capture c;
	capture_start(&c);
	fleet_log(LOG_NOTICE, "journal-probe", FLEET_LOG_FIELDS({"FLEET_SESSION", id}),
		  "journal probe");
	fleet_log(LOG_NOTICE, "journal-probe", FLEET_LOG_FIELDS({"FLEET_SESSION", id}),
		  "journal probe");
	char *out = capture_end(&c);
	fleet_log_set_target(FLEET_LOG_STDERR);

	if (!journald) {
		printf("journald does not run here: checked the stderr fallback of "
		       "log_target=journal, not a journal read-back\n");
		/* One notice, then each entry as its stderr line. */
		assert_int_equal(count_lines(out), 3);
		assert_non_null(strstr(out, "journald did not take an entry"));
		assert_non_null(strstr(out, " notice event=journal-probe "));
		free(out);
		return;
	}
	free(out);
	printf("journald runs here: reading the entry back with journalctl\n");
	char cmd[200];
	snprintf(cmd, sizeof(cmd),
		 "journalctl --no-pager -o verbose FLEET_SESSION=%s 2>/dev/null", id);
	struct fleet_buf b;
	for (int tries = 0; tries < 50; tries++) {
		fb_init(&b);
		run_capture(cmd, &b);
		if (b.len && strstr((const char *)b.data, "FLEET_EVENT=journal-probe"))
			break;
		fb_free(&b);
		usleep(100000);
	}
	assert_non_null(b.data);
	assert_non_null(strstr((const char *)b.data, "SYSLOG_IDENTIFIER=fleetd"));
	assert_non_null(strstr((const char *)b.data, "PRIORITY=5"));
	fb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_and_empty),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_small_buffers),
		cmocka_unit_test(test_target_parse),
		cmocka_unit_test(test_stderr_line),
		cmocka_unit_test(test_bad_names_and_priority),
		cmocka_unit_test(test_journal_target),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
