/*
 * token_seal.c: a join token sealed to the join service's P-256 key
 * (token_seal.h, TS1..TS12; docs/join-tokens.md).
 */
#include "lib/token_seal.h"
#include "lib/token_seal_int.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/sanitize.h"
#include "lib/tpm_alg.h"

#define SHA256_LEN 32
#define COORD_LEN 32
/* The DER of a P-256 SubjectPublicKeyInfo up to its point: SEQUENCE {
 * SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (66 bytes, 0 unused
 * bits) }. The point (65 bytes, 0x04 || X || Y) follows. */
static const uint8_t spki_prefix[FLEET_SEAL_SPKI_LEN - FLEET_SEAL_POINT_LEN] = {
	0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
	0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00};
#define SPKI_POINT_OFF (sizeof(spki_prefix))

static const uint8_t magic[FLEET_SEAL_MAGIC_LEN] = {'f', 's', 'l', '1'};
static const char info_label[] = "fleetd seal v1"; /* then NUL, then the purpose */

#define OFF_ID FLEET_SEAL_MAGIC_LEN
#define OFF_POINT (OFF_ID + FLEET_SEAL_KEY_ID_LEN)
#define OFF_NONCE (OFF_POINT + FLEET_SEAL_POINT_LEN)
#define OFF_CT FLEET_SEAL_HEADER_LEN

struct fleet_seal_key {
	EVP_PKEY *pkey;
	uint8_t spki[FLEET_SEAL_SPKI_LEN]; /* canonical (TS2) */
	uint8_t spki_hash[SHA256_LEN];
};

/* ---- keys ------------------------------------------------------------- */

static bool is_p256(const EVP_PKEY *pk)
{
	char group[64];
	size_t n = 0;
	if (!EVP_PKEY_is_a(pk, "EC"))
		return false;
	if (EVP_PKEY_get_group_name(pk, group, sizeof(group), &n) != 1)
		return false;
	return strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0;
}

static bool bn_param_pad(const EVP_PKEY *pk, const char *name, uint8_t *out, size_t len)
{
	BIGNUM *bn = NULL;
	bool ok = EVP_PKEY_get_bn_param(pk, name, &bn) == 1 &&
		  BN_bn2binpad(bn, out, (int)len) == (int)len;
	BN_free(bn);
	return ok;
}

/* A key for pk (a P-256 key pair; taken over, freed on failure): its
 * canonical SPKI built from the point's coordinates, whatever form the key
 * came in (TS2), and the SPKI's hash. */
static fleet_err key_wrap(EVP_PKEY *pk, struct fleet_seal_key **out)
{
	struct fleet_seal_key *k;
	fleet_err e;

	if (!(k = calloc(1, sizeof(*k)))) {
		EVP_PKEY_free(pk);
		return FLEET_E_NOMEM;
	}
	k->pkey = pk;
	memcpy(k->spki, spki_prefix, sizeof(spki_prefix));
	k->spki[SPKI_POINT_OFF] = 0x04;
	if (!bn_param_pad(pk, OSSL_PKEY_PARAM_EC_PUB_X, k->spki + SPKI_POINT_OFF + 1, COORD_LEN) ||
	    !bn_param_pad(pk, OSSL_PKEY_PARAM_EC_PUB_Y,
			  k->spki + SPKI_POINT_OFF + 1 + COORD_LEN, COORD_LEN)) {
		fleet_seal_key_free(k);
		return FLEET_E_CRYPTO;
	}
	/* The PEM this key writes carries the same uncompressed point. */
	(void)EVP_PKEY_set_utf8_string_param(pk, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
					     OSSL_PKEY_EC_POINT_CONVERSION_FORMAT_UNCOMPRESSED);
	if ((e = fleet_hash(FLEET_ALG_SHA256, k->spki, sizeof(k->spki), k->spki_hash)) !=
	    FLEET_OK) {
		fleet_seal_key_free(k);
		return e;
	}
	*out = k;
	return FLEET_OK;
}

