/*
 * kube_internal.h: what the client's files share (not part of the
 * contract, kube.h).
 */
#ifndef FLEETD_KUBE_KUBE_INTERNAL_H
#define FLEETD_KUBE_KUBE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "fleetd/kube/kube.h"
#include "fleetd/kube/kube_config.h"

struct fleet_kube {
	struct fleet_kube_auth auth;
	long timeout_ms;
	size_t max_response;
	unsigned watch_timeout; /* seconds, K10 */
	unsigned list_page;     /* K8 */
};

/* What one request streams to: with on_line set and a 200 answer, the
 * body goes line by line to on_line (K13's cap on a line) instead of into
 * resp; on_line returns false to end the transfer. stop, when not NULL,
 * is polled by curl's progress callback (K14). total_ms 0: k's timeout. */
struct kube_stream {
	bool (*on_line)(void *ctx, const char *line, size_t len);
	void *ctx;
	volatile int *stop;
	long total_ms;
	bool stopped;      /* out: *stop ended it */
	bool line_too_big; /* out: K13 */
	bool ended_by_cb;  /* out: on_line returned false */
};

fleet_err kube_request_ex(struct fleet_kube *k, const char *method, const char *path,
			  const char *content_type, const void *body, size_t body_len,
			  long *status, struct fleet_buf *resp, struct kube_stream *st,
			  struct fleet_errctx *ec);

/* K6: an answer's status and body to an error (FLEET_OK for 2xx). */
fleet_err kube_status_err(const char *method, const char *path, long status,
			  const struct fleet_buf *body, struct fleet_errctx *ec);

/* K8 with a query and a stop flag (the watch's relist). */
fleet_err kube_list_ex(struct fleet_kube *k, const char *collection_path, const char *query,
		       volatile int *stop, json_t **list, char *rv, size_t rvlen,
		       struct fleet_errctx *ec);

/* A query string's bytes: printable ASCII without space, '#', '\\'. */
int kube_query_ok(const char *q);

#endif
