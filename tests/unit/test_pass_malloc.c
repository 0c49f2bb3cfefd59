/*
 * test_pass_malloc.c: fleet_pass_malloc_setup (fleetd/pass/pass.h) keeps
 * glibc's mmap threshold fixed: a large block freed does not raise it, so
 * the next block of 1 MiB (a NetBox page's size) is mapped, not taken from
 * the heap where it would stay resident after it is freed. Its own program:
 * the setting is the whole process's. Skipped where malloc is not glibc's
 * (ASan's allocator replaces it).
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
#include <malloc.h>
#define GLIBC_MALLOC 1
#endif

#include "fleetd/pass/pass.h"

#ifdef GLIBC_MALLOC
/* Whether a block of n bytes, allocated now, is mapped on its own. */
static bool mapped(size_t n)
{
	size_t before = mallinfo2().hblks;
	char *p = malloc(n);
	assert_non_null(p);
	memset(p, 1, n);
	bool m = mallinfo2().hblks == before + 1;
	free(p);
	return m;
}
#endif

static void test_threshold_stays(void **state)
{
	(void)state;
#ifdef GLIBC_MALLOC
	fleet_pass_malloc_setup();
	assert_true(mapped(1 << 20));
	/* A 16 MiB block freed would have raised the threshold past 1 MiB. */
	char *big = malloc(16 << 20);
	assert_non_null(big);
	memset(big, 1, 16 << 20);
	free(big);
	assert_true(mapped(1 << 20));
	assert_true(mapped(256 << 10));
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_stays),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
