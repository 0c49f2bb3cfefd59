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
 *
 * What bounds a client's cost, each on a server of its own: a request
 * trickled a byte a second (headers, body, a kept-alive connection's next
 * request) is cut at its deadline; 100 stalled 2 MiB bodies get no more
 * than the body budget (503 busy for the rest, RSS growth bounded) and give
 * it all back; one source past its burst gets 429 until its bucket refills.
 */
#include "tests/testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
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
	/* A private key: others may not read it (lib/file_read.h). */
	assert_int_equal(chmod(key_path, 0600), 0);
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
		/* The rate limit has its own server (test_rate_limit): here
		 * 1,000 requests in a row must all reach the handler. */
		.rate_per_second = 1000000,
		.rate_burst = 1000000,
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

/* A series' value as /metrics shows it ("name{labels}" or "name"). */
static long long scraped_series(struct http_client *c, const char *series)
{
	struct http_reply r;
	assert_int_equal(http_get(c, "/metrics", NULL, &r), 200);
	assert_non_null(strstr(r.content_type, "text/plain; version=0.0.4"));
	char needle[200];
	snprintf(needle, sizeof(needle), "\n%s ", series);
	const char *p = strstr(r.body, needle);
	if (!p)
		fail_msg("no series %s in /metrics", series);
	long long v = strtoll(p + strlen(needle), NULL, 10);
	http_reply_free(&r);
	return v;
}

static long long scraped_from(struct http_client *c, const char *reason)
{
	char series[160];
	snprintf(series, sizeof(series), "fleetd_http_rejected_total{reason=\"%s\"}", reason);
	return scraped_series(c, series);
}

/* The counter as /metrics shows it. */
static long long scraped(struct fixture *fx, const char *reason)
{
	return scraped_from(&fx->client, reason);
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
		 FLEET_E_NOT_FOUND, "nope.pem"},
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

/* The TLS key is read as a secret its group may read (docs/files.md): a
 * world-readable key, a group-writable one and a symlinked one are each
 * refused before anything is served; root:group 0640 is fine. */
