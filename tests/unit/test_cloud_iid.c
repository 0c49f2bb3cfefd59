/*
 * test_cloud_iid.c: the cloud-iid attestor (policy/attestors/cloud_iid.h;
 * spec 001 "cloud-iid", "Single-use evidence"), each refusal named after
 * its reason and each failing when its rule is removed.
 *
 * Everything is made at test time: RSA-2048 and P-256 JWKS keys (and a
 * key of another JWKS), two "AWS" certificates and keys (the region's and
 * another). GCP tokens carry Google's documented format=full claim set,
 * AWS documents AWS's documented fields, signed with PKCS7_sign and served
 * as base64 in 64-column lines as the pkcs7 endpoint does. verify runs in
 * a real join transaction on a temp SQLite store, and the use is recorded
 * as fleetd/join/join.c's finish() does from the result.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>

#include "fleetd/store/store.h"
#include "lib/attest_wire.h"
#include "lib/attest_wire_json.h"
#include "lib/hex.h"
#include "lib/join_evidence.h"
#include "lib/tpm_alg.h"
#include "policy/attestors/cloud_iid.h"
#include "policy/attestors/cloud_iid_int.h"
#include "tests/store/store_location.h"
#include "tests/testutil.h"
#include "tests/unit/x509_mint.h"

#define AUD "https://fleetd.test"
#define ACCT "123456789012"

/* ---- what every test shares ---------------------------------------------- */

static struct {
	char *dir;
	EVP_PKEY *rsa, *ec, *other; /* kids a1, e1 in jwks.json; b1 in other.json */
	EVP_PKEY *aws_key, *aws_other_key;
	X509 *aws_cert, *aws_other_cert;
	struct fleet_cloud_iid_config *cfg;
	struct fleet_attestor att;
	char csr_hex[65], other_csr_hex[65];
	bool embed_signer; /* aws_pkcs7 carries its signer's certificate */
} G;

struct fx {
	char *dir;
	char loc[1024]; /* dir, or its PostgreSQL database (store_location.h) */
	struct fleet_store *st;
};

static char *b64u(const uint8_t *p, size_t n)
{
	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_b64url_encode(p, n, &b), FLEET_OK);
	char *s = strndup((const char *)b.data, b.len);
	fb_free(&b);
	return s;
}

static char *b64u_str(const char *s)
{
	return b64u((const uint8_t *)s, strlen(s));
}

static char *bn_b64u(EVP_PKEY *k, const char *param)
{
	BIGNUM *bn = NULL;
	uint8_t buf[600];
	assert_int_equal(EVP_PKEY_get_bn_param(k, param, &bn), 1);
	int n = BN_bn2bin(bn, buf);
	BN_free(bn);
	return b64u(buf, (size_t)n);
}

/* A JWK of k under kid. */
static char *jwk(EVP_PKEY *k, const char *kid)
{
	char *out = malloc(2048);
	assert_non_null(out);
	if (EVP_PKEY_is_a(k, "RSA")) {
		char *n = bn_b64u(k, OSSL_PKEY_PARAM_RSA_N), *e = bn_b64u(k, OSSL_PKEY_PARAM_RSA_E);
		snprintf(out, 2048,
			 "{\"kty\":\"RSA\",\"alg\":\"RS256\",\"use\":\"sig\",\"kid\":\"%s\","
			 "\"n\":\"%s\",\"e\":\"%s\"}",
			 kid, n, e);
		free(n);
		free(e);
	} else {
		uint8_t pt[65];
		size_t len = 0;
		assert_int_equal(EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pt,
								  sizeof(pt), &len),
				 1);
		assert_int_equal(len, 65);
		char *x = b64u(pt + 1, 32), *y = b64u(pt + 33, 32);
		snprintf(out, 2048,
			 "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}",
			 kid, x, y);
		free(x);
		free(y);
	}
	return out;
}

static void write_file(const char *name, const char *text, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", G.dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, 0644);
}

static void write_jwks(const char *name, EVP_PKEY *k1, const char *kid1, EVP_PKEY *k2,
		       const char *kid2)
{
	char *a = jwk(k1, kid1), *b = k2 ? jwk(k2, kid2) : NULL, path[600], text[8192];
	/* An encryption key and an unsupported curve, skipped. */
	snprintf(text, sizeof(text),
		 "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"x\",\"k\":\"AAAA\"},%s%s%s]}", a,
		 b ? "," : "", b ? b : "");
	write_file(name, text, path, sizeof(path));
	free(a);
	free(b);
}

static void write_pem(const char *name, X509 *x)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", G.dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	PEM_write_X509(f, x);
	fclose(f);
}

static const char *config_text(char *buf, size_t cap, const char *extra_provider)
{
	snprintf(buf, cap,
		 "providers:\n"
		 "  - id: gcp\n"
		 "    type: gcp\n"
		 "    audience: " AUD "\n"
		 "    jwks_file: %s/jwks.json\n"
		 "    projects: [proj-a, proj-b, proj-c]\n"
		 "  - id: aws\n"
		 "    type: aws\n"
		 "    certificates:\n"
		 "      us-east-1: %s/aws.pem\n"
		 "      eu-west-1: %s/aws.pem\n"
		 "    accounts: ['" ACCT "', '210987654321', '555555555555']\n"
		 "  - id: aws-any\n"
		 "    type: aws\n"
		 "    certificates: {'*': %s/aws.pem}\n"
		 "  - id: corp\n"
		 "    type: oidc\n"
		 "    issuers: [https://idp.corp.test]\n"
		 "    audience: " AUD "\n"
		 "    jwks_file: %s/jwks.json\n"
		 "    account_claim: tenant.account\n"
		 "    instance_claim: sub\n"
		 "%s"
		 "resolve:\n"
		 "  - {provider: gcp, account: proj-a, pool: pool-a, site: site-1}\n"
		 "  - {provider: gcp, account: proj-b, instance: '999', pool: pool-b}\n"
		 "  - {provider: aws, account: '" ACCT "', pool: pool-aws}\n"
		 "  - {provider: aws, account: '210987654321', pool: pool-site, role: site}\n"
		 "  - {provider: aws-any, account: '" ACCT "', pool: pool-any}\n"
		 "  - {provider: corp, account: acct-1, pool: pool-corp}\n"
		 "  - {provider: gcp, account: proj-url, pool: pool-url}\n"
		 "roles: [node, site]\n",
		 G.dir, G.dir, G.dir, G.dir, G.dir, extra_provider ? extra_provider : "");
	return buf;
}

