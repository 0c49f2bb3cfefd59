#include "lib/reader.h"

#include <string.h>

void fr_init(struct fleet_reader *r, const void *p, size_t len)
{
	r->base = p;
	r->len = p ? len : 0;
	r->pos = 0;
	r->origin = 0;
}

size_t fr_left(const struct fleet_reader *r) { return r->len - r->pos; }
size_t fr_offset(const struct fleet_reader *r) { return r->origin + r->pos; }
int fr_at_end(const struct fleet_reader *r) { return r->pos == r->len; }

fleet_err fr_ptr(struct fleet_reader *r, size_t n, const uint8_t **out)
{
	/* Written as a subtraction so that a huge n cannot wrap pos + n. */
	if (n > r->len - r->pos)
		return FLEET_E_TRUNCATED;
	*out = r->base + r->pos;
	r->pos += n;
	return FLEET_OK;
}

fleet_err fr_skip(struct fleet_reader *r, size_t n)
{
	const uint8_t *p;
	return fr_ptr(r, n, &p);
}

fleet_err fr_get(struct fleet_reader *r, void *dst, size_t n)
{
	const uint8_t *p;
	fleet_err e = fr_ptr(r, n, &p);
	if (e == FLEET_OK && n > 0)
		memcpy(dst, p, n);
	return e;
}

fleet_err fr_peek(const struct fleet_reader *r, void *dst, size_t n)
{
	if (n > r->len - r->pos)
		return FLEET_E_TRUNCATED;
	if (n > 0)
		memcpy(dst, r->base + r->pos, n);
	return FLEET_OK;
}

fleet_err fr_sub(struct fleet_reader *r, size_t n, struct fleet_reader *sub)
{
	size_t start = fr_offset(r);
	const uint8_t *p;
	fleet_err e = fr_ptr(r, n, &p);
	if (e != FLEET_OK)
		return e;
	sub->base = p;
	sub->len = n;
	sub->pos = 0;
	sub->origin = start;
	return FLEET_OK;
}

void fr_rest(struct fleet_reader *r, struct fleet_reader *sub)
{
	(void)fr_sub(r, fr_left(r), sub);
}

fleet_err fr_u8(struct fleet_reader *r, uint8_t *v) { return fr_get(r, v, 1); }

#define FR_INT(name, type, nbytes, big)                                   \
	fleet_err name(struct fleet_reader *r, type *v)                   \
	{                                                                 \
		const uint8_t *p;                                         \
		type x = 0;                                               \
		fleet_err e = fr_ptr(r, nbytes, &p);                      \
		if (e != FLEET_OK)                                        \
			return e;                                         \
		for (size_t i = 0; i < (nbytes); i++) {                   \
			size_t k = (big) ? i : (nbytes) - 1 - i;          \
			x = (type)((x << 8) | p[k]);                      \
		}                                                         \
		*v = x;                                                   \
		return FLEET_OK;                                          \
	}

FR_INT(fr_u16le, uint16_t, 2, 0)
FR_INT(fr_u32le, uint32_t, 4, 0)
FR_INT(fr_u64le, uint64_t, 8, 0)
FR_INT(fr_u16be, uint16_t, 2, 1)
FR_INT(fr_u32be, uint32_t, 4, 1)
FR_INT(fr_u64be, uint64_t, 8, 1)
