/*
 * test_ca_node.c: node certificates from a PKCS#10 CSR (lib/ca.h NC1-NC11)
 * and the identity reader (NR1-NR6). Each refusal is produced with its
 * reason; the issued certificate is checked field by field, and verified as
 * a TLS client and server certificate under the CA. CSRs are made here with
 * OpenSSL directly; the reader's bad certificates are minted with the SANs
 * each rule forbids.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/ca.h"
#include "tests/unit/x509_mint.h"

#define T0 ((time_t)1800000000) /* 2027-01-15, inside every test CA's validity */

/* ---- fixtures ----------------------------------------------------------- */

static struct fleet_ca *ca_days(unsigned days, char **base_out)
{
	struct fleet_errctx ec = {0};
	struct fleet_ca *ca = NULL;
	char *base = make_temp_dir("canode");
	char dir[600];
	assert_non_null(base);
	snprintf(dir, sizeof(dir), "%s/ca", base);
	if (fleet_ca_init(dir, "Node CA", days, &ec) != FLEET_OK ||
	    fleet_ca_load(dir, &ca, &ec) != FLEET_OK)
		fail_msg("ca: %s", ec.detail);
	*base_out = base;
	return ca;
}

static struct fleet_ca *the_ca;
static char *the_base;

static int setup(void **state)
{
	(void)state;
	the_ca = ca_days(3650, &the_base);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fleet_ca_free(the_ca);
	rm_rf(the_base);
	free(the_base);
	return 0;
}

struct csr_opts {
	const EVP_MD *md;   /* NULL: SHA-256 (Ed25519: none) */
	EVP_PKEY *signer;   /* NULL: the key itself */
	int asks;           /* ask for a subject, SAN, CA:TRUE, usages, EKUs */
	long version;       /* 0: v1 */
};

struct der {
	unsigned char *p;
	size_t n;
};

static struct der csr_der(EVP_PKEY *k, const struct csr_opts *o)
{
	static const struct csr_opts none = {0};
	X509_REQ *r = X509_REQ_new();
	struct der d = {0};
	if (!o)
		o = &none;
	assert_non_null(r);
	assert_int_equal(X509_REQ_set_version(r, o->version), 1);
	X509_NAME *name = X509_REQ_get_subject_name(r);
	assert_true(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					       (const unsigned char *)(o->asks ? "admin" : "csr"),
					       -1, -1, 0));
	if (o->asks) {
		assert_true(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
						       (const unsigned char *)"evil", -1, -1, 0));
		STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
		static const struct {
			int nid;
			const char *v;
		} want[] = {
			{NID_subject_alt_name,
			 "URI:spiffe://evil.example/node/root,DNS:evil.example"},
			{NID_basic_constraints, "critical,CA:TRUE"},
			{NID_key_usage, "critical,keyCertSign,cRLSign"},
			{NID_ext_key_usage, "codeSigning,OCSPSigning"},
			{NID_netscape_comment, "please"},
		};
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, want[i].nid, want[i].v);
			assert_non_null(e);
			sk_X509_EXTENSION_push(exts, e);
		}
		assert_true(X509_REQ_add_extensions(r, exts));
		sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	}
	assert_true(X509_REQ_set_pubkey(r, k));
	EVP_PKEY *signer = o->signer ? o->signer : k;
	const EVP_MD *md = o->md ? o->md : EVP_sha256();
	if (EVP_PKEY_is_a(signer, "ED25519"))
		md = NULL;
	assert_true(X509_REQ_sign(r, signer, md) > 0);
	int n = i2d_X509_REQ(r, &d.p);
	assert_true(n > 0);
	d.n = (size_t)n;
	X509_REQ_free(r);
	return d;
}

static EVP_PKEY *ec_key(const char *curve)
{
	EVP_PKEY *k = EVP_EC_gen(curve);
	assert_non_null(k);
	return k;
}

static struct fleet_node_cert_request good_req(const struct der *d)
{
	struct fleet_node_cert_request r = {
		.csr_der = d->p,
		.csr_len = d->n,
		.trust_domain = "fleet.example",
		.node_id = "n-0042",
		.role = "node",
		.not_before = T0,
		.validity_seconds = 86400,
	};
	return r;
}

/* Issue, expecting a refusal with this error and reason; nothing issued,
 * OpenSSL's queue empty. */
static void refused(const struct fleet_node_cert_request *r, fleet_err want, const char *reason)
{
	struct fleet_errctx ec = {0};
	X509 *x = (X509 *)&ec; /* must come back NULL */
	fleet_err e = fleet_ca_issue_node(the_ca, r, &x, &ec);
	if (e != want || !ec.reason || strcmp(ec.reason, reason) != 0)
		fail_msg("want %s/%s, got %s/%s (%s)", fleet_err_str(want), reason,
			 fleet_err_str(e), ec.reason ? ec.reason : "-", ec.detail);
	assert_null(x);
	assert_true(ec.detail[0] != '\0');
	assert_int_equal(ERR_peek_error(), 0);
}

