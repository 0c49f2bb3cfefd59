/*
 * test_code.c: fleetd/provision/code.h D1, D3-D5 without a TPM (D2 against
 * a real one is tests/tpm/test_code_wrap.c): the code's form, and the
 * proof: made and verified, refused for any byte changed, another CA's
 * signature, expiry, a statement that is not canonical.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "fleetd/provision/code.h"
#include "lib/hex.h"

struct fx {
	char *dir;
	struct fleet_ca *ca, *other;
	uint8_t ldevid[32], code_hash[32];
	struct fleet_code_proof_in in;
};

static struct fleet_ca *new_ca(const char *base, const char *name)
{
	char dir[600];
	struct fleet_ca *ca = NULL;
	struct fleet_errctx ec = {0};
	snprintf(dir, sizeof(dir), "%s/%s", base, name);
	assert_int_equal(fleet_ca_init(dir, name, 30, &ec), FLEET_OK);
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_OK);
	return ca;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->dir = make_temp_dir("code");
	f->ca = new_ca(f->dir, "ca");
	f->other = new_ca(f->dir, "other");
	memset(f->ldevid, 0xa5, sizeof(f->ldevid));
	memset(f->code_hash, 0x3c, sizeof(f->code_hash));
	f->in = (struct fleet_code_proof_in){.device = "w-0001",
					     .serial = "SN 42/A",
					     .ldevid_sha256 = f->ldevid,
					     .code_hash = f->code_hash,
					     .issued_at = 1800000000,
					     .expires_at = 1800000000 + 7200};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_ca_free(f->ca);
	fleet_ca_free(f->other);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void make(struct fx *f, const struct fleet_ca *ca, struct fleet_buf *b)
{
	struct fleet_errctx ec = {0};
	fb_init(b);
	assert_int_equal(fleet_code_proof_make(ca, &f->in, b, &ec), FLEET_OK);
}

static fleet_err verify(struct fx *f, const void *p, size_t n, time_t now, const char **reason)
{
	struct fleet_code_proof out;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_code_proof_verify_at(fleet_ca_cert(f->ca), p, n, now, &out, &ec);
	*reason = ec.reason;
	assert_int_equal(ERR_peek_error(), 0);
	return e;
}

static void code_new_and_hash(void **state)
{
	(void)state;
	uint8_t code[FLEET_CODE_LEN], code2[FLEET_CODE_LEN], hash[32], again[32], want[32];
	char hex[2 * FLEET_CODE_LEN + 1], hex2[2 * FLEET_CODE_LEN + 1];
	unsigned int n;
	assert_int_equal(fleet_code_new(code, hex, hash), FLEET_OK);
	assert_int_equal(fleet_code_new(code2, hex2, again), FLEET_OK);
	assert_memory_not_equal(code, code2, sizeof(code));
	assert_int_equal(strlen(hex), 64);
	assert_true(fleet_hex_is_lower(hex, 64));
	assert_int_equal(EVP_Digest(code, sizeof(code), want, &n, EVP_sha256(), NULL), 1);
	assert_memory_equal(hash, want, 32);
	assert_int_equal(fleet_code_hash_hex(hex, again), FLEET_OK);
	assert_memory_equal(again, want, 32);

	/* D1: one form only. */
	char bad[80];
	snprintf(bad, sizeof(bad), "%s", hex);
	bad[5] = 'A';
	if (hex[5] >= 'a' && hex[5] <= 'f')
		bad[5] = (char)(hex[5] - 'a' + 'A');
	assert_int_equal(fleet_code_hash_hex(bad, again), FLEET_E_MALFORMED);
	snprintf(bad, sizeof(bad), "%.63s", hex);
	assert_int_equal(fleet_code_hash_hex(bad, again), FLEET_E_MALFORMED);
	snprintf(bad, sizeof(bad), "%s0", hex);
	assert_int_equal(fleet_code_hash_hex(bad, again), FLEET_E_MALFORMED);
	snprintf(bad, sizeof(bad), "%s\n", hex);
	assert_int_equal(fleet_code_hash_hex(bad, again), FLEET_E_MALFORMED);
	snprintf(bad, sizeof(bad), "%.63sg", hex);
	assert_int_equal(fleet_code_hash_hex(bad, again), FLEET_E_MALFORMED);
}

