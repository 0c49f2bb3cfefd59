/*
 * test_token_seal.c: the sealed join token (lib/token_seal.h, TS1..TS12).
 * Each test names the rules it holds. The known answer (test_kat) was
 * computed by tests/unit/token_seal_vectors.py with Python's cryptography
 * package, its ECDH and HKDF steps checked again there with `openssl
 * pkeyutl -derive` and `openssl kdf HKDF`; none of it uses lib/token_seal.c.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/token_seal.h"
#include "lib/token_seal_int.h"
#include "lib/tpm_alg.h"

/* tests/unit/token_seal_vectors.py; openssl CLI check of Z and the HKDF key: passed */
static const uint8_t kat_recipient_d[32] = {
	0x0e, 0xd7, 0xe7, 0x41, 0x93, 0x66, 0xbb, 0x46, 0x06, 0xe4, 0xd2, 0x20,
	0x95, 0x54, 0x46, 0x97, 0x54, 0x6f, 0x21, 0x60, 0xad, 0x6e, 0xc8, 0x4b,
	0xf7, 0xc3, 0x18, 0x96, 0x3c, 0x2c, 0x18, 0xab,
};
static const uint8_t kat_ephemeral_d[32] = {
	0x75, 0x26, 0xef, 0x50, 0x02, 0xe2, 0xfc, 0xd5, 0xf5, 0xc9, 0x06, 0xac,
	0x05, 0x14, 0x67, 0x04, 0x79, 0x20, 0x3e, 0x21, 0x27, 0x33, 0x51, 0x4b,
	0x25, 0x52, 0x86, 0xcb, 0xd6, 0x0a, 0x00, 0x26,
};
static const uint8_t kat_recipient_spki[91] = {
	0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
	0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03,
	0x42, 0x00, 0x04, 0x88, 0x07, 0xe2, 0xbb, 0x1b, 0x8f, 0xcc, 0x1b, 0x4f,
	0x30, 0x32, 0x39, 0xd9, 0x78, 0x2b, 0x84, 0xc1, 0x9a, 0x57, 0x38, 0x52,
	0xe3, 0x01, 0xa2, 0x7c, 0xb9, 0x78, 0x53, 0x53, 0x2b, 0xc8, 0x85, 0xef,
	0x1e, 0x2f, 0x7a, 0xb5, 0x8f, 0xc5, 0x7c, 0x28, 0x32, 0x35, 0xfb, 0xe9,
	0x61, 0x27, 0xc9, 0x05, 0x86, 0x37, 0xf4, 0xb6, 0x35, 0x47, 0x57, 0xec,
	0x7b, 0xd2, 0x95, 0x52, 0xc5, 0xba, 0xbb,
};
static const uint8_t kat_sealed[138] = {
	0x66, 0x73, 0x6c, 0x31, 0xb1, 0x93, 0xc3, 0x72, 0xd9, 0xd9, 0x87, 0x47,
	0x04, 0x5f, 0xb9, 0xfd, 0xca, 0x5c, 0x5c, 0xd0, 0x72, 0x55, 0xcf, 0xa4,
	0x3b, 0x51, 0xfe, 0x6d, 0xb3, 0xf0, 0xa3, 0xbe, 0x56, 0xc4, 0xeb, 0xd2,
	0x91, 0x8d, 0x24, 0xaa, 0x43, 0x38, 0x3c, 0x50, 0xfa, 0x81, 0x93, 0xff,
	0x52, 0xed, 0xc5, 0xb3, 0x43, 0x3e, 0xda, 0x55, 0x4f, 0x3e, 0x94, 0xc7,
	0xef, 0xa3, 0xa1, 0x3d, 0x84, 0x0c, 0x7e, 0x54, 0x68, 0x7f, 0xfd, 0x86,
	0xd2, 0x6d, 0x6c, 0x98, 0x4f, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
	0x07, 0x08, 0x09, 0x0a, 0x0b, 0x93, 0xb8, 0x9d, 0x86, 0xda, 0xc0, 0xd7,
	0xb2, 0xd0, 0x48, 0x1a, 0x82, 0xb5, 0xc0, 0x2a, 0xf0, 0x3e, 0xfc, 0x29,
	0x23, 0x2b, 0x5b, 0x71, 0x2a, 0xe3, 0xe4, 0x08, 0x6f, 0x69, 0xba, 0xd5,
	0x55, 0xbb, 0x9f, 0xeb, 0x73, 0x66, 0x5f, 0x49, 0xad, 0x15, 0x51, 0xb7,
	0xfe, 0x1a, 0x9a, 0x97, 0x51, 0x01,
};
static const char kat_pt[] = "fleet-join-token:0123456789abcdef";
/* The fuzz target's fixed key (tests/fuzz/fuzz_token_seal.c). */
static const uint8_t fuzz_key_d[32] = {
	0x8e, 0xe7, 0x0c, 0x7c, 0x26, 0xf1, 0xd6, 0x65, 0xa2, 0xe2, 0x34, 0xde,
	0x2c, 0x95, 0xb0, 0x13, 0x48, 0xae, 0xca, 0x68, 0x0f, 0x06, 0x19, 0xf0,
	0x78, 0x01, 0x32, 0x10, 0x89, 0xaa, 0x20, 0xd0,
};

