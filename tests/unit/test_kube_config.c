/*
 * test_kube_config.c: the kubeconfig and service-account rules KC1-KC12
 * (fleetd/kube/kube_config.h), the path rule K2 and the watch event parser
 * K15 (fleetd/kube/kube.h). Each refusal beside an input that passes.
 */
#include <fcntl.h>
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

#include "fleetd/kube/kube.h"
#include "fleetd/kube/kube_config.h"
#include "tests/testutil.h"

/* base64 of "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" */
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
/* base64 of "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n" */
#define KEY_B64 "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUIKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo="

static char *kubeconfig(const char *cluster_extra, const char *user)
{
	static char buf[8192];
	snprintf(buf, sizeof(buf),
		 "apiVersion: v1\n"
		 "kind: Config\n"
		 "clusters:\n"
		 "- name: c\n"
		 "  cluster:\n"
		 "    server: https://127.0.0.1:6443/\n"
		 "%s"
		 "users:\n"
		 "- name: u\n"
		 "  user:\n"
		 "%s"
		 "contexts:\n"
		 "- name: x\n"
		 "  context: {cluster: c, user: u, namespace: default}\n"
		 "current-context: x\n"
		 "preferences: {}\n",
		 cluster_extra, user);
	return buf;
}

static fleet_err parse(const char *text, struct fleet_kube_auth *a, struct fleet_errctx *ec)
{
	memset(ec, 0, sizeof(*ec));
	return fleet_kubeconfig_parse((const uint8_t *)text, strlen(text), "/nonexistent", a, ec);
}

static void refused(const char *text, fleet_err want, const char *reason, const char *words)
{
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	fleet_err e = parse(text, &a, &ec);
	if (e != want)
		fail_msg("want %s, got %s: %s", fleet_err_str(want), fleet_err_str(e), ec.detail);
	assert_int_equal(e, want);
	if (reason) {
		assert_non_null(ec.reason);
		assert_string_equal(ec.reason, reason);
	}
	if (words && !strstr(ec.detail, words))
		fail_msg("no '%s' in '%s'", words, ec.detail);
	/* a refusal leaves nothing behind */
	if (want != FLEET_OK) {
		assert_int_equal(a.token.len, 0);
		assert_int_equal(a.server[0], '\0');
	}
	fleet_kube_auth_free(&a);
}

static void a_token_kubeconfig_passes(void **state)
{
	(void)state;
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	fleet_err e = parse(kubeconfig("    certificate-authority-data: " CA_B64 "\n",
				       "    token: abc.def\n"),
			    &a, &ec);
	assert_int_equal(e, FLEET_OK);
	assert_string_equal(a.server, "https://127.0.0.1:6443"); /* trailing '/' dropped */
	assert_int_equal(a.token.len, 7);
	assert_memory_equal(a.token.data, "abc.def", 7);
	assert_non_null(strstr((const char *)a.ca_pem.data, "BEGIN CERTIFICATE"));
	assert_int_equal(a.cert_pem.len, 0);
	fleet_kube_auth_free(&a);
}

static void a_client_certificate_kubeconfig_passes(void **state)
{
	(void)state;
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	fleet_err e = parse(kubeconfig("",
				       "    client-certificate-data: " CA_B64 "\n"
				       "    client-key-data: " KEY_B64 "\n"),
			    &a, &ec);
	assert_int_equal(e, FLEET_OK);
	assert_true(a.key_pem.secret); /* KC11 */
	assert_non_null(strstr((const char *)a.key_pem.data, "PRIVATE KEY"));
	assert_int_equal(a.ca_pem.len, 0); /* the system's roots */
	fleet_kube_auth_free(&a);
}

static void kc4_http_server_refused(void **state)
{
	(void)state;
	char text[8192];
	snprintf(text, sizeof(text), "%s", kubeconfig("", "    token: t\n"));
	char *p = strstr(text, "https://");
	memmove(p + 4, p + 5, strlen(p + 5) + 1); /* https -> http */
	refused(text, FLEET_KUBE_E_MALFORMED, "not-https", "https");
	/* and a server with user info or a query */
	refused(kubeconfig("", "    token: t\n") /* baseline passes: */, FLEET_OK, NULL, NULL);
	snprintf(text, sizeof(text), "%s", kubeconfig("", "    token: t\n"));
	p = strstr(text, "https://");
	memcpy(p, "https://u@h/?q", 14);
	refused(text, FLEET_KUBE_E_MALFORMED, "bad-server", NULL);
}

