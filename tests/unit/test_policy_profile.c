/*
 * test_policy_profile.c: the YAML profile loader. A valid profile reads as
 * written; each way a profile can be wrong is refused with the line (and
 * column) an operator needs to fix it.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/profile.h"

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define HD "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define H0 "0000000000000000000000000000000000000000000000000000000000000000"

#define HEAD "version: 1\nclass: worker\nquote:\n  bank: sha256\n  pcrs: [0, 4, 7]\n"

static fleet_err parse(const char *yaml, struct fleet_profile **p,
		       struct fleet_errctx *err)
{
	return fleet_profile_parse((const uint8_t *)yaml, strlen(yaml), p, err);
}

/* Parse, expect refusal e at line:column (column 0 = not asserted). */
static void refused_at(const char *yaml, fleet_err e, unsigned line, unsigned column,
		       const char *msg_part)
{
	struct fleet_profile *p = (struct fleet_profile *)1;
	struct fleet_errctx err;
	fleet_err got = parse(yaml, &p, &err);
	if (got != e || err.line != line || (column && err.column != column) ||
	    !strstr(err.detail, msg_part))
		fail_msg("want %s at %u:%u containing '%s', got %s at %u:%u: %s",
			 fleet_err_str(e), line, column, msg_part, fleet_err_str(got), err.line,
			 err.column, err.detail);
	assert_null(p);
}

static void test_valid_full(void **state)
{
	(void)state;
	const char *y = HEAD "pcr0_by_bios:\n"
			     "  \"1.2.3\": \"" HA "\"\n"
			     "  v2.0: " HB "\n"
			     "  \"U23 Ver. 02.05.01\": " HC "\n"
			     "secure_boot: true\n"
			     "allowed_authorities:\n  - " HC "\n  - \"" HD "\"\n"
			     "renew_required_authorities: [" HC "]\n"
			     "boot_applications:\n  - AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
			     "pcrs:\n  \"7\": " HB "\n  4: " H0 "\n";
	struct fleet_profile *p;
	struct fleet_errctx err;
	assert_int_equal(parse(y, &p, &err), FLEET_OK);
	assert_string_equal(p->class_name, "worker");
	assert_int_equal(p->bank, FLEET_ALG_SHA256);
	assert_int_equal(p->size, 32);
	assert_int_equal(p->quote_mask, (1u << 0) | (1u << 4) | (1u << 7));
	assert_int_equal(p->secure_boot, FLEET_SECURE_BOOT_ON);
	assert_true(p->has_pcr0_by_bios);
	assert_int_equal(p->n_bios, 3);
	assert_int_equal(fleet_profile_pcr0_for_bios(p, "U23 Ver. 02.05.01")[0], 0xcc);
	const uint8_t *pcr0 = fleet_profile_pcr0_for_bios(p, "1.2.3");
	assert_non_null(pcr0);
	assert_int_equal(pcr0[0], 0xaa);
	assert_int_equal(fleet_profile_pcr0_for_bios(p, "v2.0")[31], 0xbb);
	assert_null(fleet_profile_pcr0_for_bios(p, "1.2.4"));
	assert_null(fleet_profile_pcr0_for_bios(p, NULL));
	assert_true(p->allowed_authorities.present);
	assert_int_equal(p->allowed_authorities.n, 2);
	assert_int_equal(p->allowed_authorities.d[1][0], 0xdd);
	assert_int_equal(p->renew_required_authorities.n, 1);
	/* Upper-case hex reads as the same bytes as lower-case. */
	uint8_t aa[32];
	memset(aa, 0xaa, sizeof(aa));
	assert_true(fleet_digest_list_has(p, &p->boot_applications, aa));
	assert_false(fleet_digest_list_has(p, &p->allowed_authorities, aa));
	assert_int_equal(p->pinned_mask, (1u << 7) | (1u << 4));
	assert_int_equal(p->pinned[7][0], 0xbb);
	assert_int_equal(p->pinned[4][0], 0x00);
	fleet_profile_free(p);
}