#define PURPOSE "join-token"

static struct fleet_seal_key *key_from(const uint8_t d[32])
{
	struct fleet_seal_key *k = NULL;
	assert_int_equal(fleet_seal_key_from_scalar(d, &k), FLEET_OK);
	assert_non_null(k);
	return k;
}

static struct fleet_seal_key *key_new(void)
{
	struct fleet_seal_key *k = NULL;
	assert_int_equal(fleet_seal_key_generate(&k), FLEET_OK);
	assert_non_null(k);
	return k;
}

static void spki_of(const struct fleet_seal_key *k, struct fleet_buf *b)
{
	fb_init(b);
	assert_int_equal(fleet_seal_key_public_spki(k, b), FLEET_OK);
	assert_int_equal(b->len, FLEET_SEAL_SPKI_LEN);
}

/* A secret plaintext buffer that already holds something, so emptying is seen. */
static void pt_buf(struct fleet_buf *b)
{
	fb_init_secret(b, FLEET_SEAL_MAX_PLAINTEXT);
	assert_int_equal(fb_put(b, "stale", 5), FLEET_OK);
}

/* The KAT's sealing, deterministic: the KAT recipient, ephemeral key and
 * nonce over pt. */
static void kat_seal(const uint8_t *pt, size_t n, struct fleet_buf *out)
{
	struct fleet_seal_key *eph = key_from(kat_ephemeral_d);
	uint8_t nonce[FLEET_SEAL_NONCE_LEN];
	for (size_t i = 0; i < sizeof(nonce); i++)
		nonce[i] = (uint8_t)i;
	fb_init(out);
	assert_int_equal(fleet_seal_with_ephemeral(kat_recipient_spki, sizeof(kat_recipient_spki),
						   PURPOSE, eph, nonce, pt, n, out),
			 FLEET_OK);
	fleet_seal_key_free(eph);
}

/* Refused with e and reason (NULL: any), pt_out empty, OpenSSL's queue empty (TS10). */
static void refused(const struct fleet_seal_key *k, const char *purpose, const uint8_t *s,
		    size_t n, fleet_err e, const char *reason)
{
	struct fleet_buf pt;
	struct fleet_errctx ec = {0};
	pt_buf(&pt);
	fleet_err got = fleet_unseal(k, purpose, s, n, &pt, &ec);
	if (e)
		assert_int_equal(got, e);
	else
		assert_true(got == FLEET_E_VERIFY || got == FLEET_E_MALFORMED);
	assert_non_null(ec.reason);
	if (reason && strcmp(ec.reason, reason) != 0)
		fail_msg("len %zu: reason %s, not %s", n, ec.reason, reason);
	assert_int_equal(pt.len, 0);
	assert_int_equal(ERR_peek_error(), 0);
	fb_free(&pt);
}

static void opens_to(const struct fleet_seal_key *k, const uint8_t *s, size_t n,
		     const void *want, size_t want_len)
{
	struct fleet_buf pt;
	struct fleet_errctx ec = {0};
	pt_buf(&pt);
	assert_int_equal(fleet_unseal(k, PURPOSE, s, n, &pt, &ec), FLEET_OK);
	assert_int_equal(pt.len, want_len);
	assert_memory_equal(pt.data, want, want_len);
	fb_free(&pt);
}

