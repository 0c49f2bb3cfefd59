/*
 * test_config_delivery.c: GET /config?code= (fleetd/provision/deliver.h)
 * end to end: a real fleetd HTTPS server (fleetd/http/) in this process on
 * a free loopback port, the real store, the route as the daemon wires it,
 * and real TLS clients: libcurl, and an OpenSSL client whose socket this
 * test controls (a tiny SO_RCVBUF set before connect, reads stopped, a
 * reset mid-body).
 *
 * The rules, each checked: exactly one 200 with the whole body ever, under
 * 100 concurrent GETs of one code; the code consumed only once the peer's
 * TCP acknowledged every byte (a client that stops reading until the write
 * deadline, or resets mid-body, consumes nothing and a retry is served);
 * HEAD, If-None-Match and Range refused and consume nothing; a consumed or
 * dropped code is 410, after the store is reopened too; a request that
 * proves nothing (a malformed query, an unknown code) is counted and
 * reported nowhere; kill -9 of the serving process during a delivery
 * leaves the row either started with its config or consumed once, never
 * both. And what libmicrohttpd 0.9.75 does at the completion hook, which
 * deliver.h relies on: the socket still open, its sending side shut.
 */
#include "tests/testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sqlite3.h>

#include "fleetd/http/server.h"
#include "fleetd/obs/journal.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/provision/deliver.h"
#include "fleetd/store/store.h"
#include "lib/hex.h"

#include "tests/e2e/http_client.h"

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DEADLINE_S 3
#define BIG (250 * 1024) /* near FLEET_RENDER_OUTPUT_MAX, past any socket buffer we set */

/* ---- events, as the daemon would journal them --------------------------- */

#define MAX_EVENTS 1024
struct seen {
	enum fleet_deliver_event_kind kind;
	int64_t id;
	char device[64], reason[32];
};
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static struct seen events[MAX_EVENTS];
static size_t n_events;

static void on_event(void *ctx, const struct fleet_deliver_event *ev)
{
	(void)ctx;
	pthread_mutex_lock(&ev_mu);
	if (n_events < MAX_EVENTS) {
		struct seen *s = &events[n_events++];
		s->kind = ev->kind;
		s->id = ev->provision_id;
		snprintf(s->device, sizeof(s->device), "%s", ev->device);
		snprintf(s->reason, sizeof(s->reason), "%s", ev->reason ? ev->reason : "");
	}
	pthread_cond_broadcast(&ev_cv);
	pthread_mutex_unlock(&ev_mu);
}

static size_t events_now(void)
{
	pthread_mutex_lock(&ev_mu);
	size_t n = n_events;
	pthread_mutex_unlock(&ev_mu);
	return n;
}

/* The first event of kind (DELIVERED or INCOMPLETE: the end of a 200) at
 * or after index from, waiting up to ms; its reason copied out. */
static bool wait_end(size_t from, char reason[32], int ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000l;
	if (until.tv_nsec >= 1000000000l)
		until.tv_sec++, until.tv_nsec -= 1000000000l;
	pthread_mutex_lock(&ev_mu);
	for (;;) {
		for (size_t i = from; i < n_events; i++)
			if (events[i].kind == FLEET_DELIVER_DELIVERED ||
			    events[i].kind == FLEET_DELIVER_INCOMPLETE) {
				snprintf(reason, 32, "%s",
					 events[i].kind == FLEET_DELIVER_DELIVERED ? "delivered"
										   : events[i].reason);
				pthread_mutex_unlock(&ev_mu);
				return true;
			}
		if (pthread_cond_timedwait(&ev_cv, &ev_mu, &until) != 0) {
			pthread_mutex_unlock(&ev_mu);
			return false;
		}
	}
}

/* ---- what the completion hook sees (deliver.h's empirical claims) ------ */

static _Atomic int hook_calls, hook_ok, hook_fd_open, hook_wr_shut, hook_state, hook_outq;

/* The daemon's route (deliver.h), with the hook wrapped to look at the
 * socket first. */
