/*
 * deliver.h: GET /config?code=<64 lowercase hex>, the one-time delivery of
 * a rendered configuration (spec 004 "Deliver the configuration";
 * docs/provision.md, "Delivery").
 *
 * The code is the hex of 32 random bytes; the store keeps only the SHA-256
 * of those bytes (fleet_store_provision_config_for_code). The rules:
 *
 *   400 malformed-query       any query but exactly one argument "code"
 *                             holding 64 lowercase hex digits (a second
 *                             "code", any other argument, "?code" without a
 *                             value): counted by the server, no event, no
 *                             store read: a request that proves nothing
 *                             must not fill the journal
 *   404 unknown-code          no provision has this code; no event
 *   409 delivery-in-progress  another connection is delivering this code
 *                             now (an in-memory lease per provision id)
 *   409 not-started           the run is rendered, its Workflow not started
 *   410 code-burned           delivered, done or dropped: never again,
 *                             across restarts (the store keeps the hash)
 *   410 expired               the run is at or past its expires_at
 *   200                       the configuration, application/yaml,
 *                             Cache-Control: no-store, Connection: close
 *
 * A known code (409, 410, 200 and how the 200 ended) is reported through
 * the event callback with the device's name and never the code, for the
 * caller to journal. HEAD, conditional and Range requests never reach
 * here: the server refuses them first (fleetd/http/server.h).
 *
 * Fully acknowledged consumption. The 200 leaves a lease behind it, and
 * the code is consumed (fleet_store_provision_consume: one transaction
 * that wipes the config and makes the device active) only when
 * fleet_deliver_done is told the server wrote the answer whole AND the
 * socket's send queue has drained: ioctl(fd, SIOCOUTQ) is the bytes not
 * yet acknowledged by the peer's TCP (write_seq - snd_una, FIN included),
 * and it must reach 0 before the write deadline (write_deadline_seconds
 * from the request's headers; default FLEET_DELIVER_DEFAULT_DEADLINE). A
 * closed or reset connection, libmicrohttpd reporting anything but
 * MHD_REQUEST_TERMINATED_COMPLETED_OK, a cut, or the deadline: not
 * consumed, the lease released, and a retry is served. kill -9 at any
 * point leaves the row STARTED with its config or consumed, never both:
 * the consumption is one store transaction after the last check.
 *
 * What was found empirically with libmicrohttpd 0.9.75 + GnuTLS
 * (tests/e2e/test_config_delivery.c checks each): the completion
 * notification for a Connection: close answer comes from
 * MHD_connection_close_, after it sent TLS close_notify (gnutls_bye
 * GNUTLS_SHUT_WR; shutdown(SHUT_WR) only when that fails), while the
 * descriptor is still open and the TCP connection still ESTABLISHED (MHD
 * closes it after the callback); MHD reports COMPLETED_OK as
 * soon as the last byte is in the kernel's send buffer, so with a client
 * whose receive window is full the queue still holds most of a 256 KiB
 * answer then; a peer that resets the connection leaves SIOCOUTQ above 0
 * for good (snd_una never moves again), so the wait also stops when the
 * socket is in TCP_CLOSE. What an acknowledgement proves: the peer's
 * kernel holds every byte, not that its program read them; a client that
 * then dies before reading has consumed its code (the installer retries
 * the GET only on a failed transfer).
 *
 * The wait blocks the server thread that served the request (and the
 * other connections libmicrohttpd gave that thread) for at most the
 * write deadline, polling with sleeps of 1..20 ms. Only a caller holding a
 * valid code of a started run gets that far, and only one connection per
 * run at a time (the lease), so the number of blocked threads is bounded
 * by the started runs, and each by the deadline.
 */
#ifndef FLEET_PROVISION_DELIVER_H
#define FLEET_PROVISION_DELIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleetd/store/store.h"
#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_DELIVER_DEFAULT_DEADLINE 30 /* seconds, from the request's headers */
#define FLEET_DELIVER_CODE_HEX 64
#define FLEET_DELIVER_CONTENT_TYPE "application/yaml"

/* One query argument as the server hands it over (key, value as sent;
 * value NULL for a key without '='). */
struct fleet_deliver_arg {
	const char *key;
	const char *value;
};

/* The query's one rule: exactly one argument, "code", 64 lowercase hex;
 * more: there were more arguments than were passed. code gets the 32
 * bytes. FLEET_E_MALFORMED otherwise (the code not written). */
fleet_err fleet_deliver_parse_query(const struct fleet_deliver_arg *args, size_t n, bool more,
				    uint8_t code[32]);