fleet_err fleet_seal_key_generate(struct fleet_seal_key **out)
{
	EVP_PKEY *pk;
	if (!out)
		return FLEET_E_INVALID_ARG;
	*out = NULL;
	if (!(pk = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"))) {
		fleet_openssl_drain(NULL, 0);
		return FLEET_E_CRYPTO;
	}
	return key_wrap(pk, out);
}

fleet_err fleet_seal_key_from_scalar(const uint8_t d[32], struct fleet_seal_key **out)
{
	EC_GROUP *g = NULL;
	EC_POINT *q = NULL;
	BIGNUM *bd = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pk = NULL;
	uint8_t pub[FLEET_SEAL_POINT_LEN];
	fleet_err e = FLEET_E_CRYPTO;

	if (!d || !out)
		return FLEET_E_INVALID_ARG;
	*out = NULL;
	if (!(g = EC_GROUP_new_by_curve_name_ex(NULL, NULL, NID_X9_62_prime256v1)) ||
	    !(bd = BN_secure_new()) || !BN_bin2bn(d, 32, bd) || !(q = EC_POINT_new(g)))
		goto out;
	if (BN_is_zero(bd) || BN_cmp(bd, EC_GROUP_get0_order(g)) >= 0) {
		e = FLEET_E_INVALID_ARG;
		goto out;
	}
	if (!EC_POINT_mul(g, q, bd, NULL, NULL, NULL) ||
	    EC_POINT_point2oct(g, q, POINT_CONVERSION_UNCOMPRESSED, pub, sizeof(pub), NULL) !=
		    sizeof(pub))
		goto out;
	if (!(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bd) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)) ||
	    !(params = OSSL_PARAM_BLD_to_param(bld)))
		goto out;
	if (!(ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_KEYPAIR, params) <= 0)
		goto out;
	e = key_wrap(pk, out);
	pk = NULL;
out:
	if (e != FLEET_OK)
		fleet_openssl_drain(NULL, 0);
	EVP_PKEY_free(pk);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params); /* 3.0 has no OSSL_PARAM_clear_free; a test's scalar */
	OSSL_PARAM_BLD_free(bld);
	BN_clear_free(bd);
	EC_POINT_free(q);
	EC_GROUP_free(g);
	return e;
}

static fleet_err key_refuse(struct fleet_errctx *ec, fleet_err e, const char *reason,
			    const char *what)
{
	char ossl[sizeof(ec->ossl)];
	fleet_openssl_drain(ossl, sizeof(ossl));
	fleet_errctx_refuse(ec, e, reason, "seal key: %s", what);
	if (ec)
		memcpy(ec->ossl, ossl, sizeof(ec->ossl));
	return e;
}

/* Whether the len bytes at p are all whitespace (what may follow the block). */
static bool only_space(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}

fleet_err fleet_seal_key_load_pem(const uint8_t *pem, size_t len, struct fleet_seal_key **out,
				  struct fleet_errctx *ec)
{
	BIO *bio = NULL;
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long der_len = 0;
	PKCS8_PRIV_KEY_INFO *p8 = NULL;
	EVP_PKEY *pk = NULL;
	EVP_PKEY_CTX *cctx = NULL;
	const unsigned char *p;
	fleet_err e;