static void observed_done(void *lease, bool ok, int fd)
{
	atomic_fetch_add(&hook_calls, 1);
	if (ok) {
		atomic_fetch_add(&hook_ok, 1);
		struct tcp_info ti;
		socklen_t len = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		int outq = -1;
		ioctl(fd, SIOCOUTQ, &outq);
		atomic_store(&hook_outq, outq);
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
			atomic_fetch_add(&hook_fd_open, 1);
			atomic_store(&hook_state, ti.tcpi_state);
			/* Still a live TCP socket: ESTABLISHED (1; TLS close_notify
			 * sent, TCP not shut), FIN_WAIT1/2 (4, 5; SHUT_WR),
			 * CLOSE_WAIT (8), CLOSING (11): never closed or reused. */
			int s = ti.tcpi_state;
			if (s == 1 || s == 4 || s == 5 || s == 8 || s == 11)
				atomic_fetch_add(&hook_wr_shut, 1);
		}
	}
	fleet_deliver_done(lease, ok, fd);
}

static int config_route(void *ctx, const struct fleet_http_request *req,
			struct fleet_http_reply *reply)
{
	struct fleet_deliver_arg a[FLEET_HTTP_MAX_ARGS];
	for (size_t i = 0; i < req->n_args; i++)
		a[i] = (struct fleet_deliver_arg){req->args[i].key, req->args[i].value};
	struct fleet_deliver_result r;
	int status = fleet_deliver_get(ctx, a, req->n_args, req->args_over, req->started_ms,
				       req->peer, &reply->body, &r);
	reply->reason = r.reason;
	reply->content_type = r.content_type;
	reply->close = r.close;
	reply->done = r.lease ? observed_done : NULL;
	reply->done_arg = r.lease;
	reply->write_deadline_ms = r.write_deadline_ms;
	return status;
}

/* ---- certificate, fixture ------------------------------------------------ */

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
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 4712);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, pkey);
	X509_NAME *name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fleetd test",
				   -1, -1, 0);
	X509_set_issuer_name(x, name);
	add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
	add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign");
	add_ext(x, NID_subject_alt_name, "IP:127.0.0.1");
	assert_true(X509_sign(x, pkey, EVP_sha256()) > 0);
	FILE *f = fopen(cert_path, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key_path, "w");
	PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	assert_int_equal(chmod(key_path, 0600), 0);
	X509_free(x);
	EVP_PKEY_free(pkey);
}

struct fx {
	char *dir;
	char cert[256], key[256], state[256];
	struct fleet_store *st;
	struct fleet_deliver *d;
	struct fleet_metrics *metrics;
	struct fleet_http *http;
	uint16_t port;
	uint8_t seed;
};

static void serve(struct fx *f)
{
	struct fleet_errctx ec = {0};
	if (fleet_store_open(f->state, FLEET_STORE_RW, &f->st, &ec) != FLEET_STORE_OK)
		fail_msg("store: %s", ec.detail);
	struct fleet_deliver_config dc = {
		.store = f->st, .write_deadline_seconds = DEADLINE_S, .event = on_event,
	};
	f->d = fleet_deliver_new(&dc);
	assert_non_null(f->d);
	f->metrics = fleet_metrics_new();
	struct fleet_http_config cfg = {
		.bind_address = "127.0.0.1", .tls_cert_file = f->cert, .tls_key_file = f->key,
		.threads = 4, .max_connections = 64, .max_per_ip = 16, .timeout_seconds = 10,
	};
	f->http = fleet_http_new(&cfg, f->metrics, &ec);
	assert_non_null(f->http);
	assert_int_equal(fleet_http_route(f->http, "GET", "/config", config_route, f->d), FLEET_OK);
	if (fleet_http_start(f->http, &ec) != FLEET_OK)
		fail_msg("start: %s", ec.detail);
	f->port = fleet_http_port(f->http);
}

static void unserve(struct fx *f)
{
	fleet_http_free(f->http); /* every request ended: every lease given back */
	f->http = NULL;
	fleet_deliver_free(f->d);
	f->d = NULL;
	fleet_metrics_free(f->metrics);
	f->metrics = NULL;
	fleet_store_close(f->st);
	f->st = NULL;
}

