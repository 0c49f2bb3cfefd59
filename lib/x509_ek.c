/*
 * x509_ek.c: EK certificates as real TPMs carry them, and their chains.
 *
 * The loader finds the certificate inside whatever an NV read or a vendor
 * download wrapped it in, using the DER's own outer length to find its end:
 * never a length from the TCG header alone, never "whatever d2i consumed".
 * The chain check uses OpenSSL's path building with two local rules on top
 * (see docs/ek-validity.md): notAfter is not enforced anywhere in the chain,
 * notBefore is; and critical extensions OpenSSL does not know are accepted
 * only when they are the TCG ones on our list.
 */
#include "lib/x509_ek.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/hex.h"
#include "lib/reader.h"
#include "lib/tpm.h"

/*
 * TCG PC Client stored certificate (TCG_PCCLIENT_STORED_CERT): tag 0x1001
 * (2 bytes), certificate type (1 byte, 0x00: a full certificate), the size
 * of what follows (2 bytes, big-endian), then TCG_FULL_CERT: tag 0x1002
 * (2 bytes) and the DER. The DER starts at byte 7.
 */
#define NV_TAG_1 0x1001
#define NV_TAG_2 0x1002
#define NV_CERT_FULL 0x00
#define NV_HEADER_LEN 7

/* A PEM EK certificate is base64 of at most FLEET_EK_CERT_MAX bytes plus
 * armour; anything larger is not an EK certificate. */
#define EK_INPUT_MAX (2 * FLEET_EK_CERT_MAX)
/* One file in a roots directory: a bundle of a few dozen CA certificates. */
#define ROOTS_FILE_MAX (1u << 20)
/* Manufacturer chains are root, one or two intermediates, leaf. */
#define EK_CHAIN_DEPTH 6

/*
 * A DER tag and length. Only single-byte tags and definite lengths of up to
 * four bytes: a certificate uses nothing else, and DER forbids the
 * indefinite form. On failure r has not moved past the bad field.
 */
static fleet_err der_header(struct fleet_reader *r, uint8_t *tag, size_t *len)
{
	struct fleet_reader save = *r;
	uint8_t t, l0;

	if (fr_u8(r, &t) != FLEET_OK || fr_u8(r, &l0) != FLEET_OK) {
		*r = save;
		return FLEET_E_TRUNCATED;
	}
	if ((t & 0x1f) == 0x1f) {
		*r = save;
		return FLEET_E_MALFORMED;
	}
	if (l0 < 0x80) {
		*len = l0;
	} else {
		unsigned n = l0 & 0x7f;
		size_t v = 0;
		if (n == 0 || n > 4) {
			*r = save;
			return FLEET_E_MALFORMED;
		}
		for (unsigned i = 0; i < n; i++) {
			uint8_t b;
			if (fr_u8(r, &b) != FLEET_OK) {
				*r = save;
				return FLEET_E_TRUNCATED;
			}
			v = (v << 8) | b;
		}
		*len = v;
	}
	*tag = t;
	return FLEET_OK;
}

/* The DER element at r: tag checked, r moved past it, *sub over its body. */
static fleet_err der_expect(struct fleet_reader *r, uint8_t want, struct fleet_reader *sub)
{
	uint8_t tag;
	size_t len;
	fleet_err e = der_header(r, &tag, &len);
	if (e != FLEET_OK)
		return e;
	if (tag != want)
		return FLEET_E_MALFORMED;
	return fr_sub(r, len, sub);
}

/*
 * PEM, possibly after text (keylime's root files start with the output of
 * `openssl x509 -text`). A binary certificate starts with 0x30 and an NV
 * read with 0x10 0x01; those are never taken for PEM, so armour-like bytes
 * inside a DER string cannot change how the input is read.
 */
static int looks_pem(const uint8_t *buf, size_t len)
{
	static const char armour[] = "-----BEGIN CERTIFICATE-----";
	if (len == 0 || buf[0] == 0x30 || buf[0] == 0x10)
		return 0;
	return memmem(buf, len, armour, sizeof(armour) - 1) != NULL;
}