static void kc5_insecure_skip_refused(void **state)
{
	(void)state;
	refused(kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"),
		FLEET_KUBE_E_MALFORMED, "insecure-skip-tls-verify", "TLS is always verified");
	refused(kubeconfig("    insecure-skip-tls-verify: false\n", "    token: t\n"), FLEET_OK,
		NULL, NULL);
}

static void kc8_plugins_refused_as_not_supported(void **state)
{
	(void)state;
	refused(kubeconfig("", "    exec:\n      command: aws\n      apiVersion: x\n"),
		FLEET_KUBE_E_UNSUPPORTED, "exec-plugin", "not supported");
	refused(kubeconfig("", "    auth-provider:\n      name: gcp\n"), FLEET_KUBE_E_UNSUPPORTED,
		"auth-provider", "not supported");
	refused(kubeconfig("", "    username: a\n    password: b\n"), FLEET_KUBE_E_UNSUPPORTED,
		"basic-auth", "not supported");
	refused(kubeconfig("", "    token: t\n    as: admin\n"), FLEET_KUBE_E_UNSUPPORTED,
		"impersonation", "not supported");
	refused(kubeconfig("    proxy-url: https://proxy:3128\n", "    token: t\n"),
		FLEET_KUBE_E_UNSUPPORTED, "proxy-url", "not supported");
}

static void kc3_missing_context_refused(void **state)
{
	(void)state;
	char text[8192];
	snprintf(text, sizeof(text), "%s", kubeconfig("", "    token: t\n"));
	char *p = strstr(text, "current-context: x");
	p[17] = 'y'; /* names no context */
	refused(text, FLEET_KUBE_E_MALFORMED, "no-context", NULL);
	snprintf(text, sizeof(text), "%s", kubeconfig("", "    token: t\n"));
	p = strstr(text, "current-context: x\n");
	memset(p, ' ', strlen("current-context: x"));
	refused(text, FLEET_KUBE_E_MALFORMED, "no-context", "current-context");
	snprintf(text, sizeof(text), "%s", kubeconfig("", "    token: t\n"));
	p = strstr(text, "user: u,");
	p[6] = 'v'; /* the context's user is not in users */
	refused(text, FLEET_KUBE_E_MALFORMED, "no-context", "user");
}

static void kc9_bad_base64_refused(void **state)
{
	(void)state;
	refused(kubeconfig("    certificate-authority-data: LS0t*LS1\n", "    token: t\n"),
		FLEET_KUBE_E_MALFORMED, "bad-base64", "base64");
	refused(kubeconfig("    certificate-authority-data: LS0tL\n", "    token: t\n"),
		FLEET_KUBE_E_MALFORMED, "bad-base64", NULL); /* not a multiple of 4 */
	refused(kubeconfig("", "    client-certificate-data: " CA_B64 "\n"
			       "    client-key-data: " KEY_B64 "=\n"),
		FLEET_KUBE_E_MALFORMED, "bad-base64", NULL);
	/* base64 that is not PEM */
	refused(kubeconfig("    certificate-authority-data: aGVsbG8=\n", "    token: t\n"),
		FLEET_KUBE_E_MALFORMED, "bad-pem", NULL);
	struct fleet_buf b;
	assert_int_equal(fleet_kube_b64_decode("aGk=", 4, &b, 0, 16, NULL), FLEET_OK);
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.data, "hi", 2);
	fb_free(&b);
	/* non-canonical: padding bits set */
	assert_int_equal(fleet_kube_b64_decode("aGl=", 4, &b, 0, 16, NULL), FLEET_KUBE_E_MALFORMED);
	assert_int_equal(fleet_kube_b64_decode("a=Gk", 4, &b, 0, 16, NULL), FLEET_KUBE_E_MALFORMED);
}

