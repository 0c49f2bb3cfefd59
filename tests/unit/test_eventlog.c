/*
 * test_eventlog.c: the TCG event log parser and replay on synthetic logs
 * written by lib/eventlog_build.c. Expected PCR values are computed here,
 * independently, as the extend chain PCR := H(PCR || H(data)); malformed
 * logs are valid logs with one field damaged, and each assertion names the
 * error kind and the byte offset of that field.
 */
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/eventlog.h"
#include "lib/eventlog_build.h"
#include "lib/hex.h"

static const uint16_t algs3[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256, FLEET_ALG_SHA384};
static const uint16_t algs2[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA256};

/* Header of a crypto-agile log: a 32-byte SHA-1 record whose data is the
 * Spec ID structure (16 + 4 + 4 + 4 + 4n + 1 bytes). */
static size_t agile_header_size(size_t n_algs) { return 32 + 29 + 4 * n_algs; }

static struct fleet_evlog_builder *mk(const uint16_t *algs, size_t n)
{
	struct fleet_evlog_builder *b = NULL;
	assert_int_equal(fleet_evlog_builder_new(algs, n, &b), FLEET_OK);
	return b;
}

static void finish_free(struct fleet_evlog_builder *b, struct fleet_buf *out)
{
	fb_init(out);
	assert_int_equal(fleet_evlog_builder_finish(b, out), FLEET_OK);
	fleet_evlog_builder_free(b);
}

/* The reference: value := H(value || H(data)), computed from scratch. */
static void chain(uint16_t alg, uint8_t *value, const void *data, size_t len)
{
	size_t n = fleet_hash_alg_size(alg);
	uint8_t buf[2 * FLEET_DIGEST_MAX];
	memcpy(buf, value, n);
	assert_int_equal(fleet_hash(alg, data, len, buf + n), FLEET_OK);
	assert_int_equal(fleet_hash(alg, buf, 2 * n, value), FLEET_OK);
}

static struct fleet_evlog *parse_ok(const struct fleet_buf *b)
{
	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_evlog_parse(b->data, b->len, &log, &ec);
	if (e != FLEET_OK)
		fail_msg("parse failed: %s at %zu: %s", fleet_err_str(e), ec.offset, ec.detail);
	return log;
}

static void expect_error(const uint8_t *p, size_t len, fleet_err want, size_t offset)
{
	struct fleet_evlog *log = (struct fleet_evlog *)1;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_evlog_parse(p, len, &log, &ec);
	if (e != want || !ec.has_offset || ec.offset != offset)
		fail_msg("want %s at %zu, got %s at %zu (%s)", fleet_err_str(want), offset,
			 fleet_err_str(e), ec.offset, ec.detail);
	assert_null(log);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
	p[3] = (uint8_t)(v >> 24);
}

static void replay_ok(const struct fleet_evlog *log, struct fleet_pcr_replay *r)
{
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_evlog_replay(log, r, &ec), FLEET_OK);
}

static const char *const sample[] = {"first", "second event", "", "the fourth"};
static const uint32_t sample_pcr[] = {0, 4, 7, 4};

/* A three-bank log of the sample events. */
static void sample_log(struct fleet_buf *out)
{
	struct fleet_evlog_builder *b = mk(algs3, 3);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(fleet_evlog_builder_add(b, sample_pcr[i], FLEET_EV_EFI_ACTION,
							 sample[i], strlen(sample[i])),
				 FLEET_OK);
	finish_free(b, out);
}

static void test_replay_equals_extend_chain(void **state)
{
	(void)state;
	struct fleet_buf buf;
	sample_log(&buf);
	struct fleet_evlog *log = parse_ok(&buf);
	assert_int_equal(log->format, FLEET_EVLOG_CRYPTO_AGILE);
	assert_int_equal(log->n_algs, 3);
	assert_int_equal(log->n_events, 5); /* the header, then four */
	assert_int_equal(log->events[1].offset, agile_header_size(3));
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	assert_int_equal(r.n_banks, 3);
	for (size_t b = 0; b < 3; b++) {
		uint8_t want[FLEET_PCR_COUNT][FLEET_DIGEST_MAX] = {{0}};
		for (size_t p = 17; p <= 22; p++) /* their TPM2_Startup value */
			memset(want[p], 0xFF, sizeof(want[p]));
		for (size_t i = 0; i < 4; i++)
			chain(algs3[b], want[sample_pcr[i]], sample[i], strlen(sample[i]));
		const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, algs3[b]);
		assert_non_null(bank);
		assert_true(bank->replayable);
		assert_int_equal(bank->extended, (1u << 0) | (1u << 4) | (1u << 7));
		for (size_t p = 0; p < FLEET_PCR_COUNT; p++)
			assert_memory_equal(bank->pcr[p], want[p], bank->size);
	}
	assert_null(fleet_pcr_replay_bank(&r, FLEET_ALG_SHA512));
	fleet_evlog_free(log);
	fb_free(&buf);
}