static void csr_refused(const struct der *d, fleet_err want, const char *reason)
{
	struct fleet_node_cert_request r = good_req(d);
	uint8_t h[32];
	struct fleet_errctx ec = {0};
	refused(&r, want, reason);
	/* fleet_csr_spki_sha256 judges the CSR alike. */
	assert_int_equal(fleet_csr_spki_sha256(d->p, d->n, h, &ec), want);
	assert_string_equal(ec.reason, reason);
	assert_int_equal(ERR_peek_error(), 0);
}

static X509 *issued(const struct fleet_node_cert_request *r)
{
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	if (fleet_ca_issue_node(the_ca, r, &x, &ec) != FLEET_OK)
		fail_msg("issue: %s (%s)", ec.detail, ec.reason ? ec.reason : "-");
	assert_non_null(x);
	assert_int_equal(ERR_peek_error(), 0);
	return x;
}

/* The SAN's URIs, in order, each checked to be a URI. */
static int san_uris(X509 *x, const char *out[8])
{
	int crit = 0;
	GENERAL_NAMES *gns = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
	assert_non_null(gns);
	assert_int_equal(crit, 0);
	int n = sk_GENERAL_NAME_num(gns);
	assert_true(n <= 8);
	static char keep[8][300];
	for (int i = 0; i < n; i++) {
		GENERAL_NAME *gn = sk_GENERAL_NAME_value(gns, i);
		assert_int_equal(gn->type, GEN_URI);
		const ASN1_STRING *s = gn->d.uniformResourceIdentifier;
		assert_true(ASN1_STRING_length(s) < 300);
		memcpy(keep[i], ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s));
		keep[i][ASN1_STRING_length(s)] = '\0';
		out[i] = keep[i];
	}
	GENERAL_NAMES_free(gns);
	return n;
}

static void spki_sha256_of(EVP_PKEY *k, uint8_t out[32])
{
	unsigned char *der = NULL;
	unsigned int n = 0;
	int len = i2d_PUBKEY(k, &der);
	assert_true(len > 0);
	assert_int_equal(EVP_Digest(der, (size_t)len, out, &n, EVP_sha256(), NULL), 1);
	OPENSSL_free(der);
}

/* The certificate verifies as a TLS client and a TLS server certificate
 * under the CA alone, at time t. */
static void chain_ok(X509 *x, time_t t)
{
	static const int purposes[] = {X509_PURPOSE_SSL_CLIENT, X509_PURPOSE_SSL_SERVER};
	for (size_t i = 0; i < 2; i++) {
		X509_STORE *st = X509_STORE_new();
		X509_STORE_CTX *ctx = X509_STORE_CTX_new();
		assert_true(X509_STORE_add_cert(st, fleet_ca_cert(the_ca)));
		assert_true(X509_STORE_CTX_init(ctx, st, x, NULL));
		X509_STORE_CTX_set_purpose(ctx, purposes[i]);
		X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), t);
		X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(ctx);
		X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_X509_STRICT);
		if (X509_verify_cert(ctx) != 1)
			fail_msg("chain: %s",
				 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
		X509_STORE_CTX_free(ctx);
		X509_STORE_free(st);
	}
}

static long seconds_between(const ASN1_TIME *a, const ASN1_TIME *b)
{
	int days = 0, secs = 0;
	assert_true(ASN1_TIME_diff(&days, &secs, a, b));
	return (long)days * 86400 + secs;
}

static void assert_time(const ASN1_TIME *t, time_t want)
{
	ASN1_TIME *w = ASN1_TIME_set(NULL, want);
	assert_non_null(w);
	assert_int_equal(seconds_between(w, t), 0);
	ASN1_TIME_free(w);
}

