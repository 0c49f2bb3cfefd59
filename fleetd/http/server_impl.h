/* server_impl.h: the listener's state, shared by server.c (lifecycle, TLS)
 * and server_request.c (one request); not for callers. */
#ifndef FLEET_HTTP_SERVER_IMPL_H
#define FLEET_HTTP_SERVER_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include <microhttpd.h>

#include "fleetd/http/server.h"

struct fleet_http_route_entry {
	char method[16];
	char path[FLEET_HTTP_MAX_PATH + 1];
	fleet_http_handler handler;
	void *ctx;
};

struct fleet_http {
	/* Configuration, with the defaults filled in and strings copied. */
	char bind_address[64];
	uint16_t port;
	char *cert_file;
	char *key_file;
	char *priorities;
	unsigned threads, max_connections, max_per_ip, timeout_seconds;
	size_t max_body;

	struct fleet_http_route_entry routes[FLEET_HTTP_MAX_ROUTES];
	size_t n_routes;
	fleet_http_health health;
	void *health_ctx;

	struct fleet_metrics *metrics;
	struct fleet_metric *rejected;  /* fleetd_http_rejected_total{reason} */
	struct fleet_metric *responses; /* fleetd_http_responses_total{code} */
	struct fleet_metric *internal;  /* fleetd_http_internal_errors_total */

	struct MHD_Daemon *daemon;
	struct fleet_buf cert, key; /* NUL-terminated PEM; the key is wiped on free */
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

#endif