static fleet_err load_pem(const uint8_t *buf, size_t len, X509 **out, struct fleet_errctx *ec)
{
	BIO *bio = BIO_new_mem_buf(buf, (int)len);
	if (!bio)
		return FLEET_E_NOMEM;
	X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	ERR_clear_error();
	if (!x)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"PEM input holds no parseable CERTIFICATE block");
	int der_len = i2d_X509(x, NULL);
	if (der_len <= 0 || der_len > FLEET_EK_CERT_MAX) {
		X509_free(x);
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
					"certificate of %d bytes is beyond the %d-byte cap",
					der_len, FLEET_EK_CERT_MAX);
	}
	*out = x;
	return FLEET_OK;
}

/*
 * The TCG stored-certificate header at r: on success *body covers what its
 * size says follows the tag 0x1002 (the DER and whatever the writer put
 * after it inside the declared size).
 */
static fleet_err nv_header(struct fleet_reader *r, struct fleet_reader *body,
			   struct fleet_errctx *ec)
{
	struct fleet_reader span;
	uint16_t tag1, size, tag2;
	uint8_t type;
	size_t off = fr_offset(r);

	if (fr_u16be(r, &tag1) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off,
					"input ends inside the %d-byte TCG stored-certificate header",
					NV_HEADER_LEN);
	if (tag1 != NV_TAG_1)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off,
					"TCG stored-certificate header tag is 0x%04x, not 0x%04x",
					(unsigned)tag1, NV_TAG_1);
	if (fr_u8(r, &type) != FLEET_OK || fr_u16be(r, &size) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off,
					"input ends inside the %d-byte TCG stored-certificate header",
					NV_HEADER_LEN);
	if (type != NV_CERT_FULL)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off + 2,
					"TCG stored-certificate type is 0x%02x, not 0x%02x (a full "
					"certificate)",
					(unsigned)type, NV_CERT_FULL);
	if (fr_sub(r, size, &span) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off + 3,
					"TCG stored-certificate size %u is past the end of the input "
					"(%zu bytes follow)",
					(unsigned)size, fr_left(r));
	if (fr_u16be(&span, &tag2) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off + 3,
					"TCG stored-certificate size %u leaves no room for the tag "
					"0x%04x",
					(unsigned)size, NV_TAG_2);
	if (tag2 != NV_TAG_2)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off + 5,
					"TCG stored-certificate second tag is 0x%04x, not 0x%04x",
					(unsigned)tag2, NV_TAG_2);
	fr_rest(&span, body);
	return FLEET_OK;
}

fleet_err fleet_ek_cert_load(const uint8_t *buf, size_t len, X509 **out, struct fleet_errctx *ec)
{
	struct fleet_reader r, body, der_r, at_der;
	uint8_t tag;
	size_t der_len, der_start;
	const uint8_t *der;
	int headed = 0;
	fleet_err e;

	if (!buf || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no input or output");
	*out = NULL;
	if (len > EK_INPUT_MAX)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
					"%zu bytes is beyond the %d-byte cap for an EK certificate",
					len, EK_INPUT_MAX);
	if (looks_pem(buf, len))
		return load_pem(buf, len, out, ec);
	/* Binary input is an NV read (or a vendor's copy of one): bytes after
	 * the certificate are accepted, so the read itself is what bounds
	 * them. */
	if (len > FLEET_EK_CERT_MAX)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
					"%zu bytes is beyond the %d-byte cap for an NV read of an EK "
					"certificate",
					len, FLEET_EK_CERT_MAX);

	fr_init(&r, buf, len);
	if (len == 0)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, 0, "empty input");
	/* The TCG header is recognisable because a DER certificate starts with
	 * 0x30: a leading 0x10 cannot be the start of one. */
	if (buf[0] == 0x10) {
		if ((e = nv_header(&r, &body, ec)) != FLEET_OK)
			return e;
		headed = 1;
	} else {
		fr_rest(&r, &body);
	}

	der_start = fr_offset(&body);
	at_der = body; /* to borrow the whole DER, header included, below */
	if (der_header(&body, &tag, &der_len) != FLEET_OK || tag != 0x30)
		return fleet_errctx_set(ec, fr_left(&body) < 2 ? FLEET_E_TRUNCATED : FLEET_E_MALFORMED,
					der_start, "input is not a DER certificate (no SEQUENCE "
					"header) nor PEM");
	size_t hdr_len = fr_offset(&body) - der_start;
	if (der_len > FLEET_EK_CERT_MAX)
		return fleet_errctx_set(ec, FLEET_E_TOO_LARGE, der_start,
					"DER certificate length %zu is beyond the %d-byte cap",
					der_len, FLEET_EK_CERT_MAX);
	size_t content_off = fr_offset(&body);
	if (fr_sub(&body, der_len, &der_r) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, content_off,
					"DER length %zu is past the end of the %s (%zu bytes "
					"follow)",
					der_len, headed ? "TCG header's size" : "input",
					fr_left(&body));
	/*
	 * Whatever follows the DER (0x00 or 0xFF from a fixed-size NV read,
	 * or other fill: a published Nuvoton file has 0x11) is not part of
	 * the certificate. The signature covers the DER alone, and
	 * go-attestation accepts any trailing bytes too.
	 */

	long total = (long)(hdr_len + der_len);
	if (fr_ptr(&at_der, (size_t)total, &der) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, der_start,
					"DER certificate runs past the end of the input");
	const unsigned char *p = der;
	X509 *x = d2i_X509(NULL, &p, total);
	ERR_clear_error();
	if (!x)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, der_start,
					"DER certificate does not parse");
	if (p != der + total) {
		X509_free(x);
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, der_start + (size_t)(p - der),
					"DER certificate ends before its outer length says");
	}
	*out = x;
	return FLEET_OK;
}