static struct fleet_cloud_iid_config *load_config(const char *text)
{
	char path[600];
	struct fleet_cloud_iid_config *c = NULL;
	struct fleet_errctx ec = {0};
	write_file("cloud-iid.yaml", text, path, sizeof(path));
	fleet_err e = fleet_cloud_iid_config_load(path, &c, &ec);
	if (e)
		fprintf(stderr, "config: line %u: %s\n", ec.line, ec.detail);
	assert_int_equal(e, FLEET_OK);
	return c;
}

static int group_setup(void **state)
{
	(void)state;
	char text[8192];
	uint8_t h[32];
	G.dir = make_temp_dir("cloud-iid");
	G.rsa = mint_key_rsa();
	G.ec = mint_key_ec();
	G.other = mint_key_rsa();
	G.aws_key = mint_key_rsa();
	G.aws_other_key = mint_key_rsa();
	struct mint m = {.key = G.aws_key, .cn = "ec2.amazonaws.com", .not_before = 1000,
			 .not_after = 1900000000};
	G.aws_cert = mint_cert(&m);
	m.key = G.aws_other_key;
	G.aws_other_cert = mint_cert(&m);
	write_jwks("jwks.json", G.rsa, "a1", G.ec, "e1");
	write_jwks("other.json", G.other, "b1", NULL, NULL);
	write_pem("aws.pem", G.aws_cert);
	G.cfg = load_config(config_text(text, sizeof(text), NULL));
	G.att = (struct fleet_attestor){.id = "cloud-iid",
					.verify = fleet_attestor_cloud_iid_verify,
					.cfg = G.cfg,
					.reasons = fleet_attestor_cloud_iid_reasons,
					.prepare = fleet_attestor_cloud_iid_prepare};
	fleet_hash(FLEET_ALG_SHA256, "csr-1", 5, h);
	fleet_hex_encode(h, 32, G.csr_hex);
	fleet_hash(FLEET_ALG_SHA256, "csr-2", 5, h);
	fleet_hex_encode(h, 32, G.other_csr_hex);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	fleet_cloud_iid_config_free(G.cfg);
	EVP_PKEY_free(G.rsa);
	EVP_PKEY_free(G.ec);
	EVP_PKEY_free(G.other);
	EVP_PKEY_free(G.aws_key);
	EVP_PKEY_free(G.aws_other_key);
	X509_free(G.aws_cert);
	X509_free(G.aws_other_cert);
	rm_rf(G.dir);
	free(G.dir);
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fleet_errctx ec = {0};
	assert_non_null(f);
	f->dir = make_temp_dir("cloud-iid-store");
	store_location_new(f->dir, f->loc, sizeof(f->loc));
	assert_int_equal(fleet_store_open(f->loc, FLEET_STORE_RW, &f->st, &ec), FLEET_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_store_close(f->st);
	store_location_free(f->loc);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* ---- tokens and documents ------------------------------------------------ */

/* A compact JWS of payload under a header {alg, kid}, signed with k
 * (NULL: an empty signature; alg HS256: an HMAC under a made-up key). */
static char *jws(const char *alg, const char *kid, EVP_PKEY *k, const char *payload)
{
	char hdr[256];
	snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"kid\":\"%s\",\"typ\":\"JWT\"}", alg, kid);
	char *h = b64u_str(hdr), *p = b64u_str(payload), *s = NULL;
	size_t in_len = strlen(h) + 1 + strlen(p);
	char *input = malloc(in_len + 1);
	snprintf(input, in_len + 1, "%s.%s", h, p);
	uint8_t sig[512];
	size_t sl = 0;
	if (!strcmp(alg, "HS256")) {
		unsigned int ml = 0;
		HMAC(EVP_sha256(), "secret", 6, (const uint8_t *)input, in_len, sig, &ml);
		sl = ml;
	} else if (k && EVP_PKEY_is_a(k, "EC")) {
		assert_int_equal(fleet_es256_sign(k, (const uint8_t *)input, in_len, sig, NULL),
				 FLEET_OK);
		sl = 64;
	} else if (k) {
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		sl = sizeof(sig);
		assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k), 1);
		assert_int_equal(EVP_DigestSign(md, sig, &sl, (const uint8_t *)input, in_len), 1);
		EVP_MD_CTX_free(md);
	}
	s = sl ? b64u(sig, sl) : strdup("");
	char *out = malloc(in_len + strlen(s) + 2);
	sprintf(out, "%s.%s", input, s);
	free(h);
	free(p);
	free(s);
	free(input);
	return out;
}

struct gcp {
	const char *iss, *aud_csr, *project, *instance;
	long long iat_off, exp_off; /* from now */
	bool no_name;               /* instance_name left out */
	bool iat_min;               /* iat INT64_MIN (an overflow of now - iat) */
};

