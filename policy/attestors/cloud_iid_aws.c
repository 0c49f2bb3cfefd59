/*
 * cloud_iid_aws.c: the EC2 instance identity document (AWS's
 * /latest/dynamic/instance-identity/document) and its PKCS#7 SignedData
 * (/latest/dynamic/instance-identity/pkcs7), verified against the
 * certificate the operator supplied for the document's region ('*' for
 * the regions not listed).
 *
 * Refused unless, in this order:
 *   the document is one JSON object of AWS's documented fields, at most
 *     8 KiB, with accountId, instanceId, region and pendingTime strings  cloud-iid-malformed
 *   a certificate is configured for its region, or '*'                    cloud-iid-region
 *   the PKCS#7 is signed by that certificate's key (and no other: the
 *     certificates inside the PKCS#7 are never used) and its content is
 *     byte for byte the document carried                                 cloud-iid-signature
 *   accountId and instanceId are 1..255 printable bytes                  cloud-iid-claims
 *   pendingTime at most 60 s ahead of the store's clock                  cloud-iid-future
 *   and at most max_age (1800 s) behind it                               cloud-iid-too-old
 *   the account is in accounts (when listed)                             cloud-iid-account
 *
 * The document is NOT bound to the CSR: AWS signs the same document for
 * the instance's whole life, and any process on the VM can read it. What
 * limits a stolen one is the window after launch (pendingTime) and the
 * single use (cloud_iid.c): one join per instance, ever.
 */
#include "policy/attestors/cloud_iid_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pkcs7.h>

#include "lib/attest_wire.h"
#include "lib/attest_wire_json.h"

/* AWS's documented field set (instance-identity-documents.html). */
static const char *const doc_keys[] = {
	"accountId",  "architecture", "availabilityZone",  "billingProducts",
	"devpayProductCodes", "marketplaceProductCodes", "imageId", "instanceId",
	"instanceType", "kernelId",   "pendingTime",       "privateIp",
	"ramdiskId",  "region",       "version",           NULL};

/* Each documented field is a string, null (kernelId, ramdiskId, the
 * product codes) or an array of strings (the product codes). */
static bool field_ok(const json_t *v)
{
	if (json_is_string(v) || json_is_null(v))
		return true;
	if (!json_is_array(v))
		return false;
	for (size_t i = 0; i < json_array_size(v); i++)
		if (!json_is_string(json_array_get(v, i)))
			return false;
	return true;
}

static json_t *doc_parse(const char *doc, size_t len)
{
	json_error_t jerr;
	json_t *d;
	if (len > CIID_MAX_DOCUMENT ||
	    !(d = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr)))
		return NULL;
	const char *k;
	json_t *v;
	bool ok = json_is_object(d) && wj_keys(d, doc_keys, "document", NULL) == FLEET_OK;
	json_object_foreach(d, k, v) ok = ok && field_ok(v);
	static const char *const need[] = {"accountId", "instanceId", "region", "pendingTime"};
	for (size_t i = 0; ok && i < sizeof(need) / sizeof(need[0]); i++)
		ok = json_is_string(json_object_get(d, need[i]));
	if (!ok) {
		json_decref(d);
		return NULL;
	}
	return d;
}

static X509 *region_cert(const struct ciid_provider *p, const char *region)
{
	X509 *any = NULL;
	for (size_t i = 0; i < p->n_certs; i++) {
		if (!strcmp(p->certs[i].region, region))
			return p->certs[i].cert;
		if (!strcmp(p->certs[i].region, "*"))
			any = p->certs[i].cert;
	}
	return any;
}

/* The PKCS#7 as AWS serves it: standard base64 in lines. */
static PKCS7 *p7_decode(const char *txt, size_t len)
{
	struct fleet_wire_bytes der = {0};
	PKCS7 *p7 = NULL;
	char *flat;
	size_t n = 0;
	if (len == 0 || len > CIID_MAX_PKCS7 || !(flat = malloc(len)))
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (txt[i] != '\n' && txt[i] != '\r')
			flat[n++] = txt[i];
	if (fleet_b64std_decode(flat, n, CIID_MAX_PKCS7, &der) == FLEET_OK) {
		const unsigned char *q = der.data;
		p7 = d2i_PKCS7(NULL, &q, (long)der.len);
		/* All of it one PKCS#7: no trailing bytes. */
		if (p7 && (q != der.data + der.len || !PKCS7_type_is_signed(p7))) {
			PKCS7_free(p7);
			p7 = NULL;
		}
	}
	free(flat);
	free(der.data);
	return p7;
}

/* The signed content, when cert's key signed it; NULL otherwise. */
static BIO *p7_content(PKCS7 *p7, X509 *cert)
{
	STACK_OF(X509) *certs = sk_X509_new_null();
	X509_STORE *store = X509_STORE_new();
	BIO *out = BIO_new(BIO_s_mem());
	/* NOINTERN: the signer is looked up in our one certificate only,
	 * never among those the PKCS#7 carries. NOVERIFY: that certificate
	 * is pinned by the operator, not chained (AWS's are self-signed and
	 * some long expired). */
	int flags = PKCS7_NOINTERN | PKCS7_NOVERIFY | PKCS7_NOCHAIN;
	if (!certs || !store || !out || !sk_X509_push(certs, cert) ||
	    PKCS7_verify(p7, certs, store, NULL, out, flags) != 1) {
		BIO_free(out);
		out = NULL;
	}
	sk_X509_free(certs);
	X509_STORE_free(store);
	return out;
}

fleet_err ciid_aws_verify(const struct ciid_provider *p, const char *doc, size_t doc_len,
			  const char *pkcs7, size_t pkcs7_len, int64_t now,
			  struct ciid_identity *id, const char **reason)
{
	json_t *d = doc_parse(doc, doc_len);
	PKCS7 *p7 = NULL;
	BIO *content = NULL;
	X509 *cert;
	time_t pending;
	char *signed_doc;
	long signed_len;

	*reason = "cloud-iid-malformed";
	if (!d)
		goto out;
	if (!(cert = region_cert(p, json_string_value(json_object_get(d, "region"))))) {
		*reason = "cloud-iid-region";
		goto out;
	}
	*reason = "cloud-iid-signature";
	if (!(p7 = p7_decode(pkcs7, pkcs7_len)) || !(content = p7_content(p7, cert)))
		goto out;
	/* What was signed is what we read: the fields above came from the
	 * document carried, so it must be the signed one byte for byte. */
	signed_len = BIO_get_mem_data(content, &signed_doc);
	if (signed_len < 0 || (size_t)signed_len != doc_len || memcmp(signed_doc, doc, doc_len))
		goto out;
	*reason = "cloud-iid-claims";
	if (!ciid_id_ok(json_object_get(d, "accountId"), id->account) ||
	    !ciid_id_ok(json_object_get(d, "instanceId"), id->instance))
		goto out;
	if (wj_time_parse(json_string_value(json_object_get(d, "pendingTime")), &pending)) {
		*reason = "cloud-iid-malformed";
		goto out;
	}
	if ((int64_t)pending > now + CIID_CLOCK_SKEW) {
		*reason = "cloud-iid-future";
		goto out;
	}
	if (now - (int64_t)pending > (int64_t)p->max_age) {
		*reason = "cloud-iid-too-old";
		goto out;
	}
	if (p->n_allow && !ciid_listed(p->allow, p->n_allow, id->account)) {
		*reason = "cloud-iid-account";
		goto out;
	}
	*reason = NULL;
out:
	BIO_free(content);
	PKCS7_free(p7);
	json_decref(d);
	ERR_clear_error();
	return FLEET_OK;
}
