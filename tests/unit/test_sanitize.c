/*
 * test_sanitize.c: libfleet's one sanitiser and its printable-ASCII check
 * (lib/sanitize.h).
 *
 * fleet_sanitize: each rule by itself (control bytes, DEL, C1, invalid
 * UTF-8, overlong forms, surrogates, past U+10FFFF, format characters such
 * as U+202E, the backslash), each next to a neighbour that must pass; the
 * character cap and the "[+N]" mark; every cap from 1 up with a guard after
 * out, so a write past cap or a missing NUL fails; the output of random
 * bytes holds no control byte and passes the sanitiser again unchanged.
 * The Cf table itself is compared over all of Unicode by test_journal.
 *
 * fleet_ascii_printable: the range 0x21..0x7E, what each flag adds and
 * nothing more.
 */
#include "tests/testutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sanitize.h"

#define BIG 1024

/* fleet_sanitize of len bytes, at most max characters, into a large out. */
static void is_max(const char *in, size_t len, size_t max, const char *want)
{
	char out[BIG];
	const char *r = fleet_sanitize(in, len, out, sizeof(out), max);
	assert_ptr_equal(r, out);
	assert_string_equal(out, want);
}

static void is_n(const char *in, size_t len, const char *want)
{
	is_max(in, len, SIZE_MAX, want);
}

static void is(const char *in, const char *want)
{
	is_n(in, strlen(in), want);
}

static void test_plain_passes(void **state)
{
	(void)state;
	is("SN-0001", "SN-0001");
	is("", "");
	is(" !~", " !~"); /* the ends of printable ASCII, space included */
	is_n(NULL, 0, "");
	/* The whole of printable ASCII but the backslash, unchanged. */
	char all[96], *p = all;
	for (int c = 0x20; c < 0x7f; c++)
		if (c != '\\')
			*p++ = (char)c;
	*p = '\0';
	is(all, all);
}

static void test_control_bytes_and_del(void **state)
{
	(void)state;
	is_n("a\0b", 3, "a\\x00b");
	is("\x01", "\\x01");
	is("a\nb\tc\rd", "a\\x0Ab\\x09c\\x0Dd");
	is("\x1b[31m", "\\x1B[31m");
	is("\x1f", "\\x1F");
	is("del\x7f", "del\\x7F");
	/* A forged line stays on its line. */
	is("SN1\nFLEET_REASON=admitted", "SN1\\x0AFLEET_REASON=admitted");
}

static void test_backslash(void **state)
{
	(void)state;
	/* Doubled, so "\x41" in the input cannot pass for an escape... */
	is("a\\x41", "a\\\\x41");
	/* ...and left alone by the variant for text already sanitised. */
	char out[64];
	fleet_sanitize_keep_backslash("a\\x41\n", 6, out, sizeof(out), SIZE_MAX);
	assert_string_equal(out, "a\\x41\\x0A");
}

static void test_c1_controls(void **state)
{
	(void)state;
	is("x\xc2\x80y", "x\\xC2\\x80y");  /* U+0080 */
	is("x\xc2\x85y", "x\\xC2\\x85y");  /* U+0085 NEL */
	is("x\xc2\x9fy", "x\\xC2\\x9Fy");  /* U+009F */
	is("x\xc2\xa0y", "x\xc2\xa0y");    /* U+00A0, the first after C1, passes */
}

static void test_valid_utf8_passes(void **state)
{
	(void)state;
	is("caf\xc3\xa9", "caf\xc3\xa9");                         /* 2 bytes */
	is("\xe2\x82\xac 5", "\xe2\x82\xac 5");                   /* 3 bytes */
	is("\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac"); /* CJK */
	is("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");               /* 4 bytes, U+1F600 */
	is("\xf4\x8f\xbf\xbd", "\xf4\x8f\xbf\xbd");               /* U+10FFFD */
	is("\xed\x9f\xbf", "\xed\x9f\xbf");                       /* U+D7FF, below the surrogates */
	is("\xee\x80\x80", "\xee\x80\x80");                       /* U+E000, above them */
}

static void test_invalid_utf8(void **state)
{
	(void)state;
	is("a\x80z", "a\\x80z");                       /* stray continuation */
	is("a\xbfz", "a\\xBFz");
	is_n("\xc3\xa9", 1, "\\xC3");                  /* truncated at len, whatever follows */
	is("\xe2\x82" "A", "\\xE2\\x82A");             /* truncated in the middle */
	is("\xf0\x9f\x98", "\\xF0\\x9F\\x98");
	is("\xc3\x41", "\\xC3A");                      /* lead byte, then no continuation */
	is("\xf4\x90\x80\x80", "\\xF4\\x90\\x80\\x80"); /* U+110000, past Unicode */
	is("\xf5\x80\x80\x80", "\\xF5\\x80\\x80\\x80"); /* lead bytes that cannot start one */
	is("\xff\xfe", "\\xFF\\xFE");
}