/* Google's documented format=full claims (verifying-instance-identity). */
static char *gcp_claims(const struct gcp *g)
{
	long long now = time(NULL);
	char *out = malloc(2048);
	snprintf(out, 2048,
		 "{\"iss\":\"%s\",\"iat\":%lld,\"exp\":%lld,\"aud\":\"" AUD "#%s\","
		 "\"sub\":\"112233\",\"azp\":\"112233\",\"email\":\"vm@%s.iam.gserviceaccount.com\","
		 "\"email_verified\":true,\"google\":{\"compute_engine\":{\"project_id\":\"%s\","
		 "\"project_number\":424242,\"zone\":\"us-central1-a\",\"instance_id\":\"%s\","
		 "%s\"instance_creation_timestamp\":1700000000,"
		 "\"instance_confidentiality\":0,\"license_id\":[\"1000\"]}}}",
		 g->iss ? g->iss : "https://accounts.google.com",
		 g->iat_min ? LLONG_MIN : now + g->iat_off,
		 now + (g->exp_off ? g->exp_off : 3000), g->aud_csr ? g->aud_csr : G.csr_hex,
		 g->project ? g->project : "proj-a", g->project ? g->project : "proj-a",
		 g->instance ? g->instance : "4242", g->no_name ? "" : "\"instance_name\":\"vm-1\",");
	return out;
}

static uint8_t *evidence(const char *provider, const char *doc, const char *pkcs7, size_t *len)
{
	json_t *o = json_pack("{s:i,s:s,s:s}", "v", 1, "provider", provider, "document", doc);
	if (pkcs7)
		json_object_set_new(o, "pkcs7", json_string(pkcs7));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	*len = strlen(s);
	return (uint8_t *)s;
}

static uint8_t *gcp_evidence(const struct gcp *g, const char *alg, const char *kid,
			     EVP_PKEY *k, size_t *len)
{
	char *c = gcp_claims(g), *t = jws(alg, kid, k, c);
	uint8_t *ev = evidence("gcp", t, NULL, len);
	free(c);
	free(t);
	return ev;
}

/* An identity document as the endpoint serves it (pretty, newlines). */
static char *aws_doc(const char *account, const char *region, long long pending_off)
{
	char when[21], *out = malloc(2048);
	wj_time_format(time(NULL) + pending_off, when);
	snprintf(out, 2048,
		 "{\n  \"accountId\" : \"%s\",\n  \"architecture\" : \"x86_64\",\n"
		 "  \"availabilityZone\" : \"%sa\",\n  \"billingProducts\" : null,\n"
		 "  \"devpayProductCodes\" : null,\n  \"marketplaceProductCodes\" : null,\n"
		 "  \"imageId\" : \"ami-5fb8c835\",\n  \"instanceId\" : \"i-1234567890abcdef0\",\n"
		 "  \"instanceType\" : \"t2.micro\",\n  \"kernelId\" : null,\n"
		 "  \"pendingTime\" : \"%s\",\n  \"privateIp\" : \"10.158.112.84\",\n"
		 "  \"ramdiskId\" : null,\n  \"region\" : \"%s\",\n  \"version\" : \"2017-09-30\"\n}",
		 account, region, when, region);
	return out;
}

/* PKCS7_sign over doc, as base64 lines of 64 (the pkcs7 endpoint's form). */
static char *aws_pkcs7(const char *doc, X509 *cert, EVP_PKEY *key)
{
	BIO *in = BIO_new_mem_buf(doc, (int)strlen(doc));
	PKCS7 *p7 = PKCS7_sign(cert, key, NULL, in,
			       PKCS7_BINARY | (G.embed_signer ? 0 : PKCS7_NOCERTS));
	assert_non_null(p7);
	unsigned char *der = NULL;
	int n = i2d_PKCS7(p7, &der);
	assert_true(n > 0);
	unsigned char *b = malloc((size_t)n * 2 + 8);
	int bl = EVP_EncodeBlock(b, der, n);
	char *out = malloc((size_t)bl + (size_t)bl / 64 + 2), *o = out;
	for (int i = 0; i < bl; i++) {
		if (i && i % 64 == 0)
			*o++ = '\n';
		*o++ = (char)b[i];
	}
	*o = 0;
	free(b);
	OPENSSL_free(der);
	PKCS7_free(p7);
	BIO_free(in);
	return out;
}

static uint8_t *aws_evidence(const char *provider, const char *doc, const char *signed_doc,
			     X509 *cert, EVP_PKEY *key, size_t *len)
{
	char *p7 = aws_pkcs7(signed_doc ? signed_doc : doc, cert, key);
	uint8_t *ev = evidence(provider, doc, p7, len);
	free(p7);
	return ev;
}

/* ---- running a join ------------------------------------------------------ */

struct run {
	const struct fleet_attestor *att;
	struct fleet_join_input *in;
	struct fleet_attest_result out;
	bool record;
};

/* verify, then the use as fleetd/join/join.c's finish() records it. */
static fleet_err run_fn(struct fleet_store_tx *tx, void *arg)
{
	struct run *r = arg;
	fleet_err e = r->att->verify(r->att, tx, r->in, &r->out);
	if (e || r->out.outcome != FLEET_ATTEST_RESULT || !r->record || !r->out.use_subject[0])
		return e;
	e = fleet_store_tx_use(tx, r->att->id, r->out.use_subject, r->out.use_expires_at);
	if (e == FLEET_STORE_E_CONFLICT)
		return fleet_attest_refuse(&r->out, r->out.use_reason);
	return e;
}

/* The request and the service's input around evidence ev (len bytes),
 * for G.csr_hex. */
