/*
 * test_http_server.c: fleetd's HTTPS listener (fleetd/http/) end to end: a
 * real server on a free loopback port with a self-signed certificate made
 * here with OpenSSL, and a real client (libcurl) that trusts only that
 * certificate.
 *
 * Each refusal is checked for its status, for the counter it moves by
 * exactly one, and for the handler not having run. The body cap is checked
 * at the cap (accepted) and one byte past it (413 before the body is sent);
 * a chunked body, whose length nobody knows up front, is refused (411)
 * before it is sent. Then 1,000 malformed requests: counted exactly, not one line
 * on stderr (the log target here), and the server still answers.
 */
#include "tests/testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fleetd/http/server.h"
#include "fleetd/obs/journal.h"
#include "fleetd/obs/metrics.h"
#include "lib/attest_wire.h"

#include "tests/e2e/http_client.h"

struct fixture {
	char *dir;
	char cert[256], key[256], stderr_path[256];
	struct fleet_metrics *metrics;
	struct fleet_http *http;
	struct http_client client;
};

static _Atomic int echo_calls, sink_calls;
static _Atomic bool healthy;

/* POST /v1/echo: a JSON object comes back as sent; anything else is the
 * handler's own 400 malformed-json. */
static int echo(void *ctx, const struct fleet_http_request *req, struct fleet_http_reply *reply)
{
	atomic_fetch_add(&echo_calls, 1);
	json_error_t err;
	json_t *j = json_loadb((const char *)req->body, req->body_len, JSON_REJECT_DUPLICATES,
			       &err);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		reply->reason = "malformed-json";
		fb_put(&reply->body, "{\"v\":1,\"status\":\"refused\"}", 26);
		return 400;
	}
	json_decref(j);
	fb_put(&reply->body, req->body, req->body_len);
	return 200;
}

/* POST /v1/sink: takes any body, says how long it was. */
static int sink(void *ctx, const struct fleet_http_request *req, struct fleet_http_reply *reply)
{
	atomic_fetch_add(&sink_calls, 1);
	char out[64];
	int n = snprintf(out, sizeof(out), "{\"len\":%zu}", req->body_len);
	fb_put(&reply->body, out, (size_t)n);
	return 200;
}

static bool health(void *ctx)
{
	return atomic_load(&healthy);
}

/* ---- a self-signed certificate for 127.0.0.1 ----------------------------- */

static void add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(x, ext, -1), 1);
	X509_EXTENSION_free(ext);
}

