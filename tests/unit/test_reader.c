/* The bounded reader, the byte builder and hex: the ground every parser stands on. */
#include "tests/testutil.h"

#include <string.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/reader.h"

static void reads_integers_in_both_orders(void **state)
{
	(void)state;
	const uint8_t in[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
	struct fleet_reader r;
	uint16_t a;
	uint32_t b;
	fr_init(&r, in, sizeof(in));
	assert_int_equal(fr_u16le(&r, &a), FLEET_OK);
	assert_int_equal(a, 0x0201);
	assert_int_equal(fr_u16be(&r, &a), FLEET_OK);
	assert_int_equal(a, 0x0304);
	assert_int_equal(fr_u32le(&r, &b), FLEET_OK);
	assert_int_equal(b, 0x08070605);
	assert_true(fr_at_end(&r));
}

static void refuses_past_the_end_without_moving(void **state)
{
	(void)state;
	const uint8_t in[] = {1, 2, 3};
	struct fleet_reader r;
	uint32_t v;
	fr_init(&r, in, sizeof(in));
	assert_int_equal(fr_skip(&r, 1), FLEET_OK);
	assert_int_equal(fr_u32le(&r, &v), FLEET_E_TRUNCATED);
	assert_int_equal(fr_offset(&r), 1); /* still where the bad field starts */
	const uint8_t *p;
	assert_int_equal(fr_ptr(&r, SIZE_MAX, &p), FLEET_E_TRUNCATED); /* no wrap */
	assert_int_equal(fr_ptr(&r, 3, &p), FLEET_E_TRUNCATED);
	assert_int_equal(fr_ptr(&r, 2, &p), FLEET_OK);
	assert_true(fr_at_end(&r));
}

static void sub_reader_reports_absolute_offsets(void **state)
{
	(void)state;
	uint8_t in[16] = {0};
	struct fleet_reader r, sub;
	uint8_t x;
	fr_init(&r, in, sizeof(in));
	assert_int_equal(fr_skip(&r, 5), FLEET_OK);
	assert_int_equal(fr_sub(&r, 4, &sub), FLEET_OK);
	assert_int_equal(fr_offset(&r), 9);
	assert_int_equal(fr_skip(&sub, 3), FLEET_OK);
	assert_int_equal(fr_offset(&sub), 8);
	assert_int_equal(fr_u8(&sub, &x), FLEET_OK);
	assert_int_equal(fr_u8(&sub, &x), FLEET_E_TRUNCATED); /* bounded by the sub */
	assert_int_equal(fr_sub(&r, 8, &sub), FLEET_E_TRUNCATED);
}

static void buf_builds_and_caps(void **state)
{
	(void)state;
	struct fleet_buf b;
	fb_init(&b);
	b.max = 6;
	assert_int_equal(fb_put_u16be(&b, 0x0102), FLEET_OK);
	assert_int_equal(fb_put_tpm2b(&b, "ab", 2), FLEET_OK);
	assert_memory_equal(b.data, "\x01\x02\x00\x02" "ab", 6);
	assert_int_equal(fb_put_u8(&b, 1), FLEET_E_TOO_LARGE);
	assert_int_equal(fb_err(&b), FLEET_E_TOO_LARGE); /* sticky */
	fb_free_secret(&b);
	assert_null(b.data);
}

static void hex_round_trip_and_rejects(void **state)
{
	(void)state;
	const uint8_t in[] = {0x00, 0xab, 0xff};
	char out[7];
	uint8_t back[3];
	fleet_hex_encode(in, 3, out);
	assert_string_equal(out, "00abff");
	assert_int_equal(fleet_hex_decode("00ABff", 6, back, 3), FLEET_OK);
	assert_memory_equal(back, in, 3);
	assert_int_equal(fleet_hex_decode("00abf", 5, back, 3), FLEET_E_MALFORMED);
	assert_int_equal(fleet_hex_decode("00abfg", 6, back, 3), FLEET_E_MALFORMED);
	assert_true(fleet_hex_is_lower("00abff", 6));
	assert_false(fleet_hex_is_lower("00ABff", 6));
	assert_false(fleet_hex_is_lower("00abf", 6));
}

static void error_context_names_offset(void **state)
{
	(void)state;
	struct fleet_errctx ec = {0};
	char msg[256];
	fleet_err e = fleet_errctx_set(&ec, FLEET_E_TRUNCATED, 1234, "event size %u past end", 99u);
	fleet_errctx_format(&ec, e, msg, sizeof(msg));
	assert_string_equal(msg, "truncated at byte 1234: event size 99 past end");
	assert_string_equal(fleet_err_str(FLEET_E_VERIFY), "verify-failed");
	assert_string_equal(fleet_err_str((fleet_err)999), "unknown-error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_integers_in_both_orders),
		cmocka_unit_test(refuses_past_the_end_without_moving),
		cmocka_unit_test(sub_reader_reports_absolute_offsets),
		cmocka_unit_test(buf_builds_and_caps),
		cmocka_unit_test(hex_round_trip_and_rejects),
		cmocka_unit_test(error_context_names_offset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