/* A positive DER INTEGER's magnitude, without the leading zero bytes. */
static fleet_err der_uint(struct fleet_reader *r, const uint8_t **p, size_t *n)
{
	struct fleet_reader v;
	uint8_t first;
	if (der_expect(r, 0x02, &v) != FLEET_OK || fr_peek(&v, &first, 1) != FLEET_OK)
		return FLEET_E_MALFORMED;
	if (first & 0x80)
		return FLEET_E_MALFORMED; /* negative: no RSA parameter is */
	/* Leading zero bytes are sign padding, not magnitude. */
	while (fr_left(&v) > 1 && fr_peek(&v, &first, 1) == FLEET_OK && first == 0)
		(void)fr_skip(&v, 1);
	*n = fr_left(&v);
	return fr_ptr(&v, *n, p);
}

/*
 * The RSA key from the SPKI BIT STRING contents (RSAPublicKey: SEQUENCE {
 * modulus, publicExponent }), parsed here because OpenSSL 3 refuses to
 * decode it when the algorithm is id-RSAES-OAEP, and compared with the TPM's
 * modulus and exponent (0 in the TPM means the default, 65537).
 */
static int rsa_matches(const uint8_t *bits, size_t bits_len, const TPMT_PUBLIC *pub)
{
	struct fleet_reader r, seq;
	const uint8_t *n, *e, *tn;
	size_t n_len, e_len, tn_len;
	uint64_t exp = 0, texp;

	if (pub->type != TPM2_ALG_RSA)
		return 0;
	fr_init(&r, bits, bits_len);
	if (der_expect(&r, 0x30, &seq) != FLEET_OK || !fr_at_end(&r) ||
	    der_uint(&seq, &n, &n_len) != FLEET_OK || der_uint(&seq, &e, &e_len) != FLEET_OK ||
	    !fr_at_end(&seq) || e_len > 8)
		return 0;
	for (size_t i = 0; i < e_len; i++)
		exp = (exp << 8) | e[i];
	texp = pub->parameters.rsaDetail.exponent ? pub->parameters.rsaDetail.exponent : 65537;
	tn = pub->unique.rsa.buffer;
	tn_len = pub->unique.rsa.size;
	if (tn_len > sizeof(pub->unique.rsa.buffer))
		return 0;
	while (tn_len > 0 && *tn == 0)
		tn++, tn_len--;
	return exp == texp && n_len == tn_len && n_len > 0 && !memcmp(n, tn, n_len);
}

/* RSAPublicKey (SEQUENCE { modulus, publicExponent }) from the SPKI BIT
 * STRING contents, whatever AlgorithmIdentifier labelled it. */
static fleet_err rsa_key_from_bits(const uint8_t *bits, size_t bits_len, EVP_PKEY **out)
{
	struct fleet_reader r, seq;
	const uint8_t *n, *e;
	size_t n_len, e_len;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	fleet_err err = FLEET_E_CRYPTO;

	*out = NULL;
	fr_init(&r, bits, bits_len);
	if (der_expect(&r, 0x30, &seq) != FLEET_OK || !fr_at_end(&r) ||
	    der_uint(&seq, &n, &n_len) != FLEET_OK || der_uint(&seq, &e, &e_len) != FLEET_OK ||
	    !fr_at_end(&seq))
		return FLEET_E_MALFORMED;
	if (!(bn = BN_bin2bn(n, (int)n_len, NULL)) || !(be = BN_bin2bn(e, (int)e_len, NULL)) ||
	    !(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) ||
	    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
	    !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) != 1)
		goto done;
	err = FLEET_OK;
done:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	return err;
}

/* The EC key k again, as a named curve and an uncompressed point, however
 * the certificate encoded them (compressed points, explicit parameters of
 * a named curve would otherwise survive into i2d_PUBKEY). */
static fleet_err ec_key_canonical(EVP_PKEY *k, EVP_PKEY **out)
{
	char group[64];
	size_t group_len = 0;
	BIGNUM *x = NULL, *y = NULL;
	uint8_t point[1 + 2 * 66];
	OSSL_PARAM params[3];
	EVP_PKEY_CTX *ctx = NULL;
	fleet_err err = FLEET_E_CRYPTO;
	int fsz = (EVP_PKEY_get_bits(k) + 7) / 8;

	*out = NULL;
	if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
					   &group_len) != 1)
		return FLEET_E_UNSUPPORTED; /* no named curve: no Go encoding either */
	if (fsz <= 0 || (size_t)fsz > (sizeof(point) - 1) / 2 ||
	    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
	    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1 ||
	    BN_bn2binpad(x, point + 1, fsz) != fsz || BN_bn2binpad(y, point + 1 + fsz, fsz) != fsz)
		goto done;
	point[0] = 0x04;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point,
						      1 + 2 * (size_t)fsz);
	params[2] = OSSL_PARAM_construct_end();
	if (!(ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) != 1)
		goto done;
	err = FLEET_OK;
done:
	EVP_PKEY_CTX_free(ctx);
	BN_free(x);
	BN_free(y);
	return err;
}

fleet_err fleet_ek_hash(X509 *cert, char out[65])
{
	ASN1_OBJECT *aobj = NULL;
	const unsigned char *bits = NULL;
	int bits_len = 0;
	EVP_PKEY *k = NULL, *ck;
	unsigned char *der = NULL;
	unsigned char md[32];
	unsigned int md_len = 0;
	fleet_err e;
	int n;

	if (!cert || !out)
		return FLEET_E_INVALID_ARG;
	X509_PUBKEY *xp = X509_get_X509_PUBKEY(cert);
	if (!xp || X509_PUBKEY_get0_param(&aobj, &bits, &bits_len, NULL, xp) != 1 ||
	    bits_len < 0)
		return FLEET_E_MALFORMED;
	switch (OBJ_obj2nid(aobj)) {
	case NID_rsaEncryption:
	case NID_rsaesOaep:
		/* From the BIT STRING, not X509_get0_pubkey: OpenSSL 3 will not
		 * decode a key labelled id-RSAES-OAEP. */
		e = rsa_key_from_bits(bits, (size_t)bits_len, &k);
		break;
	case NID_X9_62_id_ecPublicKey:
		ck = X509_get0_pubkey(cert);
		e = ck ? ec_key_canonical(ck, &k) : FLEET_E_MALFORMED;
		break;
	default:
		e = FLEET_E_UNSUPPORTED; /* no TPM EK has any other key */
		break;
	}
	if (e == FLEET_OK) {
		/* rsaEncryption with NULL parameters and PKCS#1 RSAPublicKey, or
		 * id-ecPublicKey with the named curve and the uncompressed
		 * point: what Go's x509.MarshalPKIXPublicKey writes. */
		n = i2d_PUBKEY(k, &der);
		if (n <= 0 || EVP_Digest(der, (size_t)n, md, &md_len, EVP_sha256(), NULL) != 1 ||
		    md_len != sizeof(md))
			e = FLEET_E_CRYPTO;
		else
			fleet_hex_encode(md, sizeof(md), out);
	}
	OPENSSL_free(der);
	EVP_PKEY_free(k);
	ERR_clear_error();
	return e;
}