static void test_overlong_forms(void **state)
{
	(void)state;
	is("\xc0\xaf", "\\xC0\\xAF");                  /* '/' in 2 bytes */
	is("\xc1\xbf", "\\xC1\\xBF");                  /* U+007F in 2 bytes */
	is("\xe0\x80\xaf", "\\xE0\\x80\\xAF");         /* '/' in 3 bytes */
	is("\xe0\x9f\xbf", "\\xE0\\x9F\\xBF");         /* U+07FF in 3 bytes */
	is("\xf0\x80\x80\xaf", "\\xF0\\x80\\x80\\xAF"); /* '/' in 4 bytes */
	is("\xf0\x8f\xbf\xbf", "\\xF0\\x8F\\xBF\\xBF"); /* U+FFFF in 4 bytes */
	/* The shortest forms of the same values pass. */
	is("\xdf\xbf", "\xdf\xbf");                    /* U+07FF */
	is("\xef\xbf\xbd", "\xef\xbf\xbd");            /* U+FFFD */
}

static void test_surrogates(void **state)
{
	(void)state;
	is("\xed\xa0\x80", "\\xED\\xA0\\x80"); /* U+D800 */
	is("\xed\xbf\xbf", "\\xED\\xBF\\xBF"); /* U+DFFF */
	/* A CESU-8 pair for U+1F600: both halves escaped. */
	is("\xed\xa0\xbd\xed\xb8\x80", "\\xED\\xA0\\xBD\\xED\\xB8\\x80");
}

static void test_hidden_characters(void **state)
{
	(void)state;
	/* U+202E RIGHT-TO-LEFT OVERRIDE: "abc<RLO>exe.pdf" reads "abcfdp.exe". */
	is("abc\xe2\x80\xae" "exe.pdf", "abc\\xE2\\x80\\xAEexe.pdf");
	is("l1\xe2\x80\xa8l2", "l1\\xE2\\x80\\xA8l2");        /* U+2028 LINE SEPARATOR */
	is("a\xe2\x80\x8b" "b", "a\\xE2\\x80\\x8Bb");         /* U+200B ZWSP */
	is("\xef\xbb\xbf" "SN1", "\\xEF\\xBB\\xBFSN1");       /* U+FEFF */
	is("S\xc2\xad" "N1", "S\\xC2\\xADN1");                /* U+00AD SHY */
	is("\xf3\xa0\x80\x81", "\\xF3\\xA0\\x80\\x81");       /* U+E0001 tag */
	/* Their neighbours are ordinary characters. */
	is("\xe2\x80\xaf", "\xe2\x80\xaf"); /* U+202F */
	is("\xe2\x80\x90", "\xe2\x80\x90"); /* U+2010 HYPHEN */
	is("\xc2\xac", "\xc2\xac");         /* U+00AC */
}

static void test_character_cap(void **state)
{
	(void)state;
	is_max("abcd", 4, 4, "abcd");       /* at the cap: whole, no mark */
	is_max("abcdef", 6, 4, "abcd[+2]"); /* past it: max_chars, then the bytes left */
	/* An escaped byte is one character, and N counts input bytes. */
	is_max("\n\n\n\n\n", 5, 2, "\\x0A\\x0A[+3]");
	/* A multi-byte character is one character. */
	is_max("\xc3\xa9\xc3\xa9\xc3\xa9", 6, 2, "\xc3\xa9\xc3\xa9[+2]");
	/* A cap of 0 shows only the mark. */
	is_max("ab", 2, 0, "[+2]");
	is_max("", 0, 0, "");
}

