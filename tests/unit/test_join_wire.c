/*
 * test_join_wire.c: the join service's messages (lib/join_wire.h, JW1..JW14).
 * Each kind round-trips (encode, decode, compare, encode again to the same
 * bytes); then valid messages changed in one place are refused with the
 * field named, and encoders refuse what decoders refuse.
 */
#include "tests/testutil.h"
#include "tests/unit/wire_test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/ca.h"
#include "lib/join_wire.h"

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UUID "4c4c4544-0042-3510-8052-b4c04f4e3232"

/* A MAC of its own for each i < 256. */
static void mac_of(char *dst, size_t i)
{
	snprintf(dst, FLEET_WIRE_MAC_LEN + 1, "02:00:00:00:00:%02x", (unsigned)(i & 0xff));
}

enum kind { REQ, BODY, ENV };

/* Decode s as kind k; return the error, ec filled. */
static fleet_err decode(enum kind k, const char *s, struct fleet_errctx *ec)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = strlen(s);
	fleet_err e;
	memset(ec, 0, sizeof(*ec));
	if (k == REQ) {
		struct fleet_join_request m;
		e = fleet_join_request_decode(p, n, &m, ec);
		fleet_join_request_free(&m);
	} else if (k == BODY) {
		struct fleet_join_response m;
		e = fleet_join_body_decode(p, n, &m, ec);
		fleet_join_response_free(&m);
	} else {
		struct fleet_join_envelope m;
		e = fleet_join_envelope_decode(p, n, &m, ec);
		fleet_join_envelope_free(&m);
	}
	return e;
}

/* s is refused as kind k with want, and ec.detail names field (JW1). */
static void refused(enum kind k, const char *s, fleet_err want, const char *field)
{
	struct fleet_errctx ec;
	fleet_err e = decode(k, s, &ec);
	if (e != want)
		fail_msg("%s: got %s, want %s (%s)", s, fleet_err_str(e), fleet_err_str(want),
			 ec.detail);
	if (!strstr(ec.detail, field))
		fail_msg("%s: detail \"%s\" does not name %s", s, ec.detail, field);
}

/* orig with from -> to is refused. */
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
		fail_msg("%s refused: %s", s, ec.detail);
}

static void edit_accepted(enum kind k, const char *orig, const char *from, const char *to)
{
	char *s = edited(orig, from, to);
	accepted(k, s);
	free(s);
}

/* ---- request ------------------------------------------------------------ */

static void sample_request(struct fleet_join_request *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->attestor, "discovery");
	m->has_token = true;
	m->token = blob(200, 1);
	m->has_attestation = true;
	m->attestation = blob(700, 2);
	m->csr = blob(400, 3);
	m->role = FLEET_JOIN_ROLE_RAMDISK;
	m->n_macs = 2;
	strcpy(m->macs[0], "aa:bb:cc:dd:ee:01");
	strcpy(m->macs[1], "aa:bb:cc:dd:ee:02");
	strcpy(m->product_uuid, UUID);
}

static void request_eq(const struct fleet_join_request *a, const struct fleet_join_request *b)
{
	assert_string_equal(a->attestor, b->attestor);
	assert_int_equal(a->has_token, b->has_token);
	bytes_eq(&a->token, &b->token);
	assert_int_equal(a->has_attestation, b->has_attestation);
	bytes_eq(&a->attestation, &b->attestation);
	bytes_eq(&a->csr, &b->csr);
	assert_int_equal(a->role, b->role);
	assert_int_equal(a->n_macs, b->n_macs);
	for (size_t i = 0; i < a->n_macs; i++)
		assert_string_equal(a->macs[i], b->macs[i]);
	assert_string_equal(a->product_uuid, b->product_uuid);
}

/* encode a, decode, compare, encode again to the same bytes (JW12). */
static void request_roundtrip(const struct fleet_join_request *a, struct fleet_buf *e1)
{
	struct fleet_join_request b;
	struct fleet_errctx ec = {0};
	struct fleet_buf e2;
	fb_init(&e2);
	fb_reset(e1);
	assert_int_equal(fleet_join_request_encode(a, e1), FLEET_OK);
	if (fleet_join_request_decode(e1->data, e1->len, &b, &ec) != FLEET_OK)
		fail_msg("decode: %s", ec.detail);
	request_eq(a, &b);
	assert_int_equal(fleet_join_request_encode(&b, &e2), FLEET_OK);
	same_bytes(e1, &e2);
	fleet_join_request_free(&b);
	fb_free(&e2);
}

/* JW4, JW5, JW12 */
static void test_request_roundtrip(void **state)
{
	struct fleet_join_request a, m = {0};
	struct fleet_buf b;
	(void)state;
	fb_init(&b);
	sample_request(&a);
	request_roundtrip(&a, &b);
	/* every role */
	for (int r = FLEET_JOIN_ROLE_NODE; r <= FLEET_JOIN_ROLE_RAMDISK; r++) {
		a.role = (enum fleet_join_role)r;
		request_roundtrip(&a, &b);
	}
	fleet_join_request_free(&a);
	/* the least request: join-token's "", a CSR, a role; no empty claims */
	m.csr = blob(3, 0);
	m.role = FLEET_JOIN_ROLE_NODE;
	request_roundtrip(&m, &b);
	buf_is(&b, "{\"v\":1,\"attestor\":\"\",\"csr\":\"AAcO\",\"role\":\"node\"}");
	/* a token alone; claims of a UUID alone */
	m.has_token = true;
	m.token = blob(FLEET_JOIN_MAX_TOKEN, 9);
	strcpy(m.product_uuid, UUID);
	request_roundtrip(&m, &b);
	fleet_join_request_free(&m);
	/* absent claims, {} and "macs":[] read alike (JW5) */
	accepted(REQ, "{\"v\":1,\"attestor\":\"\",\"csr\":\"AAcO\",\"role\":\"node\",\"claims\":{}}");
	accepted(REQ, "{\"v\":1,\"attestor\":\"\",\"csr\":\"AAcO\",\"role\":\"node\","
		      "\"claims\":{\"macs\":[]}}");
	/* 16 MACs is the cap, not over it */
	sample_request(&a);
	a.n_macs = FLEET_JOIN_MAX_MACS;
	for (size_t i = 0; i < a.n_macs; i++)
		mac_of(a.macs[i], i);
	request_roundtrip(&a, &b);
	fleet_join_request_free(&a);
	fb_free(&b);
}

static const char REQ_OK[] =
	"{\"v\":1,\"attestor\":\"discovery\",\"token\":\"AAEC\",\"attestation\":\"AAEC\","
	"\"csr\":\"AAEC\",\"role\":\"ramdisk\",\"claims\":{\"macs\":[\"aa:bb:cc:dd:ee:01\","
	"\"aa:bb:cc:dd:ee:02\"],\"product_uuid\":\"" UUID "\"}}";

