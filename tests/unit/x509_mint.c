/* x509_mint.c: see x509_mint.h. Aborts on an OpenSSL failure: a test that
 * cannot build its input has nothing to say. */
#include "tests/unit/x509_mint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static void must(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "x509_mint: %s failed\n", what);
		ERR_print_errors_fp(stderr);
		abort();
	}
}

EVP_PKEY *mint_key_ec(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	must(k != NULL, "EVP_EC_gen");
	return k;
}

EVP_PKEY *mint_key_rsa(void)
{
	EVP_PKEY *k = EVP_RSA_gen(2048);
	must(k != NULL, "EVP_RSA_gen");
	return k;
}

static void add_conf(X509 *x, X509V3_CTX *v3, int nid, const char *val)
{
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, v3, nid, val);
	must(e != NULL && X509_add_ext(x, e, -1), "extension");
	X509_EXTENSION_free(e);
}

static void add_tcg_san(X509 *x)
{
	static const struct {
		const char *oid, *val;
	} attrs[] = {
		{"2.23.133.2.1", "id:4E544300"},
		{"2.23.133.2.2", "MINT TPM"},
		{"2.23.133.2.3", "id:0107"},
	};
	X509_NAME *dn = X509_NAME_new();
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	must(dn && gens && gn, "SAN alloc");
	for (size_t i = 0; i < 3; i++) {
		ASN1_OBJECT *o = OBJ_txt2obj(attrs[i].oid, 1);
		must(o && X509_NAME_add_entry_by_OBJ(dn, o, MBSTRING_UTF8,
						     (const unsigned char *)attrs[i].val, -1, -1,
						     1),
		     "SAN entry");
		ASN1_OBJECT_free(o);
	}
	GENERAL_NAME_set0_value(gn, GEN_DIRNAME, dn);
	must(sk_GENERAL_NAME_push(gens, gn) > 0, "SAN push");
	must(X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 1, X509V3_ADD_DEFAULT) == 1,
	     "SAN add");
	GENERAL_NAMES_free(gens);
}

static void add_raw_ext(X509 *x, const char *oid, int critical)
{
	static const unsigned char empty_seq[] = {0x30, 0x00};
	ASN1_OBJECT *o = OBJ_txt2obj(oid, 1);
	ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
	must(o && os && ASN1_OCTET_STRING_set(os, empty_seq, sizeof(empty_seq)), "raw ext");
	X509_EXTENSION *e = X509_EXTENSION_create_by_OBJ(NULL, o, critical, os);
	must(e && X509_add_ext(x, e, -1), "raw ext add");
	X509_EXTENSION_free(e);
	ASN1_OCTET_STRING_free(os);
	ASN1_OBJECT_free(o);
}

static void relabel_spki(X509 *x, ASN1_OBJECT *alg)
{
	X509_PUBKEY *xp = X509_get_X509_PUBKEY(x);
	const unsigned char *pk;
	int pklen;
	must(X509_PUBKEY_get0_param(NULL, &pk, &pklen, NULL, xp) == 1, "get0_param");
	unsigned char *copy = OPENSSL_memdup(pk, (size_t)pklen);
	must(copy != NULL, "memdup");
	must(X509_PUBKEY_set0_param(xp, alg, V_ASN1_UNDEF, NULL, copy, pklen) == 1,
	     "set0_param");
}

