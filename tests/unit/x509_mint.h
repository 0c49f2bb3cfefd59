/*
 * x509_mint.h: small certificates minted in a test, with the quirks real EK
 * certificates have (OAEP SPKI, critical TCG SAN, critical unknown
 * extensions, SHA-1 signatures, odd validity), so every rule of the EK
 * loader and chain check is exercised without copying anyone's certificate.
 */
#ifndef FLEET_TEST_X509_MINT_H
#define FLEET_TEST_X509_MINT_H

#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <tss2/tss2_tpm2_types.h>

EVP_PKEY *mint_key_ec(void);  /* P-256 */
EVP_PKEY *mint_key_rsa(void); /* 2048 bits, e = 65537 */

struct mint {
	EVP_PKEY *key;        /* the subject's key */
	X509 *issuer;         /* NULL: self-signed */
	EVP_PKEY *issuer_key; /* NULL: key (self-signed) */
	const char *cn;       /* NULL: empty subject, as many EK certificates */
	int ca;               /* basicConstraints CA:TRUE and keyCertSign */
	int pathlen_set;      /* with ca: add pathlen:<pathlen> */
	int pathlen;
	time_t not_before, not_after;
	const EVP_MD *md;       /* NULL: SHA-256 */
	const char *extra_oid;  /* an extra extension (body: empty SEQUENCE) */
	int extra_critical;
	int tcg_san;            /* critical SAN dirName with TPM manufacturer/model/version */
	int oaep_spki;          /* relabel an RSA SPKI as id-RSAES-OAEP */
	const char *spki_oid;   /* or relabel it with this OID instead */
	const char *key_usage;  /* NULL: by `ca`; else OpenSSL's string form */
};

/* The certificate, parsed back from its DER (so it looks as a loaded one
 * does: an OAEP key is then undecodable, as in the wild). */
X509 *mint_cert(const struct mint *m);
/* DER into a malloc'd buffer. */
unsigned char *mint_der(X509 *x, size_t *len);
/* The TPM public area of a key: ECC P-256 (ECDSA SHA-256), P-384 (ECDSA
 * SHA-384) or RSA-2048, with attrs. */
void mint_tpm_public(EVP_PKEY *k, TPMA_OBJECT attrs, TPMT_PUBLIC *out);

#endif