static void test_no_action_does_not_extend(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add(b, 5, FLEET_EV_NO_ACTION, "x", 1), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 4, FLEET_EV_SEPARATOR, "\0\0\0\0", 4),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 4, FLEET_EV_NO_ACTION, "y", 1), FLEET_OK);
	/* PCR 17 starts at all ones (no dynamic launch reset it). */
	assert_int_equal(fleet_evlog_builder_add(b, 17, FLEET_EV_EFI_ACTION, "z", 1), FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	uint8_t want[FLEET_DIGEST_MAX] = {0};
	chain(FLEET_ALG_SHA256, want, "\0\0\0\0", 4);
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, FLEET_ALG_SHA256);
	assert_int_equal(bank->extended, (1u << 4) | (1u << 17)); /* not PCR 5 */
	assert_memory_equal(bank->pcr[4], want, 32);
	memset(want, 0xFF, 32);
	chain(FLEET_ALG_SHA256, want, "z", 1);
	assert_memory_equal(bank->pcr[17], want, 32);
	fleet_evlog_free(log);
	fb_free(&buf);
}

static void test_missing_bank_not_replayable(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add(b, 7, FLEET_EV_EFI_ACTION, "a", 1), FLEET_OK);
	struct fleet_evlog_digest d = {.alg = FLEET_ALG_SHA256, .size = 32};
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, "b", 1, d.bytes), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add_digests(b, 7, FLEET_EV_EFI_ACTION, "b", 1, &d, 1),
			 FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	const struct fleet_pcr_bank *sha1 = fleet_pcr_replay_bank(&r, FLEET_ALG_SHA1);
	const struct fleet_pcr_bank *sha256 = fleet_pcr_replay_bank(&r, FLEET_ALG_SHA256);
	assert_false(sha1->replayable);
	assert_int_equal(sha1->extended, 0);
	static const uint8_t zero[FLEET_DIGEST_MAX];
	assert_memory_equal(sha1->pcr[7], zero, 20); /* no partial value left behind */
	assert_true(sha256->replayable);
	uint8_t want[FLEET_DIGEST_MAX] = {0};
	chain(FLEET_ALG_SHA256, want, "a", 1);
	chain(FLEET_ALG_SHA256, want, "b", 1);
	assert_memory_equal(sha256->pcr[7], want, 32);

	json_t *j = fleet_evlog_replay_json(&r, log->format);
	assert_non_null(j);
	json_t *pcrs = json_object_get(j, "pcrs");
	assert_null(json_object_get(pcrs, "sha1"));
	char hex[65];
	fleet_hex_encode(want, 32, hex);
	assert_string_equal(json_string_value(json_object_get(json_object_get(pcrs, "sha256"), "7")),
			    hex);
	json_decref(j);
	fleet_evlog_free(log);
	fb_free(&buf);
}

static void test_json_exact_shape(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add(b, 10, FLEET_EV_IPL, "k", 1), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 2, FLEET_EV_IPL, "m", 1), FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	char h[4][129];
	uint8_t v[FLEET_DIGEST_MAX];
	memset(v, 0, sizeof(v)), chain(FLEET_ALG_SHA1, v, "m", 1), fleet_hex_encode(v, 20, h[0]);
	memset(v, 0, sizeof(v)), chain(FLEET_ALG_SHA1, v, "k", 1), fleet_hex_encode(v, 20, h[1]);
	memset(v, 0, sizeof(v)), chain(FLEET_ALG_SHA256, v, "m", 1), fleet_hex_encode(v, 32, h[2]);
	memset(v, 0, sizeof(v)), chain(FLEET_ALG_SHA256, v, "k", 1), fleet_hex_encode(v, 32, h[3]);
	char want[1024];
	snprintf(want, sizeof(want),
		 "{\"format\":\"crypto-agile\",\"pcrs\":{\"sha1\":{\"2\":\"%s\",\"10\":\"%s\"},"
		 "\"sha256\":{\"2\":\"%s\",\"10\":\"%s\"}}}",
		 h[0], h[1], h[2], h[3]);
	char *got = fleet_evlog_replay_json_str(&r, log->format);
	assert_string_equal(got, want);
	free(got);
	fleet_evlog_free(log);
	fb_free(&buf);
}

static void test_startup_locality_3(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_S_CRTM_VERSION, "v1", 2), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 1, FLEET_EV_EFI_ACTION, "c", 1), FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	assert_int_equal(log->startup_locality, 3);
	assert_false(log->hcrtm);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	for (size_t i = 0; i < 2; i++) {
		size_t n = fleet_hash_alg_size(algs2[i]);
		uint8_t pcr0[FLEET_DIGEST_MAX] = {0}, pcr1[FLEET_DIGEST_MAX] = {0};
		pcr0[n - 1] = 3; /* only PCR 0 starts at the locality */
		chain(algs2[i], pcr0, "v1", 2);
		chain(algs2[i], pcr1, "c", 1);
		const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, algs2[i]);
		assert_memory_equal(bank->pcr[0], pcr0, n);
		assert_memory_equal(bank->pcr[1], pcr1, n);
	}
	fleet_evlog_free(log);
	fb_free(&buf);
}

