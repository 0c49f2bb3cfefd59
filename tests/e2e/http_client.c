/* http_client.c: see http_client.h. */
#include "tests/e2e/http_client.h"

#include "tests/testutil.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/ssl.h>

void http_client_init(struct http_client *c, uint16_t port, const char *ca_file)
{
	memset(c, 0, sizeof(*c));
	c->curl = curl_easy_init();
	c->port = port;
	snprintf(c->ca, sizeof(c->ca), "%s", ca_file);
}

void http_client_free(struct http_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct http_reply *r = ud;
	size_t k = size * n;
	char *nb = realloc(r->body, r->len + k + 1);
	if (!nb)
		return 0;
	memcpy(nb + r->len, p, k);
	r->body = nb;
	r->len += k;
	r->body[r->len] = '\0';
	return k;
}

/* Keep one header's value ("Name: value\r\n"). */
static void keep_header(const char *line, size_t n, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	if (n <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	const char *v = line + nl + 1;
	const char *end = line + n;
	while (v < end && *v == ' ')
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n'))
		end--;
	snprintf(out, cap, "%.*s", (int)(end - v), v);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct http_reply *r = ud;
	keep_header(p, size * n, "Content-Type", r->content_type, sizeof(r->content_type));
	keep_header(p, size * n, "Allow", r->allow, sizeof(r->allow));
	keep_header(p, size * n, "Retry-After", r->retry_after, sizeof(r->retry_after));
	return size * n;
}

struct stream {
	long long left;
};

static size_t on_read(char *p, size_t size, size_t n, void *ud)
{
	struct stream *s = ud;
	size_t k = size * n;
	if ((long long)k > s->left)
		k = (size_t)s->left;
	memset(p, ' ', k);
	s->left -= (long long)k;
	return k;
}

long http_do(struct http_client *c, const struct http_req *req, struct http_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->body = calloc(1, 1);
	CURL *h = c->curl;
	curl_easy_reset(h);
	char url[300];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", (unsigned)c->port, req->path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	char source[64];
	if (c->source[0]) {
		snprintf(source, sizeof(source), "host!%s", c->source);
		curl_easy_setopt(h, CURLOPT_INTERFACE, source);
	}

	struct curl_slist *hdrs = NULL;
	char ct[160];
	if (req->no_content_type)
		hdrs = curl_slist_append(hdrs, "Content-Type:");
	else if (req->content_type) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", req->content_type);
		hdrs = curl_slist_append(hdrs, ct);
	}
	if (req->header)
		hdrs = curl_slist_append(hdrs, req->header);

	struct stream st = {req->stream_len};
	if (req->stream_len > 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, &st);
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	} else if (req->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
	}
	if (strcmp(req->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(req->method, "GET") != 0 || req->body)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);

	CURLcode rc = curl_easy_perform(h);
	long status = -1;
	curl_off_t up = 0;
	curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up);
	r->uploaded = (long long)up;
	/* A server may answer and close while a body is still going up: the
	 * answer counts even when curl then reports the send failing. */
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK && status == 0)
		status = -1;
	curl_slist_free_all(hdrs);
	return status;
}

long http_get(struct http_client *c, const char *path, const char *header, struct http_reply *r)
{
	struct http_req req = {.method = "GET", .path = path, .header = header};
	return http_do(c, &req, r);
}

long http_post(struct http_client *c, const char *path, const char *content_type,
	       const void *body, size_t len, struct http_reply *r)
{
	struct http_req req = {.method = "POST", .path = path, .content_type = content_type,
			       .body = body, .len = len};
	return http_do(c, &req, r);
}

void http_reply_free(struct http_reply *r)
{
	free(r->body);
	r->body = NULL;
}