static int group_setup(void **state)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	fleet_log_set_target(FLEET_LOG_STDERR);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->dir = make_temp_dir("deliver");
	snprintf(f->cert, sizeof(f->cert), "%s/cert.pem", f->dir);
	snprintf(f->key, sizeof(f->key), "%s/key.pem", f->dir);
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	make_cert(f->cert, f->key);
	serve(f);
	assert_int_equal(fleet_store_device_record_admission(f->st, "w1", "SER-1", 7, HA, HB,
							     time(NULL)),
			 FLEET_STORE_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->http)
		unserve(f);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* A started worker run for w1 with a config of len bytes; code_hex out. */
static int64_t provision(struct fx *f, size_t len, char code_hex[65], struct fleet_buf *config,
			 int64_t now, int64_t expires)
{
	uint8_t code[32], hash[32];
	unsigned hl;
	assert_int_equal(RAND_bytes(code, 32), 1);
	fleet_hex_encode(code, 32, code_hex);
	assert_int_equal(EVP_Digest(code, 32, hash, &hl, EVP_sha256(), NULL), 1);
	fb_init(config);
	static const char line[] = "# a line of a Talos machine configuration, this long\n";
	while (config->len < len)
		fb_put(config, line, config->len + sizeof(line) - 1 <= len ? sizeof(line) - 1
									   : len - config->len);
	char token[7], wf[64];
	snprintf(token, sizeof(token), "tok%03u", f->seed);
	snprintf(wf, sizeof(wf), "install-w1-%u", f->seed++);
	struct fleet_store_provision_in in = {
		.device = "w1", .serial = "SER-1", .role = "worker", .workflow = wf,
		.token_id = token, .code_hash = hash, .config = config->data,
		.config_len = config->len, .now = now, .expires_at = expires,
	};
	int64_t id;
	fleet_err e = fleet_store_provision_create(f->st, &in, &id);
	if (e)
		fail_msg("create: %s: %s", fleet_err_str(e), fleet_store_errmsg(f->st));
	assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, now), 0);
	return id;
}

static int64_t provision_now(struct fx *f, size_t len, char code_hex[65], struct fleet_buf *c)
{
	int64_t now = time(NULL);
	return provision(f, len, code_hex, c, now, now + 7200);
}

static enum fleet_store_provision_stage stage_of(struct fx *f, int64_t id)
{
	struct fleet_store_provision p;
	assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
	return p.stage;
}

static long get(struct fx *f, const char *path, const char *header, struct http_reply *r)
{
	struct http_client c;
	http_client_init(&c, f->port, f->cert);
	long status = http_get(&c, path, header, r);
	http_client_free(&c);
	return status;
}

static long get_code(struct fx *f, const char *code, struct http_reply *r)
{
	char path[128];
	snprintf(path, sizeof(path), "/config?code=%s", code);
	return get(f, path, NULL, r);
}

static long long counted(struct fx *f, const char *reason)
{
	struct http_reply r;
	assert_int_equal(get(f, "/metrics", NULL, &r), 200);
	char needle[128];
	snprintf(needle, sizeof(needle), "fleetd_http_rejected_total{reason=\"%s\"} ", reason);
	const char *p = strstr(r.body, needle);
	assert_non_null(p);
	long long v = strtoll(p + strlen(needle), NULL, 10);
	http_reply_free(&r);
	return v;
}

/* ---- a TLS client whose socket the test owns ---------------------------- */

struct raw {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
};

static void raw_open(struct raw *c, struct fx *f, int rcvbuf)
{
	c->ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_load_verify_locations(c->ctx, f->cert, NULL);
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c->fd >= 0);
	if (rcvbuf) /* before connect: the window is offered from the SYN */
		assert_int_equal(setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)),
				 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f->port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	c->ssl = SSL_new(c->ctx);
	SSL_set_fd(c->ssl, c->fd);
	assert_int_equal(SSL_connect(c->ssl), 1);
}

static void raw_get(struct raw *c, const char *code, const char *extra)
{
	char req[512];
	int n = snprintf(req, sizeof(req),
			 "GET /config?code=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", code,
			 extra ? extra : "");
	assert_int_equal(SSL_write(c->ssl, req, n), n);
}

/* Read up to cap bytes (until EOF or cap). */
static size_t raw_read(struct raw *c, char *buf, size_t cap)
{
	size_t got = 0;
	while (got < cap) {
		int k = SSL_read(c->ssl, buf + got, (int)(cap - got > 16384 ? 16384 : cap - got));
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

/* Close now, unread bytes and all: a reset, not an orderly close. */
static void raw_abort(struct raw *c)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c->fd);
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
}