static void test_startup_locality_rules(void **state)
{
	(void)state;
	/* After PCR 0 was extended, a StartupLocality event cannot change
	 * where it started. */
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_S_CRTM_VERSION, "v", 1), FLEET_OK);
	size_t second = agile_header_size(2) + 12 + 22 + 34 + 1 + 4; /* after one event */
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	expect_error(buf.data, buf.len, FLEET_E_MALFORMED, second);
	fb_free(&buf);

	/* Locality 2 is no locality TPM2_Startup comes from. */
	b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 2), FLEET_OK);
	finish_free(b, &buf);
	expect_error(buf.data, buf.len, FLEET_E_MALFORMED, agile_header_size(2));
	fb_free(&buf);

	/* Two StartupLocality events: the second is refused. */
	b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	finish_free(b, &buf);
	expect_error(buf.data, buf.len, FLEET_E_MALFORMED,
		     agile_header_size(2) + 12 + 22 + 34 + 4 + 17);
	fb_free(&buf);
}

static void test_hcrtm(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 4), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add_measured(b, 0, FLEET_EV_EFI_HCRTM_EVENT, "HCRTM",
							  5, "hcrtm image", 11),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_SEPARATOR, "\0\0\0\0", 4),
			 FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	assert_true(log->hcrtm);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	uint8_t want[FLEET_DIGEST_MAX] = {0};
	want[31] = 4;
	chain(FLEET_ALG_SHA256, want, "hcrtm image", 11);
	chain(FLEET_ALG_SHA256, want, "\0\0\0\0", 4);
	assert_memory_equal(fleet_pcr_replay_bank(&r, FLEET_ALG_SHA256)->pcr[0], want, 32);
	fleet_evlog_free(log);
	fb_free(&buf);

	/* An H-CRTM event alone (no StartupLocality event) also starts PCR 0
	 * at 00..04: the reset comes from _TPM_Hash_End, not from a log line. */
	b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add_measured(b, 0, FLEET_EV_EFI_HCRTM_EVENT, "HCRTM",
							  5, "hcrtm image", 11),
			 FLEET_OK);
	finish_free(b, &buf);
	log = parse_ok(&buf);
	assert_true(log->hcrtm);
	assert_int_equal(log->startup_locality, -1);
	replay_ok(log, &r);
	memset(want, 0, sizeof(want));
	want[19] = 4;
	chain(FLEET_ALG_SHA1, want, "hcrtm image", 11);
	assert_memory_equal(fleet_pcr_replay_bank(&r, FLEET_ALG_SHA1)->pcr[0], want, 20);
	fleet_evlog_free(log);
	fb_free(&buf);

	/* Locality 3 and an H-CRTM contradict each other: refused at the
	 * StartupLocality event. */
	b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_EFI_HCRTM_EVENT, "HCRTM", 5),
			 FLEET_OK);
	finish_free(b, &buf);
	expect_error(buf.data, buf.len, FLEET_E_MALFORMED, agile_header_size(2));
	fb_free(&buf);

	/* An H-CRTM event after something else extended PCR 0. */
	b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_S_CRTM_VERSION, "v", 1), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_EFI_HCRTM_EVENT, "HCRTM", 5),
			 FLEET_OK);
	finish_free(b, &buf);
	expect_error(buf.data, buf.len, FLEET_E_MALFORMED,
		     agile_header_size(2) + 12 + 22 + 34 + 4 + 1);
	fb_free(&buf);
}

static void sha1_log(struct fleet_buf *buf)
{
	fb_init(buf);
	assert_int_equal(fleet_evlog_sha1_append(buf, 0, FLEET_EV_S_CRTM_VERSION, NULL, "v", 1),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_sha1_append(buf, 4, FLEET_EV_EFI_ACTION, NULL, "go", 2),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_sha1_append(buf, 0, FLEET_EV_SEPARATOR, NULL, "\0\0\0\0", 4),
			 FLEET_OK);
}

static void test_sha1_format(void **state)
{
	(void)state;
	struct fleet_buf buf;
	sha1_log(&buf);
	struct fleet_evlog *log = parse_ok(&buf);
	assert_int_equal(log->format, FLEET_EVLOG_SHA1);
	assert_int_equal(log->n_events, 3);
	assert_int_equal(log->n_algs, 1);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	uint8_t p0[20] = {0}, p4[20] = {0};
	chain(FLEET_ALG_SHA1, p0, "v", 1);
	chain(FLEET_ALG_SHA1, p0, "\0\0\0\0", 4);
	chain(FLEET_ALG_SHA1, p4, "go", 2);
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&r, FLEET_ALG_SHA1);
	assert_memory_equal(bank->pcr[0], p0, 20);
	assert_memory_equal(bank->pcr[4], p4, 20);
	char *j = fleet_evlog_replay_json_str(&r, log->format);
	assert_non_null(strstr(j, "{\"format\":\"sha1\",\"pcrs\":{\"sha1\":{\"0\":"));
	free(j);
	fleet_evlog_free(log);
	fb_free(&buf);
}

/* Two digests, so that a cut between them exercises the count. */
static void two_event_log(struct fleet_buf *buf)
{
	struct fleet_evlog_builder *b = mk(algs2, 2);
	assert_int_equal(fleet_evlog_builder_add(b, 4, FLEET_EV_EFI_ACTION, "abc", 3), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 5, FLEET_EV_EFI_ACTION, "de", 2), FLEET_OK);
	finish_free(b, buf);
}

