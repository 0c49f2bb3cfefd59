/*
 * server.h: fleetd's HTTPS listener (libmicrohttpd with GnuTLS).
 *
 * The server owns everything about a request up to the handler: TLS (1.2
 * and 1.3 only), connection limits, routing, the body cap, and the refusals
 * below. A handler sees a complete, capped body of a request that passed
 * them, and answers with a status and a body (JSON unless it says
 * otherwise).
 *
 * Refusals the server decides itself, before any handler runs:
 *
 *   404 unknown-path            no route has this path
 *   405 method-not-allowed      the path exists, not with this method (an
 *                               Allow header lists the ones it has); HEAD is
 *                               never implied by GET
 *   415 unsupported-media-type  a POST whose Content-Type is not
 *                               application/json (charset=utf-8 allowed)
 *   415 unsupported-encoding    any Content-Encoding other than identity
 *   411 length-required         a POST without Content-Length, or with
 *                               Transfer-Encoding (chunked): the cap must be
 *                               decided before any body is read
 *   413 body-too-large          a Content-Length over the cap: refused from
 *                               the headers, before a 100 Continue, with not
 *                               one byte of the body read
 *   417 expectation-failed      an Expect other than 100-continue
 *   400 conditional-request     If-Match, If-None-Match, If-Modified-Since,
 *                               If-Unmodified-Since or If-Range
 *   400 range-request           a Range header
 *   400 unexpected-body         a body on a method other than POST
 *   429 rate-limited            a POST to a route (or a request to a route
 *                               fleet_http_route_rate_limit marks) past its source's token
 *                               bucket (rate_per_second, rate_burst; keyed by
 *                               the IPv4 address or the IPv6 /64, at most
 *                               4096 sources, the least
 *                               recently seen one forgotten first), with
 *                               Retry-After: every intake costs an inventory
 *                               call, so requests must not cost nothing to
 *                               send. /healthz and /metrics are not limited.
 *   503 busy                    a POST whose Content-Length would take the
 *                               bodies in flight past body_memory, with
 *                               Retry-After, the body not read: each body is
 *                               buffered whole before its handler runs, so
 *                               stalled bodies would otherwise hold memory
 *                               without bound. The Content-Length is reserved
 *                               from the headers and returned when the
 *                               request ends, however it ends. One source
 *                               (keyed as for the rate limit) holds at most a
 *                               quarter of the budget (and always room for one
 *                               body at the cap): else a few stalled bodies
 *                               from one source, within its rate limit, would
 *                               turn every machine's answer away.
 *       request-deadline        no answer: the connection is closed when a
 *                               request is not in (headers and body) within
 *                               request_deadline_seconds of its start, the
 *                               connection's accept for its first request (so
 *                               the TLS handshake counts) and its first bytes
 *                               for a later one. The idle timeout is reset by
 *                               any byte, so one byte a second would otherwise
 *                               hold a connection for ever. The handler's own
 *                               time does not count; the wait between
 *                               requests on a kept-alive connection has only
 *                               the idle timeout (timeout_seconds).
 *
 * Each connection (and request) is also bounded by the connection limits
 * (max_connections, max_per_ip).
 *
 * A handler's own 4xx names its reason from the same counter's set
 * (malformed-json, malformed-message, unsupported-version, field-too-large;
 * anything else counts as "other"). Every one of these (the 503 and the
 * cut connections too) increments
 * fleetd_http_rejected_total{reason} and none is journaled: a request that
 * proves nothing must not be able to fill the journal.
 *
 *       write-deadline          no answer: a reply with a write deadline
 *                               (fleet_http_reply.write_deadline_ms) still
 *                               being written then is cut like a late
 *                               request.
 *
 * Built-in routes: GET /healthz (200 "ok\n" while the health callback says
 * so, 503 "unavailable\n" otherwise or without a callback) and GET /metrics
 * (the registry in Prometheus text format 0.0.4).
 */
#ifndef FLEET_HTTP_SERVER_H
#define FLEET_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleetd/obs/metrics.h"
#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_HTTP_MAX_ROUTES 32
#define FLEET_HTTP_MAX_PATH 128

#define FLEET_HTTP_DEFAULT_DEADLINE 10
#define FLEET_HTTP_DEFAULT_BODY_MEMORY ((size_t)16 << 20)
/* One source holds at most 1/this of the body budget (but always room for
 * one body at the cap): else a single source could keep the whole budget
 * with a few stalled bodies, within its rate limit, and every machine's
 * answer would be turned away. */
#define FLEET_HTTP_BODY_SHARE_DIV 4
#define FLEET_HTTP_DEFAULT_RATE 5
#define FLEET_HTTP_DEFAULT_BURST 20

/* The GnuTLS priority string: TLS 1.3 and 1.2, AEAD ciphers, ECDHE only.
 * X25519 is the first group: it is the one key share libcurl (OpenSSL)
 * and most clients send, so a TLS 1.3 handshake needs no HelloRetryRequest
 * (with SECURE128's own order, P-256 first under %SERVER_PRECEDENCE, every
 * such client was sent one: a second ClientHello and a round trip), and
 * the cheaper exchange. The same groups as SECURE128's 128-bit ones. */
#define FLEET_HTTP_TLS_PRIORITIES                                                   \
	"SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:" \
	"+AES-128-GCM:+CHACHA20-POLY1305:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"          \
	"-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"               \
	"+GROUP-SECP521R1:%SERVER_PRECEDENCE"

