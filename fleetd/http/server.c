/*
 * server.c: the listener's lifecycle (server.h): configuration, routes, TLS
 * material, starting and stopping libmicrohttpd, and the two built-in
 * routes. server_request.c handles each request.
 */
#include "fleetd/http/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "fleetd/http/server_impl.h"
#include "fleetd/obs/journal.h"
#include "lib/attest_wire.h"
#include "lib/file_read.h"

#define PEM_MAX (1u << 20)

const char *const fleet_http_reject_reasons[] = {
	/* decided by the server */
	"unknown-path", "method-not-allowed", "unsupported-media-type",
	"unsupported-encoding", "length-required", "body-too-large", "expectation-failed",
	"conditional-request", "range-request", "unexpected-body", "request-deadline",
	"busy", "rate-limited", "write-deadline",
	/* named by handlers */
	"malformed-json", "malformed-message", "unsupported-version", "field-too-large",
	/* GET /config (fleetd/provision/deliver.h) */
	"malformed-query", "unknown-code", "code-burned", "expired", "delivery-in-progress",
	"not-started",
	"other", NULL};

static const char *const response_classes[] = {"2xx", "3xx", "4xx", "5xx", NULL};

/* ---- built-in routes ----------------------------------------------------- */

static int healthz(void *ctx, const struct fleet_http_request *req, struct fleet_http_reply *reply)
{
	struct fleet_http *s = ctx;
	bool ok = s->health && s->health(s->health_ctx);
	const char *text = ok ? "ok\n" : "unavailable\n";
	fb_put(&reply->body, text, strlen(text));
	reply->content_type = "text/plain; charset=utf-8";
	return ok ? 200 : 503;
}

static int metrics(void *ctx, const struct fleet_http_request *req, struct fleet_http_reply *reply)
{
	struct fleet_http *s = ctx;
	reply->content_type = FLEET_METRICS_CONTENT_TYPE;
	return fleet_metrics_render(s->metrics, &reply->body) == FLEET_OK ? 200 : 500;
}