	if (!out || (!pem && len))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "seal key: no output or input");
	*out = NULL;
	if (len > FLEET_SEAL_MAX_PEM)
		return fleet_errctx_refuse(ec, FLEET_E_TOO_LARGE, "seal-key-pem",
					   "seal key: PEM of %zu bytes, more than %d", len,
					   FLEET_SEAL_MAX_PEM);
	if (!(bio = BIO_new_mem_buf(pem ? (const void *)pem : "", (int)len))) {
		e = fleet_errctx_openssl(ec, FLEET_E_NOMEM, "seal key: BIO");
		goto out;
	}
	/* PEM_FLAG_SECURE: the base64 and the DER are held in wiping memory. */
	if (PEM_read_bio_ex(bio, &name, &header, &der, &der_len,
			    PEM_FLAG_SECURE | PEM_FLAG_EAY_COMPATIBLE) != 1 ||
	    der_len <= 0) {
		e = key_refuse(ec, FLEET_E_MALFORMED, "seal-key-pem", "not a PEM block");
		goto out;
	}
	if (strcmp(name, PEM_STRING_PKCS8INF) != 0 || header[0] != '\0') {
		e = key_refuse(ec, FLEET_E_MALFORMED, "seal-key-pem",
			       "not an unencrypted PKCS#8 \"PRIVATE KEY\" block");
		goto out;
	}
	{
		char *rest = NULL;
		long n = BIO_get_mem_data(bio, &rest);
		if (n < 0 || !only_space((const uint8_t *)rest, (size_t)n)) {
			e = key_refuse(ec, FLEET_E_MALFORMED, "seal-key-pem",
				       "more than one PEM block");
			goto out;
		}
	}
	p = der;
	if (!(p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, der_len)) || p != der + der_len) {
		e = key_refuse(ec, FLEET_E_MALFORMED, "seal-key-pem", "not a PKCS#8 structure");
		goto out;
	}
	if (!(pk = EVP_PKCS82PKEY_ex(p8, NULL, NULL))) {
		e = key_refuse(ec, FLEET_E_MALFORMED, "seal-key-pem", "not a private key");
		goto out;
	}
	if (!is_p256(pk)) {
		e = key_refuse(ec, FLEET_E_UNSUPPORTED, "seal-key-type", "not an EC P-256 key");
		goto out;
	}
	/* The private scalar in range, the public point on the curve and the
	 * scalar's: else the id would name a key this one cannot open for. */
	if (!(cctx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL))) {
		e = fleet_errctx_openssl(ec, FLEET_E_NOMEM, "seal key: context");
		goto out;
	}
	if (EVP_PKEY_check(cctx) != 1) {
		e = key_refuse(ec, FLEET_E_MALFORMED, "seal-key-invalid",
			       "its private and public halves do not agree");
		goto out;
	}
	e = key_wrap(pk, out);
	pk = NULL;
	if (e != FLEET_OK)
		e = fleet_errctx_openssl(ec, e, "seal key: cannot encode its public key");
out:
	EVP_PKEY_CTX_free(cctx);
	EVP_PKEY_free(pk);
	PKCS8_PRIV_KEY_INFO_free(p8); /* clears the private key octets */
	if (der)
		OPENSSL_secure_clear_free(der, (size_t)der_len);
	OPENSSL_secure_free(name);
	OPENSSL_secure_free(header);
	BIO_free(bio);
	return e;
}

fleet_err fleet_seal_key_private_pem(const struct fleet_seal_key *k, struct fleet_buf *out)
{
	BIO *bio;
	char *p = NULL;
	long n;
	fleet_err e;

	if (!k || !out || !out->secret)
		return FLEET_E_INVALID_ARG;
	fb_reset(out);
	/* The secure-memory BIO grows by copy-and-wipe and wipes on free. */
	if (!(bio = BIO_new(BIO_s_secmem()))) {
		fleet_openssl_drain(NULL, 0);
		return FLEET_E_NOMEM;
	}
	if (PEM_write_bio_PrivateKey(bio, k->pkey, NULL, NULL, 0, NULL, NULL) != 1 ||
	    (n = BIO_get_mem_data(bio, &p)) <= 0) {
		fleet_openssl_drain(NULL, 0);
		BIO_free(bio);
		return FLEET_E_CRYPTO;
	}
	e = fb_put(out, p, (size_t)n);
	BIO_free(bio);
	if (e != FLEET_OK)
		fb_reset(out);
	return e;
}

fleet_err fleet_seal_key_public_spki(const struct fleet_seal_key *k, struct fleet_buf *der_out)
{
	fleet_err e;
	if (!k || !der_out)
		return FLEET_E_INVALID_ARG;
	fb_reset(der_out);
	if ((e = fb_put(der_out, k->spki, sizeof(k->spki))) != FLEET_OK)
		fb_reset(der_out);
	return e;
}

void fleet_seal_key_id(const struct fleet_seal_key *k, uint8_t id[FLEET_SEAL_KEY_ID_LEN])
{
	memcpy(id, k->spki_hash, FLEET_SEAL_KEY_ID_LEN);
}