static void raw_close(struct raw *c)
{
	SSL_shutdown(c->ssl);
	close(c->fd);
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
}

/* ---- tests --------------------------------------------------------------- */

/* One GET: the whole config with its headers; consumed in one transaction
 * with the device active; then 410, also after the store is reopened. */
static void test_delivered_once(void **state)
{
	struct fx *f = *state;
	char code[65];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, 4000, code, &cfg);
	int calls0 = atomic_load(&hook_calls), shut0 = atomic_load(&hook_wr_shut);
	size_t e0 = events_now();

	struct raw c;
	raw_open(&c, f, 0);
	raw_get(&c, code, NULL);
	static char buf[BIG + 4096];
	size_t n = raw_read(&c, buf, sizeof(buf) - 1);
	buf[n] = '\0';
	raw_close(&c);
	char *body = strstr(buf, "\r\n\r\n");
	assert_non_null(body);
	*body = '\0';
	body += 4;
	assert_true(strncmp(buf, "HTTP/1.1 200", 12) == 0);
	assert_non_null(strcasestr(buf, "\r\nContent-Type: application/yaml"));
	assert_non_null(strcasestr(buf, "\r\nCache-Control: no-store"));
	assert_non_null(strcasestr(buf, "\r\nConnection: close"));
	assert_int_equal((size_t)(buf + n - body), cfg.len);
	assert_memory_equal(body, cfg.data, cfg.len);

	char why[32];
	assert_true(wait_end(e0, why, 5000));
	assert_string_equal(why, "delivered");
	/* libmicrohttpd 0.9.75's completion, as deliver.h says: once, OK,
	 * the descriptor still open, a live TCP socket. */
	printf("# at the completion hook: tcpi_state %d, SIOCOUTQ %d\n", atomic_load(&hook_state),
	       atomic_load(&hook_outq));
	assert_int_equal(atomic_load(&hook_calls), calls0 + 1);
	assert_int_equal(atomic_load(&hook_wr_shut), shut0 + 1);
	assert_int_equal(stage_of(f, id), FLEET_PROV_DELIVERED);
	struct fleet_store_device dev;
	assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &dev), 0);
	assert_string_equal(dev.state, "active");

	struct http_reply r;
	long long burned0 = counted(f, "code-burned");
	assert_int_equal(get_code(f, code, &r), 410);
	assert_string_equal(r.body, "{\"error\":\"code-burned\"}");
	http_reply_free(&r);
	assert_int_equal(counted(f, "code-burned"), burned0 + 1);
	/* Known code: reported with the device's name, never the code. */
	pthread_mutex_lock(&ev_mu);
	struct seen last = events[n_events - 1];
	pthread_mutex_unlock(&ev_mu);
	assert_int_equal(last.kind, FLEET_DELIVER_REFUSED);
	assert_string_equal(last.device, "w1");
	assert_string_equal(last.reason, "code-burned");
	/* Across a restart. */
	unserve(f);
	serve(f);
	assert_int_equal(get_code(f, code, &r), 410);
	http_reply_free(&r);
	fb_free(&cfg);
}

/* Requests that prove nothing: 400 or 404, counted, no event, no store
 * change; and a 9th argument is not dropped silently. */
