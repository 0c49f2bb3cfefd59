/*
 * MakeCredential without a TPM: the KDFs against known answers, the refusals
 * of EKs, names and secrets that must not be used, and the output parsed
 * back and opened in software with the EK's private key (the TPM's side of
 * the protocol, re-done here so every byte of the layout is checked in the
 * sanitizer build too; tests/tpm/test_activate_credential.c opens the same
 * blobs in a real TPM).
 */
#include "tests/testutil.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <tss2/tss2_mu.h>

#include "lib/tpm_alg.h"
#include "lib/tpm_credential.h"

/* The KDFa self-test vector of the TPM 2.0 reference implementation
 * (libtpms src/tpm2/KdfTestData.h: key, label "KDFSELFTESTLABEL", contexts,
 * 160 output bits), one expected output per hash. */
static const uint8_t ref_key[20] = {0x27, 0x1F, 0xA0, 0x8B, 0xBD, 0xC5, 0x06, 0x0E, 0xC3, 0xDF,
				    0xA9, 0x28, 0xFF, 0x9B, 0x73, 0x12, 0x3A, 0x12, 0xDA, 0x0C};
static const uint8_t ref_u[8] = {0xCE, 0x24, 0x4F, 0x39, 0x5D, 0xCA, 0x73, 0x91};
static const uint8_t ref_v[8] = {0xDA, 0x50, 0x40, 0x31, 0xDD, 0xF1, 0x2E, 0x83};

static void kdfa_matches_tpm_reference_selftest(void **state)
{
	(void)state;
	static const struct {
		uint16_t alg;
		uint8_t out[20];
	} v[] = {
		{FLEET_ALG_SHA256, {0xbb, 0x02, 0x59, 0xe1, 0xc8, 0xba, 0x60, 0x7e, 0x6a, 0x2c,
				    0xd7, 0x04, 0xb6, 0x9a, 0x90, 0x2e, 0x9a, 0xde, 0x84, 0xc4}},
		{FLEET_ALG_SHA384, {0x1d, 0xce, 0x70, 0xc9, 0x11, 0x3e, 0xb2, 0xdb, 0xa4, 0x7b,
				    0xd9, 0xcf, 0xc7, 0x2b, 0xf4, 0x6f, 0x45, 0xb0, 0x93, 0x12}},
		{FLEET_ALG_SHA512, {0x8b, 0xe2, 0xc1, 0xb8, 0x5b, 0x78, 0x56, 0x9b, 0x9f, 0xa7,
				    0x59, 0xf5, 0x85, 0x7c, 0x56, 0xd6, 0x84, 0x81, 0x0f, 0xd3}},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t out[20];
		assert_int_equal(fleet_kdfa(v[i].alg, ref_key, sizeof(ref_key), "KDFSELFTESTLABEL",
					    ref_u, sizeof(ref_u), ref_v, sizeof(ref_v), 160, out),
				 FLEET_OK);
		assert_memory_equal(out, v[i].out, sizeof(out));
	}
}

/*
 * The vectors below were computed once with Python 3's hashlib and hmac, an
 * implementation written from Part 1 11.4.10 independently of lib/tpm_kdf.c
 * (the same script reproduces the three reference vectors above):
 *
 *   kdfa: concat(HMAC(key, i.to_bytes(4,'big') + label + b'\0' + u + v
 *                      + bits.to_bytes(4,'big')) for i = 1..)[:bits//8]
 *   kdfe: concat(H(i.to_bytes(4,'big') + z + label + b'\0' + u + v)
 *                for i = 1..)[:bits//8]
 *
 * Inputs: k32 = bytes(range(32)), k48 = bytes(range(48)),
 * name = 000b || aa*32, u = bytes(range(0x40,0x60)),
 * v = bytes(range(0x80,0xa0)), z32 = bytes(range(0x10,0x30)),
 * z48 = bytes(range(0x10,0x40)).
 */
static void seq(uint8_t *out, size_t n, uint8_t from)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(from + i);
}

