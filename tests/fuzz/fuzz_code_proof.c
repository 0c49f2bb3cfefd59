/*
 * fuzz_code_proof.c: the proof of a passing check (fleetd/provision/code.h
 * D3-D5) on any bytes: fleet_code_proof_verify_at against a fixed CA
 * certificate (the seed good.proof is signed by its key, so mutations past
 * the signature reach the statement reader), and the statement reader
 * fleet_code_statement_parse on the bytes themselves. Each returns; a
 * refusal names its reason; OpenSSL's queue is left empty; a statement
 * that passes keeps the rules D4 states.
 */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/provision/code.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A test CA's certificate (P-256, self-signed; its key signed the seed). */
static const char ca_pem[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBhjCCAS2gAwIBAgIURGYH+fw0hlN9yPQYE3wKRFjZFm8wCgYIKoZIzj0EAwIw\n"
	"GDEWMBQGA1UEAwwNZnV6eiBwcm9vZiBDQTAgFw0yNjEyMDExOTIxMjJaGA8yMTI2\n"
	"MTEwNzE5MjEyMlowGDEWMBQGA1UEAwwNZnV6eiBwcm9vZiBDQTBZMBMGByqGSM49\n"
	"AgEGCCqGSM49AwEHA0IABJVazcYOJJIgD715Ap+nMorY3S498RF6+x36bUwhZl8D\n"
	"YMOjtPnblyg40I+WlrUvbJD95rJpmxoWkbLwGA7F2e2jUzBRMB0GA1UdDgQWBBTz\n"
	"ndY0PtQdKtzuG9WqvWGlNCPO3TAfBgNVHSMEGDAWgBTzndY0PtQdKtzuG9WqvWGl\n"
	"NCPO3TAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCICQqAh3G0Qie\n"
	"xm4rMAYFzg2A5oIaMUqkjT/4GZ/hgABxAiAGyxW8MXoC3+DVDbnwhX+h33cv0XeH\n"
	"WBjv3LX+xX7Tcg==\n"
	"-----END CERTIFICATE-----\n";

static X509 *ca_cert(void)
{
	static X509 *x;
	if (!x) {
		BIO *b = BIO_new_mem_buf(ca_pem, -1);
		x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
		BIO_free(b);
		if (!x)
			abort();
	}
	return x;
}

static void check(fleet_err e, const struct fleet_errctx *ec, const struct fleet_code_proof *p)
{
	if (e == FLEET_OK) {
		if (p->in.device != p->device || p->in.serial != p->serial ||
		    p->in.issued_at <= 0 || p->in.issued_at >= p->in.expires_at ||
		    p->in.expires_at - p->in.issued_at > FLEET_CODE_PROOF_MAX_TTL ||
		    !fleet_ca_subject_ok(p->device, p->serial, NULL))
			abort();
	} else if (e == FLEET_E_VERIFY || e == FLEET_E_MALFORMED || e == FLEET_E_TOO_LARGE) {
		if (!ec->reason)
			abort();
	}
	if (ERR_peek_error() != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_code_proof p;
	struct fleet_errctx ec;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	/* Inside the seed's validity, so a good proof passes. */
	e = fleet_code_proof_verify_at(ca_cert(), data, size, 1800000060, &p, &ec);
	check(e, &ec, &p);
	memset(&ec, 0, sizeof(ec));
	e = fleet_code_statement_parse((const char *)data, size, &p, &ec);
	check(e, &ec, &p);
	return 0;
}
