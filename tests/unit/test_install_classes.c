/*
 * test_install_classes.c: classes.json and class-inputs.json, rules K1-K6
 * of fleetd/provision/install_classes.h. Each test breaks one rule of a
 * good pair of files and expects the refusal that names it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleetd/provision/authorize.h"
#include "fleetd/provision/install_classes.h"

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char *const CLASSES =
	"{\"version\": 1, \"classes\": {"
	" \"worker\": {\"role\": \"worker\", \"talos_version\": \"v1.13.9\","
	"  \"image\": \"ghcr.io/folly/installer-worker\", \"digest\": \"" DIGEST "\"},"
	" \"cp\": {\"role\": \"controlplane\", \"talos_version\": \"v1.13.9\","
	"  \"image\": \"registry.lan:5000/talos/installer\", \"digest\": \"" DIGEST "\"},"
	" \"bmc\": {\"role\": \"none\"}}}";

static const char *const INPUTS =
	"{\"version\": 1, \"classes\": {"
	" \"worker\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan:6443\","
	"  \"kubernetes_version\": \"1.32.4\","
	"  \"patches\": [{\"machine\": {\"sysctls\": {\"vm.nr_hugepages\": \"0\"}}},"
	"                {\"cluster\": {\"network\": {\"cni\": {\"name\": \"none\"}}}}]},"
	" \"cp\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan\","
	"  \"kubernetes_version\": \"1.32.4\"}}}";

/* s with the first occurrence of from replaced by to, in a static buffer. */
static const char *edit(const char *s, const char *from, const char *to)
{
	static char out[8192];
	const char *p = strstr(s, from);
	assert_non_null(p);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
	return out;
}

static fleet_err parse(const char *cls, const char *inp, struct fleet_install_classes *c,
		       struct fleet_errctx *ec)
{
	memset(ec, 0, sizeof(*ec));
	return fleet_install_classes_parse(cls, strlen(cls), inp, strlen(inp), c, ec);
}

/* Refused with reason, the detail naming what; nothing kept. */
static void refused(const char *cls, const char *inp, const char *reason, const char *names)
{
	struct fleet_install_classes c;
	struct fleet_errctx ec;
	fleet_err e = parse(cls, inp, &c, &ec);
	if (e == FLEET_OK || !ec.reason || strcmp(ec.reason, reason) != 0 ||
	    !strstr(ec.detail, names))
		fail_msg("want %s naming \"%s\", got %s %s: %s", reason, names, fleet_err_str(e),
			 ec.reason ? ec.reason : "(no reason)", ec.detail);
	fleet_install_classes_free(&c);
}

static void good_files_parse(void **state)
{
	(void)state;
	struct fleet_install_classes c;
	struct fleet_errctx ec;
	assert_int_equal(parse(CLASSES, INPUTS, &c, &ec), FLEET_OK);
	assert_int_equal(c.n, 3);
	const struct fleet_install_class *w = fleet_install_class_find(&c, "worker");
	assert_non_null(w);
	assert_int_equal(w->role, FLEET_ROLE_WORKER);
	assert_true(fleet_install_class_installs(w));
	assert_string_equal(w->talos_version, "v1.13.9");
	assert_string_equal(w->cluster_name, "folly");
	assert_string_equal(w->endpoint, "https://folly.lan:6443");
	assert_string_equal(w->kubernetes_version, "1.32.4");
	assert_int_equal(w->n_patches, 2);
	assert_string_equal(w->patches[0], "{\"machine\":{\"sysctls\":{\"vm.nr_hugepages\":\"0\"}}}");
	char ref[300];
	assert_int_equal(fleet_install_class_image_ref(w, ref, sizeof(ref)), FLEET_OK);
	assert_string_equal(ref, "ghcr.io/folly/installer-worker@" DIGEST);
	assert_int_equal(fleet_install_class_image_ref(w, ref, 20), FLEET_E_TOO_LARGE);
	const struct fleet_install_class *cp = fleet_install_class_find(&c, "cp");
	assert_int_equal(cp->role, FLEET_ROLE_CONTROLPLANE);
	assert_int_equal(cp->n_patches, 0);
	const struct fleet_install_class *b = fleet_install_class_find(&c, "bmc");
	assert_int_equal(b->role, FLEET_ROLE_NONE);
	assert_false(fleet_install_class_installs(b));
	assert_int_equal(fleet_install_class_image_ref(b, ref, sizeof(ref)), FLEET_E_INVALID_ARG);
	assert_null(fleet_install_class_find(&c, "nope"));
	assert_string_equal(fleet_install_role_str(cp->role), "controlplane");
	fleet_install_classes_free(&c);
}