static void kdfa_matches_independent_vectors(void **state)
{
	(void)state;
	uint8_t k32[32], k48[48], u[32], v[32], name[34], out[80];
	seq(k32, 32, 0);
	seq(k48, 48, 0);
	seq(u, 32, 0x40);
	seq(v, 32, 0x80);
	name[0] = 0x00;
	name[1] = 0x0b;
	memset(name + 2, 0xaa, 32);

	/* The STORAGE key derivation of a credential: 128 bits, name as U. */
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k32, 32, "STORAGE", name, sizeof(name), NULL,
				    0, 128, out),
			 FLEET_OK);
	assert_memory_equal(out, "\x04\x15\xb3\x2b\x6f\x43\x89\x6a\x87\xe7\xb2\x9b\xe8\xf2\xac\x14",
			    16);

	/* The INTEGRITY key of a SHA-384 EK: no contexts, 384 bits. */
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA384, k48, 48, "INTEGRITY", NULL, 0, NULL, 0, 384,
				    out),
			 FLEET_OK);
	assert_memory_equal(out,
			    "\xf3\x3d\x16\x15\xc2\x26\x6b\x2f\xa7\x74\xff\x36\x8d\x6c\xe3\xaf"
			    "\x9d\x8c\x0b\x42\x27\xe5\x7e\xb3\xe2\x8b\x81\x07\x55\x36\x6e\x9a"
			    "\x66\x88\x57\x31\x5a\xe5\x1d\x8d\x7c\xfa\xc9\x2b\xb0\x48\x56\x39",
			    48);

	/* Three HMAC blocks, the last one truncated; both contexts. */
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k32, 32, "ATH", u, 32, v, 32, 640, out),
			 FLEET_OK);
	assert_memory_equal(out,
			    "\x7c\x23\xdf\x2e\xca\x78\x73\x2b\x6f\x15\x14\xa0\x67\x4b\x55\x68"
			    "\x1d\xf3\xb8\xcd\xb1\xf8\x87\x55\x8a\xeb\xb2\x33\xcd\xd6\x2f\x6e"
			    "\x86\xf1\x8f\xf2\x2c\x0b\x5d\xfa\xa6\x17\x38\xfb\x19\xe3\x9e\x08"
			    "\xe2\xa2\x78\x9e\x79\x33\xcc\x8b\x13\x02\x7f\x85\x20\xd5\xcf\x4e"
			    "\x42\xc6\x96\x5c\x6d\x3d\x49\x0b\x7b\x73\x14\xca\xcd\x57\x55\x90",
			    80);

	/* Empty key and no label: the label contributes its single 0x00. */
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, NULL, 0, NULL, NULL, 0, NULL, 0, 256, out),
			 FLEET_OK);
	assert_memory_equal(out,
			    "\x7b\x49\x8f\xf2\x91\xf1\x59\x26\x82\x62\x15\x76\xf6\xed\x01\x4e"
			    "\x16\x6f\xe6\x18\x10\xa5\x6d\x03\x9c\x76\x5a\x59\xee\x98\xc0\xc9",
			    32);
	uint8_t again[32];
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, NULL, 0, "", NULL, 0, NULL, 0, 256, again),
			 FLEET_OK);
	assert_memory_equal(out, again, 32);
}

static void kdfe_matches_independent_vectors(void **state)
{
	(void)state;
	uint8_t z32[32], z48[48], u[32], v[32], u48[48], v48[48], out[65];
	seq(z32, 32, 0x10);
	seq(z48, 48, 0x10);
	seq(u, 32, 0x40);
	seq(v, 32, 0x80);
	seq(u48, 48, 0);
	seq(v48, 48, 48);

	/* A P-256 EK's seed: Z, "IDENTITY", ephemeral x, EK x, 256 bits. */
	assert_int_equal(fleet_kdfe(FLEET_ALG_SHA256, z32, 32, "IDENTITY", u, 32, v, 32, 256, out),
			 FLEET_OK);
	assert_memory_equal(out,
			    "\xfc\xfb\x1b\x11\x1c\xa6\xf1\xd3\x58\x2b\x11\x3a\xbe\x95\xc7\xd7"
			    "\xcb\x60\x2e\x44\x5c\xf8\xf3\x16\x15\x50\x19\x33\xef\xb2\x31\x12",
			    32);

	/* A P-384 EK's seed (SHA-384, 384 bits). */
	assert_int_equal(fleet_kdfe(FLEET_ALG_SHA384, z48, 48, "IDENTITY", u48, 48, v48, 48, 384,
				    out),
			 FLEET_OK);
	assert_memory_equal(out,
			    "\xf9\xd4\xb7\x78\x55\xed\x7c\x74\x64\x7c\x6a\x45\x7a\x11\xef\x9f"
			    "\x01\x0b\xf2\x1f\x3c\x94\x7d\xa2\x2a\x01\x95\x66\xbb\x03\x19\x69"
			    "\x21\xe2\xf9\xff\x3d\xf8\x96\xf5\x24\xaf\x6b\xb2\xd1\x0c\x74\x98",
			    48);

	/* Three hash blocks, the last truncated to one byte; no PartyVInfo. */
	assert_int_equal(fleet_kdfe(FLEET_ALG_SHA256, z32, 32, "SECRET", u, 32, NULL, 0, 520, out),
			 FLEET_OK);
	assert_memory_equal(out,
			    "\x8e\xf7\x0a\x5c\xf4\x75\x82\x52\x12\x84\xb7\x27\x81\x65\x78\xc2"
			    "\x1c\x31\x3e\x75\x81\x7a\x0d\xf3\xed\x41\xd4\x69\x9e\x06\x1a\xf6"
			    "\xf9\xfb\xaf\x18\x78\x26\xaa\x7a\x39\x9f\x1e\x3b\x36\x4d\x35\x96"
			    "\xde\xfa\x8a\xae\x0c\x02\x20\x0b\x4e\x4a\xd5\x7d\xb8\xb3\x3d\x11"
			    "\x69",
			    65);
}