static void test_small_out(void **state)
{
	(void)state;
	char out[32];
	/* The mark always fits; what is shown shrinks to make room. */
	fleet_sanitize("abcdefghijklmnop", 16, out, 10, SIZE_MAX);
	assert_string_equal(out, "abcd[+12]");
	/* Never half an escape... */
	fleet_sanitize("\n\n\n\n", 4, out, 12, SIZE_MAX);
	assert_string_equal(out, "\\x0A[+3]");
	/* ...nor half a character. */
	fleet_sanitize("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 10, out, 8, SIZE_MAX);
	assert_string_equal(out, "\xc3\xa9[+8]");
	/* Fits exactly (cap - 1 bytes): no mark. */
	fleet_sanitize("abc", 3, out, 4, SIZE_MAX);
	assert_string_equal(out, "abc");
	/* Not even the mark fits: empty, and terminated. */
	memset(out, 'x', sizeof(out));
	fleet_sanitize("abcdef", 6, out, 3, SIZE_MAX);
	assert_string_equal(out, "");
	/* cap 0 and a NULL out are left alone. */
	out[0] = 'x';
	assert_ptr_equal(fleet_sanitize("a", 1, out, 0, SIZE_MAX), out);
	assert_int_equal(out[0], 'x');
	assert_null(fleet_sanitize("a", 1, NULL, 10, SIZE_MAX));
}

/* What one input character becomes and how many input bytes it is. */
struct unit {
	const char *out;
	size_t in_bytes;
};

/* Each cap from 1 to past the whole output: nothing written at or after
 * out[cap], out terminated within cap, and out either the whole or the
 * first k units exactly (never half an escape or half a character)
 * followed by "[+N]", N the input bytes of the rest; "" when not even the
 * mark fits. */
static void check_every_cap(const char *in, size_t len, const struct unit *u, size_t n)
{
	char whole[BIG] = "";
	for (size_t i = 0; i < n; i++)
		strcat(whole, u[i].out);
	size_t wl = strlen(whole);
	for (size_t cap = 1; cap <= wl + 8; cap++) {
		char buf[BIG + 64];
		memset(buf, 0x5a, sizeof(buf));
		fleet_sanitize(in, len, buf, cap, SIZE_MAX);
		for (size_t i = cap; i < sizeof(buf); i++)
			if ((unsigned char)buf[i] != 0x5a)
				fail_msg("cap %zu: byte %zu written", cap, i);
		size_t ol = strnlen(buf, cap);
		if (ol == cap)
			fail_msg("cap %zu: not terminated", cap);
		if (cap > wl) {
			assert_string_equal(buf, whole);
			continue;
		}
		if (ol == 0)
			continue;
		char want[BIG + 64] = "";
		size_t k = 0, consumed = 0;
		while (k < n && strncmp(buf + strlen(want), u[k].out, strlen(u[k].out)) == 0 &&
		       buf[strlen(want)] != '[') {
			strcat(want, u[k].out);
			consumed += u[k++].in_bytes;
		}
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "[+%zu]", len - consumed);
		if (strcmp(buf, want) != 0)
			fail_msg("cap %zu: \"%s\", want \"%s\"", cap, buf, want);
	}
}

static void test_out_never_overrun(void **state)
{
	(void)state;
	static const struct unit plain[] = {{"h", 1}, {"e", 1}, {"l", 1}, {"l", 1}, {"o", 1}};
	check_every_cap("hello", 5, plain, 5);
	static const struct unit mixed[] = {
		{"a", 1}, {"\\x0A", 1}, {"b", 1}, {"\\x7F", 1}, {"\xc3\xa9", 2},
		{"\xf0\x9f\x98\x80", 4}, {"\\xE2", 1}, {"\\x80", 1}, {"\\xAE", 1},
		{"\\\\", 1}, {"z", 1},
	};
	check_every_cap("a\nb\x7f\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xae\\z", 15, mixed, 11);
	char in[200];
	struct unit esc[200];
	memset(in, '\x01', sizeof(in));
	for (size_t i = 0; i < 200; i++)
		esc[i] = (struct unit){"\\x01", 1};
	check_every_cap(in, sizeof(in), esc, 200);
}

static void test_buf_macro_suffices(void **state)
{
	(void)state;
	/* An out of FLEET_SANITIZE_BUF(8) shows 8 characters of the widest
	 * kind (an escape, a 4-byte character) and the mark. */
	enum { MAX = 8 };
	char out[FLEET_SANITIZE_BUF(MAX)];
	char esc[100], utf[100];
	memset(esc, '\n', sizeof(esc));
	for (size_t i = 0; i < sizeof(utf); i += 4)
		memcpy(utf + i, "\xf0\x9f\x98\x80", 4);
	fleet_sanitize(esc, sizeof(esc), out, sizeof(out), MAX);
	assert_int_equal(strlen(out), 4 * MAX + strlen("[+92]"));
	assert_string_equal(out + 4 * MAX, "[+92]");
	fleet_sanitize(utf, sizeof(utf), out, sizeof(out), MAX);
	assert_int_equal(strlen(out), 4 * MAX + strlen("[+68]"));
	assert_string_equal(out + 4 * MAX, "[+68]");
	/* The longest mark is what the macro allows for. */
	char mark[32];
	assert_int_equal(snprintf(mark, sizeof(mark), "[+%zu]", (size_t)SIZE_MAX),
			 FLEET_SANITIZE_MARK_MAX);
}

/* Random bytes: no control byte comes out, and the output is a fixed point
 * of the sanitiser (so it is valid, displayable UTF-8: anything else would
 * be escaped the second time). */