static void make_cert(const char *cert_path, const char *key_path)
{
	EVP_PKEY *pkey = EVP_EC_gen("P-256");
	assert_non_null(pkey);
	X509 *x = X509_new();
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 4711);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, pkey);
	X509_NAME *name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fleetd test",
				   -1, -1, 0);
	X509_set_issuer_name(x, name);
	add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
	add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign");
	add_ext(x, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
	assert_true(X509_sign(x, pkey, EVP_sha256()) > 0);

	FILE *f = fopen(cert_path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	f = fopen(key_path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(pkey);
}

/* ---- fixture ------------------------------------------------------------- */

static int group_setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	fx->dir = make_temp_dir("http");
	assert_non_null(fx->dir);
	snprintf(fx->cert, sizeof(fx->cert), "%s/cert.pem", fx->dir);
	snprintf(fx->key, sizeof(fx->key), "%s/key.pem", fx->dir);
	snprintf(fx->stderr_path, sizeof(fx->stderr_path), "%s/stderr.log", fx->dir);
	make_cert(fx->cert, fx->key);

	/* The daemon's log target is stderr here; the flood test watches it. */
	fleet_log_set_target(FLEET_LOG_STDERR);

	fx->metrics = fleet_metrics_new();
	struct fleet_http_config cfg = {
		.bind_address = "127.0.0.1",
		.port = 0,
		.tls_cert_file = fx->cert,
		.tls_key_file = fx->key,
		.threads = 2,
		.max_connections = 32,
		.max_per_ip = 8,
		.timeout_seconds = 10,
	};
	struct fleet_errctx ec = {0};
	fx->http = fleet_http_new(&cfg, fx->metrics, &ec);
	assert_non_null(fx->http);
	assert_int_equal(fleet_http_route(fx->http, "POST", "/v1/echo", echo, NULL), FLEET_OK);
	assert_int_equal(fleet_http_route(fx->http, "POST", "/v1/sink", sink, NULL), FLEET_OK);
	fleet_http_set_health(fx->http, health, NULL);
	if (fleet_http_start(fx->http, &ec) != FLEET_OK)
		fail_msg("start: %s", ec.detail);
	assert_true(fleet_http_port(fx->http) != 0);
	http_client_init(&fx->client, fleet_http_port(fx->http), fx->cert);
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	struct fixture *fx = *state;
	http_client_free(&fx->client);
	fleet_http_free(fx->http);
	fleet_metrics_free(fx->metrics);
	rm_rf(fx->dir);
	free(fx->dir);
	free(fx);
	return 0;
}

/* Point fd 2 (where the stderr log target writes) at a file, and back.
 * Nothing asserts in between: cmocka reports failures on stderr. */
static int stderr_to_file(const struct fixture *fx)
{
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	FILE *f = fopen(fx->stderr_path, "w");
	assert_non_null(f);
	assert_true(saved >= 0 && dup2(fileno(f), STDERR_FILENO) >= 0);
	fclose(f);
	return saved;
}

static long stderr_restore(const struct fixture *fx, int saved)
{
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	struct stat st;
	assert_int_equal(stat(fx->stderr_path, &st), 0);
	return (long)st.st_size;
}

/* The counter as /metrics shows it. */
static long long scraped(struct fixture *fx, const char *reason)
{
	struct http_reply r;
	assert_int_equal(http_get(&fx->client, "/metrics", NULL, &r), 200);
	assert_non_null(strstr(r.content_type, "text/plain; version=0.0.4"));
	char needle[160];
	snprintf(needle, sizeof(needle), "\nfleetd_http_rejected_total{reason=\"%s\"} ", reason);
	const char *p = strstr(r.body, needle);
	assert_non_null(p);
	long long v = strtoll(p + strlen(needle), NULL, 10);
	http_reply_free(&r);
	return v;
}

/* One refusal: the status, the counter +1 in /metrics, no handler ran. */
static void expect_refusal(struct fixture *fx, long status, const char *reason,
			   const struct http_req *req)
{
	long long before = scraped(fx, reason);
	int e0 = atomic_load(&echo_calls), s0 = atomic_load(&sink_calls);
	struct http_reply r;
	assert_int_equal(http_do(&fx->client, req, &r), status);
	char want[96];
	snprintf(want, sizeof(want), "{\"error\":\"%s\"}", reason);
	if (strcmp(req->method, "HEAD") != 0)
		assert_string_equal(r.body, want);
	http_reply_free(&r);
	assert_int_equal(scraped(fx, reason), before + 1);
	assert_int_equal(atomic_load(&echo_calls), e0);
	assert_int_equal(atomic_load(&sink_calls), s0);
}

/* ---- tests --------------------------------------------------------------- */

static void test_echo(void **state)
{
	struct fixture *fx = *state;
	static const char body[] = "{\"v\":1,\"serial\":\"SN-0001\"}";
	int e0 = atomic_load(&echo_calls);
	struct http_reply r;
	assert_int_equal(http_post(&fx->client, "/v1/echo", "application/json", body,
				   sizeof(body) - 1, &r),
			 200);
	assert_string_equal(r.body, body);
	assert_string_equal(r.content_type, "application/json");
	http_reply_free(&r);
	assert_int_equal(atomic_load(&echo_calls), e0 + 1);
	/* charset=utf-8 is the one parameter allowed. */
	assert_int_equal(http_post(&fx->client, "/v1/echo", "Application/JSON; charset=\"UTF-8\"",
				   body, sizeof(body) - 1, &r),
			 200);
	http_reply_free(&r);
}

static void test_routing_refusals(void **state)
{
	struct fixture *fx = *state;
	struct http_req req = {.method = "GET", .path = "/nope"};
	expect_refusal(fx, 404, "unknown-path", &req);
	req = (struct http_req){.method = "POST", .path = "/v1/attest/intake",
				.content_type = "application/json", .body = "{}", .len = 2};
	expect_refusal(fx, 404, "unknown-path", &req);

	/* The raw path must match: no percent-decoding, so no NUL smuggled in
	 * and no second spelling of a route. */
	req = (struct http_req){.method = "GET", .path = "/healthz%00x"};
	expect_refusal(fx, 404, "unknown-path", &req);
	req = (struct http_req){.method = "GET", .path = "/health%7A"};
	expect_refusal(fx, 404, "unknown-path", &req);

	req = (struct http_req){.method = "GET", .path = "/v1/echo"};
	expect_refusal(fx, 405, "method-not-allowed", &req);
	struct http_reply r;
	assert_int_equal(http_do(&fx->client, &req, &r), 405);
	assert_string_equal(r.allow, "POST");
	http_reply_free(&r);
	/* HEAD is never implied by GET. */
	req = (struct http_req){.method = "HEAD", .path = "/healthz"};
	expect_refusal(fx, 405, "method-not-allowed", &req);
	req = (struct http_req){.method = "DELETE", .path = "/metrics"};
	expect_refusal(fx, 405, "method-not-allowed", &req);
}

static void test_media_type(void **state)
{
	struct fixture *fx = *state;
	static const char *const bad[] = {"text/plain", "application/jsonp",
					  "application/json; charset=latin1",
					  "application/json; boundary=x", "application/x-www-form-urlencoded",
					  NULL};
	for (size_t i = 0; bad[i]; i++) {
		struct http_req req = {.method = "POST", .path = "/v1/echo",
				       .content_type = bad[i], .body = "{}", .len = 2};
		expect_refusal(fx, 415, "unsupported-media-type", &req);
	}
	struct http_req none = {.method = "POST", .path = "/v1/echo", .body = "{}", .len = 2,
				.no_content_type = true};
	expect_refusal(fx, 415, "unsupported-media-type", &none);
}

static void test_unsupported_features(void **state)
{
	struct fixture *fx = *state;
	struct http_req req = {.method = "POST", .path = "/v1/echo",
			       .content_type = "application/json", .body = "{}", .len = 2,
			       .header = "Content-Encoding: gzip"};
	expect_refusal(fx, 415, "unsupported-encoding", &req);
	req.header = "Expect: something-else";
	expect_refusal(fx, 417, "expectation-failed", &req);
	req.header = "If-None-Match: \"abc\"";
	expect_refusal(fx, 400, "conditional-request", &req);
	req = (struct http_req){.method = "GET", .path = "/healthz",
				.header = "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT"};
	expect_refusal(fx, 400, "conditional-request", &req);
	req.header = "Range: bytes=0-1";
	expect_refusal(fx, 400, "range-request", &req);
	req = (struct http_req){.method = "GET", .path = "/healthz", .body = "{}", .len = 2,
				.content_type = "application/json"};
	expect_refusal(fx, 400, "unexpected-body", &req);
}

static void test_body_cap(void **state)
{
	struct fixture *fx = *state;
	size_t cap = FLEET_WIRE_MAX_BODY;
	char *big = malloc(cap + 1);
	memset(big, ' ', cap + 1);

	/* At the cap: accepted, the handler sees every byte. */
	struct http_reply r;
	int s0 = atomic_load(&sink_calls);
	assert_int_equal(http_post(&fx->client, "/v1/sink", "application/json", big, cap, &r),
			 200);
	char want[64];
	snprintf(want, sizeof(want), "{\"len\":%zu}", cap);
	assert_string_equal(r.body, want);
	http_reply_free(&r);
	assert_int_equal(atomic_load(&sink_calls), s0 + 1);

	/* One byte over: 413 from the Content-Length alone, before the body. */
	struct http_req req = {.method = "POST", .path = "/v1/sink",
			       .content_type = "application/json", .body = big, .len = cap + 1};
	expect_refusal(fx, 413, "body-too-large", &req);
	assert_int_equal(http_do(&fx->client, &req, &r), 413);
	assert_true(r.uploaded < (long long)cap); /* the server never took it */
	http_reply_free(&r);
	free(big);

	/* A chunked body (no length up front) that would go on for 64 MiB:
	 * 411 from the headers, the body never sent. */
	s0 = atomic_load(&sink_calls);
	req = (struct http_req){.method = "POST", .path = "/v1/sink",
				.content_type = "application/json", .stream_len = 64ll << 20};
	expect_refusal(fx, 411, "length-required", &req);
	assert_int_equal(http_do(&fx->client, &req, &r), 411);
	assert_true(r.uploaded < (1ll << 20));
	http_reply_free(&r);
	assert_int_equal(atomic_load(&sink_calls), s0);
}

static void test_healthz(void **state)
{
	struct fixture *fx = *state;
	struct http_reply r;
	atomic_store(&healthy, false);
	assert_int_equal(http_get(&fx->client, "/healthz", NULL, &r), 503);
	assert_string_equal(r.body, "unavailable\n");
	http_reply_free(&r);
	atomic_store(&healthy, true);
	assert_int_equal(http_get(&fx->client, "/healthz", NULL, &r), 200);
	assert_string_equal(r.body, "ok\n");
	assert_string_equal(r.content_type, "text/plain; charset=utf-8");
	http_reply_free(&r);
}

static void test_metrics_text(void **state)
{
	struct fixture *fx = *state;
	struct http_reply r;
	assert_int_equal(http_get(&fx->client, "/metrics", NULL, &r), 200);
	assert_non_null(strstr(r.body, "# HELP fleetd_http_rejected_total "));
	assert_non_null(strstr(r.body, "# TYPE fleetd_http_rejected_total counter\n"));
	assert_non_null(strstr(r.body, "# TYPE fleetd_http_responses_total counter\n"));
	assert_non_null(strstr(r.body, "fleetd_http_responses_total{code=\"4xx\"} "));
	assert_non_null(strstr(r.body, "# TYPE fleetd_http_internal_errors_total counter\n"));
	/* Every reason is a series from the start, at its value so far. */
	for (size_t i = 0; fleet_http_reject_reasons[i]; i++) {
		char line[128];
		snprintf(line, sizeof(line), "fleetd_http_rejected_total{reason=\"%s\"} ",
			 fleet_http_reject_reasons[i]);
		assert_non_null(strstr(r.body, line));
	}
	http_reply_free(&r);
}

static void test_malformed_counted_not_logged(void **state)
{
	struct fixture *fx = *state;
	/* A handler's 400 with its reason: counted under that reason. */
	long long before = scraped(fx, "malformed-json");
	struct http_reply r;
	assert_int_equal(http_post(&fx->client, "/v1/echo", "application/json", "{not json", 9, &r),
			 400);
	http_reply_free(&r);
	assert_int_equal(scraped(fx, "malformed-json"), before + 1);

	/* 1,000 of them (loopback, bounded): exactly 1,000 more, no log line. */
	before = scraped(fx, "malformed-json");
	int e0 = atomic_load(&echo_calls);
	static const char *const junk[] = {"{", "[]", "\"str\"", "{\"a\":1,\"a\":2}", "\x01\xff"};
	int saved = stderr_to_file(fx);
	int not_400 = 0;
	for (int i = 0; i < 1000; i++) {
		const char *b = junk[i % 5];
		not_400 += http_post(&fx->client, "/v1/echo", "application/json", b, strlen(b),
				     &r) != 400;
		http_reply_free(&r);
	}
	long logged = stderr_restore(fx, saved);
	assert_int_equal(not_400, 0);
	assert_int_equal(logged, 0);
	assert_int_equal(atomic_load(&echo_calls), e0 + 1000);
	assert_int_equal(scraped(fx, "malformed-json"), before + 1000);

	/* Still serving. */
	assert_int_equal(http_post(&fx->client, "/v1/echo", "application/json", "{\"v\":1}", 7, &r),
			 200);
	assert_string_equal(r.body, "{\"v\":1}");
	http_reply_free(&r);
}

static void test_tls_versions(void **state)
{
	struct fixture *fx = *state;
	uint16_t port = fleet_http_port(fx->http);
	/* The probe can do TLS 1.2 (so a failure below is the server's). */
	assert_int_equal(tls_probe(port, fx->cert, TLS1_2_VERSION, TLS1_2_VERSION), 1);
	assert_int_equal(tls_probe(port, fx->cert, TLS1_3_VERSION, TLS1_3_VERSION), 1);
	assert_int_equal(tls_probe(port, fx->cert, TLS1_VERSION, TLS1_1_VERSION), 0);
}

/* Not TLS at all: plaintext HTTP to the TLS port, n times. */
static void plaintext_to_tls_port(uint16_t port, int n)
{
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
		assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
		char buf[256];
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
}

static void test_tls_garbage_counted_not_logged(void **state)
{
	struct fixture *fx = *state;
	struct fleet_http *h = fx->http;
	uint16_t port = fleet_http_port(h);
	int saved = stderr_to_file(fx);
	plaintext_to_tls_port(port, 20);
	/* Give the server's threads a moment to finish with the last one. */
	struct http_reply r;
	long st = http_get(&fx->client, "/healthz", NULL, &r);
	http_reply_free(&r);
	long logged = stderr_restore(fx, saved);
	assert_int_equal(st, 200);

	struct fleet_buf b;
	read_file_or_fail(fx->stderr_path, &b);
	size_t lines = 0;
	for (size_t i = 0; i < b.len; i++)
		lines += b.data[i] == '\n';
	fb_free(&b);
	/* libmicrohttpd reports each failed handshake; fleetd counts them all
	 * and writes at most one line a minute. */
	assert_true(lines <= 1);
	assert_true(logged >= 0);
	assert_int_equal(http_get(&fx->client, "/metrics", NULL, &r), 200);
	const char *p = strstr(r.body, "\nfleetd_http_internal_errors_total ");
	assert_non_null(p);
	long long n = strtoll(p + strlen("\nfleetd_http_internal_errors_total "), NULL, 10);
	http_reply_free(&r);
	assert_true(n >= 20);
}

static void test_start_refusals(void **state)
{
	struct fixture *fx = *state;
	struct fleet_metrics *m = fleet_metrics_new();
	char missing[300], notpem[300];
	snprintf(missing, sizeof(missing), "%s/nope.pem", fx->dir);
	snprintf(notpem, sizeof(notpem), "%s/stderr.log", fx->dir);
	struct {
		struct fleet_http_config cfg;
		fleet_err want;
		const char *says;
	} cases[] = {
		{{.bind_address = "127.0.0.1", .tls_cert_file = fx->cert, .tls_key_file = missing},
		 FLEET_E_IO, "nope.pem"},
		{{.bind_address = "127.0.0.1", .tls_cert_file = notpem, .tls_key_file = fx->key},
		 FLEET_E_MALFORMED, "not PEM"},
		{{.bind_address = "localhost", .tls_cert_file = fx->cert, .tls_key_file = fx->key},
		 FLEET_E_INVALID_ARG, "literal"},
		/* GnuTLS refuses the priority string, and says so. */
		{{.bind_address = "127.0.0.1", .port = 0, .tls_cert_file = fx->cert,
		  .tls_key_file = fx->key, .tls_priorities = "NOT-A-PRIORITY"},
		 FLEET_E_IO, "NOT-A-PRIORITY"},
		/* The port the fixture's server holds: bind fails, and says so. */
		{{.bind_address = "127.0.0.1", .port = fleet_http_port(fx->http),
		  .tls_cert_file = fx->cert, .tls_key_file = fx->key},
		 FLEET_E_IO, "cannot serve HTTPS"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fleet_errctx ec = {0};
		struct fleet_metrics *mi = fleet_metrics_new();
		struct fleet_http *h = fleet_http_new(&cases[i].cfg, mi, &ec);
		assert_non_null(h);
		assert_int_equal(fleet_http_start(h, &ec), cases[i].want);
		if (!strstr(ec.detail, cases[i].says))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, ec.detail,
				 cases[i].says);
		assert_int_equal(fleet_http_port(h), 0);
		fleet_http_free(h);
		fleet_metrics_free(mi);
	}
	/* No certificate at all: refused at once, fleetd serves no plain HTTP. */
	struct fleet_http_config none = {.bind_address = "127.0.0.1"};
	struct fleet_errctx ec = {0};
	assert_null(fleet_http_new(&none, m, &ec));
	assert_non_null(strstr(ec.detail, "no plain HTTP"));
	fleet_metrics_free(m);
}

/* metrics.enabled: false: a second server on a free port, without the
 * route (404, counted like any unknown path). */
static void test_metrics_can_be_off(void **state)
{
	struct fixture *fx = *state;
	struct fleet_metrics *m = fleet_metrics_new();
	struct fleet_http_config cfg = {.bind_address = "127.0.0.1", .tls_cert_file = fx->cert,
					.tls_key_file = fx->key, .no_metrics = true};
	struct fleet_errctx ec = {0};
	struct fleet_http *h = fleet_http_new(&cfg, m, &ec);
	assert_non_null(h);
	assert_int_equal(fleet_http_start(h, &ec), FLEET_OK);
	struct http_client c;
	http_client_init(&c, fleet_http_port(h), fx->cert);
	struct http_reply r;
	assert_int_equal(http_get(&c, "/metrics", NULL, &r), 404);
	http_reply_free(&r);
	/* The control: the fixture's server, metrics on, serves the route. */
	assert_int_equal(http_get(&fx->client, "/metrics", NULL, &r), 200);
	http_reply_free(&r);
	http_client_free(&c);
	fleet_http_free(h);
	fleet_metrics_free(m);
}

static void test_stop(void **state)
{
	struct fixture *fx = *state;
	fleet_http_stop(fx->http);
	fleet_http_stop(fx->http); /* twice is fine */
	assert_int_equal(fleet_http_port(fx->http), 0);
	struct http_reply r;
	assert_int_equal(http_get(&fx->client, "/healthz", NULL, &r), -1); /* nothing listens */
	http_reply_free(&r);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_metrics_can_be_off),
		cmocka_unit_test(test_routing_refusals),
		cmocka_unit_test(test_media_type),
		cmocka_unit_test(test_unsupported_features),
		cmocka_unit_test(test_body_cap),
		cmocka_unit_test(test_healthz),
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_malformed_counted_not_logged),
		cmocka_unit_test(test_tls_versions),
		cmocka_unit_test(test_tls_garbage_counted_not_logged),
		cmocka_unit_test(test_start_refusals),
		cmocka_unit_test(test_stop),
	};
	int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	curl_global_cleanup();
	return rc;
}