static void kdfs_refuse_bad_arguments(void **state)
{
	(void)state;
	uint8_t k[32] = {1}, out[64];
	/* Output sizes: none, partial bytes (the TPM's masking is not
	 * implemented, so it must not be silently approximated), absurd. */
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k, 32, "L", NULL, 0, NULL, 0, 0, out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k, 32, "L", NULL, 0, NULL, 0, 127, out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k, 32, "L", NULL, 0, NULL, 0, 1u << 20, out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_kdfe(FLEET_ALG_SHA256, k, 32, "L", NULL, 0, NULL, 0, 12, out),
			 FLEET_E_INVALID_ARG);
	/* A length without bytes behind it. */
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, NULL, 5, "L", NULL, 0, NULL, 0, 128, out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k, 32, "L", NULL, 3, NULL, 0, 128, out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_kdfe(FLEET_ALG_SHA256, k, 32, "L", NULL, 0, NULL, 9, 128, out),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_kdfa(FLEET_ALG_SHA256, k, 32, "L", NULL, 0, NULL, 0, 128, NULL),
			 FLEET_E_INVALID_ARG);
	/* An empty shared secret would derive a public value. */
	assert_int_equal(fleet_kdfe(FLEET_ALG_SHA256, k, 0, "L", NULL, 0, NULL, 0, 128, out),
			 FLEET_E_INVALID_ARG);
	/* A hash fleetd does not know. */
	assert_int_equal(fleet_kdfa(0x0099, k, 32, "L", NULL, 0, NULL, 0, 128, out),
			 FLEET_E_UNSUPPORTED);
	assert_int_equal(fleet_kdfe(TPM2_ALG_NULL, k, 32, "L", NULL, 0, NULL, 0, 128, out),
			 FLEET_E_UNSUPPORTED);
}

/* ---- MakeCredential ---------------------------------------------------- */

/* An EK public area around a fresh software key, from the TCG templates:
 * L-1 (RSA-2048, SHA-256, AES-128), L-2 (P-256, SHA-256, AES-128) and the
 * high-range P-384 (SHA-384, AES-256). */
static void ek_common(TPMT_PUBLIC *p, uint16_t name_alg)
{
	memset(p, 0, sizeof(*p));
	p->nameAlg = name_alg;
	p->objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			      TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_ADMINWITHPOLICY |
			      TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT;
}

static void bn_out(const EVP_PKEY *k, const char *param, uint8_t *out, size_t len)
{
	BIGNUM *bn = NULL;
	assert_int_equal(EVP_PKEY_get_bn_param(k, param, &bn), 1);
	assert_int_equal(BN_bn2binpad(bn, out, (int)len), (int)len);
	BN_free(bn);
}

static EVP_PKEY *rsa_ek_sized(TPMT_PUBLIC *p, unsigned bits, uint16_t name_alg,
			      uint16_t aes_bits)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
	assert_non_null(k);
	ek_common(p, name_alg);
	p->type = TPM2_ALG_RSA;
	p->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_AES;
	p->parameters.rsaDetail.symmetric.keyBits.aes = aes_bits;
	p->parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CFB;
	p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
	p->parameters.rsaDetail.keyBits = (TPMI_RSA_KEY_BITS)bits;
	p->unique.rsa.size = (UINT16)(bits / 8);
	bn_out(k, OSSL_PKEY_PARAM_RSA_N, p->unique.rsa.buffer, bits / 8);
	return k;
}

static EVP_PKEY *rsa_ek(TPMT_PUBLIC *p)
{
	return rsa_ek_sized(p, 2048, TPM2_ALG_SHA256, 128);
}

static EVP_PKEY *ecc_ek(TPMT_PUBLIC *p, TPMI_ECC_CURVE curve)
{
	int p384 = curve == TPM2_ECC_NIST_P384;
	size_t cb = p384 ? 48 : 32;
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", p384 ? "P-384" : "P-256");
	assert_non_null(k);
	ek_common(p, p384 ? TPM2_ALG_SHA384 : TPM2_ALG_SHA256);
	p->type = TPM2_ALG_ECC;
	p->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
	p->parameters.eccDetail.symmetric.keyBits.aes = p384 ? 256 : 128;
	p->parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
	p->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
	p->parameters.eccDetail.curveID = curve;
	p->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
	p->unique.ecc.x.size = p->unique.ecc.y.size = (UINT16)cb;
	bn_out(k, OSSL_PKEY_PARAM_EC_PUB_X, p->unique.ecc.x.buffer, cb);
	bn_out(k, OSSL_PKEY_PARAM_EC_PUB_Y, p->unique.ecc.y.buffer, cb);
	return k;
}

/* An AK-like name: SHA-256 alg id and a digest. */
static const uint8_t ak_name[34] = {0x00, 0x0b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
				    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
				    32};

/* The seed the TPM recovers from the encrypted secret with the EK's
 * private key (Part 1, 24.2 and C.6.1). */
