/*
 * sanitize.c: fleet_sanitize and fleet_ascii_printable (sanitize.h).
 *
 * One rule for every byte: it passes only as part of a complete, valid,
 * displayable UTF-8 character; everything else is written as \xNN. A
 * character counts as one unit whether it passed or was escaped, so a cap of
 * 64 means 64 things a reader sees.
 */
#include "lib/sanitize.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * Code points that are valid but change what a reader sees without showing
 * themselves: the line and paragraph separators (U+2028, U+2029) and every
 * format character (general category Cf). Cf holds every Bidi_Control
 * character (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069), the
 * zero-width ones (U+200B..U+200D, U+2060, U+FEFF), the soft hyphen U+00AD,
 * the prepended concatenation marks and the tag characters (U+E0001,
 * U+E0020..U+E007F).
 *
 * The Cf list is Unicode 15.0's, as ICU 72 reports it (every code point
 * with u_charType() == U_FORMAT_CHAR); test_journal compares it with
 * python3's unicodedata where python3 is installed (python 3.11's is
 * Unicode 14.0, which does not yet assign U+13439..U+1343F; the test allows
 * a Cf code point python leaves unassigned). Sorted, non-overlapping,
 * inclusive ranges.
 */
static const struct {
	uint32_t lo, hi;
} hidden_chars[] = {
	{0x00ad, 0x00ad},   {0x0600, 0x0605},   {0x061c, 0x061c},   {0x06dd, 0x06dd},
	{0x070f, 0x070f},   {0x0890, 0x0891},   {0x08e2, 0x08e2},   {0x180e, 0x180e},
	{0x200b, 0x200f},   {0x2028, 0x2029},   {0x202a, 0x202e},   {0x2060, 0x2064},
	{0x2066, 0x206f},   {0xfeff, 0xfeff},   {0xfff9, 0xfffb},   {0x110bd, 0x110bd},
	{0x110cd, 0x110cd}, {0x13430, 0x1343f}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a},
	{0xe0001, 0xe0001}, {0xe0020, 0xe007f},
};

static bool deceptive(uint32_t cp)
{
	size_t lo = 0, hi = sizeof(hidden_chars) / sizeof(hidden_chars[0]);
	while (lo < hi) { /* the first range whose hi is >= cp */
		size_t mid = lo + (hi - lo) / 2;
		if (hidden_chars[mid].hi < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sizeof(hidden_chars) / sizeof(hidden_chars[0]) && cp >= hidden_chars[lo].lo;
}

/* Length of the displayable UTF-8 character at p (n bytes left), or 0 when
 * the byte at p must be escaped. */
static size_t char_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	if (c < 0x80)
		return (c >= 0x20 && c < 0x7f) ? 1 : 0;
	size_t k;
	uint32_t cp, min;
	if (c >= 0xc2 && c <= 0xdf) {
		k = 2, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0; /* continuation byte, 0xc0/0xc1, 0xf5.. */
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0; /* overlong, beyond Unicode, surrogate */
	if (cp <= 0x9f || deceptive(cp))
		return 0; /* C1 controls */
	return k;
}

/* Write up to max_units units of p into out (room bytes, no NUL counted);
 * *consumed says how many input bytes they covered. Returns bytes written. */
static size_t emit(const uint8_t *p, size_t len, char *out, size_t room, size_t max_units,
		   bool escape_backslash, size_t *consumed)
{
	size_t i = 0, o = 0, units = 0;
	while (i < len && units < max_units) {
		size_t k = char_len(p + i, len - i);
		char esc[5];
		const char *src = (const char *)p + i;
		size_t w = k, step = k;
		if (k == 0) {
			snprintf(esc, sizeof(esc), "\\x%02X", p[i]);
			src = esc, w = 4, step = 1;
		} else if (escape_backslash && p[i] == '\\') {
			src = "\\\\", w = 2;
		}
		if (w > room - o)
			break;
		memcpy(out + o, src, w);
		o += w, i += step, units++;
	}
	*consumed = i;
	return o;
}

static const char *sanitize(const uint8_t *p, size_t len, char *out, size_t cap, size_t max_units,
			    bool escape_backslash)
{
	if (!out || cap == 0)
		return out;
	if (!p)
		len = 0;
	size_t consumed;
	size_t o = emit(p, len, out, cap - 1, max_units, escape_backslash, &consumed);
	if (consumed < len) {
		/* Cut: make room for the mark (N can only be <= len) and redo. */
		int ml = snprintf(NULL, 0, "[+%zu]", len);
		if (ml < 0 || (size_t)ml > cap - 1) {
			out[0] = '\0'; /* not even the mark fits: show nothing */
			return out;
		}
		o = emit(p, len, out, cap - 1 - (size_t)ml, max_units, escape_backslash,
			 &consumed);
		o += (size_t)snprintf(out + o, cap - o, "[+%zu]", len - consumed);
	}
	out[o] = '\0';
	return out;
}

const char *fleet_sanitize(const void *p, size_t len, char *out, size_t cap, size_t max_chars)
{
	return sanitize(p, len, out, cap, max_chars, true);
}

const char *fleet_sanitize_keep_backslash(const void *p, size_t len, char *out, size_t cap,
					  size_t max_chars)
{
	return sanitize(p, len, out, cap, max_chars, false);
}

bool fleet_ascii_printable(const void *p, size_t len, unsigned flags)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];
		if (c > 0x20 && c < 0x7f)
			continue;
		if (c == 0x20 && (flags & FLEET_ASCII_SPACE))
			continue;
		if (c >= 0x80 && (flags & FLEET_ASCII_8BIT))
			continue;
		return false;
	}
	return true;
}

bool fleet_dns_label(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}
