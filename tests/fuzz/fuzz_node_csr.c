/*
 * fuzz_node_csr.c: a CSR as a joining machine sends it, through everything
 * the node CA does with one (lib/ca.h NC1-NC11): fleet_csr_spki_sha256 and
 * fleet_ca_issue_node with a valid request; and the same bytes read as a
 * certificate by the identity reader fleet_node_cert_spiffe_id (NR1-NR6).
 *
 * The CA is a fixed P-256 key and certificate (below; made once with the
 * openssl CLI), loaded once through fleet_ca_load from a directory made
 * in a temporary directory at the first call and removed at once (the CA
 * is then in memory). notBefore is the CA's notBefore plus a day, so a
 * run does not depend on the clock.
 *
 * Each call returns; a refusal has a reason, leaves no certificate and
 * OpenSSL's queue empty; an issued certificate carries exactly the
 * request's SPIFFE ID (read back by the reader), the CSR's key (its
 * SHA-256 the one fleet_csr_spki_sha256 gave), and verifies under the CA.
 * Seeds (corpus/fuzz_node_csr/): valid P-256 and P-384 CSRs, a CSR asking
 * for CA:TRUE and a SAN, and refusals of each kind (RSA, a bad signature,
 * a trailing byte, two CSRs, truncated, a BER length, empty).
 */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/ca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char ca_key_pem[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgP6rTmXRoaJ3BAPmS\n"
	"+H3FfiYW16eNAzq/HiPvcPoWyeqhRANCAATJ7jEf+UzK48oI0EVmt+pn8iY5GdEW\n"
	"KoxcvbOog0e49Q9FXa7SGEjI1z1LXmJ+0QiG7BWYRLseNkZjAepa1q9s\n"
	"-----END PRIVATE KEY-----\n";

static const char ca_crt_pem[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUW25p0hAdXGw7ARfg+ycqHHv8MWkwCgYIKoZIzj0EAwIw\n"
	"GzEZMBcGA1UEAwwQZnV6el9ub2RlX2NzciBDQTAeFw0yNjEyMDEyMzE0MzZaFw00\n"
	"NjExMjYyMzE0MzZaMBsxGTAXBgNVBAMMEGZ1enpfbm9kZV9jc3IgQ0EwWTATBgcq\n"
	"hkjOPQIBBggqhkjOPQMBBwNCAATJ7jEf+UzK48oI0EVmt+pn8iY5GdEWKoxcvbOo\n"
	"g0e49Q9FXa7SGEjI1z1LXmJ+0QiG7BWYRLseNkZjAepa1q9so2MwYTAdBgNVHQ4E\n"
	"FgQUCZSEk4wtfH1BSnx6Ewmpgog9rJYwHwYDVR0jBBgwFoAUCZSEk4wtfH1BSnx6\n"
	"Ewmpgog9rJYwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIhAPdF+AoZjEJ+BpCcnTJp/l93NulEpGlvhTEetmK/26qwAiAo\n"
	"HlVSUYEWkEOHui2pKCsYlWdnZj4DQ8j2OBIpDDk2zg==\n"
	"-----END CERTIFICATE-----\n";

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f || fchmod(fileno(f), mode) != 0 || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static const struct fleet_ca *fixed_ca(time_t *not_before)
{
	static struct fleet_ca *ca;
	static time_t nb;
	if (!ca) {
		char dir[] = "/tmp/fuzz_node_csr.XXXXXX", key[64], crt[64];
		struct fleet_errctx ec;
		memset(&ec, 0, sizeof(ec));
		if (!mkdtemp(dir))
			abort();
		snprintf(key, sizeof(key), "%s/ca.key", dir);
		snprintf(crt, sizeof(crt), "%s/ca.crt", dir);
		write_file(key, ca_key_pem, 0600);
		write_file(crt, ca_crt_pem, 0644);
		fleet_err e = fleet_ca_load(dir, &ca, &ec);
		unlink(key);
		unlink(crt);
		rmdir(dir);
		if (e != FLEET_OK)
			abort();
		struct tm tm;
		if (!ASN1_TIME_to_tm(X509_get0_notBefore(fleet_ca_cert(ca)), &tm))
			abort();
		nb = timegm(&tm) + 86400;
	}
	*not_before = nb;
	return ca;
}

static void refused(fleet_err e, const struct fleet_errctx *ec)
{
	if (e == FLEET_OK || !ec->reason || ec->detail[0] == '\0' || ERR_peek_error() != 0)
		abort();
}

static void spki_hash(X509 *x, uint8_t out[32])
{
	unsigned char *der = NULL;
	unsigned int n = 0;
	int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
	if (len <= 0 || EVP_Digest(der, (size_t)len, out, &n, EVP_sha256(), NULL) != 1)
		abort();
	OPENSSL_free(der);
}

/* The bytes as a certificate: the reader returns or refuses with a reason. */
static void read_as_cert(const uint8_t *data, size_t size)
{
	const unsigned char *p = data;
	X509 *x = d2i_X509(NULL, &p, (long)size);
	ERR_clear_error();
	if (!x)
		return;
	struct fleet_node_identity id;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_node_cert_spiffe_id(x, &id, &ec);
	if (e != FLEET_OK)
		refused(e, &ec);
	else if (!id.node_id[0] || !id.trust_domain[0] || strncmp(id.spiffe_id, "spiffe://", 9))
		abort();
	X509_free(x);
	ERR_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	time_t nb;
	const struct fleet_ca *ca = fixed_ca(&nb);
	struct fleet_errctx ec;
	uint8_t h[32], h2[32];
	X509 *x = (X509 *)1;

	memset(&ec, 0, sizeof(ec));
	fleet_err eh = fleet_csr_spki_sha256(data, size, h, &ec);
	if (eh != FLEET_OK)
		refused(eh, &ec);

	struct fleet_node_cert_request req = {
		.csr_der = data,
		.csr_len = size,
		.trust_domain = "fuzz.example",
		.node_id = "n-0001",
		.role = "site",
		.statements = {"urn:bc:tpm-ak:sha256:00ff", "urn:bc:x"},
		.not_before = nb,
		.validity_seconds = 86400,
	};
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_ca_issue_node(ca, &req, &x, &ec);
	/* The hash and the issue judge the CSR alike. */
	if ((e == FLEET_OK) != (eh == FLEET_OK))
		abort();
	if (e != FLEET_OK) {
		refused(e, &ec);
		if (x != NULL)
			abort();
	} else {
		struct fleet_node_identity id;
		if (fleet_node_cert_spiffe_id(x, &id, &ec) != FLEET_OK ||
		    strcmp(id.spiffe_id, "spiffe://fuzz.example/site/n-0001") != 0 ||
		    strcmp(id.node_id, "n-0001") != 0)
			abort();
		spki_hash(x, h2);
		if (memcmp(h, h2, 32) != 0)
			abort();
		if (X509_verify(x, X509_get0_pubkey(fleet_ca_cert(ca))) != 1)
			abort();
		X509_free(x);
		if (ERR_peek_error() != 0)
			abort();
	}
	read_as_cert(data, size);
	return 0;
}
