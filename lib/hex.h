/* hex.h: lowercase hex, the one form fleetd prints digests and hashes in. */
#ifndef FLEET_HEX_H
#define FLEET_HEX_H

#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

/* Writes 2*n lowercase hex digits and a NUL; out must hold 2*n+1 bytes. */
void fleet_hex_encode(const uint8_t *in, size_t n, char *out);
/* Decodes exactly 2*outlen hex digits (either case) into out; anything else
 * (odd length, wrong length, a non-hex byte) is FLEET_E_MALFORMED. */
fleet_err fleet_hex_decode(const char *in, size_t inlen, uint8_t *out, size_t outlen);
/* The value of one hex digit (either case), or -1. */
int fleet_hex_value(char c);
/* True when s is exactly n lowercase hex digits. */
int fleet_hex_is_lower(const char *s, size_t n);

#endif