struct fleet_http_config {
	const char *bind_address; /* an IP literal; NULL: "::" (IPv6 and IPv4) */
	uint16_t port;            /* 0: any free port (fleet_http_port says which) */
	const char *tls_cert_file; /* PEM: the certificate, then its chain */
	const char *tls_key_file;  /* PEM, unencrypted; readable by fleetd alone */
	const char *tls_priorities; /* NULL: FLEET_HTTP_TLS_PRIORITIES */
	unsigned threads;           /* worker threads; 0: 4 */
	unsigned max_connections;   /* 0: 256 */
	unsigned max_per_ip;        /* 0: 16 */
	unsigned timeout_seconds;   /* idle connection timeout; 0: 30 */
	size_t max_body;            /* 0: FLEET_WIRE_MAX_BODY */
	unsigned request_deadline_seconds; /* headers and body in; 0: 10 */
	size_t body_memory;         /* bodies in flight; 0: 16 MiB; >= max_body */
	unsigned rate_per_second;   /* POSTs per source; 0: 5 */
	unsigned rate_burst;        /* bucket size; 0: 20 */
	bool no_metrics;            /* true: no /metrics route (metrics.enabled: false) */
};

/* One query argument as sent: nothing percent-decoded; value NULL for a
 * key without '=' ("?code"). */
struct fleet_http_arg {
	const char *key;
	const char *value;
};
#define FLEET_HTTP_MAX_ARGS 8

struct fleet_http_request {
	const char *method;
	const char *path;
	const uint8_t *body; /* NULL for a request without one */
	size_t body_len;
	const char *peer; /* the client's address, numeric */
	/* The query's arguments in order (libmicrohttpd's split at '&' and
	 * the first '='), at most FLEET_HTTP_MAX_ARGS; args_over: there were
	 * more. A route that takes none may ignore them (every route did
	 * before GET /config); one that takes some must refuse what it does
	 * not know. */
	const struct fleet_http_arg *args;
	size_t n_args;
	bool args_over;
	long long started_ms; /* CLOCK_MONOTONIC ms when the request's headers were in */
};

/*
 * A completion hook (fleet_http_reply.done): called exactly once for a
 * reply that set it, on the server thread that served the request, when
 * the request is over. ok is true only when libmicrohttpd wrote the whole
 * answer (MHD_REQUEST_TERMINATED_COMPLETED_OK) and no deadline cut the
 * connection; fd is then the connection's socket, still open: with
 * Connection: close, libmicrohttpd 0.9.75 calls it from
 * MHD_connection_close_ after only shutting down the sending side (TLS
 * close_notify, or SHUT_WR) and closes the descriptor after the hook
 * returns. ok false: fd -1, or the socket for what it is worth (the hook
 * must not trust it). Written whole means handed to the kernel, not
 * received: a hook that needs the peer's acknowledgement waits for it on
 * fd itself (fleetd/provision/deliver.h). The hook blocks that server
 * thread, and every other connection it serves, for as long as it runs:
 * it must bound its wait.
 */
typedef void (*fleet_http_done_fn)(void *arg, bool ok, int fd);

struct fleet_http_reply {
	struct fleet_buf body;    /* initialised empty for the handler; the
				   * handler may fb_init_secret it: then the
				   * server's copy of the answer is wiped too */
	const char *content_type; /* NULL: application/json */
	const char *reason;       /* for a 4xx: what fleetd_http_rejected_total counts */
	bool close;               /* Connection: close */
	fleet_http_done_fn done;  /* NULL: none; see fleet_http_done_fn */
	void *done_arg;
	/* CLOCK_MONOTONIC ms (0: none): the sweep shuts the connection down
	 * when the answer is still being written then (counted
	 * write-deadline); the hook then gets ok false. */
	long long write_deadline_ms;
};

/* Returns the HTTP status (200..599; anything else is answered as 500).
 * Runs on a server thread: ctx must be safe to use from several at once. */
typedef int (*fleet_http_handler)(void *ctx, const struct fleet_http_request *req,
				  struct fleet_http_reply *reply);
typedef bool (*fleet_http_health)(void *ctx);

struct fleet_http;

/* Copies what it needs from cfg and registers the server's metrics in
 * metrics (which must outlive the server). Starts nothing. */
struct fleet_http *fleet_http_new(const struct fleet_http_config *cfg,
				  struct fleet_metrics *metrics, struct fleet_errctx *ec);

/* Route method+path to handler; before fleet_http_start only. Paths are
 * exact ("/v1/attest/intake") and compared with the request's path as sent:
 * nothing is percent-decoded, so "/v1/attest/%69ntake" is no route. A
 * path+method pair is registered once; HEAD cannot be registered. */
fleet_err fleet_http_route(struct fleet_http *s, const char *method, const char *path,
			   fleet_http_handler handler, void *ctx);

/* Requests to this route cost a token of their source's bucket too, as
 * every POST does (a GET whose handler reads the store for whatever it is
 * sent, GET /config). FLEET_E_NOT_FOUND when it is not registered. */
fleet_err fleet_http_route_rate_limit(struct fleet_http *s, const char *method, const char *path);

void fleet_http_set_health(struct fleet_http *s, fleet_http_health fn, void *ctx);

/* Read the key and certificate, bind, start serving. On failure ec says
 * why (including what libmicrohttpd or GnuTLS reported). */
fleet_err fleet_http_start(struct fleet_http *s, struct fleet_errctx *ec);

/* The bound port (useful with port 0); 0 when not started. */
uint16_t fleet_http_port(const struct fleet_http *s);

/* Stop accepting, close connections, wait for running handlers. Safe to
 * call twice, and on a server never started. */
void fleet_http_stop(struct fleet_http *s);

/* Stops if needed, then frees (the key material wiped). */
void fleet_http_free(struct fleet_http *s);

/* The reasons fleetd_http_rejected_total counts, NULL-terminated. */
extern const char *const fleet_http_reject_reasons[];

#endif
