/*
 * tpm_credential.c: TPM2_MakeCredential in software (TPM 2.0 Part 1, 24;
 * the layout is in tpm_credential.h).
 *
 * The EK public area comes from the machine being admitted, so it is checked
 * before any of it is used: a key the TPM could not use to activate a
 * credential (not a restricted decryption key, an unexpected scheme, sizes
 * that disagree with the declared key size, a point off its curve) is
 * refused here rather than producing a blob nobody can open, or one that
 * some other key can. That check is one rule (ek_rule), which
 * fleet_credential_ek_supported exposes so that intake refuses exactly the
 * EKs this file would. Refusals:
 *   FLEET_E_INVALID_ARG  NULL pointers; secret empty or longer than the EK
 *                        nameAlg's digest (the TPM refuses those too)
 *   FLEET_E_UNSUPPORTED  with the reasons of tpm_credential.h: EK not RSA
 *                        2048/3072/4096 or ECC P-256/P-384, not a
 *                        restricted decrypt-only key, nameAlg not
 *                        SHA-256/384/512, symmetric not AES-128/256-CFB,
 *                        a scheme or ECC KDF set, RSA exponent other than
 *                        65537; (no reason) object name of an unknown hash
 *   FLEET_E_MALFORMED    "ek-public-malformed": modulus or point sizes
 *                        inconsistent with the key size, point not on the
 *                        curve; (no reason) object name length not 2 + its
 *                        digest size
 * Every intermediate secret (seed, Z, keys, plaintext) is wiped before
 * return, on every path.
 */
#include "lib/tpm_credential.h"
#include "lib/tpm.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <tss2/tss2_mu.h>

#include "lib/tpm_alg.h"

/* What the EK's public area decides about the credential's protection. */
struct ek_prot {
	uint16_t name_alg;
	size_t dsize;            /* nameAlg digest size: seed and HMAC key size */
	const EVP_CIPHER *cfb;   /* AES-128/256 in full-block CFB */
	uint32_t sym_bits;
};

/* The EK's nameAlg protects the seed and the HMAC: SHA-1 is refused because
 * a credential protected by it is weaker than the EK it claims to bind;
 * SM3-256 (and anything else) because no TCG EK template uses it and the
 * KDFs here are verified against known answers for SHA-256/384/512 only. */
static const char *check_name_alg(uint16_t alg, struct ek_prot *p)
{
	if (alg != FLEET_ALG_SHA256 && alg != FLEET_ALG_SHA384 && alg != FLEET_ALG_SHA512)
		return "ek-name-alg-unsupported";
	if (!fleet_hash_alg_md(alg))
		return "ek-name-alg-unsupported";
	p->name_alg = alg;
	p->dsize = fleet_hash_alg_size(alg);
	return NULL;
}

/* The TPM protects the credential with the EK's own symmetric definition;
 * anything but AES-CFB at 128 or 256 bits is outside every EK template. */
static const char *check_sym(const TPMT_SYM_DEF_OBJECT *s, struct ek_prot *p)
{
	if (s->algorithm != TPM2_ALG_AES || s->mode.aes != TPM2_ALG_CFB)
		return "ek-symmetric-unsupported";
	if (s->keyBits.aes == 128)
		p->cfb = EVP_aes_128_cfb128();
	else if (s->keyBits.aes == 256)
		p->cfb = EVP_aes_256_cfb128();
	if (!p->cfb)
		return "ek-symmetric-unsupported";
	p->sym_bits = s->keyBits.aes;
	return NULL;
}

static size_t curve_bytes(TPMI_ECC_CURVE c)
{
	return c == TPM2_ECC_NIST_P256 ? 32 : c == TPM2_ECC_NIST_P384 ? 48 : 0;
}

#define UNSUPPORTED(why) fleet_refuse(reason, why, FLEET_E_UNSUPPORTED)
#define MALFORMED(why) fleet_refuse(reason, why, FLEET_E_MALFORMED)

