/* http_client.h: the HTTPS client the e2e tests use against fleetd's
 * listener: libcurl trusting one CA file, and a raw OpenSSL probe for the
 * TLS versions the server accepts. */
#ifndef FLEET_TEST_HTTP_CLIENT_H
#define FLEET_TEST_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
