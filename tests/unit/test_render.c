/*
 * test_render.c: R2-R5 of fleetd/provision/render.h on crafted rendered
 * configurations (the whole render through talosctl's contract fake is
 * tests/e2e/test_render_fake.c). Each case breaks one rule of a good
 * configuration shaped as talosctl v1.13 writes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleetd/provision/render.h"

#define IMAGE "ghcr.io/folly/installer@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOKEN "abcdef.0123456789abcdef"

static const char *const GOOD =
	"version: v1alpha1\n"
	"debug: false\n"
	"persist: true\n"
	"machine:\n"
	"  type: worker\n"
	"  token: m7zq2x.0a1b2c3d4e5f6a7b\n"
	"  install:\n"
	"    diskSelector:\n"
	"      serial: S4EVNF0M123456\n"
	"    image: " IMAGE "\n"
	"    wipe: false\n"
	"cluster:\n"
	"  controlPlane:\n"
	"    endpoint: https://folly.lan:6443\n"
	"  clusterName: folly\n"
	"  token: " TOKEN "\n"
	"---\n"
	"apiVersion: v1alpha1\n"
	"kind: HostnameConfig\n"
	"auto: \"off\"\n"
	"hostname: w1\n";

static struct fleet_render_expect expect(void)
{
	struct fleet_render_expect x;
	memset(&x, 0, sizeof(x));
	x.role = FLEET_ROLE_WORKER;
	snprintf(x.image_ref, sizeof(x.image_ref), "%s", IMAGE);
	x.disk_serial = "S4EVNF0M123456";
	x.token = TOKEN;
	x.hostname = "w1";
	x.endpoint = "https://folly.lan:6443";
	return x;
}

static const char *edit(const char *from, const char *to)
{
	static char out[8192];
	const char *p = strstr(GOOD, from);
	assert_non_null(p);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(p - GOOD), GOOD, to, p + strlen(from));
	return out;
}

static void refused(const char *cfg, const struct fleet_render_expect *x, fleet_err want,
		    const char *reason)
{
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_render_check(cfg, strlen(cfg), x, &ec);
	if (e != want || !ec.reason || strcmp(ec.reason, reason) != 0)
		fail_msg("want %s %s, got %s %s: %s", fleet_err_str(want), reason, fleet_err_str(e),
			 ec.reason ? ec.reason : "(none)", ec.detail);
}

static void good_passes(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_render_check(GOOD, strlen(GOOD), &x, &ec), FLEET_OK);
}

/* R2 */
static void image_must_be_the_pinned_digest(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused(edit("@sha256:0123", "@sha256:f123"), &x, FLEET_E_VERIFY, "image-not-pinned");
	refused(edit(IMAGE, "ghcr.io/folly/installer:v1.13.9"), &x, FLEET_E_VERIFY,
		"image-not-pinned");
	refused(edit("    image: " IMAGE "\n", ""), &x, FLEET_E_VERIFY, "image-not-pinned");
}

/* R3 */
static void disk_is_the_declared_serial_alone(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused(edit("serial: S4EVNF0M123456", "serial: S4EVNF0M999999"), &x, FLEET_E_VERIFY,
		"disk-selector");
	refused(edit("    diskSelector:\n      serial: S4EVNF0M123456\n", "    disk: /dev/sda\n"),
		&x, FLEET_E_VERIFY, "disk-selector");
	/* A selector and a disk by name: the name could win on some boot. */
	refused(edit("    wipe: false\n", "    wipe: false\n    disk: /dev/sda\n"), &x,
		FLEET_E_VERIFY, "disk-selector");
}

/* R4 */
static void token_is_this_machines(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused(edit("  token: " TOKEN, "  token: zzzzzz.0123456789abcdef"), &x, FLEET_E_VERIFY,
		"token");
	/* machine.token is not cluster.token: the check reads the right one. */
	refused(edit("  clusterName: folly\n  token: " TOKEN "\n", "  clusterName: folly\n"), &x,
		FLEET_E_VERIFY, "token");
}

/* R5 */
static void role_and_hostname(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused(edit("type: worker", "type: controlplane"), &x, FLEET_E_VERIFY, "role");
	refused(edit("hostname: w1", "hostname: w2"), &x, FLEET_E_VERIFY, "hostname");
	refused(edit("auto: \"off\"", "auto: stable"), &x, FLEET_E_VERIFY, "hostname");
	refused(edit("---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: w1\n",
		     ""),
		&x, FLEET_E_VERIFY, "hostname");
	x.role = FLEET_ROLE_CONTROLPLANE;
	refused(GOOD, &x, FLEET_E_VERIFY, "role");
}

static void malformed_output(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused("version: v1alpha1\nmachine: [unclosed\n", &x, FLEET_E_MALFORMED,
		"output-malformed");
	/* Aliases: a small file naming one node many times. */
	refused("a: &x [1, 2]\nb: *x\n", &x, FLEET_E_MALFORMED, "output-malformed");
	/* No v1alpha1 document, or two. */
	refused("apiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: w1\n", &x,
		FLEET_E_MALFORMED, "output-malformed");
	char two[8192];
	snprintf(two, sizeof(two), "%s---\n%s", GOOD, GOOD);
	refused(two, &x, FLEET_E_MALFORMED, "output-malformed");
	/* Over the cap. */
	static char big[FLEET_RENDER_OUTPUT_MAX + 2];
	memset(big, '#', sizeof(big) - 1);
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_render_check(big, sizeof(big) - 1, &x, &ec), FLEET_E_TOO_LARGE);
}

