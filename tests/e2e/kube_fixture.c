/*
 * kube_fixture.c: the Kubernetes API contract fake
 * (tests/fakes/kube_apiserver_fake.py) started for a C test over TLS, with
 * a test CA, two admin tokens (tok-one-0123456789 as sa-one,
 * tok-two-0123456789 as sa-two), bootstrap-token authentication and the
 * Tinkerbell CRDs of ../shared/contracts/tinkerbell; its /_fake controls.
 */
#include "tests/e2e/kube_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "lib/buf.h"
#include "tests/testutil.h"

char *g_dir;
pid_t g_fake = -1;
int g_port;
char g_kubeconfig[700];
char g_sa[700];



void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
		exit(1);
	}
}

void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* ---- the fake's controls, over libcurl with the test CA ------------------ */

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	fb_put(arg, p, sz * n);
	return sz * n;
}

json_t *fake(const char *method, const char *path, const char *body)
{
	char url[256], ca[800];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", g_port, path);
	snprintf(ca, sizeof(ca), "%s/ca.pem", g_dir);
	struct fleet_buf b;
	fb_init(&b);
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	CURLcode rc = curl_easy_perform(h);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK)
		fail_msg("the fake's %s: %s", path, curl_easy_strerror(rc));
	json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
	fb_free(&b);
	assert_non_null(j);
	return j;
}

/* The fake's request log, filtered: entries whose path is path and, when
 * query_key is set, whose query has it. */
size_t log_count(const char *path, const char *query_key, json_t **last)
{
	json_t *l = fake("GET", "/_fake/log", NULL);
	json_t *arr = json_object_get(l, "log"), *ent;
	size_t i, n = 0;
	if (last)
		*last = NULL;
	json_array_foreach(arr, i, ent)
	{
		const char *p = json_string_value(json_object_get(ent, "path"));
		if (!p || strcmp(p, path) != 0)
			continue;
		if (query_key && !json_object_get(json_object_get(ent, "query"), query_key))
			continue;
		n++;
		if (last) {
			json_decref(*last);
			*last = json_incref(ent);
		}
	}
	json_decref(l);
	return n;
}

/* ---- setup: TLS, tokens, the fake ---------------------------------------- */

int start(void **state)
{
	(void)state;
	if (access(PY, X_OK) != 0 || system(PY " -c 'import yaml, jsonschema' 2>/dev/null") != 0 ||
	    system("command -v openssl >/dev/null 2>&1") != 0 || access(CONTRACTS, R_OK) != 0) {
		printf("SKIP: needs %s with yaml and jsonschema, openssl and %s\n", PY, CONTRACTS);
		exit(TEST_SKIP_EXIT);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	g_dir = make_temp_dir("kube-e2e");
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
	sh("cd %s && printf 'subjectAltName=IP:127.0.0.1\\n' >srv.ext"
	   " && openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj /CN=kube-ca 2>/dev/null"
	   " && openssl req -x509 %s -keyout rogue.key -out rogue.pem -days 2 -subj /CN=rogue 2>/dev/null"
	   " && openssl req %s -keyout srv.key -out srv.csr -subj /CN=kube-apiserver 2>/dev/null"
	   " && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem"
	   " -days 2 -extfile srv.ext 2>/dev/null"
	   " && printf 'tok-one-0123456789,sa-one,uid-1,\"system:masters\"\\n"
	   "tok-two-0123456789,sa-two,uid-2,\"system:masters\"\\n' >tokens.csv",
	   g_dir, ec, ec, ec);
	char port_file[800], err_file[800];
	snprintf(port_file, sizeof(port_file), "%s/port", g_dir);
	snprintf(err_file, sizeof(err_file), "%s/fake.err", g_dir);
	g_fake = fork();
	assert_true(g_fake >= 0);
	if (g_fake == 0) {
		if (chdir(g_dir) != 0)
			_exit(127);
		int o = open(port_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(o, 1);
		dup2(e, 2);
		execl(PY, PY, FLEET_SOURCE_DIR "/tests/fakes/kube_apiserver_fake.py", "--tls-cert-file",
		      "srv.pem", "--tls-private-key-file", "srv.key", "--token-auth-file",
		      "tokens.csv", "--enable-bootstrap-token-auth", "--bookmark-seconds", "1",
		      "--crd", CONTRACTS "/tinkerbell.org_workflows.yaml", "--crd",
		      CONTRACTS "/tinkerbell.org_templates.yaml", "--crd",
		      CONTRACTS "/tinkerbell.org_hardware.yaml", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && !g_port; i++) {
		FILE *f = fopen(port_file, "r");
		if (f) {
			if (fscanf(f, "%d", &g_port) != 1)
				g_port = 0;
			fclose(f);
		}
		if (!g_port)
			usleep(50000);
	}
	if (!g_port) {
		sh("cat %s >&2", err_file);
		fail_msg("the fake did not start");
	}
	/* a kubeconfig (token, CA file relative to it) and a service account dir */
	char text[2048], path[800];
	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
		 "    server: https://127.0.0.1:%d\n    certificate-authority: ca.pem\n"
		 "users:\n- name: admin\n  user:\n    token: tok-one-0123456789\n"
		 "contexts:\n- name: fake\n  context: {cluster: fake, user: admin}\n"
		 "current-context: fake\n",
		 g_port);
	snprintf(g_kubeconfig, sizeof(g_kubeconfig), "%s/kubeconfig", g_dir);
	write_text(g_kubeconfig, text);
	snprintf(g_sa, sizeof(g_sa), "%s/sa", g_dir);
	assert_int_equal(mkdir(g_sa, 0700), 0);
	sh("cp %s/ca.pem %s/ca.crt", g_dir, g_sa);
	snprintf(path, sizeof(path), "%s/token", g_sa);
	write_text(path, "tok-one-0123456789\n");
	return 0;
}

int stop_fake(void **state)
{
	(void)state;
	if (g_fake > 0) {
		kill(g_fake, SIGTERM);
		waitpid(g_fake, NULL, 0);
	}
	if (g_dir) {
		rm_rf(g_dir);
		free(g_dir);
	}
	curl_global_cleanup();
	return 0;
}

