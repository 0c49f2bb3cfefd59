/*
 * kubelet_csr.c: C1-C7 of kubelet_csr.h, with OpenSSL reading the
 * request. Every check refuses on anything it does not recognise: an
 * approval is a certificate the cluster will trust as a node.
 */
#include "fleetd/provision/kubelet_csr.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static struct fleet_decision refused(const char *reason)
{
	fleet_openssl_drain(NULL, 0); /* a refusal leaves OpenSSL's queue empty */
	return (struct fleet_decision){
		.outcome = FLEET_REFUSED, .reason = reason, .err = FLEET_E_VERIFY};
}

static struct fleet_decision failed(fleet_err e)
{
	fleet_openssl_drain(NULL, 0);
	return (struct fleet_decision){.outcome = FLEET_FAILED, .err = e};
}

/* C3: the request's bytes are its canonical PEM, byte for byte. */
static struct fleet_decision canonical(X509_REQ *req, const uint8_t *bytes, size_t len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	if (!b || !PEM_write_bio_X509_REQ(b, req)) {
		BIO_free(b);
		return failed(FLEET_E_CRYPTO);
	}
	long n = BIO_get_mem_data(b, &data);
	bool same = n > 0 && (size_t)n == len && memcmp(data, bytes, len) == 0;
	BIO_free(b);
	return same ? (struct fleet_decision){.outcome = FLEET_PASSED, .err = FLEET_OK}
		    : refused("csr-malformed");
}

/* C6: the set, each usage once. */
static bool usages_ok(const char *const *u, size_t n)
{
	bool ds = false, ca = false, ke = false;
	if (!u || n < 2 || n > 3)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool *seen = !u[i]                              ? NULL
			     : !strcmp(u[i], "digital signature") ? &ds
			     : !strcmp(u[i], "client auth")       ? &ca
			     : !strcmp(u[i], "key encipherment")  ? &ke
								  : NULL;
		if (!seen || *seen)
			return false;
		*seen = true;
	}
	return ds && ca && (n == 2 || ke);
}

/* The one value of nid in name, or NULL when it has none or more. */
static const ASN1_STRING *only(const X509_NAME *name, int nid)
{
	int i = X509_NAME_get_index_by_NID(name, nid, -1);
	if (i < 0 || X509_NAME_get_index_by_NID(name, nid, i) >= 0)
		return NULL;
	return X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
}

static bool string_is(const ASN1_STRING *s, const char *want)
{
	size_t n = strlen(want);
	return s && (size_t)ASN1_STRING_length(s) == n &&
	       (ASN1_STRING_type(s) == V_ASN1_UTF8STRING ||
		ASN1_STRING_type(s) == V_ASN1_PRINTABLESTRING) &&
	       memcmp(ASN1_STRING_get0_data(s), want, n) == 0;
}

/* C7 */
static bool key_ok(EVP_PKEY *k)
{
	int bits = EVP_PKEY_get_bits(k);
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA)
		return bits >= 2048 && bits <= 4096;
	if (EVP_PKEY_get_base_id(k) != EVP_PKEY_EC)
		return false;
	char curve[32];
	size_t len = 0;
	if (!EVP_PKEY_get_utf8_string_param(k, "group", curve, sizeof(curve), &len))
		return false;
	return !strcmp(curve, "prime256v1") || !strcmp(curve, "secp384r1");
}

struct fleet_decision fleet_kubelet_csr_judge(const struct fleet_kubelet_csr *c,
					      const char *token_id, const char *node_name)
{
	char want[160];
	if (!c || !token_id || !node_name)
		return failed(FLEET_E_INVALID_ARG);
	/* C1 */
	if (!c->signer_name || strcmp(c->signer_name, FLEET_KUBELET_SIGNER) != 0)
		return refused("csr-signer");
	/* C2. A token id is 6 characters and a node name at most 63: a value
	 * that does not fit is refused, never compared cut short. */
	if (strlen(token_id) != 6 || strlen(node_name) == 0 || strlen(node_name) > 63)
		return failed(FLEET_E_INVALID_ARG);
	snprintf(want, sizeof(want), "system:bootstrap:%s", token_id);
	if (!c->username || strcmp(c->username, want) != 0)
		return refused("csr-requester");
	/* C6 before any parsing: cheap, and says nothing about the bytes. */
	if (!usages_ok(c->usages, c->n_usages))
		return refused("csr-usages");
	/* C3 */
	if (!c->request || c->request_len == 0 || c->request_len > FLEET_KUBELET_CSR_MAX)
		return refused("csr-malformed");
	BIO *bio = BIO_new_mem_buf(c->request, (int)c->request_len);
	if (!bio)
		return failed(FLEET_E_NOMEM);
	char *pem_name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long der_len = 0;
	int got = PEM_read_bio(bio, &pem_name, &header, &der, &der_len);
	/* Exactly one block: a second one is something else riding along. */
	char *n2 = NULL, *h2 = NULL;
	unsigned char *d2 = NULL;
	long l2 = 0;
	int second = got ? PEM_read_bio(bio, &n2, &h2, &d2, &l2) : 0;
	BIO_free(bio);
	OPENSSL_free(n2);
	OPENSSL_free(h2);
	OPENSSL_free(d2);
	struct fleet_decision d = {.outcome = FLEET_PASSED, .err = FLEET_OK};
	X509_REQ *req = NULL;
	EVP_PKEY *key = NULL;
	if (!got || second || strcmp(pem_name, "CERTIFICATE REQUEST") != 0 ||
	    (header && header[0])) {
		d = refused("csr-malformed");
		goto out;
	}
	const unsigned char *p = der;
	req = d2i_X509_REQ(NULL, &p, der_len);
	if (!req || p != der + der_len) { /* nothing after the DER either */
		d = refused("csr-malformed");
		goto out;
	}
	/* The bytes must be exactly the canonical encoding of that request
	 * (what client-go's pem.EncodeToMemory and OpenSSL both write: one
	 * block, 64-column lines, nothing before or after). Kubernetes reads
	 * spec.request with Go's encoding/pem, which skips a block its strict
	 * base64 cannot decode and takes the next one; OpenSSL's reader is
	 * looser. Any other bytes could show fleetd one request while the
	 * signer issues another: only one spelling is judged. */
	if ((d = canonical(req, c->request, c->request_len)).outcome != FLEET_PASSED)
		goto out;
	if (!(key = X509_REQ_get_pubkey(req))) {
		d = refused("csr-key");
		goto out;
	}
	if (X509_REQ_verify(req, key) != 1) {
		d = refused("csr-signature");
		goto out;
	}
	/* C4 */
	const X509_NAME *subj = X509_REQ_get_subject_name(req);
	snprintf(want, sizeof(want), "system:node:%s", node_name);
	if (X509_NAME_entry_count(subj) != 2 ||
	    !string_is(only(subj, NID_organizationName), "system:nodes") ||
	    !string_is(only(subj, NID_commonName), want)) {
		d = refused("csr-subject");
		goto out;
	}
	/* C5: no requested extensions; no attributes at all, in fact. */
	if (X509_REQ_get_attr_count(req) != 0) {
		d = refused("csr-extensions");
		goto out;
	}
	/* C7 */
	if (!key_ok(key)) {
		d = refused("csr-key");
		goto out;
	}
out:
	EVP_PKEY_free(key);
	X509_REQ_free(req);
	OPENSSL_free(pem_name);
	OPENSSL_free(header);
	OPENSSL_free(der);
	fleet_openssl_drain(NULL, 0);
	return d;
}
