/*
 * wire_test.h: the wire format tests' shared helpers (wire_test.c). Each
 * fails the running cmocka test on a mismatch or out of memory.
 */
#ifndef FLEET_TESTS_WIRE_TEST_H
#define FLEET_TESTS_WIRE_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "lib/attest_wire.h"
#include "lib/buf.h"

/* n bytes seed, seed+7, ... (malloc'd). */
struct fleet_wire_bytes blob(size_t n, uint8_t seed);
void bytes_eq(const struct fleet_wire_bytes *a, const struct fleet_wire_bytes *b);
/* b holds exactly the string s. */
void buf_is(const struct fleet_buf *b, const char *s);
void same_bytes(const struct fleet_buf *a, const struct fleet_buf *b);
/* orig with its first "from" replaced by "to" (malloc'd). */
char *edited(const char *orig, const char *from, const char *to);
/* pre, the base64url of n bytes, post (malloc'd). */
char *with_b64(const char *pre, size_t n, const char *post);

#endif
