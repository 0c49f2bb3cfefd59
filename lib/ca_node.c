/*
 * ca_node.c: node certificates issued from a PKCS#10 CSR (lib/ca.h,
 * NC1-NC11) and the identity reader for them (NR1-NR6).
 *
 * The CSR is the machine's and untrusted: it is parsed once, strictly (the
 * bytes re-encoded from what OpenSSL parsed must be the bytes sent), its
 * key is checked from the SPKI's encoding before it is used, and only then
 * is its self-signature verified. Of the CSR, only the key reaches the
 * certificate; every other field is built here from the join service's
 * request, which is checked as strictly (it names the node in a SPIFFE ID
 * every peer reads).
 */
#include "lib/ca.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509v3.h>

#include "lib/ca_int.h"

#define SPIFFE_SCHEME "spiffe://"
#define STATEMENT_PREFIX "urn:bc:"
#define NODE_URIS_MAX (1u + FLEET_NODE_STATEMENTS_MAX)
/* 9999-12-31T23:59:59Z, the last instant a GeneralizedTime holds. */
#define TIME_LAST ((time_t)253402300799LL)

static const char *const roles[] = {"node", "site", "ramdisk"};

/* ---- the names (NC5-NC8) ------------------------------------------------ */

static bool lower_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* n bytes of s (no NUL among them) from the set, 1..max of them. */
static bool span_ok(const char *s, size_t n, size_t max, const char *extra)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!lower_alnum(c) && (c == '\0' || !strchr(extra, c)))
			return false;
	}
	return true;
}

static bool trust_domain_ok_n(const char *s, size_t n)
{
	return span_ok(s, n, FLEET_NODE_TRUST_DOMAIN_MAX, ".-_");
}

static bool node_id_ok_n(const char *s, size_t n)
{
	return span_ok(s, n, FLEET_NODE_ID_MAX, "_-");
}

static int role_index_n(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strlen(roles[i]) == n && memcmp(roles[i], s, n) == 0)
			return (int)i;
	return -1;
}

/* RFC 3986's unreserved and reserved characters, and '%'. */
static bool uri_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("-._~:/?#[]@!$&'()*+,;=%", c) != NULL);
}

/* NC8's form of one statement: n bytes at s. */
static bool statement_ok_n(const char *s, size_t n)
{
	size_t plen = sizeof(STATEMENT_PREFIX) - 1;
	if (n <= plen || n > FLEET_NODE_STATEMENT_MAX || memcmp(s, STATEMENT_PREFIX, plen) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!uri_char((unsigned char)s[i]))
			return false;
	return true;
}

static bool str_ok(const char *s, size_t max, bool (*ok)(const char *, size_t))
{
	if (!s)
		return false;
	size_t n = strnlen(s, max + 1);
	return n <= max && ok(s, n);
}

/* ---- the CSR (NC1-NC3) -------------------------------------------------- */

static fleet_err csr_refuse(struct fleet_errctx *ec, fleet_err e, const char *reason,
			    const char *what)
{
	fleet_openssl_drain(NULL, 0);
	return fleet_errctx_refuse(ec, e, reason, "CSR refused: %s", what);
}

/* NC1: exactly one canonical DER CertificationRequest. */
static fleet_err csr_parse(const uint8_t *der, size_t len, X509_REQ **out,
			   struct fleet_errctx *ec)
{
	const unsigned char *p = der;
	unsigned char *re = NULL;
	X509_REQ *req;
	int n;

