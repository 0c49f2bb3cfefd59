/*
 * test_tpm_public.c: public areas, names, keys, selections, and the parts of
 * quote verification no honest TPM will produce (a restricted key's
 * signature over a non-TPM_GENERATED structure), signed here in software.
 */
#include "tests/testutil.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <tss2/tss2_mu.h>

#include "lib/hex.h"
#include "lib/buf.h"
#include "lib/tpm.h"

/* An ECDSA P-256 AK made by tpm2_createak (tpm2-tools 5.4, swtpm 0.7.1) and
 * the name tpm2-tools printed for it (-n): a value we did not compute. */
static const char ak_pub_hex[] =
	"00580023000b00050072000000100018000b000300100020c8145c7990f585c256099a8a"
	"b35a7a97014ad3db672fbf1bdf30b46769bc0bb20020a51fe7cf1b82d0de98b7541e15b4"
	"91853ee3ade89b0c2bc493c9fbbbc04e9f90";
static const char ak_name_hex[] =
	"000b80663c49e9098497494a290f8afd997cf2e699b1695c645e5f194de6a29a6491";

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = strlen(h) / 2;
	assert_true(n <= cap);
	assert_int_equal(fleet_hex_decode(h, strlen(h), out, n), FLEET_OK);
	return n;
}

static void test_parse_and_name_of_real_ak(void **st)
{
	uint8_t buf[256], want[64], name[2 + FLEET_DIGEST_MAX];
	size_t len = unhex(ak_pub_hex, buf, sizeof(buf));
	size_t wlen = unhex(ak_name_hex, want, sizeof(want)), nlen = 0;
	TPM2B_PUBLIC pub;
	struct fleet_errctx ec = {0};
	const char *reason = "unset";
	(void)st;

	assert_int_equal(fleet_tpm_public_parse(buf, len, &pub, &ec), FLEET_OK);
	assert_int_equal(pub.publicArea.type, TPM2_ALG_ECC);
	assert_int_equal(pub.publicArea.parameters.eccDetail.curveID, TPM2_ECC_NIST_P256);
	assert_int_equal(fleet_tpm_name(&pub.publicArea, name, sizeof(name), &nlen), FLEET_OK);
	assert_int_equal(nlen, wlen);
	assert_memory_equal(name, want, wlen);
	/* A name buffer one byte short is refused, not overrun. */
	assert_int_equal(fleet_tpm_name(&pub.publicArea, name, wlen - 1, &nlen),
			 FLEET_E_TOO_LARGE);
	assert_int_equal(fleet_tpm_ak_check(&pub.publicArea, &reason), FLEET_OK);
	assert_null(reason);
}

static void test_trailing_and_truncated_refused(void **st)
{
	uint8_t buf[260];
	size_t len = unhex(ak_pub_hex, buf, sizeof(buf));
	TPM2B_PUBLIC pub;
	struct fleet_errctx ec = {0};
	(void)st;

	/* A byte after the TPM2B. */
	buf[len] = 0;
	assert_int_equal(fleet_tpm_public_parse(buf, len + 1, &pub, &ec), FLEET_E_MALFORMED);
	assert_true(ec.has_offset);
	assert_int_equal(ec.offset, len);

	/* A byte inside the TPM2B that the TPMT_PUBLIC does not use. */
	buf[1]++;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_tpm_public_parse(buf, len + 1, &pub, &ec), FLEET_E_MALFORMED);
	assert_true(ec.has_offset);
	assert_int_equal(ec.offset, len);
	buf[1]--;

	/* Every proper prefix is refused. */
	for (size_t cut = 0; cut < len; cut++)
		assert_int_not_equal(fleet_tpm_public_parse(buf, cut, &pub, NULL), FLEET_OK);
	assert_int_equal(fleet_tpm_public_parse(buf, len - 1, &pub, &ec), FLEET_E_TRUNCATED);
}

