/*
 * test_kubelet_csr.c: C1-C7 of fleetd/provision/kubelet_csr.h. Requests
 * are made here with OpenSSL, as a kubelet makes them (an EC P-256 key,
 * O=system:nodes, CN=system:node:<name>, no extensions); each case changes
 * one thing and expects the refusal that names it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "fleetd/provision/kubelet_csr.h"

static const char *const USAGES[] = {"digital signature", "client auth"};

struct req_opts {
	const char *cn, *o, *ou;
	const char *san;      /* a subjectAltName to request, or NULL */
	int rsa_bits;         /* 0: EC P-256 */
	bool break_signature; /* flip a byte of the signature */
};

/* A PEM request as the options say; the caller frees it. */
static char *make_req(const struct req_opts *o, size_t *len)
{
	EVP_PKEY *k = o->rsa_bits ? EVP_RSA_gen((unsigned)o->rsa_bits)
				  : EVP_EC_gen("P-256");
	assert_non_null(k);
	X509_REQ *r = X509_REQ_new();
	X509_NAME *n = X509_REQ_get_subject_name(r);
	if (o->o)
		X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)o->o, -1,
					   -1, 0);
	if (o->ou)
		X509_NAME_add_entry_by_txt(n, "OU", MBSTRING_UTF8, (const unsigned char *)o->ou, -1,
					   -1, 0);
	if (o->cn)
		X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)o->cn, -1,
					   -1, 0);
	X509_REQ_set_pubkey(r, k);
	if (o->san) {
		STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
		X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, o->san);
		assert_non_null(e);
		sk_X509_EXTENSION_push(exts, e);
		X509_REQ_add_extensions(r, exts);
		sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	}
	assert_true(X509_REQ_sign(r, k, EVP_sha256()) > 0);
	if (o->break_signature) {
		const ASN1_BIT_STRING *sig;
		X509_REQ_get0_signature(r, &sig, NULL);
		((ASN1_BIT_STRING *)sig)->data[10] ^= 1;
	}
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509_REQ(b, r);
	char *data;
	long n2 = BIO_get_mem_data(b, &data);
	char *out = malloc((size_t)n2 + 1);
	memcpy(out, data, (size_t)n2);
	out[n2] = '\0';
	*len = (size_t)n2;
	BIO_free(b);
	X509_REQ_free(r);
	EVP_PKEY_free(k);
	return out;
}

static struct fleet_decision judge_with(const char *pem, size_t len, const char *signer,
					const char *user, const char *const *u, size_t nu)
{
	struct fleet_kubelet_csr c = {.signer_name = signer,
				      .username = user,
				      .usages = u,
				      .n_usages = nu,
				      .request = (const uint8_t *)pem,
				      .request_len = len};
	return fleet_kubelet_csr_judge(&c, "abcdef", "w1");
}

static void expect(struct fleet_decision d, const char *reason)
{
	if (!reason) {
		if (d.outcome != FLEET_PASSED)
			fail_msg("want a pass, got %d %s", (int)d.outcome, d.reason ? d.reason : "");
		return;
	}
	if (d.outcome != FLEET_REFUSED || !d.reason || strcmp(d.reason, reason) != 0)
		fail_msg("want refused %s, got %d %s", reason, (int)d.outcome,
			 d.reason ? d.reason : "");
}

#define GOOD_OPTS {.cn = "system:node:w1", .o = "system:nodes"}
#define SIGNER FLEET_KUBELET_SIGNER
#define USER "system:bootstrap:abcdef"

static void kubelets_request_passes(void **state)
{
	(void)state;
	size_t len;
	struct req_opts o = GOOD_OPTS;
	char *pem = make_req(&o, &len);
	expect(judge_with(pem, len, SIGNER, USER, USAGES, 2), NULL);
	static const char *const three[] = {"key encipherment", "client auth", "digital signature"};
	expect(judge_with(pem, len, SIGNER, USER, three, 3), NULL);
	/* C1, C2 */
	expect(judge_with(pem, len, "kubernetes.io/kubelet-serving", USER, USAGES, 2), "csr-signer");
	expect(judge_with(pem, len, NULL, USER, USAGES, 2), "csr-signer");
	expect(judge_with(pem, len, SIGNER, "system:bootstrap:zzzzzz", USAGES, 2), "csr-requester");
	expect(judge_with(pem, len, SIGNER, "system:node:w1", USAGES, 2), "csr-requester");
	/* C6 */
	static const char *const server[] = {"digital signature", "server auth"};
	static const char *const dup[] = {"digital signature", "client auth", "client auth"};
	static const char *const extra[] = {"digital signature", "client auth", "server auth"};
	static const char *const one[] = {"client auth"};
	expect(judge_with(pem, len, SIGNER, USER, server, 2), "csr-usages");
	expect(judge_with(pem, len, SIGNER, USER, dup, 3), "csr-usages");
	expect(judge_with(pem, len, SIGNER, USER, extra, 3), "csr-usages");
	expect(judge_with(pem, len, SIGNER, USER, one, 1), "csr-usages");
	/* C3: two blocks, another kind, trailing junk inside, too large. */
	char two[8192];
	snprintf(two, sizeof(two), "%s%s", pem, pem);
	expect(judge_with(two, strlen(two), SIGNER, USER, USAGES, 2), "csr-malformed");
	char other[8192];
	snprintf(other, sizeof(other), "%s", pem);
	char *t = strstr(other, "CERTIFICATE REQUEST");
	memcpy(t, "CERTIFICATE\n", 12);
	expect(judge_with(other, strlen(other), SIGNER, USER, USAGES, 2), "csr-malformed");
	expect(judge_with("not pem", 7, SIGNER, USER, USAGES, 2), "csr-malformed");
	expect(judge_with(pem, 0, SIGNER, USER, USAGES, 2), "csr-malformed");
	free(pem);
}