static int ecc_matches(X509 *cert, const TPMT_PUBLIC *pub)
{
	EVP_PKEY *tk = NULL;
	EVP_PKEY *ck = X509_get0_pubkey(cert);
	int ok;

	if (!ck || pub->type != TPM2_ALG_ECC || fleet_tpm_public_to_pkey(pub, &tk) != FLEET_OK) {
		ERR_clear_error();
		return 0;
	}
	ok = EVP_PKEY_eq(ck, tk) == 1;
	EVP_PKEY_free(tk);
	ERR_clear_error();
	return ok;
}

fleet_err fleet_ek_cert_matches_public(X509 *cert, const TPMT_PUBLIC *pub, const char **reason)
{
	const char *dummy;
	ASN1_OBJECT *aobj = NULL;
	const unsigned char *bits = NULL;
	int bits_len = 0;
	int ok = 0;

	if (!reason)
		reason = &dummy;
	*reason = NULL;
	if (!cert || !pub)
		return FLEET_E_INVALID_ARG;
	X509_PUBKEY *xp = X509_get_X509_PUBKEY(cert);
	if (!xp || X509_PUBKEY_get0_param(&aobj, &bits, &bits_len, NULL, xp) != 1 ||
	    bits_len < 0) {
		*reason = "ek-cert-unparseable";
		return FLEET_E_MALFORMED;
	}
	switch (OBJ_obj2nid(aobj)) {
	case NID_rsaEncryption:
	case NID_rsaesOaep:
		ok = rsa_matches(bits, (size_t)bits_len, pub);
		break;
	case NID_X9_62_id_ecPublicKey:
		ok = ecc_matches(cert, pub);
		break;
	default:
		ok = 0; /* a key type no TPM EK has cannot be this EK */
		break;
	}
	if (!ok) {
		*reason = "ek-key-mismatch";
		return FLEET_E_VERIFY;
	}
	return FLEET_OK;
}

struct fleet_ek_roots {
	STACK_OF(X509) *roots; /* self-signed: trust anchors */
	STACK_OF(X509) *inter; /* the rest: path-building material only */
};

void fleet_ek_roots_free(struct fleet_ek_roots *roots)
{
	if (!roots)
		return;
	sk_X509_pop_free(roots->roots, X509_free);
	sk_X509_pop_free(roots->inter, X509_free);
	free(roots);
}

size_t fleet_ek_roots_count(const struct fleet_ek_roots *roots)
{
	if (!roots)
		return 0;
	return (size_t)sk_X509_num(roots->roots) + (size_t)sk_X509_num(roots->inter);
}

static int already_have(STACK_OF(X509) *sk, X509 *x)
{
	for (int i = 0; i < sk_X509_num(sk); i++)
		if (X509_cmp(sk_X509_value(sk, i), x) == 0)
			return 1;
	return 0;
}

/* Sort one certificate into roots or intermediates; duplicates (a bundle
 * plus the single file, c_rehash links) are dropped. Takes ownership. */
static fleet_err add_ca(struct fleet_ek_roots *rt, X509 *x)
{
	/* A root is one whose signature verifies with its own key, not merely
	 * one whose issuer name equals its subject: OpenSSL never checks a
	 * trust anchor's signature, so a look-alike would become one. */
	STACK_OF(X509) *sk = X509_self_signed(x, 1) == 1 ? rt->roots : rt->inter;
	if (already_have(rt->roots, x) || already_have(rt->inter, x)) {
		X509_free(x);
		return FLEET_OK;
	}
	if (!sk_X509_push(sk, x)) {
		X509_free(x);
		return FLEET_E_NOMEM;
	}
	return FLEET_OK;
}

/* A file holds one DER certificate, or one or more PEM certificates. It is
 * configuration: owned by root or us and writable by nobody else, as a
 * trust anchor must be (docs/files.md). */
static fleet_err load_ca_file(struct fleet_ek_roots *rt, int dfd, const char *name,
			      struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the roots file", ROOTS_FILE_MAX);
	struct fleet_buf b;
	fleet_err e;
	int n = 0;

	fb_init(&b);
	e = fleet_file_read(dfd, name, &policy, &b, ec);
	if (e != FLEET_OK)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	if (looks_pem(b.data, b.len)) {
		BIO *bio = BIO_new_mem_buf(b.data, (int)b.len);
		X509 *x;
		if (!bio) {
			fb_free(&b);
			return FLEET_E_NOMEM;
		}
		while (e == FLEET_OK && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
			e = add_ca(rt, x);
			n++;
		}
		BIO_free(bio);
	} else if (b.len > 0) {
		const unsigned char *p = b.data;
		X509 *x = d2i_X509(NULL, &p, (long)b.len);
		if (x && p == b.data + b.len) {
			e = add_ca(rt, x);
			n++;
		} else {
			X509_free(x);
		}
	}
	ERR_clear_error();
	fb_free(&b);
	if (e != FLEET_OK)
		return e;
	/* An unreadable file in the trust directory is an operator's mistake
	 * worth stopping for: silently skipping it would hide a missing root. */
	if (n == 0)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"roots file %s holds no certificate", name);
	return FLEET_OK;
}