void fleet_seal_key_free(struct fleet_seal_key *k)
{
	if (!k)
		return;
	EVP_PKEY_free(k->pkey); /* OpenSSL clears the private scalar */
	OPENSSL_cleanse(k, sizeof(*k));
	free(k);
}

/* ---- the construction ------------------------------------------------- */

static bool purpose_ok(const char *purpose, size_t *len)
{
	size_t n;
	if (!purpose)
		return false;
	n = strnlen(purpose, FLEET_SEAL_MAX_PURPOSE + 1);
	if (n == 0 || n > FLEET_SEAL_MAX_PURPOSE || !fleet_ascii_printable(purpose, n, 0))
		return false;
	*len = n;
	return true;
}

/* The public key of a P-256 point (uncompressed SEC1, 65 bytes), on the
 * curve and not the identity (TS8). */
static fleet_err point_to_pkey(const uint8_t pt[FLEET_SEAL_POINT_LEN], EVP_PKEY **out)
{
	OSSL_PARAM params[3];
	EVP_PKEY_CTX *ctx = NULL, *chk = NULL;
	EVP_PKEY *pk = NULL;
	fleet_err e = FLEET_E_CRYPTO;

	*out = NULL;
	if (pt[0] != 0x04)
		return FLEET_E_MALFORMED;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)pt,
						      FLEET_SEAL_POINT_LEN);
	params[2] = OSSL_PARAM_construct_end();
	if (!(ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) <= 0)
		goto out;
	/* Decoding the point checks that it lies on the curve. */
	if (EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
		e = FLEET_E_MALFORMED;
		goto out;
	}
	if (!(chk = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL)))
		goto out;
	/* On the curve, not at infinity, of the group's order. */
	if (EVP_PKEY_public_check(chk) != 1) {
		e = FLEET_E_MALFORMED;
		goto out;
	}
	*out = pk;
	pk = NULL;
	e = FLEET_OK;
out:
	EVP_PKEY_free(pk);
	EVP_PKEY_CTX_free(chk);
	EVP_PKEY_CTX_free(ctx);
	return e;
}

/* The recipient's public key from its SPKI (TS4). */
static fleet_err recipient_parse(const uint8_t *spki, size_t len, EVP_PKEY **out)
{
	const unsigned char *p = spki;
	EVP_PKEY *pk;
	fleet_err e;

	*out = NULL;
	if (!spki || len == 0 || len > LONG_MAX)
		return FLEET_E_MALFORMED;
	if (!(pk = d2i_PUBKEY(NULL, &p, (long)len)) || p != spki + len) {
		EVP_PKEY_free(pk);
		return FLEET_E_MALFORMED;
	}
	e = is_p256(pk) ? FLEET_OK : FLEET_E_UNSUPPORTED;
	EVP_PKEY_free(pk);
	if (e != FLEET_OK)
		return e;
	/* Only the canonical form: a compressed point or explicit parameters
	 * would give another key id than the key's own (TS2). */
	if (len != FLEET_SEAL_SPKI_LEN || memcmp(spki, spki_prefix, sizeof(spki_prefix)) != 0)
		return FLEET_E_UNSUPPORTED;
	return point_to_pkey(spki + SPKI_POINT_OFF, out);
}

/* Z: the x-coordinate of ECDH(priv, peer); peer was checked. */
static fleet_err ecdh(EVP_PKEY *priv, EVP_PKEY *peer, uint8_t z[COORD_LEN])
{
	EVP_PKEY_CTX *ctx;
	size_t zlen = COORD_LEN;
	fleet_err e = FLEET_E_CRYPTO;

	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, priv, NULL)) &&
	    EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) > 0 &&
	    EVP_PKEY_derive(ctx, z, &zlen) > 0 && zlen == COORD_LEN)
		e = FLEET_OK;
	EVP_PKEY_CTX_free(ctx);
	return e;
}