/* A TPMT_PUBLIC around an OpenSSL key, with AK attributes. */
static void ecc_public(EVP_PKEY *k, TPMI_ECC_CURVE curve, TPMT_PUBLIC *p)
{
	BIGNUM *x = NULL, *y = NULL;
	int fsz = curve == TPM2_ECC_NIST_P384 ? 48 : 32;
	memset(p, 0, sizeof(*p));
	p->type = TPM2_ALG_ECC;
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT |
			      TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			      TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH;
	p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p->parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
	p->parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
	p->parameters.eccDetail.curveID = curve;
	p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
	assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &x));
	assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, &y));
	p->unique.ecc.x.size = (UINT16)fsz;
	p->unique.ecc.y.size = (UINT16)fsz;
	assert_int_equal(BN_bn2binpad(x, p->unique.ecc.x.buffer, fsz), fsz);
	assert_int_equal(BN_bn2binpad(y, p->unique.ecc.y.buffer, fsz), fsz);
	BN_free(x);
	BN_free(y);
}

static void spki_hash_of(EVP_PKEY *k, uint8_t out[32])
{
	unsigned char *der = NULL;
	int n = i2d_PUBKEY(k, &der);
	assert_true(n > 0);
	assert_true(EVP_Digest(der, (size_t)n, out, NULL, EVP_sha256(), NULL));
	OPENSSL_free(der);
}

static void roundtrip_and_compare(const TPMT_PUBLIC *p, EVP_PKEY *orig)
{
	uint8_t buf[sizeof(TPM2B_PUBLIC)], want[2 + 32], name[2 + FLEET_DIGEST_MAX];
	uint8_t s1[32], s2[32];
	size_t off = 0, nlen = 0;
	TPM2B_PUBLIC in = {.publicArea = *p}, out;
	EVP_PKEY *k = NULL;

	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&in, buf, sizeof(buf), &off), 0);
	assert_int_equal(fleet_tpm_public_parse(buf, off, &out, NULL), FLEET_OK);
	/* The name over the bytes as marshaled, hashed here directly. */
	want[0] = 0x00;
	want[1] = 0x0b;
	assert_true(EVP_Digest(buf + 2, off - 2, want + 2, NULL, EVP_sha256(), NULL));
	assert_int_equal(fleet_tpm_name(&out.publicArea, name, sizeof(name), &nlen), FLEET_OK);
	assert_int_equal(nlen, sizeof(want));
	assert_memory_equal(name, want, sizeof(want));

	assert_int_equal(fleet_tpm_public_to_pkey(&out.publicArea, &k), FLEET_OK);
	assert_int_equal(EVP_PKEY_eq(k, orig), 1);
	EVP_PKEY_free(k);
	spki_hash_of(orig, s1);
	assert_int_equal(fleet_tpm_public_spki_sha256(&out.publicArea, s2), FLEET_OK);
	assert_memory_equal(s1, s2, 32);
}

static void test_ecc_keys(void **st)
{
	EVP_PKEY *k256 = EVP_EC_gen("P-256"), *k384 = EVP_EC_gen("P-384");
	TPMT_PUBLIC p;
	EVP_PKEY *out = NULL;
	(void)st;

	assert_non_null(k256);
	assert_non_null(k384);
	ecc_public(k256, TPM2_ECC_NIST_P256, &p);
	roundtrip_and_compare(&p, k256);
	ecc_public(k384, TPM2_ECC_NIST_P384, &p);
	roundtrip_and_compare(&p, k384);

	/* A point moved off the curve is not a key. */
	p.unique.ecc.y.buffer[10] ^= 1;
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &out), FLEET_E_MALFORMED);
	assert_null(out);
	/* Unsupported curves, though well formed. */
	ecc_public(k256, TPM2_ECC_NIST_P256, &p);
	p.parameters.eccDetail.curveID = TPM2_ECC_NIST_P521;
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &out), FLEET_E_UNSUPPORTED);
	p.parameters.eccDetail.curveID = TPM2_ECC_BN_P256;
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &out), FLEET_E_UNSUPPORTED);
	/* A coordinate longer than the field. */
	ecc_public(k256, TPM2_ECC_NIST_P256, &p);
	p.unique.ecc.x.size = 33;
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &out), FLEET_E_MALFORMED);
	EVP_PKEY_free(k256);
	EVP_PKEY_free(k384);
}