static void make_input(struct fleet_join_request *req, struct fleet_join_input *in, uint8_t *ev,
		       size_t len, const char *role)
{
	memset(req, 0, sizeof(*req));
	memset(in, 0, sizeof(*in));
	req->has_attestation = ev != NULL;
	req->attestation.data = ev;
	req->attestation.len = len;
	req->role = FLEET_JOIN_ROLE_NODE;
	in->req = req;
	in->role = role;
	memcpy(in->csr_sha256_hex, G.csr_hex, sizeof(in->csr_sha256_hex));
}

/* ev: NUL-terminated JSON (as evidence() makes it), or NULL for none. */
static struct fleet_attest_result join_as(struct fx *f, const struct fleet_attestor *att,
					  uint8_t *ev, const char *role, bool prepare)
{
	size_t len = ev ? strlen((const char *)ev) : 0;
	struct fleet_join_request req;
	struct fleet_join_input in;
	make_input(&req, &in, ev, len, role);
	if (prepare)
		assert_int_equal(att->prepare(att, &in), FLEET_OK);
	struct run r = {.att = att, .in = &in, .record = true};
	assert_int_equal(fleet_store_join_tx(f->st, run_fn, &r), FLEET_OK);
	/* A refusal leaves OpenSSL's queue empty. */
	assert_int_equal(ERR_peek_error(), 0);
	free(ev);
	return r.out;
}

static struct fleet_attest_result join(struct fx *f, uint8_t *ev)
{
	return join_as(f, &G.att, ev, "node", true);
}

static void listed(const char *reason)
{
	for (size_t i = 0; fleet_attestor_cloud_iid_reasons[i]; i++)
		if (!strcmp(fleet_attestor_cloud_iid_reasons[i], reason))
			return;
	fail_msg("reason %s is not in fleet_attestor_cloud_iid_reasons", reason);
}

static void refused(const struct fleet_attest_result *r, const char *reason)
{
	assert_int_equal(r->outcome, FLEET_ATTEST_REFUSE);
	assert_string_equal(r->reason, reason);
	listed(reason);
}

static void admitted(const struct fleet_attest_result *r, const char *pool)
{
	if (r->outcome == FLEET_ATTEST_REFUSE)
		fail_msg("refused %s", r->reason);
	assert_int_equal(r->outcome, FLEET_ATTEST_RESULT);
	assert_string_equal(r->pool, pool);
	assert_string_equal(r->node_id, "");
	assert_false(r->token_based);
	assert_int_equal(r->validity_seconds, 0);
	assert_int_equal(strlen(r->use_subject), 64);
	assert_true(r->use_expires_at == INT64_MAX);
	assert_string_equal(r->use_reason, "instance-reused");
}

#define GCP(...) (&(struct gcp){__VA_ARGS__})

/* One GCP token's join, refused with reason. */
static void gcp_refused(struct fx *f, const struct gcp *g, const char *alg, const char *kid,
			EVP_PKEY *k, const char *reason)
{
	size_t n;
	struct fleet_attest_result r = join(f, gcp_evidence(g, alg, kid, k, &n));
	refused(&r, reason);
}

/* One AWS document's join through provider, signed by cert and key. */
static struct fleet_attest_result aws_join(struct fx *f, const char *provider,
					   const char *account, const char *region, long long off,
					   X509 *cert, EVP_PKEY *key)
{
	size_t n;
	char *d = aws_doc(account, region, off);
	struct fleet_attest_result r = join(f, aws_evidence(provider, d, NULL, cert, key, &n));
	free(d);
	return r;
}

static void aws_refused(struct fx *f, const char *account, const char *region, long long off,
			X509 *cert, EVP_PKEY *key, const char *reason)
{
	struct fleet_attest_result r = aws_join(f, "aws", account, region, off, cert, key);
	refused(&r, reason);
}

/* ---- admitted ------------------------------------------------------------ */

static void test_gcp_rs256_admitted(void **state)
{
	size_t n;
	uint8_t *ev = gcp_evidence(GCP(.iat_off = -5), "RS256", "a1", G.rsa, &n);
	struct fleet_attest_result r = join(*state, ev);
	admitted(&r, "pool-a");
	assert_string_equal(r.site, "site-1");
	assert_string_equal(r.role, "node");
	/* SHA-256(provider 0 account 0 instance) */
	uint8_t h[32];
	char hex[65];
	fleet_hash(FLEET_ALG_SHA256, "gcp\0proj-a\0" "4242", 15, h);
	fleet_hex_encode(h, 32, hex);
	assert_string_equal(r.use_subject, hex);
}

static void test_gcp_es256_admitted(void **state)
{
	size_t n;
	uint8_t *ev = gcp_evidence(GCP(.iat_off = -5), "ES256", "e1", G.ec, &n);
	struct fleet_attest_result r = join(*state, ev);
	admitted(&r, "pool-a");
}

static void test_aws_admitted(void **state)
{
	struct fleet_attest_result r =
		aws_join(*state, "aws", ACCT, "us-east-1", -60, G.aws_cert, G.aws_key);
	admitted(&r, "pool-aws");
	assert_string_equal(r.site, "");
}

static void test_aws_star_region_admitted(void **state)
{
	struct fleet_attest_result r =
		aws_join(*state, "aws-any", ACCT, "ap-south-1", -60, G.aws_cert, G.aws_key);
	admitted(&r, "pool-any");
}