/* TS5: a round trip, each sealing fresh. */
static void test_roundtrip(void **state)
{
	struct fleet_seal_key *k = key_new();
	struct fleet_buf spki, s1, s2;
	uint8_t big[FLEET_SEAL_MAX_PLAINTEXT];
	(void)state;
	spki_of(k, &spki);
	fb_init(&s1);
	fb_init(&s2);
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, (const uint8_t *)kat_pt,
				    strlen(kat_pt), &s1),
			 FLEET_OK);
	assert_int_equal(s1.len, FLEET_SEAL_OVERHEAD + strlen(kat_pt));
	assert_memory_equal(s1.data, "fsl1", 4);
	opens_to(k, s1.data, s1.len, kat_pt, strlen(kat_pt));
	/* The same token again: another ephemeral key, another nonce. */
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, (const uint8_t *)kat_pt,
				    strlen(kat_pt), &s2),
			 FLEET_OK);
	assert_int_equal(s1.len, s2.len);
	assert_memory_not_equal(s1.data + 12, s2.data + 12, FLEET_SEAL_POINT_LEN);
	assert_memory_not_equal(s1.data + 77, s2.data + 77, FLEET_SEAL_NONCE_LEN);
	/* The largest plaintext, and one byte. */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 13);
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, big, sizeof(big), &s2), FLEET_OK);
	assert_int_equal(s2.len, FLEET_SEAL_MAX_SEALED);
	opens_to(k, s2.data, s2.len, big, sizeof(big));
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, big, 1, &s2), FLEET_OK);
	opens_to(k, s2.data, s2.len, big, 1);
	fb_free(&spki);
	fb_free(&s1);
	fb_free(&s2);
	fleet_seal_key_free(k);
}

/* TS5: the purpose and the plaintext's bounds on seal. */
static void test_seal_args(void **state)
{
	struct fleet_seal_key *k = key_new();
	struct fleet_buf spki, out;
	uint8_t big[FLEET_SEAL_MAX_PLAINTEXT + 1] = {0};
	char long_purpose[FLEET_SEAL_MAX_PURPOSE + 2];
	const char *bad[] = {"", "join token", "join\ttoken", "join\x7ftoken", "t\xc3\xa9"};
	(void)state;
	spki_of(k, &spki);
	fb_init(&out);
	memset(long_purpose, 'a', sizeof(long_purpose));
	long_purpose[FLEET_SEAL_MAX_PURPOSE + 1] = '\0';
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fb_put(&out, "x", 1), FLEET_OK);
		assert_int_equal(fleet_seal(spki.data, spki.len, bad[i], big, 1, &out),
				 FLEET_E_INVALID_ARG);
		assert_int_equal(out.len, 0);
	}
	assert_int_equal(fleet_seal(spki.data, spki.len, NULL, big, 1, &out), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_seal(spki.data, spki.len, long_purpose, big, 1, &out),
			 FLEET_E_INVALID_ARG);
	long_purpose[FLEET_SEAL_MAX_PURPOSE] = '\0'; /* 64: the longest */
	assert_int_equal(fleet_seal(spki.data, spki.len, long_purpose, big, 1, &out), FLEET_OK);
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, big, 0, &out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(out.len, 0);
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, big, sizeof(big), &out),
			 FLEET_E_TOO_LARGE);
	assert_int_equal(out.len, 0);
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, big, sizeof(big) - 1, &out),
			 FLEET_OK);
	assert_int_equal(ERR_peek_error(), 0);
	fb_free(&spki);
	fb_free(&out);
	fleet_seal_key_free(k);
}

static void der_pubkey(EVP_PKEY *pk, struct fleet_buf *b)
{
	unsigned char *der = NULL;
	int n = i2d_PUBKEY(pk, &der);
	assert_true(n > 0);
	fb_init(b);
	assert_int_equal(fb_put(b, der, (size_t)n), FLEET_OK);
	OPENSSL_free(der);
}

static void seal_fails(const uint8_t *spki, size_t n, fleet_err want)
{
	struct fleet_buf out;
	fb_init(&out);
	assert_int_equal(fleet_seal(spki, n, PURPOSE, (const uint8_t *)"t", 1, &out), want);
	assert_int_equal(out.len, 0);
	assert_int_equal(ERR_peek_error(), 0);
	fb_free(&out);
}

