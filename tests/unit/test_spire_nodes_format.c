/*
 * test_spire_nodes_format.c: spire-nodes.json's one definition
 * (lib/spire_nodes_format.h), the part no fleetd or applier test reaches:
 * the limits (a list of FLEET_SPIRE_LIST_MAX entries goes both ways, one
 * more is refused by the rules, the encoder and the decoder alike), the
 * file-size cap derived from the longest entry, the canonical order, and
 * times. The round trip over arbitrary documents is the fuzz target
 * fuzz_spire_nodes_roundtrip.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/spire_nodes_format.h"

#define NOW INT64_C(1796014800) /* 2026-11-30T05:00:00Z */

static void hex_of(uint64_t v, char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[n - 1 - i] = hex[v & 15];
		v >>= 4;
	}
	out[n] = '\0';
}

/* n eligible and m revoked entries, sorted by name, each with ld
 * fingerprints; names "n<7 digits>", so long ones when wide. */
static void make_doc(struct fleet_spire_nodes *d, size_t n, size_t m, size_t ld, bool wide)
{
	memset(d, 0, sizeof(*d));
	d->version = FLEET_SPIRE_NODES_VERSION;
	d->serial = 7;
	d->generated_at = NOW;
	snprintf(d->trust_domain, sizeof(d->trust_domain), "fleet.example");
	d->eligible = calloc(n + 1, sizeof(*d->eligible));
	d->revoked = calloc(m + 1, sizeof(*d->revoked));
	assert_non_null(d->eligible);
	assert_non_null(d->revoked);
	d->n_eligible = n;
	d->n_revoked = m;
	for (size_t i = 0; i < n + m; i++) {
		bool rev = i >= n;
		struct fleet_spire_node *e = rev ? &d->revoked[i - n] : &d->eligible[i];
		snprintf(e->name, sizeof(e->name), "n%07zu", i);
		if (wide) /* FLEET_SPIRE_NAME_MAX characters */
			memset(e->name + 8, 'x', FLEET_SPIRE_NAME_MAX - 8);
		hex_of(2 * i + 1, e->ek_hash, 64);
		if (wide)
			hex_of(2 * i + 2, e->ek_hash_ecc, 64);
		e->n_ldevid = ld;
		e->ldevid_sha1 = ld ? calloc(ld, sizeof(*e->ldevid_sha1)) : NULL;
		for (size_t k = 0; k < ld; k++)
			hex_of((uint64_t)i * 32 + k, e->ldevid_sha1[k], 40);
		if (rev)
			e->not_after = NOW + 86400;
	}
}

static char *encode_ok(const struct fleet_spire_nodes *d, size_t *len)
{
	char *out[1] = {NULL};
	struct fleet_errctx ec;
	if (fleet_spire_nodes_encode(d, out, len, &ec) != FLEET_OK)
		fail_msg("encode: %s", ec.detail);
	return out[0];
}

/* The longest entry is FLEET_SPIRE_ENTRY_MAX_BYTES, the rest of the
 * document fits FLEET_SPIRE_HEAD_MAX_BYTES: the numbers the file cap is
 * derived from are the encoder's own. */
static void test_sizes(void **state)
{
	(void)state;
	struct fleet_spire_nodes d;
	size_t len[4];
	for (size_t k = 0; k < 4; k++) {
		make_doc(&d, 0, k, FLEET_SPIRE_LDEVID_MAX, true);
		d.serial = FLEET_SPIRE_SERIAL_MAX;
		memset(d.trust_domain, 'a', FLEET_SPIRE_TRUST_DOMAIN_MAX);
		d.trust_domain[FLEET_SPIRE_TRUST_DOMAIN_MAX] = '\0';
		free(encode_ok(&d, &len[k]));
		fleet_spire_nodes_free(&d);
	}
	assert_int_equal(len[2] - len[1], FLEET_SPIRE_ENTRY_MAX_BYTES);
	assert_int_equal(len[3] - len[2], FLEET_SPIRE_ENTRY_MAX_BYTES);
	/* A list's first entry costs its brackets' 3 bytes less the comma it
	 * lacks; the longest head with both lists' brackets still fits. */
	assert_int_equal(len[1] - len[0], FLEET_SPIRE_ENTRY_MAX_BYTES + 2);
	assert_int_equal(len[0] + 2 * 3, 409);
	assert_true(409 <= FLEET_SPIRE_HEAD_MAX_BYTES);
	/* An eligible entry is never the longer one. */
	make_doc(&d, 1, 0, FLEET_SPIRE_LDEVID_MAX, true);
	size_t el;
	free(encode_ok(&d, &el));
	fleet_spire_nodes_free(&d);
	assert_true(el <= len[1]);
	assert_int_equal(FLEET_SPIRE_NODES_MAX_BYTES,
			 FLEET_SPIRE_HEAD_MAX_BYTES +
				 2 * (size_t)FLEET_SPIRE_LIST_MAX * FLEET_SPIRE_ENTRY_MAX_BYTES);
}