static void test_valid_minimal(void **state)
{
	(void)state;
	struct fleet_profile *p;
	struct fleet_errctx err;
	assert_int_equal(parse(HEAD "secure_boot: any\n", &p, &err), FLEET_OK);
	assert_int_equal(p->secure_boot, FLEET_SECURE_BOOT_ANY);
	assert_false(p->has_pcr0_by_bios);
	assert_false(p->allowed_authorities.present);
	assert_false(p->boot_applications.present);
	assert_int_equal(p->pinned_mask, 0);
	fleet_profile_free(p);
	/* An empty allow-list is present and allows nothing. */
	assert_int_equal(parse(HEAD "secure_boot: false\nallowed_authorities: []\n", &p, &err),
			 FLEET_OK);
	assert_int_equal(p->secure_boot, FLEET_SECURE_BOOT_OFF);
	assert_true(p->allowed_authorities.present);
	assert_int_equal(p->allowed_authorities.n, 0);
	fleet_profile_free(p);
}

static void test_sha1_bank_lengths(void **state)
{
	(void)state;
	struct fleet_profile *p;
	struct fleet_errctx err;
	const char *y = "version: 1\nclass: c\nquote: {bank: sha1, pcrs: [0]}\nsecure_boot: any\n"
			"pcrs: {\"0\": 0123456789abcdef0123456789abcdef01234567}\n";
	assert_int_equal(parse(y, &p, &err), FLEET_OK);
	assert_int_equal(p->size, 20);
	fleet_profile_free(p);
	/* A sha256-length digest in a sha1 profile is wrong, not truncated. */
	refused_at("version: 1\nclass: c\nquote: {bank: sha1, pcrs: [0]}\nsecure_boot: any\n"
		   "pcrs: {\"0\": " HA "}\n",
		   FLEET_E_MALFORMED, 5, 13, "40 hex digits");
}

static void test_bad_yaml_line(void **state)
{
	(void)state;
	/* An unclosed flow sequence: libyaml's mark is where it gave up. */
	refused_at(HEAD "secure_boot: any\nallowed_authorities: [" HA ",\n", FLEET_E_MALFORMED, 8,
		   0, "bad YAML");
	/* A tab where indentation is expected, on line 3. */
	refused_at("version: 1\nclass: worker\n\tquote: x\n", FLEET_E_MALFORMED, 3, 0, "bad YAML");
	refused_at("", FLEET_E_MALFORMED, 0, 0, "empty profile");
	refused_at(HEAD "secure_boot: any\n---\nversion: 1\n", FLEET_E_MALFORMED, 7, 0,
		   "one YAML document");
}

static void test_unknown_key(void **state)
{
	(void)state;
	refused_at(HEAD "secure_boot: any\nboot_application: []\n", FLEET_E_MALFORMED, 7, 1,
		   "unknown key 'boot_application'");
	refused_at("version: 1\nclass: w\nquote:\n  bank: sha256\n  pcrs: [0]\n  pcr: [1]\n"
		   "secure_boot: any\n",
		   FLEET_E_MALFORMED, 6, 3, "unknown key 'pcr'");
	/* Unprintable key bytes are not echoed, but escaped. */
	refused_at(HEAD "secure_boot: any\n\"a\\x01b\": 1\n", FLEET_E_MALFORMED, 7, 1,
		   "unknown key 'a\\x01b'");
}

static void test_digest_length_and_hex(void **state)
{
	(void)state;
	refused_at(HEAD "secure_boot: any\nboot_applications: [" HA "aa]\n", FLEET_E_MALFORMED, 7,
		   21, "64 hex digits, this one has 66");
	refused_at(HEAD "secure_boot: any\nboot_applications: [\"\"]\n", FLEET_E_MALFORMED, 7, 21,
		   "this one has 0");
	refused_at(HEAD "secure_boot: any\nboot_applications:\n  - "
			"gaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		   FLEET_E_MALFORMED, 8, 5, "hex digits");
	refused_at(HEAD "secure_boot: any\npcr0_by_bios: {\"1\": " HA "a}\n", FLEET_E_MALFORMED, 7,
		   0, "64 hex digits");
}

static void test_duplicate_key(void **state)
{
	(void)state;
	refused_at(HEAD "secure_boot: any\nsecure_boot: true\n", FLEET_E_MALFORMED, 7, 1,
		   "duplicate key 'secure_boot'");
	refused_at(HEAD "secure_boot: any\npcr0_by_bios:\n  v1: " HA "\n  v1: " HB "\n",
		   FLEET_E_MALFORMED, 9, 3, "duplicate key 'v1'");
	refused_at(HEAD "secure_boot: any\npcrs:\n  \"4\": " HA "\n  4: " HB "\n",
		   FLEET_E_MALFORMED, 9, 3, "duplicate key '4'");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [4, 4]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 3, 33, "PCR 4 twice");
	refused_at(HEAD "secure_boot: any\nallowed_authorities: [" HA ", " HA "]\n",
		   FLEET_E_MALFORMED, 7, 0, "same digest twice");
}