/* JW2, JW3, JW4 */
static void test_request_refusals(void **state)
{
	(void)state;
	accepted(REQ, REQ_OK);
	/* the JSON layer */
	edit_refused(REQ, REQ_OK, "{\"v\":1,", "{\"v\":1,\"x\":1,", FLEET_E_MALFORMED,
		     "unknown field");
	edit_refused(REQ, REQ_OK, "\"csr\":\"AAEC\"", "\"csr\":\"AAEC\",\"csr\":\"AAEC\"",
		     FLEET_E_MALFORMED, "duplicate");
	edit_refused(REQ, REQ_OK, "\"v\":1", "\"v\":2", FLEET_E_MALFORMED, "v");
	edit_refused(REQ, REQ_OK, "\"v\":1", "\"v\":\"1\"", FLEET_E_MALFORMED, "v");
	edit_refused(REQ, REQ_OK, "\"v\":1,", "", FLEET_E_MALFORMED, "v");
	refused(REQ, "[1]", FLEET_E_MALFORMED, "object");
	refused(REQ, "", FLEET_E_MALFORMED, "JSON");
	/* missing */
	edit_refused(REQ, REQ_OK, "\"csr\":\"AAEC\",", "", FLEET_E_MALFORMED, "csr");
	edit_refused(REQ, REQ_OK, "\"role\":\"ramdisk\",", "", FLEET_E_MALFORMED, "role");
	edit_refused(REQ, REQ_OK, "\"attestor\":\"discovery\",", "", FLEET_E_MALFORMED,
		     "attestor");
	/* base64url: padding, another alphabet, a bad length, empty, not a string */
	edit_refused(REQ, REQ_OK, "\"csr\":\"AAEC\"", "\"csr\":\"AAE=\"", FLEET_E_MALFORMED, "csr");
	edit_refused(REQ, REQ_OK, "\"csr\":\"AAEC\"", "\"csr\":\"AA+/\"", FLEET_E_MALFORMED, "csr");
	edit_refused(REQ, REQ_OK, "\"csr\":\"AAEC\"", "\"csr\":\"\"", FLEET_E_MALFORMED, "csr");
	edit_refused(REQ, REQ_OK, "\"csr\":\"AAEC\"", "\"csr\":null", FLEET_E_MALFORMED, "csr");
	edit_refused(REQ, REQ_OK, "\"token\":\"AAEC\"", "\"token\":\"\"", FLEET_E_MALFORMED,
		     "token");
	edit_refused(REQ, REQ_OK, "\"token\":\"AAEC\"", "\"token\":\"AAF\"", FLEET_E_MALFORMED,
		     "token");
	edit_refused(REQ, REQ_OK, "\"attestation\":\"AAEC\"", "\"attestation\":\"A\"",
		     FLEET_E_MALFORMED, "attestation");
	/* the attestor's id */
	edit_refused(REQ, REQ_OK, "discovery", "Discovery", FLEET_E_MALFORMED, "attestor");
	edit_refused(REQ, REQ_OK, "discovery", "dis_covery", FLEET_E_MALFORMED, "attestor");
	edit_refused(REQ, REQ_OK, "discovery", "abcdefghijklmnopqrstuvwxyz012345", FLEET_E_TOO_LARGE,
		     "attestor");
	edit_accepted(REQ, REQ_OK, "discovery", "abcdefghijklmnopqrstuvwxyz01234"); /* 31 */
	/* the role */
	edit_refused(REQ, REQ_OK, "\"ramdisk\"", "\"admin\"", FLEET_E_MALFORMED, "role");
	edit_refused(REQ, REQ_OK, "\"ramdisk\"", "\"Node\"", FLEET_E_MALFORMED, "role");
	edit_refused(REQ, REQ_OK, "\"ramdisk\"", "\"\"", FLEET_E_MALFORMED, "role");
	edit_refused(REQ, REQ_OK, "\"ramdisk\"", "1", FLEET_E_MALFORMED, "role");
	edit_refused(REQ, REQ_OK, "\"ramdisk\"", "\"ramdisk-and-then-some-more\"",
		     FLEET_E_MALFORMED, "role");
}

/* JW5 */
static void test_claims_refusals(void **state)
{
	static const char P[] = "{\"v\":1,\"attestor\":\"\",\"csr\":\"AAEC\",\"role\":\"node\","
				"\"claims\":";
	static const struct {
		const char *claims;
		fleet_err want;
		const char *field;
	} bad[] = {
		{"[]", FLEET_E_MALFORMED, "claims"},
		{"null", FLEET_E_MALFORMED, "claims"},
		{"{\"x\":1}", FLEET_E_MALFORMED, "claims: unknown field"},
		{"{\"macs\":[],\"macs\":[]}", FLEET_E_MALFORMED, "duplicate"},
		{"{\"macs\":\"aa:bb:cc:dd:ee:01\"}", FLEET_E_MALFORMED, "claims.macs"},
		{"{\"macs\":[\"AA:bb:cc:dd:ee:01\"]}", FLEET_E_MALFORMED, "claims.macs[0]"},
		{"{\"macs\":[\"aa:bb:cc:dd:ee:0F\"]}", FLEET_E_MALFORMED, "claims.macs[0]"},
		{"{\"macs\":[\"aa-bb-cc-dd-ee-01\"]}", FLEET_E_MALFORMED, "claims.macs[0]"},
		{"{\"macs\":[\"aa:bb:cc:dd:ee:0\"]}", FLEET_E_MALFORMED, "claims.macs[0]"},
		{"{\"macs\":[\"aa:bb:cc:dd:ee:012\"]}", FLEET_E_TOO_LARGE, "claims.macs[0]"},
		{"{\"macs\":[1]}", FLEET_E_MALFORMED, "claims.macs[0]"},
		{"{\"macs\":[\"aa:bb:cc:dd:ee:01\",\"aa:bb:cc:dd:ee:02\",\"aa:bb:cc:dd:ee:01\"]}",
		 FLEET_E_MALFORMED, "claims.macs[2]: repeated"},
		{"{\"product_uuid\":\"4C4C4544-0042-3510-8052-B4C04F4E3232\"}", FLEET_E_MALFORMED,
		 "claims.product_uuid"},
		{"{\"product_uuid\":\"\"}", FLEET_E_MALFORMED, "claims.product_uuid"},
		{"{\"product_uuid\":\"4c4c454400423510805200b4c04f4e323232\"}", FLEET_E_MALFORMED,
		 "claims.product_uuid"},
		{"{\"product_uuid\":\"" UUID "0\"}", FLEET_E_TOO_LARGE, "claims.product_uuid"},
		{"{\"product_uuid\":\"4c4c4544-0042-3510-8052-b4c04f4e323\"}", FLEET_E_MALFORMED,
		 "claims.product_uuid"},
	};
	char s[1024];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(s, sizeof(s), "%s%s}", P, bad[i].claims);
		refused(REQ, s, bad[i].want, bad[i].field);
	}
	/* 17 MACs (distinct, well-formed) are over the cap; 16 are not */
	for (int n = FLEET_JOIN_MAX_MACS; n <= FLEET_JOIN_MAX_MACS + 1; n++) {
		size_t at = (size_t)snprintf(s, sizeof(s), "%s{\"macs\":[", P);
		for (int i = 0; i < n; i++)
			at += (size_t)snprintf(s + at, sizeof(s) - at, "%s\"02:00:00:00:00:%02x\"",
					       i ? "," : "", i);
		snprintf(s + at, sizeof(s) - at, "]}}");
		if (n == FLEET_JOIN_MAX_MACS)
			accepted(REQ, s);
		else
			refused(REQ, s, FLEET_E_TOO_LARGE, "claims.macs");
	}
}