int tls_probe(uint16_t port, const char *ca_file, int min_version, int max_version)
{
	int ok = 0;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!ctx || fd < 0)
		goto out;
	/* Level 0 so this client may offer TLS 1.0/1.1 at all (OpenSSL 3
	 * refuses them at level 1 and above): the refusal must be the server's. */
	SSL_CTX_set_security_level(ctx, 0);
	SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0");
	SSL_CTX_set_min_proto_version(ctx, min_version);
	SSL_CTX_set_max_proto_version(ctx, max_version);
	SSL_CTX_load_verify_locations(ctx, ca_file, NULL);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto out;
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	ok = SSL_connect(ssl) == 1;
	if (ok)
		SSL_shutdown(ssl);
	SSL_free(ssl);
out:
	if (fd >= 0)
		close(fd);
	SSL_CTX_free(ctx);
	return ok;
}

/* ---- raw TLS ------------------------------------------------------------- */

double http_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void raw_tls_open(struct raw_tls *t, uint16_t port, const char *ca)
{
	t->ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(t->ctx);
	assert_int_equal(SSL_CTX_load_verify_locations(t->ctx, ca, NULL), 1);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	t->fd = socket(AF_INET, SOCK_STREAM, 0);
	/* bounded: a listener that accepts and never answers fails the test
	 * here, it does not hang it until ctest's timeout hides where */
	struct timeval tv = {.tv_sec = 10};
	assert_int_equal(setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(t->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	t->ssl = SSL_new(t->ctx);
	SSL_set_fd(t->ssl, t->fd);
	assert_int_equal(SSL_connect(t->ssl), 1);
	assert_int_equal(fcntl(t->fd, F_SETFL, fcntl(t->fd, F_GETFL) | O_NONBLOCK), 0);
}

void raw_tls_close(struct raw_tls *t)
{
	SSL_free(t->ssl);
	close(t->fd);
	SSL_CTX_free(t->ctx);
}

int raw_tls_wait(struct raw_tls *t, int ms, char *buf, size_t cap, size_t *len)
{
	struct pollfd pfd = {.fd = t->fd, .events = POLLIN};
	if (SSL_pending(t->ssl) == 0 && poll(&pfd, 1, ms) <= 0)
		return 0;
	char tmp[4096];
	int n = SSL_read(t->ssl, tmp, sizeof(tmp));
	if (n > 0) {
		size_t k = (size_t)n < cap - *len - 1 ? (size_t)n : cap - *len - 1;
		memcpy(buf + *len, tmp, k);
		*len += k;
		buf[*len] = '\0';
		return 1;
	}
	int err = SSL_get_error(t->ssl, n);
	return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/* Send text a byte a second, watching for the connection to close; then
 * go on watching until limit_s. Returns the seconds from t0 at which it
 * closed, or -1 if it did not (or if an answer came instead). */
double raw_tls_trickle(struct raw_tls *t, const char *text, double t0, double limit_s)
{
	size_t sent = 0, n = strlen(text);
	char buf[1024];
	size_t len = 0;
	while (http_now_s() - t0 < limit_s) {
		if (sent < n) {
			int w = SSL_write(t->ssl, text + sent, 1);
			if (w == 1)
				sent++;
			else if (SSL_get_error(t->ssl, w) != SSL_ERROR_WANT_WRITE)
				return http_now_s() - t0; /* the write found it closed */
		}
		double tick = http_now_s();
		while (http_now_s() - tick < 1.0) {
			int r = raw_tls_wait(t, 100, buf, sizeof(buf), &len);
			if (r < 0)
				return http_now_s() - t0;
			if (r > 0 && strstr(buf, "HTTP/1.1 "))
				return -1;
		}
	}
	return -1;
}

int raw_tls_request(struct raw_tls *t, const char *req)
{
	size_t n = strlen(req);
	assert_int_equal(SSL_write(t->ssl, req, (int)n), (int)n);
	char buf[2048];
	size_t len = 0;
	double t0 = http_now_s();
	while (http_now_s() - t0 < 5.0) {
		if (raw_tls_wait(t, 100, buf, sizeof(buf), &len) < 0)
			return 0;
		const char *end = strstr(buf, "\r\n\r\n");
		const char *cl = strstr(buf, "Content-Length: ");
		if (end && cl && (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10) <= len)
			return atoi(buf + 9);
	}
	return 0;
}