/*
 * A symbolic link in the roots directory. c_rehash and `openssl rehash`
 * make HASH.0 links to a certificate beside them: that file is read under
 * its own name, so the link is skipped. A link anywhere else (another
 * directory, a path with a slash) is refused: a trust anchor is read from
 * the directory the configuration names, never through a link.
 */
static fleet_err roots_link(int dfd, const char *name, struct fleet_errctx *ec)
{
	char target[256];
	ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		if (!strchr(target, '/') && strcmp(target, ".") && strcmp(target, ".."))
			return FLEET_OK;
	}
	/* Refused as the file reader refuses a link (lib/file_read.h): a rule,
	 * not a failure to read. */
	return fleet_errctx_refuse(ec, FLEET_E_UNSAFE, "symlink",
				   "cannot read the roots file %s: symlink: it is a symbolic link to "
				   "outside the directory, which is not followed",
				   name);
}

fleet_err fleet_ek_roots_load(const char *dir, struct fleet_ek_roots **out,
			      struct fleet_errctx *ec)
{
	struct fleet_ek_roots *rt;
	struct dirent *de;
	fleet_err e = FLEET_OK;
	DIR *d;

	if (!dir || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no directory or output");
	*out = NULL;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return FLEET_E_NOMEM;
	rt->roots = sk_X509_new_null();
	rt->inter = sk_X509_new_null();
	if (!rt->roots || !rt->inter) {
		fleet_ek_roots_free(rt);
		return FLEET_E_NOMEM;
	}
	/* Every file is opened relative to this one descriptor of the
	 * directory: a rename of the directory cannot mix two trees. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ddup = dfd >= 0 ? dup(dfd) : -1;
	d = ddup >= 0 ? fdopendir(ddup) : NULL;
	if (!d) {
		int err = errno;
		if (ddup >= 0)
			close(ddup);
		if (dfd >= 0)
			close(dfd);
		fleet_ek_roots_free(rt);
		return fleet_errctx_errno(ec, err == ENOENT ? FLEET_E_NOT_FOUND : FLEET_E_IO, err,
					  "cannot open roots directory");
	}
	while (e == FLEET_OK && (de = readdir(d)) != NULL) {
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* gone since readdir */
		if (S_ISLNK(st.st_mode)) {
			e = roots_link(dfd, de->d_name, ec);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue; /* a subdirectory, a socket: not a certificate */
		e = load_ca_file(rt, dfd, de->d_name, ec);
	}
	closedir(d);
	close(dfd);
	if (e == FLEET_OK && sk_X509_num(rt->roots) == 0)
		e = fleet_errctx_msg(ec, FLEET_E_NOT_FOUND,
				     "ek-roots-empty: no self-signed root certificate in the "
				     "directory (%d other certificates)",
				     sk_X509_num(rt->inter));
	if (e != FLEET_OK) {
		fleet_ek_roots_free(rt);
		return e;
	}
	*out = rt;
	return FLEET_OK;
}

/* OpenSSL's verdict, in our stable reasons. */
static const char *reason_for(int verr)
{
	switch (verr) {
	case X509_V_ERR_CERT_SIGNATURE_FAILURE:
	case X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE:
	case X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
	case X509_V_ERR_CA_MD_TOO_WEAK:
	case X509_V_ERR_CA_KEY_TOO_SMALL:
	case X509_V_ERR_EE_KEY_TOO_SMALL:
		return "ek-chain-signature";
	case X509_V_ERR_INVALID_CA:
	case X509_V_ERR_PATH_LENGTH_EXCEEDED:
	case X509_V_ERR_KEYUSAGE_NO_CERTSIGN:
	case X509_V_ERR_INVALID_PURPOSE:
	case X509_V_ERR_INVALID_NON_CA:
	case X509_V_ERR_PATHLEN_INVALID_FOR_NON_CA:
		return "ek-chain-ca-constraint";
	default:
		/* no issuer found, a self-signed leaf, a chain too long, ... */
		return "ek-chain-untrusted";
	}
}

/*
 * Critical extensions OpenSSL does not process, accepted on an EK chain
 * because the TCG EK Credential Profile puts them there and they restrict
 * nothing a verifier must enforce: subjectDirectoryAttributes (2.5.29.9)
 * carries the TPM specification and security assertions.
 */
static int critical_ok(X509 *x)
{
	for (int i = 0; i < X509_get_ext_count(x); i++) {
		X509_EXTENSION *ext = X509_get_ext(x, i);
		if (!X509_EXTENSION_get_critical(ext) || X509_supported_extension(ext))
			continue;
		if (OBJ_obj2nid(X509_EXTENSION_get_object(ext)) != NID_subject_directory_attributes)
			return 0;
	}
	return 1;
}

/*
 * Signatures we rely on: SHA-1 or SHA-2 (SHA-1 because manufacturers signed
 * EK chains with it for a decade, see docs/ek-validity.md), RSA keys of 2048
 * bits or more, EC keys of 256 bits or more. MD5 and short keys are refused.
 */
static int signature_ok(X509 *subject, X509 *issuer)
{
	int mdnid = NID_undef, pknid = NID_undef, secbits = 0;
	uint32_t flags = 0;
	EVP_PKEY *k = X509_get0_pubkey(issuer);

	if (X509_get_signature_info(subject, &mdnid, &pknid, &secbits, &flags) != 1)
		return 0;
	switch (mdnid) {
	case NID_sha1:
	case NID_sha256:
	case NID_sha384:
	case NID_sha512:
		break;
	default:
		return 0;
	}
	if (!k)
		return 0;
	if (EVP_PKEY_is_a(k, "RSA") || EVP_PKEY_is_a(k, "RSA-PSS"))
		return EVP_PKEY_get_bits(k) >= 2048;
	if (EVP_PKEY_is_a(k, "EC"))
		return EVP_PKEY_get_bits(k) >= 256;
	return 0;
}

/*
 * OpenSSL's path building from target up to a root of ours. NULL and the
 * chain (a reference the caller frees) when a path exists, else a reason.
 */
static const char *openssl_chain(const struct fleet_ek_roots *roots, X509 *target,
				 STACK_OF(X509) **chain)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	const char *reason = "ek-chain-untrusted";