static void test_key_file_rules(void **state)
{
	struct fixture *fx = *state;
	char key[300], link[300];
	snprintf(key, sizeof(key), "%s/key-copy.pem", fx->dir);
	snprintf(link, sizeof(link), "%s/key-link.pem", fx->dir);
	struct fleet_buf b;
	read_file_or_fail(fx->key, &b);
	FILE *f = fopen(key, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
	fclose(f);
	fb_free_secret(&b);
	assert_int_equal(symlink(key, link), 0);
	struct {
		const char *path;
		mode_t mode;
		const char *says;
	} cases[] = {
		{key, 0644, "world-readable"},
		{key, 0604, "world-readable"},
		{key, 0660, "group-writable"},
		{link, 0600, "symlink"},
		{key, 0640, NULL},
		{key, 0600, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(chmod(key, cases[i].mode), 0);
		struct fleet_http_config cfg = {.bind_address = "127.0.0.1", .tls_cert_file = fx->cert,
						.tls_key_file = cases[i].path, .no_metrics = true};
		struct fleet_errctx ec = {0};
		struct fleet_metrics *mi = fleet_metrics_new();
		struct fleet_http *h = fleet_http_new(&cfg, mi, &ec);
		assert_non_null(h);
		fleet_err e = fleet_http_start(h, &ec);
		if (cases[i].says) {
			if (e == FLEET_OK || !strstr(ec.detail, cases[i].says) ||
			    !strstr(ec.detail, cases[i].path))
				fail_msg("case %zu (%04o): %s: \"%s\" does not say \"%s\"", i,
					 (unsigned)cases[i].mode, fleet_err_str(e), ec.detail,
					 cases[i].says);
			assert_int_equal(fleet_http_port(h), 0);
		} else if (e != FLEET_OK) {
			fail_msg("case %zu (%04o): refused: %s", i, (unsigned)cases[i].mode,
				 ec.detail);
		}
		fleet_http_free(h);
		fleet_metrics_free(mi);
	}
	unlink(link);
	unlink(key);
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

/* ---- the request deadline, the body budget, the rate limit --------------- */

/* A second server beside the fixture's, with its own limits. */
struct side {
	struct fleet_metrics *metrics;
	struct fleet_http *http;
	struct http_client client;
	uint16_t port;
};

static int get_ok(void *ctx, const struct fleet_http_request *req, struct fleet_http_reply *reply)
{
	(void)ctx;
	(void)req;
	fb_put(&reply->body, "{}", 2);
	return 200;
}

static void side_start(struct fixture *fx, struct fleet_http_config cfg, struct side *sd)
{
	cfg.bind_address = "127.0.0.1";
	cfg.tls_cert_file = fx->cert;
	cfg.tls_key_file = fx->key;
	sd->metrics = fleet_metrics_new();
	struct fleet_errctx ec = {0};
	sd->http = fleet_http_new(&cfg, sd->metrics, &ec);
	if (!sd->http)
		fail_msg("new: %s", ec.detail);
	assert_int_equal(fleet_http_route(sd->http, "POST", "/v1/echo", echo, NULL), FLEET_OK);
	assert_int_equal(fleet_http_route(sd->http, "POST", "/v1/sink", sink, NULL), FLEET_OK);
	assert_int_equal(fleet_http_route(sd->http, "GET", "/v1/limited", get_ok, NULL), FLEET_OK);
	assert_int_equal(fleet_http_route_rate_limit(sd->http, "GET", "/v1/limited"), FLEET_OK);
	assert_int_equal(fleet_http_route_rate_limit(sd->http, "GET", "/v1/none"), FLEET_E_NOT_FOUND);
	fleet_http_set_health(sd->http, health, NULL);
	if (fleet_http_start(sd->http, &ec) != FLEET_OK)
		fail_msg("start: %s", ec.detail);
	sd->port = fleet_http_port(sd->http);
	http_client_init(&sd->client, sd->port, fx->cert);
}

static void side_free(struct side *sd)
{
	http_client_free(&sd->client);
	fleet_http_free(sd->http);
	fleet_metrics_free(sd->metrics);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000l};
	nanosleep(&ts, NULL);
}

#define DEADLINE 3
#define SLACK 1.5

/* One byte a second of headers, then of a body, then of a kept-alive
 * connection's second request: each is cut at the deadline (and counted,
 * and journals nothing), where the idle timeout alone (30 s, reset by each
 * byte) never would. An idle kept-alive connection outlives the deadline. */
static void test_request_deadline(void **state)
{
	struct fixture *fx = *state;
	struct side sd = {0};
	side_start(fx, (struct fleet_http_config){.timeout_seconds = 30,
						  .request_deadline_seconds = DEADLINE,
						  .rate_per_second = 1000, .rate_burst = 1000},
		   &sd);
	static const char headers[] = "POST /v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				      "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
	static const char body_head[] = "POST /v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
					"Content-Type: application/json\r\nContent-Length: 64\r\n\r\n";
	int e0 = atomic_load(&echo_calls);

	/* Headers, a byte a second. */
	long long cut0 = scraped_from(&sd.client, "request-deadline");
	int saved = stderr_to_file(fx);
	double t0 = http_now_s();
	struct raw_tls t;
	raw_tls_open(&t, sd.port, fx->cert);
	double closed_headers = raw_tls_trickle(&t, headers, t0, DEADLINE + 10);
	raw_tls_close(&t);

	/* The headers at once, then the body a byte a second. */
	t0 = http_now_s();
	raw_tls_open(&t, sd.port, fx->cert);
	assert_int_equal(SSL_write(t.ssl, body_head, (int)strlen(body_head)),
			 (int)strlen(body_head));
	double closed_body = raw_tls_trickle(&t, "{\"a\":\"0123456789012345678901234567890123456789012345678\"}",
				     t0, DEADLINE + 10);
	raw_tls_close(&t);
	long logged = stderr_restore(fx, saved);

	if (closed_headers < DEADLINE - 0.5 || closed_headers > DEADLINE + SLACK)
		fail_msg("trickled headers: closed after %.2f s, want %d s", closed_headers,
			 DEADLINE);
	if (closed_body < DEADLINE - 0.5 || closed_body > DEADLINE + SLACK)
		fail_msg("trickled body: closed after %.2f s, want %d s", closed_body, DEADLINE);
	assert_int_equal(scraped_from(&sd.client, "request-deadline"), cut0 + 2);
	assert_int_equal(logged, 0);
	assert_int_equal(atomic_load(&echo_calls), e0);

	/* Kept alive: a request, idle past the deadline, another request on
	 * the same connection (the idle timeout governs idling), then the
	 * third one trickled: its clock starts at its first byte. */
	raw_tls_open(&t, sd.port, fx->cert);
	assert_int_equal(raw_tls_request(&t, headers), 200);
	sleep_ms(1000 * DEADLINE + 1000);
	assert_int_equal(raw_tls_request(&t, headers), 200);
	sleep_ms(1000);
	t0 = http_now_s();
	double closed_next = raw_tls_trickle(&t, headers, t0, DEADLINE + 10);
	raw_tls_close(&t);
	if (closed_next < DEADLINE - 0.5 || closed_next > DEADLINE + SLACK)
		fail_msg("trickled second request: closed after %.2f s, want %d s", closed_next,
			 DEADLINE);
	assert_int_equal(scraped_from(&sd.client, "request-deadline"), cut0 + 3);
	assert_int_equal(atomic_load(&echo_calls), e0 + 2);

	/* Still serving. */
	struct http_reply r;
	assert_int_equal(http_post(&sd.client, "/v1/echo", "application/json", "{}", 2, &r), 200);
	http_reply_free(&r);
	side_free(&sd);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	assert_true(kib > 0);
	return kib;
}

#if defined(__SANITIZE_ADDRESS__)
#define RUNNING_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUNNING_UNDER_ASAN 1
#endif
#endif
#ifndef RUNNING_UNDER_ASAN
#define RUNNING_UNDER_ASAN 0
#endif

#define STALLERS 100
#define STALL_BODY ((size_t)2 << 20)

struct staller {
	CURL *h;
	size_t left; /* body bytes still to give curl before pausing */
	bool paused, done;
	long status;
	CURLcode result;
};

/* All but the last byte of the body, then stall. */
static size_t staller_read(char *p, size_t size, size_t n, void *ud)
{
	struct staller *st = ud;
	if (st->left <= 1) {
		st->paused = true;
		return CURL_READFUNC_PAUSE;
	}
	size_t k = size * n < st->left - 1 ? size * n : st->left - 1;
	memset(p, ' ', k);
	st->left -= k;
	return k;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
	return size * n;
}

/* n stalling clients against sd, client i sending from sources[i % n_sources]
 * (a loopback address); until every one is answered or stalled, then a
 * second more for the server to take in what the stalled ones sent.
 * Bounded: 30 s. The handles stay open (stalled) until stall_end. */
struct stall_run {
	CURLM *m;
	struct curl_slist *hdrs;
	struct staller *st;
	int n, done, paused, busy;
	long rss0, rss_max;
	double took; /* seconds until settled (30: it never did) */
};

/* Turned away from its headers: 503 busy. The server answers and closes
 * without reading the body, so a client still sending it can take a TCP
 * reset (or see the close) before it reads the 503: curl then ends with a
 * send or receive error, or "empty reply", and no status. That is the same
 * refusal seen from a slower client. What the server did is asserted on
 * its own counters (busy, bytes reserved), which is what each test checks;
 * this only sorts the client's view, and never counts a 2xx. */
static bool turned_away(const struct staller *x)
{
	if (x->status == 503)
		return true;
	return x->status == 0 && (x->result == CURLE_SEND_ERROR || x->result == CURLE_RECV_ERROR ||
				  x->result == CURLE_GOT_NOTHING);
}

static void stall_begin(struct fixture *fx, struct side *sd, struct stall_run *run, int n,
			const char *const *sources, int n_sources)
{
	memset(run, 0, sizeof(*run));
	run->n = n;
	run->m = curl_multi_init();
	run->st = calloc((size_t)n, sizeof(*run->st));
	run->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	run->hdrs = curl_slist_append(run->hdrs, "Expect:"); /* the body goes up at once */
	char url[64], iface[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/v1/sink", (unsigned)sd->port);
	run->rss0 = run->rss_max = rss_kib();
	for (int i = 0; i < n; i++) {
		run->st[i] = (struct staller){.h = curl_easy_init(), .left = STALL_BODY};
		CURL *h = run->st[i].h;
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_CAINFO, fx->cert);
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)STALL_BODY);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, staller_read);
		curl_easy_setopt(h, CURLOPT_READDATA, &run->st[i]);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, run->hdrs);
		curl_easy_setopt(h, CURLOPT_PRIVATE, &run->st[i]);
		curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 4096L);
		snprintf(iface, sizeof(iface), "host!%s", sources[i % n_sources]);
		curl_easy_setopt(h, CURLOPT_INTERFACE, iface);
		curl_multi_add_handle(run->m, h);
	}
	double settled = 0, t0 = http_now_s();
	while (http_now_s() - t0 < 30 && (!settled || http_now_s() - settled < 1.0)) {
		int running;
		curl_multi_perform(run->m, &running);
		curl_multi_poll(run->m, NULL, 0, 50, NULL);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(run->m, &left)))
			if (msg->msg == CURLMSG_DONE) {
				struct staller *x;
				curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
				curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &x->status);
				x->result = msg->data.result;
				x->done = true;
			}
		run->done = run->paused = run->busy = 0;
		for (int i = 0; i < n; i++) {
			run->done += run->st[i].done;
			run->busy += run->st[i].done && turned_away(&run->st[i]);
			run->paused += !run->st[i].done && run->st[i].paused;
		}
		if (!settled && run->done + run->paused == n)
			settled = http_now_s();
		long rss = rss_kib();
		run->rss_max = rss > run->rss_max ? rss : run->rss_max;
	}
	run->took = http_now_s() - t0;
}