/* Every field NC11 names, for a certificate issued on r for key k. */
static void check_fields(X509 *x, const struct fleet_node_cert_request *r, EVP_PKEY *k)
{
	X509 *cacert = fleet_ca_cert(the_ca);

	assert_int_equal(X509_get_version(x), 2);
	/* Serial: positive, non-zero, at most 16 bytes. */
	const ASN1_INTEGER *sn = X509_get0_serialNumber(x);
	BIGNUM *bn = ASN1_INTEGER_to_BN(sn, NULL);
	assert_non_null(bn);
	assert_false(BN_is_negative(bn));
	assert_false(BN_is_zero(bn));
	assert_true(BN_num_bytes(bn) <= 16);
	BN_free(bn);
	/* Subject: exactly CN=<node id>, a UTF8String. */
	X509_NAME *subj = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_entry_count(subj), 1);
	X509_NAME_ENTRY *ne = X509_NAME_get_entry(subj, 0);
	assert_int_equal(OBJ_obj2nid(X509_NAME_ENTRY_get_object(ne)), NID_commonName);
	ASN1_STRING *cn = X509_NAME_ENTRY_get_data(ne);
	assert_int_equal(ASN1_STRING_type(cn), V_ASN1_UTF8STRING);
	assert_int_equal((size_t)ASN1_STRING_length(cn), strlen(r->node_id));
	assert_memory_equal(ASN1_STRING_get0_data(cn), r->node_id, strlen(r->node_id));
	/* Issuer: the CA. */
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(cacert)), 0);
	/* Validity: as requested. */
	if (r->not_before)
		assert_time(X509_get0_notBefore(x), r->not_before);
	assert_int_equal(seconds_between(X509_get0_notBefore(x), X509_get0_notAfter(x)),
			 (long)r->validity_seconds);
	assert_true(r->validity_seconds <= 86400);
	/* The key: the CSR's. */
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(x), k), 1);
	/* SAN: the SPIFFE ID first, then the statements, nothing else. */
	char spiffe[400];
	snprintf(spiffe, sizeof(spiffe), "spiffe://%s/%s/%s", r->trust_domain, r->role, r->node_id);
	const char *uris[8];
	int n = san_uris(x, uris);
	int want = 1;
	while (want <= 3 && r->statements[want - 1])
		want++;
	assert_int_equal(n, want);
	assert_string_equal(uris[0], spiffe);
	for (int i = 1; i < n; i++)
		assert_string_equal(uris[i], r->statements[i - 1]);
	/* basicConstraints critical CA:FALSE, no pathlen. */
	int crit = 0;
	BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_int_equal(crit, 1);
	assert_false(bc->ca);
	assert_null(bc->pathlen);
	BASIC_CONSTRAINTS_free(bc);
	/* keyUsage critical, digitalSignature only. */
	ASN1_BIT_STRING *ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
	assert_non_null(ku);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	/* EKU: exactly clientAuth and serverAuth, not critical. */
	EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(x, NID_ext_key_usage, &crit, NULL);
	assert_non_null(eku);
	assert_int_equal(crit, 0);
	assert_int_equal(sk_ASN1_OBJECT_num(eku), 2);
	assert_int_equal(OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)), NID_client_auth);
	assert_int_equal(OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 1)), NID_server_auth);
	sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
	/* Key identifiers: ours from our key, the authority's the CA's. */
	const ASN1_OCTET_STRING *ski = X509_get0_subject_key_id(x);
	const ASN1_OCTET_STRING *aki = X509_get0_authority_key_id(x);
	assert_non_null(ski);
	assert_non_null(aki);
	assert_int_equal(ASN1_OCTET_STRING_cmp(aki, X509_get0_subject_key_id(cacert)), 0);
	assert_int_not_equal(ASN1_OCTET_STRING_cmp(ski, aki), 0);
	/* Exactly these six extensions. */
	assert_int_equal(X509_get_ext_count(x), 6);
	/* Signed by the CA, ECDSA SHA-256; a TLS client and server chain. */
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(cacert)), 1);
	chain_ok(x, (r->not_before ? r->not_before : time(NULL)) + 1);
	/* The reader takes the identity back. */
	struct fleet_node_identity id;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_node_cert_spiffe_id(x, &id, &ec), FLEET_OK);
	assert_string_equal(id.spiffe_id, spiffe);
	assert_string_equal(id.trust_domain, r->trust_domain);
	assert_string_equal(id.role, r->role);
	assert_string_equal(id.node_id, r->node_id);
	/* fleet_csr_spki_sha256 is the certificate's key's hash. */
	uint8_t h[32], hk[32];
	assert_int_equal(fleet_csr_spki_sha256(r->csr_der, r->csr_len, h, &ec), FLEET_OK);
	spki_sha256_of(k, hk);
	assert_memory_equal(h, hk, 32);
}

/* ---- NC1: the CSR's encoding -------------------------------------------- */

