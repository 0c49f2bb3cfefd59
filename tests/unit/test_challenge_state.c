/*
 * test_challenge_state.c: the sealed two-round state (lib/challenge_state.h
 * CS1-CS3), each test named after its rule.
 */
#include "tests/testutil.h"

#include <string.h>

#include <openssl/err.h>

#include "lib/challenge_state.h"

static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t csr[32] = {0xc5};
static const uint8_t state[] = "the MakeCredential secret, the EK's and the AK's names";

static void seal(struct fleet_buf *out, int64_t now, unsigned ttl)
{
	fb_init(out);
	assert_int_equal(fleet_challenge_seal(key, csr, now, ttl, state, sizeof(state), out),
			 FLEET_OK);
}

static void refused(const uint8_t *k, const uint8_t *c, int64_t now, const struct fleet_buf *s,
		    const char *reason)
{
	struct fleet_buf pt;
	struct fleet_errctx ec = {0};
	fb_init_secret(&pt, FLEET_CHALLENGE_MAX_STATE);
	assert_int_not_equal(fleet_challenge_open(k, c, now, s->data, s->len, &pt, &ec), FLEET_OK);
	assert_non_null(ec.reason);
	assert_string_equal(ec.reason, reason);
	assert_int_equal(pt.len, 0); /* CS3 */
	assert_int_equal(ERR_peek_error(), 0);
	fb_free(&pt);
}

static void test_cs1_seal(void **st)
{
	(void)st;
	struct fleet_buf out, pt;
	struct fleet_errctx ec = {0};
	seal(&out, 1000, 300);
	assert_int_equal(out.len, FLEET_CHALLENGE_OVERHEAD + sizeof(state));
	assert_memory_equal(out.data, "fcs1", 4);
	fb_init_secret(&pt, FLEET_CHALLENGE_MAX_STATE);
	assert_int_equal(fleet_challenge_open(key, csr, 1300, out.data, out.len, &pt, &ec), FLEET_OK);
	assert_int_equal(pt.len, sizeof(state));
	assert_memory_equal(pt.data, state, sizeof(state));
	/* Two sealings of one state are unrelated (a fresh nonce each). */
	struct fleet_buf two;
	seal(&two, 1000, 300);
	assert_memory_not_equal(out.data + 44, two.data + 44, 12);
	/* What the opener would refuse is never sealed. */
	struct fleet_buf none;
	fb_init(&none);
	assert_int_equal(fleet_challenge_seal(key, csr, 1000, 0, state, 1, &none), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_challenge_seal(key, csr, 1000, FLEET_CHALLENGE_MAX_TTL + 1, state, 1,
					      &none),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_challenge_seal(key, csr, 1000, 60, state, 0, &none), FLEET_E_INVALID_ARG);
	uint8_t big[FLEET_CHALLENGE_MAX_STATE + 1] = {0};
	assert_int_equal(fleet_challenge_seal(key, csr, 1000, 60, big, sizeof(big), &none),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(none.len, 0);
	fb_free(&none);
	fb_free(&two);
	fb_free(&pt);
	fb_free(&out);
}

static void test_cs2_refusals(void **st)
{
	(void)st;
	struct fleet_buf s;
	seal(&s, 1000, 300);
	/* the layout */
	struct fleet_buf cut = s;
	cut.len = FLEET_CHALLENGE_OVERHEAD; /* no ciphertext */
	refused(key, csr, 1000, &cut, FLEET_CHALLENGE_REASON_MALFORMED);
	s.data[3] = '2';
	refused(key, csr, 1000, &s, FLEET_CHALLENGE_REASON_MALFORMED);
	s.data[3] = '1';
	/* another CSR: named before any decryption */
	uint8_t other[32] = {0xc6};
	refused(key, other, 1000, &s, FLEET_CHALLENGE_REASON_CSR);
	/* another key, and every byte past the magic and hash changed */
	uint8_t k2[32];
	memcpy(k2, key, 32);
	k2[31] ^= 1;
	refused(k2, csr, 1000, &s, FLEET_CHALLENGE_REASON_TAG);
	for (size_t i = 4; i < s.len; i++) {
		if (i >= 12 && i < 44)
			continue; /* the CSR's hash: its own reason, above */
		s.data[i] ^= 0x40;
		refused(key, csr, 1000, &s, FLEET_CHALLENGE_REASON_TAG);
		s.data[i] ^= 0x40;
	}
	/* the time, read after the tag */
	refused(key, csr, 1301, &s, FLEET_CHALLENGE_REASON_EXPIRED);
	refused(key, csr, 699, &s, FLEET_CHALLENGE_REASON_EXPIRED); /* 301 s ahead */
	fb_free(&s);
}

/* The fuzz target's seed is a sealing its key and CSR open (so the fuzzer
 * starts past the tag). */
static void test_corpus_seed(void **st)
{
	(void)st;
	static const uint8_t fkey[32] = {7}, fcsr[32] = {9};
	struct fleet_buf seed, pt;
	struct fleet_errctx ec = {0};
	fb_init(&seed);
	read_file_or_fail(FLEET_SOURCE_DIR "/tests/fuzz/corpus/fuzz_challenge_state/valid", &seed);
	fb_init_secret(&pt, FLEET_CHALLENGE_MAX_STATE);
	assert_int_equal(fleet_challenge_open(fkey, fcsr, 1000, seed.data, seed.len, &pt, &ec),
			 FLEET_OK);
	assert_int_equal(pt.len, seed.len - FLEET_CHALLENGE_OVERHEAD);
	fb_free(&pt);
	fb_free(&seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cs1_seal),
		cmocka_unit_test(test_cs2_refusals),
		cmocka_unit_test(test_corpus_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
