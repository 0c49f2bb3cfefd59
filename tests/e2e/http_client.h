/* http_client.h: the HTTPS client the e2e tests use against fleetd's
 * listener: libcurl trusting one CA file, a raw OpenSSL probe for the
 * TLS versions the server accepts, and a raw TLS connection that sends a
 * request as slowly as a test wants. */
#ifndef FLEET_TEST_HTTP_CLIENT_H
#define FLEET_TEST_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct http_client {
	void *curl; /* CURL *, reused so connections are kept alive */
	uint16_t port;
	char ca[256];
	char source[48]; /* "": any; else the loopback address to send from */
};

struct http_req {
	const char *method; /* GET, POST, HEAD, DELETE, ... */
	const char *path;
	const char *content_type; /* NULL: curl's default for a POST */
	bool no_content_type;     /* send no Content-Type at all */
	const void *body;
	size_t len;
	long long stream_len; /* > 0: a chunked body of this many bytes instead */
	const char *header;   /* one extra "Name: value" */
};

struct http_reply {
	char *body; /* NUL-terminated; never NULL after http_do */
	size_t len;
	char content_type[128];
	char allow[64];
	char retry_after[16];
	long long uploaded; /* request body bytes curl sent */
};

void http_client_init(struct http_client *c, uint16_t port, const char *ca_file);
void http_client_free(struct http_client *c);

/* The status, or -1 when no HTTP answer came (connect or TLS failure). */
long http_do(struct http_client *c, const struct http_req *req, struct http_reply *r);
long http_get(struct http_client *c, const char *path, const char *header, struct http_reply *r);
long http_post(struct http_client *c, const char *path, const char *content_type,
	       const void *body, size_t len, struct http_reply *r);
void http_reply_free(struct http_reply *r);

/* A TLS handshake with 127.0.0.1:port offering only versions min..max
 * (OpenSSL's TLS1_x_VERSION), trusting ca_file: 1 done, 0 refused. */
int tls_probe(uint16_t port, const char *ca_file, int min_version, int max_version);

/* A raw TLS connection to 127.0.0.1:port, made non-blocking once the
 * handshake is done (so a TLS 1.3 session ticket cannot block a read). */
struct raw_tls {
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
};

void raw_tls_open(struct raw_tls *t, uint16_t port, const char *ca);
void raw_tls_close(struct raw_tls *t);
/* Wait up to ms for the peer: 1 data came (appended to buf), 0 nothing,
 * -1 the connection is closed. */
int raw_tls_wait(struct raw_tls *t, int ms, char *buf, size_t cap, size_t *len);
/* Send text a byte a second, watching for the connection to close; then
 * go on watching until limit_s. Returns the seconds from t0 (http_now_s)
 * at which it closed, or -1 if it did not (or if an answer came instead). */
double raw_tls_trickle(struct raw_tls *t, const char *text, double t0, double limit_s);
/* One whole request on t; its status (0: none within 5 s). */
int raw_tls_request(struct raw_tls *t, const char *req);
/* CLOCK_MONOTONIC in seconds. */
double http_now_s(void);

#endif