/* ---- body --------------------------------------------------------------- */

static const char J[] = "{\"v\":1,\"status\":\"joined\",\"node_id\":\"node_01k-x\","
			"\"chain\":[\"AAEC\",\"AAED\"],\"csr_sha256\":\"" H64 "\"}";
static const char P[] = "{\"v\":1,\"status\":\"pending\",\"request_id\":\"jr_01\","
			"\"retry_after_seconds\":30,\"csr_sha256\":\"" H64 "\"}";
static const char C[] = "{\"v\":1,\"status\":\"challenge\",\"attestor\":\"tpm\",\"payload\":"
			"\"AAEC\",\"not_after\":1790000000,\"csr_sha256\":\"" H64 "\"}";
static const char D[] = "{\"v\":1,\"status\":\"denied\"}";

static void body_eq(const struct fleet_join_response *a, const struct fleet_join_response *b)
{
	assert_int_equal(a->status, b->status);
	assert_string_equal(a->csr_sha256, b->csr_sha256);
	assert_string_equal(a->node_id, b->node_id);
	assert_int_equal(a->n_chain, b->n_chain);
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		bytes_eq(&a->chain[i], &b->chain[i]);
	assert_string_equal(a->deferral.request_id, b->deferral.request_id);
	assert_int_equal(a->deferral.retry_after_seconds, b->deferral.retry_after_seconds);
	assert_string_equal(a->deferral.attestor, b->deferral.attestor);
	bytes_eq(&a->deferral.payload, &b->deferral.payload);
	assert_int_equal(a->deferral.not_after, b->deferral.not_after);
}

static void body_roundtrip(const struct fleet_join_response *a, struct fleet_buf *e1)
{
	struct fleet_join_response b;
	struct fleet_errctx ec = {0};
	struct fleet_buf e2;
	fb_init(&e2);
	fb_reset(e1);
	assert_int_equal(fleet_join_body_encode(a, e1), FLEET_OK);
	if (fleet_join_body_decode(e1->data, e1->len, &b, &ec) != FLEET_OK)
		fail_msg("decode: %s", ec.detail);
	body_eq(a, &b);
	assert_int_equal(fleet_join_body_encode(&b, &e2), FLEET_OK);
	same_bytes(e1, &e2);
	fleet_join_response_free(&b);
	fb_free(&e2);
}

static void sample_joined(struct fleet_join_response *m, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->status = FLEET_JOIN_JOINED;
	strcpy(m->csr_sha256, H64);
	strcpy(m->node_id, "node_01k");
	m->n_chain = n;
	for (size_t i = 0; i < n; i++)
		m->chain[i] = blob(600 + i, (uint8_t)i);
}

static void sample_pending(struct fleet_join_response *m)
{
	memset(m, 0, sizeof(*m));
	m->status = FLEET_JOIN_PENDING;
	strcpy(m->csr_sha256, H64);
	strcpy(m->deferral.request_id, "jr_01k");
	m->deferral.retry_after_seconds = 30;
}

static void sample_challenge(struct fleet_join_response *m)
{
	memset(m, 0, sizeof(*m));
	m->status = FLEET_JOIN_CHALLENGE;
	strcpy(m->csr_sha256, H64);
	strcpy(m->deferral.attestor, "tpm");
	m->deferral.payload = blob(300, 4);
	m->deferral.not_after = 1790000000;
}

/* JW6, JW7, JW12 */
static void test_body_roundtrip(void **state)
{
	struct fleet_join_response m;
	struct fleet_buf b;
	(void)state;
	fb_init(&b);
	for (size_t n = 1; n <= FLEET_JOIN_MAX_CHAIN; n++) {
		sample_joined(&m, n);
		body_roundtrip(&m, &b);
		fleet_join_response_free(&m);
	}
	sample_pending(&m);
	body_roundtrip(&m, &b);
	buf_is(&b, "{\"v\":1,\"status\":\"pending\",\"request_id\":\"jr_01k\","
		   "\"retry_after_seconds\":30,\"csr_sha256\":\"" H64 "\"}");
	m.deferral.retry_after_seconds = 1;
	body_roundtrip(&m, &b);
	m.deferral.retry_after_seconds = FLEET_JOIN_MAX_RETRY_AFTER;
	body_roundtrip(&m, &b);
	sample_challenge(&m);
	body_roundtrip(&m, &b);
	m.deferral.not_after = 1;
	body_roundtrip(&m, &b);
	m.deferral.not_after = FLEET_JOIN_MAX_NOT_AFTER;
	body_roundtrip(&m, &b);
	fleet_join_response_free(&m);
	memset(&m, 0, sizeof(m));
	m.status = FLEET_JOIN_DENIED;
	body_roundtrip(&m, &b);
	buf_is(&b, D);
	/* the literal samples the refusal tests edit are valid */
	accepted(BODY, J);
	accepted(BODY, P);
	accepted(BODY, C);
	accepted(BODY, D);
	fb_free(&b);
}

