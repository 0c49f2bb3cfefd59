/*
 * test_join_token.c: a join token's bytes (lib/join_token.h JT1, JT2).
 */
#include "tests/testutil.h"

#include <string.h>

#include "lib/join_token.h"

/* JT2: fresh ids and secrets, ids of 0-9 a-z; JT1: the round trip. */
static void test_join_token(void **state)
{
	struct fleet_join_token a, b, c;
	uint8_t bytes[FLEET_JOIN_TOKEN_LEN], copy[FLEET_JOIN_TOKEN_LEN];
	struct fleet_errctx ec = {0};
	(void)state;
	assert_int_equal(fleet_join_token_new(&a), FLEET_OK);
	assert_int_equal(fleet_join_token_new(&b), FLEET_OK);
	assert_int_equal(strlen(a.id), FLEET_JOIN_TOKEN_ID_LEN);
	assert_true(strcmp(a.id, b.id) != 0);
	assert_true(memcmp(a.secret, b.secret, 32) != 0);
	assert_int_equal(strspn(a.id, "0123456789abcdefghijklmnopqrstuvwxyz"), FLEET_JOIN_TOKEN_ID_LEN);
	assert_int_equal(fleet_join_token_encode(&a, bytes), FLEET_OK);
	assert_memory_equal(bytes, "fjt1", 4);
	assert_int_equal(fleet_join_token_decode(bytes, sizeof(bytes), &c, &ec), FLEET_OK);
	assert_string_equal(c.id, a.id);
	assert_memory_equal(c.secret, a.secret, 32);
	/* JT1: every length but 62, another magic, an id byte out of the set:
	 * refused by name, nothing left in *out. */
	for (size_t n = 0; n < sizeof(bytes) + 2; n++) {
		if (n == sizeof(bytes))
			continue;
		uint8_t big[FLEET_JOIN_TOKEN_LEN + 2] = {0};
		memcpy(big, bytes, n < sizeof(bytes) ? n : sizeof(bytes));
		memset(&ec, 0, sizeof(ec));
		assert_int_equal(fleet_join_token_decode(big, n, &c, &ec), FLEET_E_MALFORMED);
		assert_string_equal(ec.reason, "join-token-malformed");
		assert_int_equal(c.id[0], 0);
	}
	memcpy(copy, bytes, sizeof(bytes));
	copy[3] = '2';
	assert_int_equal(fleet_join_token_decode(copy, sizeof(copy), &c, &ec), FLEET_E_MALFORMED);
	for (size_t i = 4; i < 4 + FLEET_JOIN_TOKEN_ID_LEN; i++) {
		memcpy(copy, bytes, sizeof(bytes));
		copy[i] = 'A';
		assert_int_equal(fleet_join_token_decode(copy, sizeof(copy), &c, &ec), FLEET_E_MALFORMED);
		assert_true(memcmp(c.secret, a.secret, 32) != 0); /* wiped */
	}
	/* An id the encoder would not write is refused there too. */
	c = a;
	c.id[0] = 'A';
	assert_int_equal(fleet_join_token_encode(&c, bytes), FLEET_E_INVALID_ARG);
	fleet_join_token_wipe(&a);
	fleet_join_token_wipe(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_token),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