/* TS4: only a canonical P-256 SPKI, its point on the curve. */
static void test_seal_recipient_refused(void **state)
{
	EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	EVP_PKEY *p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	EVP_PKEY *p256 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	EVP_PKEY *x25519 = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	struct fleet_buf b;
	uint8_t spki[FLEET_SEAL_SPKI_LEN + 1];
	(void)state;
	assert_non_null(rsa);
	assert_non_null(p384);
	assert_non_null(p256);
	assert_non_null(x25519);
	der_pubkey(rsa, &b);
	seal_fails(b.data, b.len, FLEET_E_UNSUPPORTED);
	fb_free(&b);
	der_pubkey(p384, &b);
	seal_fails(b.data, b.len, FLEET_E_UNSUPPORTED);
	fb_free(&b);
	der_pubkey(x25519, &b);
	seal_fails(b.data, b.len, FLEET_E_UNSUPPORTED);
	fb_free(&b);
	/* P-256 with a compressed point: not the canonical form. */
	assert_int_equal(EVP_PKEY_set_utf8_string_param(p256,
							OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
							"compressed"),
			 1);
	der_pubkey(p256, &b);
	assert_int_equal(b.len, 59);
	seal_fails(b.data, b.len, FLEET_E_UNSUPPORTED);
	fb_free(&b);
	/* No SPKI at all, one with a byte after it, a point off the curve. */
	seal_fails((const uint8_t *)"not der", 7, FLEET_E_MALFORMED);
	seal_fails(kat_recipient_spki, 0, FLEET_E_MALFORMED);
	seal_fails(NULL, 0, FLEET_E_MALFORMED);
	memcpy(spki, kat_recipient_spki, sizeof(kat_recipient_spki));
	spki[FLEET_SEAL_SPKI_LEN] = 0;
	seal_fails(spki, sizeof(spki), FLEET_E_MALFORMED);
	spki[FLEET_SEAL_SPKI_LEN - 1] ^= 1;
	seal_fails(spki, FLEET_SEAL_SPKI_LEN, FLEET_E_MALFORMED);
	seal_fails(kat_recipient_spki, sizeof(kat_recipient_spki) - 1, FLEET_E_MALFORMED);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(p256);
	EVP_PKEY_free(x25519);
}

/* TS2: the canonical SPKI (as Python's cryptography writes it) and its id. */
static void test_key_id(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	struct fleet_buf spki;
	uint8_t id[FLEET_SEAL_KEY_ID_LEN], h[32];
	(void)state;
	spki_of(k, &spki);
	assert_memory_equal(spki.data, kat_recipient_spki, sizeof(kat_recipient_spki));
	fleet_seal_key_id(k, id);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, kat_recipient_spki, sizeof(kat_recipient_spki),
				    h),
			 FLEET_OK);
	assert_memory_equal(id, h, sizeof(id));
	/* The sealed bytes name it. */
	assert_memory_equal(kat_sealed + 4, id, sizeof(id));
	fb_free(&spki);
	fleet_seal_key_free(k);
}