static void test_malformed_and_unknown(void **state)
{
	struct fx *f = *state;
	char code[65];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, 100, code, &cfg);
	char upper[65];
	for (int i = 0; i < 64; i++)
		upper[i] = (char)((code[i] >= 'a' && code[i] <= 'f') ? code[i] - 32 : code[i]);
	upper[64] = '\0';
	bool has_letter = strcmp(upper, code) != 0;
	char paths[16][400];
	int np = 0;
	snprintf(paths[np++], 400, "/config");
	snprintf(paths[np++], 400, "/config?code");
	snprintf(paths[np++], 400, "/config?code=");
	snprintf(paths[np++], 400, "/config?code=%.63s", code);
	snprintf(paths[np++], 400, "/config?code=%s0", code);
	snprintf(paths[np++], 400, "/config?code=%s&code=%s", code, code);
	snprintf(paths[np++], 400, "/config?code=%s&x=1", code);
	snprintf(paths[np++], 400, "/config?x=1&code=%s", code);
	snprintf(paths[np++], 400, "/config?Code=%s", code);
	snprintf(paths[np++], 400, "/config?code=%%%.2s%s", code, code + 2);
	snprintf(paths[np++], 400, "/config?a&b&c&d&e&f&g&h&code=%s", code);
	if (has_letter)
		snprintf(paths[np++], 400, "/config?code=%s", upper);
	size_t e0 = events_now();
	long long before = counted(f, "malformed-query");
	for (int i = 0; i < np; i++) {
		struct http_reply r;
		long st = get(f, paths[i], NULL, &r);
		if (st != 400)
			fail_msg("%s: %ld, not 400", paths[i], st);
		assert_string_equal(r.body, "{\"error\":\"malformed-query\"}");
		http_reply_free(&r);
	}
	assert_int_equal(counted(f, "malformed-query"), before + np);
	long long unknown0 = counted(f, "unknown-code");
	struct http_reply r;
	assert_int_equal(get_code(f, HA, &r), 404);
	http_reply_free(&r);
	assert_int_equal(counted(f, "unknown-code"), unknown0 + 1);
	assert_int_equal(events_now(), e0);
	assert_int_equal(stage_of(f, id), FLEET_PROV_STARTED);
	/* And the right one still works. */
	assert_int_equal(get_code(f, code, &r), 200);
	assert_int_equal(r.len, cfg.len);
	http_reply_free(&r);
	fb_free(&cfg);
}

/* HEAD, a conditional and a Range request are the server's refusals: the
 * code is neither served nor consumed. */
static void test_head_conditional_range_refused(void **state)
{
	struct fx *f = *state;
	char code[65], path[128];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, 1000, code, &cfg);
	snprintf(path, sizeof(path), "/config?code=%s", code);
	struct http_client c;
	http_client_init(&c, f->port, f->cert);
	struct http_reply r;
	struct http_req head = {.method = "HEAD", .path = path};
	assert_int_equal(http_do(&c, &head, &r), 405);
	http_reply_free(&r);
	assert_int_equal(http_get(&c, path, "If-None-Match: \"x\"", &r), 400);
	assert_string_equal(r.body, "{\"error\":\"conditional-request\"}");
	http_reply_free(&r);
	assert_int_equal(http_get(&c, path, "If-Modified-Since: Sat, 1 Jan 2000 00:00:00 GMT", &r),
			 400);
	http_reply_free(&r);
	assert_int_equal(http_get(&c, path, "Range: bytes=0-10", &r), 400);
	assert_string_equal(r.body, "{\"error\":\"range-request\"}");
	http_reply_free(&r);
	http_client_free(&c);
	assert_int_equal(stage_of(f, id), FLEET_PROV_STARTED);
	assert_int_equal(get_code(f, code, &r), 200);
	http_reply_free(&r);
	fb_free(&cfg);
}

static void test_dropped_and_expired(void **state)
{
	struct fx *f = *state;
	char code[65];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, 100, code, &cfg);
	assert_int_equal(fleet_store_provision_drop(f->st, id, "workflow-deleted", time(NULL)), 0);
	struct http_reply r;
	assert_int_equal(get_code(f, code, &r), 410);
	assert_string_equal(r.body, "{\"error\":\"code-burned\"}");
	http_reply_free(&r);
	fb_free(&cfg);
	/* Created long ago, expired long ago. */
	id = provision(f, 100, code, &cfg, 1000, 2000);
	long long exp0 = counted(f, "expired");
	assert_int_equal(get_code(f, code, &r), 410);
	assert_string_equal(r.body, "{\"error\":\"expired\"}");
	http_reply_free(&r);
	assert_int_equal(counted(f, "expired"), exp0 + 1);
	assert_int_equal(stage_of(f, id), FLEET_PROV_STARTED); /* the pass drops it */
	fb_free(&cfg);
}

struct racer {
	struct fx *f;
	const char *code;
	long status;
	size_t len;
	char *body;
	pthread_barrier_t *go;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct http_reply rep;
	pthread_barrier_wait(r->go);
	r->status = get_code(r->f, r->code, &rep);
	r->len = rep.len;
	r->body = rep.body;
	return NULL;
}

