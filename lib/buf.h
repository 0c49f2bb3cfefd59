/*
 * buf.h: a growable byte buffer for building output (marshaled structures,
 * hash inputs, JSON bodies) and for holding bytes read from outside. Errors
 * are sticky: after an allocation failure or a put past the cap every later
 * put is a no-op and fb_err() reports FLEET_E_NOMEM or FLEET_E_TOO_LARGE, so
 * a builder can put many fields and check once.
 *
 * Three kinds, chosen at init:
 *   fb_init         no cap: only for output built from parts that are
 *                   themselves bounded (an encoder's fields, a DER header);
 *   fb_init_capped  bytes from outside (an HTTP body, a NetBox answer, a
 *                   file, a TPM NV index): growth past max fails with
 *                   FLEET_E_TOO_LARGE instead of allocating;
 *   fb_init_secret  a key, a token: capped too, and never realloc'd. Growth
 *                   allocates a new block, copies, wipes the old one and
 *                   frees it (as OpenSSH's sshbuf and systemd's
 *                   READ_FULL_FILE_SECURE do), so no earlier block of the
 *                   secret is left in freed memory; fb_reset and fb_free
 *                   wipe it too.
 */
#ifndef FLEET_BUF_H
#define FLEET_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

struct fleet_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;   /* 0: no limit; else puts past it fail with FLEET_E_TOO_LARGE */
	fleet_err err;
	bool secret;  /* grows by allocate-copy-wipe; wiped on reset and free */
};

void fb_init(struct fleet_buf *b);
/* At most max bytes (max > 0). */
void fb_init_capped(struct fleet_buf *b, size_t max);
/* A secret of at most max bytes (max > 0). */
void fb_init_secret(struct fleet_buf *b, size_t max);
/* Free the memory, wiping it first when the buffer is a secret one;
 * fb_free_secret wipes whatever the kind (a buffer that came to hold a
 * code or a key although it was not made a secret one). Either leaves b
 * empty, uncapped and not secret: init it again to reuse it. */
void fb_free(struct fleet_buf *b);
void fb_free_secret(struct fleet_buf *b);
/* Empty b, keeping its memory, kind and cap (a secret one is wiped). */
void fb_reset(struct fleet_buf *b);
fleet_err fb_err(const struct fleet_buf *b);
/* Room for n more bytes past len without another allocation. */
fleet_err fb_reserve(struct fleet_buf *b, size_t n);

fleet_err fb_put(struct fleet_buf *b, const void *p, size_t n);
fleet_err fb_put_u8(struct fleet_buf *b, uint8_t v);
fleet_err fb_put_u16be(struct fleet_buf *b, uint16_t v);
fleet_err fb_put_u32be(struct fleet_buf *b, uint32_t v);
fleet_err fb_put_u16le(struct fleet_buf *b, uint16_t v);
fleet_err fb_put_u32le(struct fleet_buf *b, uint32_t v);
/* A TPM2B: 16-bit big-endian size, then the bytes. */
fleet_err fb_put_tpm2b(struct fleet_buf *b, const void *p, size_t n);

/* Files are read with fleet_file_read (lib/file_read.h), never by path here. */

#endif