static void test_csr_malformed(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct der t;

	/* Empty, NULL, garbage, truncated at every length. */
	t = (struct der){NULL, 0};
	csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	t = (struct der){d.p, 0};
	csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	t = (struct der){(unsigned char *)"not a csr at all", 16};
	csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	for (size_t n = 1; n < d.n; n++) {
		t = (struct der){d.p, n};
		csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	}
	/* A byte after it; two CSRs. */
	unsigned char *buf = malloc(2 * d.n);
	assert_non_null(buf);
	memcpy(buf, d.p, d.n);
	memcpy(buf + d.n, d.p, d.n);
	t = (struct der){buf, d.n + 1};
	buf[d.n] = 0;
	csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	buf[d.n] = d.p[0];
	t = (struct der){buf, 2 * d.n};
	csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	free(buf);
	/* Not DER: the outer length in a longer form than it needs (BER
	 * allows it; OpenSSL's parser takes it). */
	assert_int_equal(d.p[0], 0x30);
	size_t hdr = d.p[1] < 0x80 ? 2 : 2 + (d.p[1] & 0x7f), body = d.n - hdr;
	assert_true(body < 0x10000);
	buf = malloc(d.n + 4);
	assert_non_null(buf);
	buf[0] = 0x30, buf[1] = 0x83, buf[2] = 0, buf[3] = (unsigned char)(body >> 8),
	buf[4] = (unsigned char)body;
	memcpy(buf + 5, d.p + hdr, body);
	t = (struct der){buf, 5 + body};
	{
		const unsigned char *p = buf;
		X509_REQ *parsed = d2i_X509_REQ(NULL, &p, (long)t.n);
		assert_non_null(parsed); /* the parser took it: the DER check refuses it */
		X509_REQ_free(parsed);
	}
	csr_refused(&t, FLEET_E_MALFORMED, "csr-malformed");
	free(buf);
	/* A version 2 request. */
	struct csr_opts v2 = {.version = 1};
	struct der dv = csr_der(k, &v2);
	csr_refused(&dv, FLEET_E_MALFORMED, "csr-malformed");
	OPENSSL_free(dv.p);
	/* Past the cap. */
	unsigned char *big = calloc(1, FLEET_CSR_MAX + 1);
	assert_non_null(big);
	memcpy(big, d.p, d.n);
	t = (struct der){big, FLEET_CSR_MAX + 1};
	csr_refused(&t, FLEET_E_TOO_LARGE, "csr-malformed");
	free(big);
	/* And the untouched one issues. */
	struct fleet_node_cert_request r = good_req(&d);
	X509_free(issued(&r));
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* ---- NC2: the key ------------------------------------------------------- */

static void test_csr_key_type(void **state)
{
	(void)state;
	EVP_PKEY *keys[] = {
		mint_key_rsa(),
		EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"),
		ec_key("P-521"),
		ec_key("secp256k1"),
		ec_key("P-224"),
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		assert_non_null(keys[i]);
		struct der d = csr_der(keys[i], NULL);
		csr_refused(&d, FLEET_E_UNSUPPORTED, "csr-key-type");
		OPENSSL_free(d.p);
		EVP_PKEY_free(keys[i]);
	}

	/* A point off the curve (the last byte of y flipped; still DER): the
	 * key, not the signature, is refused. */
	EVP_PKEY *k = mint_key_ec();
	unsigned char pt[65];
	size_t ptlen = 0;
	assert_int_equal(EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pt,
							 sizeof(pt), &ptlen),
			 1);
	assert_int_equal(ptlen, 65);
	struct der d = csr_der(k, NULL);
	unsigned char *at = memmem(d.p, d.n, pt, ptlen);
	assert_non_null(at);
	at[64] ^= 1;
	csr_refused(&d, FLEET_E_UNSUPPORTED, "csr-key-type");
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);

	/* P-256 with explicit curve parameters instead of the curve's OID. */
	k = mint_key_ec();
	assert_int_equal(EVP_PKEY_set_utf8_string_param(k, OSSL_PKEY_PARAM_EC_ENCODING,
							OSSL_PKEY_EC_ENCODING_EXPLICIT),
			 1);
	d = csr_der(k, NULL);
	{
		const unsigned char *p = d.p;
		X509_REQ *parsed = d2i_X509_REQ(NULL, &p, (long)d.n);
		X509_ALGOR *a = NULL;
		int ptype = 0;
		assert_non_null(parsed);
		assert_true(X509_PUBKEY_get0_param(NULL, NULL, NULL, &a,
						   X509_REQ_get_X509_PUBKEY(parsed)));
		X509_ALGOR_get0(NULL, &ptype, NULL, a);
		assert_int_equal(ptype, V_ASN1_SEQUENCE); /* explicit, as meant */
		X509_REQ_free(parsed);
	}
	csr_refused(&d, FLEET_E_UNSUPPORTED, "csr-key-type");
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
	ERR_clear_error();
}

/* ---- NC3: the self-signature -------------------------------------------- */

static void test_csr_signature(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec(), *other = mint_key_ec();

	/* A flipped bit in the signature. */
	struct der d = csr_der(k, NULL);
	d.p[d.n - 1] ^= 1;
	csr_refused(&d, FLEET_E_VERIFY, "csr-signature");
	d.p[d.n - 1] ^= 1;
	/* A flipped bit in what it signs (the subject's CN "csr" -> "csq"). */
	unsigned char *cn = memmem(d.p, d.n, "csr", 3);
	assert_non_null(cn);
	cn[2] ^= 3;
	csr_refused(&d, FLEET_E_VERIFY, "csr-signature");
	OPENSSL_free(d.p);
	/* Signed by another key than the one it carries. */
	struct csr_opts o = {.signer = other};
	d = csr_der(k, &o);
	csr_refused(&d, FLEET_E_VERIFY, "csr-signature");
	OPENSSL_free(d.p);
	/* ECDSA with SHA-1. */
	o = (struct csr_opts){.md = EVP_sha1()};
	d = csr_der(k, &o);
	csr_refused(&d, FLEET_E_VERIFY, "csr-signature");
	OPENSSL_free(d.p);
	/* SHA-384 and SHA-512 are fine. */
	o = (struct csr_opts){.md = EVP_sha384()};
	d = csr_der(k, &o);
	struct fleet_node_cert_request r = good_req(&d);
	X509_free(issued(&r));
	OPENSSL_free(d.p);
	o = (struct csr_opts){.md = EVP_sha512()};
	d = csr_der(k, &o);
	r = good_req(&d);
	X509_free(issued(&r));
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
}

/* ---- NC4: what the CSR asks for is ignored ------------------------------ */