/* A list of FLEET_SPIRE_LIST_MAX entries is written and read; one more is
 * refused by the rules, the encoder and the decoder, with the same words. */
static void test_list_cap(void **state)
{
	(void)state;
	assert_true(FLEET_SPIRE_LIST_MAX >= 50000);
	struct fleet_spire_nodes d, back;
	struct fleet_errctx ec;
	make_doc(&d, FLEET_SPIRE_LIST_MAX, 0, 1, false);
	size_t len;
	char *text = encode_ok(&d, &len);
	const char *tail = strstr(text, "\"revoked\": []");
	assert_non_null(tail);
	size_t head = (size_t)(tail - text);
	assert_int_equal(fleet_spire_nodes_decode((const uint8_t *)text, len, &back, &ec),
			 FLEET_OK);
	assert_int_equal(back.n_eligible, FLEET_SPIRE_LIST_MAX);
	assert_true(fleet_spire_nodes_same_content(&d, &back));
	fleet_spire_nodes_free(&back);
	fleet_spire_nodes_free(&d);

	/* One more in the revoked list: its own entry, after eligible's last. */
	make_doc(&d, FLEET_SPIRE_LIST_MAX, 0, 1, false);
	free(d.revoked);
	struct fleet_spire_node *r = calloc(FLEET_SPIRE_LIST_MAX + 1, sizeof(*r));
	assert_non_null(r);
	for (size_t i = 0; i <= FLEET_SPIRE_LIST_MAX; i++) {
		snprintf(r[i].name, sizeof(r[i].name), "r%07zu", i);
		hex_of(i + 1, r[i].ek_hash, 64);
		r[i].not_after = NOW;
	}
	d.revoked = r;
	d.n_revoked = FLEET_SPIRE_LIST_MAX + 1;
	assert_int_equal(fleet_spire_nodes_check(&d, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "revoked has 100001 devices, more than 100000"));
	char *refused = NULL;
	assert_int_equal(fleet_spire_nodes_encode(&d, &refused, &len, &ec), FLEET_E_MALFORMED);
	assert_null(refused);
	/* The same document as text, as another writer might have made it. */
	size_t cap = strlen(text) + (FLEET_SPIRE_LIST_MAX + 1) * 200;
	char *big = malloc(cap);
	assert_non_null(big);
	size_t n = head;
	memcpy(big, text, n);
	n += (size_t)snprintf(big + n, cap - n, "\"revoked\": [");
	for (size_t i = 0; i <= FLEET_SPIRE_LIST_MAX; i++)
		n += (size_t)snprintf(big + n, cap - n,
				      "%s{\"name\":\"%s\",\"ek_hash\":\"%s\",\"ek_hash_ecc\":null,"
				      "\"ldevid_sha1\":[],\"not_after\":\"2026-11-30T05:00:00Z\"}",
				      i ? "," : "", r[i].name, r[i].ek_hash);
	n += (size_t)snprintf(big + n, cap - n, "]}\n");
	assert_true(n < FLEET_SPIRE_NODES_MAX_BYTES);
	assert_int_equal(fleet_spire_nodes_decode((const uint8_t *)big, n, &back, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "revoked has 100001 devices, more than 100000"));
	assert_null(back.eligible);
	free(big);
	free(text);
	fleet_spire_nodes_free(&d);
}

/* Past the size cap the decoder does not parse at all. */
static void test_file_cap(void **state)
{
	(void)state;
	struct fleet_spire_nodes back;
	struct fleet_errctx ec;
	static const uint8_t one[] = "{}";
	assert_int_equal(fleet_spire_nodes_decode(one, FLEET_SPIRE_NODES_MAX_BYTES + 1, &back, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "more than"));
}

