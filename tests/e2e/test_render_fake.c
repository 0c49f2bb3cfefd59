/*
 * test_render_fake.c: fleet_render (fleetd/provision/render.h) end to end
 * through talosctl's contract fake (tests/fakes/talosctl_fake.py, v1.13.9)
 * and the real Talos v1.13.9 schema in ../shared/contracts/talos, checked
 * by an independent validator (tests/talos/talos_yaml.py). A wrapper in
 * front of the fake records what fleetd passed (argv, the patch files'
 * modes) and can make talosctl lie or fail, so each check R1-R6 is seen
 * to refuse. Skips (77) without ../shared/contracts or Debian's
 * python3-yaml and python3-jsonschema.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleetd/provision/render.h"
#include "tests/testutil.h"

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOKEN "abcdef.0123456789abcdef"

static char *dir;                 /* the test's temp dir */
static char wrapper[700], secrets[700], work[700], schema[700];
static struct fleet_install_classes classes;

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* What the wrapper does next: "" (run the fake), fail, sleep, badimage, badtoken. */
static void mode(const char *m)
{
	char p[800];
	snprintf(p, sizeof(p), "%s/mode", dir);
	put(p, m, 0644);
}

static int setup(void **state)
{
	(void)state;
	snprintf(schema, sizeof(schema), "%s/../shared/contracts/talos/config.schema.json",
		 FLEET_SOURCE_DIR);
	if (access(schema, R_OK) != 0) {
		printf("SKIP: no Talos schema at %s (../shared/contracts is absent)\n", schema);
		exit(TEST_SKIP_EXIT);
	}
	if (run_capture("/usr/bin/python3 -c 'import yaml, jsonschema' 2>/dev/null", NULL) != 0) {
		printf("SKIP: /usr/bin/python3 lacks python3-yaml or python3-jsonschema\n");
		exit(TEST_SKIP_EXIT);
	}
	dir = make_temp_dir("render");
	snprintf(wrapper, sizeof(wrapper), "%s/talosctl", dir);
	snprintf(secrets, sizeof(secrets), "%s/secrets.yaml", dir);
	snprintf(work, sizeof(work), "%s/work", dir);
	assert_int_equal(mkdir(work, 0700), 0);
	char text[4096];
	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "d='%s'\n"
		 "printf '%%s\\n' \"$*\" >> \"$d/argv.log\"\n"
		 "for a in \"$@\"; do case $a in @*) stat -c '%%a' \"${a#@}\" >> \"$d/modes.log\";; "
		 "esac; done\n"
		 "m=$(cat \"$d/mode\" 2>/dev/null)\n"
		 "fake='%s/tests/fakes/talosctl_fake.py'\n"
		 "if [ \"$1\" = gen ] && [ \"$2\" = config ]; then\n"
		 "  case $m in\n"
		 "  fail) echo 'boom: refused' >&2; exit 1;;\n"
		 "  sleep) exec sleep 30;;\n"
		 "  badimage) \"$fake\" \"$@\" | sed 's/@sha256:0/@sha256:f/'; exit 0;;\n"
		 "  badtoken) \"$fake\" \"$@\" | sed 's/abcdef.0123456789abcdef/zzzzzz.0123456789abcdef/'; "
		 "exit 0;;\n"
		 "  esac\n"
		 "fi\n"
		 "exec \"$fake\" \"$@\"\n",
		 dir, FLEET_SOURCE_DIR);
	put(wrapper, text, 0755);
	mode("");
	char cmd[2000];
	snprintf(cmd, sizeof(cmd), "'%s' gen secrets -o '%s' >/dev/null 2>&1", wrapper, secrets);
	assert_int_equal(run_capture(cmd, NULL), 0);

	static const char cls[] =
		"{\"version\": 1, \"classes\": {"
		" \"worker\": {\"role\": \"worker\", \"talos_version\": \"v1.13.9\","
		"  \"image\": \"ghcr.io/folly/installer\", \"digest\": \"" DIGEST "\"},"
		" \"cp\": {\"role\": \"controlplane\", \"talos_version\": \"v1.13.9\","
		"  \"image\": \"ghcr.io/folly/installer\", \"digest\": \"" DIGEST "\"},"
		" \"broken\": {\"role\": \"worker\", \"talos_version\": \"v1.13.9\","
		"  \"image\": \"ghcr.io/folly/installer\", \"digest\": \"" DIGEST "\"}}}";
	static const char inp[] =
		"{\"version\": 1, \"classes\": {"
		" \"worker\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan:6443\","
		"  \"kubernetes_version\": \"1.32.4\","
		"  \"patches\": [{\"machine\": {\"sysctls\": {\"vm.nr_hugepages\": \"0\"}}}]},"
		" \"cp\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan:6443\","
		"  \"kubernetes_version\": \"1.32.4\"},"
		" \"broken\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan:6443\","
		"  \"kubernetes_version\": \"1.32.4\","
		"  \"patches\": [{\"machine\": {\"install\": {\"extraKernelArgs\": [\"quiet\"],"
		"                 \"grubUseUKICmdline\": true}}}]}}}";
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	if (fleet_install_classes_parse(cls, strlen(cls), inp, strlen(inp), &classes, &ec))
		fail_msg("classes: %s", ec.detail);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fleet_install_classes_free(&classes);
	rm_rf(dir);
	free(dir);
	return 0;
}

