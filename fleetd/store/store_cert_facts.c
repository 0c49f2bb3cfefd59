/*
 * store_cert_facts.c: the store's own check of a certificate it is handed
 * (store_int.h st_cert_facts): one whole DER X.509 certificate, its
 * notAfter and its SHA-1 fingerprint.
 *
 * Why not d2i_X509: OpenSSL 3.0 decodes the subject public key of every
 * certificate it parses, through OSSL_DECODER_CTX_new_for_pkey, which
 * builds its decoder chain afresh each time: 0.1-0.4 ms a certificate
 * (by host), ~6 % of fleetd's CPU per admission (two certificates; perf,
 * 2026-12-06, docs/benchmark.md). The store needs no key. This parses
 * X.509's own ASN.1 with OpenSSL's templates, the same items d2i_X509 uses
 * (names, algorithms, validity, extensions, bit strings), with the key's
 * SPKI read as X509_PUBKEY reads it before that decode: an
 * AlgorithmIdentifier and a BIT STRING. OpenSSL 3.0's decode is
 * opportunistic (its errors dropped) except in two places
 * (x509_pubkey_ex_d2i_ex): the key's algorithm OID must print with
 * OBJ_obj2txt, which refuses an unregistered OID of over 586 bytes, and a
 * key the decoder reads must end where the SPKI's TLV ends, which it
 * always does (the decoder is handed exactly that TLV). The first is
 * repeated below; so both accept the same bytes, and
 * tests/fuzz/fuzz_store_cert_facts.c holds them to that and to the same
 * notAfter.
 */
#include "fleetd/store/store_int.h"

#include <limits.h>
#include <time.h>

#include <openssl/asn1t.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include "lib/hex.h"

typedef struct {
	X509_ALGOR *algor;
	ASN1_BIT_STRING *public_key;
} STORE_SPKI;

ASN1_SEQUENCE(STORE_SPKI) = {
	ASN1_SIMPLE(STORE_SPKI, algor, X509_ALGOR),
	ASN1_SIMPLE(STORE_SPKI, public_key, ASN1_BIT_STRING),
} static_ASN1_SEQUENCE_END(STORE_SPKI)

/* RFC 5280 TBSCertificate, field for field as OpenSSL's X509_CINF. */
typedef struct {
	ASN1_INTEGER *version;
	ASN1_INTEGER *serial;
	X509_ALGOR *signature;
	X509_NAME *issuer;
	X509_VAL *validity;
	X509_NAME *subject;
	STORE_SPKI *key;
	ASN1_BIT_STRING *issuer_uid;
	ASN1_BIT_STRING *subject_uid;
	STACK_OF(X509_EXTENSION) *extensions;
} STORE_TBS;

ASN1_SEQUENCE(STORE_TBS) = {
	ASN1_EXP_OPT(STORE_TBS, version, ASN1_INTEGER, 0),
	ASN1_SIMPLE(STORE_TBS, serial, ASN1_INTEGER),
	ASN1_SIMPLE(STORE_TBS, signature, X509_ALGOR),
	ASN1_SIMPLE(STORE_TBS, issuer, X509_NAME),
	ASN1_SIMPLE(STORE_TBS, validity, X509_VAL),
	ASN1_SIMPLE(STORE_TBS, subject, X509_NAME),
	ASN1_SIMPLE(STORE_TBS, key, STORE_SPKI),
	ASN1_IMP_OPT(STORE_TBS, issuer_uid, ASN1_BIT_STRING, 1),
	ASN1_IMP_OPT(STORE_TBS, subject_uid, ASN1_BIT_STRING, 2),
	ASN1_EXP_SEQUENCE_OF_OPT(STORE_TBS, extensions, X509_EXTENSION, 3),
} static_ASN1_SEQUENCE_END(STORE_TBS)

typedef struct {
	STORE_TBS *tbs;
	X509_ALGOR *sig_alg;
	ASN1_BIT_STRING *signature;
} STORE_CERT;

ASN1_SEQUENCE(STORE_CERT) = {
	ASN1_SIMPLE(STORE_CERT, tbs, STORE_TBS),
	ASN1_SIMPLE(STORE_CERT, sig_alg, X509_ALGOR),
	ASN1_SIMPLE(STORE_CERT, signature, ASN1_BIT_STRING),
} static_ASN1_SEQUENCE_END(STORE_CERT)

bool st_cert_facts(const uint8_t *der, size_t len, int64_t *not_after, char sha1[41])
{
	if (!der || len == 0 || len > (size_t)LONG_MAX)
		return false;
	const unsigned char *p = der;
	STORE_CERT *c = (STORE_CERT *)ASN1_item_d2i(NULL, &p, (long)len,
						      ASN1_ITEM_rptr(STORE_CERT));
	if (!c)
		return false;
	struct tm tm;
	char oid[50]; /* OSSL_MAX_NAME_SIZE, as x509_pubkey_ex_d2i_ex */
	bool ok = p == der + len && ASN1_TIME_to_tm(c->tbs->validity->notAfter, &tm) == 1 &&
		  OBJ_obj2txt(oid, sizeof(oid), c->tbs->key->algor->algorithm, 0) > 0;
	ASN1_item_free((ASN1_VALUE *)c, ASN1_ITEM_rptr(STORE_CERT));
	if (!ok)
		return false;
	*not_after = (int64_t)timegm(&tm);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (!EVP_Digest(der, len, md, &mdlen, EVP_sha1(), NULL) || mdlen != 20)
		return false;
	fleet_hex_encode(md, 20, sha1);
	return true;
}