static void subject_is_this_node_alone(void **state)
{
	(void)state;
	size_t len;
	struct req_opts cases[] = {
		{.cn = "system:node:w2", .o = "system:nodes"},
		{.cn = "system:node:w1", .o = "system:masters"},
		{.cn = "system:node:w1"},
		{.o = "system:nodes"},
		{.cn = "system:node:w1", .o = "system:nodes", .ou = "x"},
		{.cn = "system:node:w1x", .o = "system:nodes"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *pem = make_req(&cases[i], &len);
		expect(judge_with(pem, len, SIGNER, USER, USAGES, 2), "csr-subject");
		free(pem);
	}
}

static void no_extensions_no_bad_keys_no_bad_signatures(void **state)
{
	(void)state;
	size_t len;
	struct req_opts san = GOOD_OPTS;
	san.san = "DNS:w1.folly.lan";
	char *pem = make_req(&san, &len);
	expect(judge_with(pem, len, SIGNER, USER, USAGES, 2), "csr-extensions");
	free(pem);
	struct req_opts ip = GOOD_OPTS;
	ip.san = "IP:10.0.0.1";
	pem = make_req(&ip, &len);
	expect(judge_with(pem, len, SIGNER, USER, USAGES, 2), "csr-extensions");
	free(pem);
	struct req_opts weak = GOOD_OPTS;
	weak.rsa_bits = 1024;
	pem = make_req(&weak, &len);
	expect(judge_with(pem, len, SIGNER, USER, USAGES, 2), "csr-key");
	free(pem);
	struct req_opts rsa = GOOD_OPTS;
	rsa.rsa_bits = 2048;
	pem = make_req(&rsa, &len);
	static const char *const three[] = {"digital signature", "key encipherment", "client auth"};
	expect(judge_with(pem, len, SIGNER, USER, three, 3), NULL);
	free(pem);
	struct req_opts forged = GOOD_OPTS;
	forged.break_signature = true;
	pem = make_req(&forged, &len);
	expect(judge_with(pem, len, SIGNER, USER, USAGES, 2), "csr-signature");
	free(pem);
}

/* C3's canonical bytes. The attack an adversarial review found: block A is
 * this node's request with "-x" after its last base64 line (OpenSSL stops
 * at the '-' and decodes it; Go's strict base64 refuses it and skips the
 * block), block B another node's request behind a header line without the
 * blank line after it (OpenSSL fails on it, so a second read finds
 * nothing; Go reads it as a header and decodes B). fleetd would judge A
 * while Kubernetes signs B. Any spelling but the canonical one is refused. */
static void only_the_canonical_spelling_is_judged(void **state)
{
	(void)state;
	size_t la, lb;
	struct req_opts mine = GOOD_OPTS;
	struct req_opts victim = {.cn = "system:node:victim", .o = "system:nodes"};
	char *a = make_req(&mine, &la), *b = make_req(&victim, &lb);
	static char both[16384];
	char *end = strstr(a, "\n-----END");
	assert_non_null(end);
	char *bb = strstr(b, "\n") + 1; /* after B's BEGIN line */
	snprintf(both, sizeof(both), "%.*s-x%s-----BEGIN CERTIFICATE REQUEST-----\nX-Hdr: y\n%s",
		 (int)(end - a), a, end, bb);
	expect(judge_with(both, strlen(both), SIGNER, USER, USAGES, 2), "csr-malformed");
	/* Around the canonical block: text before, after, CRLF line ends. */
	char around[16384];
	snprintf(around, sizeof(around), "hello\n%s", a);
	expect(judge_with(around, strlen(around), SIGNER, USER, USAGES, 2), "csr-malformed");
	snprintf(around, sizeof(around), "%s\n", a);
	expect(judge_with(around, strlen(around), SIGNER, USER, USAGES, 2), "csr-malformed");
	size_t o = 0;
	for (const char *q = a; *q; q++) {
		if (*q == '\n')
			around[o++] = '\r';
		around[o++] = *q;
	}
	around[o] = '\0';
	expect(judge_with(around, o, SIGNER, USER, USAGES, 2), "csr-malformed");
	/* The canonical bytes themselves pass. */
	expect(judge_with(a, la, SIGNER, USER, USAGES, 2), NULL);
	free(a);
	free(b);
	/* A node name or token id that does not fit is no decision to make. */
	char pem_dummy[] = "x";
	struct fleet_kubelet_csr c = {.signer_name = SIGNER, .username = USER, .usages = USAGES,
				      .n_usages = 2, .request = (const uint8_t *)pem_dummy,
				      .request_len = 1};
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(fleet_kubelet_csr_judge(&c, "abcdef", longname).outcome, FLEET_FAILED);
	assert_int_equal(fleet_kubelet_csr_judge(&c, "abcdefg", "w1").outcome, FLEET_FAILED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kubelets_request_passes),
		cmocka_unit_test(subject_is_this_node_alone),
		cmocka_unit_test(no_extensions_no_bad_keys_no_bad_signatures),
		cmocka_unit_test(only_the_canonical_spelling_is_judged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
