/*
 * transport_curl.h: HTTPS to fleetd with libcurl.
 *
 * fleetd is pinned: the only trust anchor is fleetd's CA certificate (a PEM
 * file, or the bytes from the kernel command line); the system store and
 * any CA directory are not consulted, peer and host name verification are
 * on, only https is spoken and redirects are not followed.
 *
 * Connection errors, timeouts and 5xx answers are retried with capped
 * exponential backoff and full jitter: before attempt n+1 the client sleeps
 * a uniformly random time in [0, min(cap, base * 2^(n-1))]. A 4xx is never
 * retried (fleetd has read the request and will read it the same way
 * again), and neither is a certificate that does not verify against the pin.
 *
 * With keep_alive, one connection for the whole run: every request goes
 * through one libcurl handle, so the rounds of an attestation (intake,
 * answer, confirm) share one TLS connection (HTTP/1.1 keep-alive) and one
 * handshake (tink-attest). Without it (fleet-join, tpm-reattest) each
 * request has its own connection, so a load balancer may hand each round
 * to another replica, as the join's "any replica can finish" wants. Each request
 * still verifies the pin: libcurl reuses only a connection it verified with
 * these very options. After a failed attempt the handle, and with it the
 * connection, is dropped, so a retry connects afresh.
 */
#ifndef TINK_TRANSPORT_CURL_H
#define TINK_TRANSPORT_CURL_H

#include "lib/buf.h"
#include "tink-attest/transport.h"

struct tink_curl {
	char base_url[1024];     /* "https://host:port", no trailing slash */
	const char *ca_file;     /* PEM file; or */
	struct fleet_buf ca_pem; /* PEM bytes (from the kernel command line) */
	unsigned connect_timeout_s;
	unsigned timeout_s;      /* per attempt */
	unsigned attempts;       /* >= 1 */
	double backoff_base_s;   /* 0.5 */
	double backoff_cap_s;    /* 30 */
	int keep_alive;          /* 1: one connection for every request (above) */
	void *handle;            /* the CURL handle; NULL until the first request */
};

/* Global libcurl setup; once per process, before any thread. 0 or -1. */
int tink_curl_global_init(void);
struct tink_transport tink_curl_transport(struct tink_curl *c);
/* The handle and its connection closed; c may be used again (a new one). */
void tink_curl_close(struct tink_curl *c);

#endif