/* The decoder takes any order and gives the canonical one; the rules (the
 * writer's check) want it. */
static void test_order(void **state)
{
	(void)state;
	const char *text =
		"{\"version\":1,\"serial\":0,\"generated_at\":\"2026-11-30T05:00:00Z\","
		"\"trust_domain\":\"t\",\"eligible\":["
		"{\"name\":\"w2\",\"ek_hash\":\"" "2222222222222222222222222222222222222222222222222222222222222222"
		"\",\"ek_hash_ecc\":null,\"ldevid_sha1\":["
		"\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]},"
		"{\"name\":\"w1\",\"ek_hash\":\"" "1111111111111111111111111111111111111111111111111111111111111111"
		"\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[]}],\"revoked\":[]}";
	struct fleet_spire_nodes d;
	struct fleet_errctx ec;
	assert_int_equal(fleet_spire_nodes_decode((const uint8_t *)text, strlen(text), &d, &ec),
			 FLEET_OK);
	assert_string_equal(d.eligible[0].name, "w1");
	assert_string_equal(d.eligible[1].name, "w2");
	assert_memory_equal(d.eligible[1].ldevid_sha1[0], "aaaa", 4);
	assert_int_equal(fleet_spire_nodes_check(&d, &ec), FLEET_OK);
	struct fleet_spire_node t = d.eligible[0];
	d.eligible[0] = d.eligible[1];
	d.eligible[1] = t;
	assert_int_equal(fleet_spire_nodes_check(&d, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "eligible[1].name is out of order"));
	d.eligible[1] = d.eligible[0];
	d.eligible[0] = t;
	char saved[41];
	memcpy(saved, d.eligible[1].ldevid_sha1[0], 41);
	memcpy(d.eligible[1].ldevid_sha1[0], d.eligible[1].ldevid_sha1[1], 41);
	memcpy(d.eligible[1].ldevid_sha1[1], saved, 41);
	assert_int_equal(fleet_spire_nodes_check(&d, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "eligible[1].ldevid_sha1[1]"));
	fleet_spire_nodes_free(&d);
	/* A repeated name is named by where it is in the file. */
	const char *twice =
		"{\"version\":1,\"serial\":0,\"generated_at\":\"2026-11-30T05:00:00Z\","
		"\"trust_domain\":\"t\",\"eligible\":[],\"revoked\":["
		"{\"name\":\"w2\",\"ek_hash\":\"" "2222222222222222222222222222222222222222222222222222222222222222"
		"\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[],\"not_after\":\"2026-11-30T05:00:00Z\"},"
		"{\"name\":\"w1\",\"ek_hash\":\"" "1111111111111111111111111111111111111111111111111111111111111111"
		"\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[],\"not_after\":\"2026-11-30T05:00:00Z\"},"
		"{\"name\":\"w2\",\"ek_hash\":\"" "3333333333333333333333333333333333333333333333333333333333333333"
		"\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[],\"not_after\":\"2026-11-30T05:00:00Z\"}]}";
	assert_int_equal(fleet_spire_nodes_decode((const uint8_t *)twice, strlen(twice), &d, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "revoked[2].name repeats revoked[0]'s"));
}

/* Times: the calendar, the range, no leap second; parse inverts format. */
static void test_times(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int64_t t; /* -1: refused */
	} cases[] = {
		{"1970-01-01T00:00:00Z", 0},
		{"2026-11-30T05:00:00Z", NOW},
		{"2000-02-29T12:00:00Z", 951825600},
		{"2024-02-29T00:00:00Z", 1709164800},
		{"9999-12-31T23:59:59Z", INT64_C(253402300799)},
		{"2023-02-29T00:00:00Z", -1},
		{"2100-02-29T00:00:00Z", -1},
		{"2027-04-31T00:00:00Z", -1},
		{"2016-12-31T23:59:60Z", -1},
		{"1969-12-31T23:59:59Z", -1},
		{"2027-13-01T00:00:00Z", -1},
		{"2027-01-01T24:00:00Z", -1},
		{"2027-01-01 00:00:00Z", -1},
		{"2027-01-01T00:00:00+00:00", -1},
		{"2027-1-01T00:00:00Z", -1},
		{"", -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t t = -1;
		bool ok = fleet_spire_time_parse(cases[i].s, &t);
		if (ok != (cases[i].t >= 0) || (ok && t != cases[i].t))
			fail_msg("%s: %d %lld", cases[i].s, ok, (long long)t);
	}
	/* Every 86,399,993 seconds (a prime) from 1970 to 9999, and both ends. */
	char s[21];
	for (int64_t t = 0; t <= INT64_C(253402300799); t += 86399993) {
		int64_t back = -1;
		assert_true(fleet_spire_time_format(t, s));
		assert_true(fleet_spire_time_parse(s, &back));
		assert_int_equal(back, t);
	}
	assert_false(fleet_spire_time_format(-1, s));
	assert_false(fleet_spire_time_format(INT64_C(253402300800), s));
}