static void proof_round_trip(void **state)
{
	struct fx *f = *state;
	struct fleet_buf b;
	struct fleet_code_proof out;
	struct fleet_errctx ec = {0};
	make(f, f->ca, &b);
	assert_int_equal(fleet_code_proof_verify_at(fleet_ca_cert(f->ca), b.data, b.len,
						    1800000000 + 60, &out, &ec),
			 FLEET_OK);
	assert_string_equal(out.in.device, "w-0001");
	assert_string_equal(out.in.serial, "SN 42/A");
	assert_ptr_equal(out.in.device, out.device);
	assert_memory_equal(out.in.ldevid_sha256, f->ldevid, 32);
	assert_memory_equal(out.in.code_hash, f->code_hash, 32);
	assert_int_equal(out.in.issued_at, 1800000000);
	assert_int_equal(out.in.expires_at, 1800007200);
	/* The documented shape: one statement line, one signature line. */
	const char *nl = memchr(b.data, '\n', b.len);
	assert_non_null(nl);
	assert_true(strncmp((const char *)b.data,
			    "{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w-0001\","
			    "\"serial\":\"SN 42/A\",\"ldevid_sha256\":\"a5a5",
			    60) == 0);
	assert_int_equal(b.data[b.len - 1], '\n');
	fb_free(&b);
}

/* Every byte changed (each of three ways) is refused. */
static void proof_any_byte_tampered_refused(void **state)
{
	struct fx *f = *state;
	struct fleet_buf b;
	const char *reason;
	make(f, f->ca, &b);
	uint8_t *copy = malloc(b.len + 1);
	static const uint8_t flips[] = {0x01, 0x20, 0x80};
	for (size_t i = 0; i < b.len; i++) {
		for (size_t k = 0; k < sizeof(flips); k++) {
			memcpy(copy, b.data, b.len);
			copy[i] ^= flips[k];
			fleet_err e = verify(f, copy, b.len, 1800000060, &reason);
			if (e == FLEET_OK)
				fail_msg("byte %zu ^ 0x%02x accepted", i, flips[k]);
			assert_non_null(reason);
		}
	}
	/* Cut short, or one byte more. */
	for (size_t n = 0; n < b.len; n++)
		assert_int_not_equal(verify(f, b.data, n, 1800000060, &reason), FLEET_OK);
	memcpy(copy, b.data, b.len);
	copy[b.len] = '\n';
	assert_int_not_equal(verify(f, copy, b.len + 1, 1800000060, &reason), FLEET_OK);
	free(copy);
	fb_free(&b);
}

