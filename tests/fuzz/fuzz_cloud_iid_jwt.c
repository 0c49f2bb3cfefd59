/*
 * fuzz_cloud_iid_jwt.c: the cloud-iid attestor's JOSE half
 * (policy/attestors/cloud_iid_jose.c) on arbitrary bytes.
 *
 * Input: [kind:1][bytes]. kind % 2 selects: 0 a JWS compact token, decoded
 * (strict: three base64url parts, a header of alg, kid and typ only) and,
 * when it decodes, verified against a fixed JWKS (an EC P-256 key "e1" and
 * an RSA-2048 key "a1"; their private halves made the seeds and are kept
 * nowhere); 1 a JWKS, parsed.
 *
 * What must hold: a token that does not decode is refused
 * cloud-iid-malformed and holds nothing; one that does has its alg and kid
 * and a signing input inside the token; verify answers a reason of
 * fleet_attestor_cloud_iid_reasons or a claims object; a JWKS parsed holds
 * 1.. keys, each with a key and a distinct kid; OpenSSL's error queue is
 * empty after every call.
 *
 * Seeds (tests/fuzz/corpus/fuzz_cloud_iid_jwt/): GCP-shaped tokens signed
 * RS256 and ES256, alg none, HS256, an unknown kid; the fixed JWKS and one
 * whose keys are mostly skipped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "policy/attestors/cloud_iid_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char jwks_text[] =
	"{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e1\",\"x\":\"5QlXOjwkRPr7usz1e0pVe"
	"mQ3_aZw8Cbnni17e4Um9oQ\",\"y\":\"MsKofxvFvtw1HMgGAvhfDFP2_CxWzFaOxI_regUpU38"
	"\"},{\"kty\":\"RSA\",\"alg\":\"RS256\",\"use\":\"sig\",\"kid\":\"a1\",\"n\":\"rQCRWfOJTVrc9T"
	"tJvyZfJaWWwp65ZG1D7dx0s3bG3uYVckULMjAhUIcjn158hWYyMwxigiiFIUxH5y-k64DsNb"
	"aymJGCSGHBMbeYliOXDUYn4HtTv6N_MSyTUY5Q7CdBLcDqt7lqtJ7P0b5SLEByLCq0khrq2u"
	"v9GVWIZ9RbQ1-ZVdb3yiHqU82Qvk89eN6c5g34NOA-L8KM9idaj0Ir8urYrOX6o477caacsE"
	"RCmSWaOXwdVCPiquy7YFLzDHWanElzTnxobQ225hcn0-3ZsAsPI5XMPKlgkzgImFtNaTKQdE"
	"hN3412jRCeURXNu97QsXnnL_QDFdinws_bBLrGsw\",\"e\":\"AQAB\"}]}";

static struct ciid_jwks_src *source(void)
{
	static struct ciid_jwks_src src;
	static int ready;
	if (!ready) {
		struct ciid_jwks k;
		if (ciid_src_init(&src, NULL, NULL, NULL) ||
		    ciid_jwks_parse((const uint8_t *)jwks_text, sizeof(jwks_text) - 1, &k, NULL) ||
		    k.n != 2)
			abort();
		src.cur = k;
		ready = 1;
	}
	return &src;
}

static int listed(const char *reason)
{
	for (size_t i = 0; fleet_attestor_cloud_iid_reasons[i]; i++)
		if (!strcmp(fleet_attestor_cloud_iid_reasons[i], reason))
			return 1;
	return 0;
}

static void token(const char *tok, size_t len)
{
	struct ciid_jws j;
	const char *reason = NULL;
	if (ciid_jws_decode(tok, len, &j, &reason) != FLEET_OK)
		abort();
	if (reason) {
		if (strcmp(reason, "cloud-iid-malformed") || j.sig || j.payload_raw || j.input)
			abort();
		return;
	}
	if (!j.alg[0] || !j.kid[0] || j.input != tok || j.input_len >= len)
		abort();
	if (ciid_jws_verify(&j, source(), &reason) != FLEET_OK)
		abort();
	if (reason ? !listed(reason) : !json_is_object(j.payload))
		abort();
	ciid_jws_free(&j);
}

static void jwks(const uint8_t *p, size_t len)
{
	struct ciid_jwks k;
	struct fleet_errctx ec = {0};
	if (ciid_jwks_parse(p, len, &k, &ec) != FLEET_OK) {
		if (k.n || k.keys || !ec.detail[0])
			abort();
		return;
	}
	if (k.n == 0)
		abort();
	for (size_t i = 0; i < k.n; i++) {
		if (!k.keys[i].pkey || !k.keys[i].kid[0])
			abort();
		for (size_t m = 0; m < i; m++)
			if (!strcmp(k.keys[i].kid, k.keys[m].kid))
				abort();
	}
	ciid_jwks_free(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 70000)
		return 0;
	/* A copy of exactly the bytes: a reader past the end is seen. */
	char *copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (data[0] % 2 == 0)
		token(copy, size - 1);
	else
		jwks((const uint8_t *)copy, size - 1);
	free(copy);
	if (ERR_peek_error() != 0)
		abort();
	return 0;
}