/* ---- configuration ------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static fleet_err register_metrics(struct fleet_http *s, struct fleet_errctx *ec)
{
	fleet_err e = fleet_metrics_register(
		s->metrics, FLEET_METRIC_COUNTER, "fleetd_http_rejected_total",
		"Requests refused, by reason: the server's own refusals (4xx, 503 busy, "
		"connections cut at the request deadline) and handlers' 4xx; none of them "
		"is journaled.", "reason",
		fleet_http_reject_reasons, &s->rejected, ec);
	if (e == FLEET_OK)
		e = fleet_metrics_register(s->metrics, FLEET_METRIC_COUNTER,
					   "fleetd_http_responses_total",
					   "HTTP responses sent, by status class.", "code",
					   response_classes, &s->responses, ec);
	if (e == FLEET_OK)
		e = fleet_metrics_register(
			s->metrics, FLEET_METRIC_COUNTER, "fleetd_http_internal_errors_total",
			"Errors libmicrohttpd or GnuTLS reported while serving (failed TLS "
			"handshakes, sockets); journaled at most once a minute.",
			NULL, NULL, &s->internal, ec);
	if (e == FLEET_OK)
		e = fleet_metrics_register(
			s->metrics, FLEET_METRIC_GAUGE, "fleetd_http_body_bytes_reserved",
			"Bytes of the request-body budget (listen.body_memory_bytes) held by "
			"requests in flight, reserved from their Content-Length.",
			NULL, NULL, &s->reserved_gauge, ec);
	return e;
}

struct fleet_http *fleet_http_new(const struct fleet_http_config *cfg,
				  struct fleet_metrics *metrics_reg, struct fleet_errctx *ec)
{
	if (!cfg || !metrics_reg) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no configuration or no metrics");
		return NULL;
	}
	if (!cfg->tls_cert_file || !cfg->tls_key_file) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
				 "HTTPS needs tls_cert_file and tls_key_file; fleetd serves "
				 "no plain HTTP");
		return NULL;
	}
	const char *bind = cfg->bind_address ? cfg->bind_address : "::";
	if (strlen(bind) >= 64) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "bind address is too long");
		return NULL;
	}
	struct fleet_http *s = calloc(1, sizeof(*s));
	if (!s) {
		fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		return NULL;
	}
	snprintf(s->bind_address, sizeof(s->bind_address), "%s", bind);
	s->port = cfg->port;
	s->cert_file = dup_or_null(cfg->tls_cert_file);
	s->key_file = dup_or_null(cfg->tls_key_file);
	s->priorities = strdup(cfg->tls_priorities ? cfg->tls_priorities
						   : FLEET_HTTP_TLS_PRIORITIES);
	s->threads = cfg->threads ? cfg->threads : 4;
	s->max_connections = cfg->max_connections ? cfg->max_connections : 256;
	s->max_per_ip = cfg->max_per_ip ? cfg->max_per_ip : 16;
	s->timeout_seconds = cfg->timeout_seconds ? cfg->timeout_seconds : 30;
	s->max_body = cfg->max_body ? cfg->max_body : FLEET_WIRE_MAX_BODY;
	s->request_deadline_seconds = cfg->request_deadline_seconds
					      ? cfg->request_deadline_seconds
					      : FLEET_HTTP_DEFAULT_DEADLINE;
	s->body_memory = cfg->body_memory ? cfg->body_memory : FLEET_HTTP_DEFAULT_BODY_MEMORY;
	s->rate_per_second = cfg->rate_per_second ? cfg->rate_per_second
						  : FLEET_HTTP_DEFAULT_RATE;
	s->rate_burst = cfg->rate_burst ? cfg->rate_burst : FLEET_HTTP_DEFAULT_BURST;
	s->metrics = metrics_reg;
	fb_init(&s->cert);
	fb_init(&s->key);
	if (fleet_http_guard_init(s, ec) != FLEET_OK) {
		fb_free(&s->cert);
		free(s->cert_file);
		free(s->key_file);
		free(s->priorities);
		free(s);
		return NULL;
	}
	if (!s->cert_file || !s->key_file || !s->priorities) {
		fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		fleet_http_free(s);
		return NULL;
	}
	if (s->body_memory < s->max_body) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
				 "the body memory budget (%zu bytes) is less than the body cap "
				 "(%zu bytes): a request at the cap could never be read",
				 s->body_memory, s->max_body);
		fleet_http_free(s);
		return NULL;
	}
	if (register_metrics(s, ec) != FLEET_OK ||
	    fleet_http_route(s, "GET", "/healthz", healthz, s) != FLEET_OK ||
	    (!cfg->no_metrics &&
	     fleet_http_route(s, "GET", "/metrics", metrics, s) != FLEET_OK)) {
		fleet_http_free(s);
		return NULL;
	}
	return s;
}

fleet_err fleet_http_route(struct fleet_http *s, const char *method, const char *path,
			   fleet_http_handler handler, void *ctx)
{
	if (!s || !method || !path || !handler || s->daemon)
		return FLEET_E_INVALID_ARG;
	if (path[0] != '/' || strlen(path) > FLEET_HTTP_MAX_PATH ||
	    strlen(method) >= sizeof(s->routes[0].method))
		return FLEET_E_INVALID_ARG;
	if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0 &&
	    strcmp(method, "PUT") != 0 && strcmp(method, "DELETE") != 0)
		return FLEET_E_UNSUPPORTED; /* HEAD is refused by design: see server.h */
	for (size_t i = 0; i < s->n_routes; i++)
		if (strcmp(s->routes[i].path, path) == 0 &&
		    strcmp(s->routes[i].method, method) == 0)
			return FLEET_E_INVALID_ARG;
	if (s->n_routes == FLEET_HTTP_MAX_ROUTES)
		return FLEET_E_TOO_LARGE;
	struct fleet_http_route_entry *r = &s->routes[s->n_routes++];
	snprintf(r->method, sizeof(r->method), "%s", method);
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->handler = handler;
	r->ctx = ctx;
	r->rate_limited = strcmp(method, "POST") == 0;
	return FLEET_OK;
}