static void recover_seed(const TPMT_PUBLIC *ek, EVP_PKEY *priv, const TPM2B_ENCRYPTED_SECRET *es,
			 uint8_t *seed, size_t dsize)
{
	const char *md = EVP_MD_get0_name(fleet_hash_alg_md(ek->nameAlg));
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, priv, NULL);
	assert_non_null(ctx);
	if (ek->type == TPM2_ALG_RSA) {
		unsigned char *label = OPENSSL_memdup("IDENTITY", 9);
		uint8_t out[512];
		size_t outlen = sizeof(out);
		assert_int_equal(EVP_PKEY_decrypt_init(ctx), 1);
		assert_true(EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) > 0);
		assert_true(EVP_PKEY_CTX_set_rsa_oaep_md_name(ctx, md, NULL) > 0);
		assert_true(EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, md, NULL) > 0);
		assert_true(EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, label, 9) > 0);
		assert_int_equal(EVP_PKEY_decrypt(ctx, out, &outlen, es->secret, es->size), 1);
		assert_int_equal(outlen, dsize);
		memcpy(seed, out, dsize);
	} else {
		TPMS_ECC_POINT q;
		size_t off = 0, cb = ek->unique.ecc.x.size, zlen = 0;
		uint8_t pt[1 + 2 * 48] = {0x04}, z[48];
		assert_int_equal(Tss2_MU_TPMS_ECC_POINT_Unmarshal(es->secret, es->size, &off, &q),
				 TSS2_RC_SUCCESS);
		assert_int_equal(off, es->size);
		/* Both coordinates padded to the curve size. */
		assert_int_equal(q.x.size, cb);
		assert_int_equal(q.y.size, cb);
		memcpy(pt + 1, q.x.buffer, cb);
		memcpy(pt + 1 + cb, q.y.buffer, cb);
		OSSL_PARAM params[3] = {
			OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
							 cb == 48 ? "P-384" : "P-256", 0),
			OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * cb),
			OSSL_PARAM_construct_end()};
		EVP_PKEY_CTX *fc = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
		EVP_PKEY *eph = NULL;
		assert_int_equal(EVP_PKEY_fromdata_init(fc), 1);
		assert_int_equal(EVP_PKEY_fromdata(fc, &eph, EVP_PKEY_PUBLIC_KEY, params), 1);
		assert_int_equal(EVP_PKEY_derive_init(ctx), 1);
		assert_int_equal(EVP_PKEY_derive_set_peer_ex(ctx, eph, 1), 1); /* on the curve */
		zlen = sizeof(z);
		assert_int_equal(EVP_PKEY_derive(ctx, z, &zlen), 1);
		assert_int_equal(fleet_kdfe(ek->nameAlg, z, zlen, "IDENTITY", q.x.buffer, cb,
					    ek->unique.ecc.x.buffer, cb, (uint32_t)dsize * 8, seed),
				 FLEET_OK);
		EVP_PKEY_free(eph);
		EVP_PKEY_CTX_free(fc);
	}
	EVP_PKEY_CTX_free(ctx);
}

/* TPM2_ActivateCredential in software: parse both structures back (whole
 * buffers), recover the seed, check the outer HMAC over encIdentity || name,
 * decrypt, and return the secret's length (its bytes in out). */
static size_t open_blob(const TPMT_PUBLIC *ek, EVP_PKEY *priv, const struct fleet_buf *idb,
			const struct fleet_buf *esb, const uint8_t *name, size_t name_len,
			uint8_t *out)
{
	TPM2B_ID_OBJECT id;
	TPM2B_ENCRYPTED_SECRET es;
	TPM2B_DIGEST outer, secret;
	size_t off = 0, dsize = fleet_hash_alg_size(ek->nameAlg);
	const TPMT_SYM_DEF_OBJECT *sym = &ek->parameters.asymDetail.symmetric;
	uint8_t seed[64], hkey[64], skey[32], mac[64], plain[2 + 64];
	unsigned int maclen = 0;
	int n = 0;

	assert_int_equal(Tss2_MU_TPM2B_ID_OBJECT_Unmarshal(idb->data, idb->len, &off, &id),
			 TSS2_RC_SUCCESS);
	assert_int_equal(off, idb->len);
	off = 0;
	assert_int_equal(Tss2_MU_TPM2B_ENCRYPTED_SECRET_Unmarshal(esb->data, esb->len, &off, &es),
			 TSS2_RC_SUCCESS);
	assert_int_equal(off, esb->len);
	recover_seed(ek, priv, &es, seed, dsize);

	off = 0;
	assert_int_equal(Tss2_MU_TPM2B_DIGEST_Unmarshal(id.credential, id.size, &off, &outer),
			 TSS2_RC_SUCCESS);
	assert_int_equal(outer.size, dsize);
	const uint8_t *enc = id.credential + off;
	size_t enc_len = id.size - off;
	assert_true(enc_len >= 2 && enc_len <= sizeof(plain));

	assert_int_equal(fleet_kdfa(ek->nameAlg, seed, dsize, "INTEGRITY", NULL, 0, NULL, 0,
				    (uint32_t)dsize * 8, hkey),
			 FLEET_OK);
	uint8_t mac_in[sizeof(plain) + 68];
	memcpy(mac_in, enc, enc_len);
	memcpy(mac_in + enc_len, name, name_len);
	assert_non_null(HMAC(fleet_hash_alg_md(ek->nameAlg), hkey, (int)dsize, mac_in,
			     enc_len + name_len, mac, &maclen));
	assert_memory_equal(mac, outer.buffer, dsize);

	assert_int_equal(fleet_kdfa(ek->nameAlg, seed, dsize, "STORAGE", name, name_len, NULL, 0,
				    sym->keyBits.aes, skey),
			 FLEET_OK);
	static const uint8_t iv[16];
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	assert_int_equal(EVP_DecryptInit_ex(c, sym->keyBits.aes == 256 ? EVP_aes_256_cfb128()
								       : EVP_aes_128_cfb128(),
					    NULL, skey, iv),
			 1);
	assert_int_equal(EVP_DecryptUpdate(c, plain, &n, enc, (int)enc_len), 1);
	assert_int_equal((size_t)n, enc_len);
	EVP_CIPHER_CTX_free(c);
	off = 0;
	assert_int_equal(Tss2_MU_TPM2B_DIGEST_Unmarshal(plain, enc_len, &off, &secret),
			 TSS2_RC_SUCCESS);
	assert_int_equal(off, enc_len);
	memcpy(out, secret.buffer, secret.size);
	return secret.size;
}