static void test_rsa_key(void **st)
{
	EVP_PKEY *k = EVP_RSA_gen(2048), *out = NULL;
	BIGNUM *n = NULL;
	TPMT_PUBLIC p;
	(void)st;

	assert_non_null(k);
	memset(&p, 0, sizeof(p));
	p.type = TPM2_ALG_RSA;
	p.nameAlg = TPM2_ALG_SHA256;
	p.objectAttributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM;
	p.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p.parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSASSA;
	p.parameters.rsaDetail.scheme.details.rsassa.hashAlg = TPM2_ALG_SHA256;
	p.parameters.rsaDetail.keyBits = 2048;
	p.parameters.rsaDetail.exponent = 0; /* the default, 65537 */
	assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n));
	p.unique.rsa.size = 256;
	assert_int_equal(BN_bn2binpad(n, p.unique.rsa.buffer, 256), 256);
	BN_free(n);
	roundtrip_and_compare(&p, k);

	/* keyBits and the modulus must agree. */
	p.parameters.rsaDetail.keyBits = 3072;
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &out), FLEET_E_MALFORMED);
	/* Small keys are refused, whatever OpenSSL would take. */
	p.parameters.rsaDetail.keyBits = 1024;
	p.unique.rsa.size = 128;
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &out), FLEET_E_UNSUPPORTED);
	assert_null(out);
	EVP_PKEY_free(k);
}

/* The conversion keeps the keys it made (lib/tpm_public.c, the key cache):
 * the same area again is the same key object; an area differing in any
 * field the conversion reads is converted (or refused) on its own, never
 * answered with the cached key; the cache is bounded, the oldest replaced. */
static void test_key_cache(void **st)
{
	EVP_PKEY *k = EVP_EC_gen("P-256"), *a = NULL, *b = NULL;
	TPMT_PUBLIC p, q;
	(void)st;

	assert_non_null(k);
	ecc_public(k, TPM2_ECC_NIST_P256, &p);
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &a), FLEET_OK);
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &b), FLEET_OK);
	assert_ptr_equal(a, b); /* found, with a reference of its own */
	assert_int_equal(EVP_PKEY_eq(a, k), 1);
	EVP_PKEY_free(b);
	b = NULL;

	/* A coordinate changed: its own conversion, which refuses it. */
	q = p;
	q.unique.ecc.x.buffer[31] ^= 1;
	assert_int_equal(fleet_tpm_public_to_pkey(&q, &b), FLEET_E_MALFORMED);
	assert_null(b);
	/* The same bytes named as another curve: not this key. */
	q = p;
	q.parameters.eccDetail.curveID = TPM2_ECC_NIST_P384;
	assert_int_not_equal(fleet_tpm_public_to_pkey(&q, &b), FLEET_OK);
	assert_null(b);
	/* A shorter coordinate (its first 31 bytes: another value) is refused
	 * as off the curve, or another point: never the cached key. */
	q = p;
	q.unique.ecc.y.size = 31;
	if (fleet_tpm_public_to_pkey(&q, &b) == FLEET_OK) {
		assert_ptr_not_equal(a, b);
		assert_int_not_equal(EVP_PKEY_eq(a, b), 1);
		EVP_PKEY_free(b);
		b = NULL;
	}

	/* RSA: the exponent is part of the key. */
	EVP_PKEY *r = EVP_RSA_gen(2048), *r1 = NULL, *r2 = NULL;
	BIGNUM *n = NULL, *e = NULL;
	TPMT_PUBLIC rp;
	assert_non_null(r);
	memset(&rp, 0, sizeof(rp));
	rp.type = TPM2_ALG_RSA;
	rp.nameAlg = TPM2_ALG_SHA256;
	rp.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	rp.parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
	rp.parameters.rsaDetail.keyBits = 2048;
	assert_true(EVP_PKEY_get_bn_param(r, OSSL_PKEY_PARAM_RSA_N, &n));
	rp.unique.rsa.size = 256;
	assert_int_equal(BN_bn2binpad(n, rp.unique.rsa.buffer, 256), 256);
	BN_free(n);
	assert_int_equal(fleet_tpm_public_to_pkey(&rp, &r1), FLEET_OK);
	rp.parameters.rsaDetail.exponent = 3;
	assert_int_equal(fleet_tpm_public_to_pkey(&rp, &r2), FLEET_OK);
	assert_ptr_not_equal(r1, r2);
	assert_int_equal(EVP_PKEY_eq(r1, r), 1);
	assert_int_not_equal(EVP_PKEY_eq(r2, r), 1);
	assert_true(EVP_PKEY_get_bn_param(r2, OSSL_PKEY_PARAM_RSA_E, &e));
	assert_true(BN_is_word(e, 3));
	BN_free(e);
	EVP_PKEY_free(r1);
	EVP_PKEY_free(r2);
	EVP_PKEY_free(r);

	/* Bounded: after more distinct keys than it holds, the first is made
	 * anew (another object, the same key). */
	for (int i = 0; i < 80; i++) {
		EVP_PKEY *o = EVP_EC_gen("P-256"), *c = NULL;
		assert_non_null(o);
		ecc_public(o, TPM2_ECC_NIST_P256, &q);
		assert_int_equal(fleet_tpm_public_to_pkey(&q, &c), FLEET_OK);
		EVP_PKEY_free(c);
		EVP_PKEY_free(o);
	}
	assert_int_equal(fleet_tpm_public_to_pkey(&p, &b), FLEET_OK);
	assert_ptr_not_equal(a, b);
	assert_int_equal(EVP_PKEY_eq(b, k), 1);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
	EVP_PKEY_free(k);
}

