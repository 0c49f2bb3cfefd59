/*
 * test_json_view.c: the NetBox answer reader (fleetd/inventory/json_view.h).
 *
 * J1: every refusal jansson makes, one input each (duplicate keys, also
 * through an escape; lone and misordered surrogates; \u0000; control bytes;
 * each kind of bad UTF-8; trailing bytes; each malformed number, literal and
 * separator; a scalar at the top), and each input is also given to
 * json_loadb(JSON_REJECT_DUPLICATES) so the table cannot drift from what it
 * claims to mirror. The nesting cap at its edge: 2048 containers pass, a
 * 2049th or a scalar inside the 2048th does not, as in jansson.
 * J2/J3: a document of every kind of value, read back token by token
 * (int64 limits, -0, an underflowing real, every escape, a surrogate pair).
 * J4: duplicates found at both sizes (pairwise up to 16 members, sorted
 * beyond), far apart, and an object of 100,000 keys, which a quadratic check
 * would not finish.
 * J2's guard: under a locale whose decimal point is a comma a real is
 * refused, never read short.
 * J5: out of memory at every allocation: JV_NOMEM and an empty view.
 */
#include "tests/testutil.h"

#include <jansson.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/inventory/json_view.h"

/* reallocarray is wrapped (tests/netbox.cmake): fail_at counts down to the
 * call that fails. */
void *__real_reallocarray(void *p, size_t n, size_t size);
static int fail_at = -1;
void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
	if (fail_at >= 0 && fail_at-- == 0)
		return NULL;
	return __real_reallocarray(p, n, size);
}

static bool jansson_accepts(const char *b, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(b, n, JSON_REJECT_DUPLICATES, &je);
	json_decref(j);
	return j != NULL;
}

/* Parse b[n], check the verdict is want and that jansson's agrees. */
static void verdict(const char *b, size_t n, bool want)
{
	struct jv_doc d;
	struct jv_error e;
	enum jv_result r = jv_parse(&d, b, n, &e);
	if ((r == JV_OK) != want || jansson_accepts(b, n) != want)
		fail_msg("%.*s: view %s (%s), jansson %s, want %s", (int)(n > 80 ? 80 : n), b,
			 r == JV_OK ? "accepts" : "refuses", e.text,
			 jansson_accepts(b, n) ? "accepts" : "refuses",
			 want ? "accept" : "refuse");
	if (r == JV_OK) {
		jv_free(&d);
	} else {
		/* J5: nothing kept, and a reason */
		assert_int_equal(r, JV_INVALID);
		assert_null(d.tok);
		assert_null(d.str);
		assert_int_equal(d.ntok, 0);
		assert_true(e.text[0] != '\0');
		assert_true(e.offset <= n);
	}
}

#define REFUSE(s) verdict(s, sizeof(s) - 1, false)
#define ACCEPT(s) verdict(s, sizeof(s) - 1, true)

