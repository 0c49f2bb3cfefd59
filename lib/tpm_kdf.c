/*
 * tpm_kdf.c: the two key derivation functions of TPM 2.0 (Part 1, 11.4.10),
 * used by the credential code and by anything else that must derive the same
 * keys a TPM derives.
 *
 * Both follow the reference implementation's label rule: the label's bytes,
 * then one 0x00 (a C string's terminator), so "IDENTITY" hashes as
 * "IDENTITY\0" exactly as the TPM's TPM2B label with its NUL does; a NULL or
 * empty label contributes the single 0x00.
 *
 * Only whole-byte outputs are produced. The TPM masks the top byte for bit
 * counts that are not a multiple of 8; no key fleetd derives has such a size,
 * so such a request is refused rather than carried as untested code.
 */
#include "lib/tpm_credential.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "lib/tpm_alg.h"

/* Far above any key a TPM derives (the largest is an HMAC key of 512 bits);
 * the cap keeps a caller's mistake from becoming a long loop. */
#define KDF_MAX_BITS (8u * 1024u * 8u)

static fleet_err check_args(uint16_t hash_alg, const uint8_t *key, size_t key_len,
			    const uint8_t *u, size_t u_len, const uint8_t *v, size_t v_len,
			    uint32_t bits, const uint8_t *out, const EVP_MD **md)
{
	if (!out || (!key && key_len) || (!u && u_len) || (!v && v_len))
		return FLEET_E_INVALID_ARG;
	if (bits == 0 || bits % 8 != 0 || bits > KDF_MAX_BITS)
		return FLEET_E_INVALID_ARG;
	*md = fleet_hash_alg_md(hash_alg);
	return *md ? FLEET_OK : FLEET_E_UNSUPPORTED;
}

static void be32(uint8_t out[4], uint32_t v)
{
	out[0] = (uint8_t)(v >> 24);
	out[1] = (uint8_t)(v >> 16);
	out[2] = (uint8_t)(v >> 8);
	out[3] = (uint8_t)v;
}

/* label || 0x00, as both KDFs feed it. */
static int mac_label(EVP_MAC_CTX *m, const char *label)
{
	static const uint8_t zero;
	if (label && *label && !EVP_MAC_update(m, (const uint8_t *)label, strlen(label)))
		return 0;
	return EVP_MAC_update(m, &zero, 1);
}

static int md_label(EVP_MD_CTX *h, const char *label)
{
	static const uint8_t zero;
	if (label && *label && !EVP_DigestUpdate(h, label, strlen(label)))
		return 0;
	return EVP_DigestUpdate(h, &zero, 1);
}

/* K(i) = HMAC(key, [i]32 || label || 0x00 || contextU || contextV || [bits]32) */
fleet_err fleet_kdfa(uint16_t hash_alg, const uint8_t *key, size_t key_len, const char *label,
		     const uint8_t *ctx_u, size_t ctx_u_len, const uint8_t *ctx_v,
		     size_t ctx_v_len, uint32_t bits, uint8_t *out)
{
	const EVP_MD *md = NULL;
	fleet_err e = check_args(hash_alg, key, key_len, ctx_u, ctx_u_len, ctx_v, ctx_v_len,
				 bits, out, &md);
	if (e != FLEET_OK)
		return e;
	size_t want = bits / 8, hlen = (size_t)EVP_MD_get_size(md);
	uint8_t *start = out, block[EVP_MAX_MD_SIZE], lenbe[4], ctrbe[4];
	OSSL_PARAM params[2];
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     (char *)EVP_MD_get0_name(md), 0);
	params[1] = OSSL_PARAM_construct_end();
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *m = mac ? EVP_MAC_CTX_new(mac) : NULL;
	/* OpenSSL refuses a NULL key even when its length is 0; HMAC with an
	 * empty key is well defined and is what the TPM computes. */
	static const uint8_t nokey[1];
	be32(lenbe, bits);
	e = m ? FLEET_OK : FLEET_E_NOMEM;
	for (uint32_t i = 1; e == FLEET_OK && want > 0; i++) {
		size_t n = want < hlen ? want : hlen, got = 0;
		be32(ctrbe, i);
		if (!EVP_MAC_init(m, key_len ? key : nokey, key_len, params) ||
		    !EVP_MAC_update(m, ctrbe, 4) || !mac_label(m, label) ||
		    (ctx_u_len && !EVP_MAC_update(m, ctx_u, ctx_u_len)) ||
		    (ctx_v_len && !EVP_MAC_update(m, ctx_v, ctx_v_len)) ||
		    !EVP_MAC_update(m, lenbe, 4) || !EVP_MAC_final(m, block, &got, sizeof(block)) ||
		    got != hlen) {
			e = FLEET_E_CRYPTO;
			break;
		}
		memcpy(out, block, n);
		out += n;
		want -= n;
	}
	OPENSSL_cleanse(block, sizeof(block));
	if (e != FLEET_OK) /* no half-derived key left for a caller to misuse */
		OPENSSL_cleanse(start, bits / 8);
	EVP_MAC_CTX_free(m);
	EVP_MAC_free(mac);
	return e;
}

/* K(i) = H([i]32 || Z || label || 0x00 || partyUInfo || partyVInfo) */
fleet_err fleet_kdfe(uint16_t hash_alg, const uint8_t *z, size_t z_len, const char *label,
		     const uint8_t *party_u, size_t party_u_len, const uint8_t *party_v,
		     size_t party_v_len, uint32_t bits, uint8_t *out)
{
	const EVP_MD *md = NULL;
	fleet_err e = check_args(hash_alg, z, z_len, party_u, party_u_len, party_v,
				 party_v_len, bits, out, &md);
	if (e != FLEET_OK)
		return e;
	/* A shared secret is never empty; an empty Z is a caller's bug that
	 * would silently derive a public value. */
	if (z_len == 0)
		return FLEET_E_INVALID_ARG;
	size_t want = bits / 8, hlen = (size_t)EVP_MD_get_size(md);
	uint8_t *start = out, block[EVP_MAX_MD_SIZE], ctrbe[4];
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	e = h ? FLEET_OK : FLEET_E_NOMEM;
	for (uint32_t i = 1; e == FLEET_OK && want > 0; i++) {
		size_t n = want < hlen ? want : hlen;
		unsigned int got = 0;
		be32(ctrbe, i);
		if (!EVP_DigestInit_ex(h, md, NULL) || !EVP_DigestUpdate(h, ctrbe, 4) ||
		    !EVP_DigestUpdate(h, z, z_len) || !md_label(h, label) ||
		    (party_u_len && !EVP_DigestUpdate(h, party_u, party_u_len)) ||
		    (party_v_len && !EVP_DigestUpdate(h, party_v, party_v_len)) ||
		    !EVP_DigestFinal_ex(h, block, &got) || got != hlen) {
			e = FLEET_E_CRYPTO;
			break;
		}
		memcpy(out, block, n);
		out += n;
		want -= n;
	}
	OPENSSL_cleanse(block, sizeof(block));
	if (e != FLEET_OK)
		OPENSSL_cleanse(start, bits / 8);
	EVP_MD_CTX_free(h);
	return e;
}
