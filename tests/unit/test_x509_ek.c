/*
 * test_x509_ek.c: the EK loader, ek_hash, key matching and the chain rules,
 * on certificates minted here with the quirks real ones have.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/hex.h"
#include "lib/tpm.h"
#include "lib/x509_ek.h"
#include "tests/unit/x509_mint.h"

#define DAY 86400
#define YEAR (365 * DAY)
/* A fixed "now" (2026-01-01) so time rules do not depend on the clock. */
#define NOW ((time_t)1767225600)

/* Expected ek_hash computed the way an operator would: SHA-256 over the
 * SPKI DER OpenSSL writes for the certificate's X509_PUBKEY. */
static void expected_hash(X509 *x, char out[65])
{
	unsigned char *der = NULL, md[32];
	unsigned int n = 0;
	int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
	assert_true(len > 0);
	assert_int_equal(EVP_Digest(der, (size_t)len, md, &n, EVP_sha256(), NULL), 1);
	fleet_hex_encode(md, 32, out);
	OPENSSL_free(der);
}

static X509 *leaf_ec(EVP_PKEY **key)
{
	*key = mint_key_ec();
	struct mint m = {.key = *key, .not_before = NOW - YEAR, .not_after = NOW + YEAR,
			 .tcg_san = 1};
	return mint_cert(&m);
}

/* Load buf; assert it gives the certificate whose DER is want. */
static void assert_loads_as(const uint8_t *buf, size_t len, const unsigned char *want,
			    size_t want_len)
{
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	fleet_err e = fleet_ek_cert_load(buf, len, &x, &ec);
	if (e != FLEET_OK)
		fail_msg("load: %s: %s", fleet_err_str(e), ec.detail);
	size_t n;
	unsigned char *der = mint_der(x, &n);
	assert_int_equal(n, want_len);
	assert_memory_equal(der, want, n);
	free(der);
	X509_free(x);
}