static char *oidc_token(const char *iss, const char *account, EVP_PKEY *k, const char *kid)
{
	char c[1024];
	long long now = time(NULL);
	if (account)
		snprintf(c, sizeof(c),
			 "{\"iss\":\"%s\",\"aud\":\"" AUD "#%s\",\"iat\":%lld,\"exp\":%lld,"
			 "\"sub\":\"vm-7\",\"tenant\":{\"account\":\"%s\"}}",
			 iss, G.csr_hex, now - 5, now + 600, account);
	else
		snprintf(c, sizeof(c),
			 "{\"iss\":\"%s\",\"aud\":\"" AUD "#%s\",\"iat\":%lld,\"exp\":%lld,"
			 "\"sub\":\"vm-7\",\"tenant\":{}}",
			 iss, G.csr_hex, now - 5, now + 600);
	return jws(k && EVP_PKEY_is_a(k, "EC") ? "ES256" : "RS256", kid, k, c);
}

static void test_oidc_admitted(void **state)
{
	size_t n;
	char *t = oidc_token("https://idp.corp.test", "acct-1", G.rsa, "a1");
	struct fleet_attest_result r = join(*state, evidence("corp", t, NULL, &n));
	admitted(&r, "pool-corp");
	free(t);
}

/* ---- the JOSE rules ------------------------------------------------------ */

static void test_cloud_iid_alg_none(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -5), "none", "a1", NULL, "cloud-iid-alg");
}

static void test_cloud_iid_alg_hs256(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -5), "HS256", "a1", NULL, "cloud-iid-alg");
}

static void test_cloud_iid_key_from_another_jwks(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -5), "RS256", "b1", G.other, "cloud-iid-key");
}

static void test_cloud_iid_key_unknown_kid(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -5), "RS256", "zz", G.rsa, "cloud-iid-key");
}

static void test_cloud_iid_key_of_another_alg(void **state)
{
	/* ES256 in the header, the kid of the RSA key: the key is not one
	 * that algorithm verifies with. */
	gcp_refused(*state, GCP(.iat_off = -5), "ES256", "a1", G.ec, "cloud-iid-key");
}

static void test_cloud_iid_signature_bad(void **state)
{
	size_t n;
	char *c = gcp_claims(GCP(.iat_off = -5));
	/* Another key under our kid: the signature does not hold. */
	char *t = jws("RS256", "a1", G.other, c);
	struct fleet_attest_result r = join(*state, evidence("gcp", t, NULL, &n));
	refused(&r, "cloud-iid-signature");
	free(t);
	t = jws("ES256", "e1", G.ec, c);
	char *last = strrchr(t, '.') + 5;
	*last = *last == 'A' ? 'B' : 'A';
	r = join(*state, evidence("gcp", t, NULL, &n));
	refused(&r, "cloud-iid-signature");
	free(t);
	free(c);
}

static void test_cloud_iid_signature_tampered_payload(void **state)
{
	size_t n;
	char *c = gcp_claims(GCP(.iat_off = -5, .project = "proj-b", .instance = "999"));
	char *c2 = gcp_claims(GCP(.iat_off = -5, .project = "proj-a", .instance = "999"));
	char *t = jws("RS256", "a1", G.rsa, c), *p2 = b64u_str(c2);
	/* The payload swapped, the header and the signature kept. */
	char *d1 = strchr(t, '.'), *d2 = strchr(d1 + 1, '.');
	char *tampered = malloc(strlen(t) + strlen(p2) + 1);
	sprintf(tampered, "%.*s.%s%s", (int)(d1 - t), t, p2, d2);
	struct fleet_attest_result r = join(*state, evidence("gcp", tampered, NULL, &n));
	refused(&r, "cloud-iid-signature");
	free(c);
	free(c2);
	free(t);
	free(p2);
	free(tampered);
}

static void test_cloud_iid_malformed(void **state)
{
	struct fx *f = *state;
	char *hj = b64u_str("{\"alg\":\"RS256\",\"kid\":\"a1\",\"jku\":\"https://x\"}");
	char jku[512];
	snprintf(jku, sizeof(jku),
		 "{\"v\":1,\"provider\":\"gcp\",\"document\":\"%s.e30.AAAA\"}", hj);
	free(hj);
	const char *const bad[] = {
		"not json",
		"[1]",
		"{\"v\":1,\"provider\":\"gcp\"}",
		"{\"v\":1,\"provider\":\"gcp\",\"document\":\"a.b.c\",\"extra\":1}",
		"{\"v\":1,\"provider\":\"gcp\",\"provider\":\"gcp\",\"document\":\"a.b.c\"}",
		"{\"v\":2,\"provider\":\"gcp\",\"document\":\"a.b.c\"}",
		"{\"v\":1,\"provider\":\"gcp\",\"document\":\"a.b.c\",\"pkcs7\":\"AAAA\"}",
		"{\"v\":1,\"provider\":\"aws\",\"document\":\"{}\"}",
		"{\"v\":1,\"provider\":\"gcp\",\"document\":\"a.b.c.d\"}",
		"{\"v\":1,\"provider\":\"gcp\",\"document\":\"e30=.e30.AAAA\"}",
		jku,
		NULL};
	for (size_t i = 0; bad[i]; i++) {
		struct fleet_attest_result r =
			join(f, (uint8_t *)strdup(bad[i]));
		refused(&r, "cloud-iid-malformed");
	}
	/* No evidence at all. */
	struct fleet_attest_result r = join(f, NULL);
	refused(&r, "cloud-iid-malformed");
	/* An AWS document with a field AWS does not document. */
	size_t n;
	char *d = aws_doc(ACCT, "us-east-1", -60);
	char *d2 = malloc(strlen(d) + 32);
	sprintf(d2, "{\"colour\":\"red\",%s", d + 1);
	r = join(f, aws_evidence("aws", d2, NULL, G.aws_cert, G.aws_key, &n));
	refused(&r, "cloud-iid-malformed");
	free(d);
	free(d2);
}