static void test_malformed_offsets(void **state)
{
	(void)state;
	struct fleet_buf buf;
	two_event_log(&buf);
	const size_t ev = agile_header_size(2); /* the first event after the header */
	const size_t alg1 = ev + 12, alg2 = alg1 + 2 + 20, size = alg2 + 2 + 32;
	uint8_t *p = malloc(buf.len);

	expect_error(buf.data, 0, FLEET_E_TRUNCATED, 0); /* empty */

	/* The log ends after the first of its two digests. */
	expect_error(buf.data, alg2, FLEET_E_TRUNCATED, alg2);

	/* A digest count beyond the table. */
	memcpy(p, buf.data, buf.len), put32(p + ev + 8, 3);
	expect_error(p, buf.len, FLEET_E_MALFORMED, ev + 8);

	/* An event size past the end names the size field. */
	memcpy(p, buf.data, buf.len), put32(p + size, 0xFFFFFFF0u);
	expect_error(p, buf.len, FLEET_E_TRUNCATED, size);
	memcpy(p, buf.data, buf.len), put32(p + size, (uint32_t)(buf.len - size - 4 + 1));
	expect_error(p, buf.len, FLEET_E_TRUNCATED, size);

	/* sha384 is a real algorithm, but not in this log's table. */
	memcpy(p, buf.data, buf.len), p[alg2] = 0x0C;
	expect_error(p, buf.len, FLEET_E_MALFORMED, alg2);

	/* The same bank twice in one event. */
	memcpy(p, buf.data, buf.len), p[alg2] = 0x04;
	expect_error(p, buf.len, FLEET_E_MALFORMED, alg2);

	/* PCR 24 on an extending event. */
	memcpy(p, buf.data, buf.len), put32(p + ev, 24);
	expect_error(p, buf.len, FLEET_E_MALFORMED, ev);

	/* ...but an EV_NO_ACTION on PCR 0xFFFFFFFF, as Windows writes, parses. */
	memcpy(p, buf.data, buf.len), put32(p + ev, 0xFFFFFFFFu), put32(p + ev + 4, 3);
	struct fleet_evlog *log = NULL;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_evlog_parse(p, buf.len, &log, &ec), FLEET_OK);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	assert_int_equal(fleet_pcr_replay_bank(&r, FLEET_ALG_SHA1)->extended, 1u << 5);
	fleet_evlog_free(log);

	/* Spec ID: sha256 declared with 20 bytes (offset 32 + 28 + 4 + 2). */
	memcpy(p, buf.data, buf.len), p[32 + 28 + 4 + 2] = 20;
	expect_error(p, buf.len, FLEET_E_MALFORMED, 32 + 28 + 4 + 2);
	/* Spec ID: no algorithms. */
	memcpy(p, buf.data, buf.len), put32(p + 32 + 24, 0);
	expect_error(p, buf.len, FLEET_E_MALFORMED, 32 + 24);

	/* Fewer zero bytes than a record are a cut record, not padding: the
	 * size field is the first that does not fit. */
	uint8_t *q = calloc(1, buf.len + 40);
	memcpy(q, buf.data, buf.len);
	expect_error(q, buf.len + 15, FLEET_E_TRUNCATED, buf.len + 12);
	/* Non-zero bytes after the last event are not padding but a record,
	 * here one whose digest names algorithm 0x0000. */
	q[buf.len + 8] = 1;
	expect_error(q, buf.len + 40, FLEET_E_MALFORMED, buf.len + 12);
	/* A zero run of at least one record ends the log. */
	q[buf.len + 8] = 0;
	assert_int_equal(fleet_evlog_parse(q, buf.len + 16, &log, &ec), FLEET_OK);
	assert_int_equal(log->n_events, 3);
	fleet_evlog_free(log);
	assert_int_equal(fleet_evlog_parse(q, buf.len + 40, &log, &ec), FLEET_OK);
	assert_int_equal(log->n_events, 3);
	fleet_evlog_free(log);
	free(q);
	free(p);
	fb_free(&buf);
}

/* Every prefix of a valid log is either a shorter valid log (the cut falls
 * exactly on an event boundary) or a truncation error naming an offset
 * inside the event that was cut. */
static void check_every_cut(const struct fleet_buf *buf)
{
	struct fleet_evlog *full = parse_ok(buf);
	for (size_t cut = 0; cut < buf->len; cut++) {
		/* A copy of exactly cut bytes, so ASan sees any over-read. */
		uint8_t *p = malloc(cut ? cut : 1);
		memcpy(p, buf->data, cut);
		size_t boundary = 0, start = 0;
		for (size_t i = 0; i < full->n_events; i++) {
			if (full->events[i].offset == cut)
				boundary = i;
			if (full->events[i].offset <= cut)
				start = full->events[i].offset;
		}
		struct fleet_evlog *log = NULL;
		struct fleet_errctx ec = {0};
		fleet_err e = fleet_evlog_parse(p, cut, &log, &ec);
		if (boundary > 0) {
			if (e != FLEET_OK)
				fail_msg("cut at boundary %zu: %s", cut, ec.detail);
			assert_int_equal(log->n_events, boundary);
		} else {
			if (e != FLEET_E_TRUNCATED || !ec.has_offset || ec.offset < start ||
			    ec.offset > cut)
				fail_msg("cut at %zu: got %s at %zu, want truncated in [%zu,%zu]",
					 cut, fleet_err_str(e), ec.offset, start, cut);
			assert_null(log);
		}
		fleet_evlog_free(log);
		free(p);
	}
	fleet_evlog_free(full);
}

