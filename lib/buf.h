/*
 * buf.h: a growable byte buffer for building output (marshaled structures,
 * hash inputs, JSON bodies). Errors are sticky: after an allocation failure
 * every later put is a no-op and fb_err() reports FLEET_E_NOMEM, so a builder
 * can put many fields and check once.
 */
#ifndef FLEET_BUF_H
#define FLEET_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

struct fleet_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;   /* 0: no limit; else puts past it fail with FLEET_E_TOO_LARGE */
	fleet_err err;
};

void fb_init(struct fleet_buf *b);
/* Free the memory; fb_free_secret wipes it first (keys, secrets, codes). */
void fb_free(struct fleet_buf *b);
void fb_free_secret(struct fleet_buf *b);
void fb_reset(struct fleet_buf *b);
fleet_err fb_err(const struct fleet_buf *b);

fleet_err fb_put(struct fleet_buf *b, const void *p, size_t n);
fleet_err fb_put_u8(struct fleet_buf *b, uint8_t v);
fleet_err fb_put_u16be(struct fleet_buf *b, uint16_t v);
fleet_err fb_put_u32be(struct fleet_buf *b, uint32_t v);
fleet_err fb_put_u16le(struct fleet_buf *b, uint16_t v);
fleet_err fb_put_u32le(struct fleet_buf *b, uint32_t v);
/* A TPM2B: 16-bit big-endian size, then the bytes. */
fleet_err fb_put_tpm2b(struct fleet_buf *b, const void *p, size_t n);

/* Read a whole file into b, refusing files over max_len bytes. */
fleet_err fb_read_file(struct fleet_buf *b, const char *path, size_t max_len);

#endif