static void test_cloud_iid_provider(void **state)
{
	size_t n;
	char *c = gcp_claims(GCP(.iat_off = -5)), *t = jws("RS256", "a1", G.rsa, c);
	struct fleet_attest_result r = join(*state, evidence("azure", t, NULL, &n));
	refused(&r, "cloud-iid-provider");
	free(c);
	free(t);
}

/* ---- the claims ---------------------------------------------------------- */

static void test_cloud_iid_issuer(void **state)
{
	size_t n;
	gcp_refused(*state, GCP(.iat_off = -5, .iss = "https://idp.corp.test"), "RS256", "a1",
		    G.rsa, "cloud-iid-issuer");
	char *t = oidc_token("https://accounts.google.com", "acct-1", G.rsa, "a1");
	struct fleet_attest_result r = join(*state, evidence("corp", t, NULL, &n));
	refused(&r, "cloud-iid-issuer");
	free(t);
}

static void test_cloud_iid_audience(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -5, .aud_csr = G.other_csr_hex), "RS256", "a1",
		   G.rsa, "cloud-iid-audience");
}

static void test_cloud_iid_too_old(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -700), "RS256", "a1", G.rsa, "cloud-iid-too-old");
}

/* The oldest iat there is: age compared without overflowing (UBSan). */
static void test_cloud_iid_too_old_int64_min(void **state)
{
	gcp_refused(*state, GCP(.iat_min = true), "RS256", "a1", G.rsa, "cloud-iid-too-old");
}

static void test_cloud_iid_future(void **state)
{
	gcp_refused(*state, GCP(.iat_off = 120), "RS256", "a1", G.rsa, "cloud-iid-future");
}

static void test_cloud_iid_expired(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -100, .exp_off = -2), "RS256", "a1",
		   G.rsa, "cloud-iid-expired");
}

static void test_cloud_iid_claims(void **state)
{
	size_t n;
	gcp_refused(*state, GCP(.iat_off = -5, .no_name = true), "RS256", "a1", G.rsa,
		    "cloud-iid-claims");
	char *t = oidc_token("https://idp.corp.test", NULL, G.ec, "e1");
	struct fleet_attest_result r = join(*state, evidence("corp", t, NULL, &n));
	refused(&r, "cloud-iid-claims");
	free(t);
}

static void test_cloud_iid_project(void **state)
{
	gcp_refused(*state, GCP(.iat_off = -5, .project = "proj-z"), "RS256", "a1",
		   G.rsa, "cloud-iid-project");
}

/* ---- AWS ----------------------------------------------------------------- */

static void test_cloud_iid_account(void **state)
{
	aws_refused(*state, "999999999999", "us-east-1", -60, G.aws_cert, G.aws_key,
		    "cloud-iid-account");
}

static void test_cloud_iid_too_old_aws(void **state)
{
	aws_refused(*state, ACCT, "us-east-1", -1801, G.aws_cert, G.aws_key, "cloud-iid-too-old");
	aws_refused(*state, ACCT, "us-east-1", 300, G.aws_cert, G.aws_key, "cloud-iid-future");
}

static void test_cloud_iid_signature_aws_other_certificate(void **state)
{
	aws_refused(*state, ACCT, "us-east-1", -60, G.aws_other_cert,
		   G.aws_other_key, "cloud-iid-signature");
	/* Carrying its own certificate does not help: the signer is looked
	 * up in the configured certificate only (PKCS7_NOINTERN). */
	G.embed_signer = true;
	aws_refused(*state, ACCT, "us-east-1", -60, G.aws_other_cert, G.aws_other_key,
		    "cloud-iid-signature");
	G.embed_signer = false;
}

static void test_cloud_iid_signature_aws_document_differs(void **state)
{
	size_t n;
	/* The PKCS#7 signs one account's document; another rides beside it. */
	char *signed_doc = aws_doc("555555555555", "us-east-1", -60);
	char *d = aws_doc(ACCT, "us-east-1", -60);
	struct fleet_attest_result r =
		join(*state, aws_evidence("aws", d, signed_doc, G.aws_cert, G.aws_key, &n));
	refused(&r, "cloud-iid-signature");
	free(d);
	free(signed_doc);
}

static void test_cloud_iid_region(void **state)
{
	aws_refused(*state, ACCT, "ap-south-1", -60, G.aws_cert, G.aws_key, "cloud-iid-region");
}

/* ---- where it joins ------------------------------------------------------ */

static void test_unknown_instance(void **state)
{
	size_t n;
	/* proj-c is allowed but nothing resolves it; proj-b only instance 999. */
	uint8_t *ev = gcp_evidence(GCP(.iat_off = -5, .project = "proj-c"), "RS256", "a1", G.rsa, &n);
	struct fleet_attest_result r = join(*state, ev);
	refused(&r, "unknown-instance");
	ev = gcp_evidence(GCP(.iat_off = -5, .project = "proj-b", .instance = "998"), "RS256", "a1",
			  G.rsa, &n);
	r = join(*state, ev);
	refused(&r, "unknown-instance");
	ev = gcp_evidence(GCP(.iat_off = -5, .project = "proj-b", .instance = "999"), "RS256", "a1",
			  G.rsa, &n);
	r = join(*state, ev);
	admitted(&r, "pool-b");
}