static void test_truncation_every_byte(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs3, 3);
	assert_int_equal(fleet_evlog_builder_add_startup_locality(b, 3), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 0, FLEET_EV_S_CRTM_VERSION, "v", 1), FLEET_OK);
	assert_int_equal(fleet_evlog_builder_add(b, 7, FLEET_EV_SEPARATOR, "\0\0\0\0", 4),
			 FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	check_every_cut(&buf);
	fb_free(&buf);
	sha1_log(&buf);
	check_every_cut(&buf);
	fb_free(&buf);
}

static void test_large_log_and_cap(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	static uint8_t blob[1000];
	uint8_t want[FLEET_DIGEST_MAX] = {0};
	for (size_t i = 0; i < 90; i++) {
		memset(blob, (int)i, sizeof(blob));
		assert_int_equal(fleet_evlog_builder_add(b, 8, FLEET_EV_IPL, blob, sizeof(blob)),
				 FLEET_OK);
		chain(FLEET_ALG_SHA256, want, blob, sizeof(blob));
	}
	struct fleet_buf buf;
	finish_free(b, &buf);
	assert_true(buf.len > 64 * 1024);
	struct fleet_evlog *log = parse_ok(&buf);
	struct fleet_pcr_replay r;
	replay_ok(log, &r);
	assert_memory_equal(fleet_pcr_replay_bank(&r, FLEET_ALG_SHA256)->pcr[8], want, 32);
	fleet_evlog_free(log);

	/* One byte over the cap is refused before anything is read. */
	uint8_t *big = calloc(1, (size_t)FLEET_EVLOG_MAX_SIZE + 1);
	assert_non_null(big);
	memcpy(big, buf.data, buf.len);
	expect_error(big, (size_t)FLEET_EVLOG_MAX_SIZE + 1, FLEET_E_TOO_LARGE,
		     FLEET_EVLOG_MAX_SIZE);
	free(big);
	fb_free(&buf);
}

static const uint8_t efi_global[16] = {0x61, 0xdf, 0xe4, 0x8b, 0xca, 0x93, 0xd2, 0x11,
				       0xaa, 0x0d, 0x00, 0xe0, 0x98, 0x03, 0x2b, 0x8c};

static void test_efi_variable(void **state)
{
	(void)state;
	char g[37];
	fleet_efi_guid_str(efi_global, g);
	assert_string_equal(g, "8be4df61-93ca-11d2-aa0d-00e098032b8c");
	struct fleet_buf data;
	fb_init(&data);
	assert_int_equal(fleet_evlog_efi_variable_data(efi_global, "SecureBoot", "\1", 1, &data),
			 FLEET_OK);
	struct fleet_evlog_event ev = {.type = FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
				       .data = data.data, .data_len = (uint32_t)data.len};
	struct fleet_efi_var v;
	assert_int_equal(fleet_evlog_efi_variable(&ev, &v), FLEET_OK);
	assert_string_equal(v.name, "SecureBoot");
	assert_int_equal(v.data_len, 1);
	assert_int_equal(v.data[0], 1);
	char d[256];
	fleet_evlog_describe(&ev, d, sizeof(d));
	assert_string_equal(d, "8be4df61-93ca-11d2-aa0d-00e098032b8c SecureBoot (1 bytes)");
	/* A data length that disagrees with the bytes there is refused. */
	ev.data_len--;
	assert_int_equal(fleet_evlog_efi_variable(&ev, &v), FLEET_E_MALFORMED);
	fb_free(&data);
	assert_string_equal(fleet_evlog_type_name(FLEET_EV_EFI_VARIABLE_AUTHORITY),
			    "EV_EFI_VARIABLE_AUTHORITY");
	assert_string_equal(fleet_evlog_type_name(0x1234), "EV_UNKNOWN");
}