/* R5b */
static void endpoint_is_the_class(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused(edit("endpoint: https://folly.lan:6443", "endpoint: https://evil.lan:6443"), &x,
		FLEET_E_VERIFY, "endpoint");
	refused(edit("  controlPlane:\n    endpoint: https://folly.lan:6443\n", ""), &x,
		FLEET_E_VERIFY, "endpoint");
	x.endpoint = NULL; /* no expectation is not "anything goes" */
	refused(GOOD, &x, FLEET_E_VERIFY, "endpoint");
}

/* R7: a merge key, which Go's yaml.v3 (Talos) merges and libyaml does not:
 * here the token fleetd would read first is the good one, while Talos
 * reads the merged one. */
static void merge_keys_refused(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	refused(edit("  clusterName: folly\n", "  clusterName: folly\n  <<: {token: zzzzzz.0123456789abcdef}\n"),
		&x, FLEET_E_MALFORMED, "yaml-ambiguous");
	refused(edit("    wipe: false\n", "    wipe: false\n    !!merge x: {disk: /dev/sda}\n"), &x,
		FLEET_E_MALFORMED, "yaml-ambiguous");
	/* Deep in a sequence too. */
	refused(edit("debug: false\n", "debug: false\nextra:\n  - {a: 1}\n  - {<<: {b: 2}}\n"), &x,
		FLEET_E_MALFORMED, "yaml-ambiguous");
	/* A key "<<" quoted is still a merge key to nobody, but refused all the same. */
	refused(edit("debug: false\n", "debug: false\n\"<<\": 1\n"), &x, FLEET_E_MALFORMED,
		"yaml-ambiguous");
}

/* R7: a duplicate key anywhere: fleetd's reader takes the first, Go refuses. */
static void duplicate_keys_refused(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	/* The second cluster.token: the case that matters. */
	refused(edit("  token: " TOKEN "\n", "  token: " TOKEN "\n  token: zzzzzz.0123456789abcdef\n"),
		&x, FLEET_E_MALFORMED, "yaml-ambiguous");
	/* Top level, a second machine: mapping. */
	refused(edit("cluster:\n", "machine:\n  type: controlplane\ncluster:\n"), &x,
		FLEET_E_MALFORMED, "yaml-ambiguous");
	/* Spelt differently, the same key. */
	refused(edit("    wipe: false\n", "    wipe: false\n    \"image\": other\n"), &x,
		FLEET_E_MALFORMED, "yaml-ambiguous");
	/* In the HostnameConfig. */
	refused(edit("hostname: w1\n", "hostname: w1\nhostname: w2\n"), &x, FLEET_E_MALFORMED,
		"yaml-ambiguous");
	/* A key that is not a scalar. */
	refused(edit("debug: false\n", "debug: false\n? [a]\n: 1\n"), &x, FLEET_E_MALFORMED,
		"yaml-ambiguous");
}

/* R7: documents named the way Talos's decoder names them. */
static void documents_classified_as_talos_does(void **state)
{
	(void)state;
	struct fleet_render_expect x = expect();
	/* A typed document without apiVersion, or without kind: Talos refuses it. */
	refused(edit("apiVersion: v1alpha1\nkind: HostnameConfig\n", "kind: HostnameConfig\n"), &x,
		FLEET_E_MALFORMED, "output-malformed");
	refused(edit("apiVersion: v1alpha1\nkind: HostnameConfig\n", "apiVersion: v1alpha2\n"), &x,
		FLEET_E_MALFORMED, "output-malformed");
	/* A document with machine: is the v1alpha1 document to Talos, whatever
	 * version says: a second one is refused, though it has no version. */
	char extra[8192];
	snprintf(extra, sizeof(extra), "%s---\nmachine:\n  type: controlplane\n", GOOD);
	refused(extra, &x, FLEET_E_MALFORMED, "output-malformed");
	/* The first document with a kind is not the v1alpha1 document to Talos
	 * (its machine: keys notwithstanding): no v1alpha1 document is left,
	 * though the bytes still hold every value fleetd checks. */
	refused(edit("version: v1alpha1\n",
		     "version: v1alpha1\napiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\n"),
		&x, FLEET_E_MALFORMED, "output-malformed");
	/* Talos reads values as well as keys: a value "kind" takes the next key
	 * as the document's kind, so this is a (bad) HostnameConfig to Talos,
	 * and to fleetd, not the v1alpha1 document. */
	refused(edit("debug: false\n", "debug: false\nlabel: kind\nHostnameConfig: 1\n"), &x,
		FLEET_E_VERIFY, "hostname");
}

static void token_forms(void **state)
{
	(void)state;
	assert_true(fleet_render_token_ok(TOKEN));
	assert_true(fleet_render_token_ok(FLEET_RENDER_NOJOIN_TOKEN));
	assert_false(fleet_render_token_ok("ABCDEF.0123456789abcdef"));
	assert_false(fleet_render_token_ok("abcdef0123456789abcdef"));
	assert_false(fleet_render_token_ok("abcdef.0123456789abcde"));
	assert_false(fleet_render_token_ok("abcde.f0123456789abcdef"));
	assert_false(fleet_render_token_ok(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_passes),
		cmocka_unit_test(image_must_be_the_pinned_digest),
		cmocka_unit_test(disk_is_the_declared_serial_alone),
		cmocka_unit_test(token_is_this_machines),
		cmocka_unit_test(role_and_hostname),
		cmocka_unit_test(malformed_output),
		cmocka_unit_test(endpoint_is_the_class),
		cmocka_unit_test(merge_keys_refused),
		cmocka_unit_test(duplicate_keys_refused),
		cmocka_unit_test(documents_classified_as_talos_does),
		cmocka_unit_test(token_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