static void made_blob_opens_in_software(const TPMT_PUBLIC *ek, EVP_PKEY *priv,
					size_t expect_es_len)
{
	size_t dsize = fleet_hash_alg_size(ek->nameAlg);
	uint8_t secret[64], got[64];
	for (size_t i = 0; i < dsize; i++)
		secret[i] = (uint8_t)(0xA0 + i);
	/* The shortest and the longest secret the EK allows. */
	size_t lens[2] = {1, dsize};
	for (size_t l = 0; l < 2; l++) {
		struct fleet_buf id, es;
		fb_init(&id);
		fb_init(&es);
		assert_int_equal(fleet_make_credential(ek, secret, lens[l], ak_name,
						       sizeof(ak_name), &id, &es, NULL),
				 FLEET_OK);
		/* TPM2B(TPM2B(outerHMAC) || TPM2B(secret) encrypted) */
		assert_int_equal(id.len, 2 + (2 + dsize) + (2 + lens[l]));
		assert_int_equal(es.len, expect_es_len);
		assert_int_equal(open_blob(ek, priv, &id, &es, ak_name, sizeof(ak_name), got),
				 lens[l]);
		assert_memory_equal(got, secret, lens[l]);
		fb_free(&id);
		fb_free(&es);
	}
}

static void rsa_blob_parses_and_opens(void **state)
{
	(void)state;
	TPMT_PUBLIC ek;
	EVP_PKEY *k = rsa_ek(&ek);
	made_blob_opens_in_software(&ek, k, 2 + 256); /* one OAEP block */
	EVP_PKEY_free(k);
	/* The high-range RSA-3072 template: OAEP with SHA-384, AES-256. */
	k = rsa_ek_sized(&ek, 3072, TPM2_ALG_SHA384, 256);
	made_blob_opens_in_software(&ek, k, 2 + 384);
	EVP_PKEY_free(k);
}

static void ecc_blobs_parse_and_open(void **state)
{
	(void)state;
	TPMT_PUBLIC ek;
	EVP_PKEY *k = ecc_ek(&ek, TPM2_ECC_NIST_P256);
	made_blob_opens_in_software(&ek, k, 2 + (2 + 32) + (2 + 32)); /* a TPMS_ECC_POINT */
	EVP_PKEY_free(k);
	k = ecc_ek(&ek, TPM2_ECC_NIST_P384);
	made_blob_opens_in_software(&ek, k, 2 + (2 + 48) + (2 + 48));
	EVP_PKEY_free(k);
}

/* Two calls never reuse a seed: the same secret encrypts differently. */
static void each_blob_has_a_fresh_seed(void **state)
{
	(void)state;
	TPMT_PUBLIC ek;
	EVP_PKEY *k = ecc_ek(&ek, TPM2_ECC_NIST_P256);
	struct fleet_buf id1, es1, id2, es2;
	fb_init(&id1);
	fb_init(&es1);
	fb_init(&id2);
	fb_init(&es2);
	assert_int_equal(fleet_make_credential(&ek, (const uint8_t *)"code", 4, ak_name,
					       sizeof(ak_name), &id1, &es1, NULL),
			 FLEET_OK);
	assert_int_equal(fleet_make_credential(&ek, (const uint8_t *)"code", 4, ak_name,
					       sizeof(ak_name), &id2, &es2, NULL),
			 FLEET_OK);
	assert_int_equal(id1.len, id2.len);
	assert_memory_not_equal(id1.data, id2.data, id1.len);
	assert_memory_not_equal(es1.data, es2.data, es1.len);
	fb_free(&id1);
	fb_free(&es1);
	fb_free(&id2);
	fb_free(&es2);
	EVP_PKEY_free(k);
}

