/* server_impl.h: the listener's state, shared by server.c (lifecycle, TLS)
 * and server_request.c (one request); not for callers. */
#ifndef FLEET_HTTP_SERVER_IMPL_H
#define FLEET_HTTP_SERVER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "fleetd/http/server.h"

struct fleet_http_route_entry {
	char method[16];
	char path[FLEET_HTTP_MAX_PATH + 1];
	fleet_http_handler handler;
	void *ctx;
	bool rate_limited; /* POST always; a GET when fleet_http_route_rate_limit says */
};

/* Where a connection is, for the request deadline (server_guard.c). */
enum fleet_http_conn_state {
	FLEET_CONN_REQUEST,  /* a request is arriving: its deadline runs */
	FLEET_CONN_HANDLING, /* complete (or refused): the handler and the answer */
	FLEET_CONN_IDLE,     /* between requests: only the idle timeout applies */
};

/* One per connection, from libmicrohttpd's connection notification (its
 * socket context) until the connection closes; on the server's list. */
struct fleet_http_conn {
	struct fleet_http_conn *prev, *next;
	int fd;
	enum fleet_http_conn_state state;
	long long deadline_ms;  /* monotonic; FLEET_CONN_REQUEST only */
	uint64_t rx_at_idle;    /* TCP bytes received when it went idle */
	bool cut;               /* the sweep shut it down at its deadline */
	long long write_deadline_ms; /* FLEET_CONN_HANDLING: 0, or when the answer must be out */
};

/* One source's token bucket; the table is FLEET_HTTP_RATE_SOURCES of them. */
struct fleet_http_rate_entry {
	uint8_t key[16];      /* IPv4 (mapped) or the IPv6 /64 */
	double tokens;
	long long last_ms;
	uint32_t hash_next;   /* index + 1 into the table; 0 ends the chain */
	uint32_t lru_prev, lru_next; /* index + 1; head is the most recent */
};

#define FLEET_HTTP_RATE_SOURCES 4096
#define FLEET_HTTP_RATE_BUCKETS 8192

struct fleet_http {
	/* Configuration, with the defaults filled in and strings copied. */
	char bind_address[64];
	uint16_t port;
	char *cert_file;
	char *key_file;
	char *priorities;
	unsigned threads, max_connections, max_per_ip, timeout_seconds;
	size_t max_body;
	unsigned request_deadline_seconds;
	size_t body_memory;
	unsigned rate_per_second, rate_burst;

	struct fleet_http_route_entry routes[FLEET_HTTP_MAX_ROUTES];
	size_t n_routes;
	fleet_http_health health;
	void *health_ctx;

	struct fleet_metrics *metrics;
	struct fleet_metric *rejected;  /* fleetd_http_rejected_total{reason} */
	struct fleet_metric *responses; /* fleetd_http_responses_total{code} */
	struct fleet_metric *internal;  /* fleetd_http_internal_errors_total */
	struct fleet_metric *reserved_gauge; /* fleetd_http_body_bytes_reserved */

	/* server_guard.c: the deadline sweep, the body budget, the rate
	 * table. guard is held briefly; never while calling libmicrohttpd. */
	pthread_mutex_t guard;
	pthread_cond_t sweep_wake;
	pthread_t sweeper;
	bool sweeper_running, sweeper_stop;
	struct fleet_http_conn *conns;
	_Atomic int cuts_open; /* connections cut and not yet closed */
	size_t body_reserved;
	/* Per source (as the rate table keys them): what its bodies in flight
	 * hold. At most one entry per connection, so max_connections + 1. */
	struct fleet_http_body_source {
		uint8_t key[16];
		size_t bytes;
	} *body_sources;
	size_t body_sources_cap;
	struct fleet_http_rate_entry *rate;   /* FLEET_HTTP_RATE_SOURCES */
	uint32_t *rate_buckets;               /* FLEET_HTTP_RATE_BUCKETS heads */
	uint32_t rate_used, rate_lru_head, rate_lru_tail;
	uint64_t rate_seed;

	struct MHD_Daemon *daemon;
	struct fleet_buf cert, key; /* NUL-terminated PEM; the key a secret buffer (wiped) */
	uint16_t bound_port;
	_Atomic bool serving;          /* false while starting: logger keeps the text */
	char start_error[256];         /* libmicrohttpd's words while starting */
	_Atomic long long last_internal_log; /* monotonic seconds */
};

/* server_request.c */
enum MHD_Result fleet_http_on_request(void *cls, struct MHD_Connection *c, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_size,
				      void **req_cls);
void fleet_http_on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			     enum MHD_RequestTerminationCode toe);

/* server_guard.c */
fleet_err fleet_http_guard_init(struct fleet_http *s, struct fleet_errctx *ec);
void fleet_http_guard_free(struct fleet_http *s);
fleet_err fleet_http_sweeper_start(struct fleet_http *s, struct fleet_errctx *ec);
void fleet_http_sweeper_stop(struct fleet_http *s);
void fleet_http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			      enum MHD_ConnectionNotificationCode toe);
long long fleet_http_mono_ms(void);
/* The connection's record, or NULL (none could be allocated). */
struct fleet_http_conn *fleet_http_conn_of(struct MHD_Connection *c);
/* Headers are in: the request's clock runs from the connection's accept
 * (first request) or from its first bytes (seen by the sweep); false when
 * the connection was already cut. */
bool fleet_http_conn_request(struct fleet_http *s, struct fleet_http_conn *k);
/* The body is in: the deadline stops. False when it was already cut. */
bool fleet_http_conn_handling(struct fleet_http *s, struct fleet_http_conn *k);
/* The answer must be written by deadline_ms (monotonic; 0: no deadline). */
void fleet_http_conn_write_deadline(struct fleet_http *s, struct fleet_http_conn *k,
				    long long deadline_ms);
/* Whether the sweep cut the connection. */
bool fleet_http_conn_was_cut(struct fleet_http *s, struct fleet_http_conn *k);
/* The request ended (any way): the connection is idle until the next. */
void fleet_http_conn_idle(struct fleet_http *s, struct fleet_http_conn *k);
/* body_memory / FLEET_HTTP_BODY_SHARE_DIV, but at least one body at the cap. */
size_t fleet_http_body_share(const struct fleet_http *s);
/* Reserve n bytes of the body budget for the source at sa (its key out);
 * false: it would pass the budget or the source's share. */
bool fleet_http_budget_take(struct fleet_http *s, const struct sockaddr *sa, size_t n,
			    uint8_t key[16]);
void fleet_http_budget_return(struct fleet_http *s, const uint8_t key[16], size_t n);
/* One token from the client's bucket; false: none (then *retry_after is
 * the whole seconds until there is one, at least 1). */
bool fleet_http_rate_take(struct fleet_http *s, const struct sockaddr *sa,
			  unsigned *retry_after);

#endif
