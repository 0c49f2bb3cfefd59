/*
 * token_seal_int.h: the two seams of lib/token_seal.c, for the known-answer
 * test and the fuzz target; no program includes it.
 *
 * fleet_seal is fleet_seal_with_ephemeral with a freshly generated
 * ephemeral key and a random nonce: the seam is a plain function taking the
 * ephemeral key and the nonce, so a test can fix both and compare bytes
 * with an independent implementation (TS12). A fixed ephemeral key or nonce
 * outside a test breaks the construction: never use them elsewhere.
 */
#ifndef FLEET_TOKEN_SEAL_INT_H
#define FLEET_TOKEN_SEAL_INT_H

#include "lib/token_seal.h"

/* The P-256 key whose private scalar is d (big-endian, 1 <= d < n). */
fleet_err fleet_seal_key_from_scalar(const uint8_t d[32], struct fleet_seal_key **out);

/* fleet_seal with the ephemeral key eph (a P-256 key, e.g. from
 * fleet_seal_key_from_scalar) and the nonce given. */
fleet_err fleet_seal_with_ephemeral(const uint8_t *recipient_spki, size_t spki_len,
				    const char *purpose, const struct fleet_seal_key *eph,
				    const uint8_t nonce[FLEET_SEAL_NONCE_LEN], const uint8_t *pt,
				    size_t pt_len, struct fleet_buf *out);

#endif