	*out = NULL;
	if (!der || len == 0)
		return csr_refuse(ec, FLEET_E_MALFORMED, FLEET_CA_REASON_CSR_MALFORMED, "empty");
	if (len > FLEET_CSR_MAX)
		return csr_refuse(ec, FLEET_E_TOO_LARGE, FLEET_CA_REASON_CSR_MALFORMED,
				  "larger than the cap");
	req = d2i_X509_REQ(NULL, &p, (long)len);
	if (!req)
		return csr_refuse(ec, FLEET_E_MALFORMED, FLEET_CA_REASON_CSR_MALFORMED,
				  "not a DER PKCS#10 request");
	if ((size_t)(p - der) != len) {
		X509_REQ_free(req);
		return csr_refuse(ec, FLEET_E_MALFORMED, FLEET_CA_REASON_CSR_MALFORMED,
				  "bytes after the request");
	}
	if (X509_REQ_get_version(req) != 0) {
		X509_REQ_free(req);
		return csr_refuse(ec, FLEET_E_MALFORMED, FLEET_CA_REASON_CSR_MALFORMED,
				  "not a version 1 request");
	}
	/* Re-encode the request info from the parsed fields (not the bytes
	 * OpenSSL kept), then the whole request: DER has one encoding, so
	 * anything else the parser tolerated differs here. */
	if (i2d_re_X509_REQ_tbs(req, NULL) <= 0 || (n = i2d_X509_REQ(req, &re)) <= 0) {
		X509_REQ_free(req);
		return csr_refuse(ec, FLEET_E_MALFORMED, FLEET_CA_REASON_CSR_MALFORMED,
				  "cannot be re-encoded");
	}
	bool same = (size_t)n == len && memcmp(re, der, len) == 0;
	OPENSSL_free(re);
	if (!same) {
		X509_REQ_free(req);
		return csr_refuse(ec, FLEET_E_MALFORMED, FLEET_CA_REASON_CSR_MALFORMED,
				  "not in DER (another encoding of a request)");
	}
	*out = req;
	return FLEET_OK;
}

/* NC2: id-ecPublicKey, a named curve P-256 or P-384, a valid point. */
static fleet_err csr_key_check(X509_REQ *req, struct fleet_errctx *ec)
{
	X509_PUBKEY *spki = X509_REQ_get_X509_PUBKEY(req);
	ASN1_OBJECT *alg = NULL;
	X509_ALGOR *algor = NULL;
	const void *pval = NULL;
	int ptype = 0;

	if (!spki || !X509_PUBKEY_get0_param(&alg, NULL, NULL, &algor, spki) || !algor ||
	    OBJ_obj2nid(alg) != NID_X9_62_id_ecPublicKey)
		return csr_refuse(ec, FLEET_E_UNSUPPORTED, FLEET_CA_REASON_CSR_KEY_TYPE,
				  "the key is not an EC key");
	X509_ALGOR_get0(NULL, &ptype, &pval, algor);
	int curve = ptype == V_ASN1_OBJECT ? OBJ_obj2nid(pval) : NID_undef;
	if (curve != NID_X9_62_prime256v1 && curve != NID_secp384r1)
		return csr_refuse(ec, FLEET_E_UNSUPPORTED, FLEET_CA_REASON_CSR_KEY_TYPE,
				  "the key is not on the named curve P-256 or P-384");
	EVP_PKEY *pk = X509_REQ_get0_pubkey(req);
	EVP_PKEY_CTX *pc = pk ? EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL) : NULL;
	int valid = pc ? EVP_PKEY_public_check(pc) : 0;
	EVP_PKEY_CTX_free(pc);
	if (!pk || !EVP_PKEY_is_a(pk, "EC") || valid != 1)
		return csr_refuse(ec, FLEET_E_UNSUPPORTED, FLEET_CA_REASON_CSR_KEY_TYPE,
				  "the key is not a valid point on its curve");
	return FLEET_OK;
}

/* NC3: ECDSA with SHA-2, verifying under the CSR's own key. */
static fleet_err csr_signature_check(X509_REQ *req, struct fleet_errctx *ec)
{
	int nid = X509_REQ_get_signature_nid(req);
	if (nid != NID_ecdsa_with_SHA256 && nid != NID_ecdsa_with_SHA384 &&
	    nid != NID_ecdsa_with_SHA512)
		return csr_refuse(ec, FLEET_E_VERIFY, FLEET_CA_REASON_CSR_SIGNATURE,
				  "the signature is not ECDSA with SHA-256, -384 or -512");
	if (X509_REQ_verify(req, X509_REQ_get0_pubkey(req)) != 1)
		return csr_refuse(ec, FLEET_E_VERIFY, FLEET_CA_REASON_CSR_SIGNATURE,
				  "the self-signature does not verify");
	return FLEET_OK;
}

/* NC1-NC3, in that order. */
static fleet_err csr_check(const uint8_t *der, size_t len, X509_REQ **out,
			   struct fleet_errctx *ec)
{
	X509_REQ *req;
	fleet_err e = csr_parse(der, len, &req, ec);
	if (e != FLEET_OK)
		return e;
	if ((e = csr_key_check(req, ec)) != FLEET_OK ||
	    (e = csr_signature_check(req, ec)) != FLEET_OK) {
		X509_REQ_free(req);
		return e;
	}
	ERR_clear_error();
	*out = req;
	return FLEET_OK;
}