static void stall_end(struct stall_run *run)
{
	for (int i = 0; i < run->n; i++) {
		curl_multi_remove_handle(run->m, run->st[i].h);
		curl_easy_cleanup(run->st[i].h);
	}
	curl_multi_cleanup(run->m);
	curl_slist_free_all(run->hdrs);
	free(run->st);
}

static const char *const EIGHT_SOURCES[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4",
					    "127.0.0.5", "127.0.0.6", "127.0.0.7",
					    "127.0.0.8", "127.0.0.9"};

/* 100 clients from 8 sources, each a Content-Length of 2 MiB, all of it
 * but a byte sent, then stalling. The 16 MiB budget holds 8 of them; the
 * other 92 are answered 503 busy from their headers, their bodies not
 * read. The process' RSS grows by less than budget + 32 MiB (without the
 * budget it grew by the 200 MiB of bodies), and once the clients are gone
 * the whole budget is back. */
static void test_body_budget(void **state)
{
	struct fixture *fx = *state;
	struct side sd = {0};
	side_start(fx, (struct fleet_http_config){.threads = 2, .max_connections = 256,
						  .max_per_ip = 128, .timeout_seconds = 60,
						  .request_deadline_seconds = 60,
						  .rate_per_second = 1000, .rate_burst = 1000},
		   &sd);
	const size_t budget = FLEET_HTTP_DEFAULT_BODY_MEMORY;
	const int fit = (int)(budget / STALL_BODY);
	long long busy0 = scraped_from(&sd.client, "busy");
	int s0 = atomic_load(&sink_calls);
	struct stall_run run;
	stall_begin(fx, &sd, &run, STALLERS, EIGHT_SOURCES, 8);
	int done = run.done, paused = run.paused, busy = run.busy;
	long rss0 = run.rss0, rss_max = run.rss_max;
	long long reserved = scraped_series(&sd.client, "fleetd_http_body_bytes_reserved");

	/* While they hold the budget, one more is turned away at once. */
	char *big = malloc(STALL_BODY);
	memset(big, ' ', STALL_BODY);
	struct http_reply r;
	long st_more = http_post(&sd.client, "/v1/sink", "application/json", big, STALL_BODY, &r);
	char retry_after[16];
	snprintf(retry_after, sizeof(retry_after), "%s", r.retry_after);
	bool says_busy = strcmp(r.body, "{\"error\":\"busy\"}") == 0;
	http_reply_free(&r);

	stall_end(&run);

	fprintf(stderr, "body budget: %d answered (%d busy), %d stalled, RSS +%ld KiB\n", done,
		busy, paused, rss_max - rss0);
	assert_int_equal(busy, STALLERS - fit);
	assert_int_equal(done, STALLERS - fit);
	assert_int_equal(paused, fit);
	assert_int_equal(reserved, (long long)fit * (long long)STALL_BODY);
	/* The process's real memory: bounded by the budget. Under
	 * AddressSanitizer RSS says nothing of the kind (freed memory stays in
	 * its quarantine, every block has redzones), so there only the budget's
	 * own gauge above bounds it. */
	if (!RUNNING_UNDER_ASAN)
		assert_true(rss_max - rss0 < (long)((budget + (32u << 20)) / 1024));
	assert_int_equal(st_more, 503);
	assert_string_equal(retry_after, "1");
	assert_true(says_busy);
	assert_int_equal(scraped_from(&sd.client, "busy"), busy0 + STALLERS - fit + 1);
	assert_int_equal(atomic_load(&sink_calls), s0);

	/* Gone: the server sees them close and every reservation comes back. */
	for (int i = 0; i < 100 && reserved != 0; i++) {
		sleep_ms(50);
		reserved = scraped_series(&sd.client, "fleetd_http_body_bytes_reserved");
	}
	assert_int_equal(reserved, 0);
	assert_int_equal(http_post(&sd.client, "/v1/sink", "application/json", big, STALL_BODY, &r),
			 200);
	http_reply_free(&r);
	assert_int_equal(http_post(&sd.client, "/v1/echo", "application/json", "{}", 2, &r), 200);
	http_reply_free(&r);
	free(big);
	side_free(&sd);
}