/* 100 GETs of one code at once: exactly one 200, with the whole body; the
 * rest 409 delivery-in-progress, 410 code-burned, or no answer (the
 * per-address connection limit). */
static void test_concurrent_one_200(void **state)
{
	struct fx *f = *state;
	char code[65];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, BIG, code, &cfg);
	enum { N = 100 };
	static struct racer rs[N];
	pthread_t th[N];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, N);
	for (int i = 0; i < N; i++) {
		rs[i] = (struct racer){.f = f, .code = code, .go = &go};
		assert_int_equal(pthread_create(&th[i], NULL, race, &rs[i]), 0);
	}
	size_t e0 = events_now();
	int ok = 0, busy = 0, gone = 0, none = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		switch (rs[i].status) {
		case 200:
			ok++;
			assert_int_equal(rs[i].len, cfg.len);
			assert_memory_equal(rs[i].body, cfg.data, cfg.len);
			break;
		case 409: busy++; break;
		case 410: gone++; break;
		case -1: none++; break;
		default: fail_msg("racer %d: %ld", i, rs[i].status);
		}
		free(rs[i].body);
	}
	pthread_barrier_destroy(&go);
	printf("# 100 racers: %d 200, %d 409, %d 410, %d without an answer\n", ok, busy, gone, none);
	assert_int_equal(ok, 1);
	char why[32];
	assert_true(wait_end(e0, why, 5000));
	assert_string_equal(why, "delivered");
	assert_int_equal(stage_of(f, id), FLEET_PROV_DELIVERED);
	struct http_reply r;
	assert_int_equal(get_code(f, code, &r), 410);
	http_reply_free(&r);
	fb_free(&cfg);
}

/* A tiny receive buffer and no reading: the server hands the whole answer
 * to its kernel, but the peer acknowledges only what its window takes.
 * Past the write deadline nothing is consumed, and a retry is served. */
static void test_unread_until_deadline(void **state)
{
	struct fx *f = *state;
	char code[65];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, BIG, code, &cfg);
	size_t e0 = events_now();
	struct raw c;
	raw_open(&c, f, 4096);
	raw_get(&c, code, NULL);
	/* Meanwhile: the lease holds; another GET is told so. */
	usleep(300 * 1000);
	struct http_reply r;
	assert_int_equal(get_code(f, code, &r), 409);
	assert_string_equal(r.body, "{\"error\":\"delivery-in-progress\"}");
	http_reply_free(&r);
	char why[32];
	assert_true(wait_end(e0, why, (DEADLINE_S + 5) * 1000));
	printf("# unread until the deadline: %s\n", why);
	/* "write-deadline": MHD said it wrote all and the queue never drained;
	 * "connection-closed": the sweep cut it while MHD was still writing. */
	assert_true(!strcmp(why, "write-deadline") || !strcmp(why, "connection-closed"));
	raw_abort(&c);
	assert_int_equal(stage_of(f, id), FLEET_PROV_STARTED);
	size_t e1 = events_now();
	assert_int_equal(get_code(f, code, &r), 200);
	assert_int_equal(r.len, cfg.len);
	assert_memory_equal(r.body, cfg.data, cfg.len);
	http_reply_free(&r);
	assert_true(wait_end(e1, why, 5000));
	assert_string_equal(why, "delivered");
	assert_int_equal(stage_of(f, id), FLEET_PROV_DELIVERED);
	fb_free(&cfg);
}

/* Read part of the body, then reset: not consumed, the retry served. */
static void test_closed_mid_body(void **state)
{
	struct fx *f = *state;
	char code[65];
	struct fleet_buf cfg;
	int64_t id = provision_now(f, BIG, code, &cfg);
	size_t e0 = events_now();
	struct raw c;
	raw_open(&c, f, 4096);
	raw_get(&c, code, NULL);
	static char buf[32768];
	assert_true(raw_read(&c, buf, sizeof(buf)) == sizeof(buf));
	long long t0 = time(NULL);
	raw_abort(&c);
	char why[32];
	assert_true(wait_end(e0, why, (DEADLINE_S + 5) * 1000));
	printf("# closed mid-body: %s after %llds\n", why, (long long)time(NULL) - t0);
	assert_string_not_equal(why, "delivered");
	assert_int_equal(stage_of(f, id), FLEET_PROV_STARTED);
	struct http_reply r;
	assert_int_equal(get_code(f, code, &r), 200);
	assert_int_equal(r.len, cfg.len);
	http_reply_free(&r);
	fb_free(&cfg);
}

