/*
 * join_token.c: a join token's bytes (lib/join_token.h JT1, JT2).
 */
#include "lib/join_token.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>

static const char magic[4] = {'f', 'j', 't', '1'};
/* 32 symbols, so a random byte mod 32 is unbiased. */
static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";

static int id_char_ok(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

void fleet_join_token_wipe(struct fleet_join_token *t)
{
	if (t)
		OPENSSL_cleanse(t, sizeof(*t));
}

fleet_err fleet_join_token_new(struct fleet_join_token *t)
{
	uint8_t r[FLEET_JOIN_TOKEN_ID_LEN];

	if (!t)
		return FLEET_E_INVALID_ARG;
	memset(t, 0, sizeof(*t));
	if (RAND_bytes(r, sizeof(r)) != 1 || RAND_bytes(t->secret, sizeof(t->secret)) != 1) {
		ERR_clear_error();
		fleet_join_token_wipe(t);
		return FLEET_E_CRYPTO;
	}
	for (size_t i = 0; i < sizeof(r); i++)
		t->id[i] = alphabet[r[i] % 32];
	t->id[FLEET_JOIN_TOKEN_ID_LEN] = '\0';
	return FLEET_OK;
}

fleet_err fleet_join_token_encode(const struct fleet_join_token *t, uint8_t out[FLEET_JOIN_TOKEN_LEN])
{
	if (!t || !out || strlen(t->id) != FLEET_JOIN_TOKEN_ID_LEN)
		return FLEET_E_INVALID_ARG;
	for (size_t i = 0; i < FLEET_JOIN_TOKEN_ID_LEN; i++)
		if (!id_char_ok(t->id[i]))
			return FLEET_E_INVALID_ARG;
	memcpy(out, magic, sizeof(magic));
	memcpy(out + 4, t->id, FLEET_JOIN_TOKEN_ID_LEN);
	memcpy(out + 4 + FLEET_JOIN_TOKEN_ID_LEN, t->secret, FLEET_JOIN_TOKEN_SECRET_LEN);
	return FLEET_OK;
}

fleet_err fleet_join_token_decode(const uint8_t *b, size_t len, struct fleet_join_token *out,
				  struct fleet_errctx *ec)
{
	if (!out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	if (!b || len != FLEET_JOIN_TOKEN_LEN || memcmp(b, magic, sizeof(magic)) != 0)
		goto bad;
	for (size_t i = 0; i < FLEET_JOIN_TOKEN_ID_LEN; i++) {
		char c = (char)b[4 + i];
		if (!id_char_ok(c))
			goto bad;
		out->id[i] = c;
	}
	memcpy(out->secret, b + 4 + FLEET_JOIN_TOKEN_ID_LEN, FLEET_JOIN_TOKEN_SECRET_LEN);
	return FLEET_OK;
bad:
	fleet_join_token_wipe(out);
	return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, "join-token-malformed",
				   "a join token is %d bytes: \"fjt1\", a 26-character id of 0-9 "
				   "a-z, and its secret",
				   FLEET_JOIN_TOKEN_LEN);
}