/* key = HKDF-SHA256(Z, point || SHA-256(recipient SPKI), "fleetd seal v1" 0 purpose). */
static fleet_err derive_key(const uint8_t z[COORD_LEN], const uint8_t point[FLEET_SEAL_POINT_LEN],
			    const uint8_t spki_hash[SHA256_LEN], const char *purpose,
			    size_t purpose_len, uint8_t key[32])
{
	uint8_t salt[FLEET_SEAL_POINT_LEN + SHA256_LEN];
	uint8_t info[sizeof(info_label) + FLEET_SEAL_MAX_PURPOSE]; /* the label's NUL is the 0 */
	size_t info_len = sizeof(info_label) + purpose_len;
	OSSL_PARAM params[5];
	EVP_KDF *kdf = NULL;
	EVP_KDF_CTX *kctx = NULL;
	fleet_err e = FLEET_E_CRYPTO;

	memcpy(salt, point, FLEET_SEAL_POINT_LEN);
	memcpy(salt + FLEET_SEAL_POINT_LEN, spki_hash, SHA256_LEN);
	memcpy(info, info_label, sizeof(info_label));
	memcpy(info + sizeof(info_label), purpose, purpose_len);
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)z, COORD_LEN);
	params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt, sizeof(salt));
	params[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, info_len);
	params[4] = OSSL_PARAM_construct_end();
	if ((kdf = EVP_KDF_fetch(NULL, "HKDF", NULL)) && (kctx = EVP_KDF_CTX_new(kdf)) &&
	    EVP_KDF_derive(kctx, key, 32, params) == 1)
		e = FLEET_OK;
	EVP_KDF_CTX_free(kctx); /* clears its copy of Z */
	EVP_KDF_free(kdf);
	return e;
}

/* The AAD: header 0x00 purpose; returns its length. */
static size_t make_aad(uint8_t *aad, const uint8_t *header, const char *purpose,
		       size_t purpose_len)
{
	memcpy(aad, header, FLEET_SEAL_HEADER_LEN);
	aad[FLEET_SEAL_HEADER_LEN] = 0;
	memcpy(aad + FLEET_SEAL_HEADER_LEN + 1, purpose, purpose_len);
	return FLEET_SEAL_HEADER_LEN + 1 + purpose_len;
}

#define AAD_MAX (FLEET_SEAL_HEADER_LEN + 1 + FLEET_SEAL_MAX_PURPOSE)

/* AES-256-GCM, 12-byte nonce, 16-byte tag. open: 1 when the tag verified,
 * 0 when not, -1 when the library failed. */
static int gcm(int enc, const uint8_t key[32], const uint8_t *nonce, const uint8_t *aad,
	       size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n = 0, fin = 0, r = -1;

	if (!c || EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, key, nonce, enc) != 1 ||
	    EVP_CipherUpdate(c, NULL, &n, aad, (int)aad_len) != 1 ||
	    EVP_CipherUpdate(c, out, &n, in, (int)len) != 1 || (size_t)n != len)
		goto out;
	if (enc) {
		if (EVP_CipherFinal_ex(c, out + n, &fin) != 1 || fin != 0 ||
		    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, FLEET_SEAL_TAG_LEN, tag) != 1)
			goto out;
		r = 1;
	} else {
		if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, FLEET_SEAL_TAG_LEN, tag) != 1)
			goto out;
		/* The tag is compared in constant time (CRYPTO_memcmp). */
		r = EVP_CipherFinal_ex(c, out + n, &fin) == 1 && fin == 0 ? 1 : 0;
	}
out:
	EVP_CIPHER_CTX_free(c); /* clears the key schedule */
	return r;
}

static fleet_err seal_args(const char *purpose, size_t *purpose_len, const uint8_t *pt,
			   size_t pt_len)
{
	if (!purpose_ok(purpose, purpose_len) || !pt || pt_len == 0)
		return FLEET_E_INVALID_ARG;
	if (pt_len > FLEET_SEAL_MAX_PLAINTEXT)
		return FLEET_E_TOO_LARGE;
	return FLEET_OK;
}

