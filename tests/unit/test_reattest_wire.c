/*
 * test_reattest_wire.c: the four re-check messages (lib/reattest_wire.h).
 * Each round-trips (encode, decode, compare, encode again to the same
 * bytes); then valid messages changed in one place are refused with the
 * field named.
 */
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include "lib/reattest_wire.h"

static struct fleet_wire_bytes blob(size_t n, uint8_t seed)
{
	struct fleet_wire_bytes b = {malloc(n), n};
	assert_non_null(b.data);
	for (size_t i = 0; i < n; i++)
		b.data[i] = (uint8_t)(seed + i * 7);
	return b;
}

static void bytes_eq(const struct fleet_wire_bytes *a, const struct fleet_wire_bytes *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
}

static void same_bytes(const struct fleet_buf *a, const struct fleet_buf *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
}

static void sample_check(struct fleet_reattest_check *m)
{
	memset(m, 0, sizeof(*m));
	m->lak_cert = blob(600, 1);
	memset(m->nonce, 0xab, sizeof(m->nonce));
	m->quote_attest = blob(140, 2);
	m->quote_sig = blob(72, 3);
	m->eventlog = blob(5000, 4);
	strcpy(m->bios_version, "fleetd-sim-1.0");
	m->report = blob(80, 5);
	m->report_sig = blob(72, 6);
}

/* orig with its first "from" replaced by "to" (malloc'd). */
static char *edited(const char *orig, const char *from, const char *to)
{
	const char *at = strstr(orig, from);
	assert_non_null(at);
	size_t pre = (size_t)(at - orig), n = strlen(orig) + strlen(to) + 1;
	char *s = malloc(n);
	assert_non_null(s);
	snprintf(s, n, "%.*s%s%s", (int)pre, orig, to, at + strlen(from));
	return s;
}

static void test_check_roundtrip(void **state)
{
	struct fleet_reattest_check a, b;
	struct fleet_buf e1, e2;
	struct fleet_errctx ec = {0};
	(void)state;
	sample_check(&a);
	fb_init(&e1);
	fb_init(&e2);
	assert_int_equal(fleet_reattest_check_encode(&a, &e1), FLEET_OK);
	assert_int_equal(fleet_reattest_check_decode(e1.data, e1.len, &b, &ec), FLEET_OK);
	bytes_eq(&a.lak_cert, &b.lak_cert);
	assert_memory_equal(a.nonce, b.nonce, 32);
	bytes_eq(&a.quote_attest, &b.quote_attest);
	bytes_eq(&a.quote_sig, &b.quote_sig);
	bytes_eq(&a.eventlog, &b.eventlog);
	assert_string_equal(a.bios_version, b.bios_version);
	bytes_eq(&a.report, &b.report);
	bytes_eq(&a.report_sig, &b.report_sig);
	assert_int_equal(fleet_reattest_check_encode(&b, &e2), FLEET_OK);
	same_bytes(&e1, &e2);
	/* An empty binary field cannot be encoded. */
	free(b.report_sig.data);
	b.report_sig.data = NULL;
	b.report_sig.len = 0;
	fb_reset(&e2);
	assert_int_equal(fleet_reattest_check_encode(&b, &e2), FLEET_E_INVALID_ARG);
	fleet_reattest_check_free(&a);
	fleet_reattest_check_free(&b);
	fb_free(&e1);
	fb_free(&e2);
}

