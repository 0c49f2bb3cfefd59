/*
 * test_bootstrap_token.c: T1-T3 of fleetd/provision/bootstrap_token.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleetd/provision/bootstrap_token.h"
#include "fleetd/provision/render.h"

static int lower_alnum(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static void tokens_have_the_format_and_differ(void **state)
{
	(void)state;
	struct fleet_bootstrap_token a, b;
	assert_int_equal(fleet_bootstrap_token_new(&a), FLEET_OK);
	assert_int_equal(fleet_bootstrap_token_new(&b), FLEET_OK);
	assert_true(lower_alnum(a.id, 6));
	assert_true(lower_alnum(a.secret, 16));
	assert_int_equal(strlen(a.token), 23);
	assert_int_equal(a.token[6], '.');
	assert_true(fleet_render_token_ok(a.token));
	assert_string_not_equal(a.token, b.token);
	char name[32];
	fleet_bootstrap_secret_name(&a, name);
	assert_int_equal(strncmp(name, "bootstrap-token-", 16), 0);
	assert_string_equal(name + 16, a.id);
	fleet_bootstrap_token_wipe(&a);
	assert_int_equal(a.token[0], 0);
}

/* T1: no character likelier than another. Taking a byte mod 36 without
 * rejection makes a-d (bytes 252..255 fold onto them) about 10% likelier;
 * with 440,000 characters that is ~12 standard deviations above this
 * bound, and an unbiased draw stays ~4.5 below it. */
static void characters_are_uniform(void **state)
{
	(void)state;
	size_t count[36] = {0}, total = 0;
	for (int i = 0; i < 20000; i++) {
		struct fleet_bootstrap_token t;
		assert_int_equal(fleet_bootstrap_token_new(&t), FLEET_OK);
		for (const char *p = t.token; *p; p++) {
			if (*p == '.')
				continue;
			count[*p >= 'a' ? *p - 'a' : 26 + (*p - '0')]++;
			total++;
		}
	}
	double mean = (double)total / 36.0;
	for (int c = 0; c < 36; c++)
		if ((double)count[c] > mean * 1.04 || (double)count[c] < mean * 0.96)
			fail_msg("character %d drawn %zu times, mean %.0f", c, count[c], mean);
}

static void secret_is_the_bootstrap_shape(void **state)
{
	(void)state;
	struct fleet_bootstrap_token t;
	assert_int_equal(fleet_bootstrap_token_new(&t), FLEET_OK);
	/* 2026-12-01T10:00:00Z, a configuration that expires then. */
	json_t *s = fleet_bootstrap_secret(&t, 1796119200);
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "apiVersion")), "v1");
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "Secret");
	assert_string_equal(json_string_value(json_object_get(s, "type")),
			    "bootstrap.kubernetes.io/token");
	json_t *md = json_object_get(s, "metadata");
	char name[32];
	fleet_bootstrap_secret_name(&t, name);
	assert_string_equal(json_string_value(json_object_get(md, "name")), name);
	assert_string_equal(json_string_value(json_object_get(md, "namespace")), "kube-system");
	json_t *d = json_object_get(s, "stringData");
	assert_string_equal(json_string_value(json_object_get(d, "token-id")), t.id);
	assert_string_equal(json_string_value(json_object_get(d, "token-secret")), t.secret);
	/* T3: four hours after the configuration's time to live. */
	assert_string_equal(json_string_value(json_object_get(d, "expiration")),
			    "2026-12-01T14:00:00Z");
	assert_string_equal(json_string_value(json_object_get(d, "usage-bootstrap-authentication")),
			    "true");
	assert_string_equal(json_string_value(json_object_get(d, "auth-extra-groups")),
			    "system:bootstrappers:fleetd");
	/* Nothing else in stringData: no signing usage, no other group. */
	assert_int_equal(json_object_size(d), 5);
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tokens_have_the_format_and_differ),
		cmocka_unit_test(characters_are_uniform),
		cmocka_unit_test(secret_is_the_bootstrap_shape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
