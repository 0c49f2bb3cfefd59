/* http_client.c: see http_client.h. */
#include "tests/e2e/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
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