static void test_nonce_roundtrip(void **state)
{
	struct fleet_reattest_nonce_req q = {.lak_cert = blob(500, 9)}, q2;
	struct fleet_reattest_nonce_reply r = {.expires_in = 60, .pcr_selection = "sha256:0,2,4,7"}, r2;
	struct fleet_reattest_check_reply c = {.status = FLEET_REATTEST_PASS}, c2;
	struct fleet_buf b;
	struct fleet_errctx ec = {0};
	(void)state;
	memset(r.nonce, 0x11, 32);
	fb_init(&b);
	assert_int_equal(fleet_reattest_nonce_req_encode(&q, &b), FLEET_OK);
	assert_int_equal(fleet_reattest_nonce_req_decode(b.data, b.len, &q2, &ec), FLEET_OK);
	bytes_eq(&q.lak_cert, &q2.lak_cert);
	fb_reset(&b);
	assert_int_equal(fleet_reattest_nonce_reply_encode(&r, &b), FLEET_OK);
	assert_int_equal(fleet_reattest_nonce_reply_decode(b.data, b.len, &r2, &ec), FLEET_OK);
	assert_memory_equal(r.nonce, r2.nonce, 32);
	assert_int_equal(r2.expires_in, 60);
	assert_string_equal(r2.pcr_selection, "sha256:0,2,4,7");
	/* the selection is what the client quotes: one it cannot parse is no reply */
	struct fleet_reattest_nonce_reply bad = r;
	snprintf(bad.pcr_selection, sizeof(bad.pcr_selection), "sha999:x");
	fb_reset(&b);
	assert_int_equal(fleet_reattest_nonce_reply_encode(&bad, &b), FLEET_E_INVALID_ARG);
	fb_reset(&b);
	assert_int_equal(fleet_reattest_check_reply_encode(&c, &b), FLEET_OK);
	assert_int_equal(b.len, strlen("{\"v\":1,\"status\":\"pass\"}"));
	assert_memory_equal(b.data, "{\"v\":1,\"status\":\"pass\"}", b.len);
	assert_int_equal(fleet_reattest_check_reply_decode(b.data, b.len, &c2, &ec), FLEET_OK);
	assert_int_equal(c2.status, FLEET_REATTEST_PASS);
	c.status = FLEET_REATTEST_REFUSED;
	fb_reset(&b);
	assert_int_equal(fleet_reattest_check_reply_encode(&c, &b), FLEET_OK);
	assert_memory_equal(b.data, "{\"v\":1,\"status\":\"refused\"}", b.len);
	fleet_reattest_nonce_req_free(&q);
	fleet_reattest_nonce_req_free(&q2);
	fb_free(&b);
}

struct bad {
	const char *body;
	fleet_err want;
	const char *field; /* in ec.detail */
};