	*chain = NULL;
	if (!store || !ctx)
		goto out;
	for (int i = 0; i < sk_X509_num(roots->roots); i++)
		if (X509_STORE_add_cert(store, sk_X509_value(roots->roots, i)) != 1)
			goto out;
	if (X509_STORE_CTX_init(ctx, store, target, roots->inter) != 1)
		goto out;
	X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
	/*
	 * NO_CHECK_TIME: OpenSSL would refuse an expired intermediate; our
	 * own notBefore check follows. IGNORE_CRITICAL: OpenSSL would refuse
	 * a TCG extension it does not know; critical_ok() follows, on every
	 * certificate of the chain. auth_level 0: SHA-1 signatures are judged
	 * by signature_ok(), not by a system-wide security level.
	 */
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_NO_CHECK_TIME |
					   X509_V_FLAG_IGNORE_CRITICAL);
	X509_VERIFY_PARAM_set_auth_level(param, 0);
	X509_VERIFY_PARAM_set_depth(param, EK_CHAIN_DEPTH);
	if (X509_verify_cert(ctx) != 1) {
		reason = reason_for(X509_STORE_CTX_get_error(ctx));
		goto out;
	}
	*chain = X509_STORE_CTX_get1_chain(ctx);
	reason = *chain ? NULL : "ek-chain-untrusted";
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return reason;
}

/* Our rules on a chain OpenSSL (or we) built: leaf first, root last. */
static const char *chain_rules(STACK_OF(X509) *chain, time_t now)
{
	int n = sk_X509_num(chain);
	for (int i = 0; i < n; i++) {
		X509 *c = sk_X509_value(chain, i);
		/* A certificate dated after `now` was not issued when the TPM
		 * is claimed to have been made: not-yet-valid, at any depth. */
		int cmp = ASN1_TIME_cmp_time_t(X509_get0_notBefore(c), now);
		if (cmp == -2)
			return "ek-cert-unparseable";
		if (cmp > 0)
			return "ek-chain-not-yet-valid";
		if (!critical_ok(c))
			return "ek-chain-untrusted";
		/* The trust anchor's self-signature is not relied upon. */
		if (i + 1 < n && !signature_ok(c, sk_X509_value(chain, i + 1)))
			return "ek-chain-signature";
	}
	return NULL;
}