static void test_refusals(void **state)
{
	(void)state;
	/* duplicate keys, also when only the decoded bytes are equal */
	REFUSE("{\"a\":1,\"a\":2}");
	REFUSE("{\"a\":1,\"\\u0061\":2}");
	REFUSE("{\"x\":{\"k\":1,\"j\":2,\"k\":3}}");
	/* surrogates and NUL */
	REFUSE("[\"\\ud800\"]");
	REFUSE("[\"\\udc00\"]");
	REFUSE("[\"\\ud800\\u0041\"]");
	REFUSE("[\"\\ud800\\ud800\"]");
	REFUSE("[\"\\udc00\\ud800\"]");
	REFUSE("[\"\\ud800\\n\"]");
	REFUSE("[\"\\u0000\"]");
	REFUSE("{\"\\u0000\":1}");
	/* escapes */
	REFUSE("[\"\\x\"]");
	REFUSE("[\"\\u12G4\"]");
	REFUSE("[\"\\u12\"]");
	REFUSE("[\"\\\"]");
	REFUSE("[\"\\'\"]");
	/* bytes inside strings */
	REFUSE("[\"a\x01\"]");
	REFUSE("[\"a\x1f\"]");
	REFUSE("[\"a\nb\"]");
	REFUSE("[\"\xc0\xaf\"]");         /* overlong '/' */
	REFUSE("[\"\xe0\x80\xaf\"]");     /* overlong, three bytes */
	REFUSE("[\"\xf0\x80\x80\xaf\"]"); /* overlong, four bytes */
	REFUSE("[\"\xed\xa0\x80\"]");     /* U+D800 encoded directly */
	REFUSE("[\"\xf4\x90\x80\x80\"]"); /* past U+10FFFF */
	REFUSE("[\"\xff\"]");
	REFUSE("[\"\x80\"]");
	REFUSE("[\"\xc3\"]");
	REFUSE("[\"\xe2\x82\"]");
	REFUSE("[\"\xe2\x28\xa1\"]");
	REFUSE("[\"unterminated]");
	/* numbers */
	REFUSE("[01]");
	REFUSE("[-01]");
	REFUSE("[-]");
	REFUSE("[1.]");
	REFUSE("[1.e5]");
	REFUSE("[1e]");
	REFUSE("[1e+]");
	REFUSE("[.5]");
	REFUSE("[+1]");
	REFUSE("[0x10]");
	REFUSE("[9223372036854775808]");
	REFUSE("[-9223372036854775809]");
	REFUSE("[99999999999999999999999]");
	REFUSE("[1e400]");
	REFUSE("[-1e400]");
	REFUSE("[NaN]");
	REFUSE("[Infinity]");
	REFUSE("[-Infinity]");
	/* literals */
	REFUSE("[tru]");
	REFUSE("[truex]");
	REFUSE("[True]");
	REFUSE("[nul]");
	REFUSE("[nulll]");
	REFUSE("[f]");
	/* structure */
	REFUSE("");
	REFUSE("   ");
	REFUSE("[");
	REFUSE("{");
	REFUSE("]");
	REFUSE("[1,]");
	REFUSE("[,1]");
	REFUSE("[1 2]");
	REFUSE("[1,,2]");
	REFUSE("{\"a\":1,}");
	REFUSE("{,}");
	REFUSE("{\"a\"}");
	REFUSE("{\"a\":}");
	REFUSE("{\"a\" 1}");
	REFUSE("{\"a\":1 \"b\":2}");
	REFUSE("{1:2}");
	REFUSE("{'a':1}");
	REFUSE("[}");
	REFUSE("{]");
	REFUSE("{\"a\":[1}");
	REFUSE("{\"a\":1}}");
	REFUSE("{\"a\":1} x");
	REFUSE("{\"a\":1}{}");
	REFUSE("{}[]");
	REFUSE("{}\x00");
	REFUSE("\xef\xbb\xbf{}"); /* a byte-order mark */
	REFUSE("[1]\f");          /* \f is not JSON whitespace */
	/* the top level is an object or an array */
	REFUSE("\"str\"");
	REFUSE("1");
	REFUSE("null");
	REFUSE("true");

	ACCEPT("{}");
	ACCEPT("[]");
	ACCEPT(" \t\r\n{ } \t\r\n");
	ACCEPT("{\"\":1}");
	ACCEPT("{\"a\":{\"a\":1},\"b\":{\"a\":1}}"); /* equal keys in different objects */
	ACCEPT("[\"\x7f\"]");                         /* DEL is not a control byte to JSON */
	ACCEPT("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"]");
	ACCEPT("[1e-400, -0, -0.0, 0e0, 1E+2]");
	ACCEPT("{\"A\":1,\"a\":2}");
}

static const char *str_at(const struct jv_doc *d, uint32_t i)
{
	size_t n;
	const char *s = jv_str(d, i, &n);
	assert_non_null(s);
	assert_int_equal(strlen(s), n);
	return s;
}

/* jansson 2.14 skips a NUL after a number or a literal; the view does not
 * (json_view.h J1's one difference), and a NUL anywhere else both refuse. */
static void test_nul_bytes(void **state)
{
	(void)state;
	static const char *const after[] = {"[1\0]", "[true\0]", "{\"a\":null\0}"};
	struct jv_doc d;
	struct jv_error e;
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(after[i]) + 2; /* the NUL and the closing bracket */
		assert_true(jansson_accepts(after[i], n));
		assert_int_equal(jv_parse(&d, after[i], n, &e), JV_INVALID);
	}
	verdict("[\0 1]", 5, false);
	verdict("[\"a\0\"]", 6, false);
	verdict("{\"a\"\0:1}", 8, false);
}