/* The fields of the public area, before any OpenSSL key is made of them. */
static fleet_err ek_params(const TPMT_PUBLIC *ek, struct ek_prot *p, const char **reason)
{
	const char *r;
	/* A storage key: restricted, decrypt, never sign. Only such a key
	 * performs ActivateCredential, and only it keeps the seed inside. */
	TPMA_OBJECT a = ek->objectAttributes;
	if (!(a & TPMA_OBJECT_RESTRICTED))
		return UNSUPPORTED("ek-not-restricted");
	if (!(a & TPMA_OBJECT_DECRYPT))
		return UNSUPPORTED("ek-not-decrypt");
	if (a & TPMA_OBJECT_SIGN_ENCRYPT)
		return UNSUPPORTED("ek-sign-set");
	if ((r = check_name_alg(ek->nameAlg, p)) != NULL)
		return UNSUPPORTED(r);
	if (ek->type == TPM2_ALG_RSA) {
		const TPMS_RSA_PARMS *rsa = &ek->parameters.rsaDetail;
		/* A storage key has no scheme of its own: the seed is always
		 * OAEP with the nameAlg, whatever a scheme would say. */
		if (rsa->scheme.scheme != TPM2_ALG_NULL)
			return UNSUPPORTED("ek-scheme-unsupported");
		if (rsa->keyBits != 2048 && rsa->keyBits != 3072 && rsa->keyBits != 4096)
			return UNSUPPORTED("ek-key-unsupported");
		/* Every EK template uses the default exponent (0 means 65537).
		 * Another one is refused: with e = 1 the "encrypted" seed would
		 * be the padded seed itself, and anyone could open the blob. */
		if (rsa->exponent != 0 && rsa->exponent != 65537)
			return UNSUPPORTED("ek-key-unsupported");
		/* The modulus must be exactly keyBits long, top bit set: a
		 * shorter one is a different (weaker) key than declared. */
		if (ek->unique.rsa.size != rsa->keyBits / 8 || !(ek->unique.rsa.buffer[0] & 0x80))
			return MALFORMED("ek-public-malformed");
		r = check_sym(&rsa->symmetric, p);
		return r ? UNSUPPORTED(r) : FLEET_OK;
	}
	if (ek->type == TPM2_ALG_ECC) {
		const TPMS_ECC_PARMS *c = &ek->parameters.eccDetail;
		size_t cb = curve_bytes(c->curveID);
		if (c->scheme.scheme != TPM2_ALG_NULL)
			return UNSUPPORTED("ek-scheme-unsupported");
		/* The seed's KDF is KDFe with the nameAlg (Part 1, 11.4.10.3). */
		if (c->kdf.scheme != TPM2_ALG_NULL)
			return UNSUPPORTED("ek-kdf-unsupported");
		if (!cb)
			return UNSUPPORTED("ek-key-unsupported");
		if (ek->unique.ecc.x.size == 0 || ek->unique.ecc.x.size > cb ||
		    ek->unique.ecc.y.size == 0 || ek->unique.ecc.y.size > cb)
			return MALFORMED("ek-public-malformed");
		r = check_sym(&c->symmetric, p);
		return r ? UNSUPPORTED(r) : FLEET_OK;
	}
	return UNSUPPORTED("ek-key-unsupported");
}

#undef UNSUPPORTED
#undef MALFORMED

/*
 * The one rule for an EK MakeCredential wraps to (fleet_credential_ek_supported
 * and fleet_make_credential both run exactly this): the public area's fields,
 * then the OpenSSL key every seed is made with (lib/tpm_public.c: an ECC point
 * on its curve, an odd modulus). On FLEET_OK *pk is that key and *p what the
 * area says about the protection.
 */
static fleet_err ek_rule(const TPMT_PUBLIC *ek, struct ek_prot *p, EVP_PKEY **pk,
			 const char **reason)
{
	fleet_err e;

	*pk = NULL;
	if ((e = ek_params(ek, p, reason)) != FLEET_OK)
		return e;
	e = fleet_tpm_public_to_pkey(ek, pk);
	if (e == FLEET_E_MALFORMED)
		*reason = "ek-public-malformed";
	else if (e == FLEET_E_UNSUPPORTED)
		*reason = "ek-key-unsupported";
	/* Anything else (memory, OpenSSL) says nothing about the EK. */
	return e;
}