static fleet_err render(const char *cls, const char *name, const char *token, unsigned timeout,
			struct fleet_buf *out, struct fleet_errctx *ec)
{
	struct fleet_render_env env = {.talosctl = wrapper,
				       .secrets_file = secrets,
				       .work_dir = work,
				       .timeout_seconds = timeout};
	struct fleet_render_node n = {
		.device_name = name, .install_disk_serial = "S4EVNF0M123456", .bootstrap_token = token};
	memset(ec, 0, sizeof(*ec));
	fb_init(out);
	return fleet_render(&env, fleet_install_class_find(&classes, cls), &n, out, ec);
}

static char *slurp_log(const char *name)
{
	char p[800];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	struct fleet_buf b;
	fb_init(&b);
	read_file_or_fail(p, &b);
	char *s = strndup((const char *)b.data, b.len);
	fb_free(&b);
	unlink(p);
	return s;
}

/* The independent validator's word on FILE: its output, and its status. */
static int helper(const char *args, struct fleet_buf *out)
{
	char cmd[2400];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s/tests/talos/talos_yaml.py' %s 2>&1",
		 FLEET_SOURCE_DIR, args);
	return run_capture(cmd, out);
}

static void worker_renders_and_validates(void **state)
{
	(void)state;
	struct fleet_buf out;
	struct fleet_errctx ec;
	mode("");
	if (render("worker", "w1", TOKEN, 0, &out, &ec) != FLEET_OK)
		fail_msg("render: %s: %s", ec.reason ? ec.reason : "", ec.detail);
	/* The configuration against the real schema, by a validator that is
	 * not the fake's: talosctl 1.13.9 writes persist: true, a field the
	 * schema leaves out (tests/fakes/README.md), so it is removed first;
	 * nothing else may fail. */
	char cfg[800], stripped[800], args[2000];
	snprintf(cfg, sizeof(cfg), "%s/rendered.yaml", dir);
	snprintf(stripped, sizeof(stripped), "%s/stripped.yaml", dir);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fwrite(out.data, 1, out.len, f);
	fclose(f);
	snprintf(args, sizeof(args), "del '%s' '%s' 0 persist", cfg, stripped);
	assert_int_equal(helper(args, NULL), 0);
	struct fleet_buf said;
	fb_init(&said);
	snprintf(args, sizeof(args), "schema '%s' '%s'", schema, stripped);
	if (helper(args, &said) != 0)
		fail_msg("schema: %.*s", (int)said.len, (const char *)said.data);
	fb_free(&said);
	/* The values, read back independently. */
	static const char *const want[3][2] = {
		{"machine.install.image", "\"ghcr.io/folly/installer@" DIGEST "\""},
		{"machine.install.diskSelector.serial", "\"S4EVNF0M123456\""},
		{"cluster.token", "\"" TOKEN "\""},
	};
	for (size_t i = 0; i < 3; i++) {
		snprintf(args, sizeof(args), "get '%s' 0 %s", cfg, want[i][0]);
		struct fleet_buf v;
		fb_init(&v);
		assert_int_equal(helper(args, &v), 0);
		if (v.len < strlen(want[i][1]) || memcmp(v.data, want[i][1], strlen(want[i][1])))
			fail_msg("%s: got %.*s, want %s", want[i][0], (int)v.len,
				 (const char *)v.data, want[i][1]);
		fb_free(&v);
	}
	/* The class's patch reached the configuration too. */
	assert_non_null(memmem(out.data, out.len, "vm.nr_hugepages", 15));
	fb_free_secret(&out);
	/* R6: the token never on a command line; the patches 0600; nothing
	 * left in the render directory. */
	char *argv = slurp_log("argv.log"), *modes = slurp_log("modes.log");
	assert_null(strstr(argv, TOKEN));
	assert_non_null(strstr(argv, "--install-image ghcr.io/folly/installer@" DIGEST));
	assert_non_null(strstr(argv, "validate --config"));
	assert_non_null(strstr(argv, "--mode metal --strict"));
	for (char *p = modes; *p; p = strchr(p, '\n') + 1)
		assert_true(strncmp(p, "600\n", 4) == 0);
	assert_non_null(strstr(modes, "600"));
	free(argv);
	free(modes);
	struct fleet_buf ls;
	fb_init(&ls);
	char cmd[800];
	snprintf(cmd, sizeof(cmd), "ls -A '%s'", work);
	assert_int_equal(run_capture(cmd, &ls), 0);
	assert_int_equal(ls.len, 0);
	fb_free(&ls);
}