static void pem_of(EVP_PKEY *pk, struct fleet_buf *out)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *p;
	long n;
	assert_non_null(bio);
	assert_int_equal(PEM_write_bio_PrivateKey(bio, pk, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(bio, &p);
	fb_init_secret(out, 1u << 16);
	assert_int_equal(fb_put(out, p, (size_t)n), FLEET_OK);
	BIO_free(bio);
}

static void same_key(const struct fleet_seal_key *a, const struct fleet_seal_key *b)
{
	uint8_t ia[FLEET_SEAL_KEY_ID_LEN], ib[FLEET_SEAL_KEY_ID_LEN];
	struct fleet_buf sa, sb;
	fleet_seal_key_id(a, ia);
	fleet_seal_key_id(b, ib);
	assert_memory_equal(ia, ib, sizeof(ia));
	spki_of(a, &sa);
	spki_of(b, &sb);
	assert_memory_equal(sa.data, sb.data, sa.len);
	fb_free(&sa);
	fb_free(&sb);
}

/* TS1, TS2, TS3: generate, write, load: the same key; the PEM is a secret. */
static void test_key_pem_roundtrip(void **state)
{
	struct fleet_seal_key *k = key_new(), *l = NULL, *c = NULL;
	struct fleet_buf pem, plain, spki, s;
	struct fleet_errctx ec = {0};
	EVP_PKEY *pk;
	BIO *bio;
	(void)state;
	fb_init(&plain);
	assert_int_equal(fleet_seal_key_private_pem(k, &plain), FLEET_E_INVALID_ARG);
	assert_int_equal(plain.len, 0);
	fb_init_secret(&pem, FLEET_SEAL_MAX_PEM);
	assert_int_equal(fleet_seal_key_private_pem(k, &pem), FLEET_OK);
	assert_true(pem.len > 28);
	assert_memory_equal(pem.data, "-----BEGIN PRIVATE KEY-----\n", 28);
	assert_int_equal(fleet_seal_key_load_pem(pem.data, pem.len, &l, &ec), FLEET_OK);
	same_key(k, l);
	/* What k's public key seals, l opens. */
	spki_of(k, &spki);
	fb_init(&s);
	assert_int_equal(fleet_seal(spki.data, spki.len, PURPOSE, (const uint8_t *)"tok", 3, &s),
			 FLEET_OK);
	opens_to(l, s.data, s.len, "tok", 3);
	/* The same key written with a compressed point: the same id (TS2). */
	bio = BIO_new_mem_buf(pem.data, (int)pem.len);
	pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	assert_non_null(pk);
	assert_int_equal(EVP_PKEY_set_utf8_string_param(pk,
							OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
							"compressed"),
			 1);
	fb_free(&pem);
	pem_of(pk, &pem);
	EVP_PKEY_free(pk);
	assert_int_equal(fleet_seal_key_load_pem(pem.data, pem.len, &c, &ec), FLEET_OK);
	same_key(k, c);
	opens_to(c, s.data, s.len, "tok", 3);
	assert_int_equal(ERR_peek_error(), 0);
	fb_free(&pem);
	fb_free(&spki);
	fb_free(&s);
	fleet_seal_key_free(k);
	fleet_seal_key_free(l);
	fleet_seal_key_free(c);
}

static void load_refused(const void *pem, size_t len, fleet_err e, const char *reason)
{
	struct fleet_seal_key *k = (struct fleet_seal_key *)1;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_seal_key_load_pem(pem, len, &k, &ec), e);
	assert_null(k);
	assert_non_null(ec.reason);
	assert_string_equal(ec.reason, reason);
	assert_int_equal(ERR_peek_error(), 0);
}

static void load_pkey_refused(EVP_PKEY *pk, fleet_err e, const char *reason)
{
	struct fleet_buf pem;
	assert_non_null(pk);
	pem_of(pk, &pem);
	load_refused(pem.data, pem.len, e, reason);
	fb_free(&pem);
	EVP_PKEY_free(pk);
}