fleet_err fleet_credential_ek_supported(const TPMT_PUBLIC *ek, const char **reason)
{
	const char *dummy;
	struct ek_prot p = {0};
	EVP_PKEY *pk = NULL;
	fleet_err e;

	if (!reason)
		reason = &dummy;
	*reason = NULL;
	if (!ek)
		return FLEET_E_INVALID_ARG;
	e = ek_rule(ek, &p, &pk, reason);
	EVP_PKEY_free(pk);
	return e;
}

/* A TPM name: nameAlg (big-endian) then that algorithm's digest. The TPM
 * compares the whole name with the loaded object's, so a length that does
 * not fit the algorithm can only be a mistake or an attack. */
static fleet_err check_name(const uint8_t *name, size_t len)
{
	if (len < 2)
		return FLEET_E_MALFORMED;
	size_t d = fleet_hash_alg_size((uint16_t)(name[0] << 8 | name[1]));
	if (!d)
		return FLEET_E_UNSUPPORTED;
	return len == 2 + d ? FLEET_OK : FLEET_E_MALFORMED;
}

/* RSA: a random seed, OAEP-encrypted to the EK with label "IDENTITY\0". */
static fleet_err rsa_seed(const TPMT_PUBLIC *ek, EVP_PKEY *pk, const struct ek_prot *p,
			  uint8_t *seed, TPM2B_ENCRYPTED_SECRET *out)
{
	static const char label[] = "IDENTITY"; /* sizeof includes the NUL */
	fleet_err e = FLEET_E_CRYPTO;
	EVP_PKEY_CTX *ctx = NULL;
	unsigned char *lab = NULL;
	size_t outlen = sizeof(out->secret);
	/* OAEP's hash and MGF1's hash are both the EK's nameAlg (Part 1, B.10.3). */
	const char *mdname = EVP_MD_get0_name(fleet_hash_alg_md(p->name_alg));

	if (!(lab = OPENSSL_memdup(label, sizeof(label)))) {
		e = FLEET_E_NOMEM;
		goto done;
	}
	if (RAND_priv_bytes(seed, (int)p->dsize) != 1)
		goto done;
	if (!(ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL)) ||
	    EVP_PKEY_encrypt_init(ctx) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_oaep_md_name(ctx, mdname, NULL) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, mdname, NULL) <= 0 ||
	    EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, lab, (int)sizeof(label)) <= 0)
		goto done;
	lab = NULL; /* owned by ctx now */
	if (EVP_PKEY_encrypt(ctx, out->secret, &outlen, seed, p->dsize) <= 0 ||
	    outlen != ek->unique.rsa.size)
		goto done;
	out->size = (UINT16)outlen;
	e = FLEET_OK;
done:
	OPENSSL_free(lab);
	EVP_PKEY_CTX_free(ctx);
	return e;
}

static int bn_param_pad(const EVP_PKEY *k, const char *name, uint8_t *out, size_t len)
{
	BIGNUM *bn = NULL;
	int ok = EVP_PKEY_get_bn_param(k, name, &bn) == 1 &&
		 BN_bn2binpad(bn, out, (int)len) == (int)len;
	BN_free(bn);
	return ok;
}

/*
 * ECC: an ephemeral key on the EK's curve; Z is the x-coordinate of
 * ephemeral.d * EK.Q (padded to the curve size, as the TPM computes it);
 * seed = KDFe(nameAlg, Z, "IDENTITY", ephemeral.x, EK.x). PartyVInfo is the
 * EK's x exactly as its public area holds it, because that is what the TPM
 * feeds KDFe on its side.
 */