fleet_err fleet_csr_spki_sha256(const uint8_t *csr_der, size_t len, uint8_t out[32],
				struct fleet_errctx *ec)
{
	X509_REQ *req = NULL;
	unsigned char *spki = NULL;
	unsigned int md_len = 0;
	fleet_err e;

	if (!out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no output");
	if ((e = csr_check(csr_der, len, &req, ec)) != FLEET_OK)
		return e;
	int n = i2d_X509_PUBKEY(X509_REQ_get_X509_PUBKEY(req), &spki);
	if (n <= 0 || EVP_Digest(spki, (size_t)n, out, &md_len, EVP_sha256(), NULL) != 1 ||
	    md_len != 32)
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "cannot hash the CSR's key");
	OPENSSL_free(spki);
	X509_REQ_free(req);
	return e;
}

/* ---- the request (NC5-NC10) --------------------------------------------- */

static fleet_err req_refuse(struct fleet_errctx *ec, const char *reason, const char *what)
{
	return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, reason,
				   "node certificate request refused: %s", what);
}

/* The statements given, in order; *n their count. */
static fleet_err statements_check(const struct fleet_node_cert_request *req, size_t *n,
				  struct fleet_errctx *ec)
{
	size_t i = 0;
	while (i < FLEET_NODE_STATEMENTS_MAX && req->statements[i])
		i++;
	for (size_t j = i; j < FLEET_NODE_STATEMENTS_MAX; j++)
		if (req->statements[j])
			return req_refuse(ec, FLEET_CA_REASON_STATEMENT,
					  "a statement after the end of the list (a NULL)");
	for (size_t j = 0; j < i; j++) {
		if (!str_ok(req->statements[j], FLEET_NODE_STATEMENT_MAX, statement_ok_n))
			return req_refuse(ec, FLEET_CA_REASON_STATEMENT,
					  "a statement is not a urn:bc: URI of at most 256 "
					  "URI characters");
		for (size_t k = 0; k < j; k++)
			if (strcmp(req->statements[j], req->statements[k]) == 0)
				return req_refuse(ec, FLEET_CA_REASON_STATEMENT,
						  "a statement is given twice");
	}
	*n = i;
	return FLEET_OK;
}

static fleet_err request_check(const struct fleet_ca *ca, const struct fleet_node_cert_request *req,
			       size_t *n_statements, time_t *nb, struct fleet_errctx *ec)
{
	fleet_err e;

	if (!str_ok(req->trust_domain, FLEET_NODE_TRUST_DOMAIN_MAX, trust_domain_ok_n))
		return req_refuse(ec, FLEET_CA_REASON_TRUST_DOMAIN,
				  "the trust domain is not 1-255 of a-z 0-9 . - _");
	if (!str_ok(req->node_id, FLEET_NODE_ID_MAX, node_id_ok_n))
		return req_refuse(ec, FLEET_CA_REASON_NODE_ID,
				  "the node id is not 1-63 of a-z 0-9 _ -");
	/* strnlen's cap is past the longest role, so "ramdisk2" is no role. */
	int role = req->role ? role_index_n(req->role, strnlen(req->role, 8)) : -1;
	if (role < 0)
		return req_refuse(ec, FLEET_CA_REASON_ROLE,
				  "the role is not node, site or ramdisk");
	if ((e = statements_check(req, n_statements, ec)) != FLEET_OK)
		return e;
	unsigned max = strcmp(req->role, "ramdisk") == 0 ? FLEET_NODE_RAMDISK_VALIDITY_MAX
							  : FLEET_NODE_VALIDITY_MAX;
	if (req->validity_seconds < FLEET_NODE_VALIDITY_MIN || req->validity_seconds > max)
		return fleet_errctx_refuse(ec, FLEET_E_INVALID_ARG, FLEET_CA_REASON_VALIDITY,
					   "node certificate request refused: validity must be "
					   "%u-%u seconds for a %s",
					   FLEET_NODE_VALIDITY_MIN, max, roles[role]);
	*nb = req->not_before ? req->not_before : time(NULL);
	if (*nb < 0 || *nb > TIME_LAST - (time_t)req->validity_seconds)
		return req_refuse(ec, FLEET_CA_REASON_VALIDITY,
				  "notBefore is before 1970 or notAfter past 9999");
	time_t na = *nb + (time_t)req->validity_seconds;
	if (X509_cmp_time(X509_get0_notAfter(ca->cert), &na) <= 0) {
		ERR_clear_error();
		return req_refuse(ec, FLEET_CA_REASON_CA_EXPIRES,
				  "the certificate would outlive the CA certificate");
	}
	return FLEET_OK;
}