/* OpenSSL verified the path from the issuer up, so it counted pathLen
 * constraints one level short of the leaf: check them again over the whole
 * chain (index 0 the leaf; a CA at index i has i - 1 CAs below it). */
static const char *path_lengths(STACK_OF(X509) *chain)
{
	for (int i = 1; i < sk_X509_num(chain); i++) {
		long pl = X509_get_pathlen(sk_X509_value(chain, i));
		if (pl >= 0 && i - 1 > pl)
			return "ek-chain-ca-constraint";
	}
	return NULL;
}

/*
 * A leaf whose key OpenSSL cannot decode (id-RSAES-OAEP) makes
 * X509_verify_cert fail before it looks at the chain, although the leaf's
 * own key plays no part in verifying it. So: find the leaf's issuer among
 * ours and check the leaf's signature here, let OpenSSL verify the issuer's
 * path, and apply our rules to the whole chain.
 */
static const char *chain_via_issuer(const struct fleet_ek_roots *roots, X509 *leaf, time_t now)
{
	STACK_OF(X509) *const sets[] = {roots->inter, roots->roots};
	const char *reason = "ek-chain-untrusted";

	for (size_t s = 0; s < 2; s++) {
		for (int i = 0; i < sk_X509_num(sets[s]); i++) {
			X509 *cand = sk_X509_value(sets[s], i);
			STACK_OF(X509) *chain = NULL;
			EVP_PKEY *ik = X509_get0_pubkey(cand);
			if (X509_check_issued(cand, leaf) != X509_V_OK)
				continue;
			if (!ik || X509_verify(leaf, ik) != 1) {
				reason = "ek-chain-signature";
				continue;
			}
			if (X509_check_ca(cand) < 1) {
				reason = "ek-chain-ca-constraint";
				continue;
			}
			reason = openssl_chain(roots, cand, &chain);
			if (!reason) {
				if (X509_up_ref(leaf) != 1) {
					reason = "ek-chain-untrusted";
				} else if (!sk_X509_unshift(chain, leaf)) {
					X509_free(leaf);
					reason = "ek-chain-untrusted";
				} else {
					reason = chain_rules(chain, now);
					if (!reason)
						reason = path_lengths(chain);
				}
			}
			sk_X509_pop_free(chain, X509_free);
			if (!reason)
				return NULL;
		}
	}
	return reason;
}

static int spki_nid(X509 *x)
{
	ASN1_OBJECT *aobj = NULL;
	X509_PUBKEY *xp = X509_get_X509_PUBKEY(x);
	if (!xp || X509_PUBKEY_get0_param(&aobj, NULL, NULL, NULL, xp) != 1)
		return NID_undef;
	return OBJ_obj2nid(aobj);
}

fleet_err fleet_ek_chain_verify(const struct fleet_ek_roots *roots, X509 *leaf, time_t now,
				const char **reason)
{
	const char *dummy, *r;
	STACK_OF(X509) *chain = NULL;

	if (!reason)
		reason = &dummy;
	*reason = NULL;
	if (!roots || !leaf)
		return FLEET_E_INVALID_ARG;
	if (sk_X509_num(roots->roots) == 0) {
		*reason = "ek-roots-empty";
		return FLEET_E_VERIFY;
	}
	if (now == 0)
		now = time(NULL);
	if (X509_get0_pubkey(leaf)) {
		r = openssl_chain(roots, leaf, &chain);
		if (!r)
			r = chain_rules(chain, now);
		sk_X509_pop_free(chain, X509_free);
	} else if (spki_nid(leaf) == NID_rsaesOaep) {
		r = chain_via_issuer(roots, leaf, now);
	} else {
		/* Only the known quirk takes the path around OpenSSL; a key
		 * nobody can read is not an EK we could ever challenge. */
		r = "ek-cert-unparseable";
	}
	ERR_clear_error();
	if (r) {
		*reason = r;
		return FLEET_E_VERIFY;
	}
	return FLEET_OK;
}