static fleet_err ecc_seed(const TPMT_PUBLIC *ek, EVP_PKEY *ekk, const struct ek_prot *p,
			  uint8_t *seed, TPM2B_ENCRYPTED_SECRET *out)
{
	size_t cb = curve_bytes(ek->parameters.eccDetail.curveID), zlen = 0, off = 0;
	uint8_t z[48];
	TPMS_ECC_POINT eph_pt = {0};
	EVP_PKEY *eph = NULL;
	EVP_PKEY_CTX *dctx = NULL;
	/* ekk is on its curve (ek_rule): ECDH with a point off it leaks the
	 * ephemeral scalar's arithmetic, and no TPM has such an EK. That check
	 * (fleet_tpm_public_to_pkey: decoded onto the curve, not the point at
	 * infinity) is the whole of SP 800-56A's partial validation, and with
	 * cofactor 1 on P-256 and P-384 every such point has prime order; so the
	 * peer is not validated again here. OpenSSL's full validation would add
	 * the order check n*Q == O, a third scalar multiplication (~1 ms on
	 * P-384, a quarter of the admission's floor) that proves nothing more
	 * on these curves. */
	fleet_err e = FLEET_E_CRYPTO;
	eph = EVP_PKEY_Q_keygen(NULL, NULL, "EC", cb == 32 ? "P-256" : "P-384");
	if (!eph || !(dctx = EVP_PKEY_CTX_new_from_pkey(NULL, eph, NULL)) ||
	    EVP_PKEY_derive_init(dctx) <= 0 || EVP_PKEY_derive_set_peer_ex(dctx, ekk, 0) <= 0)
		goto done;
	zlen = sizeof(z);
	if (EVP_PKEY_derive(dctx, z, &zlen) <= 0 || zlen != cb)
		goto done;
	eph_pt.x.size = eph_pt.y.size = (UINT16)cb;
	if (!bn_param_pad(eph, OSSL_PKEY_PARAM_EC_PUB_X, eph_pt.x.buffer, cb) ||
	    !bn_param_pad(eph, OSSL_PKEY_PARAM_EC_PUB_Y, eph_pt.y.buffer, cb))
		goto done;
	e = fleet_kdfe(p->name_alg, z, zlen, "IDENTITY", eph_pt.x.buffer, cb,
		       ek->unique.ecc.x.buffer, ek->unique.ecc.x.size, (uint32_t)(p->dsize * 8),
		       seed);
	if (e != FLEET_OK)
		goto done;
	if (Tss2_MU_TPMS_ECC_POINT_Marshal(&eph_pt, out->secret, sizeof(out->secret), &off) !=
	    TSS2_RC_SUCCESS) {
		e = FLEET_E_CRYPTO;
		goto done;
	}
	out->size = (UINT16)off;
done:
	OPENSSL_cleanse(z, sizeof(z));
	EVP_PKEY_CTX_free(dctx);
	EVP_PKEY_free(eph); /* OpenSSL clears the private scalar on free */
	return e;
}

static fleet_err aes_cfb(const EVP_CIPHER *c, const uint8_t *key, const uint8_t *in, size_t len,
			 uint8_t *out)
{
	static const uint8_t iv[16]; /* Part 1, 24.4: the IV is zero; the key is single-use */
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n1 = 0, n2 = 0;
	fleet_err e = FLEET_E_CRYPTO;
	if (!ctx)
		return FLEET_E_NOMEM;
	if (EVP_EncryptInit_ex(ctx, c, NULL, key, iv) == 1 &&
	    EVP_EncryptUpdate(ctx, out, &n1, in, (int)len) == 1 &&
	    EVP_EncryptFinal_ex(ctx, out + n1, &n2) == 1 && (size_t)(n1 + n2) == len)
		e = FLEET_OK;
	EVP_CIPHER_CTX_free(ctx);
	return e;
}

