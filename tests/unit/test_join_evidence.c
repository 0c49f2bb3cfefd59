/*
 * test_join_evidence.c: the token-based attestors' evidence, the discovery
 * assertion and the renewal's request (lib/join_evidence.h, JE1..JE6). One
 * test per rule, named after it; then each kind's round trips, its caps,
 * the signing inputs' exact bytes, ES256 against OpenSSL's own DER form,
 * and the fuzz target's seeds.
 */
#include "tests/testutil.h"
#include "tests/unit/wire_test.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "lib/join_evidence.h"

#define UUID "4c4c4544-0042-3510-8052-b4c04f4e3232"
#define A10 "AAAAAAAAAA"
#define SIG64 A10 A10 A10 A10 A10 A10 A10 A10 "AAAAAA" /* 64 zero bytes, base64url */
#define SIG63 A10 A10 A10 A10 A10 A10 A10 A10 "AAAA"
#define SIG65 A10 A10 A10 A10 A10 A10 A10 A10 "AAAAAAA"

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* s padded with spaces after its '{' to n bytes (malloc'd; still valid JSON). */
static char *padded(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	assert_non_null(p);
	p[0] = '{';
	memset(p + 1, ' ', n - strlen(s));
	memcpy(p + 1 + n - strlen(s), s + 1, strlen(s));
	assert_int_equal(strlen(p), n);
	return p;
}

/* ---- the four decoders, by kind (as the fuzz target's kind byte) -------- */

enum kind { POP, SIGNED, BODY, RENEW, KINDS };

static fleet_err decode_n(enum kind k, const uint8_t *p, size_t n, struct fleet_errctx *ec)
{
	fleet_err e;
	memset(ec, 0, sizeof(*ec));
	switch (k) {
	case POP: {
		struct fleet_x509pop_evidence m;
		e = fleet_x509pop_decode(p, n, &m, ec);
		fleet_x509pop_free(&m);
		break;
	}
	case SIGNED: {
		struct fleet_discovery_signed m;
		e = fleet_discovery_signed_decode(p, n, &m, ec);
		fleet_discovery_signed_free(&m);
		break;
	}
	case BODY: {
		struct fleet_discovery_assertion m;
		e = fleet_discovery_body_decode(p, n, &m, ec);
		break;
	}
	default: {
		struct fleet_renew_request m;
		e = fleet_renew_request_decode(p, n, &m, ec);
		fleet_renew_request_free(&m);
		break;
	}
	}
	return e;
}

static fleet_err decode(enum kind k, const char *s, struct fleet_errctx *ec)
{
	return decode_n(k, (const uint8_t *)s, strlen(s), ec);
}

/* s is refused as kind k with want, ec.detail names field, and OpenSSL's
 * queue is empty. */
static void refused(enum kind k, const char *s, fleet_err want, const char *field)
{
	struct fleet_errctx ec;
	fleet_err e = decode(k, s, &ec);
	if (e != want)
		fail_msg("%.200s: got %s, want %s (%s)", s, fleet_err_str(e), fleet_err_str(want),
			 ec.detail);
	if (!strstr(ec.detail, field))
		fail_msg("%.200s: detail \"%s\" does not name %s", s, ec.detail, field);
	assert_int_equal(ERR_peek_error(), 0);
}

static void edit_refused(enum kind k, const char *orig, const char *from, const char *to,
			 fleet_err want, const char *field)
{
	char *s = edited(orig, from, to);
	refused(k, s, want, field);
	free(s);
}

static void accepted(enum kind k, const char *s)
{
	struct fleet_errctx ec;
	if (decode(k, s, &ec) != FLEET_OK)
		fail_msg("%.200s refused: %s", s, ec.detail);
}

static void edit_accepted(enum kind k, const char *orig, const char *from, const char *to)
{
	char *s = edited(orig, from, to);
	accepted(k, s);
	free(s);
}

/* Valid samples of each kind, the refusal tests' originals. */
static const char POP_OK[] = "{\"v\":1,\"nodeId\":\"node_01k-x\",\"chain\":[\"AAEC\",\"AAED\"],"
			     "\"clientTime\":1790000000000,\"sig\":\"" SIG64 "\"}";
static const char SIGNED_OK[] = "{\"v\":1,\"assertion\":\"AAEC\",\"cert\":\"AAED\","
				"\"sig\":\"" SIG64 "\"}";
static const char BODY_OK[] =
	"{\"v\":1,\"site\":\"rack-a1\",\"signer\":\"node_site-1\",\"epoch\":7,"
	"\"mac\":\"aa:bb:cc:dd:ee:01\",\"ip\":\"10.0.0.5\",\"product_uuid\":\"" UUID "\","
	"\"workflow\":\"boot.ramdisk_1\",\"issued_at\":1790000000,\"not_after\":1790000600}";
static const char BODY_LEAST[] = "{\"v\":1,\"site\":\"s\",\"signer\":\"n\",\"epoch\":1,"
				 "\"mac\":\"aa:bb:cc:dd:ee:01\",\"issued_at\":1,\"not_after\":1}";
static const char RENEW_OK[] = "{\"v\":1,\"cert\":\"AAEC\",\"csr\":\"AAED\",\"sig\":\"" SIG64 "\"}";

static const char *const samples[KINDS] = {POP_OK, SIGNED_OK, BODY_OK, RENEW_OK};
static const char *const whole_what[KINDS] = {"x509pop evidence", "discovery attestation",
					      "discovery assertion", "renew request"};
static const size_t whole_cap[KINDS] = {FLEET_JOIN_MAX_ATTESTATION, FLEET_JOIN_MAX_ATTESTATION,
					FLEET_EVIDENCE_MAX_BODY, FLEET_JOIN_MAX_REQUEST};

/* ---- JE1 ---------------------------------------------------------------- */

/* Whole or not at all: the JSON layer, base64url, the caps, *out zeroed on
 * a refusal, the field's path in the detail. */
static void test_je1_whole_or_nothing(void **state)
{
	(void)state;
	for (int k = 0; k < KINDS; k++) {
		const char *s = samples[k];
		char *p;
		accepted((enum kind)k, s);
		/* the JSON layer (wj_load) */
		edit_refused((enum kind)k, s, "{\"v\":1,", "{\"v\":1,\"x\":1,", FLEET_E_MALFORMED,
			     "unknown field");
		edit_refused((enum kind)k, s, "{\"v\":1,", "{\"v\":1,\"v\":1,", FLEET_E_MALFORMED,
			     "duplicate");
		edit_refused((enum kind)k, s, "\"v\":1", "\"v\":2", FLEET_E_MALFORMED, "v");
		edit_refused((enum kind)k, s, "\"v\":1", "\"v\":1.0", FLEET_E_MALFORMED, "v");
		edit_refused((enum kind)k, s, "\"v\":1", "\"v\":\"1\"", FLEET_E_MALFORMED, "v");
		edit_refused((enum kind)k, s, "\"v\":1,", "", FLEET_E_MALFORMED, "v: missing");
		refused((enum kind)k, "[1]", FLEET_E_MALFORMED, "object");
		refused((enum kind)k, "", FLEET_E_MALFORMED, "JSON");
		refused((enum kind)k, "{\"v\":1}  x", FLEET_E_MALFORMED, "JSON");
		/* the whole message's cap: at it parsed, one byte over refused unread */
		p = padded(s, whole_cap[k]);
		accepted((enum kind)k, p);
		free(p);
		p = padded(s, whole_cap[k] + 1);
		refused((enum kind)k, p, FLEET_E_TOO_LARGE, whole_what[k]);
		free(p);
	}
	/* nested repeats too */
	edit_refused(POP, POP_OK, "\"sig\"", "\"sig\":\"" SIG64 "\",\"sig\"", FLEET_E_MALFORMED,
		     "duplicate");
	edit_refused(RENEW, RENEW_OK, "\"csr\":\"AAED\"", "\"csr\":\"AAED\",\"csr\":\"AAED\"",
		     FLEET_E_MALFORMED, "duplicate");
	/* base64url in its one spelling, never empty */
	static const struct {
		enum kind k;
		const char *from, *field;
	} b64[] = {
		{POP, "\"AAED\"", "chain[1]"},
		{SIGNED, "\"AAEC\"", "assertion"},
		{SIGNED, "\"AAED\"", "cert"},
		{RENEW, "\"AAEC\"", "cert"},
		{RENEW, "\"AAED\"", "csr"},
	};
	for (size_t i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
		const char *s = samples[b64[i].k];
		edit_refused(b64[i].k, s, b64[i].from, "\"AAE=\"", FLEET_E_MALFORMED, b64[i].field);
		edit_refused(b64[i].k, s, b64[i].from, "\"AA+/\"", FLEET_E_MALFORMED, b64[i].field);
		edit_refused(b64[i].k, s, b64[i].from, "\"AAF\"", FLEET_E_MALFORMED, b64[i].field);
		edit_refused(b64[i].k, s, b64[i].from, "\"A\"", FLEET_E_MALFORMED, b64[i].field);
		edit_refused(b64[i].k, s, b64[i].from, "\"\"", FLEET_E_MALFORMED, b64[i].field);
		edit_refused(b64[i].k, s, b64[i].from, "null", FLEET_E_MALFORMED, b64[i].field);
		edit_refused(b64[i].k, s, b64[i].from, "7", FLEET_E_MALFORMED, b64[i].field);
	}
	/* every field is required, but the body's three optional ones */
	edit_refused(POP, POP_OK, "\"nodeId\":\"node_01k-x\",", "", FLEET_E_MALFORMED,
		     "nodeId: missing");
	edit_refused(POP, POP_OK, "\"chain\":[\"AAEC\",\"AAED\"],", "", FLEET_E_MALFORMED,
		     "chain: missing");
	edit_refused(POP, POP_OK, "\"clientTime\":1790000000000,", "", FLEET_E_MALFORMED,
		     "clientTime: missing");
	edit_refused(POP, POP_OK, ",\"sig\":\"" SIG64 "\"", "", FLEET_E_MALFORMED, "sig: missing");
	edit_refused(SIGNED, SIGNED_OK, "\"assertion\":\"AAEC\",", "", FLEET_E_MALFORMED,
		     "assertion: missing");
	edit_refused(SIGNED, SIGNED_OK, "\"cert\":\"AAED\",", "", FLEET_E_MALFORMED,
		     "cert: missing");
	edit_refused(SIGNED, SIGNED_OK, ",\"sig\":\"" SIG64 "\"", "", FLEET_E_MALFORMED,
		     "sig: missing");
	edit_refused(RENEW, RENEW_OK, "\"cert\":\"AAEC\",", "", FLEET_E_MALFORMED, "cert: missing");
	edit_refused(RENEW, RENEW_OK, "\"csr\":\"AAED\",", "", FLEET_E_MALFORMED, "csr: missing");
	edit_refused(RENEW, RENEW_OK, ",\"sig\":\"" SIG64 "\"", "", FLEET_E_MALFORMED,
		     "sig: missing");
	static const char *const body_required[] = {
		"\"site\":\"rack-a1\",", "\"signer\":\"node_site-1\",", "\"epoch\":7,",
		"\"mac\":\"aa:bb:cc:dd:ee:01\",", "\"issued_at\":1790000000,",
		",\"not_after\":1790000600"};
	static const char *const body_field[] = {"site", "signer", "epoch", "mac", "issued_at",
						 "not_after"};
	for (size_t i = 0; i < 6; i++) {
		char want[40];
		snprintf(want, sizeof(want), "%s: missing", body_field[i]);
		edit_refused(BODY, BODY_OK, body_required[i], "", FLEET_E_MALFORMED, want);
	}
	accepted(BODY, BODY_LEAST);

	/* *out zeroed, and freed and zeroed on a late refusal (after byte
	 * fields were read) */
	{
		struct fleet_x509pop_evidence m;
		struct fleet_discovery_signed d;
		struct fleet_discovery_assertion a;
		struct fleet_renew_request r;
		struct fleet_errctx ec = {0};
		char *s;
		s = edited(POP_OK, SIG64, SIG63);
		memset(&m, 0xa5, sizeof(m));
		assert_int_equal(fleet_x509pop_decode((const uint8_t *)s, strlen(s), &m, &ec),
				 FLEET_E_MALFORMED);
		assert_true(all_zero(&m, sizeof(m)));
		free(s);
		s = edited(SIGNED_OK, SIG64, SIG63);
		memset(&d, 0xa5, sizeof(d));
		assert_int_equal(
			fleet_discovery_signed_decode((const uint8_t *)s, strlen(s), &d, &ec),
			FLEET_E_MALFORMED);
		assert_true(all_zero(&d, sizeof(d)));
		free(s);
		s = edited(BODY_OK, "1790000600", "1789999999");
		memset(&a, 0xa5, sizeof(a));
		assert_int_equal(fleet_discovery_body_decode((const uint8_t *)s, strlen(s), &a, &ec),
				 FLEET_E_MALFORMED);
		assert_true(all_zero(&a, sizeof(a)));
		free(s);
		s = edited(RENEW_OK, SIG64, SIG65);
		memset(&r, 0xa5, sizeof(r));
		assert_int_equal(fleet_renew_request_decode((const uint8_t *)s, strlen(s), &r, &ec),
				 FLEET_E_TOO_LARGE);
		assert_true(all_zero(&r, sizeof(r)));
		free(s);
		/* a caller's mistake */
		assert_int_equal(fleet_x509pop_decode(NULL, 0, NULL, &ec), FLEET_E_INVALID_ARG);
		assert_int_equal(fleet_discovery_signed_decode(NULL, 0, NULL, &ec),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(fleet_discovery_body_decode(NULL, 0, NULL, &ec),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(fleet_renew_request_decode(NULL, 0, NULL, &ec),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(fleet_renew_request_decode(NULL, 5, &r, &ec), FLEET_E_INVALID_ARG);
		assert_true(all_zero(&r, sizeof(r)));
	}
}

/* Field caps (JE1): at the cap accepted, one byte over TOO_LARGE. */
static void test_caps(void **state)
{
	static const struct {
		enum kind k;
		const char *pre, *post;
		size_t cap;
		const char *field;
	} caps[] = {
		{POP, "{\"v\":1,\"nodeId\":\"n\",\"chain\":[\"AAEC\",\"",
		 "\"],\"clientTime\":0,\"sig\":\"" SIG64 "\"}", FLEET_JOIN_MAX_CERT, "chain[1]"},
		{SIGNED, "{\"v\":1,\"assertion\":\"", "\",\"cert\":\"AAEC\",\"sig\":\"" SIG64 "\"}",
		 FLEET_EVIDENCE_MAX_BODY, "assertion"},
		{SIGNED, "{\"v\":1,\"assertion\":\"AAEC\",\"cert\":\"", "\",\"sig\":\"" SIG64 "\"}",
		 FLEET_JOIN_MAX_CERT, "cert"},
		{RENEW, "{\"v\":1,\"cert\":\"", "\",\"csr\":\"AAEC\",\"sig\":\"" SIG64 "\"}",
		 FLEET_JOIN_MAX_CERT, "cert"},
		{RENEW, "{\"v\":1,\"cert\":\"AAEC\",\"csr\":\"", "\",\"sig\":\"" SIG64 "\"}",
		 FLEET_JOIN_MAX_CSR, "csr"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char *s = with_b64(caps[i].pre, caps[i].cap, caps[i].post);
		accepted(caps[i].k, s);
		free(s);
		s = with_b64(caps[i].pre, caps[i].cap + 1, caps[i].post);
		refused(caps[i].k, s, FLEET_E_TOO_LARGE, caps[i].field);
		free(s);
	}
	/* the chain: 1..4 entries */
	edit_refused(POP, POP_OK, "[\"AAEC\",\"AAED\"]", "[]", FLEET_E_MALFORMED, "chain: empty");
	edit_accepted(POP, POP_OK, "[\"AAEC\",\"AAED\"]", "[\"AAEC\",\"AAEC\",\"AAEC\",\"AAEC\"]");
	edit_refused(POP, POP_OK, "[\"AAEC\",\"AAED\"]",
		     "[\"AAEC\",\"AAEC\",\"AAEC\",\"AAEC\",\"AAEC\"]", FLEET_E_TOO_LARGE, "chain");
	edit_refused(POP, POP_OK, "[\"AAEC\",\"AAED\"]", "\"AAEC\"", FLEET_E_MALFORMED,
		     "chain: not an array");
	/* sig: exactly 64 bytes */
	for (int k = 0; k < KINDS; k++) {
		if (k == BODY)
			continue;
		edit_refused((enum kind)k, samples[k], SIG64, SIG63, FLEET_E_MALFORMED,
			     "sig: not 64 bytes");
		edit_refused((enum kind)k, samples[k], SIG64, SIG65, FLEET_E_TOO_LARGE, "sig");
		edit_refused((enum kind)k, samples[k], "\"" SIG64 "\"", "\"\"", FLEET_E_MALFORMED,
			     "sig");
		edit_refused((enum kind)k, samples[k], "\"" A10, "\"+" "AAAAAAAAA",
			     FLEET_E_MALFORMED, "sig");
	}
}

/* ---- JE2 ---------------------------------------------------------------- */

static void test_je2_values(void **state)
{
	(void)state;
	/* x509pop: nodeId, clientTime */
	edit_refused(POP, POP_OK, "node_01k-x", "Node", FLEET_E_MALFORMED, "nodeId");
	edit_refused(POP, POP_OK, "node_01k-x", "node.1", FLEET_E_MALFORMED, "nodeId");
	edit_refused(POP, POP_OK, "node_01k-x", "node 1", FLEET_E_MALFORMED, "nodeId");
	edit_refused(POP, POP_OK, "\"node_01k-x\"", "\"\"", FLEET_E_MALFORMED, "nodeId");
	edit_refused(POP, POP_OK, "\"node_01k-x\"", "7", FLEET_E_MALFORMED, "nodeId");
	edit_refused(POP, POP_OK, "node_01k-x",
		     "n123456789012345678901234567890123456789012345678901234567890123",
		     FLEET_E_TOO_LARGE, "nodeId");
	edit_accepted(POP, POP_OK, "node_01k-x",
		      "n12345678901234567890123456789012345678901234567890123456789012");
	edit_accepted(POP, POP_OK, ":1790000000000,", ":0,");
	edit_accepted(POP, POP_OK, ":1790000000000,", ":253402300799000,");
	edit_refused(POP, POP_OK, ":1790000000000,", ":253402300799001,", FLEET_E_MALFORMED,
		     "clientTime");
	edit_refused(POP, POP_OK, ":1790000000000,", ":-1,", FLEET_E_MALFORMED, "clientTime");
	edit_refused(POP, POP_OK, ":1790000000000,", ":1.79e12,", FLEET_E_MALFORMED, "clientTime");
	edit_refused(POP, POP_OK, ":1790000000000,", ":\"1790000000000\",", FLEET_E_MALFORMED,
		     "clientTime");

	/* the assertion's body */
	accepted(BODY, BODY_OK);
	edit_refused(BODY, BODY_OK, "rack-a1", "Rack", FLEET_E_MALFORMED, "site");
	edit_refused(BODY, BODY_OK, "rack-a1", "rack_a1", FLEET_E_MALFORMED, "site");
	edit_refused(BODY, BODY_OK, "\"rack-a1\"", "\"\"", FLEET_E_MALFORMED, "site");
	edit_refused(BODY, BODY_OK, "rack-a1",
		     "s123456789012345678901234567890123456789012345678901234567890123",
		     FLEET_E_TOO_LARGE, "site");
	edit_accepted(BODY, BODY_OK, "rack-a1",
		      "s12345678901234567890123456789012345678901234567890123456789012");
	edit_refused(BODY, BODY_OK, "node_site-1", "Node", FLEET_E_MALFORMED, "signer");
	edit_refused(BODY, BODY_OK, "node_site-1", "node.site", FLEET_E_MALFORMED, "signer");
	edit_refused(BODY, BODY_OK, "\"node_site-1\"", "\"\"", FLEET_E_MALFORMED, "signer");
	edit_refused(BODY, BODY_OK, "node_site-1",
		     "n123456789012345678901234567890123456789012345678901234567890123",
		     FLEET_E_TOO_LARGE, "signer");
	/* epoch 1..2^53 */
	edit_accepted(BODY, BODY_OK, "\"epoch\":7", "\"epoch\":9007199254740992");
	edit_refused(BODY, BODY_OK, "\"epoch\":7", "\"epoch\":9007199254740993", FLEET_E_MALFORMED,
		     "epoch");
	edit_refused(BODY, BODY_OK, "\"epoch\":7", "\"epoch\":0", FLEET_E_MALFORMED, "epoch");
	edit_refused(BODY, BODY_OK, "\"epoch\":7", "\"epoch\":-7", FLEET_E_MALFORMED, "epoch");
	edit_refused(BODY, BODY_OK, "\"epoch\":7", "\"epoch\":\"7\"", FLEET_E_MALFORMED, "epoch");
	/* mac */
	edit_refused(BODY, BODY_OK, "aa:bb:cc:dd:ee:01", "AA:bb:cc:dd:ee:01", FLEET_E_MALFORMED,
		     "mac");
	edit_refused(BODY, BODY_OK, "aa:bb:cc:dd:ee:01", "aa-bb-cc-dd-ee-01", FLEET_E_MALFORMED,
		     "mac");
	edit_refused(BODY, BODY_OK, "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:0", FLEET_E_MALFORMED,
		     "mac");
	edit_refused(BODY, BODY_OK, "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:0g", FLEET_E_MALFORMED,
		     "mac");
	edit_refused(BODY, BODY_OK, "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:012", FLEET_E_TOO_LARGE,
		     "mac");
	edit_refused(BODY, BODY_OK, "\"aa:bb:cc:dd:ee:01\"", "\"\"", FLEET_E_MALFORMED, "mac");
	/* ip */
	edit_accepted(BODY, BODY_OK, "10.0.0.5", "fe80::1");
	edit_accepted(BODY, BODY_OK, "10.0.0.5", "0000:0000:0000:0000:0000:ffff:255.255.255.255");
	edit_refused(BODY, BODY_OK, "10.0.0.5", "0000:0000:0000:0000:0000:ffff:255.255.255.2555",
		     FLEET_E_TOO_LARGE, "ip");
	edit_refused(BODY, BODY_OK, "10.0.0.5", "FE80::1", FLEET_E_MALFORMED, "ip");
	edit_refused(BODY, BODY_OK, "10.0.0.5", "10.0.0.5/24", FLEET_E_MALFORMED, "ip");
	edit_refused(BODY, BODY_OK, "10.0.0.5", "host", FLEET_E_MALFORMED, "ip");
	edit_refused(BODY, BODY_OK, "\"10.0.0.5\"", "\"\"", FLEET_E_MALFORMED, "ip");
	/* product_uuid */
	edit_refused(BODY, BODY_OK, UUID, "4C4C4544-0042-3510-8052-B4C04F4E3232", FLEET_E_MALFORMED,
		     "product_uuid");
	edit_refused(BODY, BODY_OK, UUID, "4c4c454400423510805200b4c04f4e323232", FLEET_E_MALFORMED,
		     "product_uuid");
	edit_refused(BODY, BODY_OK, UUID, "4c4c4544-0042-3510-8052-b4c04f4e323", FLEET_E_MALFORMED,
		     "product_uuid");
	edit_refused(BODY, BODY_OK, UUID, UUID "0", FLEET_E_TOO_LARGE, "product_uuid");
	edit_refused(BODY, BODY_OK, "\"" UUID "\"", "\"\"", FLEET_E_MALFORMED, "product_uuid");
	/* workflow */
	edit_refused(BODY, BODY_OK, "boot.ramdisk_1", "Boot", FLEET_E_MALFORMED, "workflow");
	edit_refused(BODY, BODY_OK, "boot.ramdisk_1", "boot/1", FLEET_E_MALFORMED, "workflow");
	edit_refused(BODY, BODY_OK, "\"boot.ramdisk_1\"", "\"\"", FLEET_E_MALFORMED, "workflow");
	edit_refused(BODY, BODY_OK, "boot.ramdisk_1",
		     "w123456789012345678901234567890123456789012345678901234567890123",
		     FLEET_E_TOO_LARGE, "workflow");
	/* issued_at <= not_after, both 1..FLEET_JOIN_MAX_NOT_AFTER */
	edit_accepted(BODY, BODY_OK, "1790000600", "1790000000");
	edit_refused(BODY, BODY_OK, "1790000600", "1789999999", FLEET_E_MALFORMED,
		     "not_after: before issued_at");
	edit_refused(BODY, BODY_OK, ":1790000000,", ":0,", FLEET_E_MALFORMED, "issued_at");
	edit_refused(BODY, BODY_OK, ":1790000600}", ":253402300800}", FLEET_E_MALFORMED,
		     "not_after");
	edit_accepted(BODY, BODY_OK, ":1790000600}", ":253402300799}");
	edit_refused(BODY, BODY_OK, ":1790000600}", ":\"1790000600\"}", FLEET_E_MALFORMED,
		     "not_after");
	edit_refused(BODY, BODY_OK, ":1790000000,", ":1.79e9,", FLEET_E_MALFORMED, "issued_at");
	/* strings hold no control characters */
	edit_refused(BODY, BODY_OK, "rack-a1", "rack\\u0001", FLEET_E_MALFORMED, "site");
}

/* ---- the round trips and JE3 -------------------------------------------- */

static void sample_pop(struct fleet_x509pop_evidence *m, size_t n)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->node_id, "node_01k");
	m->n_chain = n;
	for (size_t i = 0; i < n; i++)
		m->chain[i] = blob(500 + i, (uint8_t)i);
	m->client_time_ms = 1790000000123;
	for (size_t i = 0; i < FLEET_ES256_SIG_LEN; i++)
		m->sig[i] = (uint8_t)(0x80 + i);
}

static void sample_signed(struct fleet_discovery_signed *m)
{
	memset(m, 0, sizeof(*m));
	m->body = blob(200, 1);
	m->cert = blob(600, 2);
	for (size_t i = 0; i < FLEET_ES256_SIG_LEN; i++)
		m->sig[i] = (uint8_t)i;
}

static void sample_body(struct fleet_discovery_assertion *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->site, "rack-a1");
	strcpy(m->signer, "node_site-1");
	m->epoch = 7;
	strcpy(m->mac, "aa:bb:cc:dd:ee:01");
	strcpy(m->ip, "10.0.0.5");
	strcpy(m->product_uuid, UUID);
	strcpy(m->workflow, "boot.ramdisk_1");
	m->issued_at = 1790000000;
	m->not_after = 1790000600;
}

static void sample_renew(struct fleet_renew_request *m)
{
	memset(m, 0, sizeof(*m));
	m->cert = blob(600, 5);
	m->csr = blob(300, 6);
	for (size_t i = 0; i < FLEET_ES256_SIG_LEN; i++)
		m->sig[i] = (uint8_t)(0xff - i);
}

static void pop_eq(const struct fleet_x509pop_evidence *a, const struct fleet_x509pop_evidence *b)
{
	assert_string_equal(a->node_id, b->node_id);
	assert_int_equal(a->n_chain, b->n_chain);
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		bytes_eq(&a->chain[i], &b->chain[i]);
	assert_int_equal(a->client_time_ms, b->client_time_ms);
	assert_memory_equal(a->sig, b->sig, FLEET_ES256_SIG_LEN);
}

static void body_eq(const struct fleet_discovery_assertion *a,
		    const struct fleet_discovery_assertion *b)
{
	assert_string_equal(a->site, b->site);
	assert_string_equal(a->signer, b->signer);
	assert_int_equal(a->epoch, b->epoch);
	assert_string_equal(a->mac, b->mac);
	assert_string_equal(a->ip, b->ip);
	assert_string_equal(a->product_uuid, b->product_uuid);
	assert_string_equal(a->workflow, b->workflow);
	assert_int_equal(a->issued_at, b->issued_at);
	assert_int_equal(a->not_after, b->not_after);
}

/* encode a, decode, compare, encode again to the same bytes (JE3). */
#define ROUNDTRIP(type, fn, fr, eq, a, e1)                                                 \
	do {                                                                               \
		struct type b_;                                                            \
		struct fleet_errctx ec_ = {0};                                             \
		struct fleet_buf e2_;                                                      \
		fb_init(&e2_);                                                             \
		fb_reset(e1);                                                              \
		assert_int_equal(fn##_encode(a, e1), FLEET_OK);                            \
		if (fn##_decode((e1)->data, (e1)->len, &b_, &ec_) != FLEET_OK)             \
			fail_msg("decode: %s", ec_.detail);                                \
		eq(a, &b_);                                                                \
		assert_int_equal(fn##_encode(&b_, &e2_), FLEET_OK);                        \
		same_bytes(e1, &e2_);                                                      \
		fr(&b_);                                                                   \
		fb_free(&e2_);                                                             \
	} while (0)

static void signed_eq(const struct fleet_discovery_signed *a, const struct fleet_discovery_signed *b)
{
	bytes_eq(&a->body, &b->body);
	bytes_eq(&a->cert, &b->cert);
	assert_memory_equal(a->sig, b->sig, FLEET_ES256_SIG_LEN);
}

static void renew_eq(const struct fleet_renew_request *a, const struct fleet_renew_request *b)
{
	bytes_eq(&a->cert, &b->cert);
	bytes_eq(&a->csr, &b->csr);
	assert_memory_equal(a->sig, b->sig, FLEET_ES256_SIG_LEN);
}

static void body_noop(struct fleet_discovery_assertion *m)
{
	(void)m;
}

static void test_roundtrips(void **state)
{
	struct fleet_x509pop_evidence p;
	struct fleet_discovery_signed d;
	struct fleet_discovery_assertion a;
	struct fleet_renew_request r;
	struct fleet_buf b;
	(void)state;
	fb_init(&b);
	for (size_t n = 1; n <= FLEET_JOIN_MAX_CHAIN; n++) {
		sample_pop(&p, n);
		ROUNDTRIP(fleet_x509pop_evidence, fleet_x509pop, fleet_x509pop_free, pop_eq, &p, &b);
		p.client_time_ms = 0;
		ROUNDTRIP(fleet_x509pop_evidence, fleet_x509pop, fleet_x509pop_free, pop_eq, &p, &b);
		p.client_time_ms = FLEET_JOIN_MAX_NOT_AFTER * 1000;
		ROUNDTRIP(fleet_x509pop_evidence, fleet_x509pop, fleet_x509pop_free, pop_eq, &p, &b);
		fleet_x509pop_free(&p);
	}
	/* canonical: compact, the header's key order */
	memset(&p, 0, sizeof(p));
	strcpy(p.node_id, "node_01k");
	p.n_chain = 1;
	p.chain[0] = blob(3, 0);
	p.client_time_ms = 1790000000000;
	ROUNDTRIP(fleet_x509pop_evidence, fleet_x509pop, fleet_x509pop_free, pop_eq, &p, &b);
	buf_is(&b, "{\"v\":1,\"nodeId\":\"node_01k\",\"chain\":[\"AAcO\"],"
		   "\"clientTime\":1790000000000,\"sig\":\"" SIG64 "\"}");
	fleet_x509pop_free(&p);

	sample_signed(&d);
	ROUNDTRIP(fleet_discovery_signed, fleet_discovery_signed, fleet_discovery_signed_free,
		  signed_eq, &d, &b);
	fleet_discovery_signed_free(&d);
	d.body = blob(3, 0);
	d.cert = blob(3, 0x30);
	ROUNDTRIP(fleet_discovery_signed, fleet_discovery_signed, fleet_discovery_signed_free,
		  signed_eq, &d, &b);
	buf_is(&b, "{\"v\":1,\"assertion\":\"AAcO\",\"cert\":\"MDc-\",\"sig\":\"" SIG64 "\"}");
	fleet_discovery_signed_free(&d);

	sample_body(&a);
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);
	buf_is(&b, BODY_OK);
	/* absent optionals omitted, each alone */
	a.ip[0] = '\0';
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);
	a.product_uuid[0] = '\0';
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);
	a.workflow[0] = '\0';
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);
	memset(&a, 0, sizeof(a));
	strcpy(a.site, "s");
	strcpy(a.signer, "n");
	a.epoch = 1;
	strcpy(a.mac, "aa:bb:cc:dd:ee:01");
	a.issued_at = a.not_after = 1;
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);
	buf_is(&b, BODY_LEAST);
	a.epoch = 1LL << 53;
	a.issued_at = a.not_after = FLEET_JOIN_MAX_NOT_AFTER;
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);

	sample_renew(&r);
	ROUNDTRIP(fleet_renew_request, fleet_renew_request, fleet_renew_request_free, renew_eq, &r,
		  &b);
	fleet_renew_request_free(&r);
	r.cert = blob(3, 0);
	r.csr = blob(3, 0x30);
	ROUNDTRIP(fleet_renew_request, fleet_renew_request, fleet_renew_request_free, renew_eq, &r,
		  &b);
	buf_is(&b, "{\"v\":1,\"cert\":\"AAcO\",\"csr\":\"MDc-\",\"sig\":\"" SIG64 "\"}");
	fleet_renew_request_free(&r);

	/* the largest of each fits its whole-message cap (JE1's caps are
	 * above what the encoders write) */
	memset(&p, 0, sizeof(p));
	memset(p.node_id, 'n', FLEET_JOIN_MAX_ID);
	p.n_chain = FLEET_JOIN_MAX_CHAIN;
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		p.chain[i] = blob(FLEET_JOIN_MAX_CERT, (uint8_t)i);
	p.client_time_ms = FLEET_JOIN_MAX_NOT_AFTER * 1000;
	ROUNDTRIP(fleet_x509pop_evidence, fleet_x509pop, fleet_x509pop_free, pop_eq, &p, &b);
	assert_true(b.len <= FLEET_JOIN_MAX_ATTESTATION);
	fleet_x509pop_free(&p);
	d.body = blob(FLEET_EVIDENCE_MAX_BODY, 1);
	d.cert = blob(FLEET_JOIN_MAX_CERT, 2);
	ROUNDTRIP(fleet_discovery_signed, fleet_discovery_signed, fleet_discovery_signed_free,
		  signed_eq, &d, &b);
	assert_true(b.len <= FLEET_JOIN_MAX_ATTESTATION);
	fleet_discovery_signed_free(&d);
	memset(&a, 0, sizeof(a));
	memset(a.site, 's', FLEET_EVIDENCE_SITE_MAX);
	memset(a.signer, 'n', FLEET_JOIN_MAX_ID);
	a.epoch = 1LL << 53;
	strcpy(a.mac, "aa:bb:cc:dd:ee:01");
	memset(a.ip, 'f', FLEET_EVIDENCE_IP_MAX);
	strcpy(a.product_uuid, UUID);
	memset(a.workflow, 'w', FLEET_EVIDENCE_WORKFLOW_MAX);
	a.issued_at = a.not_after = FLEET_JOIN_MAX_NOT_AFTER;
	ROUNDTRIP(fleet_discovery_assertion, fleet_discovery_body, body_noop, body_eq, &a, &b);
	assert_true(b.len <= FLEET_EVIDENCE_MAX_BODY);
	r.cert = blob(FLEET_JOIN_MAX_CERT, 1);
	r.csr = blob(FLEET_JOIN_MAX_CSR, 2);
	ROUNDTRIP(fleet_renew_request, fleet_renew_request, fleet_renew_request_free, renew_eq, &r,
		  &b);
	assert_true(b.len <= FLEET_JOIN_MAX_REQUEST);
	fleet_renew_request_free(&r);
	fb_free(&b);
}