fleet_err fleet_seal_with_ephemeral(const uint8_t *recipient_spki, size_t spki_len,
				    const char *purpose, const struct fleet_seal_key *eph,
				    const uint8_t nonce[FLEET_SEAL_NONCE_LEN], const uint8_t *pt,
				    size_t pt_len, struct fleet_buf *out)
{
	EVP_PKEY *rpk = NULL;
	uint8_t rhash[SHA256_LEN], z[COORD_LEN], key[32], aad[AAD_MAX];
	uint8_t *h;
	size_t purpose_len = 0, aad_len;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	fb_reset(out);
	if ((e = seal_args(purpose, &purpose_len, pt, pt_len)) != FLEET_OK)
		return e;
	if (!eph || !nonce)
		return FLEET_E_INVALID_ARG;
	if ((e = recipient_parse(recipient_spki, spki_len, &rpk)) != FLEET_OK) {
		fleet_openssl_drain(NULL, 0);
		return e;
	}
	if ((e = fleet_hash(FLEET_ALG_SHA256, recipient_spki, spki_len, rhash)) != FLEET_OK ||
	    (e = ecdh(eph->pkey, rpk, z)) != FLEET_OK ||
	    (e = derive_key(z, eph->spki + SPKI_POINT_OFF, rhash, purpose, purpose_len, key)) !=
		    FLEET_OK)
		goto out;
	if ((e = fb_reserve(out, FLEET_SEAL_OVERHEAD + pt_len)) != FLEET_OK)
		goto out;
	h = out->data;
	memcpy(h, magic, FLEET_SEAL_MAGIC_LEN);
	memcpy(h + OFF_ID, rhash, FLEET_SEAL_KEY_ID_LEN);
	memcpy(h + OFF_POINT, eph->spki + SPKI_POINT_OFF, FLEET_SEAL_POINT_LEN);
	memcpy(h + OFF_NONCE, nonce, FLEET_SEAL_NONCE_LEN);
	aad_len = make_aad(aad, h, purpose, purpose_len);
	if (gcm(1, key, h + OFF_NONCE, aad, aad_len, pt, pt_len, h + OFF_CT, h + OFF_CT + pt_len) !=
	    1) {
		e = FLEET_E_CRYPTO;
		goto out;
	}
	out->len = FLEET_SEAL_OVERHEAD + pt_len;
	e = FLEET_OK;
out:
	OPENSSL_cleanse(z, sizeof(z));
	OPENSSL_cleanse(key, sizeof(key));
	EVP_PKEY_free(rpk);
	if (e != FLEET_OK) {
		fleet_openssl_drain(NULL, 0);
		fb_reset(out);
	}
	return e;
}

fleet_err fleet_seal(const uint8_t *recipient_spki, size_t spki_len, const char *purpose,
		     const uint8_t *pt, size_t pt_len, struct fleet_buf *out)
{
	struct fleet_seal_key *eph = NULL;
	uint8_t nonce[FLEET_SEAL_NONCE_LEN];
	size_t purpose_len;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	fb_reset(out);
	if ((e = seal_args(purpose, &purpose_len, pt, pt_len)) != FLEET_OK)
		return e;
	if ((e = fleet_seal_key_generate(&eph)) != FLEET_OK)
		return e;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
		fleet_openssl_drain(NULL, 0);
		fleet_seal_key_free(eph);
		return FLEET_E_CRYPTO;
	}
	e = fleet_seal_with_ephemeral(recipient_spki, spki_len, purpose, eph, nonce, pt, pt_len,
				      out);
	fleet_seal_key_free(eph); /* the ephemeral scalar is gone with it */
	return e;
}

/* A refusal of the sealed bytes: the reason, where, and an empty queue. */
static fleet_err refuse(struct fleet_errctx *ec, fleet_err e, const char *reason, size_t off,
			const char *what)
{
	fleet_openssl_drain(NULL, 0);
	fleet_errctx_set(ec, e, off, "sealed token: %s", what);
	if (ec)
		ec->reason = reason;
	return e;
}

