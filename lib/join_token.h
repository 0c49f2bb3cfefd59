/*
 * join_token.h: a join token before it is sealed (lib/token_seal.h, with
 * purpose FLEET_JOIN_TOKEN_PURPOSE): what `fleetctl token create` mints and
 * the join service opens (issue 13, docs/join-tokens.md).
 *
 *     "fjt1" (4) || id (26 of 0-9 a-z) || secret (32)      = 62 bytes
 *
 * The store keeps the id and SHA-256(secret), never the secret
 * (fleetd/store/store.h J2, J3).
 *
 * JT1 fleet_join_token_decode takes exactly FLEET_JOIN_TOKEN_LEN bytes with
 *     the magic and an id of 0-9 a-z, else FLEET_E_MALFORMED
 *     "join-token-malformed" and *out wiped. (test_join_token, fuzzed by
 *     tests/fuzz/fuzz_join_token.c)
 * JT2 fleet_join_token_new draws the id (26 characters, 130 bits) and the
 *     secret (32 bytes) from the CSPRNG. (test_join_token)
 */
#ifndef FLEET_JOIN_TOKEN_H
#define FLEET_JOIN_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

#define FLEET_JOIN_TOKEN_LEN 62
#define FLEET_JOIN_TOKEN_ID_LEN 26
#define FLEET_JOIN_TOKEN_SECRET_LEN 32
#define FLEET_JOIN_TOKEN_PURPOSE "join-token"

struct fleet_join_token {
	char id[FLEET_JOIN_TOKEN_ID_LEN + 1];
	uint8_t secret[FLEET_JOIN_TOKEN_SECRET_LEN];
};

fleet_err fleet_join_token_new(struct fleet_join_token *t);
fleet_err fleet_join_token_encode(const struct fleet_join_token *t, uint8_t out[FLEET_JOIN_TOKEN_LEN]);
fleet_err fleet_join_token_decode(const uint8_t *b, size_t len, struct fleet_join_token *out,
				  struct fleet_errctx *ec);
/* Wipe a token (its secret). */
void fleet_join_token_wipe(struct fleet_join_token *t);

#endif