static void test_load_der_and_hash(void **state)
{
	(void)state;
	EVP_PKEY *k;
	X509 *x = leaf_ec(&k);
	size_t n;
	unsigned char *der = mint_der(x, &n);
	char got[65], want[65];

	assert_loads_as(der, n, der, n);
	assert_int_equal(fleet_ek_hash(x, got), FLEET_OK);
	expected_hash(x, want);
	assert_string_equal(got, want);
	assert_true(fleet_hex_is_lower(got, 64));
	free(der);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* The 7-byte TCG stored-certificate header: tag 0x1001, type 0x00, the
 * size of what follows (tag 0x1002 and the DER), tag 0x1002. */
static size_t put_nv_header(uint8_t *buf, size_t der_len)
{
	size_t size = der_len + 2;
	buf[0] = 0x10, buf[1] = 0x01, buf[2] = 0x00;
	buf[3] = (uint8_t)(size >> 8), buf[4] = (uint8_t)size;
	buf[5] = 0x10, buf[6] = 0x02;
	return 7;
}

static void test_load_nv_header_and_padding(void **state)
{
	(void)state;
	EVP_PKEY *k;
	X509 *x = leaf_ec(&k);
	size_t n;
	unsigned char *der = mint_der(x, &n);
	uint8_t *buf = malloc(n + 7 + 64);
	assert_non_null(buf);

	/* TCG header, DER, then 0xFF from a fixed-size NV read. */
	size_t h = put_nv_header(buf, n);
	memcpy(buf + h, der, n);
	memset(buf + h + n, 0xFF, 64);
	assert_loads_as(buf, n + h + 64, der, n);
	assert_loads_as(buf, n + h, der, n); /* header, no padding */
	/* Fill that is neither 0x00 nor 0xFF (a published Nuvoton file has
	 * 0x11), after the header's span and inside it. */
	memset(buf + h + n, 0x11, 64);
	assert_loads_as(buf, n + h + 64, der, n);
	buf[3] = (uint8_t)((n + 2 + 64) >> 8), buf[4] = (uint8_t)(n + 2 + 64);
	assert_loads_as(buf, n + h + 64, der, n);

	/* No header: DER then 0x00 padding, 0xFF padding, other fill. */
	memcpy(buf, der, n);
	memset(buf + n, 0x00, 64);
	assert_loads_as(buf, n + 64, der, n);
	memset(buf + n, 0xFF, 64);
	assert_loads_as(buf, n + 64, der, n);
	memset(buf + n, 0x11, 64);
	memcpy(buf + n + 10, "GARBAGE", 7);
	assert_loads_as(buf, n + 64, der, n);
	free(buf);
	free(der);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* Trailing bytes are accepted only within an NV read's size: binary input
 * beyond FLEET_EK_CERT_MAX is refused, whatever follows the DER. */
static void test_load_trailing_bound(void **state)
{
	(void)state;
	EVP_PKEY *k;
	X509 *x = leaf_ec(&k);
	size_t n;
	unsigned char *der = mint_der(x, &n);
	uint8_t *buf = malloc(FLEET_EK_CERT_MAX + 1);
	struct fleet_errctx ec = {0};
	X509 *y = NULL;
	assert_non_null(buf);
	memcpy(buf, der, n);
	memset(buf + n, 0xFF, FLEET_EK_CERT_MAX + 1 - n);
	assert_loads_as(buf, FLEET_EK_CERT_MAX, der, n);
	assert_int_equal(fleet_ek_cert_load(buf, FLEET_EK_CERT_MAX + 1, &y, &ec),
			 FLEET_E_TOO_LARGE);
	assert_null(y);
	assert_non_null(strstr(ec.detail, "NV read"));
	free(buf);
	free(der);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void test_load_pem(void **state)
{
	(void)state;
	EVP_PKEY *k;
	X509 *x = leaf_ec(&k);
	size_t n;
	unsigned char *der = mint_der(x, &n);
	BIO *bio = BIO_new(BIO_s_mem());
	char *pem;

	/* Text before the armour, as `openssl x509 -text` leaves it. */
	BIO_puts(bio, "Certificate:\n    Data: whatever\n");
	assert_int_equal(PEM_write_bio_X509(bio, x), 1);
	long len = BIO_get_mem_data(bio, &pem);
	assert_loads_as((const uint8_t *)pem, (size_t)len, der, n);
	BIO_free(bio);
	free(der);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void assert_refused(const uint8_t *buf, size_t len, fleet_err want_e, size_t want_off)
{
	struct fleet_errctx ec = {0};
	X509 *x = (X509 *)1;
	fleet_err e = fleet_ek_cert_load(buf, len, &x, &ec);
	assert_int_equal(e, want_e);
	assert_null(x);
	assert_true(ec.has_offset);
	assert_int_equal(ec.offset, want_off);
	assert_true(ec.detail[0] != '\0');
}

static void test_load_refusals(void **state)
{
	(void)state;
	EVP_PKEY *k;
	X509 *x = leaf_ec(&k);
	size_t n;
	unsigned char *der = mint_der(x, &n);
	uint8_t *buf = malloc(n + 16);
	assert_non_null(buf);
	assert_true(n > 256 && der[1] == 0x82); /* 30 82 LL LL: content at 4 */

	/* Truncated DER: the outer length runs past the end; the offset is
	 * where the missing content starts. */
	assert_refused(der, n / 2, FLEET_E_TRUNCATED, 4);
	/* The outer length claims one byte more than there is. */
	memcpy(buf, der, n);
	buf[3] = (uint8_t)(buf[3] + 1);
	assert_refused(buf, n, FLEET_E_TRUNCATED, 4);
	/* A TCG header whose size is past the end of the input. */
	size_t h = put_nv_header(buf, n);
	memcpy(buf + h, der, n);
	buf[3] = 0x7f, buf[4] = 0xff;
	assert_refused(buf, n + h, FLEET_E_TRUNCATED, 3);
	assert_refused(buf, 4, FLEET_E_TRUNCATED, 0); /* ends inside the header */
	/* A size that covers the second tag but not the whole DER. */
	buf[3] = (uint8_t)((n + 1) >> 8), buf[4] = (uint8_t)(n + 1);
	assert_refused(buf, n + h, FLEET_E_TRUNCATED, h + 4);
	/* A header whose second tag is wrong. */
	h = put_nv_header(buf, n);
	buf[6] = 0x03;
	assert_refused(buf, n + h, FLEET_E_MALFORMED, 5);
	/* A first tag that is not 0x1001. */
	h = put_nv_header(buf, n);
	buf[1] = 0x05;
	assert_refused(buf, n + h, FLEET_E_MALFORMED, 0);
	/* A certificate type other than 0x00 (a full certificate). */
	h = put_nv_header(buf, n);
	buf[2] = 0x01;
	assert_refused(buf, n + h, FLEET_E_MALFORMED, 2);
	/* The six-byte form (no type byte) is not the TCG header. */
	buf[0] = 0x10, buf[1] = 0x01, buf[2] = (uint8_t)(n >> 8), buf[3] = (uint8_t)n;
	buf[4] = 0x10, buf[5] = 0x02;
	memcpy(buf + 6, der, n);
	assert_refused(buf, n + 6, FLEET_E_MALFORMED, 2);
	/* Garbage: not DER, not PEM. */
	static const uint8_t junk[] = "this is not a certificate";
	assert_refused(junk, sizeof(junk) - 1, FLEET_E_MALFORMED, 0);
	/* A well-formed SEQUENCE that is not a certificate. */
	static const uint8_t seq[] = {0x30, 0x03, 0x02, 0x01, 0x05};
	assert_refused(seq, sizeof(seq), FLEET_E_MALFORMED, 0);
	assert_refused(seq, 0, FLEET_E_TRUNCATED, 0);
	free(buf);
	free(der);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* Go's x509.MarshalPKIXPublicKey of the key (rsaEncryption with NULL
 * parameters, named curve and uncompressed point), as OpenSSL writes it
 * for the key itself, not for any certificate: SPIRE's tpm:pub_hash. */
static void go_pub_hash(EVP_PKEY *k, char out[65])
{
	unsigned char *der = NULL, md[32];
	unsigned int n = 0;
	int len = i2d_PUBKEY(k, &der);
	assert_true(len > 0);
	assert_int_equal(EVP_Digest(der, (size_t)len, md, &n, EVP_sha256(), NULL), 1);
	fleet_hex_encode(md, 32, out);
	OPENSSL_free(der);
}

/* id-RSAES-OAEP: OpenSSL 3 will not decode the key, ek_hash and key
 * matching must work anyway, and ek_hash is the key's, not the label's:
 * the same as for the rsaEncryption-labelled certificate of the key. */
static void test_oaep_spki(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_rsa(), *other = mint_key_rsa();
	EVP_PKEY *ca = mint_key_ec();
	struct mint m = {.key = k, .issuer_key = ca, .not_before = NOW - YEAR,
			 .not_after = NOW + YEAR, .oaep_spki = 1, .tcg_san = 1};
	X509 *x = mint_cert(&m);
	TPMT_PUBLIC pub, wrong;
	const char *reason = NULL;
	char got[65], want[65], plain[65];

	assert_int_equal(OBJ_obj2nid(X509_get0_tbs_sigalg(x)->algorithm), NID_ecdsa_with_SHA256);
	assert_null(X509_get0_pubkey(x)); /* the quirk is real */
	ERR_clear_error();
	assert_int_equal(fleet_ek_hash(x, got), FLEET_OK);
	go_pub_hash(k, want);
	assert_string_equal(got, want);
	/* Not the hash of the OAEP-labelled SPKI bytes. */
	expected_hash(x, plain);
	assert_string_not_equal(got, plain);
	/* The same key labelled rsaEncryption, and the TPM public area. */
	struct mint mp = m;
	mp.oaep_spki = 0;
	X509 *xp = mint_cert(&mp);
	assert_int_equal(fleet_ek_hash(xp, plain), FLEET_OK);
	assert_string_equal(plain, want);
	X509_free(xp);
	/* rsaEncryption without its NULL parameters: the same key again. */
	mp.spki_oid = "1.2.840.113549.1.1.1";
	xp = mint_cert(&mp);
	assert_int_equal(fleet_ek_hash(xp, plain), FLEET_OK);
	assert_string_equal(plain, want);
	X509_free(xp);

	mint_tpm_public(k, TPMA_OBJECT_DECRYPT | TPMA_OBJECT_RESTRICTED, &pub);
	uint8_t tpm_hash[32];
	char tpm_hex[65];
	assert_int_equal(fleet_tpm_public_spki_sha256(&pub, tpm_hash), FLEET_OK);
	fleet_hex_encode(tpm_hash, 32, tpm_hex);
	assert_string_equal(tpm_hex, want);
	assert_int_equal(fleet_ek_cert_matches_public(x, &pub, &reason), FLEET_OK);
	mint_tpm_public(other, TPMA_OBJECT_DECRYPT | TPMA_OBJECT_RESTRICTED, &wrong);
	assert_int_equal(fleet_ek_cert_matches_public(x, &wrong, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-key-mismatch");
	/* Same modulus, another exponent: not the same key. */
	pub.parameters.rsaDetail.exponent = 3;
	assert_int_equal(fleet_ek_cert_matches_public(x, &pub, &reason), FLEET_E_VERIFY);
	X509_free(x);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
	EVP_PKEY_free(ca);
}

static void test_matches_public_ecc(void **state)
{
	(void)state;
	EVP_PKEY *k, *other = mint_key_ec(), *rsa = mint_key_rsa();
	X509 *x = leaf_ec(&k);
	TPMT_PUBLIC pub;
	const char *reason = NULL;

	mint_tpm_public(k, TPMA_OBJECT_DECRYPT, &pub);
	assert_int_equal(fleet_ek_cert_matches_public(x, &pub, &reason), FLEET_OK);
	assert_null(reason);
	mint_tpm_public(other, TPMA_OBJECT_DECRYPT, &pub);
	assert_int_equal(fleet_ek_cert_matches_public(x, &pub, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-key-mismatch");
	mint_tpm_public(rsa, TPMA_OBJECT_DECRYPT, &pub);
	assert_int_equal(fleet_ek_cert_matches_public(x, &pub, &reason), FLEET_E_VERIFY);
	X509_free(x);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
	EVP_PKEY_free(rsa);
}

/* A manufacturer: root, intermediate, and a roots directory holding both. */
struct maker {
	EVP_PKEY *root_key, *int_key;
	X509 *root, *inter;
	char *dir;
	struct fleet_ek_roots *roots;
};

static void write_pem_file(const char *dir, const char *name, X509 *x)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
}

static void write_der_file(const char *dir, const char *name, X509 *x)
{
	char path[512];
	size_t n;
	unsigned char *der = mint_der(x, &n);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(der, 1, n, f), n);
	fclose(f);
	free(der);
}

/* inter_nb/inter_na: the intermediate's validity; inter_md its signature. */
static void maker_init(struct maker *mk, time_t inter_nb, time_t inter_na, const EVP_MD *inter_md)
{
	struct fleet_errctx ec = {0};
	static int makers; /* distinct names: no two makers' CAs collide */
	char root_cn[64], int_cn[64];
	memset(mk, 0, sizeof(*mk));
	makers++;
	snprintf(root_cn, sizeof(root_cn), "Mint EK Root %d", makers);
	snprintf(int_cn, sizeof(int_cn), "Mint EK Intermediate %d", makers);
	mk->root_key = mint_key_rsa();
	mk->int_key = mint_key_ec();
	struct mint r = {.key = mk->root_key, .cn = root_cn, .ca = 1,
			 .not_before = NOW - 20 * YEAR, .not_after = NOW + 20 * YEAR};
	mk->root = mint_cert(&r);
	struct mint i = {.key = mk->int_key, .issuer = mk->root, .issuer_key = mk->root_key,
			 .cn = int_cn, .ca = 1, .not_before = inter_nb,
			 .not_after = inter_na, .md = inter_md};
	mk->inter = mint_cert(&i);
	mk->dir = make_temp_dir("ekroots");
	assert_non_null(mk->dir);
	write_pem_file(mk->dir, "root.pem", mk->root);
	write_der_file(mk->dir, "intermediate.cer", mk->inter); /* any name, DER */
	if (fleet_ek_roots_load(mk->dir, &mk->roots, &ec) != FLEET_OK)
		fail_msg("roots: %s", ec.detail);
	assert_int_equal(fleet_ek_roots_count(mk->roots), 2);
}

static void maker_free(struct maker *mk)
{
	fleet_ek_roots_free(mk->roots);
	rm_rf(mk->dir);
	free(mk->dir);
	X509_free(mk->root);
	X509_free(mk->inter);
	EVP_PKEY_free(mk->root_key);
	EVP_PKEY_free(mk->int_key);
}

/* An EK leaf from mk's intermediate (RSA leaf under an EC issuer). */
static X509 *maker_leaf_spki(struct maker *mk, EVP_PKEY *k, time_t nb, time_t na, int oaep)
{
	struct mint m = {.key = k, .issuer = mk->inter, .issuer_key = mk->int_key,
			 .not_before = nb, .not_after = na, .tcg_san = 1, .oaep_spki = oaep};
	return mint_cert(&m);
}

/* Most leaves carry the OAEP label, the hardest case for the chain check. */
static X509 *maker_leaf(struct maker *mk, EVP_PKEY *k, time_t nb, time_t na)
{
	return maker_leaf_spki(mk, k, nb, na, 1);
}

static const char *verify_at(struct maker *mk, X509 *leaf, time_t now)
{
	const char *reason = NULL;
	fleet_err e = fleet_ek_chain_verify(mk->roots, leaf, now, &reason);
	if (e == FLEET_OK) {
		assert_null(reason);
		return "ok";
	}
	assert_int_equal(e, FLEET_E_VERIFY);
	assert_non_null(reason);
	return reason;
}

/* The time rule, first half: notAfter is not enforced. The intermediate
 * expired years ago and so did the leaf; the chain still verifies. */
static void test_chain_expired_accepted(void **state)
{
	(void)state;
	struct maker mk;
	EVP_PKEY *k = mint_key_rsa();
	maker_init(&mk, NOW - 10 * YEAR, NOW - 5 * YEAR, NULL);
	X509 *oaep = maker_leaf(&mk, k, NOW - 9 * YEAR, NOW - 6 * YEAR);
	X509 *leaf = maker_leaf_spki(&mk, k, NOW - 9 * YEAR, NOW - 6 * YEAR, 0);

	assert_string_equal(verify_at(&mk, oaep, NOW), "ok");
	assert_string_equal(verify_at(&mk, oaep, NOW + 50 * YEAR), "ok");
	assert_string_equal(verify_at(&mk, leaf, NOW), "ok");
	/* Plain OpenSSL would refuse it: the rule is ours, not a default. */
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *inter = sk_X509_new_null();
	sk_X509_push(inter, mk.inter);
	X509_STORE_add_cert(st, mk.root);
	X509_STORE_CTX_init(ctx, st, leaf, inter);
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), NOW);
	assert_int_not_equal(X509_verify_cert(ctx), 1);
	assert_int_equal(X509_STORE_CTX_get_error(ctx), X509_V_ERR_CERT_HAS_EXPIRED);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	sk_X509_free(inter);
	ERR_clear_error();
	X509_free(leaf);
	X509_free(oaep);
	EVP_PKEY_free(k);
	maker_free(&mk);
}

/* Second half: notBefore is enforced, for the leaf and the CAs alike. */
static void test_chain_not_yet_valid(void **state)
{
	(void)state;
	struct maker mk;
	EVP_PKEY *k = mint_key_rsa();
	maker_init(&mk, NOW - YEAR, NOW + 10 * YEAR, NULL);
	X509 *future = maker_leaf(&mk, k, NOW + 30 * DAY, NOW + 10 * YEAR);
	X509 *now_leaf = maker_leaf(&mk, k, NOW - DAY, NOW + 10 * YEAR);

	assert_string_equal(verify_at(&mk, future, NOW), "ek-chain-not-yet-valid");
	assert_string_equal(verify_at(&mk, future, NOW + 31 * DAY), "ok");
	assert_string_equal(verify_at(&mk, now_leaf, NOW), "ok");
	/* Before the intermediate existed, though the leaf claims to. */
	X509 *early = maker_leaf(&mk, k, NOW - 2 * YEAR, NOW + YEAR);
	assert_string_equal(verify_at(&mk, early, NOW - 2 * YEAR + DAY),
			    "ek-chain-not-yet-valid");
	X509_free(future);
	X509_free(now_leaf);
	X509_free(early);
	EVP_PKEY_free(k);
	maker_free(&mk);
}

static void test_chain_sha1_accepted_md5_refused(void **state)
{
	(void)state;
	struct maker mk;
	EVP_PKEY *k = mint_key_rsa();
	maker_init(&mk, NOW - YEAR, NOW + YEAR, EVP_sha1());
	X509 *leaf = maker_leaf(&mk, k, NOW - DAY, NOW + YEAR);
	assert_int_equal(X509_get_signature_nid(mk.inter), NID_sha1WithRSAEncryption);
	assert_string_equal(verify_at(&mk, leaf, NOW), "ok");
	X509_free(leaf);
	maker_free(&mk);

	maker_init(&mk, NOW - YEAR, NOW + YEAR, EVP_md5());
	leaf = maker_leaf(&mk, k, NOW - DAY, NOW + YEAR);
	assert_int_equal(X509_get_signature_nid(mk.inter), NID_md5WithRSAEncryption);
	assert_string_equal(verify_at(&mk, leaf, NOW), "ek-chain-signature");
	X509_free(leaf);
	EVP_PKEY_free(k);
	maker_free(&mk);
}

static void test_chain_critical_extensions(void **state)
{
	(void)state;
	struct maker mk;
	EVP_PKEY *k = mint_key_rsa();
	maker_init(&mk, NOW - YEAR, NOW + YEAR, NULL);
	struct mint m = {.key = k, .issuer = mk.inter, .issuer_key = mk.int_key,
			 .not_before = NOW - DAY, .not_after = NOW + YEAR, .tcg_san = 1,
			 .extra_oid = "2.5.29.9", .extra_critical = 1};
	X509 *sda = mint_cert(&m);
	m.extra_oid = "1.3.6.1.4.1.55555.1";
	X509 *unknown = mint_cert(&m);
	m.extra_critical = 0;
	X509 *unknown_noncrit = mint_cert(&m);

	/* TCG subjectDirectoryAttributes marked critical: on our list. */
	assert_string_equal(verify_at(&mk, sda, NOW), "ok");
	/* Anything else critical and unknown is refused, as RFC 5280 says. */
	assert_string_equal(verify_at(&mk, unknown, NOW), "ek-chain-untrusted");
	assert_string_equal(verify_at(&mk, unknown_noncrit, NOW), "ok");
	/* A key OpenSSL cannot read that is not the OAEP quirk: refused,
	 * though the manufacturer signed it. */
	struct mint odd = {.key = k, .issuer = mk.inter, .issuer_key = mk.int_key,
			   .not_before = NOW - DAY, .not_after = NOW + YEAR,
			   .spki_oid = "1.3.6.1.4.1.55555.2"};
	X509 *odd_key = mint_cert(&odd);
	assert_null(X509_get0_pubkey(odd_key));
	assert_string_equal(verify_at(&mk, odd_key, NOW), "ek-cert-unparseable");
	X509_free(odd_key);
	X509_free(sda);
	X509_free(unknown);
	X509_free(unknown_noncrit);
	EVP_PKEY_free(k);
	maker_free(&mk);
}

static void test_chain_refusals(void **state)
{
	(void)state;
	struct maker mk, other;
	EVP_PKEY *k = mint_key_rsa();
	maker_init(&mk, NOW - YEAR, NOW + YEAR, NULL);
	maker_init(&other, NOW - YEAR, NOW + YEAR, NULL);
	X509 *leaf = maker_leaf(&mk, k, NOW - DAY, NOW + YEAR);

	/* Another manufacturer's roots: no path. */
	assert_string_equal(verify_at(&other, leaf, NOW), "ek-chain-untrusted");

	/* A leaf whose signature bytes were altered. */
	size_t n;
	unsigned char *der = mint_der(leaf, &n);
	der[n - 5] ^= 0x01;
	const unsigned char *p = der;
	X509 *bad = d2i_X509(NULL, &p, (long)n);
	assert_non_null(bad);
	assert_string_equal(verify_at(&mk, bad, NOW), "ek-chain-signature");

	/* An "intermediate" that is not a CA cannot issue, even with the
	 * right name, key and keyCertSign. */
	char icn[64];
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(mk.inter), NID_commonName,
					      icn, sizeof(icn)) > 0);
	struct mint nca = {.key = mk.int_key, .issuer = mk.root, .issuer_key = mk.root_key,
			   .cn = icn, .ca = 0, .key_usage = "critical,keyCertSign",
			   .not_before = NOW - YEAR, .not_after = NOW + YEAR};
	X509 *not_ca = mint_cert(&nca);
	char *dir = make_temp_dir("eknotca");
	struct fleet_ek_roots *roots = NULL;
	const char *reason = NULL;
	write_pem_file(dir, "root.pem", mk.root);
	write_pem_file(dir, "inter.pem", not_ca);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, NULL), FLEET_OK);
	assert_int_equal(fleet_ek_chain_verify(roots, leaf, NOW, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-chain-ca-constraint");
	X509 *plain = maker_leaf_spki(&mk, k, NOW - DAY, NOW + YEAR, 0);
	assert_int_equal(fleet_ek_chain_verify(roots, plain, NOW, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-chain-ca-constraint");
	X509_free(plain);

	fleet_ek_roots_free(roots);
	rm_rf(dir);
	free(dir);
	X509_free(not_ca);
	X509_free(bad);
	free(der);
	X509_free(leaf);
	EVP_PKEY_free(k);
	maker_free(&mk);
	maker_free(&other);
}

/* Found in review: the OAEP-leaf path let OpenSSL count pathLen from the
 * issuer up, one level short; and a certificate merely named like its issuer
 * became a trust anchor. */
static void test_path_length_and_lookalike_root(void **state)
{
	(void)state;
	EVP_PKEY *rk = mint_key_rsa(), *ik = mint_key_ec(), *lk = mint_key_rsa();
	EVP_PKEY *other = mint_key_rsa();
	struct mint r = {.key = rk, .cn = "PL0 Root", .ca = 1, .pathlen_set = 1, .pathlen = 0,
			 .not_before = NOW - YEAR, .not_after = NOW + YEAR};
	X509 *root = mint_cert(&r);
	struct mint i = {.key = ik, .issuer = root, .issuer_key = rk, .cn = "PL0 Intermediate",
			 .ca = 1, .not_before = NOW - YEAR, .not_after = NOW + YEAR};
	X509 *inter = mint_cert(&i);
	char *dir = make_temp_dir("ekpathlen");
	struct fleet_ek_roots *roots = NULL;
	const char *reason = NULL;
	write_pem_file(dir, "root.pem", root);
	write_pem_file(dir, "inter.pem", inter);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, NULL), FLEET_OK);
	for (int oaep = 0; oaep <= 1; oaep++) {
		struct mint l = {.key = lk, .issuer = inter, .issuer_key = ik, .tcg_san = 1,
				 .oaep_spki = oaep, .not_before = NOW - DAY,
				 .not_after = NOW + YEAR};
		X509 *leaf = mint_cert(&l);
		assert_int_equal(fleet_ek_chain_verify(roots, leaf, NOW, &reason), FLEET_E_VERIFY);
		assert_string_equal(reason, "ek-chain-ca-constraint");
		X509_free(leaf);
	}
	fleet_ek_roots_free(roots);
	rm_rf(dir);
	free(dir);

	/* Issuer name = subject name, but signed by another key. */
	struct mint f = {.key = rk, .issuer_key = other, .cn = "Not Really A Root", .ca = 1,
			 .not_before = NOW - YEAR, .not_after = NOW + YEAR};
	X509 *fake = mint_cert(&f);
	dir = make_temp_dir("eklookalike");
	write_pem_file(dir, "fake.pem", fake);
	/* Alone it is no root at all ... */
	assert_int_equal(fleet_ek_roots_load(dir, &roots, NULL), FLEET_E_NOT_FOUND);
	/* ... and beside a real (unrelated) root it anchors nothing. */
	write_pem_file(dir, "root.pem", root);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, NULL), FLEET_OK);
	struct mint l = {.key = lk, .issuer = fake, .issuer_key = rk, .tcg_san = 1,
			 .not_before = NOW - DAY, .not_after = NOW + YEAR};
	X509 *leaf = mint_cert(&l);
	assert_int_equal(fleet_ek_chain_verify(roots, leaf, NOW, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "ek-chain-untrusted");
	X509_free(leaf);
	fleet_ek_roots_free(roots);
	rm_rf(dir);
	free(dir);
	X509_free(fake);
	X509_free(inter);
	X509_free(root);
	EVP_PKEY_free(rk);
	EVP_PKEY_free(ik);
	EVP_PKEY_free(lk);
	EVP_PKEY_free(other);
}

static void test_roots_dir_rules(void **state)
{
	(void)state;
	struct maker mk;
	struct fleet_ek_roots *roots = NULL;
	struct fleet_errctx ec = {0};
	char path[512];
	maker_init(&mk, NOW - YEAR, NOW + YEAR, NULL);
	char *dir = make_temp_dir("ekdir");

	/* Empty: nothing to trust. */
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_E_NOT_FOUND);
	assert_null(roots);
	/* Only an intermediate: still no root. */
	write_pem_file(dir, "inter.pem", mk.inter);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_E_NOT_FOUND);
	assert_non_null(strstr(ec.detail, "ek-roots-empty"));
	/* A bundle of both plus the same root again: duplicates dropped. */
	snprintf(path, sizeof(path), "%s/bundle.pem", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	PEM_write_X509(f, mk.inter);
	PEM_write_X509(f, mk.root);
	fclose(f);
	write_pem_file(dir, "root.pem", mk.root);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_OK);
	assert_int_equal(fleet_ek_roots_count(roots), 2);
	fleet_ek_roots_free(roots);
	roots = NULL;
	/* A file that is not a certificate stops the load, naming the file. */
	snprintf(path, sizeof(path), "%s/README", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not a certificate\n", f);
	fclose(f);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "README"));
	assert_null(roots);
	assert_int_equal(fleet_ek_roots_load("/nonexistent/fleet-roots", &roots, &ec),
			 FLEET_E_NOT_FOUND);
	/* errno recorded beside the sentence, not written into it. */
	assert_int_equal(ec.sys_errno, ENOENT);
	assert_string_equal(ec.detail, "cannot open roots directory");
	char text[sizeof(ec.detail) + 80];
	assert_string_equal(fleet_errctx_text(&ec, text, sizeof(text)),
			    "cannot open roots directory: No such file or directory");
	rm_rf(dir);
	free(dir);
	maker_free(&mk);
}