/* "Appends": what the caller already put in the buffers stays in front. */
static void appends_after_existing_bytes(void **state)
{
	(void)state;
	TPMT_PUBLIC ek;
	EVP_PKEY *k = ecc_ek(&ek, TPM2_ECC_NIST_P256);
	struct fleet_buf id, es;
	fb_init(&id);
	fb_init(&es);
	assert_int_equal(fb_put(&id, "ID", 2), FLEET_OK);
	assert_int_equal(fb_put(&es, "ES", 2), FLEET_OK);
	assert_int_equal(fleet_make_credential(&ek, (const uint8_t *)"s", 1, ak_name,
					       sizeof(ak_name), &id, &es, NULL),
			 FLEET_OK);
	assert_memory_equal(id.data, "ID", 2);
	assert_memory_equal(es.data, "ES", 2);
	/* The TPM2B size fields name exactly the bytes that follow. */
	assert_int_equal((size_t)(id.data[2] << 8 | id.data[3]), id.len - 4);
	assert_int_equal((size_t)(es.data[2] << 8 | es.data[3]), es.len - 4);
	fb_free(&id);
	fb_free(&es);
	EVP_PKEY_free(k);
}

static fleet_err make_into(const TPMT_PUBLIC *ek, const uint8_t *secret, size_t len,
			   const uint8_t *name, size_t name_len)
{
	struct fleet_buf id, es;
	fb_init(&id);
	fb_init(&es);
	fleet_err e = fleet_make_credential(ek, secret, len, name, name_len, &id, &es, NULL);
	/* A refusal leaves nothing behind for a caller to send. */
	if (e != FLEET_OK) {
		assert_int_equal(id.len, 0);
		assert_int_equal(es.len, 0);
	}
	fb_free(&id);
	fb_free(&es);
	return e;
}

static void refuses_bad_secret_and_name(void **state)
{
	(void)state;
	TPMT_PUBLIC ek;
	EVP_PKEY *k = ecc_ek(&ek, TPM2_ECC_NIST_P256);
	uint8_t s[65] = {0}, name[70];
	struct fleet_buf id, es;
	fb_init(&id);
	fb_init(&es);
	assert_int_equal(make_into(&ek, s, 0, ak_name, sizeof(ak_name)), FLEET_E_INVALID_ARG);
	assert_int_equal(make_into(&ek, s, 32, ak_name, sizeof(ak_name)), FLEET_OK);
	/* Longer than the SHA-256 EK's digest: the TPM would refuse it. */
	assert_int_equal(make_into(&ek, s, 33, ak_name, sizeof(ak_name)), FLEET_E_INVALID_ARG);
	assert_int_equal(make_into(&ek, s, 65, ak_name, sizeof(ak_name)), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_make_credential(NULL, s, 1, ak_name, sizeof(ak_name), &id, &es, NULL),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_make_credential(&ek, NULL, 1, ak_name, sizeof(ak_name), &id, &es, NULL),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_make_credential(&ek, s, 1, NULL, 34, &id, &es, NULL),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_make_credential(&ek, s, 1, ak_name, sizeof(ak_name), NULL, &es, NULL),
			 FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_make_credential(&ek, s, 1, ak_name, sizeof(ak_name), &id, NULL, NULL),
			 FLEET_E_INVALID_ARG);

	/* Names: the length must be 2 + the digest size of the name's alg. */
	memcpy(name, ak_name, sizeof(ak_name));
	assert_int_equal(make_into(&ek, s, 1, name, 33), FLEET_E_MALFORMED);
	assert_int_equal(make_into(&ek, s, 1, name, 35), FLEET_E_MALFORMED);
	assert_int_equal(make_into(&ek, s, 1, name, 1), FLEET_E_MALFORMED);
	assert_int_equal(make_into(&ek, s, 1, name, 0), FLEET_E_MALFORMED);
	/* A 4-byte handle "name" (a permanent entity) is not an object. */
	assert_int_equal(make_into(&ek, s, 1, (const uint8_t *)"\x40\x00\x00\x01", 4),
			 FLEET_E_UNSUPPORTED);
	name[1] = 0x0c; /* SHA-384 with a 32-byte digest */
	assert_int_equal(make_into(&ek, s, 1, name, 34), FLEET_E_MALFORMED);
	memset(name + 2, 7, 48);
	assert_int_equal(make_into(&ek, s, 1, name, 50), FLEET_OK);
	name[1] = 0x99; /* no such hash */
	assert_int_equal(make_into(&ek, s, 1, name, 34), FLEET_E_UNSUPPORTED);
	fb_free(&id);
	fb_free(&es);
	EVP_PKEY_free(k);
}

/* fleet_make_credential on ek, its code and reason; and
 * fleet_credential_ek_supported (the rule intake applies) must say the same:
 * the same code and the very same reason. */
static fleet_err make_why(const TPMT_PUBLIC *ek, const char **reason)
{
	const uint8_t s[1] = {1};
	const char *rule_reason = "unset";
	struct fleet_buf id, es;
	fb_init(&id);
	fb_init(&es);
	*reason = "unset";
	fleet_err e = fleet_make_credential(ek, s, 1, ak_name, sizeof(ak_name), &id, &es, reason);
	if (e != FLEET_OK) {
		assert_int_equal(id.len, 0);
		assert_int_equal(es.len, 0);
	}
	fb_free(&id);
	fb_free(&es);
	fleet_err rule = fleet_credential_ek_supported(ek, &rule_reason);
	assert_int_equal(rule, e);
	if (*reason)
		assert_string_equal(rule_reason, *reason);
	else
		assert_null(rule_reason);
	return e;
}