/* One source holds at most a quarter of the budget: 10 stalled bodies from
 * one address keep 2 (4 MiB) and the rest are busy, while another source
 * still has room. Without the share, one source within its rate limit
 * would hold the whole budget and turn every machine away. */
static void test_body_share_per_source(void **state)
{
	struct fixture *fx = *state;
	struct side sd = {0};
	side_start(fx, (struct fleet_http_config){.threads = 2, .max_connections = 256,
						  .max_per_ip = 128, .timeout_seconds = 60,
						  .request_deadline_seconds = 60,
						  .rate_per_second = 1000, .rate_burst = 1000},
		   &sd);
	const int share = (int)(FLEET_HTTP_DEFAULT_BODY_MEMORY / FLEET_HTTP_BODY_SHARE_DIV /
				STALL_BODY);
	static const char *const one[] = {"127.0.0.2"};
	struct stall_run run, other;
	long long busy0 = scraped_from(&sd.client, "busy");
	stall_begin(fx, &sd, &run, 10, one, 1);
	fprintf(stderr, "one source: %d stalled, %d busy (%.1f s)\n", run.paused, run.busy,
		run.took);
	for (int i = 0; i < run.n; i++)
		if (run.st[i].done ? !turned_away(&run.st[i]) : !run.st[i].paused)
			fprintf(stderr, "  client %d: %s, status %ld (%s)\n", i,
				run.st[i].done ? "ended" : "still sending", run.st[i].status,
				curl_easy_strerror(run.st[i].result));
	assert_int_equal(run.paused, share);
	assert_int_equal(run.busy, 10 - share);
	assert_int_equal(scraped_from(&sd.client, "busy"), busy0 + 10 - share);
	static const char *const two[] = {"127.0.0.3"};
	stall_begin(fx, &sd, &other, 1, two, 1);
	assert_int_equal(other.paused, 1); /* another source is not turned away */
	assert_int_equal(scraped_series(&sd.client, "fleetd_http_body_bytes_reserved"),
			 (long long)(share + 1) * (long long)STALL_BODY);
	stall_end(&other);
	stall_end(&run);
	side_free(&sd);
}