/* The hand-written SPKI DER equals OpenSSL's i2d_PUBKEY byte for byte:
 * many random EC keys (so coordinates with a leading zero byte, 1 in 128
 * per key, are covered) and RSA keys of each size and a non-default
 * exponent. */
static void spki_der_equals_openssl(const TPMT_PUBLIC *p, EVP_PKEY *k)
{
	unsigned char *der = NULL;
	int n = i2d_PUBKEY(k, &der);
	struct fleet_buf mine;
	fb_init(&mine);
	assert_true(n > 0);
	assert_int_equal(fleet_tpm_public_spki_der(p, &mine), FLEET_OK);
	assert_int_equal(mine.len, (size_t)n);
	assert_memory_equal(mine.data, der, (size_t)n);
	fb_free(&mine);
	OPENSSL_free(der);
}

static void test_spki_der_matches_openssl(void **st)
{
	TPMT_PUBLIC p;
	int leading_zero = 0;
	(void)st;
	/* At least 400 keys, and on until a coordinate with a leading zero
	 * byte has been seen (1 key in ~128 has one; 5000 keys miss it with
	 * probability ~e^-39), so the padding path is always exercised. */
	for (int i = 0; i < 400 || (!leading_zero && i < 5000); i++) {
		int p384 = i & 1;
		EVP_PKEY *k = EVP_EC_gen(p384 ? "P-384" : "P-256");
		assert_non_null(k);
		ecc_public(k, p384 ? TPM2_ECC_NIST_P384 : TPM2_ECC_NIST_P256, &p);
		leading_zero |= p.unique.ecc.x.buffer[0] == 0 || p.unique.ecc.y.buffer[0] == 0;
		spki_der_equals_openssl(&p, k);
		EVP_PKEY_free(k);
	}
	assert_true(leading_zero);

	static const struct {
		unsigned bits;
		unsigned exp;
	} rsa[] = {{2048, 65537}, {3072, 65537}, {4096, 65537}, {2048, 3}};
	for (size_t i = 0; i < sizeof(rsa) / sizeof(rsa[0]); i++) {
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
		EVP_PKEY *k = NULL;
		BIGNUM *n = NULL, *e = BN_new();
		assert_true(c && e && BN_set_word(e, rsa[i].exp));
		assert_true(EVP_PKEY_keygen_init(c) > 0);
		assert_true(EVP_PKEY_CTX_set_rsa_keygen_bits(c, (int)rsa[i].bits) > 0);
		assert_true(EVP_PKEY_CTX_set1_rsa_keygen_pubexp(c, e) > 0);
		assert_true(EVP_PKEY_keygen(c, &k) > 0);
		memset(&p, 0, sizeof(p));
		p.type = TPM2_ALG_RSA;
		p.nameAlg = TPM2_ALG_SHA256;
		p.parameters.rsaDetail.keyBits = (UINT16)rsa[i].bits;
		p.parameters.rsaDetail.exponent = rsa[i].exp == 65537 ? 0 : rsa[i].exp;
		p.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
		p.parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
		assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n));
		p.unique.rsa.size = (UINT16)(rsa[i].bits / 8);
		assert_int_equal(BN_bn2binpad(n, p.unique.rsa.buffer, (int)p.unique.rsa.size),
				 (int)p.unique.rsa.size);
		spki_der_equals_openssl(&p, k);
		BN_free(n);
		BN_free(e);
		EVP_PKEY_free(k);
		EVP_PKEY_CTX_free(c);
	}
}