/* Each EK mutation that makes the key one the TPM would not (or should
 * not) use for credential activation, with its stable reason. */
static void refuses_unusable_eks(void **state)
{
	(void)state;
	TPMT_PUBLIC rsa, rsa3072, ecc, ecc384, t;
	EVP_PKEY *kr = rsa_ek(&rsa), *ke = ecc_ek(&ecc, TPM2_ECC_NIST_P256);
	EVP_PKEY *k3 = ecc_ek(&ecc384, TPM2_ECC_NIST_P384);
	EVP_PKEY *kr3 = rsa_ek_sized(&rsa3072, 3072, TPM2_ALG_SHA384, 256);
	const char *why;
#define EXPECT(base, mutation, code, reason)                                                  \
	do {                                                                                  \
		t = base;                                                                     \
		mutation;                                                                     \
		assert_int_equal(make_why(&t, &why), code);                                   \
		if (reason)                                                                   \
			assert_string_equal(why, reason);                                     \
		else                                                                          \
			assert_null(why);                                                     \
	} while (0)
	/* The unmutated keys are accepted, so each refusal is the mutation's. */
	EXPECT(rsa, (void)0, FLEET_OK, NULL);
	EXPECT(rsa3072, (void)0, FLEET_OK, NULL);
	EXPECT(ecc, (void)0, FLEET_OK, NULL);
	EXPECT(ecc384, (void)0, FLEET_OK, NULL);
	/* The other templates' choices within the rule: SHA-512, AES-256. */
	EXPECT(ecc, t.nameAlg = TPM2_ALG_SHA512, FLEET_OK, NULL);
	EXPECT(rsa, t.parameters.rsaDetail.symmetric.keyBits.aes = 256, FLEET_OK, NULL);

	/* Not a storage key. */
	EXPECT(rsa, t.objectAttributes &= ~TPMA_OBJECT_RESTRICTED, FLEET_E_UNSUPPORTED,
	       "ek-not-restricted");
	EXPECT(ecc, t.objectAttributes &= ~TPMA_OBJECT_DECRYPT, FLEET_E_UNSUPPORTED,
	       "ek-not-decrypt");
	EXPECT(ecc, t.objectAttributes |= TPMA_OBJECT_SIGN_ENCRYPT, FLEET_E_UNSUPPORTED,
	       "ek-sign-set");
	/* Key types and sizes. */
	EXPECT(rsa, t.type = TPM2_ALG_KEYEDHASH, FLEET_E_UNSUPPORTED, "ek-key-unsupported");
	EXPECT(rsa, t.parameters.rsaDetail.keyBits = 1024, FLEET_E_UNSUPPORTED,
	       "ek-key-unsupported");
	/* Exponents: 0 means 65537 and 65537 may be spelled out; e = 1 would
	 * leave the seed readable by anyone, e = 3 is in no EK template. */
	EXPECT(rsa, t.parameters.rsaDetail.exponent = 65537, FLEET_OK, NULL);
	EXPECT(rsa, t.parameters.rsaDetail.exponent = 1, FLEET_E_UNSUPPORTED,
	       "ek-key-unsupported");
	EXPECT(rsa, t.parameters.rsaDetail.exponent = 3, FLEET_E_UNSUPPORTED,
	       "ek-key-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.curveID = TPM2_ECC_NIST_P521, FLEET_E_UNSUPPORTED,
	       "ek-key-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.curveID = TPM2_ECC_BN_P256, FLEET_E_UNSUPPORTED,
	       "ek-key-unsupported");
	/* nameAlg: SHA-1, SM3 and unknown algorithms protect nothing fleetd
	 * trusts. */
	EXPECT(rsa, t.nameAlg = TPM2_ALG_SHA1, FLEET_E_UNSUPPORTED, "ek-name-alg-unsupported");
	EXPECT(rsa, t.nameAlg = TPM2_ALG_SM3_256, FLEET_E_UNSUPPORTED,
	       "ek-name-alg-unsupported");
	EXPECT(ecc, t.nameAlg = TPM2_ALG_SHA1, FLEET_E_UNSUPPORTED, "ek-name-alg-unsupported");
	EXPECT(ecc384, t.nameAlg = TPM2_ALG_SM3_256, FLEET_E_UNSUPPORTED,
	       "ek-name-alg-unsupported");
	EXPECT(ecc, t.nameAlg = TPM2_ALG_NULL, FLEET_E_UNSUPPORTED, "ek-name-alg-unsupported");
	/* Symmetric: only AES-128/256 in CFB. */
	EXPECT(rsa, t.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL,
	       FLEET_E_UNSUPPORTED, "ek-symmetric-unsupported");
	EXPECT(rsa, t.parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CTR,
	       FLEET_E_UNSUPPORTED, "ek-symmetric-unsupported");
	EXPECT(rsa, t.parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CBC,
	       FLEET_E_UNSUPPORTED, "ek-symmetric-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL,
	       FLEET_E_UNSUPPORTED, "ek-symmetric-unsupported");
	EXPECT(ecc384, t.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CTR,
	       FLEET_E_UNSUPPORTED, "ek-symmetric-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.symmetric.keyBits.aes = 192, FLEET_E_UNSUPPORTED,
	       "ek-symmetric-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_SM4,
	       FLEET_E_UNSUPPORTED, "ek-symmetric-unsupported");
	/* A storage key has no scheme of its own. */
	EXPECT(rsa, t.parameters.rsaDetail.scheme.scheme = TPM2_ALG_OAEP, FLEET_E_UNSUPPORTED,
	       "ek-scheme-unsupported");
	EXPECT(rsa3072, t.parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSAES,
	       FLEET_E_UNSUPPORTED, "ek-scheme-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDH, FLEET_E_UNSUPPORTED,
	       "ek-scheme-unsupported");
	EXPECT(ecc, t.parameters.eccDetail.kdf.scheme = TPM2_ALG_KDF2, FLEET_E_UNSUPPORTED,
	       "ek-kdf-unsupported");
	/* Sizes that contradict the declared key. */
	EXPECT(rsa, t.unique.rsa.size = 255, FLEET_E_MALFORMED, "ek-public-malformed");
	EXPECT(rsa, t.unique.rsa.buffer[0] = 0x01, FLEET_E_MALFORMED, "ek-public-malformed");
	EXPECT(rsa, t.parameters.rsaDetail.keyBits = 3072, FLEET_E_MALFORMED,
	       "ek-public-malformed");
	EXPECT(rsa, t.unique.rsa.buffer[255] &= 0xfe, FLEET_E_MALFORMED, "ek-public-malformed");
	EXPECT(ecc, t.unique.ecc.x.size = 33, FLEET_E_MALFORMED, "ek-public-malformed");
	EXPECT(ecc, t.unique.ecc.y.size = 0, FLEET_E_MALFORMED, "ek-public-malformed");
	EXPECT(ecc384, t.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256, FLEET_E_MALFORMED,
	       "ek-public-malformed");
	/* A point that is not on the curve. */
	EXPECT(ecc, t.unique.ecc.y.buffer[31] ^= 1, FLEET_E_MALFORMED, "ek-public-malformed");
	EXPECT(ecc384, t.unique.ecc.x.buffer[0] ^= 0x80, FLEET_E_MALFORMED,
	       "ek-public-malformed");
	/* A P-256 point presented as a P-384 key (sizes fit, curve does not). */
	EXPECT(ecc, t.parameters.eccDetail.curveID = TPM2_ECC_NIST_P384, FLEET_E_MALFORMED,
	       "ek-public-malformed");
#undef EXPECT
	assert_int_equal(fleet_credential_ek_supported(NULL, &why), FLEET_E_INVALID_ARG);
	assert_null(why);
	assert_int_equal(fleet_credential_ek_supported(&rsa, NULL), FLEET_OK);
	EVP_PKEY_free(kr);
	EVP_PKEY_free(kr3);
	EVP_PKEY_free(ke);
	EVP_PKEY_free(k3);
}

