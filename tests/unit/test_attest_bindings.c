/*
 * test_attest_bindings.c: the protocol's four bindings and base64url
 * against values computed independently of this code.
 *
 * The expected digests were computed once with Python's hashlib and hmac
 * (python3, standard library only) from the same inputs, e.g.:
 *   hashlib.sha256(nonce + hashlib.sha256(report).digest()).hexdigest()
 *   hmac.new(srsa + secc, b"fleetd answer v1\0" + sess +
 *            hashlib.sha256(attest).digest(), hashlib.sha256).hexdigest()
 * and the base64url strings with base64.urlsafe_b64encode(...).rstrip(b"=").
 */
#include "tests/testutil.h"

#include <string.h>

#include "lib/attest_wire.h"
#include "lib/hex.h"

static const char report_json[] =
	"{\"chassis_id\":\"aa:bb:cc:00:11:22\",\"port_id\":\"Ethernet1/7\",\"system_name\":\"tor-a\"}";

static void expect_hex(const uint8_t *got, size_t n, const char *want)
{
	char hex[2 * 64 + 1];
	fleet_hex_encode(got, n, hex);
	assert_string_equal(hex, want);
}

static void test_quote_qualifier(void **st)
{
	uint8_t nonce[32], out[32];
	struct fleet_wire_bytes report = {(uint8_t *)report_json, sizeof(report_json) - 1};
	(void)st;
	for (int i = 0; i < 32; i++)
		nonce[i] = (uint8_t)i;
	assert_int_equal(fleet_wire_quote_qualifier(nonce, &report, out), FLEET_OK);
	expect_hex(out, 32, "9d04061458b3bc156435b27efa01ccaf0e741d979baaad74dccc223d5b94b699");
	/* One byte of the report changes it. */
	report.len--;
	assert_int_equal(fleet_wire_quote_qualifier(nonce, &report, out), FLEET_OK);
	assert_memory_not_equal(out, "\x9d\x04\x06\x14", 4);
}

static void test_certify_qualifier(void **st)
{
	char req[200];
	uint8_t out[32];
	(void)st;
	strcpy(req, "{\"v\":1,\"serial\":\"SN-0001\",\"spki_sha256\":\"");
	for (int i = 0; i < 32; i++)
		strcat(req, "ab");
	strcat(req, "\"}");
	struct fleet_wire_bytes b = {(uint8_t *)req, strlen(req)};
	assert_int_equal(fleet_wire_certify_qualifier(&b, out), FLEET_OK);
	expect_hex(out, 32, "6a447762bde99d4793b2aaab0c84cc1c1b96b4e915df7269883a956fcb96dc11");
	/* And the request is one fleet_ldevid_request_parse reads. */
	struct fleet_ldevid_request r;
	assert_int_equal(fleet_ldevid_request_parse(&b, &r, NULL), FLEET_OK);
	assert_string_equal(r.serial, "SN-0001");
	assert_int_equal(r.spki_sha256[31], 0xab);
}

static void test_answer_proof(void **st)
{
	uint8_t srsa[32], secc[32], sess[32], out[32];
	static const char attest[] = "fake TPMS_ATTEST bytes";
	struct fleet_wire_bytes a = {(uint8_t *)attest, sizeof(attest) - 1};
	(void)st;
	memset(srsa, 0x11, 32);
	memset(secc, 0x22, 32);
	for (int i = 0; i < 32; i++)
		sess[i] = (uint8_t)(0x40 + i);
	assert_int_equal(fleet_wire_answer_proof(srsa, secc, sess, &a, out), FLEET_OK);
	expect_hex(out, 32, "8f227626a46cd45edd25812f51f3b53a440e2362c8a2182f873d2f74b4429f21");
	/* Without an ECC EK the key is the RSA secret alone. */
	assert_int_equal(fleet_wire_answer_proof(srsa, NULL, sess, &a, out), FLEET_OK);
	expect_hex(out, 32, "fa3e05fcc2c7b9195e43f9fdcb8ced10a9157585b9a7e181a3482638fa3602a9");
}

static void test_confirm_statement(void **st)
{
	uint8_t sess[32], h[32];
	static const char lak[] = "lak certificate DER", ldevid[] = "ldevid certificate DER";
	struct fleet_wire_bytes l = {(uint8_t *)lak, sizeof(lak) - 1};
	struct fleet_wire_bytes d = {(uint8_t *)ldevid, sizeof(ldevid) - 1};
	struct fleet_buf b, b2;
	(void)st;
	for (int i = 0; i < 32; i++)
		sess[i] = (uint8_t)(0x40 + i);
	fb_init(&b);
	assert_int_equal(fleet_wire_confirm_statement(sess, &l, &d, &b), FLEET_OK);
	assert_int_equal(b.len, 114); /* 18 label bytes with the NUL, 32, 32, 32 */
	assert_memory_equal(b.data, "fleetd confirm v1\0", 18);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, b.data, b.len, h), FLEET_OK);
	expect_hex(h, 32, "4604d3f9ed4919c7b43e333bc8739db93dd946d8c00bb2da56cd792c2407d985");
	/* The hashes form gives the same bytes. */
	uint8_t hl[32], hd[32];
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, lak, l.len, hl), FLEET_OK);
	assert_int_equal(fleet_hash(FLEET_ALG_SHA256, ldevid, d.len, hd), FLEET_OK);
	fb_init(&b2);
	assert_int_equal(fleet_wire_confirm_statement_hashes(sess, hl, hd, &b2), FLEET_OK);
	assert_int_equal(b2.len, b.len);
	assert_memory_equal(b2.data, b.data, b.len);
	fb_free(&b);
	fb_free(&b2);
}