static void test_unsupported_type_refused(void **st)
{
	TPM2B_PUBLIC in, out;
	uint8_t buf[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;
	struct fleet_errctx ec = {0};
	(void)st;

	memset(&in, 0, sizeof(in));
	in.publicArea.type = TPM2_ALG_KEYEDHASH;
	in.publicArea.nameAlg = TPM2_ALG_SHA256;
	in.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&in, buf, sizeof(buf), &off), 0);
	assert_int_equal(fleet_tpm_public_parse(buf, off, &out, &ec), FLEET_E_UNSUPPORTED);
}

static void test_ak_check_each_rule(void **st)
{
	static const struct {
		TPMA_OBJECT bit;
		const char *reason;
	} rules[] = {
		{TPMA_OBJECT_RESTRICTED, "ak-not-restricted"},
		{TPMA_OBJECT_SIGN_ENCRYPT, "ak-not-sign"},
		{TPMA_OBJECT_DECRYPT, "ak-decrypt-set"},
		{TPMA_OBJECT_FIXEDTPM, "ak-not-fixedtpm"},
		{TPMA_OBJECT_FIXEDPARENT, "ak-not-fixedparent"},
		{TPMA_OBJECT_SENSITIVEDATAORIGIN, "ak-not-sensitivedataorigin"},
	};
	EVP_PKEY *k = EVP_EC_gen("P-256");
	TPMT_PUBLIC p;
	const char *reason;
	(void)st;

	ecc_public(k, TPM2_ECC_NIST_P256, &p);
	assert_int_equal(fleet_tpm_ak_check(&p, &reason), FLEET_OK);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		TPMT_PUBLIC q = p;
		q.objectAttributes ^= rules[i].bit;
		assert_int_equal(fleet_tpm_ak_check(&q, &reason), FLEET_E_VERIFY);
		assert_string_equal(reason, rules[i].reason);
	}
	EVP_PKEY_free(k);
}

static void test_selection_parse(void **st)
{
	static const char *const bad[] = {
		"", "sha256", "sha256:", "sha256:24", "sha256:1,,2", "sha256:1,", "sha256:1+",
		"sha256:1,1", "sha256:1+sha256:2", "sha256: 1", "sha256:-1", "sha256:0x1",
		":1", "sha256:100", "sha256:1+",
	};
	TPML_PCR_SELECTION s;
	(void)st;

	assert_int_equal(fleet_pcr_selection_parse("sha256:0,1,2,7,23+sha1:0", &s), FLEET_OK);
	assert_int_equal(s.count, 2);
	assert_int_equal(s.pcrSelections[0].hash, TPM2_ALG_SHA256);
	assert_int_equal(s.pcrSelections[0].sizeofSelect, 3);
	assert_int_equal(s.pcrSelections[0].pcrSelect[0], 0x87);
	assert_int_equal(s.pcrSelections[0].pcrSelect[1], 0x00);
	assert_int_equal(s.pcrSelections[0].pcrSelect[2], 0x80);
	assert_int_equal(s.pcrSelections[1].hash, TPM2_ALG_SHA1);
	assert_int_equal(s.pcrSelections[1].pcrSelect[0], 0x01);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(fleet_pcr_selection_parse(bad[i], &s), FLEET_OK);
	assert_int_equal(fleet_pcr_selection_parse("md5:1", &s), FLEET_E_UNSUPPORTED);
}