/* Refusals that are not the EK's leave the reason NULL: a caller must not
 * blame the machine's EK for its own bad arguments. */
static void non_ek_refusals_have_no_reason(void **state)
{
	(void)state;
	TPMT_PUBLIC ek;
	EVP_PKEY *k = rsa_ek(&ek);
	uint8_t s[33] = {0};
	const char *why = "unset";
	struct fleet_buf id, es;
	fb_init(&id);
	fb_init(&es);
	assert_int_equal(fleet_make_credential(&ek, s, 33, ak_name, sizeof(ak_name), &id, &es,
					       &why),
			 FLEET_E_INVALID_ARG);
	assert_null(why);
	why = "unset";
	assert_int_equal(fleet_make_credential(&ek, s, 1, ak_name, 33, &id, &es, &why),
			 FLEET_E_MALFORMED);
	assert_null(why);
	assert_int_equal(id.len, 0);
	assert_int_equal(es.len, 0);
	fb_free(&id);
	fb_free(&es);
	EVP_PKEY_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kdfa_matches_tpm_reference_selftest),
		cmocka_unit_test(kdfa_matches_independent_vectors),
		cmocka_unit_test(kdfe_matches_independent_vectors),
		cmocka_unit_test(kdfs_refuse_bad_arguments),
		cmocka_unit_test(rsa_blob_parses_and_opens),
		cmocka_unit_test(ecc_blobs_parse_and_open),
		cmocka_unit_test(each_blob_has_a_fresh_seed),
		cmocka_unit_test(appends_after_existing_bytes),
		cmocka_unit_test(refuses_bad_secret_and_name),
		cmocka_unit_test(refuses_unusable_eks),
		cmocka_unit_test(non_ek_refusals_have_no_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