static void proof_other_ca_refused(void **state)
{
	struct fx *f = *state;
	struct fleet_buf b;
	const char *reason;
	make(f, f->other, &b);
	assert_int_equal(verify(f, b.data, b.len, 1800000060, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "proof-signature");
	fb_free(&b);
}

/* The other CA's signature under this CA's statement: refused as well. */
static void proof_signature_swapped_refused(void **state)
{
	struct fx *f = *state;
	struct fleet_buf a, o, mix;
	const char *reason;
	make(f, f->ca, &a);
	make(f, f->other, &o);
	const uint8_t *na = memchr(a.data, '\n', a.len), *no = memchr(o.data, '\n', o.len);
	fb_init(&mix);
	fb_put(&mix, a.data, (size_t)(na - a.data) + 1);
	fb_put(&mix, no + 1, o.len - (size_t)(no - o.data) - 1);
	assert_int_equal(verify(f, mix.data, mix.len, 1800000060, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "proof-signature");
	fb_free(&a);
	fb_free(&o);
	fb_free(&mix);
}

static void proof_expired_refused(void **state)
{
	struct fx *f = *state;
	struct fleet_buf b;
	const char *reason;
	make(f, f->ca, &b);
	assert_int_equal(verify(f, b.data, b.len, 1800007199, &reason), FLEET_OK);
	assert_int_equal(verify(f, b.data, b.len, 1800007200, &reason), FLEET_E_VERIFY);
	assert_string_equal(reason, "proof-expired");
	assert_int_equal(verify(f, b.data, b.len, 1800000000 - FLEET_CODE_PROOF_SKEW, &reason),
			 FLEET_OK);
	assert_int_equal(verify(f, b.data, b.len, 1800000000 - FLEET_CODE_PROOF_SKEW - 1, &reason),
			 FLEET_E_VERIFY);
	assert_string_equal(reason, "proof-not-yet-valid");
	fb_free(&b);
	/* fleet_code_proof_verify reads the clock. */
	struct fleet_code_proof out;
	struct fleet_errctx ec = {0};
	time_t now = time(NULL);
	f->in.issued_at = now - 10;
	f->in.expires_at = now + 3600;
	make(f, f->ca, &b);
	assert_int_equal(fleet_code_proof_verify(fleet_ca_cert(f->ca), b.data, b.len, &out, &ec),
			 FLEET_OK);
	fb_free(&b);
	f->in.issued_at = now - 7200;
	f->in.expires_at = now - 1;
	make(f, f->ca, &b);
	assert_int_equal(fleet_code_proof_verify(fleet_ca_cert(f->ca), b.data, b.len, &out, &ec),
			 FLEET_E_VERIFY);
	assert_string_equal(ec.reason, "proof-expired");
	fb_free(&b);
}

static void statement_rules(void **state)
{
	(void)state;
	struct fleet_code_proof out;
	struct fleet_errctx ec = {0};
	static const char good[] =
		"{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000001"
		"\",\"code_sha256\":\"" "00000000000000000000000000000000000000000000000000000000000000ff"
		"\",\"issued_at\":100,\"expires_at\":200}";
	assert_int_equal(fleet_code_statement_parse(good, strlen(good), &out, &ec), FLEET_OK);
	assert_int_equal(out.in.ldevid_sha256[31], 1);
	assert_int_equal(out.in.code_hash[31], 0xff);
	static const char *const bad[] = {
		/* spaces: not canonical */
		"{\"v\": 1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* members out of order */
		"{\"kind\":\"fleet-provision-proof\",\"v\":1,\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* a duplicate member */
		"{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"device\":\"w2\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* upper-case hex */
		"{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000FF\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* reversed validity */
		"{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":200,\"expires_at\":100}",
		/* v 2 */
		"{\"v\":2,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* another kind */
		"{\"v\":1,\"kind\":\"fleet-provision-prooF\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* a serial the subject rule refuses */
		"{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S_1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100,\"expires_at\":200}",
		/* a real number */
		"{\"v\":1,\"kind\":\"fleet-provision-proof\",\"device\":\"w1\",\"serial\":\"S1\","
		"\"ldevid_sha256\":\"0000000000000000000000000000000000000000000000000000000000000001\","
		"\"code_sha256\":\"00000000000000000000000000000000000000000000000000000000000000ff\","
		"\"issued_at\":100.0,\"expires_at\":200}",
		"[]",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&ec, 0, sizeof(ec));
		fleet_err e = fleet_code_statement_parse(bad[i], strlen(bad[i]), &out, &ec);
		if (e == FLEET_OK)
			fail_msg("statement %zu accepted", i);
		assert_string_equal(ec.reason, "proof-malformed");
	}
}

static void make_refuses_what_verify_would(void **state)
{
	struct fx *f = *state;
	struct fleet_buf b;
	struct fleet_errctx ec = {0};
	fb_init(&b);
	f->in.expires_at = f->in.issued_at;
	assert_int_equal(fleet_code_proof_make(f->ca, &f->in, &b, &ec), FLEET_E_INVALID_ARG);
	f->in.expires_at = f->in.issued_at + FLEET_CODE_PROOF_MAX_TTL + 1;
	assert_int_equal(fleet_code_proof_make(f->ca, &f->in, &b, &ec), FLEET_E_INVALID_ARG);
	f->in.expires_at = f->in.issued_at + 10;
	f->in.serial = "";
	assert_int_equal(fleet_code_proof_make(f->ca, &f->in, &b, &ec), FLEET_E_INVALID_ARG);
	f->in.serial = "S1";
	f->in.device = "a\nb";
	assert_int_equal(fleet_code_proof_make(f->ca, &f->in, &b, &ec), FLEET_E_INVALID_ARG);
	assert_int_equal(b.len, 0);
	fb_free(&b);
}

/* A device name with characters JSON escapes survives the round trip. */
static void escaped_device_name(void **state)
{
	struct fx *f = *state;
	struct fleet_buf b;
	struct fleet_code_proof out;
	struct fleet_errctx ec = {0};
	f->in.device = "w\"1\\ é";
	make(f, f->ca, &b);
	assert_int_equal(fleet_code_proof_verify_at(fleet_ca_cert(f->ca), b.data, b.len,
						    1800000001, &out, &ec),
			 FLEET_OK);
	assert_string_equal(out.in.device, "w\"1\\ é");
	fb_free(&b);
}

/* The fuzz seed was made with the openssl CLI alone, as code.h D3 says
 * anyone can check it: fleetd's reader agrees with OpenSSL's signer. */
static void openssl_cli_proof_verifies(void **state)
{
	(void)state;
	struct fleet_buf pem, proof;
	struct fleet_code_proof out;
	struct fleet_errctx ec = {0};
	char path[600];
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_code_proof/ca.pem",
		 FLEET_SOURCE_DIR);
	read_file_or_fail(path, &pem);
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/fuzz_code_proof/good.proof",
		 FLEET_SOURCE_DIR);
	read_file_or_fail(path, &proof);
	BIO *bio = BIO_new_mem_buf(pem.data, (int)pem.len);
	X509 *ca = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	assert_non_null(ca);
	assert_int_equal(fleet_code_proof_verify_at(ca, proof.data, proof.len, 1800000060, &out, &ec),
			 FLEET_OK);
	assert_string_equal(out.in.device, "w-0001");
	X509_free(ca);
	fb_free(&pem);
	fb_free(&proof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(code_new_and_hash),
		cmocka_unit_test_setup_teardown(proof_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(proof_any_byte_tampered_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(proof_other_ca_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(proof_signature_swapped_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(proof_expired_refused, setup, teardown),
		cmocka_unit_test(statement_rules),
		cmocka_unit_test_setup_teardown(make_refuses_what_verify_would, setup, teardown),
		cmocka_unit_test_setup_teardown(escaped_device_name, setup, teardown),
		cmocka_unit_test(openssl_cli_proof_verifies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