static void test_csr_requests_ignored(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct csr_opts o = {.asks = 1};
	struct der d = csr_der(k, &o);
	{
		/* The CSR does ask: five extensions, a two-entry subject. */
		const unsigned char *p = d.p;
		X509_REQ *parsed = d2i_X509_REQ(NULL, &p, (long)d.n);
		assert_non_null(parsed);
		STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(parsed);
		assert_int_equal(sk_X509_EXTENSION_num(exts), 5);
		sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
		assert_int_equal(X509_NAME_entry_count(X509_REQ_get_subject_name(parsed)), 2);
		X509_REQ_free(parsed);
	}
	struct fleet_node_cert_request r = good_req(&d);
	X509 *x = issued(&r);
	/* check_fields: subject CN=n-0042 alone, SAN the one SPIFFE ID,
	 * CA:FALSE, digitalSignature, clientAuth+serverAuth, six extensions. */
	check_fields(x, &r, k);
	assert_null(X509_get_ext_d2i(x, NID_netscape_comment, NULL, NULL));
	assert_int_equal(X509_check_ca(x), 0);
	X509_free(x);
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* ---- NC5-NC7: the names ------------------------------------------------- */

static void test_request_names(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r;
	char long_td[300], long_id[100];

	static const char *const bad_td[] = {
		"", "Fleet.example", "fleet/example", "fleet example", "fleet:443", "user@fleet",
		"fleet.exa\xc3\xa9mple", "fleet%2e",
	};
	for (size_t i = 0; i < sizeof(bad_td) / sizeof(bad_td[0]); i++) {
		r = good_req(&d);
		r.trust_domain = bad_td[i];
		refused(&r, FLEET_E_INVALID_ARG, "trust-domain");
	}
	r = good_req(&d);
	r.trust_domain = NULL;
	refused(&r, FLEET_E_INVALID_ARG, "trust-domain");
	memset(long_td, 'a', 256);
	long_td[256] = '\0';
	r.trust_domain = long_td;
	refused(&r, FLEET_E_INVALID_ARG, "trust-domain");
	long_td[255] = '\0'; /* 255: the most */
	X509 *x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);

	static const char *const bad_id[] = {
		"", "N-1", "n.1", "n/1", "n 1", "..", "n1\n", "n\xc3\xa9",
	};
	for (size_t i = 0; i < sizeof(bad_id) / sizeof(bad_id[0]); i++) {
		r = good_req(&d);
		r.node_id = bad_id[i];
		refused(&r, FLEET_E_INVALID_ARG, "node-id");
	}
	r = good_req(&d);
	r.node_id = NULL;
	refused(&r, FLEET_E_INVALID_ARG, "node-id");
	memset(long_id, 'z', 64);
	long_id[64] = '\0';
	r.node_id = long_id;
	refused(&r, FLEET_E_INVALID_ARG, "node-id");
	long_id[63] = '\0';
	x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);

	static const char *const bad_role[] = {"", "Node", "nodes", "nod", "admin", "ramdisk2",
					       "node/x", "agent"};
	for (size_t i = 0; i < sizeof(bad_role) / sizeof(bad_role[0]); i++) {
		r = good_req(&d);
		r.role = bad_role[i];
		refused(&r, FLEET_E_INVALID_ARG, "role");
	}
	r = good_req(&d);
	r.role = NULL;
	refused(&r, FLEET_E_INVALID_ARG, "role");
	static const char *const roles[] = {"node", "site", "ramdisk"};
	for (size_t i = 0; i < 3; i++) {
		r = good_req(&d);
		r.role = roles[i];
		r.node_id = "a_b-9";
		r.trust_domain = "td-1_x.example";
		r.validity_seconds = 3600;
		x = issued(&r);
		check_fields(x, &r, k);
		X509_free(x);
	}
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* ---- NC8: the statements ------------------------------------------------ */

