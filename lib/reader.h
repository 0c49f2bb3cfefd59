/*
 * reader.h: the one way untrusted bytes are consumed (after OpenSSH's sshbuf).
 *
 * A reader is a view over bytes it does not own. Every get checks the bounds
 * first and returns FLEET_E_TRUNCATED without moving when the bytes are not
 * there, so a failed read leaves the position where the bad field starts and
 * the caller can report that offset. No length from the input ever reaches
 * memcpy or pointer arithmetic outside this file.
 *
 * A sub-reader (fr_sub) covers the next n bytes and keeps the absolute origin,
 * so errors inside nested structures name offsets in the outermost input.
 */
#ifndef FLEET_READER_H
#define FLEET_READER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

struct fleet_reader {
	const uint8_t *base;
	size_t len;
	size_t pos;
	size_t origin; /* absolute offset of base[0] in the outermost input */
};

void fr_init(struct fleet_reader *r, const void *p, size_t len);
size_t fr_left(const struct fleet_reader *r);
/* Absolute offset of the next unread byte. */
size_t fr_offset(const struct fleet_reader *r);
int fr_at_end(const struct fleet_reader *r);

fleet_err fr_u8(struct fleet_reader *r, uint8_t *v);
fleet_err fr_u16le(struct fleet_reader *r, uint16_t *v);
fleet_err fr_u32le(struct fleet_reader *r, uint32_t *v);
fleet_err fr_u64le(struct fleet_reader *r, uint64_t *v);
fleet_err fr_u16be(struct fleet_reader *r, uint16_t *v);
fleet_err fr_u32be(struct fleet_reader *r, uint32_t *v);
fleet_err fr_u64be(struct fleet_reader *r, uint64_t *v);

/* Copy n bytes out. */
fleet_err fr_get(struct fleet_reader *r, void *dst, size_t n);
/* Borrow a pointer to the next n bytes and move past them. */
fleet_err fr_ptr(struct fleet_reader *r, size_t n, const uint8_t **out);
fleet_err fr_skip(struct fleet_reader *r, size_t n);
/* Peek without moving. */
fleet_err fr_peek(const struct fleet_reader *r, void *dst, size_t n);
/* A reader over the next n bytes; r moves past them. */
fleet_err fr_sub(struct fleet_reader *r, size_t n, struct fleet_reader *sub);
/* A reader over the rest; r is left at the end. */
void fr_rest(struct fleet_reader *r, struct fleet_reader *sub);

#endif