/* Encoders refuse (INVALID_ARG, out unchanged) what decoders refuse. */
static void test_je3_encoders(void **state)
{
	struct fleet_x509pop_evidence p, tp;
	struct fleet_discovery_signed d, td;
	struct fleet_discovery_assertion a, ta;
	struct fleet_renew_request r, tr;
	struct fleet_wire_bytes none = {0}, big;
	struct fleet_buf out;
	(void)state;
	fb_init(&out);
	fb_put(&out, "x", 1); /* out unchanged: not emptied, not appended to */
#define REFUSED(call)                                                  \
	do {                                                           \
		assert_int_equal(call, FLEET_E_INVALID_ARG);           \
		assert_int_equal(out.len, 1);                          \
	} while (0)
#define POP_CASE(stmt)                                            \
	do {                                                      \
		tp = p;                                           \
		stmt;                                             \
		REFUSED(fleet_x509pop_encode(&tp, &out));         \
	} while (0)
	sample_pop(&p, 2);
	POP_CASE(tp.node_id[0] = '\0');
	POP_CASE(strcpy(tp.node_id, "Node"));
	POP_CASE(strcpy(tp.node_id, "node.1"));
	POP_CASE(memset(tp.node_id, 'n', sizeof(tp.node_id))); /* no NUL within the cap */
	POP_CASE(tp.n_chain = 0);
	POP_CASE(tp.n_chain = FLEET_JOIN_MAX_CHAIN + 1);
	POP_CASE(tp.n_chain = 1); /* an entry past n_chain */
	POP_CASE(tp.n_chain = 3); /* an empty entry within it */
	POP_CASE(tp.chain[1] = none);
	POP_CASE(tp.chain[1].len = 0);
	POP_CASE(tp.chain[1].len = FLEET_JOIN_MAX_CERT + 1);
	POP_CASE(tp.client_time_ms = -1);
	POP_CASE(tp.client_time_ms = FLEET_JOIN_MAX_NOT_AFTER * 1000 + 1);
	REFUSED(fleet_x509pop_encode(NULL, &out));
	fleet_x509pop_free(&p);

#define SIGNED_CASE(stmt)                                         \
	do {                                                      \
		td = d;                                           \
		stmt;                                             \
		REFUSED(fleet_discovery_signed_encode(&td, &out)); \
	} while (0)
	sample_signed(&d);
	SIGNED_CASE(td.body = none);
	SIGNED_CASE(td.body.len = 0);
	SIGNED_CASE(td.cert = none);
	big = blob(FLEET_EVIDENCE_MAX_BODY + 1, 0);
	SIGNED_CASE(td.body = big);
	free(big.data);
	big = blob(FLEET_JOIN_MAX_CERT + 1, 0);
	SIGNED_CASE(td.cert = big);
	free(big.data);
	REFUSED(fleet_discovery_signed_encode(NULL, &out));
	fleet_discovery_signed_free(&d);

#define BODY_CASE(stmt)                                           \
	do {                                                      \
		ta = a;                                           \
		stmt;                                             \
		REFUSED(fleet_discovery_body_encode(&ta, &out));  \
	} while (0)
	sample_body(&a);
	BODY_CASE(ta.site[0] = '\0');
	BODY_CASE(strcpy(ta.site, "rack_a"));
	BODY_CASE(memset(ta.site, 's', sizeof(ta.site)));
	BODY_CASE(ta.signer[0] = '\0');
	BODY_CASE(strcpy(ta.signer, "Signer"));
	BODY_CASE(ta.epoch = 0);
	BODY_CASE(ta.epoch = (1LL << 53) + 1);
	BODY_CASE(ta.mac[0] = '\0');
	BODY_CASE(strcpy(ta.mac, "AA:bb:cc:dd:ee:01"));
	BODY_CASE(memset(ta.mac, 'a', sizeof(ta.mac)));
	BODY_CASE(strcpy(ta.ip, "10.0.0.5/24"));
	BODY_CASE(memset(ta.ip, '1', sizeof(ta.ip)));
	BODY_CASE(strcpy(ta.product_uuid, "4C4C4544-0042-3510-8052-B4C04F4E3232"));
	BODY_CASE(strcpy(ta.product_uuid, "not-a-uuid"));
	BODY_CASE(strcpy(ta.workflow, "Boot"));
	BODY_CASE(memset(ta.workflow, 'w', sizeof(ta.workflow)));
	BODY_CASE(ta.issued_at = 0);
	BODY_CASE(ta.not_after = FLEET_JOIN_MAX_NOT_AFTER + 1);
	BODY_CASE(ta.not_after = ta.issued_at - 1);
	REFUSED(fleet_discovery_body_encode(NULL, &out));

#define RENEW_CASE(stmt)                                          \
	do {                                                      \
		tr = r;                                           \
		stmt;                                             \
		REFUSED(fleet_renew_request_encode(&tr, &out));   \
	} while (0)
	sample_renew(&r);
	RENEW_CASE(tr.cert = none);
	RENEW_CASE(tr.csr = none);
	RENEW_CASE(tr.csr.len = 0);
	RENEW_CASE(tr.cert.len = FLEET_JOIN_MAX_CERT + 1);
	big = blob(FLEET_JOIN_MAX_CSR + 1, 0);
	RENEW_CASE(tr.csr = big);
	free(big.data);
	REFUSED(fleet_renew_request_encode(NULL, &out));
	fleet_renew_request_free(&r);
	fb_free(&out);
}