static void test_b64url(void **st)
{
	static const struct {
		const char *raw;
		size_t len;
		const char *enc;
	} kat[] = {
		{"", 0, ""},           {"f", 1, "Zg"},         {"fo", 2, "Zm8"},
		{"foo", 3, "Zm9v"},    {"foob", 4, "Zm9vYg"},  {"fooba", 5, "Zm9vYmE"},
		{"foobar", 6, "Zm9vYmFy"}, {"\xfb\xff\xbf", 3, "-_-_"},
	};
	(void)st;
	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		struct fleet_buf b;
		struct fleet_wire_bytes w;
		fb_init(&b);
		assert_int_equal(fleet_b64url_encode((const uint8_t *)kat[i].raw, kat[i].len, &b),
				 FLEET_OK);
		assert_int_equal(b.len, strlen(kat[i].enc));
		if (b.len)
			assert_memory_equal(b.data, kat[i].enc, b.len);
		fb_free(&b);
		assert_int_equal(fleet_b64url_decode(kat[i].enc, strlen(kat[i].enc), 16, &w),
				 FLEET_OK);
		assert_int_equal(w.len, kat[i].len);
		if (w.len)
			assert_memory_equal(w.data, kat[i].raw, w.len);
		free(w.data);
	}
	/* Strictness: padding, the other alphabet, whitespace, a length no
	 * encoder writes, leftover bits, and the cap. */
	static const char *bad[] = {"Zg==", "Zm8=", "+_-_", "-/-_", "Zm9 v", "Zm9vY", "Zh",
				    "Zm9"
				    "\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fleet_wire_bytes w = {0};
		assert_int_equal(fleet_b64url_decode(bad[i], strlen(bad[i]), 16, &w),
				 FLEET_E_MALFORMED);
		assert_null(w.data);
	}
	struct fleet_wire_bytes w = {0};
	assert_int_equal(fleet_b64url_decode("Zm9vYg", 6, 3, &w), FLEET_E_TOO_LARGE);
	assert_int_equal(fleet_b64url_decode("Zm9v", 4, 3, &w), FLEET_OK);
	free(w.data);
	/* The cap is checked before the characters are looked at. */
	assert_int_equal(fleet_b64url_decode("!!!!!!!!", 8, 3, &w), FLEET_E_TOO_LARGE);
}

/* Standard base64 as Kubernetes writes bytes: one spelling only. */
static void test_b64std(void **st)
{
	(void)st;
	static const struct {
		const char *raw;
		size_t len;
		const char *enc;
	} kat[] = {{"", 0, ""}, {"f", 1, "Zg=="}, {"fo", 2, "Zm8="}, {"foo", 3, "Zm9v"},
		   {"foobar", 6, "Zm9vYmFy"}, {"\xfb\xff\xbf", 3, "+/+/"}};
	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		struct fleet_wire_bytes w = {0};
		assert_int_equal(fleet_b64std_decode(kat[i].enc, strlen(kat[i].enc), 16, &w),
				 FLEET_OK);
		assert_int_equal(w.len, kat[i].len);
		if (w.len)
			assert_memory_equal(w.data, kat[i].raw, w.len);
		free(w.data);
	}
	/* no padding where it is needed, padding where it is not, the URL
	 * alphabet, whitespace, leftover bits, '=' inside */
	static const char *bad[] = {"Zg",   "Zm8",  "Zm9v====", "Zg=", "Zm9v\n", "-_-_",
				    "Zh==", "Zm9=", "Z===",     "Zg==Zg==", "Zm=v"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fleet_wire_bytes w = {0};
		if (fleet_b64std_decode(bad[i], strlen(bad[i]), 16, &w) != FLEET_E_MALFORMED)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_null(w.data);
	}
	struct fleet_wire_bytes w = {0};
	assert_int_equal(fleet_b64std_decode("Zm9vYmFy", 8, 5, &w), FLEET_E_TOO_LARGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quote_qualifier),
		cmocka_unit_test(test_certify_qualifier),
		cmocka_unit_test(test_answer_proof),
		cmocka_unit_test(test_confirm_statement),
		cmocka_unit_test(test_b64url),
		cmocka_unit_test(test_b64std),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
