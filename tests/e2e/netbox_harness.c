/* netbox_harness.c: see netbox_harness.h. */
#include "tests/e2e/netbox_harness.h"

#include "tests/testutil.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

struct nbf_env E;

static void nbf_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void nbf_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

pid_t nbf_start(const char *cert, const char *key, char *base, size_t baselen)
{
	return nbf_start_seed(cert, key, E.seed, base, baselen);
}

/* Start the fake with cert/key and seed; return its pid, fill base. */
pid_t nbf_start_seed(const char *cert, const char *key, const char *seed, char *base,
		     size_t baselen)
{
	int fd[2];
	char line[32] = "";
	if (pipe(fd) != 0)
		fail_msg("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("python3", "python3", FLEET_SOURCE_DIR "/tests/fakes/netbox_fake.py", cert,
		       key, seed, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	struct pollfd p = {.fd = fd[0], .events = POLLIN};
	size_t n = 0;
	while (n + 1 < sizeof(line) && !strchr(line, '\n') && poll(&p, 1, 15000) == 1) {
		ssize_t k = read(fd[0], line + n, sizeof(line) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		line[n] = '\0';
	}
	close(fd[0]);
	int port = atoi(line);
	if (port <= 0) {
		nbf_stop(pid);
		fail_msg("the NetBox fake did not start");
	}
	snprintf(base, baselen, "https://127.0.0.1:%d", port);
	return pid;
}

void nbf_stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

static size_t nbf_sink(char *p, size_t sz, size_t n, void *ud)
{
	fb_put(ud, p, sz * n);
	return sz * n;
}

/* A request to the fake's control API; returns its JSON answer (or NULL). */
json_t *nbf_control(const char *method, const char *path, const char *body)
{
	char url[256];
	struct fleet_buf b;
	long status = 0;
	fb_init(&b);
	snprintf(url, sizeof(url), "%s%s", E.base, path);
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, E.ca);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, nbf_sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK || status != 200)
		fail_msg("fake control %s %s: curl %d HTTP %ld", method, path, rc, status);
	json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
	fb_free(&b);
	return j;
}

void nbf_ctl(const char *path, const char *body)
{
	json_decref(nbf_control("POST", path, body));
}

json_t *nbf_state(void)
{
	json_t *s = nbf_control("GET", "/_fake/state", NULL);
	assert_non_null(s);
	return s;
}

json_t *nbf_log(void)
{
	json_t *s = nbf_control("GET", "/_fake/log", NULL);
	assert_non_null(s);
	return s;
}

size_t nbf_log_len(void)
{
	json_t *s = nbf_log();
	size_t n = json_array_size(json_object_get(s, "log"));
	json_decref(s);
	return n;
}

json_t *nbf_device(json_t *s, long id)
{
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(s, "devices"), i, d)
		if (json_integer_value(json_object_get(d, "id")) == id)
			return d;
	fail_msg("device %ld not in the fake's state", id);
	return NULL;
}

/* The next answer for path: status, Content-Type and body, verbatim. */
void nbf_canned(const char *path, int status, const char *ctype, const char *body_json)
{
	char *req = NULL;
	json_t *j = json_pack("{s:s, s:i, s:s, s:s}", "path", path, "status", status,
			      "content_type", ctype, "body", body_json);
	assert_non_null(j);
	req = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	nbf_ctl("/_fake/raw", req);
	free(req);
}

void nbf_setup(void (*write_seed)(const char *path))
{
	if (system("command -v python3 >/dev/null 2>&1") != 0 ||
	    system("command -v openssl >/dev/null 2>&1") != 0) {
		printf("SKIP: the NetBox contract test needs python3 and openssl\n");
		exit(TEST_SKIP_EXIT);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	E.dir = make_temp_dir("netbox");
	if (!E.dir)
		fail_msg("no temp dir");
	const char *d = E.dir;
	snprintf(E.ca, sizeof(E.ca), "%s/ca.pem", d);
	snprintf(E.rogue_ca, sizeof(E.rogue_ca), "%s/rogue.pem", d);
	snprintf(E.cert, sizeof(E.cert), "%s/srv.pem", d);
	snprintf(E.key, sizeof(E.key), "%s/srv.key", d);
	snprintf(E.badname_cert, sizeof(E.badname_cert), "%s/badname.pem", d);
	snprintf(E.seed, sizeof(E.seed), "%s/seed.json", d);
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
	nbf_sh("cd %s && openssl req -x509 %s -keyout ca.key -out ca.pem -days 2"
	       " -subj /CN=nb-test-ca 2>/dev/null"
	       " && openssl req -x509 %s -keyout rogue.key -out rogue.pem -days 2"
	       " -subj /CN=nb-test-ca 2>/dev/null"
	       " && openssl req %s -keyout srv.key -out srv.csr -subj /CN=netbox 2>/dev/null"
	       " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > good.ext"
	       " && printf 'subjectAltName=DNS:netbox.other.example\\n' > bad.ext"
	       " && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
	       " -out srv.pem -days 2 -extfile good.ext 2>/dev/null"
	       " && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
	       " -out badname.pem -days 2 -extfile bad.ext 2>/dev/null",
	       d, ec, ec, ec);
	write_seed(E.seed);
	E.pid = nbf_start(E.cert, E.key, E.base, sizeof(E.base));
}

void nbf_teardown(void)
{
	nbf_stop(E.pid);
	rm_rf(E.dir);
	free(E.dir);
	curl_global_cleanup();
}