/* Trust anchors are read from the directory itself (lib/file_read.h, as
 * configuration): c_rehash's HASH.0 links to a file beside them are skipped
 * (the file is read under its own name), a link out of the directory and a
 * root others may write are refused. */
static void test_roots_links_and_modes(void **state)
{
	(void)state;
	struct maker mk;
	struct fleet_ek_roots *roots = NULL;
	struct fleet_errctx ec = {0};
	char path[512], out[512];
	maker_init(&mk, NOW - YEAR, NOW + YEAR, NULL);
	char *dir = make_temp_dir("eklinks");
	char *other = make_temp_dir("ekother");
	write_pem_file(dir, "root.pem", mk.root);
	snprintf(path, sizeof(path), "%s/abcd1234.0", dir);
	assert_int_equal(symlink("root.pem", path), 0);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_OK);
	assert_int_equal(fleet_ek_roots_count(roots), 1);
	fleet_ek_roots_free(roots);
	roots = NULL;
	/* A link to a root elsewhere: refused, the load stops. */
	write_pem_file(other, "inter.pem", mk.inter);
	snprintf(out, sizeof(out), "%s/inter.pem", other);
	snprintf(path, sizeof(path), "%s/vendor.pem", dir);
	assert_int_equal(symlink(out, path), 0);
	/* unsafe-permissions with reason symlink, as the file reader says of
	 * a link (lib/file_read.h), not an I/O failure. */
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_E_UNSAFE);
	assert_string_equal(ec.reason, "symlink");
	assert_non_null(strstr(ec.detail, "vendor.pem"));
	assert_non_null(strstr(ec.detail, "symlink"));
	assert_null(roots);
	unlink(path);
	/* A link named like c_rehash's but pointing out of the directory: the
	 * same refusal. */
	snprintf(path, sizeof(path), "%s/ffff0000.0", dir);
	assert_int_equal(symlink(out, path), 0);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_E_UNSAFE);
	assert_string_equal(ec.reason, "symlink");
	assert_null(roots);
	unlink(path);
	/* A root anyone may write. */
	snprintf(path, sizeof(path), "%s/root.pem", dir);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(fleet_ek_roots_load(dir, &roots, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "world-writable"));
	assert_null(roots);
	rm_rf(other);
	free(other);
	rm_rf(dir);
	free(dir);
	maker_free(&mk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_der_and_hash),
		cmocka_unit_test(test_roots_links_and_modes),
		cmocka_unit_test(test_load_nv_header_and_padding),
		cmocka_unit_test(test_load_trailing_bound),
		cmocka_unit_test(test_load_pem),
		cmocka_unit_test(test_load_refusals),
		cmocka_unit_test(test_oaep_spki),
		cmocka_unit_test(test_matches_public_ecc),
		cmocka_unit_test(test_chain_expired_accepted),
		cmocka_unit_test(test_chain_not_yet_valid),
		cmocka_unit_test(test_chain_sha1_accepted_md5_refused),
		cmocka_unit_test(test_chain_critical_extensions),
		cmocka_unit_test(test_chain_refusals),
		cmocka_unit_test(test_path_length_and_lookalike_root),
		cmocka_unit_test(test_roots_dir_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