static void test_values(void **state)
{
	(void)state;
	static const char doc[] =
		"{\"ints\":[0,-0,1,-9223372036854775808,9223372036854775807],"
		" \"reals\":[0.5,-2.5e3,1e-400,1E2],"
		" \"lits\":[true,false,null],"
		" \"str\":\"q\\\"b\\\\s\\/b\\bf\\fn\\nr\\rt\\t\\u00e9\\u20ac\\ud83d\\ude00\","
		" \"nested\":{\"a\":[],\"b\":{},\"c\":[[1],{\"d\":\"e\"}]},"
		" \"last\":\"\"}";
	struct jv_doc d;
	struct jv_error e;
	assert_int_equal(jv_parse(&d, doc, sizeof(doc) - 1, &e), JV_OK);
	assert_int_equal(jv_type(&d, 0), JV_OBJECT);
	assert_int_equal(jv_count(&d, 0), 6);
	assert_int_equal(d.tok[0].next, d.ntok); /* the root spans every token */

	uint32_t ints = jv_get(&d, 0, "ints");
	assert_int_equal(jv_type(&d, ints), JV_ARRAY);
	assert_int_equal(jv_count(&d, ints), 5);
	static const int64_t want_i[] = {0, 0, 1, INT64_MIN, INT64_MAX};
	uint32_t c = ints + 1;
	for (int i = 0; i < 5; i++, c = d.tok[c].next) {
		assert_int_equal(jv_type(&d, c), JV_INT);
		assert_true(d.tok[c].v.i == want_i[i]);
	}
	uint32_t reals = jv_get(&d, 0, "reals");
	static const double want_d[] = {0.5, -2500.0, 0.0, 100.0};
	c = reals + 1;
	for (int i = 0; i < 4; i++, c = d.tok[c].next) {
		assert_int_equal(jv_type(&d, c), JV_REAL); /* 1E2 is a real, as in jansson */
		assert_true(d.tok[c].v.d == want_d[i]);
	}
	uint32_t lits = jv_get(&d, 0, "lits");
	assert_int_equal(jv_type(&d, lits + 1), JV_TRUE);
	assert_int_equal(jv_type(&d, lits + 2), JV_FALSE);
	assert_int_equal(jv_type(&d, lits + 3), JV_NULL);

	assert_string_equal(str_at(&d, jv_get(&d, 0, "str")),
			    "q\"b\\s/b\bf\fn\nr\rt\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	uint32_t nested = jv_get(&d, 0, "nested");
	assert_int_equal(jv_count(&d, jv_get(&d, nested, "a")), 0);
	assert_int_equal(jv_type(&d, jv_get(&d, nested, "b")), JV_OBJECT);
	uint32_t cc = jv_get(&d, nested, "c");
	uint32_t second = d.tok[cc + 1].next; /* after [1] */
	assert_string_equal(str_at(&d, jv_get(&d, second, "d")), "e");
	assert_string_equal(str_at(&d, jv_get(&d, 0, "last")), "");
	/* absent members, and lookups in what is not an object */
	assert_int_equal(jv_get(&d, 0, "missing"), JV_NONE);
	assert_int_equal(jv_get(&d, 0, "in"), JV_NONE); /* a prefix of "ints" */
	assert_int_equal(jv_get(&d, ints, "0"), JV_NONE);
	assert_int_equal(jv_type(&d, JV_NONE), JV_ABSENT);
	assert_null(jv_str(&d, ints, NULL));
	assert_int_equal(jv_get(&d, JV_NONE, "x"), JV_NONE);
	/* the key found is the member's, not a value equal to the key */
	jv_free(&d);
	static const char tricky[] = "{\"a\":\"b\",\"b\":\"c\"}";
	assert_int_equal(jv_parse(&d, tricky, sizeof(tricky) - 1, &e), JV_OK);
	assert_string_equal(str_at(&d, jv_get(&d, 0, "b")), "c");
	jv_free(&d);
	assert_null(d.tok);
}

static char *nested(size_t n, const char *inner)
{
	size_t il = strlen(inner);
	char *b = malloc(2 * n + il + 1);
	assert_non_null(b);
	memset(b, '[', n);
	memcpy(b + n, inner, il);
	memset(b + n + il, ']', n);
	b[2 * n + il] = '\0';
	return b;
}

static void test_depth(void **state)
{
	(void)state;
	struct {
		size_t n;
		const char *inner;
		bool ok;
	} cases[] = {
		{JV_MAX_DEPTH, "", true},
		{JV_MAX_DEPTH + 1, "", false},
		{JV_MAX_DEPTH - 1, "1", true},
		{JV_MAX_DEPTH, "1", false},  /* the scalar is the 2049th value */
		{JV_MAX_DEPTH - 1, "{}", true},
		{JV_MAX_DEPTH - 1, "{\"a\":1}", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *b = nested(cases[i].n, cases[i].inner);
		verdict(b, strlen(b), cases[i].ok);
		free(b);
	}
}

/* {"k0":0,...,"k<n-1>":n-1} and, when dup_of >= 0, a last member "k<dup_of>". */
static char *many_keys(size_t n, long dup_of, size_t *len)
{
	size_t cap = n * 24 + 64, o = 0;
	char *b = malloc(cap);
	assert_non_null(b);
	b[o++] = '{';
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(b + o, cap - o, "%s\"k%zu\":%zu", i ? "," : "", i, i);
	if (dup_of >= 0)
		o += (size_t)snprintf(b + o, cap - o, ",\"k%ld\":0", dup_of);
	b[o++] = '}';
	b[o] = '\0';
	*len = o;
	return b;
}

static void test_many_keys(void **state)
{
	(void)state;
	struct {
		size_t n;
		long dup_of;
	} cases[] = {
		{15, 0}, {15, 14}, {15, -1}, /* pairwise: 16 members with the duplicate */
		{16, 0}, {16, 15}, {16, -1}, /* just past it: sorted */
		{1000, 0}, {1000, 500}, {1000, -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		char *b = many_keys(cases[i].n, cases[i].dup_of, &len);
		verdict(b, len, cases[i].dup_of < 0);
		free(b);
	}
	/* 100,000 keys: about 1.7 million compares sorted, 5 billion pairwise */
	size_t len;
	struct jv_doc d;
	struct jv_error e;
	char *b = many_keys(100000, -1, &len);
	assert_int_equal(jv_parse(&d, b, len, &e), JV_OK);
	assert_int_equal(jv_count(&d, 0), 100000);
	uint32_t v = jv_get(&d, 0, "k99999");
	assert_int_equal(jv_type(&d, v), JV_INT);
	assert_true(d.tok[v].v.i == 99999);
	jv_free(&d);
	free(b);
	b = many_keys(100000, 0, &len);
	assert_int_equal(jv_parse(&d, b, len, &e), JV_INVALID);
	assert_string_equal(e.text, "duplicate object key");
	free(b);
}

/*
 * A real under a locale whose decimal point is a comma: strtod would stop
 * at the '.', and the view must refuse rather than read 1.5 as 1 (fleetd
 * never calls setlocale; this is the guard for a change that would). The
 * locale is built with localedef into a scratch directory (LOCPATH); the
 * case skips, saying so, where Debian's locales package is not installed.
 */
static void test_real_under_a_comma_locale(void **state)
{
	(void)state;
	char dir[] = "/tmp/fleet-locale-XXXXXX", cmd[256];
	if (!mkdtemp(dir))
		fail_msg("mkdtemp");
	snprintf(cmd, sizeof(cmd),
		 "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
	int built = system(cmd) == 0;
	setenv("LOCPATH", dir, 1);
	int set = built && setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
	/* loaded now: the scratch directory goes before anything can fail */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		print_message("could not remove %s\n", dir);
	unsetenv("LOCPATH");
	if (!set) {
		print_message("SKIP: no de_DE locale could be built (Debian: locales)\n");
		skip();
	}
	assert_true(strtod("1.5", NULL) == 1.0); /* the trap itself */
	struct jv_doc d;
	struct jv_error e;
	assert_int_equal(jv_parse(&d, "[1.5]", 5, &e), JV_INVALID);
	assert_string_equal(e.text, "real number not read whole (locale)");
	assert_int_equal(jv_parse(&d, "[15,1e2]", 8, &e), JV_OK); /* no '.': read whole */
	assert_true(d.tok[1].v.i == 15 && d.tok[2].v.d == 100.0);
	jv_free(&d);
	setlocale(LC_NUMERIC, "C");
}

/* J5: whichever allocation fails, JV_NOMEM and an empty view. The input
 * needs the token array to grow and a big object's key scratch. */
static void test_nomem(void **state)
{
	(void)state;
	size_t len;
	char *b = many_keys(2000, -1, &len);
	struct jv_doc d;
	struct jv_error e;
	int calls = 0;
	/* count the allocations of a whole parse first */
	for (;; calls++) {
		fail_at = calls;
		enum jv_result r = jv_parse(&d, b, len, &e);
		if (r == JV_OK) {
			jv_free(&d);
			break;
		}
		assert_int_equal(r, JV_NOMEM);
		assert_null(d.tok);
		assert_null(d.str);
		assert_int_equal(d.ntok, 0);
	}
	fail_at = -1;
	assert_true(calls >= 3); /* the first array, a growth, the key scratch */
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_real_under_a_comma_locale),
		cmocka_unit_test(test_nomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