fleet_err fleet_unseal(const struct fleet_seal_key *k, const char *purpose, const uint8_t *sealed,
		       size_t len, struct fleet_buf *pt_out, struct fleet_errctx *ec)
{
	EVP_PKEY *epk = NULL;
	uint8_t z[COORD_LEN], key[32], aad[AAD_MAX], tag[FLEET_SEAL_TAG_LEN];
	size_t purpose_len = 0, aad_len, ct_len;
	int r;
	fleet_err e;

	if (!pt_out || !pt_out->secret || pt_out->max < FLEET_SEAL_MAX_PLAINTEXT)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"unseal: the plaintext's buffer is not a wiping one "
					"of %d bytes",
					FLEET_SEAL_MAX_PLAINTEXT);
	fb_reset(pt_out);
	if (!k || !sealed || !purpose_ok(purpose, &purpose_len))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"unseal: no key, no input, or a purpose that is not "
					"1..%d printable ASCII",
					FLEET_SEAL_MAX_PURPOSE);
	/* TS6: the exact length first, then the magic. */
	if (len <= FLEET_SEAL_OVERHEAD)
		return refuse(ec, FLEET_E_MALFORMED, "seal-malformed", len,
			      "shorter than a header, a tag and one byte");
	if (len > FLEET_SEAL_MAX_SEALED)
		return refuse(ec, FLEET_E_MALFORMED, "seal-malformed", FLEET_SEAL_MAX_SEALED,
			      "longer than the plaintext cap allows");
	if (memcmp(sealed, magic, FLEET_SEAL_MAGIC_LEN - 1) != 0)
		return refuse(ec, FLEET_E_MALFORMED, "seal-malformed", 0, "not a sealed token");
	if (sealed[FLEET_SEAL_MAGIC_LEN - 1] != magic[FLEET_SEAL_MAGIC_LEN - 1])
		return refuse(ec, FLEET_E_MALFORMED, "seal-version", FLEET_SEAL_MAGIC_LEN - 1,
			      "a version other than 1");
	/* TS7: sealed to this key, by its id (public), before any ECDH. */
	if (memcmp(sealed + OFF_ID, k->spki_hash, FLEET_SEAL_KEY_ID_LEN) != 0)
		return refuse(ec, FLEET_E_VERIFY, "seal-key-id", OFF_ID, "sealed to another key");
	/* TS8 */
	if ((e = point_to_pkey(sealed + OFF_POINT, &epk)) != FLEET_OK) {
		if (e == FLEET_E_MALFORMED)
			return refuse(ec, e, "seal-point", OFF_POINT,
				      "the ephemeral key is not a point of P-256");
		return fleet_errctx_openssl(ec, e, "unseal: cannot decode the ephemeral key");
	}
	ct_len = len - FLEET_SEAL_OVERHEAD;
	if ((e = ecdh(k->pkey, epk, z)) != FLEET_OK ||
	    (e = derive_key(z, sealed + OFF_POINT, k->spki_hash, purpose, purpose_len, key)) !=
		    FLEET_OK) {
		e = fleet_errctx_openssl(ec, e, "unseal: key agreement");
		goto out;
	}
	if ((e = fb_reserve(pt_out, ct_len)) != FLEET_OK) {
		e = fleet_errctx_msg(ec, e, "unseal: no room for the plaintext");
		goto out;
	}
	aad_len = make_aad(aad, sealed, purpose, purpose_len);
	/* TS9: the plaintext is decrypted into pt_out's memory but only
	 * counted (len) once the tag verified; else it is wiped. */
	memcpy(tag, sealed + OFF_CT + ct_len, sizeof(tag));
	r = gcm(0, key, sealed + OFF_NONCE, aad, aad_len, sealed + OFF_CT, ct_len, pt_out->data,
		tag);
	if (r != 1) {
		OPENSSL_cleanse(pt_out->data, ct_len);
		if (r == 0)
			e = refuse(ec, FLEET_E_VERIFY, "seal-tag", OFF_CT + ct_len,
				   "tampered, or sealed for another purpose or key");
		else
			e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "unseal: AES-GCM");
		goto out;
	}
	pt_out->len = ct_len;
	e = FLEET_OK;
out:
	OPENSSL_cleanse(z, sizeof(z));
	OPENSSL_cleanse(key, sizeof(key));
	EVP_PKEY_free(epk);
	if (e != FLEET_OK)
		fb_reset(pt_out);
	return e;
}