static void test_random_input(void **state)
{
	(void)state;
	unsigned seed = 12345;
	char in[64], out[FLEET_SANITIZE_BUF(64)], again[FLEET_SANITIZE_BUF(FLEET_SANITIZE_BUF(64))];
	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)(rand_r(&seed) % (int)sizeof(in));
		for (size_t i = 0; i < len; i++) {
			int r = rand_r(&seed);
			/* Bias to bytes that start or continue UTF-8. */
			in[i] = (char)(r & 1 ? 0x80 | (r >> 1 & 0x7f) : r >> 1 & 0xff);
		}
		fleet_sanitize(in, len, out, sizeof(out), SIZE_MAX);
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				fail_msg("round %d: control byte 0x%02x came out", round, *p);
		fleet_sanitize_keep_backslash(out, strlen(out), again, sizeof(again), SIZE_MAX);
		assert_string_equal(again, out);
	}
}

/* ---- fleet_ascii_printable ------------------------------------------------ */

static bool byte_ok(unsigned c, unsigned flags)
{
	unsigned char b = (unsigned char)c;
	return fleet_ascii_printable(&b, 1, flags);
}

static void test_printable_range(void **state)
{
	(void)state;
	static const unsigned all = FLEET_ASCII_SPACE | FLEET_ASCII_8BIT;
	for (unsigned c = 0; c < 256; c++) {
		bool graphic = c >= 0x21 && c <= 0x7e;
		if (byte_ok(c, 0) != graphic)
			fail_msg("0x%02x with no flags: %d", c, !graphic);
		if (byte_ok(c, FLEET_ASCII_SPACE) != (graphic || c == 0x20))
			fail_msg("0x%02x with SPACE", c);
		if (byte_ok(c, FLEET_ASCII_8BIT) != (graphic || c >= 0x80))
			fail_msg("0x%02x with 8BIT", c);
		if (byte_ok(c, all) != (graphic || c == 0x20 || c >= 0x80))
			fail_msg("0x%02x with both", c);
	}
}

static void test_printable_cases(void **state)
{
	(void)state;
	assert_true(fleet_ascii_printable("SN-0001", 7, 0));
	assert_true(fleet_ascii_printable(NULL, 0, 0)); /* empty: the caller's rule */
	/* Space only with the flag; tab, newline and DEL never. */
	assert_false(fleet_ascii_printable("U23 Ver. 02", 11, 0));
	assert_true(fleet_ascii_printable("U23 Ver. 02", 11, FLEET_ASCII_SPACE));
	assert_false(fleet_ascii_printable("a\tb", 3, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT));
	assert_false(fleet_ascii_printable("a\nb", 3, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT));
	assert_false(fleet_ascii_printable("a\x7f", 2, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT));
	/* A NUL inside the length is a byte like any other. */
	assert_false(fleet_ascii_printable("ab\0c", 4, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT));
	/* Non-ASCII only with 8BIT, and then unjudged (not even UTF-8). */
	assert_false(fleet_ascii_printable("caf\xc3\xa9", 5, FLEET_ASCII_SPACE));
	assert_true(fleet_ascii_printable("caf\xc3\xa9", 5, FLEET_ASCII_8BIT));
	assert_true(fleet_ascii_printable("\xff\xc0", 2, FLEET_ASCII_8BIT));
	/* Every byte is looked at, the last too, and no further than len. */
	assert_false(fleet_ascii_printable("abcdefg\x01", 8, 0));
	assert_true(fleet_ascii_printable("abc\x01", 3, 0));
}

/* Kubernetes object names (DNS-1123 labels): what fleetd puts in a
 * Workflow's name and in API paths. */
static void test_dns_label(void **state)
{
	(void)state;
	static const char *const good[] = {"a", "worker-a", "w1", "0", "a-b-c",
					   "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"};
	static const char *const bad[] = {"", "-a", "a-", "Worker", "a_b", "a.b", "a/b", "a?b",
					  "a b", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(fleet_dns_label(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (fleet_dns_label(bad[i]))
			fail_msg("accepted \"%s\"", bad[i]);
	assert_false(fleet_dns_label(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dns_label),
		cmocka_unit_test(test_plain_passes),
		cmocka_unit_test(test_control_bytes_and_del),
		cmocka_unit_test(test_backslash),
		cmocka_unit_test(test_c1_controls),
		cmocka_unit_test(test_valid_utf8_passes),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_overlong_forms),
		cmocka_unit_test(test_surrogates),
		cmocka_unit_test(test_hidden_characters),
		cmocka_unit_test(test_character_cap),
		cmocka_unit_test(test_small_out),
		cmocka_unit_test(test_out_never_overrun),
		cmocka_unit_test(test_buf_macro_suffices),
		cmocka_unit_test(test_random_input),
		cmocka_unit_test(test_printable_range),
		cmocka_unit_test(test_printable_cases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