static void test_cloud_iid_role(void **state)
{
	size_t n;
	uint8_t *ev = gcp_evidence(GCP(.iat_off = -5), "RS256", "a1", G.rsa, &n);
	struct fleet_attest_result r = join_as(*state, &G.att, ev, "ramdisk", true);
	refused(&r, "cloud-iid-role");
	/* The entry says site; the machine asks node. */
	char *d = aws_doc("210987654321", "eu-west-1", -60);
	r = join(*state, aws_evidence("aws", d, NULL, G.aws_cert, G.aws_key, &n));
	refused(&r, "cloud-iid-role");
	r = join_as(*state, &G.att, aws_evidence("aws", d, NULL, G.aws_cert, G.aws_key, &n),
		    "site", true);
	admitted(&r, "pool-site");
	assert_string_equal(r.role, "site");
	free(d);
}

static void test_instance_reused(void **state)
{
	struct fx *f = *state;
	size_t n;
	/* Two tokens of one instance, each fresh and for this CSR. */
	uint8_t *ev = gcp_evidence(GCP(.iat_off = -5), "RS256", "a1", G.rsa, &n);
	struct fleet_attest_result r1 = join(f, ev);
	admitted(&r1, "pool-a");
	ev = gcp_evidence(GCP(.iat_off = -3), "ES256", "e1", G.ec, &n);
	struct fleet_attest_result r2 = join(f, ev);
	refused(&r2, "instance-reused");
	assert_string_equal(r1.use_subject, r2.use_subject);
	/* An AWS document, replayed. */
	char *d = aws_doc(ACCT, "us-east-1", -60);
	struct fleet_attest_result a1 =
		join(f, aws_evidence("aws", d, NULL, G.aws_cert, G.aws_key, &n));
	admitted(&a1, "pool-aws");
	struct fleet_attest_result a2 =
		join(f, aws_evidence("aws", d, NULL, G.aws_cert, G.aws_key, &n));
	refused(&a2, "instance-reused");
	free(d);
	/* The record is kept for ever: a prune at the end of time keeps it. */
	size_t deleted = 99;
	assert_int_equal(fleet_store_attestation_uses_prune(f->st, (time_t)INT64_MAX - 1, 5000,
							    &deleted),
			 FLEET_OK);
	assert_int_equal(deleted, 0);
}

/* ---- the JWKS URL: fetched in prepare, never in verify --------------------- */

/* A JWKS server on a port the kernel picks (no collision with another
 * test): python3's http.server over dir, its port written to dir/port once
 * it listens. Waits up to 30 s (a loaded sanitizer run starts python
 * slowly); a server that never comes up fails the test rather than skip
 * it, so the rule is never left untested in CI. */
static pid_t serve(const char *dir, int *port)
{
	static const char prog[] =
		"import functools, http.server, sys\n"
		"h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
		"s = http.server.HTTPServer(('127.0.0.1', 0), h)\n"
		"open(sys.argv[1] + '/port.tmp', 'w').write(str(s.server_address[1]))\n"
		"import os; os.rename(sys.argv[1] + '/port.tmp', sys.argv[1] + '/port')\n"
		"s.serve_forever()\n";
	char path[600];
	snprintf(path, sizeof(path), "%s/port", dir);
	unlink(path);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The server's access log is noise here; without /dev/null the
		 * child still serves, only louder. */
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execlp("python3", "python3", "-c", prog, dir, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 600; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			int ok = fscanf(f, "%d", port) == 1;
			fclose(f);
			if (ok && *port > 0)
				return pid;
		}
		usleep(50000);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	fail_msg("the JWKS server (python3 http.server) did not start in 30 s");
	return -1;
}

static void test_jwks_url_fetched_in_prepare_not_verify(void **state)
{
	char text[8192], extra[512];
	int port = 0;
	pid_t pid = serve(G.dir, &port);
	snprintf(extra, sizeof(extra),
		 "  - id: gcpurl\n    type: gcp\n    audience: " AUD "\n"
		 "    jwks_url: http://127.0.0.1:%d/jwks.json\n",
		 port);
	struct fleet_cloud_iid_config *c = load_config(config_text(text, sizeof(text), extra));
	/* A resolve entry of the URL provider: swap the gcp one's provider. */
	for (size_t i = 0; i < c->n_resolve; i++)
		if (!strcmp(c->resolve[i].account, "proj-url"))
			snprintf(c->resolve[i].provider, sizeof(c->resolve[i].provider), "gcpurl");
	struct fleet_attestor att = G.att;
	att.cfg = c;
	struct ciid_jwks_src *src = (struct ciid_jwks_src *)&ciid_provider_find(c, "gcpurl")->jwks;
	size_t n;
	struct fleet_attest_result r;
#define URL_EV(kid, inst)                                                                       \
	({                                                                                     \
		char *c_ = gcp_claims(GCP(.iat_off = -5, .project = "proj-url", .instance = inst)); \
		char *t_ = jws("RS256", kid, G.rsa, c_);                                        \
		uint8_t *e_ = evidence("gcpurl", t_, NULL, &n);                                 \
		free(c_);                                                                       \
		free(t_);                                                                       \
		e_;                                                                             \
	})
	/* verify alone: nothing cached, nothing fetched. */
	r = join_as(*state, &att, URL_EV("a1", "1"), "node", false);
	refused(&r, "cloud-iid-key");
	assert_int_equal(src->fetches, 0);
	/* prepare fetches; verify then uses the cache. */
	r = join_as(*state, &att, URL_EV("a1", "1"), "node", true);
	admitted(&r, "pool-url");
	assert_int_equal(src->fetches, 1);
	/* The server gone: a cached key still verifies, and prepare within
	 * the hour fetches nothing. */
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	r = join_as(*state, &att, URL_EV("a1", "2"), "node", true);
	admitted(&r, "pool-url");
	assert_int_equal(src->fetches, 1);
	/* An unknown kid: prepare's refetch fails (no server), the fresh
	 * cache stays, verify refuses the kid. */
	r = join_as(*state, &att, URL_EV("q9", "3"), "node", true);
	refused(&r, "cloud-iid-key");
	assert_int_equal(src->fetches, 1);
	fleet_cloud_iid_config_free(c);
#undef URL_EV
}