static void test_refusals(void **state)
{
	static const char N[] = "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s"; /* 32 x 0xab */
	static const struct bad nonce_reqs[] = {
		{"{\"v\":1}", FLEET_E_MALFORMED, "lak_cert"},
		{"{\"v\":2,\"lak_cert\":\"AAEC\"}", FLEET_E_MALFORMED, "v"},
		{"{\"v\":1,\"lak_cert\":\"AAEC\",\"x\":1}", FLEET_E_MALFORMED, "body"},
		{"{\"v\":1,\"lak_cert\":\"AAEC\",\"lak_cert\":\"AAEC\"}", FLEET_E_MALFORMED, "body"},
		{"{\"v\":1,\"lak_cert\":\"AAE=\"}", FLEET_E_MALFORMED, "lak_cert"},
		{"{\"v\":1,\"lak_cert\":\"\"}", FLEET_E_MALFORMED, "lak_cert"},
	};
	struct fleet_errctx ec;
	(void)state;
	for (size_t i = 0; i < sizeof(nonce_reqs) / sizeof(nonce_reqs[0]); i++) {
		struct fleet_reattest_nonce_req m;
		memset(&ec, 0, sizeof(ec));
		assert_int_equal(fleet_reattest_nonce_req_decode((const uint8_t *)nonce_reqs[i].body,
								 strlen(nonce_reqs[i].body), &m,
								 &ec),
				 nonce_reqs[i].want);
		assert_non_null(strstr(ec.detail, nonce_reqs[i].field));
		assert_null(m.lak_cert.data);
	}
	char body[600];
	static const struct {
		const char *nonce_tail, *rest;
	} replies[] = {{"", ",\"expires_in\":0,\"pcr_selection\":\"sha256:0\"}"},
		       {"", ",\"expires_in\":3601,\"pcr_selection\":\"sha256:0\"}"},
		       {"", ",\"expires_in\":\"60\",\"pcr_selection\":\"sha256:0\"}"},
		       {"", "}"},
		       {"AA", ",\"expires_in\":60,\"pcr_selection\":\"sha256:0\"}"},
		       {"", ",\"expires_in\":60}"},
		       {"", ",\"expires_in\":60,\"pcr_selection\":\"sha256:0,99\"}"}};
	for (size_t i = 0; i < 7; i++) {
		struct fleet_reattest_nonce_reply m;
		snprintf(body, sizeof(body), "{\"v\":1,\"nonce\":\"%s%s\"%s", N,
			 replies[i].nonce_tail, replies[i].rest);
		memset(&ec, 0, sizeof(ec));
		fleet_err e = fleet_reattest_nonce_reply_decode((const uint8_t *)body,
								strlen(body), &m, &ec);
		assert_true(e == FLEET_E_MALFORMED || e == FLEET_E_TOO_LARGE);
		assert_true(ec.detail[0] != '\0');
	}
	const char *statuses[] = {"{\"v\":1,\"status\":\"admitted\"}", "{\"v\":1}",
				  "{\"v\":1,\"status\":\"pass\",\"reason\":\"x\"}"};
	for (size_t i = 0; i < 3; i++) {
		struct fleet_reattest_check_reply m;
		assert_int_equal(fleet_reattest_check_reply_decode((const uint8_t *)statuses[i],
								   strlen(statuses[i]), &m, &ec),
				 FLEET_E_MALFORMED);
	}
	/* The check: a valid one, then one change at a time. */
	struct fleet_reattest_check a, m;
	struct fleet_buf b;
	sample_check(&a);
	fb_init(&b);
	assert_int_equal(fleet_reattest_check_encode(&a, &b), FLEET_OK);
	fb_put(&b, "", 1);
	const char *orig = (const char *)b.data;
	static const struct {
		const char *from, *to, *field;
		fleet_err want;
	} edits[] = {
		{"\"quote\":{", "\"quote\":{\"x\":\"AA\",", "quote", FLEET_E_MALFORMED},
		{"\"signature\":", "\"sig\":", "quote", FLEET_E_MALFORMED},
		{"\"nonce\":\"", "\"nonce\":\"AAAA", "nonce", FLEET_E_TOO_LARGE},
		{"\"bios_version\":\"fleetd", "\"bios_version\":\"\\u0001fleetd", "bios_version",
		 FLEET_E_MALFORMED},
		{"\"v\":1", "\"v\":0", "v", FLEET_E_MALFORMED},
		{"\"report\":\"", "\"report\":\"!", "report", FLEET_E_MALFORMED},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *s = edited(orig, edits[i].from, edits[i].to);
		memset(&ec, 0, sizeof(ec));
		assert_int_equal(fleet_reattest_check_decode((const uint8_t *)s, strlen(s), &m, &ec),
				 edits[i].want);
		if (!strstr(ec.detail, edits[i].field))
			fail_msg("edit %zu: detail \"%s\" does not name %s", i, ec.detail,
				 edits[i].field);
		assert_null(m.lak_cert.data);
		free(s);
	}
	/* Over the event log's cap. */
	free(a.eventlog.data);
	a.eventlog = blob(FLEET_WIRE_MAX_EVENTLOG + 1, 1);
	fb_reset(&b);
	assert_int_equal(fleet_reattest_check_encode(&a, &b), FLEET_E_INVALID_ARG);
	fleet_reattest_check_free(&a);
	fb_free(&b);
}


/* The renewal: the check with "ldevid" round-trips; each of its parts is
 * required and capped; the reply carries both certificates with
 * "renewed" and only then. */