/* TS1: anything but an unencrypted PKCS#8 P-256 key is refused. */
static void test_key_load_refused(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d), *o = key_from(fuzz_key_d);
	struct fleet_buf pem, other, two, big;
	EVP_PKEY *pk;
	BIO *bio;
	char *name = NULL, *hdr = NULL;
	unsigned char *der = NULL;
	long der_len = 0;
	char *p;
	long n;
	(void)state;
	load_pkey_refused(EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048), FLEET_E_UNSUPPORTED,
			  "seal-key-type");
	load_pkey_refused(EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384"), FLEET_E_UNSUPPORTED,
			  "seal-key-type");
	load_pkey_refused(EVP_PKEY_Q_keygen(NULL, NULL, "X25519"), FLEET_E_UNSUPPORTED,
			  "seal-key-type");
	load_refused("", 0, FLEET_E_MALFORMED, "seal-key-pem");
	load_refused("not a pem", 9, FLEET_E_MALFORMED, "seal-key-pem");

	fb_init_secret(&pem, FLEET_SEAL_MAX_PEM);
	assert_int_equal(fleet_seal_key_private_pem(k, &pem), FLEET_OK);
	/* The same key as a traditional "EC PRIVATE KEY", and encrypted PKCS#8. */
	bio = BIO_new_mem_buf(pem.data, (int)pem.len);
	pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	assert_non_null(pk);
	bio = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PrivateKey_traditional(bio, pk, NULL, NULL, 0, NULL, NULL),
			 1);
	n = BIO_get_mem_data(bio, &p);
	assert_non_null(strstr(p, "BEGIN EC PRIVATE KEY"));
	load_refused(p, (size_t)n, FLEET_E_MALFORMED, "seal-key-pem");
	BIO_free(bio);
	bio = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PKCS8PrivateKey(bio, pk, EVP_aes_256_cbc(), "pw", 2, NULL,
						       NULL),
			 1);
	n = BIO_get_mem_data(bio, &p);
	assert_non_null(strstr(p, "BEGIN ENCRYPTED PRIVATE KEY"));
	load_refused(p, (size_t)n, FLEET_E_MALFORMED, "seal-key-pem");
	BIO_free(bio);
	EVP_PKEY_free(pk);

	/* Two blocks; past the cap; a truncated block. */
	fb_init_secret(&other, FLEET_SEAL_MAX_PEM);
	assert_int_equal(fleet_seal_key_private_pem(o, &other), FLEET_OK);
	fb_init_secret(&two, 2 * FLEET_SEAL_MAX_PEM);
	fb_put(&two, pem.data, pem.len);
	fb_put(&two, other.data, other.len);
	load_refused(two.data, two.len, FLEET_E_MALFORMED, "seal-key-pem");
	fb_init_secret(&big, 2 * FLEET_SEAL_MAX_PEM);
	fb_put(&big, pem.data, pem.len);
	while (big.len <= FLEET_SEAL_MAX_PEM)
		fb_put(&big, "\n", 1);
	load_refused(big.data, big.len, FLEET_E_TOO_LARGE, "seal-key-pem");
	load_refused(pem.data, pem.len - 30, FLEET_E_MALFORMED, "seal-key-pem");

	/* k's private scalar with o's public point: the halves disagree. */
	bio = BIO_new_mem_buf(pem.data, (int)pem.len);
	assert_int_equal(PEM_read_bio(bio, &name, &hdr, &der, &der_len), 1);
	BIO_free(bio);
	{
		struct fleet_buf ospki;
		spki_of(o, &ospki);
		/* OpenSSL writes the public point last in the structure. */
		assert_true(der_len > FLEET_SEAL_POINT_LEN);
		assert_int_equal(der[der_len - FLEET_SEAL_POINT_LEN], 0x04);
		memcpy(der + der_len - FLEET_SEAL_POINT_LEN, ospki.data + 26, FLEET_SEAL_POINT_LEN);
		fb_free(&ospki);
	}
	bio = BIO_new(BIO_s_mem());
	assert_true(PEM_write_bio(bio, "PRIVATE KEY", "", der, der_len) > 0);
	n = BIO_get_mem_data(bio, &p);
	load_refused(p, (size_t)n, FLEET_E_MALFORMED, "seal-key-invalid");
	BIO_free(bio);
	OPENSSL_free(name);
	OPENSSL_free(hdr);
	OPENSSL_clear_free(der, (size_t)der_len);

	fb_free(&pem);
	fb_free(&other);
	fb_free(&two);
	fb_free(&big);
	fleet_seal_key_free(k);
	fleet_seal_key_free(o);
}

/* TS6: every truncation, and one byte more than the cap allows. */
static void test_truncations(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	uint8_t big[FLEET_SEAL_MAX_SEALED + 1];
	struct fleet_buf s;
	(void)state;
	for (size_t n = 0; n < sizeof(kat_sealed); n++)
		refused(k, PURPOSE, kat_sealed, n, 0,
			n <= FLEET_SEAL_OVERHEAD ? "seal-malformed" : "seal-tag");
	/* The cap: a sealing of 4096 bytes opens; one byte more never. */
	memset(big, 0x5a, sizeof(big));
	kat_seal(big, FLEET_SEAL_MAX_PLAINTEXT, &s);
	assert_int_equal(s.len, FLEET_SEAL_MAX_SEALED);
	opens_to(k, s.data, s.len, big, FLEET_SEAL_MAX_PLAINTEXT);
	memcpy(big, s.data, s.len);
	refused(k, PURPOSE, big, sizeof(big), FLEET_E_MALFORMED, "seal-malformed");
	fb_free(&s);
	fleet_seal_key_free(k);
}