#define RATE 1
#define BURST 10

/* Past its burst one source gets 429 with Retry-After, counted and not
 * journaled, until its bucket refills; another source and the built-in
 * GET routes are not affected. */
static void test_rate_limit(void **state)
{
	struct fixture *fx = *state;
	struct side sd = {0};
	side_start(fx, (struct fleet_http_config){.rate_per_second = RATE, .rate_burst = BURST},
		   &sd);
	long long limited0 = scraped_from(&sd.client, "rate-limited");
	int e0 = atomic_load(&echo_calls);
	struct http_reply r;
	int ok = 0, first_429 = -1;
	char retry_after[16] = "";
	bool says_limited = false;
	int saved = stderr_to_file(fx);
	for (int i = 0; i < BURST + 5 && first_429 < 0; i++) {
		long st = http_post(&sd.client, "/v1/echo", "application/json", "{}", 2, &r);
		if (st == 200)
			ok++;
		if (st == 429) {
			first_429 = i;
			snprintf(retry_after, sizeof(retry_after), "%s", r.retry_after);
			says_limited = strcmp(r.body, "{\"error\":\"rate-limited\"}") == 0;
		}
		http_reply_free(&r);
	}
	/* The same again: still limited, and counted each time. */
	long again = http_post(&sd.client, "/v1/echo", "application/json", "{}", 2, &r);
	http_reply_free(&r);
	long logged = stderr_restore(fx, saved);
	assert_true(first_429 >= BURST && first_429 <= BURST + 1); /* one refill if slow */
	assert_int_equal(ok, first_429);
	assert_string_equal(retry_after, "1");
	assert_true(says_limited);
	assert_int_equal(again, 429);
	assert_int_equal(logged, 0);
	assert_int_equal(scraped_from(&sd.client, "rate-limited"), limited0 + 2);
	assert_int_equal(atomic_load(&echo_calls), e0 + ok);

	/* A GET route marked limited shares the source's bucket: empty now. */
	assert_int_equal(http_get(&sd.client, "/v1/limited", NULL, &r), 429);
	http_reply_free(&r);

	/* /healthz and /metrics are not limited. */
	for (int i = 0; i < 3 * BURST; i++) {
		assert_int_equal(http_get(&sd.client, "/healthz", NULL, &r), 200);
		http_reply_free(&r);
		assert_int_equal(http_get(&sd.client, "/metrics", NULL, &r), 200);
		http_reply_free(&r);
	}
	/* Another source has its own bucket. */
	struct http_client other;
	http_client_init(&other, sd.port, fx->cert);
	snprintf(other.source, sizeof(other.source), "127.0.0.2");
	assert_int_equal(http_post(&other, "/v1/echo", "application/json", "{}", 2, &r), 200);
	http_reply_free(&r);
	http_client_free(&other);

	/* A second later the first source has a token again. */
	sleep_ms(1100 / RATE);
	assert_int_equal(http_post(&sd.client, "/v1/echo", "application/json", "{}", 2, &r), 200);
	http_reply_free(&r);
	side_free(&sd);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN); /* the raw TLS clients write to closed sockets */
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
		cmocka_unit_test(test_key_file_rules),
		cmocka_unit_test(test_request_deadline),
		cmocka_unit_test(test_body_budget),
		cmocka_unit_test(test_body_share_per_source),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_stop),
	};
	int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	curl_global_cleanup();
	return rc;
}