static void test_renewal(void **state)
{
	struct fleet_reattest_check a, b;
	struct fleet_buf e1, e2;
	struct fleet_errctx ec = {0};
	(void)state;
	sample_check(&a);
	a.has_renew = true;
	a.renew_public = blob(90, 7);
	a.renew_request = blob(120, 8);
	a.renew_certify_attest = blob(150, 9);
	a.renew_certify_sig = blob(72, 10);
	fb_init(&e1);
	fb_init(&e2);
	assert_int_equal(fleet_reattest_check_encode(&a, &e1), FLEET_OK);
	assert_int_equal(fleet_reattest_check_decode(e1.data, e1.len, &b, &ec), FLEET_OK);
	assert_true(b.has_renew);
	bytes_eq(&a.renew_public, &b.renew_public);
	bytes_eq(&a.renew_request, &b.renew_request);
	bytes_eq(&a.renew_certify_attest, &b.renew_certify_attest);
	bytes_eq(&a.renew_certify_sig, &b.renew_certify_sig);
	assert_int_equal(fleet_reattest_check_encode(&b, &e2), FLEET_OK);
	same_bytes(&e1, &e2);
	fleet_reattest_check_free(&b);
	/* A part missing, or over its cap, is refused by name. */
	fb_put(&e1, "", 1);
	const char *orig = (const char *)e1.data;
	static const struct {
		const char *from, *to, *field;
		fleet_err want;
	} edits[] = {
		{"\"request\":", "\"req\":", "ldevid", FLEET_E_MALFORMED},
		{"\"ldevid\":{", "\"ldevid\":{\"x\":\"AA\",", "ldevid", FLEET_E_MALFORMED},
		{"\"ldevid\":{", "\"ldevid\":1,\"y\":{", "", FLEET_E_MALFORMED},
		{"\"public\":\"", "\"public\":\"!", "ldevid.public", FLEET_E_MALFORMED},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *s = edited(orig, edits[i].from, edits[i].to);
		memset(&ec, 0, sizeof(ec));
		assert_int_equal(fleet_reattest_check_decode((const uint8_t *)s, strlen(s), &b, &ec),
				 edits[i].want);
		assert_non_null(strstr(ec.detail, edits[i].field));
		assert_false(b.has_renew);
		assert_null(b.renew_public.data);
		free(s);
	}
	free(a.renew_request.data);
	a.renew_request = blob(FLEET_WIRE_MAX_REQUEST + 1, 1);
	fb_reset(&e2);
	assert_int_equal(fleet_reattest_check_encode(&a, &e2), FLEET_E_INVALID_ARG);
	fleet_reattest_check_free(&a);

	/* The reply. */
	struct fleet_reattest_check_reply r = {.status = FLEET_REATTEST_RENEWED,
					       .lak_cert = blob(500, 1),
					       .ldevid_cert = blob(480, 2)},
					  r2;
	fb_reset(&e2);
	assert_int_equal(fleet_reattest_check_reply_encode(&r, &e2), FLEET_OK);
	assert_int_equal(fleet_reattest_check_reply_decode(e2.data, e2.len, &r2, &ec), FLEET_OK);
	assert_int_equal(r2.status, FLEET_REATTEST_RENEWED);
	bytes_eq(&r.lak_cert, &r2.lak_cert);
	bytes_eq(&r.ldevid_cert, &r2.ldevid_cert);
	fleet_reattest_check_reply_free(&r2);
	/* renewed without a certificate, pass with one: neither encodes... */
	struct fleet_reattest_check_reply half = {.status = FLEET_REATTEST_RENEWED,
						  .lak_cert = r.lak_cert};
	assert_int_equal(fleet_reattest_check_reply_encode(&half, &e2), FLEET_E_INVALID_ARG);
	half.status = FLEET_REATTEST_PASS;
	assert_int_equal(fleet_reattest_check_reply_encode(&half, &e2), FLEET_E_INVALID_ARG);
	/* ...nor decodes */
	static const char *bad[] = {
		"{\"v\":1,\"status\":\"renewed\",\"lak_cert\":\"AAEC\"}",
		"{\"v\":1,\"status\":\"pass\",\"lak_cert\":\"AAEC\"}",
		"{\"v\":1,\"status\":\"refused\",\"ldevid_cert\":\"AAEC\"}",
	};
	for (size_t i = 0; i < 3; i++) {
		memset(&ec, 0, sizeof(ec));
		assert_int_equal(fleet_reattest_check_reply_decode((const uint8_t *)bad[i],
								   strlen(bad[i]), &r2, &ec),
				 FLEET_E_MALFORMED);
		assert_null(r2.lak_cert.data);
		assert_true(ec.detail[0] != '\0');
	}
	fleet_reattest_check_reply_free(&r);
	fb_free(&e1);
	fb_free(&e2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_roundtrip),
		cmocka_unit_test(test_nonce_roundtrip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_renewal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