/* The canonical head read from an encoding gives back its serial and time
 * and points at the trust domain's line, whatever the serial's length; any
 * other head, or one cut short, is not read (the writer then decodes the
 * file whole, or replaces it). */
static void test_head(void **state)
{
	(void)state;
	struct fleet_spire_nodes d;
	make_doc(&d, 3, 1, 1, false);
	static const int64_t serials[] = {0, 1, 9, 10, 4242, FLEET_SPIRE_SERIAL_MAX};
	static const int64_t times[] = {0, NOW, INT64_C(253402300799)};
	for (size_t i = 0; i < sizeof(serials) / sizeof(serials[0]); i++)
		for (size_t k = 0; k < sizeof(times) / sizeof(times[0]); k++) {
			d.serial = serials[i];
			d.generated_at = times[k];
			size_t len;
			char *t = encode_ok(&d, &len);
			int64_t sv = -1, at = -1;
			size_t body = 0;
			assert_true(fleet_spire_nodes_head(t, len, &sv, &at, &body));
			assert_int_equal(sv, serials[i]);
			assert_int_equal(at, times[k]);
			assert_true(body < len);
			assert_memory_equal(t + body, "  \"trust_domain\": \"fleet.example\",\n", 35);
			/* Every prefix short of the whole head is refused. */
			for (size_t n = 0; n < body; n++)
				assert_false(fleet_spire_nodes_head(t, n, &sv, &at, &body));
			free(t);
		}
	/* Forms the encoder never writes. */
	static const char *const bad[] = {
		"{\n  \"version\": 1,\n  \"serial\": 01,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": -1,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": 1.0,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": ,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		/* 2^53: one past FLEET_SPIRE_SERIAL_MAX; then 17 digits */
		"{\n  \"version\": 1,\n  \"serial\": 9007199254740992,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": 10000000000000000,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": 99999999999999999999,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": 1,\n  \"generated_at\": \"2026-02-30T05:00:00Z\",\n",
		"{\n  \"version\": 1,\n  \"serial\": 1,\n  \"generated_at\": \"2026-11-30T05:00:00\",\n",
		"{\n  \"version\": 1,\n  \"serial\": 1,\n  \"generated_at\": 1796014800,\n",
		"{\n  \"version\": 1,\n  \"serial\": 1,\n  \"generated_at\": \"2026-11-30T05:00:00Z\"\n",
		"{\n  \"version\": 2,\n  \"serial\": 1,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\"version\": 1, \"serial\": 1, \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
		"{\n  \"serial\": 1,\n  \"version\": 1,\n  \"generated_at\": \"2026-11-30T05:00:00Z\",\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t sv = -1, at = -1;
		size_t body = 99;
		if (fleet_spire_nodes_head(bad[i], strlen(bad[i]), &sv, &at, &body))
			fail_msg("head read from bad[%zu]", i);
		assert_int_equal(sv, -1); /* nothing set on a refusal */
		assert_int_equal(body, 99);
	}
	const char *ok =
		"{\n  \"version\": 1,\n  \"serial\": 9007199254740991,\n  \"generated_at\": \"9999-12-31T23:59:59Z\",\n";
	int64_t sv, at;
	size_t body;
	assert_true(fleet_spire_nodes_head(ok, strlen(ok), &sv, &at, &body));
	assert_int_equal(sv, FLEET_SPIRE_SERIAL_MAX);
	assert_int_equal(body, strlen(ok));
	assert_false(fleet_spire_nodes_head(NULL, 0, &sv, &at, &body));
	fleet_spire_nodes_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),    cmocka_unit_test(test_list_cap),
		cmocka_unit_test(test_file_cap), cmocka_unit_test(test_order),
		cmocka_unit_test(test_times),    cmocka_unit_test(test_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