/* TS6..TS9: each header byte changed, each refused for its field's reason. */
static void test_header_flips(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	uint8_t s[sizeof(kat_sealed)];
	const uint8_t masks[] = {0x01, 0x80, 0xff};
	(void)state;
	opens_to(k, kat_sealed, sizeof(kat_sealed), kat_pt, strlen(kat_pt));
	for (size_t i = 0; i < FLEET_SEAL_HEADER_LEN; i++) {
		for (size_t m = 0; m < sizeof(masks); m++) {
			const char *want;
			memcpy(s, kat_sealed, sizeof(s));
			s[i] ^= masks[m];
			if (i < 3)
				want = "seal-malformed";
			else if (i == 3)
				want = "seal-version";
			else if (i < 12)
				want = "seal-key-id";
			else if (i < 77)
				want = "seal-point"; /* the prefix, X or Y: off the curve */
			else
				want = "seal-tag"; /* the nonce */
			refused(k, PURPOSE, s, sizeof(s), 0, want);
		}
	}
	fleet_seal_key_free(k);
}

/* TS9, TS10: each ciphertext and tag byte changed; pt_out stays empty. */
static void test_ciphertext_flips(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	uint8_t s[sizeof(kat_sealed)];
	(void)state;
	for (size_t i = FLEET_SEAL_HEADER_LEN; i < sizeof(kat_sealed); i++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			memcpy(s, kat_sealed, sizeof(s));
			s[i] ^= (uint8_t)(1u << bit);
			refused(k, PURPOSE, s, sizeof(s), FLEET_E_VERIFY, "seal-tag");
		}
	}
	fleet_seal_key_free(k);
}

/* TS9: another purpose does not open it; a bad purpose is the caller's. */
static void test_wrong_purpose(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	struct fleet_buf pt;
	struct fleet_errctx ec = {0};
	(void)state;
	refused(k, "discovery", kat_sealed, sizeof(kat_sealed), FLEET_E_VERIFY, "seal-tag");
	refused(k, "join-tokens", kat_sealed, sizeof(kat_sealed), FLEET_E_VERIFY, "seal-tag");
	refused(k, "join-toke", kat_sealed, sizeof(kat_sealed), FLEET_E_VERIFY, "seal-tag");
	pt_buf(&pt);
	assert_int_equal(fleet_unseal(k, "", kat_sealed, sizeof(kat_sealed), &pt, &ec),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(pt.len, 0);
	assert_int_equal(fleet_unseal(k, NULL, kat_sealed, sizeof(kat_sealed), &pt, &ec),
			 FLEET_E_INVALID_ARG);
	fb_free(&pt);
	fleet_seal_key_free(k);
}

/* TS7: sealed to another key. */
static void test_other_key(void **state)
{
	struct fleet_seal_key *k = key_from(fuzz_key_d);
	(void)state;
	refused(k, PURPOSE, kat_sealed, sizeof(kat_sealed), FLEET_E_VERIFY, "seal-key-id");
	fleet_seal_key_free(k);
}

/* TS9: sealed to another key b, the header made to name a's id: the tag,
 * keyed from a's ECDH and a's SPKI hash, refuses it. */
static void test_forged_key_id(void **state)
{
	struct fleet_seal_key *a = key_from(kat_recipient_d), *b = key_new();
	struct fleet_buf bspki, s;
	uint8_t id[FLEET_SEAL_KEY_ID_LEN];
	(void)state;
	spki_of(b, &bspki);
	fb_init(&s);
	assert_int_equal(fleet_seal(bspki.data, bspki.len, PURPOSE, (const uint8_t *)kat_pt,
				    strlen(kat_pt), &s),
			 FLEET_OK);
	opens_to(b, s.data, s.len, kat_pt, strlen(kat_pt));
	fleet_seal_key_id(a, id);
	memcpy(s.data + 4, id, sizeof(id));
	refused(a, PURPOSE, s.data, s.len, FLEET_E_VERIFY, "seal-tag");
	refused(b, PURPOSE, s.data, s.len, FLEET_E_VERIFY, "seal-key-id");
	fb_free(&bspki);
	fb_free(&s);
	fleet_seal_key_free(a);
	fleet_seal_key_free(b);
}

/* TS8: ephemeral points that are not points of P-256. */
static void test_point_off_curve(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	uint8_t s[sizeof(kat_sealed)];
	/* The field prime p of P-256: X = p is no field element. */
	static const uint8_t p256_p[32] = {
		0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	(void)state;
	/* Y changed in its last bit. */
	memcpy(s, kat_sealed, sizeof(s));
	s[12 + 64] ^= 1;
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_MALFORMED, "seal-point");
	/* All zero (the identity has no uncompressed encoding; (0,0) is off it). */
	memcpy(s, kat_sealed, sizeof(s));
	memset(s + 13, 0, 64);
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_MALFORMED, "seal-point");
	memset(s + 12, 0, 65);
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_MALFORMED, "seal-point");
	/* A compressed or hybrid prefix in front of the right coordinates. */
	memcpy(s, kat_sealed, sizeof(s));
	s[12] = 0x02;
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_MALFORMED, "seal-point");
	s[12] = 0x06;
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_MALFORMED, "seal-point");
	/* X = p: out of the field. */
	memcpy(s, kat_sealed, sizeof(s));
	memcpy(s + 13, p256_p, 32);
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_MALFORMED, "seal-point");
	/* The recipient's own point, well formed: it reaches the tag. */
	memcpy(s, kat_sealed, sizeof(s));
	memcpy(s + 12, kat_recipient_spki + 26, 65);
	refused(k, PURPOSE, s, sizeof(s), FLEET_E_VERIFY, "seal-tag");
	fleet_seal_key_free(k);
}

