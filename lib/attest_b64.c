/*
 * attest_b64.c: base64url without padding (RFC 4648, section 5), the one
 * encoding of binary fields in the attestation protocol.
 *
 * The decoder is strict, because two spellings of the same bytes are two
 * things to get wrong: no '=' padding, no '+' or '/', no whitespace, no
 * length that cannot come from an encoder (4n+1 characters), and no
 * non-zero bits left over in the last character (so each byte string has
 * exactly one encoding). The cap is checked on the encoded length before
 * anything is allocated.
 */
#include "lib/attest_wire.h"

#include <stdlib.h>
#include <string.h>

static const char b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The 6-bit value of c, or -1 for anything outside the URL-safe alphabet. */
static int b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/* Characters an encoder writes for n bytes. */
static size_t b64url_encoded_len(size_t n)
{
	return n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

fleet_err fleet_b64url_encode(const uint8_t *in, size_t len, struct fleet_buf *out)
{
	uint8_t quad[4];
	size_t i = 0;

	if (!out || (!in && len))
		return FLEET_E_INVALID_ARG;
	if (len > (SIZE_MAX / 4) * 3 - 3)
		return FLEET_E_TOO_LARGE;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		quad[0] = (uint8_t)b64url_alphabet[v >> 18];
		quad[1] = (uint8_t)b64url_alphabet[(v >> 12) & 63];
		quad[2] = (uint8_t)b64url_alphabet[(v >> 6) & 63];
		quad[3] = (uint8_t)b64url_alphabet[v & 63];
		fb_put(out, quad, 4);
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		quad[0] = (uint8_t)b64url_alphabet[v >> 18];
		quad[1] = (uint8_t)b64url_alphabet[(v >> 12) & 63];
		fb_put(out, quad, 2);
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		quad[0] = (uint8_t)b64url_alphabet[v >> 18];
		quad[1] = (uint8_t)b64url_alphabet[(v >> 12) & 63];
		quad[2] = (uint8_t)b64url_alphabet[(v >> 6) & 63];
		fb_put(out, quad, 3);
	}
	return fb_err(out);
}

fleet_err fleet_b64url_decode(const char *in, size_t inlen, size_t max, struct fleet_wire_bytes *out)
{
	size_t outlen, o = 0, i = 0;
	uint8_t *p;

	if (!out || (!in && inlen))
		return FLEET_E_INVALID_ARG;
	out->data = NULL;
	out->len = 0;
	/* The cap first, on the encoded length: nothing is allocated for an
	 * input that could only decode to more than max bytes. */
	if (max > (SIZE_MAX / 4) * 3 - 3 || inlen > b64url_encoded_len(max))
		return FLEET_E_TOO_LARGE;
	if (inlen % 4 == 1)
		return FLEET_E_MALFORMED; /* no byte count encodes to 4n+1 characters */
	outlen = inlen / 4 * 3 + (inlen % 4 == 0 ? 0 : inlen % 4 - 1);
	if (outlen > max)
		return FLEET_E_TOO_LARGE;
	/* One byte more than needed so an empty result is still a pointer. */
	p = malloc(outlen + 1);
	if (!p)
		return FLEET_E_NOMEM;
	for (; i < inlen; i += 4) {
		size_t n = inlen - i < 4 ? inlen - i : 4;
		uint32_t v = 0;
		for (size_t k = 0; k < 4; k++) {
			int d = 0;
			if (k < n) {
				d = b64url_value((unsigned char)in[i + k]);
				if (d < 0)
					goto malformed;
			}
			v = v << 6 | (uint32_t)d;
		}
		/* A short final group must leave its unused low bits zero. */
		if ((n == 2 && (v & 0xFFFF)) || (n == 3 && (v & 0xFF)))
			goto malformed;
		p[o++] = (uint8_t)(v >> 16);
		if (n > 2)
			p[o++] = (uint8_t)(v >> 8);
		if (n > 3)
			p[o++] = (uint8_t)v;
	}
	out->data = p;
	out->len = o;
	return FLEET_OK;
malformed:
	free(p);
	return FLEET_E_MALFORMED;
}

/* Standard base64 with padding (RFC 4648, section 4), as Kubernetes
 * serialises []byte fields (Go's encoding/json: base64.StdEncoding). Held
 * to its one spelling too: a length of 4n, '=' only as the last one or two
 * characters and only where the byte count needs it, no URL-safe
 * characters, no whitespace. Go accepts more (newlines; non-zero trailing
 * bits): what fleetd refuses it never approves, and what it accepts Go
 * reads as the same bytes. */
fleet_err fleet_b64std_decode(const char *in, size_t inlen, size_t max, struct fleet_wire_bytes *out)
{
	if (!out || (!in && inlen))
		return FLEET_E_INVALID_ARG;
	out->data = NULL;
	out->len = 0;
	if (inlen % 4)
		return FLEET_E_MALFORMED;
	size_t n = inlen;
	if (n && in[n - 1] == '=')
		n--;
	if (n && in[n - 1] == '=')
		n--;
	if (n % 4 == 1 || (inlen - n && n % 4 == 0))
		return FLEET_E_MALFORMED; /* "===" or padding a whole group */
	if (max > (SIZE_MAX / 4) * 3 - 3 || n > b64url_encoded_len(max))
		return FLEET_E_TOO_LARGE;
	char *t = malloc(n + 1);
	if (!t)
		return FLEET_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (c == '-' || c == '_' || c == '=') {
			free(t);
			return FLEET_E_MALFORMED;
		}
		t[i] = c == '+' ? '-' : c == '/' ? '_' : c;
	}
	fleet_err e = fleet_b64url_decode(t, n, max, out);
	free(t);
	return e;
}