/* ---- JE4 ---------------------------------------------------------------- */

static void input_is(const struct fleet_buf *b, const uint8_t *want, size_t n)
{
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, want, n);
}

/* The signing inputs' exact bytes, written out by hand. */
static void test_je4_signing_inputs(void **state)
{
	static const uint8_t h[32] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
		0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
		0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	};
	/* "x509pop" 0x00 || h || 8 "node_01k" || be64(1790000000000 = 0x1a0c4506c00) */
	static const uint8_t pop[] = {
		'x',  '5',  '0',  '9',  'p',  'o',  'p',  0x00,				/* purpose */
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,	/* csr hash */
		0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
		0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
		0x08, 'n',  'o',  'd',  'e',  '_',  '0',  '1',  'k',			/* node id */
		0x00, 0x00, 0x01, 0xa0, 0xc4, 0x50, 0x6c, 0x00,				/* time */
	};
	/* "renew" 0x00 || SHA-256("abc") || SHA-256(FIPS 180-2's two-block message) */
	static const char leaf[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	static const uint8_t renew[] = {
		'r',  'e',  'n',  'e',  'w',  0x00,
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
		0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
		0xf2, 0x00, 0x15, 0xad,
		0x24, 0x8d, 0x6a, 0x61, 0xd2, 0x06, 0x38, 0xb8, 0xe5, 0xc0, 0x26, 0x93, 0x0c, 0x3e,
		0x60, 0x39, 0xa3, 0x3c, 0xe4, 0x59, 0x64, 0xff, 0x21, 0x67, 0xf6, 0xec, 0xed, 0xd4,
		0x19, 0xdb, 0x06, 0xc1,
	};
	/* "discovery-assertion" 0x00 || the body as carried */
	static const uint8_t disc[] = {
		'd', 'i', 's', 'c', 'o', 'v', 'e', 'r', 'y', '-', 'a', 's', 's', 'e', 'r', 't',
		'i', 'o', 'n', 0x00, '{', ' ', '}',
	};
	struct fleet_buf b;
	char id[FLEET_JOIN_MAX_ID + 2];
	(void)state;
	fb_init(&b);
	assert_int_equal(fleet_x509pop_signing_input(h, "node_01k", 1790000000000, &b), FLEET_OK);
	input_is(&b, pop, sizeof(pop));
	/* appended to what out holds */
	assert_int_equal(fleet_x509pop_signing_input(h, "node_01k", 1790000000000, &b), FLEET_OK);
	assert_int_equal(b.len, 2 * sizeof(pop));
	assert_memory_equal(b.data + sizeof(pop), pop, sizeof(pop));
	fb_reset(&b);
	/* a 63-byte id: its length byte is 63; the time's bytes follow it */
	memset(id, 'n', FLEET_JOIN_MAX_ID);
	id[FLEET_JOIN_MAX_ID] = '\0';
	assert_int_equal(fleet_x509pop_signing_input(h, id, 0, &b), FLEET_OK);
	assert_int_equal(b.len, 8 + 32 + 1 + 63 + 8);
	assert_int_equal(b.data[40], 63);
	assert_true(all_zero(b.data + 104, 8));
	fb_reset(&b);
	/* what JE2 refuses is never signed */
	id[FLEET_JOIN_MAX_ID] = 'n';
	id[FLEET_JOIN_MAX_ID + 1] = '\0';
	assert_int_equal(fleet_x509pop_signing_input(h, id, 0, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(h, "", 0, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(h, "Node", 0, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(h, "node.1", 0, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(h, NULL, 0, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(NULL, "n", 0, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(h, "n", -1, &b), FLEET_E_INVALID_ARG);
	assert_int_equal(
		fleet_x509pop_signing_input(h, "n", FLEET_JOIN_MAX_NOT_AFTER * 1000 + 1, &b),
		FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_x509pop_signing_input(h, "n", 0, NULL), FLEET_E_INVALID_ARG);
	assert_int_equal(b.len, 0);

	assert_int_equal(fleet_renew_signing_input((const uint8_t *)"abc", 3,
						   (const uint8_t *)leaf, strlen(leaf), &b),
			 FLEET_OK);
	input_is(&b, renew, sizeof(renew));
	fb_reset(&b);
	assert_int_equal(fleet_renew_signing_input((const uint8_t *)"abc", 0,
						   (const uint8_t *)leaf, strlen(leaf), &b),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_renew_signing_input(NULL, 3, (const uint8_t *)leaf, strlen(leaf), &b),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_renew_signing_input((const uint8_t *)"abc", 3,
						   (const uint8_t *)leaf, 0, &b),
			 FLEET_E_INVALID_ARG);
	{
		struct fleet_wire_bytes big = blob(FLEET_JOIN_MAX_CERT + 1, 0);
		assert_int_equal(fleet_renew_signing_input(big.data, FLEET_JOIN_MAX_CSR + 1,
							   (const uint8_t *)leaf, 1, &b),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(fleet_renew_signing_input((const uint8_t *)"abc", 3, big.data,
							   FLEET_JOIN_MAX_CERT + 1, &b),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(fleet_renew_signing_input(big.data, FLEET_JOIN_MAX_CSR, big.data,
							   FLEET_JOIN_MAX_CERT, &b),
				 FLEET_OK);
		free(big.data);
	}
	fb_reset(&b);

	assert_int_equal(fleet_discovery_signing_input((const uint8_t *)"{ }", 3, &b), FLEET_OK);
	input_is(&b, disc, sizeof(disc));
	fb_reset(&b);
	assert_int_equal(fleet_discovery_signing_input((const uint8_t *)"{ }", 0, &b),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_discovery_signing_input(NULL, 3, &b), FLEET_E_INVALID_ARG);
	{
		struct fleet_wire_bytes big = blob(FLEET_EVIDENCE_MAX_BODY + 1, 0);
		assert_int_equal(fleet_discovery_signing_input(big.data, big.len, &b),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(b.len, 0);
		assert_int_equal(fleet_discovery_signing_input(big.data, big.len - 1, &b),
				 FLEET_OK);
		assert_int_equal(b.len, sizeof(FLEET_DISCOVERY_PURPOSE) + FLEET_EVIDENCE_MAX_BODY);
		free(big.data);
	}
	fb_free(&b);
}

/* ---- JE5 ---------------------------------------------------------------- */

/* r || s to DER, as OpenSSL verifies it. */
static size_t jose_to_der(const uint8_t sig[64], unsigned char **der)
{
	ECDSA_SIG *s = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *ss = BN_bin2bn(sig + 32, 32, NULL);
	assert_non_null(s);
	assert_int_equal(ECDSA_SIG_set0(s, r, ss), 1);
	*der = NULL;
	int n = i2d_ECDSA_SIG(s, der);
	assert_true(n > 0);
	ECDSA_SIG_free(s);
	return (size_t)n;
}

static int ossl_verify(EVP_PKEY *k, const uint8_t *msg, size_t len, const uint8_t sig[64])
{
	unsigned char *der;
	size_t n = jose_to_der(sig, &der);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k), 1);
	int r = EVP_DigestVerify(md, der, n, msg, len);
	EVP_MD_CTX_free(md);
	OPENSSL_free(der);
	ERR_clear_error();
	return r;
}

/* What verify refuses, for which reason, with OpenSSL's queue left empty. */
static void verify_refused(EVP_PKEY *k, const uint8_t *msg, size_t len, const uint8_t sig[64],
			   fleet_err want, const char *reason)
{
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_es256_verify(k, msg, len, sig, &ec), want);
	assert_non_null(ec.reason);
	assert_string_equal(ec.reason, reason);
	assert_int_equal(ERR_peek_error(), 0);
}

/* The order n of P-256, big-endian (SEC 2, 2.4.2). */
static const uint8_t N[32] = {
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

static void test_je5_es256(void **state)
{
	static const uint8_t msg[] = "renew\0the bytes a proof is over";
	EVP_PKEY *k = EVP_EC_gen("P-256"), *other = EVP_EC_gen("P-256");
	EVP_PKEY *p384 = EVP_EC_gen("P-384"), *rsa = EVP_RSA_gen(2048);
	struct fleet_errctx ec = {0};
	uint8_t sig[64], t[64];
	(void)state;
	assert_non_null(k);
	assert_non_null(other);
	assert_non_null(p384);
	assert_non_null(rsa);

	/* a round trip, and OpenSSL reads the same r || s as DER */
	assert_int_equal(fleet_es256_sign(k, msg, sizeof(msg), sig, &ec), FLEET_OK);
	assert_int_equal(fleet_es256_verify(k, msg, sizeof(msg), sig, &ec), FLEET_OK);
	assert_int_equal(ossl_verify(k, msg, sizeof(msg), sig), 1);
	assert_int_equal(ERR_peek_error(), 0);
	/* the empty message too */
	assert_int_equal(fleet_es256_sign(k, NULL, 0, t, &ec), FLEET_OK);
	assert_int_equal(fleet_es256_verify(k, NULL, 0, t, &ec), FLEET_OK);
	/* and OpenSSL's own DER signature, turned into r || s, verifies here */
	{
		unsigned char der[80];
		size_t n = sizeof(der);
		const unsigned char *p = der;
		const BIGNUM *r, *s;
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k), 1);
		assert_int_equal(EVP_DigestSign(md, der, &n, msg, sizeof(msg)), 1);
		EVP_MD_CTX_free(md);
		ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)n);
		assert_non_null(es);
		ECDSA_SIG_get0(es, &r, &s);
		assert_int_equal(BN_bn2binpad(r, t, 32), 32);
		assert_int_equal(BN_bn2binpad(s, t + 32, 32), 32);
		ECDSA_SIG_free(es);
		assert_int_equal(fleet_es256_verify(k, msg, sizeof(msg), t, &ec), FLEET_OK);
	}
	/* r or s short of 32 bytes is left-padded: sign until one is (1 in 128
	 * per signature), then both sides still agree */
	{
		bool padded_seen = false;
		for (int i = 0; i < 4000 && !padded_seen; i++) {
			assert_int_equal(fleet_es256_sign(k, msg, sizeof(msg), t, &ec), FLEET_OK);
			padded_seen = t[0] == 0 || t[32] == 0;
		}
		assert_true(padded_seen);
		assert_int_equal(fleet_es256_verify(k, msg, sizeof(msg), t, &ec), FLEET_OK);
		assert_int_equal(ossl_verify(k, msg, sizeof(msg), t), 1);
	}

	/* es256-key: another curve, RSA; for signing too */
	verify_refused(p384, msg, sizeof(msg), sig, FLEET_E_UNSUPPORTED, FLEET_ES256_REASON_KEY);
	verify_refused(rsa, msg, sizeof(msg), sig, FLEET_E_UNSUPPORTED, FLEET_ES256_REASON_KEY);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_es256_sign(p384, msg, sizeof(msg), t, &ec), FLEET_E_UNSUPPORTED);
	assert_string_equal(ec.reason, FLEET_ES256_REASON_KEY);
	assert_int_equal(ERR_peek_error(), 0);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_es256_sign(rsa, msg, sizeof(msg), t, &ec), FLEET_E_UNSUPPORTED);
	assert_string_equal(ec.reason, FLEET_ES256_REASON_KEY);
	assert_int_equal(ERR_peek_error(), 0);

	/* es256-signature: r = 0, s = 0, r = n, s = n, s > n, a flipped bit
	 * of the message or the signature, another key */
	memcpy(t, sig, 64);
	memset(t, 0, 32);
	verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	memcpy(t, sig, 64);
	memset(t + 32, 0, 32);
	verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	memcpy(t, sig, 64);
	memcpy(t, N, 32);
	verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	memcpy(t, sig, 64);
	memcpy(t + 32, N, 32);
	verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	memcpy(t, sig, 64);
	memset(t + 32, 0xff, 32);
	verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	/* r = n - 1 is in range: refused by the math, for the same reason */
	memcpy(t, sig, 64);
	memcpy(t, N, 32);
	t[31] -= 1;
	verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	for (size_t bit = 0; bit < 64 * 8; bit += 37) {
		memcpy(t, sig, 64);
		t[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		verify_refused(k, msg, sizeof(msg), t, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	}
	{
		uint8_t m2[sizeof(msg)];
		memcpy(m2, msg, sizeof(msg));
		m2[3] ^= 0x01;
		verify_refused(k, m2, sizeof(m2), sig, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
		verify_refused(k, msg, sizeof(msg) - 1, sig, FLEET_E_VERIFY,
			       FLEET_ES256_REASON_SIGNATURE);
	}
	verify_refused(other, msg, sizeof(msg), sig, FLEET_E_VERIFY, FLEET_ES256_REASON_SIGNATURE);
	/* a public half alone verifies; it cannot sign */
	{
		unsigned char *der = NULL;
		int n = i2d_PUBKEY(k, &der);
		const unsigned char *p = der;
		EVP_PKEY *pub = d2i_PUBKEY(NULL, &p, n);
		OPENSSL_free(der);
		assert_non_null(pub);
		assert_int_equal(fleet_es256_verify(pub, msg, sizeof(msg), sig, &ec), FLEET_OK);
		assert_int_not_equal(fleet_es256_sign(pub, msg, sizeof(msg), t, &ec), FLEET_OK);
		assert_int_equal(ERR_peek_error(), 0);
		EVP_PKEY_free(pub);
	}
	/* a caller's mistake */
	assert_int_equal(fleet_es256_verify(NULL, msg, sizeof(msg), sig, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_es256_verify(k, NULL, 5, sig, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_es256_verify(k, msg, sizeof(msg), NULL, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_es256_sign(NULL, msg, sizeof(msg), t, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_es256_sign(k, msg, sizeof(msg), NULL, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(ERR_peek_error(), 0);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(rsa);
}

/* ---- JE6 ---------------------------------------------------------------- */

static void test_je6_free(void **state)
{
	struct fleet_x509pop_evidence p;
	struct fleet_discovery_signed d;
	struct fleet_renew_request r;
	(void)state;
	sample_pop(&p, FLEET_JOIN_MAX_CHAIN);
	fleet_x509pop_free(&p);
	assert_true(all_zero(&p, sizeof(p)));
	fleet_x509pop_free(&p);
	fleet_x509pop_free(NULL);
	sample_signed(&d);
	fleet_discovery_signed_free(&d);
	assert_true(all_zero(&d, sizeof(d)));
	fleet_discovery_signed_free(&d);
	fleet_discovery_signed_free(NULL);
	sample_renew(&r);
	fleet_renew_request_free(&r);
	assert_true(all_zero(&r, sizeof(r)));
	fleet_renew_request_free(&r);
	fleet_renew_request_free(NULL);
}

/* The fuzz target's seeds are valid messages of their kind (kind % 4), so
 * fuzzing starts inside the accepted language. */
static void test_corpus_seeds(void **state)
{
	static const char dir[] = FLEET_SOURCE_DIR "/tests/fuzz/corpus/fuzz_join_evidence";
	bool seen[KINDS] = {false};
	struct dirent *de;
	DIR *d = opendir(dir);
	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[1024];
		struct fleet_buf b;
		struct fleet_errctx ec;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fb_init(&b);
		read_file_or_fail(path, &b);
		assert_true(b.len > 1);
		int k = b.data[0] % KINDS;
		if (decode_n((enum kind)k, b.data + 1, b.len - 1, &ec) != FLEET_OK)
			fail_msg("seed %s refused: %s", de->d_name, ec.detail);
		seen[k] = true;
		fb_free(&b);
	}
	closedir(d);
	for (int k = 0; k < KINDS; k++)
		assert_true(seen[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_je1_whole_or_nothing),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_je2_values),
		cmocka_unit_test(test_roundtrips),
		cmocka_unit_test(test_je3_encoders),
		cmocka_unit_test(test_je4_signing_inputs),
		cmocka_unit_test(test_je5_es256),
		cmocka_unit_test(test_je6_free),
		cmocka_unit_test(test_corpus_seeds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
