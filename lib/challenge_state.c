/*
 * challenge_state.c: the sealed two-round state (challenge_state.h
 * CS1-CS3): AES-256-GCM, the header the AAD.
 */
#include "lib/challenge_state.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

static const uint8_t magic[4] = {'f', 'c', 's', '1'};

static void put_be64(uint8_t *p, int64_t v)
{
	uint64_t u = (uint64_t)v;
	for (int i = 7; i >= 0; i--, u >>= 8)
		p[i] = (uint8_t)u;
}

static int64_t get_be64(const uint8_t *p)
{
	uint64_t u = 0;
	for (int i = 0; i < 8; i++)
		u = u << 8 | p[i];
	return (int64_t)u;
}

/* One GCM pass over in (n bytes) into out; tag written (enc) or checked. */
static int gcm(int enc, const uint8_t *key, const uint8_t *hdr, const uint8_t *in, size_t n,
	       uint8_t *out, uint8_t tag[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
			  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1 &&
			  EVP_CipherInit_ex(c, NULL, NULL, key, hdr + 44, enc) == 1 &&
			  EVP_CipherUpdate(c, NULL, &len, hdr, FLEET_CHALLENGE_HEADER) == 1 &&
			  EVP_CipherUpdate(c, out, &len, in, (int)n) == 1;
	if (ok && !enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1;
	ok = ok && EVP_CipherFinal_ex(c, out + len, &len) == 1;
	if (ok && enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
	EVP_CIPHER_CTX_free(c);
	ERR_clear_error();
	return ok;
}

fleet_err fleet_challenge_seal(const uint8_t key[FLEET_CHALLENGE_KEY_LEN],
			       const uint8_t csr_sha256[32], int64_t now, unsigned ttl,
			       const uint8_t *state, size_t len, struct fleet_buf *out)
{
	uint8_t hdr[FLEET_CHALLENGE_HEADER], tag[16];
	fleet_err e;
	if (!key || !csr_sha256 || !state || !out || len < 1 || len > FLEET_CHALLENGE_MAX_STATE ||
	    ttl < 1 || ttl > FLEET_CHALLENGE_MAX_TTL || now < 0)
		return FLEET_E_INVALID_ARG;
	memcpy(hdr, magic, 4);
	put_be64(hdr + 4, now + (int64_t)ttl);
	memcpy(hdr + 12, csr_sha256, 32);
	if (RAND_bytes(hdr + 44, 12) != 1) {
		ERR_clear_error();
		return FLEET_E_CRYPTO;
	}
	size_t at = out->len;
	if ((e = fb_put(out, hdr, sizeof(hdr))) || (e = fb_reserve(out, len + 16)))
		return e;
	if (!gcm(1, key, hdr, state, len, out->data + out->len, tag)) {
		out->len = at;
		return FLEET_E_CRYPTO;
	}
	out->len += len;
	return fb_put(out, tag, sizeof(tag));
}

fleet_err fleet_challenge_open(const uint8_t key[FLEET_CHALLENGE_KEY_LEN],
			       const uint8_t csr_sha256[32], int64_t now, const uint8_t *sealed,
			       size_t len, struct fleet_buf *state_out, struct fleet_errctx *ec)
{
	uint8_t tag[16];
	fleet_err e;
	if (!key || !csr_sha256 || !state_out || (!sealed && len))
		return FLEET_E_INVALID_ARG;
	fb_reset(state_out);
	if (len < FLEET_CHALLENGE_OVERHEAD + 1 ||
	    len > FLEET_CHALLENGE_OVERHEAD + FLEET_CHALLENGE_MAX_STATE || memcmp(sealed, magic, 4))
		return fleet_errctx_refuse(ec, FLEET_E_MALFORMED, FLEET_CHALLENGE_REASON_MALFORMED,
					   "not a sealed challenge state");
	if (CRYPTO_memcmp(sealed + 12, csr_sha256, 32) != 0)
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, FLEET_CHALLENGE_REASON_CSR,
					   "the challenge was made for another CSR");
	size_t n = len - FLEET_CHALLENGE_OVERHEAD;
	memcpy(tag, sealed + len - 16, 16);
	if ((e = fb_reserve(state_out, n)))
		return e;
	if (!gcm(0, key, sealed, sealed + FLEET_CHALLENGE_HEADER, n, state_out->data, tag)) {
		OPENSSL_cleanse(state_out->data, n);
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, FLEET_CHALLENGE_REASON_TAG,
					   "the challenge state does not verify");
	}
	int64_t not_after = get_be64(sealed + 4);
	if (now > not_after || not_after - now > FLEET_CHALLENGE_MAX_TTL) {
		OPENSSL_cleanse(state_out->data, n);
		return fleet_errctx_refuse(ec, FLEET_E_VERIFY, FLEET_CHALLENGE_REASON_EXPIRED,
					   "the challenge expired");
	}
	state_out->len = n;
	return FLEET_OK;
}