/* K1: fleetd refuses to start while a class that installs has no digest. */
static void installing_class_without_digest_refused(void **state)
{
	(void)state;
	/* The worker's digest empty (as before the image workflow's first
	 * build), and absent. */
	refused(edit(CLASSES, "\"digest\": \"" DIGEST "\"},", "\"digest\": \"\"},"), INPUTS,
		"no-digest", "class worker");
	refused(edit(CLASSES, ", \"digest\": \"" DIGEST "\"},", "},"), INPUTS, "no-digest",
		"class worker");
	/* The control plane's: the same rule, named for it. */
	refused(edit(CLASSES, "installer\", \"digest\": \"" DIGEST "\"},",
		     "installer\", \"digest\": \"\"},"),
		INPUTS, "no-digest", "class cp");
	/* A digest of another form is no pin. */
	refused(edit(CLASSES, DIGEST, "sha256:0123"), INPUTS, "bad-digest", "class worker");
	refused(edit(CLASSES, DIGEST, "sha512:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
		INPUTS, "bad-digest", "class worker");
	refused(edit(CLASSES, DIGEST, "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"),
		INPUTS, "bad-digest", "class worker");
	/* role none installs nothing: no digest needed, none allowed. */
	refused(edit(CLASSES, "{\"role\": \"none\"}", "{\"role\": \"none\", \"digest\": \"" DIGEST "\"}"),
		INPUTS, "malformed", "class bmc");
}

/* K2: the image is a repository; the digest alone says which image. */
static void image_with_tag_or_digest_refused(void **state)
{
	(void)state;
	refused(edit(CLASSES, "ghcr.io/folly/installer-worker", "ghcr.io/folly/installer-worker:v1.13.9"),
		INPUTS, "bad-image", "class worker");
	refused(edit(CLASSES, "ghcr.io/folly/installer-worker", "ghcr.io/folly/installer-worker@" DIGEST),
		INPUTS, "bad-image", "class worker");
	refused(edit(CLASSES, "ghcr.io/folly/installer-worker", "installer"), INPUTS, "bad-image",
		"class worker");
	refused(edit(CLASSES, "ghcr.io/folly/installer-worker", "GHCR.io/folly/installer"), INPUTS,
		"bad-image", "class worker");
	refused(edit(CLASSES, "ghcr.io/folly/installer-worker", "ghcr.io//installer"), INPUTS,
		"bad-image", "class worker");
}

/* K3 */
static void versions_refused(void **state)
{
	(void)state;
	refused(edit(CLASSES, "v1.13.9", "1.13.9"), INPUTS, "bad-version", "class worker");
	refused(edit(CLASSES, "v1.13.9", "v1.13"), INPUTS, "bad-version", "class worker");
	refused(edit(CLASSES, "v1.13.9", "v1.13.9-rc1"), INPUTS, "bad-version", "class worker");
	refused(CLASSES, edit(INPUTS, "1.32.4", "v1.32.4"), "bad-version", "class worker");
}

/* K4 */
static void inputs_refused(void **state)
{
	(void)state;
	/* Inputs for a class classes.json does not list (a typo). */
	refused(CLASSES, edit(INPUTS, "\"cp\":", "\"cp2\": {}, \"cp\":"), "unknown-class", "cp2");
	/* A class that installs with no inputs. */
	refused(CLASSES,
		"{\"version\": 1, \"classes\": {\"worker\": {\"cluster_name\": \"folly\", "
		"\"endpoint\": \"https://folly.lan:6443\", \"kubernetes_version\": \"1.32.4\"}}}",
		"no-inputs", "class cp");
	/* Inputs for a class that installs nothing. */
	refused(CLASSES, edit(INPUTS, "\"cp\":", "\"bmc\": {}, \"cp\":"), "malformed", "class bmc");
	/* Endpoints. */
	refused(CLASSES, edit(INPUTS, "https://folly.lan:6443", "http://folly.lan:6443"),
		"bad-endpoint", "class worker");
	refused(CLASSES, edit(INPUTS, "https://folly.lan:6443", "https://folly.lan:6443/api"),
		"bad-endpoint", "class worker");
	refused(CLASSES, edit(INPUTS, "https://folly.lan:6443", "https://u@folly.lan"),
		"bad-endpoint", "class worker");
	refused(CLASSES, edit(INPUTS, "https://folly.lan:6443", "https://folly.lan:"),
		"bad-endpoint", "class worker");
	/* A patch that is not an object. */
	refused(CLASSES, edit(INPUTS, "[{\"machine\"", "[\"machine\", {\"machine\""), "malformed",
		"patch 1");
	/* A cluster name that talosctl would read as a flag. */
	refused(CLASSES, edit(INPUTS, "\"cluster_name\": \"folly\"", "\"cluster_name\": \"--with-kubespan\""),
		"malformed", "\"cluster_name\"");
	/* A required input missing. */
	refused(CLASSES, edit(INPUTS, "\"cluster_name\": \"folly\", ", ""), "malformed",
		"\"cluster_name\"");
}

/* K5 */
static void unknown_and_duplicate_keys_refused(void **state)
{
	(void)state;
	refused(edit(CLASSES, "\"digest\"", "\"digets\": \"x\", \"digest\""), INPUTS,
		"unknown-key", "digets");
	refused(edit(CLASSES, "{\"version\": 1,", "{\"version\": 1, \"extra\": 1,"), INPUTS,
		"unknown-key", "extra");
	refused(CLASSES, edit(INPUTS, "\"patches\"", "\"patch\": [], \"patches\""), "unknown-key",
		"patch");
	refused(edit(CLASSES, "{\"version\": 1,", "{\"version\": 1, \"version\": 1,"), INPUTS,
		"malformed", "duplicate");
	refused(edit(CLASSES, "\"version\": 1", "\"version\": 2"), INPUTS, "malformed", "version");
	/* A key with a control character is named escaped. */
	refused(edit(CLASSES, "\"digest\"", "\"di\\u001bgest\": \"x\", \"digest\""), INPUTS,
		"unknown-key", "di\\x1Bgest");
}

static void caps(void **state)
{
	(void)state;
	/* Over the file cap. */
	static char big[FLEET_INSTALL_FILE_MAX + 2];
	memset(big, ' ', sizeof(big) - 1);
	struct fleet_install_classes c;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_install_classes_parse(big, sizeof(big) - 1, INPUTS, strlen(INPUTS),
						     &c, &ec),
			 FLEET_E_TOO_LARGE);
	fleet_install_classes_free(&c);
	/* More patches than the cap. */
	char inp[4096];
	snprintf(inp, sizeof(inp),
		 "{\"version\": 1, \"classes\": {\"worker\": {\"cluster_name\": \"folly\", "
		 "\"endpoint\": \"https://folly.lan:6443\", \"kubernetes_version\": \"1.32.4\", "
		 "\"patches\": [{},{},{},{},{},{},{},{},{}]}, \"cp\": {\"cluster_name\": \"f\", "
		 "\"endpoint\": \"https://f\", \"kubernetes_version\": \"1.32.4\"}}}");
	refused(CLASSES, inp, "malformed", "at most 8");
}