/* JW2, JW6, JW7 */
static void test_body_refusals(void **state)
{
	(void)state;
	/* the JSON layer */
	edit_refused(BODY, J, "{\"v\":1,", "{\"v\":1,\"x\":1,", FLEET_E_MALFORMED, "unknown field");
	edit_refused(BODY, D, "\"v\":1", "\"v\":2", FLEET_E_MALFORMED, "v");
	edit_refused(BODY, D, "\"status\":\"denied\"", "\"status\":\"denied\",\"status\":\"denied\"",
		     FLEET_E_MALFORMED, "duplicate");
	/* status */
	refused(BODY, "{\"v\":1}", FLEET_E_MALFORMED, "status: missing");
	edit_refused(BODY, D, "\"denied\"", "\"accepted\"", FLEET_E_MALFORMED, "status");
	edit_refused(BODY, D, "\"denied\"", "\"Denied\"", FLEET_E_MALFORMED, "status");
	edit_refused(BODY, D, "\"denied\"", "4", FLEET_E_MALFORMED, "status");
	/* exactly the status's fields: another status's is refused by name */
	edit_refused(BODY, D, "}", ",\"csr_sha256\":\"" H64 "\"}", FLEET_E_MALFORMED,
		     "csr_sha256: not with status denied");
	edit_refused(BODY, D, "}", ",\"node_id\":\"n\"}", FLEET_E_MALFORMED,
		     "node_id: not with status denied");
	edit_refused(BODY, J, "{\"v\":1,", "{\"v\":1,\"request_id\":\"r\",", FLEET_E_MALFORMED,
		     "request_id: not with status joined");
	edit_refused(BODY, J, "{\"v\":1,", "{\"v\":1,\"not_after\":5,", FLEET_E_MALFORMED,
		     "not_after: not with status joined");
	edit_refused(BODY, P, "{\"v\":1,", "{\"v\":1,\"payload\":\"AAEC\",", FLEET_E_MALFORMED,
		     "payload: not with status pending");
	edit_refused(BODY, P, "{\"v\":1,", "{\"v\":1,\"chain\":[\"AAEC\"],", FLEET_E_MALFORMED,
		     "chain: not with status pending");
	edit_refused(BODY, C, "{\"v\":1,", "{\"v\":1,\"node_id\":\"n\",", FLEET_E_MALFORMED,
		     "node_id: not with status challenge");
	edit_refused(BODY, C, "{\"v\":1,", "{\"v\":1,\"retry_after_seconds\":3,", FLEET_E_MALFORMED,
		     "retry_after_seconds: not with status challenge");
	/* and every one of its own is required */
	edit_refused(BODY, J, ",\"csr_sha256\":\"" H64 "\"", "", FLEET_E_MALFORMED,
		     "csr_sha256: missing");
	edit_refused(BODY, J, "\"node_id\":\"node_01k-x\",", "", FLEET_E_MALFORMED, "node_id");
	edit_refused(BODY, J, "\"chain\":[\"AAEC\",\"AAED\"],", "", FLEET_E_MALFORMED, "chain");
	edit_refused(BODY, P, "\"request_id\":\"jr_01\",", "", FLEET_E_MALFORMED, "request_id");
	edit_refused(BODY, P, "\"retry_after_seconds\":30,", "", FLEET_E_MALFORMED,
		     "retry_after_seconds");
	edit_refused(BODY, C, "\"attestor\":\"tpm\",", "", FLEET_E_MALFORMED, "attestor");
	edit_refused(BODY, C, "\"payload\":\"AAEC\",", "", FLEET_E_MALFORMED, "payload");
	edit_refused(BODY, C, "\"not_after\":1790000000,", "", FLEET_E_MALFORMED, "not_after");
	edit_refused(BODY, C, ",\"csr_sha256\":\"" H64 "\"", "", FLEET_E_MALFORMED, "csr_sha256");
	/* joined */
	edit_refused(BODY, J, "node_01k-x", "Node", FLEET_E_MALFORMED, "node_id");
	edit_refused(BODY, J, "node_01k-x", "node.1", FLEET_E_MALFORMED, "node_id");
	edit_refused(BODY, J, "\"node_01k-x\"", "\"\"", FLEET_E_MALFORMED, "node_id");
	edit_refused(BODY, J, "node_01k-x",
		     "n123456789012345678901234567890123456789012345678901234567890123",
		     FLEET_E_TOO_LARGE, "node_id");
	edit_accepted(BODY, J, "node_01k-x",
		      "n12345678901234567890123456789012345678901234567890123456789012");
	edit_refused(BODY, J, "[\"AAEC\",\"AAED\"]", "[]", FLEET_E_MALFORMED, "chain: empty");
	edit_refused(BODY, J, "[\"AAEC\",\"AAED\"]", "[\"AAEC\",\"AAEC\",\"AAEC\",\"AAEC\",\"AAEC\"]",
		     FLEET_E_TOO_LARGE, "chain");
	edit_accepted(BODY, J, "[\"AAEC\",\"AAED\"]", "[\"AAEC\",\"AAEC\",\"AAEC\",\"AAEC\"]");
	edit_refused(BODY, J, "\"AAED\"", "\"\"", FLEET_E_MALFORMED, "chain[1]");
	edit_refused(BODY, J, "\"AAED\"", "\"AAE=\"", FLEET_E_MALFORMED, "chain[1]");
	edit_refused(BODY, J, "[\"AAEC\",\"AAED\"]", "\"AAEC\"", FLEET_E_MALFORMED, "chain");
	edit_refused(BODY, J, H64, "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		     FLEET_E_MALFORMED, "csr_sha256");
	edit_refused(BODY, J, H64, "0123456789abcdef", FLEET_E_MALFORMED, "csr_sha256");
	edit_refused(BODY, J, H64, H64 "0", FLEET_E_TOO_LARGE, "csr_sha256");
	edit_refused(BODY, J, H64, "g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		     FLEET_E_MALFORMED, "csr_sha256");
	/* pending */
	edit_refused(BODY, P, ":30,", ":0,", FLEET_E_MALFORMED, "retry_after_seconds");
	edit_refused(BODY, P, ":30,", ":3601,", FLEET_E_MALFORMED, "retry_after_seconds");
	edit_refused(BODY, P, ":30,", ":-1,", FLEET_E_MALFORMED, "retry_after_seconds");
	edit_refused(BODY, P, ":30,", ":30.0,", FLEET_E_MALFORMED, "retry_after_seconds");
	edit_refused(BODY, P, ":30,", ":\"30\",", FLEET_E_MALFORMED, "retry_after_seconds");
	edit_accepted(BODY, P, ":30,", ":3600,");
	edit_accepted(BODY, P, ":30,", ":1,");
	edit_refused(BODY, P, "jr_01", "jr 01", FLEET_E_MALFORMED, "request_id");
	edit_refused(BODY, P, "\"jr_01\"", "\"\"", FLEET_E_MALFORMED, "request_id");
	/* challenge */
	edit_refused(BODY, C, ":1790000000,", ":0,", FLEET_E_MALFORMED, "not_after");
	edit_refused(BODY, C, ":1790000000,", ":-5,", FLEET_E_MALFORMED, "not_after");
	edit_refused(BODY, C, ":1790000000,", ":253402300800,", FLEET_E_MALFORMED, "not_after");
	edit_refused(BODY, C, ":1790000000,", ":1.79e9,", FLEET_E_MALFORMED, "not_after");
	edit_refused(BODY, C, ":1790000000,", ":\"1790000000\",", FLEET_E_MALFORMED, "not_after");
	edit_refused(BODY, C, "\"tpm\"", "\"\"", FLEET_E_MALFORMED, "attestor");
	edit_refused(BODY, C, "\"tpm\"", "\"TPM\"", FLEET_E_MALFORMED, "attestor");
	edit_refused(BODY, C, "\"payload\":\"AAEC\"", "\"payload\":\"\"", FLEET_E_MALFORMED,
		     "payload");
	edit_refused(BODY, C, "\"payload\":\"AAEC\"", "\"payload\":\"AA/C\"", FLEET_E_MALFORMED,
		     "payload");
}

/* ---- envelope ----------------------------------------------------------- */

static const char E[] = "{\"v\":1,\"body\":\"AAEC\",\"sig\":\"MEUC\",\"kid\":\"0123456789abcdef\"}";

/* JW8, JW12 */
static void test_envelope_roundtrip(void **state)
{
	struct fleet_join_envelope a = {0}, b;
	struct fleet_errctx ec = {0};
	struct fleet_buf e1, e2;
	(void)state;
	fb_init(&e1);
	fb_init(&e2);
	a.body = blob(500, 1);
	a.sig = blob(71, 2);
	strcpy(a.kid, "00ff00ff00ff00ff");
	assert_int_equal(fleet_join_envelope_encode(&a, &e1), FLEET_OK);
	assert_int_equal(fleet_join_envelope_decode(e1.data, e1.len, &b, &ec), FLEET_OK);
	bytes_eq(&a.body, &b.body);
	bytes_eq(&a.sig, &b.sig);
	assert_string_equal(a.kid, b.kid);
	assert_int_equal(fleet_join_envelope_encode(&b, &e2), FLEET_OK);
	same_bytes(&e1, &e2);
	fleet_join_envelope_free(&b);
	fb_reset(&e1);
	fleet_join_envelope_free(&a);
	a.body = blob(3, 0);
	a.sig = blob(3, 0x30);
	strcpy(a.kid, "0123456789abcdef");
	assert_int_equal(fleet_join_envelope_encode(&a, &e1), FLEET_OK);
	buf_is(&e1, "{\"v\":1,\"body\":\"AAcO\",\"sig\":\"MDc-\",\"kid\":\"0123456789abcdef\"}");
	fleet_join_envelope_free(&a);
	accepted(ENV, E);
	fb_free(&e1);
	fb_free(&e2);
}

/* JW2, JW3, JW8 */
static void test_envelope_refusals(void **state)
{
	(void)state;
	edit_refused(ENV, E, "{\"v\":1,", "{\"v\":1,\"x\":1,", FLEET_E_MALFORMED, "unknown field");
	edit_refused(ENV, E, "\"v\":1", "\"v\":2", FLEET_E_MALFORMED, "v");
	edit_refused(ENV, E, "\"sig\":\"MEUC\"", "\"sig\":\"MEUC\",\"sig\":\"MEUC\"",
		     FLEET_E_MALFORMED, "duplicate");
	edit_refused(ENV, E, "\"body\":\"AAEC\",", "", FLEET_E_MALFORMED, "body: missing");
	edit_refused(ENV, E, "\"sig\":\"MEUC\",", "", FLEET_E_MALFORMED, "sig: missing");
	edit_refused(ENV, E, ",\"kid\":\"0123456789abcdef\"", "", FLEET_E_MALFORMED, "kid: missing");
	edit_refused(ENV, E, "\"body\":\"AAEC\"", "\"body\":\"\"", FLEET_E_MALFORMED, "body");
	edit_refused(ENV, E, "\"body\":\"AAEC\"", "\"body\":{\"v\":1}", FLEET_E_MALFORMED, "body");
	edit_refused(ENV, E, "\"sig\":\"MEUC\"", "\"sig\":\"ME+C\"", FLEET_E_MALFORMED, "sig");
	edit_refused(ENV, E, "\"sig\":\"MEUC\"", "\"sig\":\"\"", FLEET_E_MALFORMED, "sig");
	/* kid: exactly 16 lowercase hex */
	edit_refused(ENV, E, "0123456789abcdef", "0123456789ABCDEF", FLEET_E_MALFORMED, "kid");
	edit_refused(ENV, E, "0123456789abcdef", "0123456789abcde", FLEET_E_MALFORMED, "kid");
	edit_refused(ENV, E, "0123456789abcdef", "0123456789abcdef0", FLEET_E_TOO_LARGE, "kid");
	edit_refused(ENV, E, "0123456789abcdef", "0123456789abcdeg", FLEET_E_MALFORMED, "kid");
	edit_refused(ENV, E, "\"0123456789abcdef\"", "81985529216486895", FLEET_E_MALFORMED, "kid");
}

/* ---- caps --------------------------------------------------------------- */

/* Field caps (JW3): at the cap accepted, one byte over TOO_LARGE. */
static void test_caps(void **state)
{
	static const struct {
		enum kind k;
		const char *pre, *post;
		size_t cap;
		const char *field;
	} caps[] = {
		{REQ, "{\"v\":1,\"attestor\":\"\",\"token\":\"", "\",\"csr\":\"AAEC\",\"role\":\"node\"}",
		 FLEET_JOIN_MAX_TOKEN, "token"},
		{REQ, "{\"v\":1,\"attestor\":\"x\",\"attestation\":\"",
		 "\",\"csr\":\"AAEC\",\"role\":\"node\"}", FLEET_JOIN_MAX_ATTESTATION, "attestation"},
		{REQ, "{\"v\":1,\"attestor\":\"\",\"csr\":\"", "\",\"role\":\"node\"}",
		 FLEET_JOIN_MAX_CSR, "csr"},
		{BODY, "{\"v\":1,\"status\":\"joined\",\"node_id\":\"n\",\"chain\":[\"AAEC\",\"",
		 "\"],\"csr_sha256\":\"" H64 "\"}", FLEET_JOIN_MAX_CERT, "chain[1]"},
		{BODY, "{\"v\":1,\"status\":\"challenge\",\"attestor\":\"tpm\",\"payload\":\"",
		 "\",\"not_after\":5,\"csr_sha256\":\"" H64 "\"}", FLEET_JOIN_MAX_PAYLOAD, "payload"},
		{ENV, "{\"v\":1,\"body\":\"", "\",\"sig\":\"MEUC\",\"kid\":\"0123456789abcdef\"}",
		 FLEET_JOIN_MAX_BODY, "body"},
		{ENV, "{\"v\":1,\"body\":\"AAEC\",\"sig\":\"", "\",\"kid\":\"0123456789abcdef\"}",
		 FLEET_JOIN_MAX_SIG, "sig"},
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
}

/* s padded with spaces inside to n bytes (malloc'd; still valid JSON). */
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

/* Whole-message caps (JW2), above the largest each encoder writes. */
static void test_message_caps(void **state)
{
	struct fleet_join_request r;
	struct fleet_join_response b;
	struct fleet_join_envelope env = {0};
	struct fleet_buf out;
	char *s;
	(void)state;
	fb_init(&out);
	/* a message over its cap, however it got there, is refused before parsing */
	s = padded(REQ_OK, FLEET_JOIN_MAX_REQUEST);
	accepted(REQ, s);
	free(s);
	s = padded(REQ_OK, FLEET_JOIN_MAX_REQUEST + 1);
	refused(REQ, s, FLEET_E_TOO_LARGE, "request");
	free(s);
	s = padded(D, FLEET_JOIN_MAX_BODY + 1);
	refused(BODY, s, FLEET_E_TOO_LARGE, "body");
	free(s);
	s = padded(E, FLEET_JOIN_MAX_ENVELOPE + 1);
	refused(ENV, s, FLEET_E_TOO_LARGE, "envelope");
	free(s);
	/* the largest request */
	sample_request(&r);
	memset(r.attestor, 'a', FLEET_JOIN_MAX_ATTESTOR);
	r.attestor[FLEET_JOIN_MAX_ATTESTOR] = '\0';
	free(r.token.data);
	free(r.attestation.data);
	free(r.csr.data);
	r.token = blob(FLEET_JOIN_MAX_TOKEN, 1);
	r.attestation = blob(FLEET_JOIN_MAX_ATTESTATION, 2);
	r.csr = blob(FLEET_JOIN_MAX_CSR, 3);
	r.n_macs = FLEET_JOIN_MAX_MACS;
	for (size_t i = 0; i < r.n_macs; i++)
		mac_of(r.macs[i], i);
	request_roundtrip(&r, &out);
	assert_true(out.len <= FLEET_JOIN_MAX_REQUEST);
	fleet_join_request_free(&r);
	/* the largest bodies: a challenge, and a joined one with a full chain */
	sample_challenge(&b);
	memset(b.deferral.attestor, 'a', FLEET_JOIN_MAX_ATTESTOR);
	free(b.deferral.payload.data);
	b.deferral.payload = blob(FLEET_JOIN_MAX_PAYLOAD, 5);
	b.deferral.not_after = FLEET_JOIN_MAX_NOT_AFTER;
	body_roundtrip(&b, &out);
	assert_true(out.len <= FLEET_JOIN_MAX_BODY);
	fleet_join_response_free(&b);
	sample_joined(&b, 0);
	memset(b.node_id, 'n', FLEET_JOIN_MAX_ID);
	b.n_chain = FLEET_JOIN_MAX_CHAIN;
	for (size_t i = 0; i < FLEET_JOIN_MAX_CHAIN; i++)
		b.chain[i] = blob(FLEET_JOIN_MAX_CERT, (uint8_t)i);
	body_roundtrip(&b, &out);
	assert_true(out.len <= FLEET_JOIN_MAX_BODY);
	fleet_join_response_free(&b);
	/* the largest envelope */
	env.body = blob(FLEET_JOIN_MAX_BODY, 1);
	env.sig = blob(FLEET_JOIN_MAX_SIG, 2);
	strcpy(env.kid, "ffffffffffffffff");
	fb_reset(&out);
	assert_int_equal(fleet_join_envelope_encode(&env, &out), FLEET_OK);
	assert_true(out.len <= FLEET_JOIN_MAX_ENVELOPE);
	struct fleet_join_envelope back;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_join_envelope_decode(out.data, out.len, &back, &ec), FLEET_OK);
	fleet_join_envelope_free(&back);
	fleet_join_envelope_free(&env);
	fb_free(&out);
}

/* ---- encoders refuse what decoders refuse (JW11) ------------------------ */

static void request_refused(const struct fleet_join_request *m)
{
	struct fleet_buf out;
	fb_init(&out);
	assert_int_equal(fleet_join_request_encode(m, &out), FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	fb_free(&out);
}

static void body_refused(const struct fleet_join_response *m)
{
	struct fleet_buf out;
	fb_init(&out);
	assert_int_equal(fleet_join_body_encode(m, &out), FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	fb_free(&out);
}

static void envelope_refused(const struct fleet_join_envelope *m)
{
	struct fleet_buf out;
	fb_init(&out);
	assert_int_equal(fleet_join_envelope_encode(m, &out), FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	fb_free(&out);
}

static void test_encode_refusals(void **state)
{
	struct fleet_join_request r, t;
	struct fleet_join_response b, u;
	struct fleet_join_envelope env = {0}, f;
	struct fleet_wire_bytes none = {0}, big;
	(void)state;

	sample_request(&r);
#define REQ_CASE(stmt)       \
	do {                 \
		t = r;       \
		stmt;        \
		request_refused(&t); \
	} while (0)
	REQ_CASE(strcpy(t.attestor, "Discovery"));
	REQ_CASE(strcpy(t.attestor, "a_b"));
	REQ_CASE(memset(t.attestor, 'a', sizeof(t.attestor))); /* no NUL within the cap */
	REQ_CASE(t.has_token = false);                          /* bytes without the flag */
	REQ_CASE(t.token = none);                               /* the flag without bytes */
	REQ_CASE(t.token.len = 0);
	REQ_CASE(t.has_attestation = false);
	REQ_CASE(t.attestation = none);
	REQ_CASE(t.csr = none);
	REQ_CASE(t.role = (enum fleet_join_role)0);
	REQ_CASE(t.role = (enum fleet_join_role)4);
	REQ_CASE(t.n_macs = FLEET_JOIN_MAX_MACS + 1);
	REQ_CASE(strcpy(t.macs[1], "AA:bb:cc:dd:ee:02"));
	REQ_CASE(strcpy(t.macs[1], "aa:bb:cc:dd:ee:01")); /* a repeat */
	REQ_CASE(strcpy(t.macs[1], "aa:bb:cc:dd:ee"));
	REQ_CASE(strcpy(t.product_uuid, "4C4C4544-0042-3510-8052-B4C04F4E3232"));
	REQ_CASE(strcpy(t.product_uuid, "not-a-uuid"));
	big = blob(FLEET_JOIN_MAX_ATTESTATION + 1, 0);
	REQ_CASE(t.attestation = big);
	free(big.data);
	big = blob(FLEET_JOIN_MAX_TOKEN + 1, 0);
	REQ_CASE(t.token = big);
	free(big.data);
	big = blob(FLEET_JOIN_MAX_CSR + 1, 0);
	REQ_CASE(t.csr = big);
	free(big.data);
	request_refused(NULL);
	fleet_join_request_free(&r);

#define BODY_CASE(sample, stmt) \
	do {                    \
		sample;         \
		u = b;          \
		stmt;           \
		body_refused(&u); \
		fleet_join_response_free(&b); \
	} while (0)
	BODY_CASE(sample_pending(&b), u.status = (enum fleet_join_status)0);
	BODY_CASE(sample_pending(&b), u.status = (enum fleet_join_status)5);
	BODY_CASE(memset(&b, 0, sizeof(b)); b.status = FLEET_JOIN_DENIED,
		  strcpy(u.csr_sha256, H64));
	BODY_CASE(memset(&b, 0, sizeof(b)); b.status = FLEET_JOIN_DENIED,
		  u.deferral.retry_after_seconds = 30);
	BODY_CASE(sample_joined(&b, 2), u.n_chain = 0);
	BODY_CASE(sample_joined(&b, 2), u.n_chain = 5);
	BODY_CASE(sample_joined(&b, 2), u.n_chain = 1); /* an entry past n_chain */
	BODY_CASE(sample_joined(&b, 2), u.chain[1].len = FLEET_JOIN_MAX_CERT + 1);
	BODY_CASE(sample_joined(&b, 2), strcpy(u.node_id, "Node"));
	BODY_CASE(sample_joined(&b, 2), u.node_id[0] = '\0');
	BODY_CASE(sample_joined(&b, 2), strcpy(u.deferral.request_id, "r"));
	BODY_CASE(sample_joined(&b, 2), u.csr_sha256[0] = 'A');
	BODY_CASE(sample_joined(&b, 2), u.csr_sha256[0] = '\0');
	BODY_CASE(sample_pending(&b), u.deferral.retry_after_seconds = 0);
	BODY_CASE(sample_pending(&b), u.deferral.retry_after_seconds = 3601);
	BODY_CASE(sample_pending(&b), strcpy(u.node_id, "n"));
	BODY_CASE(sample_pending(&b), u.deferral.not_after = 5);
	BODY_CASE(sample_pending(&b), strcpy(u.deferral.request_id, "r.1"));
	BODY_CASE(sample_challenge(&b), u.deferral.not_after = 0);
	BODY_CASE(sample_challenge(&b), u.deferral.not_after = -1);
	BODY_CASE(sample_challenge(&b), u.deferral.not_after = FLEET_JOIN_MAX_NOT_AFTER + 1);
	BODY_CASE(sample_challenge(&b), u.deferral.attestor[0] = '\0');
	BODY_CASE(sample_challenge(&b), u.deferral.payload = none);
	BODY_CASE(sample_challenge(&b), u.deferral.payload.len = FLEET_JOIN_MAX_PAYLOAD + 1);
	BODY_CASE(sample_challenge(&b), u.deferral.retry_after_seconds = 30);
	body_refused(NULL);

	env.body = blob(10, 1);
	env.sig = blob(70, 2);
	strcpy(env.kid, "0123456789abcdef");
#define ENV_CASE(stmt)          \
	do {                    \
		f = env;        \
		stmt;           \
		envelope_refused(&f); \
	} while (0)
	ENV_CASE(strcpy(f.kid, "0123456789ABCDEF"));
	ENV_CASE(strcpy(f.kid, "0123456789abcde"));
	ENV_CASE(f.kid[0] = 'g');
	ENV_CASE(f.body = none);
	ENV_CASE(f.sig = none);
	ENV_CASE(f.sig.len = FLEET_JOIN_MAX_SIG + 1);
	ENV_CASE(f.body.len = FLEET_JOIN_MAX_BODY + 1);
	envelope_refused(NULL);
	fleet_join_envelope_free(&env);
}

/* ---- JW1, JW13 ---------------------------------------------------------- */

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void test_refusal_leaves_out_zero(void **state)
{
	struct fleet_join_request r;
	struct fleet_join_response b;
	struct fleet_join_envelope env;
	struct fleet_errctx ec = {0};
	const char *s;
	(void)state;
	/* late refusals, after byte fields were read */
	s = "{\"v\":1,\"attestor\":\"x\",\"token\":\"AAEC\",\"attestation\":\"AAEC\",\"csr\":\"AAEC\","
	    "\"role\":\"node\",\"claims\":{\"macs\":[\"aa:bb:cc:dd:ee:01\",\"bad\"]}}";
	memset(&r, 0xa5, sizeof(r));
	assert_int_equal(fleet_join_request_decode((const uint8_t *)s, strlen(s), &r, &ec),
			 FLEET_E_MALFORMED);
	assert_true(all_zero(&r, sizeof(r)));
	s = "{\"v\":1,\"status\":\"joined\",\"node_id\":\"n\",\"chain\":[\"AAEC\",\"AAEC\"],"
	    "\"csr_sha256\":\"x\"}";
	memset(&b, 0xa5, sizeof(b));
	assert_int_equal(fleet_join_body_decode((const uint8_t *)s, strlen(s), &b, &ec),
			 FLEET_E_MALFORMED);
	assert_true(all_zero(&b, sizeof(b)));
	s = "{\"v\":1,\"body\":\"AAEC\",\"sig\":\"AAEC\",\"kid\":\"x\"}";
	memset(&env, 0xa5, sizeof(env));
	assert_int_equal(fleet_join_envelope_decode((const uint8_t *)s, strlen(s), &env, &ec),
			 FLEET_E_MALFORMED);
	assert_true(all_zero(&env, sizeof(env)));
	/* a caller's mistake */
	assert_int_equal(fleet_join_request_decode((const uint8_t *)s, strlen(s), NULL, &ec),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_join_body_decode(NULL, 0, NULL, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_join_envelope_decode(NULL, 0, NULL, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_join_envelope_decode(NULL, 5, &env, &ec), FLEET_E_INVALID_ARG);
}

static void test_free_twice(void **state)
{
	struct fleet_join_request r;
	struct fleet_join_response b;
	(void)state;
	sample_request(&r);
	fleet_join_request_free(&r);
	assert_true(all_zero(&r, sizeof(r)));
	fleet_join_request_free(&r);
	fleet_join_request_free(NULL);
	sample_joined(&b, 3);
	fleet_join_response_free(&b);
	assert_true(all_zero(&b, sizeof(b)));
	fleet_join_response_free(&b);
	fleet_join_response_free(NULL);
	fleet_join_envelope_free(NULL);
}

/* ---- the binding and the signature (JW9, JW10, JW14) -------------------- */

static void test_csr_sha256(void **state)
{
	struct fleet_wire_bytes csr = {(uint8_t *)"abc", 3}, none = {0};
	char hex[65];
	(void)state;
	assert_int_equal(fleet_join_csr_sha256(&csr, hex), FLEET_OK);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(fleet_join_csr_sha256(&none, hex), FLEET_E_INVALID_ARG);
	struct fleet_wire_bytes big = blob(FLEET_JOIN_MAX_CSR + 1, 0);
	assert_int_equal(fleet_join_csr_sha256(&big, hex), FLEET_E_INVALID_ARG);
	big.len = FLEET_JOIN_MAX_CSR;
	assert_int_equal(fleet_join_csr_sha256(&big, hex), FLEET_OK);
	free(big.data);
	assert_int_equal(fleet_join_csr_sha256(NULL, hex), FLEET_E_INVALID_ARG);
}

struct ca_fixture {
	char *base;
	struct fleet_ca *ca;
};

static int ca_setup(void **state)
{
	static struct ca_fixture f;
	struct fleet_errctx ec = {0};
	char dir[600];
	f.base = make_temp_dir("join-wire");
	assert_non_null(f.base);
	snprintf(dir, sizeof(dir), "%s/ca", f.base);
	if (fleet_ca_init(dir, "Test Join Service", 30, &ec) != FLEET_OK ||
	    fleet_ca_load(dir, &f.ca, &ec) != FLEET_OK)
		fail_msg("ca: %s", ec.detail);
	*state = &f;
	return 0;
}

static int ca_teardown(void **state)
{
	struct ca_fixture *f = *state;
	fleet_ca_free(f->ca);
	rm_rf(f->base);
	free(f->base);
	return 0;
}

/* The server's side: body -> sign -> envelope (kid as in JW8). */
static void serve(const struct fleet_ca *ca, const uint8_t *body, size_t len,
		  struct fleet_buf *wire)
{
	struct fleet_join_envelope env = {0};
	struct fleet_errctx ec = {0};
	struct fleet_buf sig;
	fb_init(&sig);
	assert_int_equal(fleet_ca_sign(ca, body, len, &sig, &ec), FLEET_OK);
	env.body.data = (uint8_t *)body;
	env.body.len = len;
	env.sig.data = sig.data;
	env.sig.len = sig.len;
	assert_int_equal(fleet_join_kid(fleet_ca_cert(ca), env.kid), FLEET_OK);
	fb_reset(wire);
	assert_int_equal(fleet_join_envelope_encode(&env, wire), FLEET_OK);
	fb_free(&sig);
}

/* The client's side, JW10 (a)..(d); returns the body's decode result. */
static fleet_err client(X509 *pinned, const struct fleet_buf *wire,
			const struct fleet_wire_bytes *my_csr, struct fleet_join_response *out)
{
	struct fleet_join_envelope env;
	struct fleet_errctx ec = {0};
	char mine[65];
	fleet_err e;

	memset(out, 0, sizeof(*out));
	if ((e = fleet_join_envelope_decode(wire->data, wire->len, &env, &ec)))
		return e;
	assert_int_equal(fleet_join_kid(pinned, mine), FLEET_OK);
	/* the pinned key is the one the envelope names, or there is no answer */
	if (strcmp(env.kid, mine) != 0)
		e = FLEET_E_VERIFY;
	else
		e = fleet_ca_verify(pinned, env.body.data, env.body.len, env.sig.data,
				    env.sig.len, &ec);
	if (e == FLEET_OK)
		e = fleet_join_body_decode(env.body.data, env.body.len, out, &ec);
	fleet_join_envelope_free(&env);
	if (e != FLEET_OK || out->status == FLEET_JOIN_DENIED)
		return e;
	assert_int_equal(fleet_join_csr_sha256(my_csr, mine), FLEET_OK);
	if (strcmp(mine, out->csr_sha256) != 0) {
		fleet_join_response_free(out);
		return FLEET_E_VERIFY;
	}
	return FLEET_OK;
}

/* JW8: the key id is SHA-256 over the certificate's SPKI DER, 8 bytes. */
static void test_kid(void **state)
{
	struct ca_fixture *f = *state;
	X509 *cert = fleet_ca_cert(f->ca);
	unsigned char *der = NULL, md[32];
	char kid[FLEET_JOIN_KID_LEN + 1], want[FLEET_JOIN_KID_LEN + 1];
	int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
	assert_true(n > 0);
	assert_int_equal(EVP_Digest(der, (size_t)n, md, NULL, EVP_sha256(), NULL), 1);
	OPENSSL_free(der);
	for (int i = 0; i < 8; i++)
		snprintf(want + 2 * i, 3, "%02x", md[i]);
	assert_int_equal(fleet_join_kid(cert, kid), FLEET_OK);
	assert_string_equal(kid, want);
	assert_int_equal(fleet_join_kid(NULL, kid), FLEET_E_INVALID_ARG);
}

/* JW9, JW10 (b) */
static void test_signed_envelope(void **state)
{
	struct ca_fixture *f = *state;
	struct fleet_join_response m, got;
	struct fleet_wire_bytes csr = blob(300, 7);
	struct fleet_buf body, wire;
	X509 *pinned = fleet_ca_cert(f->ca);
	fb_init(&body);
	fb_init(&wire);

	sample_joined(&m, 2);
	assert_int_equal(fleet_join_csr_sha256(&csr, m.csr_sha256), FLEET_OK);
	assert_int_equal(fleet_join_body_encode(&m, &body), FLEET_OK);
	serve(f->ca, body.data, body.len, &wire);
	assert_int_equal(client(pinned, &wire, &csr, &got), FLEET_OK);
	body_eq(&m, &got);
	fleet_join_response_free(&got);

	/* one changed byte of the body: the signature no longer verifies */
	{
		struct fleet_join_envelope env;
		struct fleet_errctx ec = {0};
		struct fleet_buf w2;
		fb_init(&w2);
		assert_int_equal(fleet_join_envelope_decode(wire.data, wire.len, &env, &ec),
				 FLEET_OK);
		uint8_t *at = memmem(env.body.data, env.body.len, "node_01k", 8);
		assert_non_null(at);
		/* another key's id over the right signature: not the pinned key */
		char k0 = env.kid[0];
		env.kid[0] = k0 == '0' ? '1' : '0';
		assert_int_equal(fleet_join_envelope_encode(&env, &w2), FLEET_OK);
		assert_int_equal(client(pinned, &w2, &csr, &got), FLEET_E_VERIFY);
		env.kid[0] = k0;
		at[5] = '2'; /* node_02k: still a valid body */
		fb_reset(&w2);
		assert_int_equal(fleet_join_envelope_encode(&env, &w2), FLEET_OK);
		assert_int_equal(client(pinned, &w2, &csr, &got), FLEET_E_VERIFY);
		fleet_join_envelope_free(&env);
		fb_free(&w2);
	}

	/* JW9: the bytes as carried, whatever they are. A body with spaces
	 * verifies and decodes, though its re-encoding is other bytes: the
	 * client must verify what it received, never a re-encoding. */
	static const char spaced[] = "{ \"v\": 1, \"status\": \"denied\" }";
	serve(f->ca, (const uint8_t *)spaced, strlen(spaced), &wire);
	{
		struct fleet_join_envelope env;
		struct fleet_errctx ec = {0};
		struct fleet_buf again;
		fb_init(&again);
		assert_int_equal(fleet_join_envelope_decode(wire.data, wire.len, &env, &ec),
				 FLEET_OK);
		assert_int_equal(env.body.len, strlen(spaced));
		assert_memory_equal(env.body.data, spaced, env.body.len);
		assert_int_equal(fleet_join_body_decode(env.body.data, env.body.len, &got, &ec),
				 FLEET_OK);
		assert_int_equal(fleet_join_body_encode(&got, &again), FLEET_OK);
		assert_false(again.len == env.body.len);
		assert_int_equal(fleet_ca_verify(pinned, again.data, again.len, env.sig.data,
						 env.sig.len, &ec),
				 FLEET_E_VERIFY);
		fleet_join_envelope_free(&env);
		fleet_join_response_free(&got);
		fb_free(&again);
	}
	assert_int_equal(client(pinned, &wire, &csr, &got), FLEET_OK);
	assert_int_equal(got.status, FLEET_JOIN_DENIED);

	fleet_join_response_free(&m);
	free(csr.data);
	fb_free(&body);
	fb_free(&wire);
}

/* JW10 (d): an answer bound to another CSR is refused, for each deferral too. */
static void test_client_binding(void **state)
{
	struct ca_fixture *f = *state;
	struct fleet_join_response m, got;
	struct fleet_wire_bytes mine = blob(300, 7), other = blob(300, 8);
	struct fleet_buf body, wire;
	X509 *pinned = fleet_ca_cert(f->ca);
	fb_init(&body);
	fb_init(&wire);
	for (int k = 0; k < 3; k++) {
		if (k == 0)
			sample_joined(&m, 1);
		else if (k == 1)
			sample_pending(&m);
		else
			sample_challenge(&m);
		assert_int_equal(fleet_join_csr_sha256(&other, m.csr_sha256), FLEET_OK);
		fb_reset(&body);
		assert_int_equal(fleet_join_body_encode(&m, &body), FLEET_OK);
		serve(f->ca, body.data, body.len, &wire);
		assert_int_equal(client(pinned, &wire, &other, &got), FLEET_OK);
		fleet_join_response_free(&got);
		assert_int_equal(client(pinned, &wire, &mine, &got), FLEET_E_VERIFY);
		assert_true(all_zero(&got, sizeof(got)));
		fleet_join_response_free(&m);
	}
	free(mine.data);
	free(other.data);
	fb_free(&body);
	fb_free(&wire);
}

/* The fuzz target's seeds are valid messages of their kind (kind % 3),
 * so fuzzing starts inside the accepted language. */
static void test_corpus_seeds(void **state)
{
	static const char dir[] = FLEET_SOURCE_DIR "/tests/fuzz/corpus/fuzz_join_wire";
	bool seen[3] = {false};
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
		int k = b.data[0] % 3;
		char *s = strndup((const char *)b.data + 1, b.len - 1);
		assert_non_null(s);
		if (decode(k == 0 ? REQ : k == 1 ? BODY : ENV, s, &ec) != FLEET_OK)
			fail_msg("seed %s refused: %s", de->d_name, ec.detail);
		seen[k] = true;
		free(s);
		fb_free(&b);
	}
	closedir(d);
	assert_true(seen[0] && seen[1] && seen[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_request_refusals),
		cmocka_unit_test(test_claims_refusals),
		cmocka_unit_test(test_body_roundtrip),
		cmocka_unit_test(test_body_refusals),
		cmocka_unit_test(test_envelope_roundtrip),
		cmocka_unit_test(test_envelope_refusals),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_message_caps),
		cmocka_unit_test(test_encode_refusals),
		cmocka_unit_test(test_refusal_leaves_out_zero),
		cmocka_unit_test(test_free_twice),
		cmocka_unit_test(test_csr_sha256),
		cmocka_unit_test(test_corpus_seeds),
		cmocka_unit_test_setup_teardown(test_kid, ca_setup, ca_teardown),
		cmocka_unit_test_setup_teardown(test_signed_envelope, ca_setup, ca_teardown),
		cmocka_unit_test_setup_teardown(test_client_binding, ca_setup, ca_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