/* ---- issuing (NC11) ----------------------------------------------------- */

static fleet_err push_uri(GENERAL_NAMES *names, const char *uri)
{
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_IA5STRING *s = ASN1_IA5STRING_new();
	if (!gn || !s || !ASN1_STRING_set(s, uri, -1)) {
		GENERAL_NAME_free(gn);
		ASN1_IA5STRING_free(s);
		return FLEET_E_NOMEM;
	}
	GENERAL_NAME_set0_value(gn, GEN_URI, s);
	if (!sk_GENERAL_NAME_push(names, gn)) {
		GENERAL_NAME_free(gn);
		return FLEET_E_NOMEM;
	}
	return FLEET_OK;
}

/* subjectAltName: the SPIFFE ID, then the statements, in order. Built
 * from the values, not OpenSSL's string form (which would read a ',' in a
 * statement as a separator). */
static fleet_err add_san(X509 *x, const char *spiffe_id, const char *const *statements,
			 size_t n)
{
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	fleet_err e = names ? push_uri(names, spiffe_id) : FLEET_E_NOMEM;
	for (size_t i = 0; e == FLEET_OK && i < n; i++)
		e = push_uri(names, statements[i]);
	if (e == FLEET_OK &&
	    X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) != 1)
		e = FLEET_E_CRYPTO;
	GENERAL_NAMES_free(names);
	return e;
}

fleet_err fleet_ca_issue_node(const struct fleet_ca *ca, const struct fleet_node_cert_request *req,
			      X509 **out, struct fleet_errctx *ec)
{
	char spiffe_id[FLEET_NODE_SPIFFE_ID_MAX + 1];
	X509_REQ *csr = NULL;
	X509 *x = NULL;
	X509V3_CTX v3;
	size_t n_statements = 0;
	time_t nb = 0;
	fleet_err e;

	if (out)
		*out = NULL;
	if (!ca || !ca->key || !ca->cert || !req || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no CA, request or output");
	/* The request first: it is ours, and cheap; the CSR's signature is
	 * verified only for a request that could be issued. */
	if ((e = request_check(ca, req, &n_statements, &nb, ec)) != FLEET_OK)
		return e;
	if ((e = csr_check(req->csr_der, req->csr_len, &csr, ec)) != FLEET_OK)
		return e;
	int n = snprintf(spiffe_id, sizeof(spiffe_id), SPIFFE_SCHEME "%s/%s/%s",
			 req->trust_domain, req->role, req->node_id);
	if (n < 0 || (size_t)n >= sizeof(spiffe_id)) { /* cannot be: NC5-NC7 */
		X509_REQ_free(csr);
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "SPIFFE ID too long");
	}

	e = FLEET_E_CRYPTO;
	if (!(x = X509_new())) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	/* NC4: nothing of the CSR but its key from here on. */
	if (!X509_set_version(x, 2) || fleet_ca_int_random_serial(x) != FLEET_OK ||
	    !X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName,
					V_ASN1_UTF8STRING, (const unsigned char *)req->node_id,
					-1, -1, 0) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
	    fleet_ca_int_set_validity(x, nb, (time_t)req->validity_seconds) != FLEET_OK ||
	    !X509_set_pubkey(x, X509_REQ_get0_pubkey(csr)))
		goto out;
	X509V3_set_ctx(&v3, ca->cert, x, NULL, NULL, 0);
	if (add_san(x, spiffe_id, req->statements, n_statements) != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_ext_key_usage, "clientAuth,serverAuth") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_subject_key_identifier, "hash") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") != FLEET_OK)
		goto out;
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		goto out;
	*out = x;
	x = NULL;
	e = FLEET_OK;
out:
	if (e != FLEET_OK)
		fleet_errctx_openssl(ec, e, "cannot build the node certificate");
	ERR_clear_error();
	X509_REQ_free(csr);
	X509_free(x);
	return e;
}

