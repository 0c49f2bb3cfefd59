/*
 * wire_test.c: what the wire format tests share (test_join_wire.c,
 * test_join_evidence.c): byte fixtures and message edits.
 */
#include "tests/unit/wire_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

struct fleet_wire_bytes blob(size_t n, uint8_t seed)
{
	struct fleet_wire_bytes b = {malloc(n ? n : 1), n};
	assert_non_null(b.data);
	for (size_t i = 0; i < n; i++)
		b.data[i] = (uint8_t)(seed + i * 7);
	return b;
}

void bytes_eq(const struct fleet_wire_bytes *a, const struct fleet_wire_bytes *b)
{
	assert_int_equal(a->len, b->len);
	if (a->len)
		assert_memory_equal(a->data, b->data, a->len);
}

void buf_is(const struct fleet_buf *b, const char *s)
{
	assert_int_equal(b->len, strlen(s));
	assert_memory_equal(b->data, s, b->len);
}

void same_bytes(const struct fleet_buf *a, const struct fleet_buf *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
}

/* orig with its first "from" replaced by "to" (malloc'd). */
char *edited(const char *orig, const char *from, const char *to)
{
	const char *at = strstr(orig, from);
	if (!at)
		fail_msg("\"%s\" not in %s", from, orig);
	size_t pre = (size_t)(at - orig), n = strlen(orig) + strlen(to) + 1;
	char *s = malloc(n);
	assert_non_null(s);
	snprintf(s, n, "%.*s%s%s", (int)pre, orig, to, at + strlen(from));
	return s;
}

/* pre, the base64url of n bytes, post (malloc'd). */
char *with_b64(const char *pre, size_t n, const char *post)
{
	struct fleet_wire_bytes b = blob(n, 3);
	struct fleet_buf t;
	fb_init(&t);
	assert_int_equal(fleet_b64url_encode(b.data, b.len, &t), FLEET_OK);
	size_t cap = strlen(pre) + t.len + strlen(post) + 1;
	char *s = malloc(cap);
	assert_non_null(s);
	snprintf(s, cap, "%s%.*s%s", pre, (int)t.len, (const char *)t.data, post);
	fb_free(&t);
	free(b.data);
	return s;
}