/* K6 */
static void profile_classes_must_be_declared(void **state)
{
	(void)state;
	struct fleet_install_classes c;
	struct fleet_errctx ec;
	assert_int_equal(parse(CLASSES, INPUTS, &c, &ec), FLEET_OK);
	const char *ok[] = {"worker", "cp", "bmc"};
	assert_int_equal(fleet_install_classes_check_profiles(&c, ok, 3, &ec), FLEET_OK);
	const char *bad[] = {"worker", "storage"};
	assert_int_equal(fleet_install_classes_check_profiles(&c, bad, 2, &ec), FLEET_E_NOT_FOUND);
	assert_string_equal(ec.reason, "unknown-class");
	assert_non_null(strstr(ec.detail, "class storage"));
	fleet_install_classes_free(&c);
}

/* The files clusters/folly ships: valid by every rule but K1, since the
 * image workflow has not pinned a digest yet, and valid once it has. */
static char *slurp(const char *rel, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", FLEET_SOURCE_DIR, rel);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[2][64 * 1024];
	static int which;
	char *b = buf[which++ % 2];
	*len = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[*len] = '\0';
	fclose(f);
	return b;
}

static void shipped_files(void **state)
{
	(void)state;
	size_t cl, il;
	char *cls = slurp("clusters/folly/fleet/classes.json", &cl);
	char *inp = slurp("clusters/folly/fleet/class-inputs.json", &il);
	struct fleet_install_classes c;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_install_classes_parse(cls, cl, inp, il, &c, &ec), FLEET_E_MALFORMED);
	assert_string_equal(ec.reason, "no-digest");
	fleet_install_classes_free(&c);
	/* What the workflow writes: each "digest": "" filled in. */
	static char pinned[64 * 1024];
	size_t o = 0;
	for (const char *p = cls; *p;) {
		if (!strncmp(p, "\"digest\": \"\"", 12)) {
			o += (size_t)snprintf(pinned + o, sizeof(pinned) - o, "\"digest\": \"%s\"",
					      DIGEST);
			p += 12;
		} else {
			pinned[o++] = *p++;
		}
	}
	pinned[o] = '\0';
	if (fleet_install_classes_parse(pinned, o, inp, il, &c, &ec) != FLEET_OK)
		fail_msg("%s", ec.detail);
	assert_true(fleet_install_class_installs(fleet_install_class_find(&c, "worker")));
	assert_int_equal(fleet_install_class_find(&c, "controlplane")->role,
			 FLEET_ROLE_CONTROLPLANE);
	fleet_install_classes_free(&c);
}