/* kill -9 of the serving process while a slow client reads, at several
 * moments: afterwards the row is started with its config (and a new
 * process serves it) or consumed once with the device active, never both
 * and never neither. */
static void test_kill9_during_delivery(void **state)
{
	struct fx *f = *state;
	static const int delays_ms[] = {0, 50, 400, -1}; /* -1: after the client read all */
	for (size_t k = 0; k < sizeof(delays_ms) / sizeof(delays_ms[0]); k++) {
		char code[65];
		struct fleet_buf cfg;
		int64_t id = provision_now(f, BIG, code, &cfg);
		assert_int_equal(fleet_store_device_set_state(f->st, "w1", "admitted"), 0);
		unserve(f);
		int pfd[2];
		assert_int_equal(pipe(pfd), 0);
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			serve(f);
			uint16_t port = f->port;
			if (write(pfd[1], &port, sizeof(port)) != sizeof(port))
				_exit(2);
			for (;;)
				pause();
		}
		close(pfd[1]);
		uint16_t port = 0;
		assert_int_equal(read(pfd[0], &port, sizeof(port)), sizeof(port));
		close(pfd[0]);
		f->port = port;
		struct raw c;
		raw_open(&c, f, delays_ms[k] < 0 ? 0 : 4096);
		raw_get(&c, code, NULL);
		static char buf[BIG + 4096];
		if (delays_ms[k] < 0) {
			raw_read(&c, buf, sizeof(buf));
			usleep(20 * 1000);
		} else {
			raw_read(&c, buf, 8192);
			usleep((useconds_t)delays_ms[k] * 1000);
		}
		kill(pid, SIGKILL);
		int ws;
		waitpid(pid, &ws, 0);
		assert_true(WIFSIGNALED(ws));
		raw_abort(&c);

		serve(f); /* a new process's view: the store as the child left it */
		struct fleet_store_provision p;
		assert_int_equal(fleet_store_provision_get(f->st, id, &p), 0);
		struct fleet_store_device dev;
		assert_int_equal(fleet_store_device_get_by_name(f->st, "w1", &dev), 0);
		char sql[128];
		snprintf(sql, sizeof(sql), "SELECT config IS NULL FROM provisions WHERE id = %lld",
			 (long long)id);
		sqlite3 *db;
		char path[600];
		snprintf(path, sizeof(path), "%s/fleetd.db", f->state);
		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		sqlite3_stmt *s;
		assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(s), SQLITE_ROW);
		bool wiped = sqlite3_column_int(s, 0) != 0;
		sqlite3_finalize(s);
		sqlite3_close(db);
		bool available = p.stage == FLEET_PROV_STARTED && !wiped &&
				 !strcmp(dev.state, "admitted");
		bool consumed = p.stage == FLEET_PROV_DELIVERED && wiped && p.delivered_at &&
				!strcmp(dev.state, "active");
		printf("# kill -9 at %d ms: %s\n", delays_ms[k],
		       available ? "still available" : consumed ? "consumed" : "NEITHER");
		assert_true(available != consumed);
		struct http_reply r;
		size_t e1 = events_now();
		if (available) {
			assert_int_equal(get_code(f, code, &r), 200);
			assert_int_equal(r.len, cfg.len);
			assert_memory_equal(r.body, cfg.data, cfg.len);
		} else {
			assert_int_equal(get_code(f, code, &r), 410);
		}
		http_reply_free(&r);
		/* The retry's consumption (if any) ends this run; a new one follows. */
		char why[32];
		if (available)
			assert_true(wait_end(e1, why, 5000));
		assert_int_equal(stage_of(f, id), FLEET_PROV_DELIVERED);
		assert_int_equal(fleet_store_provision_advance(f->st, id, FLEET_PROV_DELIVERED,
							       FLEET_PROV_DONE, time(NULL)), 0);
		fb_free(&cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delivered_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_and_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_conditional_range_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dropped_and_expired, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_one_200, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unread_until_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_mid_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill9_during_delivery, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
