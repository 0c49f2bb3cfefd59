/*
 * tpm_spki.c: the SubjectPublicKeyInfo DER of a TPM public key, and its
 * SHA-256 (ek_hash for an EK; what a CSR's key must hash to for a certified
 * key).
 *
 * Written out by hand rather than with i2d_PUBKEY: OpenSSL 3 routes that
 * through its encoder framework, which cost ~150 us per call, more than the
 * signature check beside it in every certify verification. The two shapes
 * are fixed by RFC 3279 / RFC 5480 and small:
 *
 *   RSA: SEQ { SEQ { rsaEncryption, NULL }, BIT STRING { SEQ { INT n, INT e } } }
 *   EC:  SEQ { SEQ { id-ecPublicKey, namedCurve }, BIT STRING { 04 || X || Y } }
 *
 * tests/unit/test_tpm_public.c proves the bytes equal OpenSSL's i2d_PUBKEY
 * on hundreds of random keys, leading-zero coordinates included.
 */
#include "lib/tpm.h"

#include <string.h>

#include "lib/buf.h"

/* DER length octets: short form below 128, else 0x81/0x82 and the length. */
static void der_len(struct fleet_buf *b, size_t n)
{
	if (n < 0x80) {
		fb_put_u8(b, (uint8_t)n);
	} else if (n <= 0xff) {
		fb_put_u8(b, 0x81);
		fb_put_u8(b, (uint8_t)n);
	} else {
		fb_put_u8(b, 0x82);
		fb_put_u16be(b, (uint16_t)n);
	}
}

static size_t der_len_size(size_t n) { return n < 0x80 ? 1 : n <= 0xff ? 2 : 3; }

/* Header bytes of a TLV holding n content bytes. */
static size_t tlv_size(size_t n) { return 1 + der_len_size(n) + n; }

/* A positive INTEGER from big-endian magnitude bytes: leading zeros
 * stripped, one 0x00 added when the top bit would read as a sign. */
static void der_uint(struct fleet_buf *b, const uint8_t *mag, size_t n)
{
	while (n > 1 && mag[0] == 0) {
		mag++;
		n--;
	}
	int pad = n > 0 && (mag[0] & 0x80);
	fb_put_u8(b, 0x02);
	der_len(b, n + (size_t)pad);
	if (pad)
		fb_put_u8(b, 0x00);
	fb_put(b, mag, n);
}

static size_t der_uint_size(const uint8_t *mag, size_t n)
{
	while (n > 1 && mag[0] == 0) {
		mag++;
		n--;
	}
	return tlv_size(n + (n > 0 && (mag[0] & 0x80)));
}

static fleet_err rsa_spki(const TPMT_PUBLIC *pub, struct fleet_buf *b)
{
	/* AlgorithmIdentifier { rsaEncryption, NULL } */
	static const uint8_t alg[] = {0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
				      0x0d, 0x01, 0x01, 0x01, 0x05, 0x00};
	const TPM2B_PUBLIC_KEY_RSA *n = &pub->unique.rsa;
	uint32_t exp = pub->parameters.rsaDetail.exponent ? pub->parameters.rsaDetail.exponent
							   : 65537;
	uint8_t e[4] = {(uint8_t)(exp >> 24), (uint8_t)(exp >> 16), (uint8_t)(exp >> 8),
			(uint8_t)exp};
	size_t rsakey = der_uint_size(n->buffer, n->size) + der_uint_size(e, 4);
	size_t bits = 1 + tlv_size(rsakey); /* unused-bits octet + RSAPublicKey */

	fb_put_u8(b, 0x30);
	der_len(b, sizeof(alg) + tlv_size(bits));
	fb_put(b, alg, sizeof(alg));
	fb_put_u8(b, 0x03);
	der_len(b, bits);
	fb_put_u8(b, 0x00);
	fb_put_u8(b, 0x30);
	der_len(b, rsakey);
	der_uint(b, n->buffer, n->size);
	der_uint(b, e, 4);
	return fb_err(b);
}

static fleet_err ecc_spki(const TPMT_PUBLIC *pub, struct fleet_buf *b)
{
	/* SEQ { id-ecPublicKey, prime256v1 } and SEQ { id-ecPublicKey, secp384r1 } */
	static const uint8_t p256[] = {0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
				       0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01,
				       0x07};
	static const uint8_t p384[] = {0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d,
				       0x02, 0x01, 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22};
	const TPMS_ECC_POINT *pt = &pub->unique.ecc;
	const uint8_t *alg;
	size_t alg_len, fsz;
	uint8_t zeros[48] = {0};

	if (pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P256) {
		alg = p256, alg_len = sizeof(p256), fsz = 32;
	} else if (pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P384) {
		alg = p384, alg_len = sizeof(p384), fsz = 48;
	} else {
		return FLEET_E_UNSUPPORTED;
	}
	if (pt->x.size > fsz || pt->y.size > fsz)
		return FLEET_E_MALFORMED;
	size_t bits = 1 + 1 + 2 * fsz; /* unused-bits octet, 0x04, X, Y */
	fb_put_u8(b, 0x30);
	der_len(b, alg_len + tlv_size(bits));
	fb_put(b, alg, alg_len);
	fb_put_u8(b, 0x03);
	der_len(b, bits);
	fb_put_u8(b, 0x00);
	fb_put_u8(b, 0x04);
	/* Coordinates left-padded to the field size, as SEC1 requires. */
	fb_put(b, zeros, fsz - pt->x.size);
	fb_put(b, pt->x.buffer, pt->x.size);
	fb_put(b, zeros, fsz - pt->y.size);
	fb_put(b, pt->y.buffer, pt->y.size);
	return fb_err(b);
}

fleet_err fleet_tpm_public_spki_der(const TPMT_PUBLIC *pub, struct fleet_buf *out)
{
	EVP_PKEY *k = NULL;
	fleet_err e;

	if (!pub || !out)
		return FLEET_E_INVALID_ARG;
	/* The same validation as every other use of the key (modulus length,
	 * exponent, point on the curve), so a hash is never made of a key that
	 * fleetd would refuse elsewhere. */
	e = fleet_tpm_public_to_pkey(pub, &k);
	EVP_PKEY_free(k);
	if (e != FLEET_OK)
		return e;
	return pub->type == TPM2_ALG_RSA ? rsa_spki(pub, out) : ecc_spki(pub, out);
}

fleet_err fleet_tpm_public_spki_sha256(const TPMT_PUBLIC *pub, uint8_t out[32])
{
	struct fleet_buf der;
	fleet_err e;

	if (!out)
		return FLEET_E_INVALID_ARG;
	fb_init(&der);
	e = fleet_tpm_public_spki_der(pub, &der);
	if (e == FLEET_OK)
		e = fleet_hash(FLEET_ALG_SHA256, der.data, der.len, out);
	fb_free(&der);
	return e;
}