fleet_err fleet_http_route_rate_limit(struct fleet_http *s, const char *method, const char *path)
{
	if (!s || !method || !path || s->daemon)
		return FLEET_E_INVALID_ARG;
	for (size_t i = 0; i < s->n_routes; i++)
		if (strcmp(s->routes[i].path, path) == 0 &&
		    strcmp(s->routes[i].method, method) == 0) {
			s->routes[i].rate_limited = true;
			return FLEET_OK;
		}
	return FLEET_E_NOT_FOUND;
}

void fleet_http_set_health(struct fleet_http *s, fleet_http_health fn, void *ctx)
{
	if (!s || s->daemon)
		return;
	s->health = fn;
	s->health_ctx = ctx;
}

/* ---- libmicrohttpd's own messages ------------------------------------- */

static long long mono_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec;
}

/* What libmicrohttpd 0.9.75 says when a connection's socket reads
 * end-of-file: in the handshake, in a request, or between. */
static bool is_close_report(const char *text)
{
	static const char *const reports[] = {
		"Connection was closed by remote side",
		"Socket has been disconnected when reading",
		"Connection socket is closed when reading",
		"Error: received handshake message out of context",
	};
	for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++)
		if (strncmp(text, reports[i], strlen(reports[i])) == 0)
			return true;
	return false;
}

/*
 * While starting, keep the text for the start error. While serving, a
 * connection the request deadline cut (server_guard.c) reads end-of-file
 * and libmicrohttpd reports it: that report is the cut's, already counted
 * under request-deadline, and is dropped while such a connection is open
 * (a client's own abort in that moment is dropped with it). Otherwise count
 * it and journal at most one a minute: these messages follow what a client
 * did (a failed TLS handshake), so one per event would let any client write
 * the journal. The text can hold client bytes and is escaped.
 */
__attribute__((format(printf, 2, 0)))
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct fleet_http *s = cls;
	char text[512];
	vsnprintf(text, sizeof(text), fmt, ap);
	size_t n = strlen(text);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	if (!atomic_load(&s->serving)) {
		fleet_log_escape_n(text, n, s->start_error, sizeof(s->start_error));
		return;
	}
	if (atomic_load(&s->cuts_open) > 0 && is_close_report(text))
		return; /* the request-deadline cut itself: counted there */
	fleet_metric_inc(s->internal);
	long long now = mono_seconds();
	long long last = atomic_load(&s->last_internal_log);
	if (last != 0 && now - last < 60)
		return;
	if (!atomic_compare_exchange_strong(&s->last_internal_log, &last, now))
		return;
	char esc[600];
	fleet_log(LOG_WARNING, "http-internal-error",
		  FLEET_LOG_FIELDS({"FLEET_REASON", fleet_log_escape_n(text, n, esc, sizeof(esc))}),
		  "libmicrohttpd: %s (further messages within a minute are only counted in "
		  "fleetd_http_internal_errors_total)", esc);
}

/* ---- start and stop ------------------------------------------------------ */

/* Leave percent-escapes as they came: routes are plain ASCII and match the
 * raw path exactly, so "/v1/attest/intake%00x" is no route rather than an
 * embedded NUL that strcmp would read as "/v1/attest/intake". */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

/* The certificate is configuration; the key a secret its group may read
 * (root:fleetd 0640, docs/operations.md), read into a buffer that is wiped
 * (docs/files.md). */
static const struct fleet_file_policy cert_policy =
	FLEET_FILE_POLICY_CONFIG("the TLS certificate", PEM_MAX);
static const struct fleet_file_policy key_policy =
	FLEET_FILE_POLICY_SECRET_SHARED("the TLS key", PEM_MAX);

static fleet_err read_pem(struct fleet_buf *b, const char *path,
			  const struct fleet_file_policy *policy, const char *what,
			  struct fleet_errctx *ec)
{
	fb_free(b);
	fleet_err e = fleet_file_read(AT_FDCWD, path, policy, b, ec);
	if (e != FLEET_OK)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	if ((e = fb_put_u8(b, 0)) != FLEET_OK)
		return fleet_errctx_msg(ec, e, "cannot read the TLS %s from %s: %s", what, path,
					fleet_err_str(e));
	if (!strstr((const char *)b->data, "-----BEGIN "))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "the TLS %s in %s is not PEM",
					what, path);
	return FLEET_OK;
}