/* A quote "signed by an AK" that no TPM made: a software P-256 key claims
 * the AK attributes, which is exactly what a forged public area would do.
 * The signature verifies, so only the magic and type checks stand. */
static void sign_attest(EVP_PKEY *k, const TPMS_ATTEST *a, uint8_t *msg, size_t *msg_len,
			uint8_t *sig, size_t *sig_len)
{
	uint8_t der[128];
	size_t der_len = sizeof(der);
	const unsigned char *dp = der;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	ECDSA_SIG *es;
	const BIGNUM *r, *s;
	TPMT_SIGNATURE ts = {.sigAlg = TPM2_ALG_ECDSA};

	*msg_len = 0;
	assert_int_equal(Tss2_MU_TPMS_ATTEST_Marshal(a, msg, 1024, msg_len), 0);
	assert_true(EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, k) == 1);
	assert_true(EVP_DigestSign(c, der, &der_len, msg, *msg_len) == 1);
	EVP_MD_CTX_free(c);
	es = d2i_ECDSA_SIG(NULL, &dp, (long)der_len);
	assert_non_null(es);
	ECDSA_SIG_get0(es, &r, &s);
	ts.signature.ecdsa.hash = TPM2_ALG_SHA256;
	ts.signature.ecdsa.signatureR.size = 32;
	ts.signature.ecdsa.signatureS.size = 32;
	BN_bn2binpad(r, ts.signature.ecdsa.signatureR.buffer, 32);
	BN_bn2binpad(s, ts.signature.ecdsa.signatureS.buffer, 32);
	ECDSA_SIG_free(es);
	*sig_len = 0;
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Marshal(&ts, sig, 256, sig_len), 0);
}

static void test_magic_and_type_checked(void **st)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	TPMT_PUBLIC ak;
	TPMS_ATTEST a;
	TPML_PCR_SELECTION sel;
	uint8_t msg[1024], sig[256], nonce[4] = {1, 2, 3, 4};
	size_t msg_len, sig_len;
	const char *reason;
	(void)st;

	ecc_public(k, TPM2_ECC_NIST_P256, &ak);
	assert_int_equal(fleet_pcr_selection_parse("sha256:0", &sel), FLEET_OK);
	memset(&a, 0, sizeof(a));
	a.magic = TPM2_GENERATED_VALUE ^ 1;
	a.type = TPM2_ST_ATTEST_QUOTE;
	a.extraData.size = 4;
	memcpy(a.extraData.buffer, nonce, 4);
	a.attested.quote.pcrSelect = sel;
	sign_attest(k, &a, msg, &msg_len, sig, &sig_len);

	struct fleet_pcr_value v = {.alg = TPM2_ALG_SHA256, .index = 0, .size = 32};
	struct fleet_quote_check q = {
		.ak = &ak, .attest = msg, .attest_len = msg_len, .sig = sig, .sig_len = sig_len,
		.extra_data = nonce, .extra_data_len = 4, .selection = &sel, .values = &v,
		.n_values = 1,
	};
	assert_int_equal(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "attest-magic");

	a.magic = TPM2_GENERATED_VALUE;
	a.type = TPM2_ST_ATTEST_NV;
	sign_attest(k, &a, msg, &msg_len, sig, &sig_len);
	q.attest_len = msg_len;
	q.sig_len = sig_len;
	assert_int_equal(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "attest-type");

	/* With magic and type right, the rest decides: the digest of one zero
	 * PCR is not the empty pcrDigest we signed. */
	a.type = TPM2_ST_ATTEST_QUOTE;
	sign_attest(k, &a, msg, &msg_len, sig, &sig_len);
	q.attest_len = msg_len;
	q.sig_len = sig_len;
	assert_int_equal(fleet_quote_verify(&q, NULL, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "quote-pcr-digest");
	EVP_PKEY_free(k);
}

/* An RSAPSS signature over msg with the given salt length, as a TPM would
 * marshal it. */