/* ---- the reader (NR1-NR6) ----------------------------------------------- */

static fleet_err reader_refuse(struct fleet_errctx *ec, const char *reason, const char *what)
{
	fleet_openssl_drain(NULL, 0);
	return fleet_errctx_refuse(ec, FLEET_E_VERIFY, reason,
				   "not a node certificate's identity: %s", what);
}

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);
	return n >= p && memcmp(s, prefix, p) == 0;
}

/* NR6: spiffe://<td>/<role>/<id> of n bytes at s, into out. */
static bool spiffe_parse(const char *s, size_t n, struct fleet_node_identity *out)
{
	size_t p = sizeof(SPIFFE_SCHEME) - 1;
	const char *td = s + p, *end = s + n;
	const char *slash1 = memchr(td, '/', (size_t)(end - td));
	if (!slash1 || !trust_domain_ok_n(td, (size_t)(slash1 - td)))
		return false;
	const char *role = slash1 + 1;
	const char *slash2 = memchr(role, '/', (size_t)(end - role));
	if (!slash2)
		return false;
	int r = role_index_n(role, (size_t)(slash2 - role));
	const char *id = slash2 + 1;
	if (r < 0 || !node_id_ok_n(id, (size_t)(end - id))) /* no '/' in it: one segment */
		return false;
	memcpy(out->spiffe_id, s, n);
	out->spiffe_id[n] = '\0';
	memcpy(out->trust_domain, td, (size_t)(slash1 - td));
	out->trust_domain[slash1 - td] = '\0';
	strcpy(out->role, roles[r]);
	memcpy(out->node_id, id, (size_t)(end - id));
	out->node_id[end - id] = '\0';
	return true;
}

fleet_err fleet_node_cert_spiffe_id(X509 *x, struct fleet_node_identity *out,
				    struct fleet_errctx *ec)
{
	GENERAL_NAMES *names;
	struct fleet_node_identity id;
	const char *why = NULL, *what = NULL;
	int crit = 0, spiffe_at = -1;

	if (!x || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no certificate or output");
	memset(out, 0, sizeof(*out));
	memset(&id, 0, sizeof(id));
	names = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
	if (!names) {
		if (crit == -1 || crit == -2)
			return reader_refuse(ec, "san-missing",
					     crit == -1 ? "no subjectAltName"
							: "two subjectAltName extensions");
		return reader_refuse(ec, "san-malformed", "the subjectAltName does not decode");
	}
	int count = sk_GENERAL_NAME_num(names);
	for (int i = 0; i < count && !why; i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names, i);
		if (gn->type != GEN_URI) {
			why = "san-not-uri";
			what = "a name that is not a URI";
			break;
		}
		const ASN1_IA5STRING *uri = gn->d.uniformResourceIdentifier;
		const char *s = (const char *)ASN1_STRING_get0_data(uri);
		int len = ASN1_STRING_length(uri);
		size_t n = len > 0 ? (size_t)len : 0;
		if (s && memchr(s, '\0', n))
			n = 0; /* an embedded NUL: neither kind */
		if (s && has_prefix(s, n, SPIFFE_SCHEME)) {
			if (spiffe_at >= 0) {
				why = "spiffe-twice";
				what = "two SPIFFE IDs";
			} else if (n > FLEET_NODE_SPIFFE_ID_MAX || !spiffe_parse(s, n, &id)) {
				why = "spiffe-malformed";
				what = "the SPIFFE ID is not "
				       "spiffe://<trust domain>/<role>/<node id>";
			}
			spiffe_at = i;
		} else if (!s || !statement_ok_n(s, n)) {
			why = "san-not-statement";
			what = "a URI that is neither the SPIFFE ID nor a urn:bc: statement";
		}
	}
	if (!why && count > (int)NODE_URIS_MAX) {
		why = "san-too-many";
		what = "more than four URIs";
	} else if (!why && spiffe_at < 0) {
		why = "spiffe-missing";
		what = "no SPIFFE ID";
	} else if (!why && spiffe_at != 0) {
		why = "spiffe-not-first";
		what = "the SPIFFE ID is not the first URI";
	}
	GENERAL_NAMES_free(names);
	if (why)
		return reader_refuse(ec, why, what);
	*out = id;
	return FLEET_OK;
}