static void kc6_kc7_credentials_rules(void **state)
{
	(void)state;
	refused(kubeconfig("    certificate-authority: /x\n    certificate-authority-data: " CA_B64
			   "\n",
			   "    token: t\n"),
		FLEET_KUBE_E_MALFORMED, "both-ca", NULL);
	refused(kubeconfig("", "    extensions: []\n"), FLEET_KUBE_E_MALFORMED, "no-credentials", NULL);
	refused(kubeconfig("", "    token: t\n    client-key-data: " KEY_B64 "\n"),
		FLEET_KUBE_E_MALFORMED, "ambiguous-credentials", NULL);
	refused(kubeconfig("", "    client-certificate-data: " CA_B64 "\n"), FLEET_KUBE_E_MALFORMED,
		"half-client-cert", NULL);
	/* KC10: a token that would break the header */
	refused(kubeconfig("", "    token: \"a b\"\n"), FLEET_KUBE_E_MALFORMED, "bad-token", NULL);
	/* KC2: the strict reader: an unknown key, a key twice */
	refused(kubeconfig("    colour: blue\n", "    token: t\n"), FLEET_E_MALFORMED, NULL,
		"unknown key");
	refused(kubeconfig("", "    token: t\n    token: u\n"), FLEET_E_MALFORMED, NULL, "duplicate");
}

static char *write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	static char path[700];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void kc1_unsafe_permissions_refused(void **state)
{
	(void)state;
	char *dir = make_temp_dir("kubecfg");
	const char *text = kubeconfig("", "    token: t\n");
	char *path = write_file(dir, "config", text, 0644);
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_kubeconfig_load(path, &a, &ec), FLEET_E_UNSAFE);
	assert_string_equal(ec.reason, "world-readable");
	fleet_kube_auth_free(&a);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(fleet_kubeconfig_load(path, &a, &ec), FLEET_E_UNSAFE);
	assert_string_equal(ec.reason, "group-readable");
	fleet_kube_auth_free(&a);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(fleet_kubeconfig_load(path, &a, &ec), FLEET_OK);
	fleet_kube_auth_free(&a);
	rm_rf(dir);
	free(dir);
}

static void kc6_kc7_files_relative_to_the_kubeconfig(void **state)
{
	(void)state;
	char *dir = make_temp_dir("kubecfg");
	write_file(dir, "ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		   0644);
	write_file(dir, "tok", "file-token-1\n", 0600);
	char *path = write_file(dir, "config",
				kubeconfig("    certificate-authority: ca.pem\n",
					   "    tokenFile: tok\n"),
				0600);
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_kubeconfig_load(path, &a, &ec), FLEET_OK);
	assert_non_null(strstr((const char *)a.ca_pem.data, "BEGIN CERTIFICATE"));
	struct fleet_buf t;
	assert_int_equal(fleet_kube_auth_token(&a, &t, &ec), FLEET_OK);
	assert_string_equal((const char *)t.data, "file-token-1"); /* newline dropped */
	fb_free_secret(&t);
	/* K3: read again, so a rotated file is seen */
	write_file(dir, "tok", "file-token-2", 0600);
	assert_int_equal(fleet_kube_auth_token(&a, &t, &ec), FLEET_OK);
	assert_string_equal((const char *)t.data, "file-token-2");
	fb_free_secret(&t);
	/* a token file others can read is refused when read */
	write_file(dir, "tok", "file-token-3", 0644);
	assert_int_equal(fleet_kube_auth_token(&a, &t, &ec), FLEET_E_UNSAFE);
	fleet_kube_auth_free(&a);
	rm_rf(dir);
	free(dir);
}

static void kc12_in_cluster(void **state)
{
	(void)state;
	char *dir = make_temp_dir("kubesa");
	struct fleet_kube_auth a;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(fleet_kube_in_cluster(dir, &a, &ec), FLEET_KUBE_E_MALFORMED);
	assert_string_equal(ec.reason, "no-in-cluster-env");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "44x", 1);
	assert_int_equal(fleet_kube_in_cluster(dir, &a, &ec), FLEET_KUBE_E_MALFORMED);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	/* kubelet's atomic writer: token and ca.crt are links into ..data/ */
	char sub[700], link[800];
	snprintf(sub, sizeof(sub), "%s/..2025_01_01", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_file(sub, "token", "sa-token\n", 0644); /* kubelet's default mode */
	write_file(sub, "ca.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
		   0644);
	snprintf(link, sizeof(link), "%s/..data", dir);
	assert_int_equal(symlink("..2025_01_01", link), 0);
	snprintf(link, sizeof(link), "%s/token", dir);
	assert_int_equal(symlink("..data/token", link), 0);
	snprintf(link, sizeof(link), "%s/ca.crt", dir);
	assert_int_equal(symlink("..data/ca.crt", link), 0);
	assert_int_equal(fleet_kube_in_cluster(dir, &a, &ec), FLEET_OK);
	assert_string_equal(a.server, "https://[fd00::1]:443");
	struct fleet_buf t;
	assert_int_equal(fleet_kube_auth_token(&a, &t, &ec), FLEET_OK);
	assert_string_equal((const char *)t.data, "sa-token");
	fb_free_secret(&t);
	/* others may read it, but not write it */
	snprintf(link, sizeof(link), "%s/token", sub);
	assert_int_equal(chmod(link, 0646), 0);
	assert_int_equal(fleet_kube_auth_token(&a, &t, &ec), FLEET_E_UNSAFE);
	fleet_kube_auth_free(&a);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	rm_rf(dir);
	free(dir);
}