/* bind_address as a socket address, and the flags its family needs. */
static fleet_err parse_bind(const struct fleet_http *s, struct sockaddr_storage *ss,
			    unsigned *flags, struct fleet_errctx *ec)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	if (inet_pton(AF_INET6, s->bind_address, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(s->port);
		bool any = memcmp(&a6->sin6_addr, &in6addr_any, sizeof(in6addr_any)) == 0;
		*flags |= any ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
		return FLEET_OK;
	}
	if (inet_pton(AF_INET, s->bind_address, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(s->port);
		return FLEET_OK;
	}
	return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
				"bind address is not an IPv4 or IPv6 literal");
}

fleet_err fleet_http_start(struct fleet_http *s, struct fleet_errctx *ec)
{
	if (!s || s->daemon)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no server, or already started");
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return fleet_errctx_msg(ec, FLEET_E_UNSUPPORTED,
					"this libmicrohttpd was built without TLS");
	fleet_err e = read_pem(&s->cert, s->cert_file, &cert_policy, "certificate", ec);
	if (e == FLEET_OK)
		e = read_pem(&s->key, s->key_file, &key_policy, "key", ec);
	if (e != FLEET_OK)
		return e;

	/* poll(2), not MHD_USE_AUTO's epoll: with TLS, libmicrohttpd 0.9.75's
	 * epoll loop calls gnutls_handshake again and again while the client
	 * is still computing (~300 calls, each a recv() that says EAGAIN, per
	 * connection): 4.8 ms of CPU per HTTPS /healthz, 1.3 ms with poll
	 * (bench/admission, docs/benchmark.md). A few hundred connections at
	 * most (max_connections) is what poll is good at. */
	unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG;
	struct sockaddr_storage ss;
	e = parse_bind(s, &ss, &flags, ec);
	if (e != FLEET_OK)
		return e;

	struct MHD_OptionItem ops[] = {
		/* First, so what the options after it report reaches us too. */
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_logger, s},
		{MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert.data},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, s->key.data},
		{MHD_OPTION_HTTPS_PRIORITIES, 0, s->priorities},
		{MHD_OPTION_SOCK_ADDR, 0, &ss},
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->max_connections, NULL},
		{MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->max_per_ip, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->timeout_seconds, NULL},
		{MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL},
		{MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)no_unescape, NULL},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)fleet_http_on_completed, s},
		{MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)fleet_http_on_connection, s},
		{s->threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
		 (intptr_t)s->threads, NULL},
		{MHD_OPTION_END, 0, NULL},
	};
	s->start_error[0] = '\0';
	atomic_store(&s->serving, false);
	s->daemon = MHD_start_daemon(flags, s->port, NULL, NULL, fleet_http_on_request, s,
				     MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
	if (!s->daemon)
		return fleet_errctx_msg(ec, FLEET_E_IO, "cannot serve HTTPS on [%s]:%u: %s",
					s->bind_address, (unsigned)s->port,
					s->start_error[0] ? s->start_error
							  : "libmicrohttpd gave no reason");
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon,
							       MHD_DAEMON_INFO_BIND_PORT);
	s->bound_port = info ? info->port : s->port;
	atomic_store(&s->serving, true);
	e = fleet_http_sweeper_start(s, ec);
	if (e != FLEET_OK)
		fleet_http_stop(s);
	return e;
}

uint16_t fleet_http_port(const struct fleet_http *s)
{
	return s && s->daemon ? s->bound_port : 0;
}

void fleet_http_stop(struct fleet_http *s)
{
	if (!s || !s->daemon)
		return;
	fleet_http_sweeper_stop(s);
	MHD_stop_daemon(s->daemon);
	s->daemon = NULL;
	s->bound_port = 0;
	atomic_store(&s->serving, false);
}

void fleet_http_free(struct fleet_http *s)
{
	if (!s)
		return;
	fleet_http_stop(s);
	fb_free_secret(&s->key);
	fb_free(&s->cert);
	free(s->cert_file);
	free(s->key_file);
	free(s->priorities);
	fleet_http_guard_free(s);
	free(s);
}