static void pss_sign(EVP_PKEY *k, int saltlen, const uint8_t *msg, size_t n, TPMT_SIGNATURE *ts)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pc = NULL;
	size_t len = sizeof(ts->signature.rsapss.sig.buffer);
	memset(ts, 0, sizeof(*ts));
	ts->sigAlg = TPM2_ALG_RSAPSS;
	ts->signature.rsapss.hash = TPM2_ALG_SHA256;
	assert_true(EVP_DigestSignInit(c, &pc, EVP_sha256(), NULL, k) == 1);
	assert_true(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1);
	assert_true(EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, saltlen) == 1);
	assert_true(EVP_DigestSign(c, ts->signature.rsapss.sig.buffer, &len, msg, n) == 1);
	ts->signature.rsapss.sig.size = (UINT16)len;
	EVP_MD_CTX_free(c);
}

/* TPMs disagree on the PSS salt (digest size in the reference code, the
 * maximum in Part 1 B.7 and older firmware); both must verify. */
static void test_rsapss_salt_lengths(void **st)
{
	static const uint8_t msg[] = "a TPMS_ATTEST, as far as PSS cares";
	EVP_PKEY *k = EVP_RSA_gen(2048);
	BIGNUM *n = NULL;
	TPMT_PUBLIC p;
	TPMT_SIGNATURE ts;
	const char *reason;
	(void)st;

	memset(&p, 0, sizeof(p));
	p.type = TPM2_ALG_RSA;
	p.nameAlg = TPM2_ALG_SHA256;
	p.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p.parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSAPSS;
	p.parameters.rsaDetail.scheme.details.rsapss.hashAlg = TPM2_ALG_SHA256;
	p.parameters.rsaDetail.keyBits = 2048;
	assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n));
	p.unique.rsa.size = 256;
	assert_int_equal(BN_bn2binpad(n, p.unique.rsa.buffer, 256), 256);
	BN_free(n);

	pss_sign(k, 32, msg, sizeof(msg), &ts);
	assert_int_equal(fleet_tpm_signature_verify(&p, msg, sizeof(msg), &ts, &reason), FLEET_OK);
	pss_sign(k, RSA_PSS_SALTLEN_MAX, msg, sizeof(msg), &ts);
	assert_int_equal(fleet_tpm_signature_verify(&p, msg, sizeof(msg), &ts, &reason), FLEET_OK);
	/* and the message still matters */
	assert_int_equal(fleet_tpm_signature_verify(&p, msg, sizeof(msg) - 1, &ts, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "signature-invalid");
	/* A key fixed to RSAPSS-SHA256 did not make a SHA-384 or RSASSA one. */
	ts.signature.rsapss.hash = TPM2_ALG_SHA384;
	assert_int_equal(fleet_tpm_signature_verify(&p, msg, sizeof(msg), &ts, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "signature-scheme");
	ts.signature.rsapss.hash = TPM2_ALG_SHA256;
	ts.sigAlg = TPM2_ALG_RSASSA;
	assert_int_equal(fleet_tpm_signature_verify(&p, msg, sizeof(msg), &ts, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "signature-scheme");
	/* With no scheme on the key, SHA-1 is still refused. */
	p.parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
	ts.sigAlg = TPM2_ALG_RSAPSS;
	ts.signature.rsapss.hash = TPM2_ALG_SHA1;
	assert_int_equal(fleet_tpm_signature_verify(&p, msg, sizeof(msg), &ts, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "signature-scheme");
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_name_of_real_ak),
		cmocka_unit_test(test_trailing_and_truncated_refused),
		cmocka_unit_test(test_ecc_keys),
		cmocka_unit_test(test_rsa_key),
		cmocka_unit_test(test_key_cache),
		cmocka_unit_test(test_spki_der_matches_openssl),
		cmocka_unit_test(test_unsupported_type_refused),
		cmocka_unit_test(test_ak_check_each_rule),
		cmocka_unit_test(test_selection_parse),
		cmocka_unit_test(test_magic_and_type_checked),
		cmocka_unit_test(test_rsapss_salt_lengths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