static void control_plane_renders_with_nojoin(void **state)
{
	(void)state;
	struct fleet_buf out;
	struct fleet_errctx ec;
	mode("");
	if (render("cp", "cp1", FLEET_RENDER_NOJOIN_TOKEN, 0, &out, &ec) != FLEET_OK)
		fail_msg("render: %s: %s", ec.reason ? ec.reason : "", ec.detail);
	assert_non_null(memmem(out.data, out.len, "type: controlplane", 18));
	fb_free_secret(&out);
	/* A control plane never carries a worker's token, and back. */
	assert_int_equal(render("cp", "cp1", TOKEN, 0, &out, &ec), FLEET_E_INVALID_ARG);
	assert_string_equal(ec.reason, "render-invalid");
	assert_int_equal(render("worker", "w1", FLEET_RENDER_NOJOIN_TOKEN, 0, &out, &ec),
			 FLEET_E_INVALID_ARG);
	free(slurp_log("argv.log"));
	free(slurp_log("modes.log"));
}

/* Each refusal, and nothing returned with it. */
static void refused(const char *m, const char *cls, unsigned timeout, const char *reason,
		    const char *says)
{
	struct fleet_buf out;
	struct fleet_errctx ec;
	mode(m);
	fleet_err e = render(cls, "w1", TOKEN, timeout, &out, &ec);
	mode("");
	if (e == FLEET_OK || !ec.reason || strcmp(ec.reason, reason) != 0 ||
	    (says && !strstr(ec.detail, says)))
		fail_msg("%s: want %s (%s), got %s %s: %s", m, reason, says ? says : "",
			 fleet_err_str(e), ec.reason ? ec.reason : "(none)", ec.detail);
	assert_int_equal(out.len, 0);
	char p[800];
	snprintf(p, sizeof(p), "%s/argv.log", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/modes.log", dir);
	unlink(p);
}

static void every_check_refuses(void **state)
{
	(void)state;
	/* R1: talosctl validate --mode metal --strict refuses the class's patch. */
	refused("", "broken", 0, "validate-failed", "grubUseUKICmdline");
	/* R2, R4: a talosctl that writes another image or token. */
	refused("badimage", "worker", 0, "image-not-pinned", NULL);
	refused("badtoken", "worker", 0, "token", NULL);
	/* gen config fails, or hangs past the deadline. */
	refused("fail", "worker", 0, "talosctl-failed", "boom: refused");
	refused("sleep", "worker", 2, "talosctl-failed", "timed out");
	/* A name that is no hostname never reaches talosctl. */
	struct fleet_buf out;
	struct fleet_errctx ec;
	assert_int_equal(render("worker", "W1; rm -rf /", TOKEN, 0, &out, &ec), FLEET_E_INVALID_ARG);
	assert_string_equal(ec.reason, "render-invalid");
}

static void work_dir_must_be_private(void **state)
{
	(void)state;
	assert_int_equal(chmod(work, 0750), 0);
	struct fleet_buf out;
	struct fleet_errctx ec;
	assert_int_equal(render("worker", "w1", TOKEN, 0, &out, &ec), FLEET_E_UNSAFE);
	assert_int_equal(chmod(work, 0700), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(worker_renders_and_validates),
		cmocka_unit_test(control_plane_renders_with_nojoin),
		cmocka_unit_test(every_check_refuses),
		cmocka_unit_test(work_dir_must_be_private),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