/* A list of n copies of distinct digests, as flow YAML. */
static char *digest_list(const char *key, size_t n)
{
	size_t cap = 256 + n * 70;
	char *s = malloc(cap);
	assert_non_null(s);
	size_t len = (size_t)snprintf(s, cap, HEAD "secure_boot: any\n%s:\n", key);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "  - %056x%08zx\n", 0, i);
	return s;
}

static void test_caps(void **state)
{
	(void)state;
	struct fleet_profile *p;
	struct fleet_errctx err;
	char *ok = digest_list("allowed_authorities", FLEET_PROFILE_MAX_DIGESTS);
	assert_int_equal(parse(ok, &p, &err), FLEET_OK);
	assert_int_equal(p->allowed_authorities.n, FLEET_PROFILE_MAX_DIGESTS);
	fleet_profile_free(p);
	free(ok);
	char *over = digest_list("allowed_authorities", FLEET_PROFILE_MAX_DIGESTS + 1);
	refused_at(over, FLEET_E_TOO_LARGE, 8, 3, "at most 256");
	free(over);
	/* renew_required_authorities: at most 16, so their reasons never
	 * overflow a verdict (fleetd/reattest RA10). */
	ok = digest_list("renew_required_authorities", FLEET_PROFILE_MAX_RENEW_AUTHORITIES);
	assert_int_equal(parse(ok, &p, &err), FLEET_OK);
	fleet_profile_free(p);
	free(ok);
	over = digest_list("renew_required_authorities", FLEET_PROFILE_MAX_RENEW_AUTHORITIES + 1);
	refused_at(over, FLEET_E_TOO_LARGE, 7, 0, "at most 16");
	free(over);

	/* The file itself: one byte over the cap is refused before parsing. */
	size_t big = FLEET_PROFILE_MAX_SIZE + 1;
	char *huge = malloc(big + 1);
	assert_non_null(huge);
	memset(huge, '#', big);
	memcpy(huge, HEAD, strlen(HEAD));
	huge[strlen(HEAD)] = '#';
	huge[big] = '\0';
	refused_at(huge, FLEET_E_TOO_LARGE, 0, 0, "at most");
	free(huge);

	char bios[8192];
	size_t len = (size_t)snprintf(bios, sizeof(bios), HEAD "secure_boot: any\npcr0_by_bios:\n");
	for (int i = 0; i <= FLEET_PROFILE_MAX_BIOS; i++)
		len += (size_t)snprintf(bios + len, sizeof(bios) - len, "  v%d: " HA "\n", i);
	refused_at(bios, FLEET_E_TOO_LARGE, 8, 3, "at most 64");
}