X509 *mint_cert(const struct mint *m)
{
	X509 *x = X509_new();
	X509V3_CTX v3;
	unsigned char serial[8];
	EVP_PKEY *ikey = m->issuer_key ? m->issuer_key : m->key;

	must(x != NULL, "X509_new");
	must(X509_set_version(x, 2), "version");
	must(RAND_bytes(serial, sizeof(serial)) == 1, "rand");
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	must(bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)), "serial");
	BN_free(bn);
	if (m->cn)
		must(X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName,
						MBSTRING_UTF8, (const unsigned char *)m->cn, -1, -1,
						0),
		     "cn");
	must(X509_set_issuer_name(x, m->issuer ? X509_get_subject_name(m->issuer)
					       : X509_get_subject_name(x)),
	     "issuer");
	must(ASN1_TIME_set(X509_getm_notBefore(x), m->not_before) &&
		     ASN1_TIME_set(X509_getm_notAfter(x), m->not_after),
	     "validity");
	must(X509_set_pubkey(x, m->key), "pubkey");
	X509V3_set_ctx(&v3, m->issuer ? m->issuer : x, x, NULL, NULL, 0);
	if (m->ca) {
		char bc[64];
		snprintf(bc, sizeof(bc), "critical,CA:TRUE%s%d", m->pathlen_set ? ",pathlen:" : "",
			 m->pathlen);
		if (!m->pathlen_set)
			snprintf(bc, sizeof(bc), "critical,CA:TRUE");
		add_conf(x, &v3, NID_basic_constraints, bc);
		add_conf(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign");
	} else {
		add_conf(x, &v3, NID_basic_constraints, "critical,CA:FALSE");
		add_conf(x, &v3, NID_key_usage,
			 m->key_usage ? m->key_usage : "critical,keyEncipherment");
	}
	add_conf(x, &v3, NID_subject_key_identifier, "hash");
	if (m->tcg_san)
		add_tcg_san(x);
	if (m->extra_oid)
		add_raw_ext(x, m->extra_oid, m->extra_critical);
	if (m->oaep_spki)
		relabel_spki(x, OBJ_nid2obj(NID_rsaesOaep));
	else if (m->spki_oid)
		relabel_spki(x, OBJ_txt2obj(m->spki_oid, 1));
	must(X509_sign(x, ikey, m->md ? m->md : EVP_sha256()) > 0, "sign");

	size_t len;
	unsigned char *der = mint_der(x, &len);
	const unsigned char *p = der;
	X509 *y = d2i_X509(NULL, &p, (long)len);
	must(y != NULL, "reparse");
	free(der);
	X509_free(x);
	ERR_clear_error();
	return y;
}

unsigned char *mint_der(X509 *x, size_t *len)
{
	int n = i2d_X509(x, NULL);
	must(n > 0, "i2d_X509");
	unsigned char *buf = malloc((size_t)n), *p = buf;
	must(buf != NULL, "malloc");
	must(i2d_X509(x, &p) == n, "i2d_X509");
	*len = (size_t)n;
	return buf;
}

static void bn_param(EVP_PKEY *k, const char *name, unsigned char *out, size_t width)
{
	BIGNUM *bn = NULL;
	must(EVP_PKEY_get_bn_param(k, name, &bn) == 1, name);
	must(BN_bn2binpad(bn, out, (int)width) == (int)width, "bn2binpad");
	BN_free(bn);
}

void mint_tpm_public(EVP_PKEY *k, TPMA_OBJECT attrs, TPMT_PUBLIC *out)
{
	memset(out, 0, sizeof(*out));
	out->nameAlg = TPM2_ALG_SHA256;
	out->objectAttributes = attrs;
	if (EVP_PKEY_is_a(k, "EC")) {
		/* P-256 or P-384, by the key's size. */
		size_t fsz = EVP_PKEY_get_bits(k) > 256 ? 48 : 32;
		out->type = TPM2_ALG_ECC;
		out->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
		out->parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
		out->parameters.eccDetail.scheme.details.ecdsa.hashAlg =
			fsz == 48 ? TPM2_ALG_SHA384 : TPM2_ALG_SHA256;
		out->parameters.eccDetail.curveID =
			fsz == 48 ? TPM2_ECC_NIST_P384 : TPM2_ECC_NIST_P256;
		out->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
		bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, out->unique.ecc.x.buffer, fsz);
		bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, out->unique.ecc.y.buffer, fsz);
		out->unique.ecc.x.size = (UINT16)fsz;
		out->unique.ecc.y.size = (UINT16)fsz;
	} else {
		out->type = TPM2_ALG_RSA;
		out->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
		out->parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
		out->parameters.rsaDetail.keyBits = 2048;
		out->parameters.rsaDetail.exponent = 0; /* the TPM's way of saying 65537 */
		bn_param(k, OSSL_PKEY_PARAM_RSA_N, out->unique.rsa.buffer, 256);
		out->unique.rsa.size = 256;
	}
}