/* The credential blob, given the seed (Part 1, 24.4 and 24.5). */
static fleet_err protect(const struct ek_prot *p, const uint8_t *seed, const uint8_t *secret,
			 size_t secret_len, const uint8_t *name, size_t name_len,
			 TPM2B_ID_OBJECT *out)
{
	uint8_t sym_key[32], hmac_key[FLEET_DIGEST_MAX];
	uint8_t plain[2 + FLEET_DIGEST_MAX], enc[2 + FLEET_DIGEST_MAX];
	uint8_t mac_in[sizeof(enc) + sizeof(TPMU_NAME)];
	TPM2B_DIGEST outer = {.size = (UINT16)p->dsize};
	size_t enc_len = 2 + secret_len, off = 0;
	unsigned int maclen = 0;
	fleet_err e;

	/* The plaintext is the secret as a marshaled TPM2B_DIGEST. */
	plain[0] = (uint8_t)(secret_len >> 8);
	plain[1] = (uint8_t)secret_len;
	memcpy(plain + 2, secret, secret_len);
	/* The symmetric key is bound to the object's name: a TPM holding a
	 * different object derives a different key. */
	e = fleet_kdfa(p->name_alg, seed, p->dsize, "STORAGE", name, name_len, NULL, 0,
		       p->sym_bits, sym_key);
	if (e == FLEET_OK)
		e = aes_cfb(p->cfb, sym_key, plain, enc_len, enc);
	if (e == FLEET_OK)
		e = fleet_kdfa(p->name_alg, seed, p->dsize, "INTEGRITY", NULL, 0, NULL, 0,
			       (uint32_t)(p->dsize * 8), hmac_key);
	if (e != FLEET_OK)
		goto done;
	/* The outer HMAC covers the ciphertext and the name, so neither can be
	 * changed without the TPM noticing before it decrypts anything. */
	memcpy(mac_in, enc, enc_len);
	memcpy(mac_in + enc_len, name, name_len);
	if (!HMAC(fleet_hash_alg_md(p->name_alg), hmac_key, (int)p->dsize, mac_in,
		  enc_len + name_len, outer.buffer, &maclen) ||
	    maclen != p->dsize) {
		e = FLEET_E_CRYPTO;
		goto done;
	}
	if (Tss2_MU_TPM2B_DIGEST_Marshal(&outer, out->credential, sizeof(out->credential), &off) !=
		    TSS2_RC_SUCCESS ||
	    enc_len > sizeof(out->credential) - off) {
		e = FLEET_E_CRYPTO;
		goto done;
	}
	memcpy(out->credential + off, enc, enc_len);
	out->size = (UINT16)(off + enc_len);
done:
	OPENSSL_cleanse(sym_key, sizeof(sym_key));
	OPENSSL_cleanse(hmac_key, sizeof(hmac_key));
	OPENSSL_cleanse(plain, sizeof(plain));
	return e;
}

fleet_err fleet_make_credential(const TPMT_PUBLIC *ek, const uint8_t *secret, size_t secret_len,
				const uint8_t *obj_name, size_t obj_name_len,
				struct fleet_buf *id_object, struct fleet_buf *enc_secret,
				const char **reason)
{
	const char *dummy;
	struct ek_prot p = {0};
	EVP_PKEY *pk = NULL;
	uint8_t seed[FLEET_DIGEST_MAX];
	TPM2B_ID_OBJECT id = {0};
	TPM2B_ENCRYPTED_SECRET es = {0};
	uint8_t id_wire[sizeof(id)], es_wire[sizeof(es)];
	size_t id_len = 0, es_len = 0;
	fleet_err e;

	if (!reason)
		reason = &dummy;
	*reason = NULL;
	if (!ek || !secret || !obj_name || !id_object || !enc_secret)
		return FLEET_E_INVALID_ARG;
	e = ek_rule(ek, &p, &pk, reason);
	if (e != FLEET_OK)
		return e;
	/* The TPM unwraps the secret as a TPM2B_DIGEST and refuses one longer
	 * than the EK's nameAlg digest (TPM2_MakeCredential checks the same). */
	e = FLEET_E_INVALID_ARG;
	if (secret_len == 0 || secret_len > p.dsize)
		goto done;
	e = check_name(obj_name, obj_name_len);
	if (e != FLEET_OK)
		goto done;

	e = ek->type == TPM2_ALG_RSA ? rsa_seed(ek, pk, &p, seed, &es)
				     : ecc_seed(ek, pk, &p, seed, &es);
	if (e == FLEET_OK)
		e = protect(&p, seed, secret, secret_len, obj_name, obj_name_len, &id);
	OPENSSL_cleanse(seed, sizeof(seed));
	if (e != FLEET_OK)
		goto done;
	if (Tss2_MU_TPM2B_ID_OBJECT_Marshal(&id, id_wire, sizeof(id_wire), &id_len) !=
		    TSS2_RC_SUCCESS ||
	    Tss2_MU_TPM2B_ENCRYPTED_SECRET_Marshal(&es, es_wire, sizeof(es_wire), &es_len) !=
		    TSS2_RC_SUCCESS) {
		e = FLEET_E_CRYPTO;
		goto done;
	}
	/* Both or neither: a caller must never send half a challenge. */
	size_t id_before = id_object->len;
	e = fb_put(id_object, id_wire, id_len);
	if (e == FLEET_OK) {
		e = fb_put(enc_secret, es_wire, es_len);
		if (e != FLEET_OK)
			id_object->len = id_before;
	}
done:
	EVP_PKEY_free(pk);
	return e;
}