static void test_schema_values(void **state)
{
	(void)state;
	refused_at("class: w\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 1, 1, "missing key 'version'");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [0]}\n", FLEET_E_MALFORMED,
		   1, 1, "missing key 'secure_boot'");
	refused_at("version: 2\nclass: w\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 1, 10, "version must be 1");
	refused_at("version: \"1\"\nclass: w\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 1, 10, "version must be 1");
	refused_at("version: 1\nclass: w\nquote: {bank: md5, pcrs: [0]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 3, 15, "unknown bank 'md5'");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [24]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 3, 30, "from 0 to 23");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [07]}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 3, 30, "from 0 to 23");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: []}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 3, 29, "quote.pcrs is empty");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256}\nsecure_boot: any\n",
		   FLEET_E_MALFORMED, 3, 8, "both bank and pcrs");
	refused_at(HEAD "secure_boot: \"true\"\n", FLEET_E_MALFORMED, 6, 14,
		   "true, false or any");
	refused_at(HEAD "secure_boot: yes\n", FLEET_E_MALFORMED, 6, 14, "true, false or any");
	refused_at("version: 1\nclass: \"two words\"\nquote: {bank: sha256, pcrs: [0]}\n"
		   "secure_boot: any\n",
		   FLEET_E_MALFORMED, 2, 8, "printable ASCII");
	refused_at(HEAD "secure_boot: any\nboot_applications: " HA "\n", FLEET_E_MALFORMED, 7, 20,
		   "must be a list");
	refused_at("- version: 1\n", FLEET_E_MALFORMED, 1, 1, "must be a mapping");
}

static void test_aliases_and_tags(void **state)
{
	(void)state;
	refused_at(HEAD "secure_boot: any\nallowed_authorities: [&x " HA "]\n"
			"boot_applications: [*x]\n",
		   FLEET_E_MALFORMED, 8, 0, "aliases are not allowed");
	refused_at("version: !!int 1\nclass: w\nquote: {bank: sha256, pcrs: [0]}\n"
		   "secure_boot: any\n",
		   FLEET_E_MALFORMED, 1, 10, "explicit YAML tags");
}

static void test_cross_rules(void **state)
{
	(void)state;
	const char *q47 = "version: 1\nclass: w\nquote: {bank: sha256, pcrs: [4, 7]}\n";
	char y[1024];
	snprintf(y, sizeof(y), "%ssecure_boot: any\npcr0_by_bios: {v1: " HA "}\n", q47);
	refused_at(y, FLEET_E_MALFORMED, 5, 1, "needs PCR 0");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: true\n",
		   FLEET_E_MALFORMED, 4, 1, "secure_boot needs PCR 7");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: any\n"
		   "boot_applications: [" HA "]\n",
		   FLEET_E_MALFORMED, 5, 1, "needs PCR 4");
	refused_at("version: 1\nclass: w\nquote: {bank: sha256, pcrs: [0]}\nsecure_boot: any\n"
		   "allowed_authorities: []\n",
		   FLEET_E_MALFORMED, 5, 1, "needs PCR 7");
	snprintf(y, sizeof(y), "%ssecure_boot: any\npcrs: {\"0\": " HA "}\n", q47);
	refused_at(y, FLEET_E_MALFORMED, 5, 8, "quote.pcrs does not include");
	refused_at(HEAD "secure_boot: any\npcr0_by_bios: {v1: " HA "}\npcrs: {\"0\": " HA "}\n",
		   FLEET_E_MALFORMED, 8, 1, "pcr0_by_bios");
	refused_at(HEAD "secure_boot: any\nallowed_authorities: [" HA "]\n"
			"renew_required_authorities: [" HB "]\n",
		   FLEET_E_MALFORMED, 8, 1, "not in allowed_authorities");
	refused_at(HEAD "secure_boot: any\nboot_applications: []\n", FLEET_E_MALFORMED, 7, 1,
		   "boot_applications is empty");
	refused_at(HEAD "secure_boot: any\npcr0_by_bios: {\"v1\\t\": " HA "}\n", FLEET_E_MALFORMED,
		   7, 16, "printable ASCII only");
	refused_at(HEAD "secure_boot: any\npcr0_by_bios: {}\n", FLEET_E_MALFORMED, 7, 15,
		   "pcr0_by_bios is empty");
}

static void test_load_file(void **state)
{
	(void)state;
	struct fleet_profile *p = (struct fleet_profile *)1;
	struct fleet_errctx err;
	assert_int_equal(fleet_profile_load("/nonexistent/profile.yaml", &p, &err),
			 FLEET_E_NOT_FOUND);
	assert_null(p);
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.detail, "cannot read"));
	/* the reader's reason and errno passed on, not written into the sentence */
	assert_string_equal(err.reason, "not-found");
	assert_int_equal(err.sys_errno, ENOENT);
	assert_null(strstr(err.detail, "No such file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_full),
		cmocka_unit_test(test_valid_minimal),
		cmocka_unit_test(test_sha1_bank_lengths),
		cmocka_unit_test(test_bad_yaml_line),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_digest_length_and_hex),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_schema_values),
		cmocka_unit_test(test_aliases_and_tags),
		cmocka_unit_test(test_cross_rules),
		cmocka_unit_test(test_load_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
