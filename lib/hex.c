#include "lib/hex.h"

#include <string.h>

void fleet_hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

int fleet_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

fleet_err fleet_hex_decode(const char *in, size_t inlen, uint8_t *out, size_t outlen)
{
	if (inlen != 2 * outlen)
		return FLEET_E_MALFORMED;
	for (size_t i = 0; i < outlen; i++) {
		int hi = fleet_hex_value(in[2 * i]), lo = fleet_hex_value(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return FLEET_E_MALFORMED;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return FLEET_OK;
}

int fleet_hex_is_lower(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}