static void test_describe_boot_application(void **state)
{
	(void)state;
	struct fleet_buf dp, data;
	fb_init(&dp), fb_init(&data);
	uint8_t acpi[8] = {0xD0, 0x41, 0x03, 0x0A, 0, 0, 0, 0}; /* PNP0A03, UID 0 */
	uint8_t pci[2] = {0x0, 0x1F};                          /* function 0, device 0x1f */
	uint8_t hd[42] = {0};
	hd[0] = 1;                          /* partition 1 */
	hd[4] = 0x00, hd[5] = 0x08;         /* start 0x800 */
	hd[12] = 0x00, hd[13] = 0x00, hd[14] = 0x10; /* size 0x100000 */
	memcpy(hd + 20, efi_global, 16);
	hd[36] = 2, hd[37] = 2; /* GPT */
	uint8_t file[] = {'\\', 0, 'a', 0, '.', 0, 'e', 0, 'f', 0, 'i', 0, 0, 0};
	fleet_evlog_devpath_node(&dp, 0x02, 0x01, acpi, sizeof(acpi));
	fleet_evlog_devpath_node(&dp, 0x01, 0x01, pci, sizeof(pci));
	fleet_evlog_devpath_node(&dp, 0x04, 0x01, hd, 38);
	fleet_evlog_devpath_node(&dp, 0x04, 0x04, file, sizeof(file));
	uint8_t mac[33] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	mac[32] = 1;
	fleet_evlog_devpath_node(&dp, 0x7F, 0x01, NULL, 0);
	fleet_evlog_devpath_node(&dp, 0x03, 0x0B, mac, sizeof(mac));
	fleet_evlog_devpath_node(&dp, 0x03, 0x18, "http://x/b.efi", 14);
	fleet_evlog_devpath_node(&dp, 0x05, 0x01, "zz", 2);
	fleet_evlog_devpath_node(&dp, 0x7F, 0xFF, NULL, 0);
	assert_int_equal(fb_err(&dp), FLEET_OK);
	assert_int_equal(fleet_evlog_efi_image_load_data(0x1000, 4096, 0, dp.data, dp.len, &data),
			 FLEET_OK);
	struct fleet_evlog_event ev = {.type = FLEET_EV_EFI_BOOT_SERVICES_APPLICATION,
				       .data = data.data, .data_len = (uint32_t)data.len};
	char d[512];
	fleet_evlog_describe(&ev, d, sizeof(d));
	assert_string_equal(d, "image at 0x1000, 4096 bytes: PciRoot(0x0)/Pci(0x1f,0x0)/"
			       "HD(1,GPT,8be4df61-93ca-11d2-aa0d-00e098032b8c,0x800,0x100000)/"
			       "\\\\a.efi,MAC(525400123456,0x1)/Uri(http://x/b.efi)/"
			       "Path(0x5,0x1,2 bytes)");
	/* A node whose length is below its own header stops the decode and
	 * says where, instead of looping or reading past the node. */
	data.data[32 + 2] = 2;
	fleet_evlog_describe(&ev, d, sizeof(d));
	assert_string_equal(d, "image at 0x1000, 4096 bytes: <bad device path at byte 32>");
	/* A small output buffer is filled and terminated, never overrun. */
	char small[8];
	fleet_evlog_describe(&ev, small, sizeof(small));
	assert_string_equal(small, "image a");
	fb_free(&dp), fb_free(&data);
}

static void test_builder_last_digests(void **state)
{
	(void)state;
	struct fleet_evlog_builder *b = mk(algs2, 2);
	const struct fleet_evlog_digest *d;
	size_t n;
	assert_int_equal(fleet_evlog_builder_last_digests(b, &d, &n), FLEET_E_NOT_FOUND);
	assert_int_equal(fleet_evlog_builder_add_measured(b, 4, FLEET_EV_EFI_BOOT_SERVICES_APPLICATION,
							  "desc", 4, "image", 5),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_builder_last_digests(b, &d, &n), FLEET_OK);
	assert_int_equal(n, 2);
	uint8_t want[32];
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, "image", 5, want), FLEET_OK);
	assert_int_equal(d[1].alg, FLEET_ALG_SHA256);
	assert_memory_equal(d[1].bytes, want, 32);
	/* The builder refuses what the parser would refuse. */
	assert_int_equal(fleet_evlog_builder_add(b, 24, FLEET_EV_EFI_ACTION, "x", 1),
			 FLEET_E_INVALID_ARG);
	struct fleet_evlog_digest bad = {.alg = FLEET_ALG_SHA384, .size = 48};
	assert_int_equal(fleet_evlog_builder_add_digests(b, 1, FLEET_EV_EFI_ACTION, "x", 1, &bad, 1),
			 FLEET_E_INVALID_ARG);
	fleet_evlog_builder_free(b);
	uint16_t dup[] = {FLEET_ALG_SHA1, FLEET_ALG_SHA1};
	assert_int_equal(fleet_evlog_builder_new(dup, 2, &b), FLEET_E_INVALID_ARG);
	assert_null(b);
}

