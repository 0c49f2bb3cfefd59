/*
 * transport.h: how tink-attest reaches fleetd. The program uses the libcurl
 * transport (transport_curl.c); the tests hand in one that calls fleetd's
 * round functions in-process. The session code sees only this.
 */
#ifndef TINK_TRANSPORT_H
#define TINK_TRANSPORT_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

enum tink_tx_result {
	TINK_TX_OK = 0,      /* an HTTP answer arrived; *http_status says which */
	TINK_TX_UNREACHABLE, /* no answer after every attempt (or a 5xx to the last) */
	TINK_TX_FATAL,       /* an answer that can never succeed: TLS pin, oversize */
};

struct tink_transport {
	/*
	 * POST body (JSON) to path ("/v1/attest/intake", ...). On TINK_TX_OK,
	 * reply holds the body (at most max_reply bytes) and *http_status the
	 * status. Otherwise ec (lib/fleet_err.h) says what went wrong: its
	 * detail the transport's sentence (libcurl's, "HTTP 503", "fleetd's
	 * answer is over N bytes"), its code FLEET_E_IO, the lib layer's
	 * unavailable for a 5xx, or FLEET_E_TOO_LARGE.
	 */
	enum tink_tx_result (*post)(void *ctx, const char *path, const struct fleet_buf *body,
				    size_t max_reply, struct fleet_buf *reply, long *http_status,
				    struct fleet_errctx *ec);
	void *ctx;
};

#endif