static void test_request_statements(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r;
	char long_st[300];

	static const char *const bad[] = {
		"urn:bc:",            /* nothing after the prefix */
		"urn:bc",             /* no prefix */
		"URN:BC:x",           /* the prefix is exact */
		"spiffe://fleet.example/node/other", /* a second SPIFFE ID */
		"https://example.com/x",
		"urn:bc:a b",         /* not printable as a URI: space */
		"urn:bc:a\tb",
		"urn:bc:a\"b",
		"urn:bc:a<b>",
		"urn:bc:\xc3\xa9",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = good_req(&d);
		r.statements[0] = bad[i];
		refused(&r, FLEET_E_INVALID_ARG, "statement");
		/* In any place. */
		r.statements[0] = "urn:bc:ok";
		r.statements[1] = bad[i];
		refused(&r, FLEET_E_INVALID_ARG, "statement");
	}
	/* A hole: a statement after a NULL. */
	r = good_req(&d);
	r.statements[1] = "urn:bc:after-a-hole";
	refused(&r, FLEET_E_INVALID_ARG, "statement");
	r.statements[0] = "urn:bc:one";
	r.statements[2] = "urn:bc:after-a-hole";
	r.statements[1] = NULL;
	refused(&r, FLEET_E_INVALID_ARG, "statement");
	/* Twice the same. */
	r = good_req(&d);
	r.statements[0] = "urn:bc:same";
	r.statements[1] = "urn:bc:other";
	r.statements[2] = "urn:bc:same";
	refused(&r, FLEET_E_INVALID_ARG, "statement");
	/* Length: 256 bytes is the most. */
	memcpy(long_st, "urn:bc:", 7);
	memset(long_st + 7, 'x', 250);
	long_st[257] = '\0';
	r = good_req(&d);
	r.statements[0] = long_st;
	refused(&r, FLEET_E_INVALID_ARG, "statement");
	long_st[256] = '\0';
	X509 *x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* NC11 with statements: the SPIFFE ID first, then the three in order (four
 * URIs, the most); a comma in a statement stays one URI. */
static void test_issue_statements(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r = good_req(&d);
	r.statements[0] = "urn:bc:tpm-ak:sha256:000b" "aa55aa55aa55aa55aa55aa55aa55aa55";
	r.statements[1] = "urn:bc:zz,URI:spiffe://evil/node/x";
	r.statements[2] = "urn:bc:a";
	X509 *x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	/* One and two. */
	r.statements[2] = NULL;
	x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	r.statements[1] = NULL;
	x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* ---- NC9, NC10: validity ------------------------------------------------ */

static void test_request_validity(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r = good_req(&d);
	X509 *x;

	static const unsigned bad[] = {0, 1, 59, 86401, 86400 * 2, 0xffffffffu};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.validity_seconds = bad[i];
		refused(&r, FLEET_E_INVALID_ARG, "validity");
	}
	static const unsigned ok[] = {60, 3600, 86399, 86400};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		r.validity_seconds = ok[i];
		x = issued(&r);
		check_fields(x, &r, k);
		X509_free(x);
	}
	/* A ramdisk: 2 h at most. */
	r.role = "ramdisk";
	r.validity_seconds = 7201;
	refused(&r, FLEET_E_INVALID_ARG, "validity");
	r.validity_seconds = 7200;
	x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	/* not_before 0: now. */
	r = good_req(&d);
	r.not_before = 0;
	time_t before = time(NULL);
	x = issued(&r);
	time_t after = time(NULL);
	check_fields(x, &r, k);
	assert_true(X509_cmp_time(X509_get0_notBefore(x), &(time_t){before - 1}) > 0);
	assert_true(X509_cmp_time(X509_get0_notBefore(x), &(time_t){after + 1}) < 0);
	X509_free(x);
	/* Before 1970; past 9999. */
	r.not_before = -1;
	refused(&r, FLEET_E_INVALID_ARG, "validity");
	r.not_before = (time_t)253402300799LL;
	refused(&r, FLEET_E_INVALID_ARG, "validity");
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

static void test_request_outlives_ca(void **state)
{
	(void)state;
	char *base;
	struct fleet_ca *short_ca = ca_days(1, &base); /* now .. now + 1 day */
	struct fleet_ca *saved = the_ca;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r = good_req(&d);

	the_ca = short_ca;
	r.not_before = time(NULL) + 3600;
	refused(&r, FLEET_E_INVALID_ARG, "ca-expires");
	r.not_before = 0;
	r.validity_seconds = 3600;
	X509 *x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	the_ca = saved;

	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
	fleet_ca_free(short_ca);
	rm_rf(base);
	free(base);
}

/* ---- NC11: the certificate ---------------------------------------------- */

static void test_issue_fields(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r = good_req(&d);
	X509 *a = issued(&r), *b = issued(&r);
	check_fields(a, &r, k);
	check_fields(b, &r, k);
	/* Serials are drawn, not counted. */
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)),
			     0);
	X509_free(a);
	X509_free(b);
	/* Bad arguments. */
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	assert_int_equal(fleet_ca_issue_node(NULL, &r, &x, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_ca_issue_node(the_ca, NULL, &x, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_ca_issue_node(the_ca, &r, NULL, &ec), FLEET_E_INVALID_ARG);
	uint8_t h[32];
	assert_int_equal(fleet_csr_spki_sha256(d.p, d.n, NULL, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_csr_spki_sha256(d.p, d.n, h, NULL), FLEET_OK);
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

static void test_issue_p384(void **state)
{
	(void)state;
	EVP_PKEY *k = ec_key("P-384");
	struct csr_opts o = {.md = EVP_sha384()};
	struct der d = csr_der(k, &o);
	struct fleet_node_cert_request r = good_req(&d);
	r.role = "site";
	r.statements[0] = "urn:bc:site:primary";
	X509 *x = issued(&r);
	check_fields(x, &r, k);
	X509_free(x);
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* ---- the reader --------------------------------------------------------- */

static void test_reader_issued(void **state)
{
	(void)state;
	EVP_PKEY *k = mint_key_ec();
	struct der d = csr_der(k, NULL);
	struct fleet_node_cert_request r = good_req(&d);
	r.role = "ramdisk";
	r.validity_seconds = 600;
	r.statements[0] = "urn:bc:node:n-9999"; /* never the id */
	X509 *x = issued(&r);
	struct fleet_node_identity id;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_node_cert_spiffe_id(x, &id, &ec), FLEET_OK);
	assert_string_equal(id.spiffe_id, "spiffe://fleet.example/ramdisk/n-0042");
	assert_string_equal(id.trust_domain, "fleet.example");
	assert_string_equal(id.role, "ramdisk");
	assert_string_equal(id.node_id, "n-0042");
	assert_int_equal(fleet_node_cert_spiffe_id(NULL, &id, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(fleet_node_cert_spiffe_id(x, NULL, &ec), FLEET_E_INVALID_ARG);
	X509_free(x);
	OPENSSL_free(d.p);
	EVP_PKEY_free(k);
}

/* A certificate with these names in one SAN (each "URI:x" or "DNS:x"; a
 * name's bytes may hold a NUL when len is given), or none, or two SANs. */
struct name {
	int type;
	const char *v;
	size_t len; /* 0: strlen */
};

static X509 *cert_with(const struct name *names, size_t n, int san_exts)
{
	static EVP_PKEY *k;
	if (!k)
		k = mint_key_ec(); /* freed by the process's end */
	struct mint m = {.key = k, .cn = "n-0042", .not_before = T0, .not_after = T0 + 3600};
	X509 *x = mint_cert(&m);
	assert_non_null(x);
	for (int e = 0; e < san_exts; e++) {
		GENERAL_NAMES *gns = sk_GENERAL_NAME_new_null();
		for (size_t i = 0; i < n; i++) {
			GENERAL_NAME *gn = GENERAL_NAME_new();
			ASN1_IA5STRING *s = ASN1_IA5STRING_new();
			const char *v = names[i].v;
			assert_true(ASN1_STRING_set(s, v, names[i].len ? (int)names[i].len : -1));
			GENERAL_NAME_set0_value(gn, names[i].type, s);
			sk_GENERAL_NAME_push(gns, gn);
		}
		assert_int_equal(
			X509_add1_ext_i2d(x, NID_subject_alt_name, gns, 0, X509V3_ADD_APPEND), 1);
		GENERAL_NAMES_free(gns);
	}
	return x;
}

static void reader_refuses(const struct name *names, size_t n, int san_exts, const char *reason)
{
	X509 *x = cert_with(names, n, san_exts);
	struct fleet_node_identity id;
	struct fleet_errctx ec = {0};
	memset(&id, 'q', sizeof(id));
	fleet_err e = fleet_node_cert_spiffe_id(x, &id, &ec);
	if (e != FLEET_E_VERIFY || !ec.reason || strcmp(ec.reason, reason) != 0)
		fail_msg("want %s, got %s/%s (%s), first name %s", reason, fleet_err_str(e),
			 ec.reason ? ec.reason : "-", ec.detail, n ? names[0].v : "(none)");
	assert_int_equal(id.node_id[0], '\0'); /* nothing half-read */
	assert_int_equal(id.spiffe_id[0], '\0');
	assert_int_equal(ERR_peek_error(), 0);
	X509_free(x);
}

#define U(s) {GEN_URI, s, 0}
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_reader_refusals(void **state)
{
	(void)state;
	/* NR1: no SAN; two SANs. */
	const struct name good[] = {U("spiffe://td/node/a"), U("urn:bc:x")};
	reader_refuses(NULL, 0, 0, "san-missing");
	reader_refuses(good, N(good), 2, "san-missing");
	/* NR2: a DNS name, an IP-less dirName-free case: DNS. */
	const struct name dns[] = {U("spiffe://td/node/a"), {GEN_DNS, "a.td", 0}};
	reader_refuses(dns, N(dns), 1, "san-not-uri");
	const struct name email[] = {{GEN_EMAIL, "a@td", 0}, U("spiffe://td/node/a")};
	reader_refuses(email, N(email), 1, "san-not-uri");
	/* NR3: five URIs. */
	const struct name five[] = {U("spiffe://td/node/a"), U("urn:bc:1"), U("urn:bc:2"),
				    U("urn:bc:3"), U("urn:bc:4")};
	reader_refuses(five, N(five), 1, "san-too-many");
	/* NR4: none, two, not first. */
	reader_refuses(NULL, 0, 1, "spiffe-missing");
	const struct name only_st[] = {U("urn:bc:node:a")};
	reader_refuses(only_st, N(only_st), 1, "spiffe-missing");
	const struct name two[] = {U("spiffe://td/node/a"), U("spiffe://td/node/b")};
	reader_refuses(two, N(two), 1, "spiffe-twice");
	const struct name two_same[] = {U("spiffe://td/node/a"), U("urn:bc:x"),
					U("spiffe://td/node/a")};
	reader_refuses(two_same, N(two_same), 1, "spiffe-twice");
	const struct name second[] = {U("urn:bc:x"), U("spiffe://td/node/a")};
	reader_refuses(second, N(second), 1, "spiffe-not-first");
	/* NR5: anything but a urn:bc: statement after it. */
	static const char *const not_st[] = {"https://td/x", "urn:bc:", "urn:bc:a b",
					     "urn:other:x", "URN:BC:x", "SPIFFE://td/node/b"};
	for (size_t i = 0; i < N(not_st); i++) {
		const struct name s[] = {U("spiffe://td/node/a"), U(not_st[i])};
		reader_refuses(s, N(s), 1, "san-not-statement");
	}
	/* A NUL inside a name is neither kind. */
	const struct name nul[] = {U("spiffe://td/node/a"), {GEN_URI, "urn:bc:x\0y", 10}};
	reader_refuses(nul, N(nul), 1, "san-not-statement");
	const struct name nul_sp[] = {{GEN_URI, "spiffe://td/node/a\0b", 20}};
	reader_refuses(nul_sp, N(nul_sp), 1, "san-not-statement");
	/* NR6: a SPIFFE ID not of the node form. */
	static const char *const bad_id[] = {
		"spiffe://",
		"spiffe://td",
		"spiffe://td/",
		"spiffe://td/node",
		"spiffe://td/node/",
		"spiffe://td/node/a/",
		"spiffe://td/node/a/b",
		"spiffe://td//node/a",
		"spiffe:///node/a",
		"spiffe://TD/node/a",
		"spiffe://td/Node/a",
		"spiffe://td/admin/a",
		"spiffe://td/node/A",
		"spiffe://td/node/a.b",
		"spiffe://td/node/a?x=1",
		"spiffe://td/node/a#f",
		"spiffe://td:443/node/a",
		"spiffe://u@td/node/a",
		"spiffe://td/node/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	for (size_t i = 0; i < N(bad_id); i++) {
		const struct name s[] = {U(bad_id[i])};
		reader_refuses(s, N(s), 1, "spiffe-malformed");
	}
	/* And the forms it takes: four URIs, every role. */
	static const char *const roles[] = {"node", "site", "ramdisk"};
	for (size_t i = 0; i < 3; i++) {
		char sp[64];
		snprintf(sp, sizeof(sp), "spiffe://t-d_1.x/%s/a_b-0", roles[i]);
		const struct name four[] = {U(sp), U("urn:bc:1"), U("urn:bc:2"), U("urn:bc:3")};
		X509 *x = cert_with(four, N(four), 1);
		struct fleet_node_identity id;
		struct fleet_errctx ec = {0};
		assert_int_equal(fleet_node_cert_spiffe_id(x, &id, &ec), FLEET_OK);
		assert_string_equal(id.spiffe_id, sp);
		assert_string_equal(id.trust_domain, "t-d_1.x");
		assert_string_equal(id.role, roles[i]);
		assert_string_equal(id.node_id, "a_b-0");
		X509_free(x);
	}
}

/* The fuzz target's valid seed still issues, and its broken ones are
 * refused for the reason each is named after. */
static void test_fuzz_seed(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		fleet_err e;
		const char *reason;
	} seeds[] = {
		{"valid-p256.der", FLEET_OK, NULL},
		{"valid-p384.der", FLEET_OK, NULL},
		{"asks-ca-san.der", FLEET_OK, NULL},
		{"rsa.der", FLEET_E_UNSUPPORTED, "csr-key-type"},
		{"bad-signature.der", FLEET_E_VERIFY, "csr-signature"},
		{"trailing-byte.der", FLEET_E_MALFORMED, "csr-malformed"},
		{"two-csrs.der", FLEET_E_MALFORMED, "csr-malformed"},
		{"truncated.der", FLEET_E_MALFORMED, "csr-malformed"},
		{"long-length.der", FLEET_E_MALFORMED, "csr-malformed"},
		{"empty.der", FLEET_E_MALFORMED, "csr-malformed"},
	};
	for (size_t i = 0; i < N(seeds); i++) {
		char path[600];
		struct fleet_buf b;
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_node_csr/%s",
			 FLEET_SOURCE_DIR, seeds[i].file);
		read_file_or_fail(path, &b);
		struct der d = {b.data, b.len};
		struct fleet_node_cert_request r = good_req(&d);
		struct fleet_errctx ec = {0};
		X509 *x = NULL;
		fleet_err e = fleet_ca_issue_node(the_ca, &r, &x, &ec);
		if (e != seeds[i].e ||
		    (seeds[i].reason && (!ec.reason || strcmp(ec.reason, seeds[i].reason) != 0)))
			fail_msg("%s: got %s/%s", seeds[i].file, fleet_err_str(e),
				 ec.reason ? ec.reason : "-");
		X509_free(x);
		fb_free(&b);
	}
	/* The certificate seed (made by the openssl CLI, not by us) reads. */
	char path[600];
	struct fleet_buf b;
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_node_csr/node-cert.der",
		 FLEET_SOURCE_DIR);
	read_file_or_fail(path, &b);
	const unsigned char *p = b.data;
	X509 *x = d2i_X509(NULL, &p, (long)b.len);
	assert_non_null(x);
	struct fleet_node_identity id;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_node_cert_spiffe_id(x, &id, &ec), FLEET_OK);
	assert_string_equal(id.node_id, "n-1");
	assert_string_equal(id.role, "node");
	X509_free(x);
	fb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csr_malformed),
		cmocka_unit_test(test_csr_key_type),
		cmocka_unit_test(test_csr_signature),
		cmocka_unit_test(test_csr_requests_ignored),
		cmocka_unit_test(test_request_names),
		cmocka_unit_test(test_request_statements),
		cmocka_unit_test(test_request_validity),
		cmocka_unit_test(test_request_outlives_ca),
		cmocka_unit_test(test_issue_fields),
		cmocka_unit_test(test_issue_p384),
		cmocka_unit_test(test_issue_statements),
		cmocka_unit_test(test_reader_issued),
		cmocka_unit_test(test_reader_refusals),
		cmocka_unit_test(test_fuzz_seed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