static void k2_paths(void **state)
{
	(void)state;
	assert_true(fleet_kube_path_ok("/api/v1/namespaces/kube-system/secrets"));
	assert_true(fleet_kube_path_ok("/apis/tinkerbell.org/v1alpha1/workflows?limit=5"));
	assert_false(fleet_kube_path_ok("/version"));
	assert_false(fleet_kube_path_ok("/_fake/log"));
	assert_false(fleet_kube_path_ok("api/v1"));
	assert_false(fleet_kube_path_ok("/api/v1/../../_fake/log"));
	assert_false(fleet_kube_path_ok("/api/v1/x y"));
	assert_false(fleet_kube_path_ok("/api/v1/x\r\nHost: evil"));
	assert_false(fleet_kube_path_ok("/api/v1/x#frag"));
	assert_true(fleet_kube_path_ok("/api/v1/a..b"));
	assert_true(fleet_kube_rv_ok("12345"));
	assert_false(fleet_kube_rv_ok(""));
	assert_false(fleet_kube_rv_ok("1&watch=0"));
	assert_false(fleet_kube_rv_ok(NULL));
}

static void k15_event_lines(void **state)
{
	(void)state;
	struct fleet_kube_event ev;
	const char *ok = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\","
			 "\"resourceVersion\":\"17\"}}}";
	assert_int_equal(fleet_kube_watch_event_parse(ok, strlen(ok), &ev, NULL), FLEET_OK);
	assert_int_equal(ev.type, FLEET_KUBE_EV_ADDED);
	assert_string_equal(ev.type_str, "ADDED");
	assert_string_equal(ev.rv, "17");
	json_decref(ev.object);
	const char *bm = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"99\"}}}";
	assert_int_equal(fleet_kube_watch_event_parse(bm, strlen(bm), &ev, NULL), FLEET_OK);
	assert_int_equal(ev.type, FLEET_KUBE_EV_BOOKMARK);
	assert_string_equal(ev.rv, "99");
	json_decref(ev.object);
	const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}";
	assert_int_equal(fleet_kube_watch_event_parse(gone, strlen(gone), &ev, NULL), FLEET_OK);
	assert_int_equal(ev.type, FLEET_KUBE_EV_ERROR);
	assert_int_equal(ev.code, 410);
	json_decref(ev.object);
	const char *bad[] = {
		"", "[]", "{\"type\":\"ADDED\"}", "{\"type\":\"NOPE\",\"object\":{}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1&x\"}}}",
		"{\"type\":\"ERROR\",\"object\":{\"code\":\"410\"}}",
		"{\"type\":\"ADDED\",\"type\":\"ADDED\",\"object\":{}}", /* a key twice */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(fleet_kube_watch_event_parse(bad[i], strlen(bad[i]), &ev, NULL),
				 FLEET_KUBE_E_MALFORMED);
		assert_null(ev.object);
	}
}

int main(void)
{
	umask(077);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_token_kubeconfig_passes),
		cmocka_unit_test(a_client_certificate_kubeconfig_passes),
		cmocka_unit_test(kc4_http_server_refused),
		cmocka_unit_test(kc5_insecure_skip_refused),
		cmocka_unit_test(kc8_plugins_refused_as_not_supported),
		cmocka_unit_test(kc3_missing_context_refused),
		cmocka_unit_test(kc9_bad_base64_refused),
		cmocka_unit_test(kc6_kc7_credentials_rules),
		cmocka_unit_test(kc1_unsafe_permissions_refused),
		cmocka_unit_test(kc6_kc7_files_relative_to_the_kubeconfig),
		cmocka_unit_test(kc12_in_cluster),
		cmocka_unit_test(k2_paths),
		cmocka_unit_test(k15_event_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