enum fleet_deliver_event_kind {
	FLEET_DELIVER_REFUSED = 1, /* a known code refused: reason says why (409, 410) */
	FLEET_DELIVER_SERVING,     /* the 200 is going out */
	FLEET_DELIVER_DELIVERED,   /* acknowledged and consumed */
	FLEET_DELIVER_INCOMPLETE,  /* not consumed: reason says why; a retry is served */
};

struct fleet_deliver_event {
	enum fleet_deliver_event_kind kind;
	int64_t provision_id;
	const char *device; /* the store's name for it ("" when it could not be read) */
	const char *reason; /* REFUSED: the 4xx reason; INCOMPLETE: "connection-closed"
			     * (not written whole), "not-acknowledged" (reset, or
			     * the queue unreadable), "write-deadline",
			     * "consume-conflict" (dropped meanwhile), "store-error";
			     * else NULL */
	const char *peer;   /* the client's address, numeric */
	size_t bytes;       /* SERVING, DELIVERED: the configuration's length */
	long long wait_ms;  /* DELIVERED, INCOMPLETE: from the request's headers */
};

struct fleet_deliver_config {
	struct fleet_store *store;       /* read-write; must outlive the deliverer */
	unsigned write_deadline_seconds; /* 0: FLEET_DELIVER_DEFAULT_DEADLINE */
	/* Called on the server thread, never with a lock held; may be NULL. */
	void (*event)(void *ctx, const struct fleet_deliver_event *ev);
	void *event_ctx;
};

struct fleet_deliver;
struct fleet_deliver_lease;

struct fleet_deliver *fleet_deliver_new(const struct fleet_deliver_config *cfg);
/* No lease may be outstanding (stop the HTTP server first: it ends every
 * request, and so calls fleet_deliver_done for each). */
void fleet_deliver_free(struct fleet_deliver *d);

struct fleet_deliver_result {
	const char *reason;       /* a status other than 200: the counter's reason */
	const char *content_type; /* FLEET_DELIVER_CONTENT_TYPE or "application/json" */
	bool close;               /* true: answer with Connection: close */
	/* 200 only: pass to fleet_deliver_done exactly once, whatever happens */
	struct fleet_deliver_lease *lease;
	long long write_deadline_ms; /* 200: CLOCK_MONOTONIC ms */
};

/*
 * One GET /config. body must be empty: for a 200 it is made a secret
 * buffer (fb_init_secret) holding the configuration, else it gets
 * {"error":"<reason>"}. started_ms: the request's headers, CLOCK_MONOTONIC
 * ms (the write deadline counts from it). Returns the status (200, 400,
 * 404, 409, 410; 503 "busy" when the store is busy, 500 when it failed).
 */
int fleet_deliver_get(struct fleet_deliver *d, const struct fleet_deliver_arg *args, size_t n,
		      bool more, long long started_ms, const char *peer, struct fleet_buf *body,
		      struct fleet_deliver_result *r);

/*
 * The end of a 200: its signature is fleet_http_done_fn's
 * (fleetd/http/server.h), so the route passes it as it is. ok: the server
 * wrote the whole answer; fd: the connection's socket, still open. Waits
 * for SIOCOUTQ 0 (bounded by the write deadline), then consumes the code,
 * or not; releases the lease either way.
 */
void fleet_deliver_done(void *lease, bool ok, int fd);

/*
 * The route, for the daemon (fleetd/provision may not include the HTTP
 * server; tests/e2e/test_config_delivery.c has the same):
 *
 *   static int config_route(void *ctx, const struct fleet_http_request *req,
 *                           struct fleet_http_reply *reply)
 *   {
 *           struct fleet_deliver_arg a[FLEET_HTTP_MAX_ARGS];
 *           for (size_t i = 0; i < req->n_args; i++)
 *                   a[i] = (struct fleet_deliver_arg){req->args[i].key, req->args[i].value};
 *           struct fleet_deliver_result r;
 *           int status = fleet_deliver_get(ctx, a, req->n_args, req->args_over,
 *                                          req->started_ms, req->peer, &reply->body, &r);
 *           reply->reason = r.reason;
 *           reply->content_type = r.content_type;
 *           reply->close = r.close;
 *           reply->done = r.lease ? fleet_deliver_done : NULL;
 *           reply->done_arg = r.lease;
 *           reply->write_deadline_ms = r.write_deadline_ms;
 *           return status;
 *   }
 *   fleet_http_route(http, "GET", "/config", config_route, deliverer);
 */

#endif