static void test_data_matches_digest(void **state)
{
	(void)state;
	struct fleet_buf zero, one;
	fb_init(&zero), fb_init(&one);
	assert_int_equal(fleet_evlog_efi_variable_data(efi_global, "SecureBoot", "\0", 1, &zero),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_efi_variable_data(efi_global, "SecureBoot", "\1", 1, &one),
			 FLEET_OK);
	struct fleet_evlog_builder *b = mk(algs2, 2);
	/* Honest: the digests are of the data. */
	assert_int_equal(fleet_evlog_builder_add(b, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
						 one.data, one.len),
			 FLEET_OK);
	/* The lie: the digest the TPM saw says SecureBoot=0, the data says 1. */
	assert_int_equal(fleet_evlog_builder_add_measured(b, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
							  one.data, one.len, zero.data, zero.len),
			 FLEET_OK);
	/* EV_EFI_VARIABLE_BOOT measured over the load option alone. */
	assert_int_equal(fleet_evlog_builder_add_measured(b, 1, FLEET_EV_EFI_VARIABLE_BOOT,
							  one.data, one.len, "\1", 1),
			 FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	assert_true(fleet_evlog_type_binds_data(log->events[1].type));
	assert_false(fleet_evlog_type_binds_data(FLEET_EV_EFI_BOOT_SERVICES_APPLICATION));
	assert_int_equal(fleet_evlog_event_data_matches(&log->events[1]), FLEET_OK);
	assert_int_equal(fleet_evlog_event_data_matches(&log->events[2]), FLEET_E_VERIFY);
	assert_int_equal(fleet_evlog_event_data_matches(&log->events[3]), FLEET_OK);
	/* The same load-option-only digest is no match for other types. */
	struct fleet_evlog_event ev = log->events[3];
	ev.type = FLEET_EV_EFI_VARIABLE_BOOT2;
	assert_int_equal(fleet_evlog_event_data_matches(&ev), FLEET_E_VERIFY);
	/* One bank at a time: the honest event's sha256 proves it; make the
	 * sha1 digest lie and the sha256 still does, while all-banks fails. */
	ev = log->events[1];
	assert_int_equal(fleet_evlog_event_data_matches_bank(&ev, FLEET_ALG_SHA256), FLEET_OK);
	for (uint32_t k = 0; k < ev.n_digests; k++)
		if (ev.digests[k].alg == FLEET_ALG_SHA1)
			ev.digests[k].bytes[0] ^= 1;
	assert_int_equal(fleet_evlog_event_data_matches_bank(&ev, FLEET_ALG_SHA1), FLEET_E_VERIFY);
	assert_int_equal(fleet_evlog_event_data_matches_bank(&ev, FLEET_ALG_SHA256), FLEET_OK);
	assert_int_equal(fleet_evlog_event_data_matches(&ev), FLEET_E_VERIFY);
	assert_int_equal(fleet_evlog_event_data_matches_bank(&ev, FLEET_ALG_SHA384),
			 FLEET_E_NOT_FOUND);
	assert_int_equal(fleet_evlog_event_data_matches_bank(&log->events[2], FLEET_ALG_SHA256),
			 FLEET_E_VERIFY);
	ev = log->events[3];
	/* A digest in no bank fleetd can compute proves nothing. */
	ev.type = FLEET_EV_EFI_VARIABLE_BOOT2;
	ev.n_digests = 1;
	ev.digests[0].alg = 0x0099;
	assert_int_equal(fleet_evlog_event_data_matches(&ev), FLEET_E_UNSUPPORTED);
	fleet_evlog_free(log);
	fb_free(&buf), fb_free(&zero), fb_free(&one);
}

/*
 * What each digest binds. An EV_EFI_VARIABLE_BOOT measured over its
 * VariableData alone binds that data and not its GUID or name: the bound
 * reader must not hand them out, whatever the record says, and the same
 * data-only digest binds nothing under any other type.
 */
static void test_event_bound(void **state)
{
	(void)state;
	struct fleet_buf sb, sb0;
	fb_init(&sb), fb_init(&sb0);
	assert_int_equal(fleet_evlog_efi_variable_data(efi_global, "SecureBoot", "\1", 1, &sb),
			 FLEET_OK);
	assert_int_equal(fleet_evlog_efi_variable_data(efi_global, "SecureBoot", "\0", 1, &sb0),
			 FLEET_OK);
	struct fleet_evlog_builder *b = mk(algs2, 2);
	/* 1: the whole record measured. */
	assert_int_equal(fleet_evlog_builder_add(b, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
						 sb.data, sb.len),
			 FLEET_OK);
	/* 2: a boot variable measured over its VariableData (01) alone. */
	assert_int_equal(fleet_evlog_builder_add_measured(b, 7, FLEET_EV_EFI_VARIABLE_BOOT, sb.data,
							  sb.len, "\1", 1),
			 FLEET_OK);
	/* 3: a digest of something else (SecureBoot=00 beside data saying 01). */
	assert_int_equal(fleet_evlog_builder_add_measured(b, 7, FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
							  sb.data, sb.len, sb0.data, sb0.len),
			 FLEET_OK);
	struct fleet_buf buf;
	finish_free(b, &buf);
	struct fleet_evlog *log = parse_ok(&buf);
	struct fleet_efi_var v;
	enum fleet_evlog_bound bound;
	char g[37];

	const struct fleet_evlog_event *whole = &log->events[1];
	assert_int_equal(fleet_evlog_event_bound(whole, FLEET_ALG_SHA256), FLEET_EVLOG_BOUND_ALL);
	assert_int_equal(fleet_evlog_event_bound(whole, FLEET_ALG_SHA1), FLEET_EVLOG_BOUND_ALL);
	assert_int_equal(fleet_evlog_efi_variable_bound(whole, FLEET_ALG_SHA256, &v, &bound),
			 FLEET_OK);
	assert_int_equal(bound, FLEET_EVLOG_BOUND_ALL);
	assert_string_equal(v.name, "SecureBoot");
	fleet_efi_guid_str(v.guid, g);
	assert_string_equal(g, "8be4df61-93ca-11d2-aa0d-00e098032b8c");
	assert_int_equal(v.data_len, 1);
	assert_int_equal(v.data[0], 1);

	/* Data-only: the data is bound, GUID and name are not given. The
	 * unbound reader still sees the name the log wrote; that is why a
	 * policy never uses it. */
	const struct fleet_evlog_event *data_only = &log->events[2];
	assert_int_equal(fleet_evlog_event_bound(data_only, FLEET_ALG_SHA256),
			 FLEET_EVLOG_BOUND_VARIABLE_DATA);
	assert_int_equal(fleet_evlog_efi_variable_bound(data_only, FLEET_ALG_SHA256, &v, &bound),
			 FLEET_OK);
	assert_int_equal(bound, FLEET_EVLOG_BOUND_VARIABLE_DATA);
	assert_string_equal(v.name, "");
	static const uint8_t zero_guid[16] = {0};
	assert_memory_equal(v.guid, zero_guid, 16);
	assert_int_equal(v.data_len, 1);
	assert_int_equal(v.data[0], 1);
	assert_int_equal(fleet_evlog_efi_variable(data_only, &v), FLEET_OK);
	assert_string_equal(v.name, "SecureBoot");
	/* "Matches" keeps its meaning (some part bound) for tools. */
	assert_int_equal(fleet_evlog_event_data_matches_bank(data_only, FLEET_ALG_SHA256), FLEET_OK);
	/* The same digest under any other type binds nothing: BOOT2 is
	 * measured whole by definition, the rest are not boot variables. */
	static const uint32_t others[] = {FLEET_EV_EFI_VARIABLE_BOOT2,
					  FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG,
					  FLEET_EV_EFI_VARIABLE_AUTHORITY};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		struct fleet_evlog_event ev = *data_only;
		ev.type = others[i];
		assert_int_equal(fleet_evlog_event_bound(&ev, FLEET_ALG_SHA256),
				 FLEET_EVLOG_BOUND_NONE);
		assert_int_equal(fleet_evlog_efi_variable_bound(&ev, FLEET_ALG_SHA256, &v, &bound),
				 FLEET_E_VERIFY);
		assert_int_equal(bound, FLEET_EVLOG_BOUND_NONE);
		assert_string_equal(v.name, "");
		assert_null(v.data);
	}

	/* A digest of other bytes binds nothing, in every bank. */
	const struct fleet_evlog_event *lie = &log->events[3];
	assert_int_equal(fleet_evlog_event_bound(lie, FLEET_ALG_SHA256), FLEET_EVLOG_BOUND_NONE);
	assert_int_equal(fleet_evlog_event_bound(lie, FLEET_ALG_SHA1), FLEET_EVLOG_BOUND_NONE);
	assert_int_equal(fleet_evlog_efi_variable_bound(lie, FLEET_ALG_SHA256, &v, &bound),
			 FLEET_E_VERIFY);
	assert_null(v.data);

	/* Per bank: a lying sha1 digest leaves sha256 bound; a bank the event
	 * lacks, or one fleetd cannot compute, binds nothing. */
	struct fleet_evlog_event ev = *whole;
	for (uint32_t k = 0; k < ev.n_digests; k++)
		if (ev.digests[k].alg == FLEET_ALG_SHA1)
			ev.digests[k].bytes[0] ^= 1;
	assert_int_equal(fleet_evlog_event_bound(&ev, FLEET_ALG_SHA1), FLEET_EVLOG_BOUND_NONE);
	assert_int_equal(fleet_evlog_event_bound(&ev, FLEET_ALG_SHA256), FLEET_EVLOG_BOUND_ALL);
	assert_int_equal(fleet_evlog_event_bound(&ev, FLEET_ALG_SHA384), FLEET_EVLOG_BOUND_NONE);
	ev.n_digests = 1;
	ev.digests[0].alg = 0x0099;
	assert_int_equal(fleet_evlog_event_bound(&ev, 0x0099), FLEET_EVLOG_BOUND_NONE);
	assert_int_equal(fleet_evlog_event_bound(NULL, FLEET_ALG_SHA256), FLEET_EVLOG_BOUND_NONE);

	assert_string_equal(fleet_evlog_bound_name(FLEET_EVLOG_BOUND_ALL), "all");
	assert_string_equal(fleet_evlog_bound_name(FLEET_EVLOG_BOUND_VARIABLE_DATA),
			    "variable-data");
	assert_string_equal(fleet_evlog_bound_name(FLEET_EVLOG_BOUND_NONE), "none");
	fleet_evlog_free(log);
	fb_free(&buf), fb_free(&sb), fb_free(&sb0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_equals_extend_chain),
		cmocka_unit_test(test_no_action_does_not_extend),
		cmocka_unit_test(test_missing_bank_not_replayable),
		cmocka_unit_test(test_json_exact_shape),
		cmocka_unit_test(test_startup_locality_3),
		cmocka_unit_test(test_startup_locality_rules),
		cmocka_unit_test(test_hcrtm),
		cmocka_unit_test(test_sha1_format),
		cmocka_unit_test(test_malformed_offsets),
		cmocka_unit_test(test_truncation_every_byte),
		cmocka_unit_test(test_large_log_and_cap),
		cmocka_unit_test(test_efi_variable),
		cmocka_unit_test(test_describe_boot_application),
		cmocka_unit_test(test_builder_last_digests),
		cmocka_unit_test(test_data_matches_digest),
		cmocka_unit_test(test_event_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
