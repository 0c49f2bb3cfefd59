#include "lib/buf.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

void fb_init(struct fleet_buf *b) { memset(b, 0, sizeof(*b)); }

void fb_init_capped(struct fleet_buf *b, size_t max)
{
	fb_init(b);
	b->max = max;
}

void fb_init_secret(struct fleet_buf *b, size_t max)
{
	fb_init_capped(b, max);
	b->secret = true;
}

void fb_free_secret(struct fleet_buf *b)
{
	if (b->data)
		OPENSSL_cleanse(b->data, b->cap);
	free(b->data);
	fb_init(b);
}

void fb_free(struct fleet_buf *b)
{
	if (b->secret) {
		fb_free_secret(b);
		return;
	}
	free(b->data);
	fb_init(b);
}

void fb_reset(struct fleet_buf *b)
{
	if (b->secret && b->data)
		OPENSSL_cleanse(b->data, b->len);
	b->len = 0;
	b->err = FLEET_OK;
}

fleet_err fb_err(const struct fleet_buf *b) { return b->err; }

static fleet_err reserve(struct fleet_buf *b, size_t n)
{
	if (b->err != FLEET_OK)
		return b->err;
	if (n > SIZE_MAX - b->len || (b->max && b->len + n > b->max))
		return b->err = FLEET_E_TOO_LARGE;
	if (b->len + n <= b->cap)
		return FLEET_OK;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + n) {
		if (cap > SIZE_MAX / 2)
			return b->err = FLEET_E_TOO_LARGE;
		cap *= 2;
	}
	if (b->max && cap > b->max)
		cap = b->max; /* never more room than the cap allows */
	uint8_t *d;
	if (b->secret) {
		/* Never realloc a secret: it may move the bytes and leave the
		 * old block, unwiped, to the allocator. */
		if (!(d = malloc(cap)))
			return b->err = FLEET_E_NOMEM;
		if (b->data) {
			memcpy(d, b->data, b->len);
			OPENSSL_cleanse(b->data, b->cap);
			free(b->data);
		}
	} else if (!(d = realloc(b->data, cap))) {
		return b->err = FLEET_E_NOMEM;
	}
	b->data = d;
	b->cap = cap;
	return FLEET_OK;
}

fleet_err fb_reserve(struct fleet_buf *b, size_t n) { return reserve(b, n); }

fleet_err fb_put(struct fleet_buf *b, const void *p, size_t n)
{
	fleet_err e = reserve(b, n);
	if (e != FLEET_OK)
		return e;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return FLEET_OK;
}

fleet_err fb_put_u8(struct fleet_buf *b, uint8_t v) { return fb_put(b, &v, 1); }

fleet_err fb_put_u16be(struct fleet_buf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	return fb_put(b, x, 2);
}

fleet_err fb_put_u32be(struct fleet_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	return fb_put(b, x, 4);
}

fleet_err fb_put_u16le(struct fleet_buf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
	return fb_put(b, x, 2);
}

fleet_err fb_put_u32le(struct fleet_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	return fb_put(b, x, 4);
}

fleet_err fb_put_tpm2b(struct fleet_buf *b, const void *p, size_t n)
{
	if (n > UINT16_MAX)
		return b->err = FLEET_E_TOO_LARGE;
	fb_put_u16be(b, (uint16_t)n);
	return fb_put(b, p, n);
}