/* TS10: the plaintext buffer must be a wiping one that can hold the cap. */
static void test_unseal_args(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d);
	struct fleet_buf pt;
	struct fleet_errctx ec = {0};
	(void)state;
	fb_init(&pt);
	assert_int_equal(fleet_unseal(k, PURPOSE, kat_sealed, sizeof(kat_sealed), &pt, &ec),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(pt.len, 0);
	fb_init_secret(&pt, 64);
	assert_int_equal(fleet_unseal(k, PURPOSE, kat_sealed, sizeof(kat_sealed), &pt, &ec),
			 FLEET_E_INVALID_ARG);
	fb_free(&pt);
	pt_buf(&pt);
	assert_int_equal(fleet_unseal(NULL, PURPOSE, kat_sealed, sizeof(kat_sealed), &pt, &ec),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(pt.len, 0);
	assert_int_equal(fleet_unseal(k, PURPOSE, NULL, 10, &pt, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_unseal(NULL, PURPOSE, kat_sealed, sizeof(kat_sealed), NULL, &ec),
			 FLEET_E_INVALID_ARG);
	fb_free(&pt);
	fleet_seal_key_free(k);
}

/* TS12: the bytes an independent implementation computed. */
static void test_kat(void **state)
{
	struct fleet_seal_key *k = key_from(kat_recipient_d), *z = NULL;
	struct fleet_buf s;
	uint8_t zero[32] = {0};
	/* n, the order of P-256: not a scalar. */
	static const uint8_t order[32] = {
		0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
		0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};
	(void)state;
	kat_seal((const uint8_t *)kat_pt, strlen(kat_pt), &s);
	assert_int_equal(s.len, sizeof(kat_sealed));
	assert_memory_equal(s.data, kat_sealed, sizeof(kat_sealed));
	opens_to(k, kat_sealed, sizeof(kat_sealed), kat_pt, strlen(kat_pt));
	assert_int_equal(fleet_seal_key_from_scalar(zero, &z), FLEET_E_INVALID_ARG);
	assert_null(z);
	assert_int_equal(fleet_seal_key_from_scalar(order, &z), FLEET_E_INVALID_ARG);
	assert_null(z);
	fb_free(&s);
	fleet_seal_key_free(k);
}

/* The fuzz target's seed opens with the fuzz target's key (so the corpus
 * cannot rot into refusals only). */
static void test_fuzz_seed(void **state)
{
	struct fleet_seal_key *k = key_from(fuzz_key_d);
	struct fleet_buf seed;
	(void)state;
	read_file_or_fail(FLEET_SOURCE_DIR "/tests/fuzz/corpus/fuzz_token_seal/valid.seal", &seed);
	opens_to(k, seed.data, seed.len, "fleet-join-token:seed", 21);
	fb_free(&seed);
	fleet_seal_key_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_seal_args),
		cmocka_unit_test(test_seal_recipient_refused),
		cmocka_unit_test(test_key_id),
		cmocka_unit_test(test_key_pem_roundtrip),
		cmocka_unit_test(test_key_load_refused),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_header_flips),
		cmocka_unit_test(test_ciphertext_flips),
		cmocka_unit_test(test_wrong_purpose),
		cmocka_unit_test(test_other_key),
		cmocka_unit_test(test_forged_key_id),
		cmocka_unit_test(test_point_off_curve),
		cmocka_unit_test(test_unseal_args),
		cmocka_unit_test(test_kat),
		cmocka_unit_test(test_fuzz_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