/* ---- threads: verify reads the keys while prepare swaps them --------------- */

struct worker {
	struct fx *f;
	int id;
	int bad;
};

static void *verify_worker(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < 20; i++) {
		char inst[32], *c, *t;
		size_t n;
		snprintf(inst, sizeof(inst), "t%d-%d", w->id, i);
		c = gcp_claims(GCP(.iat_off = -5, .instance = inst));
		t = jws(i % 2 ? "ES256" : "RS256", i % 2 ? "e1" : "a1", i % 2 ? G.ec : G.rsa, c);
		uint8_t *ev = evidence("gcp", t, NULL, &n);
		struct fleet_join_request req;
		struct fleet_join_input in;
		make_input(&req, &in, ev, n, "node");
		struct run r = {.att = &G.att, .in = &in, .record = true};
		if (G.att.prepare(&G.att, &in) != FLEET_OK ||
		    fleet_store_join_tx(w->f->st, run_fn, &r) != FLEET_OK ||
		    r.out.outcome != FLEET_ATTEST_RESULT)
			w->bad++;
		free(ev);
		free(c);
		free(t);
	}
	return NULL;
}

static void *reload_worker(void *arg)
{
	struct worker *w = arg;
	char path[600];
	snprintf(path, sizeof(path), "%s/jwks.json", G.dir);
	for (int i = 0; i < 40; i++) {
		/* A new mtime: the next prepare reads the file again. */
		struct timespec ts[2] = {{.tv_sec = 1000 + i}, {.tv_sec = 1000 + i}};
		utimensat(AT_FDCWD, path, ts, 0);
		size_t n;
		uint8_t *ev = evidence("gcp", "x.y.z", NULL, &n);
		struct fleet_join_request req;
		struct fleet_join_input in;
		make_input(&req, &in, ev, n, "node");
		if (G.att.prepare(&G.att, &in) != FLEET_OK)
			w->bad++;
		free(ev);
	}
	return NULL;
}

static void test_jwks_reload_while_verifying(void **state)
{
	struct worker w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.f = *state, .id = i};
		assert_int_equal(pthread_create(&th[i], NULL, i ? verify_worker : reload_worker,
						&w[i]),
				 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
}

/* ---- the config file ----------------------------------------------------- */

static void config_refused(const char *text, const char *words)
{
	char path[600];
	struct fleet_cloud_iid_config *c = NULL;
	struct fleet_errctx ec = {0};
	write_file("bad.yaml", text, path, sizeof(path));
	assert_int_not_equal(fleet_cloud_iid_config_load(path, &c, &ec), FLEET_OK);
	assert_null(c);
	if (!strstr(ec.detail, words))
		fail_msg("'%s' does not say '%s'", ec.detail, words);
}

static void test_config_refusals(void **state)
{
	(void)state;
	char t[2048];
	config_refused("providers:\n  - {id: a, type: aws, certificates: {'*': /nonexistent}, "
		       "colour: red}\n",
		       "providers[0]: ");
	config_refused("providers:\n  - {id: a, type: aws, projects: [p]}\n",
		       "projects is not for a aws provider");
	config_refused("providers:\n  - {id: g, type: gcp, audience: x, "
		       "jwks_url: 'http://example.com/k'}\n",
		       "jwks_url must be https://");
	snprintf(t, sizeof(t),
		 "providers:\n  - {id: g, type: gcp, audience: x, jwks_file: %s/jwks.json}\n"
		 "resolve:\n  - {provider: h, account: p, pool: q}\n",
		 G.dir);
	config_refused(t, "names no configured provider");
	snprintf(t, sizeof(t),
		 "providers:\n  - {id: g, type: gcp, audience: x, jwks_file: %s/aws.pem}\n", G.dir);
	config_refused(t, "JWKS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_gcp_rs256_admitted),
		T(test_gcp_es256_admitted),
		T(test_aws_admitted),
		T(test_aws_star_region_admitted),
		T(test_oidc_admitted),
		T(test_cloud_iid_alg_none),
		T(test_cloud_iid_alg_hs256),
		T(test_cloud_iid_key_from_another_jwks),
		T(test_cloud_iid_key_unknown_kid),
		T(test_cloud_iid_key_of_another_alg),
		T(test_cloud_iid_signature_bad),
		T(test_cloud_iid_signature_tampered_payload),
		T(test_cloud_iid_malformed),
		T(test_cloud_iid_provider),
		T(test_cloud_iid_issuer),
		T(test_cloud_iid_audience),
		T(test_cloud_iid_too_old),
		T(test_cloud_iid_future),
		T(test_cloud_iid_expired),
		T(test_cloud_iid_claims),
		T(test_cloud_iid_project),
		T(test_cloud_iid_account),
		T(test_cloud_iid_too_old_aws),
		T(test_cloud_iid_signature_aws_other_certificate),
		T(test_cloud_iid_signature_aws_document_differs),
		T(test_cloud_iid_region),
		T(test_unknown_instance),
		T(test_cloud_iid_role),
		T(test_instance_reused),
		T(test_cloud_iid_too_old_int64_min),
		T(test_jwks_url_fetched_in_prepare_not_verify),
		T(test_jwks_reload_while_verifying),
		T(test_config_refusals),
#undef T
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