/* P1-P4 of fleetd/provision/authorize.h. */
static void provision_wanted(void **state)
{
	(void)state;
	const char *why;
	/* P1: the owner's request installs a worker and a control plane. */
	assert_true(fleet_provision_wanted(FLEET_ROLE_WORKER, "provision", false, true, &why));
	assert_string_equal(why, "owner-requested");
	assert_true(fleet_provision_wanted(FLEET_ROLE_CONTROLPLANE, "provision", false, true, &why));
	/* P2: auto-provision, a worker that never ran a Workflow. */
	assert_true(fleet_provision_wanted(FLEET_ROLE_WORKER, "", true, false, &why));
	assert_string_equal(why, "auto-provision");
	assert_true(fleet_provision_wanted(FLEET_ROLE_WORKER, "none", true, false, &why));
	/* ... once only: a worker that ran one waits for its owner. */
	assert_false(fleet_provision_wanted(FLEET_ROLE_WORKER, "", true, true, &why));
	assert_string_equal(why, "not-requested");
	/* ... and not with auto-provision off. */
	assert_false(fleet_provision_wanted(FLEET_ROLE_WORKER, "", false, false, &why));
	assert_string_equal(why, "not-requested");
	/* P3: a control plane never by auto-provision. */
	assert_false(fleet_provision_wanted(FLEET_ROLE_CONTROLPLANE, "", true, false, &why));
	assert_string_equal(why, "controlplane-needs-owner");
	assert_false(fleet_provision_wanted(FLEET_ROLE_CONTROLPLANE, NULL, true, false, &why));
	/* P4: a class that installs nothing, whatever the owner says. */
	assert_false(fleet_provision_wanted(FLEET_ROLE_NONE, "provision", true, false, &why));
	assert_string_equal(why, "class-installs-nothing");
	/* A value fleetd does not know starts nothing. */
	assert_false(fleet_provision_wanted(FLEET_ROLE_WORKER, "reprovision", true, false, &why));
	assert_string_equal(why, "desired-action-unknown");
	assert_false(fleet_provision_wanted(FLEET_ROLE_WORKER, "Provision", true, false, &why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_files_parse),
		cmocka_unit_test(installing_class_without_digest_refused),
		cmocka_unit_test(image_with_tag_or_digest_refused),
		cmocka_unit_test(versions_refused),
		cmocka_unit_test(inputs_refused),
		cmocka_unit_test(unknown_and_duplicate_keys_refused),
		cmocka_unit_test(caps),
		cmocka_unit_test(profile_classes_must_be_declared),
		cmocka_unit_test(provision_wanted),
		cmocka_unit_test(shipped_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
