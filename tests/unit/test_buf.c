/*
 * test_buf.c: the buffer's kinds (lib/buf.h).
 *
 * Linked with -Wl,--wrap=free,--wrap=realloc (tests/core.cmake): every free
 * and realloc that libfleet's buf.o makes comes here first, so the test sees
 * the bytes of a block at the moment it goes back to the allocator. A secret
 * buffer must never realloc (realloc may move the bytes and free the old
 * block as it was) and must hand back only wiped blocks: on growth, on
 * reset and on free. A capped buffer must refuse growth past its cap,
 * stickily, without allocating more than the cap.
 */
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

void __real_free(void *p);
void *__real_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__wrap_realloc(void *p, size_t n);

/* The block being watched, and what the wrappers saw of it. */
static struct {
	const void *block;
	size_t len;
	int freed;
	int freed_wiped;
	int reallocs;
} W;

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

void __wrap_free(void *p)
{
	if (p && p == W.block) {
		W.freed++;
		W.freed_wiped += all_zero(p, W.len);
		W.block = NULL;
	}
	__real_free(p);
}

void *__wrap_realloc(void *p, size_t n)
{
	if (p && p == W.block)
		W.reallocs++;
	return __real_realloc(p, n);
}

static void watch(const struct fleet_buf *b)
{
	memset(&W, 0, sizeof(W));
	W.block = b->data;
	W.len = b->cap;
}

static void test_plain_grows_by_realloc(void **state)
{
	(void)state;
	/* The wrappers see libfleet's calls: a plain buffer reallocs. */
	struct fleet_buf b;
	fb_init(&b);
	uint8_t x[100];
	memset(x, 0xAA, sizeof(x));
	assert_int_equal(fb_put(&b, x, 50), FLEET_OK);
	watch(&b);
	assert_int_equal(fb_put(&b, x, 100), FLEET_OK);
	assert_int_equal(W.reallocs, 1);
	assert_false(b.secret);
	assert_int_equal(b.max, 0);
	fb_free(&b);
}

/* Growth of a secret: a new block, the bytes copied, the old block wiped
 * before it is freed, never a realloc. */
static void test_secret_growth_wipes_the_old_block(void **state)
{
	(void)state;
	struct fleet_buf b;
	fb_init_secret(&b, 1u << 20);
	assert_true(b.secret);
	uint8_t key[200];
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(0x80 | i);
	assert_int_equal(fb_put(&b, key, 40), FLEET_OK);
	size_t rounds = 0;
	for (size_t len = 40; len + 40 <= sizeof(key); len += 40) {
		size_t oldcap = b.cap;
		watch(&b);
		assert_int_equal(fb_put(&b, key + len, 40), FLEET_OK);
		if (b.cap != oldcap) { /* it grew */
			rounds++;
			if (W.reallocs != 0)
				fail_msg("a secret grew by realloc (%zu to %zu bytes)", oldcap, b.cap);
			assert_int_equal(W.freed, 1);
			if (W.freed_wiped != 1)
				fail_msg("the old %zu-byte block of a secret was freed unwiped", oldcap);
		}
		assert_memory_equal(b.data, key, len + 40);
	}
	assert_true(rounds >= 2);
	/* Reset wipes what was there, keeps the kind and the cap. */
	size_t len = b.len;
	fb_reset(&b);
	assert_true(all_zero(b.data, len));
	assert_true(b.secret);
	assert_int_equal(b.max, 1u << 20);
	/* Free wipes the last block. */
	assert_int_equal(fb_put(&b, key, sizeof(key)), FLEET_OK);
	watch(&b);
	fb_free(&b);
	assert_int_equal(W.freed, 1);
	assert_int_equal(W.freed_wiped, 1);
	assert_null(b.data);
	assert_false(b.secret);
}

/* fb_free_secret wipes a buffer that was not made a secret one. */
static void test_free_secret_wipes_any_buffer(void **state)
{
	(void)state;
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fb_put(&b, "code-code-code", 14), FLEET_OK);
	watch(&b);
	fb_free_secret(&b);
	assert_int_equal(W.freed_wiped, 1);
}

/* Past its cap a buffer refuses, stickily, and never holds more room than
 * the cap. */
static void test_cap_enforced(void **state)
{
	(void)state;
	struct fleet_buf b;
	fb_init_capped(&b, 100);
	uint8_t x[101];
	memset(x, 1, sizeof(x));
	assert_int_equal(fb_put(&b, x, 60), FLEET_OK);
	assert_int_equal(fb_put(&b, x, 40), FLEET_OK); /* exactly the cap */
	assert_true(b.cap <= 100);
	assert_int_equal(fb_put_u8(&b, 1), FLEET_E_TOO_LARGE);
	assert_int_equal(fb_err(&b), FLEET_E_TOO_LARGE);
	assert_int_equal(fb_put(&b, x, 0), FLEET_E_TOO_LARGE); /* sticky */
	assert_int_equal(b.len, 100);
	fb_reset(&b); /* reuse: empty again, still capped */
	assert_int_equal(fb_err(&b), FLEET_OK);
	assert_int_equal(fb_put(&b, x, 101), FLEET_E_TOO_LARGE);
	assert_int_equal(b.len, 0);
	fb_free(&b);
	/* A secret is capped too, and a reserve past the cap is refused. */
	fb_init_secret(&b, 16);
	assert_int_equal(fb_reserve(&b, 17), FLEET_E_TOO_LARGE);
	fb_free(&b);
	fb_init_secret(&b, 16);
	assert_int_equal(fb_reserve(&b, 16), FLEET_OK);
	assert_true(b.cap >= 16 && b.cap <= 16);
	fb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_grows_by_realloc),
		cmocka_unit_test(test_secret_growth_wipes_the_old_block),
		cmocka_unit_test(test_free_secret_wipes_any_buffer),
		cmocka_unit_test(test_cap_enforced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
