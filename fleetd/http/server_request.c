/*
 * server_request.c: one request through the listener (server.h).
 *
 * libmicrohttpd calls the access handler once when the headers are in,
 * then once per piece of body, then once more with no data. The first call
 * decides every refusal that headers alone can decide and answers it at
 * once (no 100 Continue, no body read). That includes the body cap: a POST
 * must say its Content-Length, which must not pass max_body. The body calls
 * append to a buffer that can therefore never pass the cap; the last call
 * runs the route's handler.
 *
 * The first call also takes a token from the source's bucket (POST routes)
 * and reserves the body's Content-Length from the body budget; the
 * completion callback, which libmicrohttpd calls for every request the
 * access handler saw however it ended, returns the reservation and puts the
 * connection's deadline (server_guard.c) to rest until the next request.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "fleetd/http/server_impl.h"
#include "lib/fleet_err.h"

struct request {
	const struct fleet_http_route_entry *route;
	struct fleet_http_conn *conn;
	struct fleet_buf body;
	size_t reserved; /* of the body budget, returned on completion */
	uint8_t source[16]; /* whose share it was reserved from */
	unsigned retry_after; /* for a 429 or 503 */
	bool refused;  /* a refusal is queued; ignore whatever else arrives */
	bool has_body; /* the headers announce one */
	long long started_ms; /* when the headers were in */
	fleet_http_done_fn done; /* the handler's completion hook, until called */
	void *done_arg;
};

/* What the first call learns from the headers, in one pass over them. */
struct headers {
	unsigned content_type_count;
	const char *content_type;
	const char *content_encoding;
	const char *content_length;
	const char *transfer_encoding;
	const char *expect;
	bool conditional;
	bool range;
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct headers *h = cls;
	if (!key)
		return MHD_YES;
	value = value ? value : "";
	if (strcasecmp(key, "Content-Type") == 0) {
		h->content_type_count++;
		h->content_type = value;
	} else if (strcasecmp(key, "Content-Encoding") == 0) {
		h->content_encoding = value;
	} else if (strcasecmp(key, "Content-Length") == 0) {
		h->content_length = value;
	} else if (strcasecmp(key, "Transfer-Encoding") == 0) {
		h->transfer_encoding = value;
	} else if (strcasecmp(key, "Expect") == 0) {
		h->expect = value;
	} else if (strcasecmp(key, "If-Match") == 0 || strcasecmp(key, "If-None-Match") == 0 ||
		   strcasecmp(key, "If-Modified-Since") == 0 ||
		   strcasecmp(key, "If-Unmodified-Since") == 0 ||
		   strcasecmp(key, "If-Range") == 0) {
		h->conditional = true;
	} else if (strcasecmp(key, "Range") == 0) {
		h->range = true;
	}
	return MHD_YES;
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* "application/json", optionally "; charset=utf-8" (any case, the value
 * optionally quoted); nothing else. */
static bool json_media_type(const char *v)
{
	static const char type[] = "application/json";
	v = skip_ows(v);
	if (strncasecmp(v, type, sizeof(type) - 1) != 0)
		return false;
	v = skip_ows(v + sizeof(type) - 1);
	if (*v == '\0')
		return true;
	if (*v != ';')
		return false;
	v = skip_ows(v + 1);
	if (strncasecmp(v, "charset=", 8) != 0)
		return false;
	v += 8;
	if (strncasecmp(v, "utf-8", 5) == 0)
		v += 5;
	else if (strncasecmp(v, "\"utf-8\"", 7) == 0)
		v += 7;
	else
		return false;
	return *skip_ows(v) == '\0';
}

/* A Content-Length over cap; an unparsable one is libmicrohttpd's to refuse
 * (it does, with 400, before we are called). */
static bool length_over(const char *v, size_t cap)
{
	unsigned long long n = 0;
	for (v = skip_ows(v); *v >= '0' && *v <= '9'; v++) {
		if (n > (~0ull - 9) / 10)
			return true;
		n = n * 10 + (unsigned long long)(*v - '0');
	}
	return n > cap;
}

/* A Content-Length already checked against the cap (length_over false). */
static size_t length_value(const char *v)
{
	size_t n = 0;
	for (v = skip_ows(v); *v >= '0' && *v <= '9'; v++)
		n = n * 10 + (size_t)(*v - '0');
	return n;
}

static void count_response(struct fleet_http *s, unsigned status, const char *reason)
{
	static const char *const classes[] = {"2xx", "3xx", "4xx", "5xx"};
	if (status >= 200 && status <= 599)
		fleet_metric_inc_label(s->responses, classes[status / 100 - 2]);
	if (status >= 400 && status <= 499 &&
	    fleet_metric_inc_label(s->rejected, reason ? reason : "other") != FLEET_OK)
		fleet_metric_inc_label(s->rejected, "other");
}

/* libmicrohttpd's copy of a secret answer: wiped when it lets it go. */
static void free_secret_copy(void *p)
{
	if (!p)
		return;
	size_t *len = (size_t *)p - 1;
	explicit_bzero(len, sizeof(*len) + *len);
	free(len);
}

static struct MHD_Response *secret_response(const void *body, size_t len)
{
	size_t *copy = malloc(sizeof(size_t) + (len ? len : 1));
	if (!copy)
		return NULL;
	*copy = len;
	memcpy(copy + 1, body, len);
	struct MHD_Response *r =
		MHD_create_response_from_buffer_with_free_callback(len, copy + 1, free_secret_copy);
	if (!r)
		free_secret_copy(copy + 1);
	return r;
}

static enum MHD_Result send_reply(struct fleet_http *s, struct MHD_Connection *c,
				  unsigned status, const void *body, size_t len,
				  const char *content_type, const char *allow, bool close,
				  unsigned retry_after, bool secret)
{
	struct MHD_Response *r = secret ? secret_response(body, len)
					: MHD_create_response_from_buffer(len, (void *)body,
									  MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
						     content_type);
	if (ok == MHD_YES)
		ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (ok == MHD_YES)
		ok = MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (ok == MHD_YES && allow)
		ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (ok == MHD_YES && close)
		ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	char ra[16];
	snprintf(ra, sizeof(ra), "%u", retry_after);
	if (ok == MHD_YES && retry_after)
		ok = MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	if (ok == MHD_YES)
		ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

/* A refusal the server decides: counted, answered, never journaled. */
static enum MHD_Result refuse(struct fleet_http *s, struct MHD_Connection *c, unsigned status,
			      const char *reason, const char *allow, bool close,
			      unsigned retry_after)
{
	char body[96];
	int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}", reason);
	count_response(s, status, reason);
	if (status >= 500) /* 503 busy: the server's refusal, counted like its 4xx */
		fleet_metric_inc_label(s->rejected, reason);
	return send_reply(s, c, status, body, (size_t)n, "application/json", allow, close,
			  retry_after, false);
}

/* Every check the headers decide. Returns the status to refuse with (and
 * *reason), or 0 to go on. */
static unsigned check_headers(struct fleet_http *s, struct MHD_Connection *c, const char *url,
			      const char *method, struct request *req, const char **reason,
			      char *allow, size_t allow_cap)
{
	bool path_known = false;
	allow[0] = '\0';
	for (size_t i = 0; i < s->n_routes; i++) {
		const struct fleet_http_route_entry *r = &s->routes[i];
		if (strcmp(r->path, url) != 0)
			continue;
		path_known = true;
		if (strcmp(r->method, method) == 0)
			req->route = r;
		size_t n = strlen(allow);
		snprintf(allow + n, allow_cap - n, "%s%s", n ? ", " : "", r->method);
	}
	struct headers h = {0};
	MHD_get_connection_values(c, MHD_HEADER_KIND, scan_header, &h);
	req->has_body = h.transfer_encoding ||
			(h.content_length && strcmp(skip_ows(h.content_length), "0") != 0);
	if (!path_known)
		return *reason = "unknown-path", 404;
	if (!req->route)
		return *reason = "method-not-allowed", 405;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (req->route->rate_limited) {
		/* First: every POST to a route costs a token, refused or not
		 * (and every request to a route marked so). */
		if (!fleet_http_rate_take(s, ci ? ci->client_addr : NULL, &req->retry_after))
			return *reason = "rate-limited", 429;
		req->retry_after = 0;
	}
	if (h.content_encoding && strcasecmp(skip_ows(h.content_encoding), "identity") != 0)
		return *reason = "unsupported-encoding", 415;
	if (h.expect && strcasecmp(skip_ows(h.expect), "100-continue") != 0)
		return *reason = "expectation-failed", 417;
	if (h.conditional)
		return *reason = "conditional-request", 400;
	if (h.range)
		return *reason = "range-request", 400;
	if (strcmp(method, "POST") != 0) {
		if (req->has_body)
			return *reason = "unexpected-body", 400;
		return 0;
	}
	if (h.content_type_count != 1 || !json_media_type(h.content_type))
		return *reason = "unsupported-media-type", 415;
	/* A length up front, so the cap is decided before a byte of body is
	 * read: libmicrohttpd 0.9.75 cannot answer in the middle of a body. */
	if (h.transfer_encoding || !h.content_length)
		return *reason = "length-required", 411;
	if (length_over(h.content_length, s->max_body))
		return *reason = "body-too-large", 413;
	/* Reserved before a byte of it is read; the buffer can hold no more. */
	size_t n = length_value(h.content_length);
	if (!fleet_http_budget_take(s, ci ? ci->client_addr : NULL, n, req->source)) {
		req->retry_after = 1;
		return *reason = "busy", 503;
	}
	req->reserved = n;
	req->body.max = n;
	return 0;
}

static void peer_address(struct MHD_Connection *c, char *out, size_t cap)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	snprintf(out, cap, "unknown");
	if (!ci || !ci->client_addr)
		return;
	socklen_t len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							       : sizeof(struct sockaddr_in);
	if (getnameinfo(ci->client_addr, len, out, (socklen_t)cap, NULL, 0, NI_NUMERICHOST) != 0)
		snprintf(out, cap, "unknown");
}

struct args {
	struct fleet_http_arg v[FLEET_HTTP_MAX_ARGS];
	size_t n;
	bool over;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct args *a = cls;
	(void)kind;
	if (a->n == FLEET_HTTP_MAX_ARGS) {
		a->over = true;
		return MHD_NO;
	}
	a->v[a->n].key = key ? key : "";
	a->v[a->n].value = value;
	a->n++;
	return MHD_YES;
}

/* The completion hook, once. */
static void call_done(struct request *req, bool ok, int fd)
{
	fleet_http_done_fn done = req->done;
	req->done = NULL;
	if (done)
		done(req->done_arg, ok, fd);
}

static enum MHD_Result dispatch(struct fleet_http *s, struct MHD_Connection *c, const char *url,
				const char *method, struct request *req)
{
	char peer[64];
	peer_address(c, peer, sizeof(peer));
	struct args args = {.n = 0};
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
	struct fleet_http_request hr = {
		.method = method,
		.path = url,
		.body = req->body.len ? req->body.data : NULL,
		.body_len = req->body.len,
		.peer = peer,
		.args = args.v,
		.n_args = args.n,
		.args_over = args.over,
		.started_ms = req->started_ms,
	};
	struct fleet_http_reply reply = {.content_type = NULL, .reason = NULL};
	fb_init(&reply.body);
	int status = req->route->handler(req->route->ctx, &hr, &reply);
	req->done = reply.done;
	req->done_arg = reply.done_arg;
	bool secret = reply.body.secret;
	if (status < 200 || status > 599 || fb_err(&reply.body) != FLEET_OK) {
		static const char internal[] = "{\"error\":\"internal\"}";
		fb_free(&reply.body);
		call_done(req, false, -1);
		count_response(s, 500, NULL);
		return send_reply(s, c, 500, internal, sizeof(internal) - 1, "application/json",
				  NULL, false, 0, false);
	}
	count_response(s, (unsigned)status, reply.reason);
	if (reply.write_deadline_ms)
		fleet_http_conn_write_deadline(s, req->conn, reply.write_deadline_ms);
	enum MHD_Result r = send_reply(s, c, (unsigned)status, reply.body.data, reply.body.len,
				       reply.content_type ? reply.content_type : "application/json",
				       NULL, reply.close, 0, secret);
	fb_free(&reply.body); /* wiped when the handler made it a secret one */
	if (r != MHD_YES)
		call_done(req, false, -1);
	return r;
}

enum MHD_Result fleet_http_on_request(void *cls, struct MHD_Connection *c, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_size,
				      void **req_cls)
{
	struct fleet_http *s = cls;
	struct request *req = *req_cls;

	if (!req) { /* headers complete */
		struct fleet_http_conn *conn = fleet_http_conn_of(c);
		/* Without its record the deadline could not be kept: refuse. */
		if (!conn || !fleet_http_conn_request(s, conn))
			return MHD_NO;
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		/* Untrusted bytes: capped from the start, and to the
		 * Content-Length once the headers are checked. */
		fb_init_capped(&req->body, s->max_body);
		req->conn = conn;
		req->started_ms = fleet_http_mono_ms();
		*req_cls = req;
		const char *reason = NULL;
		char allow[128];
		unsigned status = check_headers(s, c, url, method, req, &reason, allow,
						sizeof(allow));
		if (status) {
			/* A refused request's body is never read, so the connection
			 * cannot carry another request after it: close it. */
			req->refused = true;
			fleet_http_conn_handling(s, conn);
			return refuse(s, c, status, reason, status == 405 ? allow : NULL,
				      req->has_body, req->retry_after);
		}
		return MHD_YES;
	}

	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (req->refused)
			return MHD_YES;
		if (n > s->max_body - req->body.len) {
			/* Cannot happen: the Content-Length was checked against the
			 * cap and libmicrohttpd delivers no more than it says. Should
			 * it ever, count it and drop the connection rather than
			 * buffer past the cap. */
			fleet_metric_inc_label(s->rejected, "body-too-large");
			fb_free(&req->body);
			return MHD_NO;
		}
		return fb_put(&req->body, upload_data, n) == FLEET_OK ? MHD_YES : MHD_NO;
	}

	if (req->refused)
		return MHD_YES;
	/* Past its deadline the sweep has shut the socket: answer nothing. */
	if (!fleet_http_conn_handling(s, req->conn))
		return MHD_NO;
	return dispatch(s, c, url, method, req);
}

void fleet_http_on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			     enum MHD_RequestTerminationCode toe)
{
	struct fleet_http *s = cls;
	struct request *req = *req_cls;
	/* OpenSSL's error queue is per thread and this thread serves the next
	 * request: a refusal (a certificate that does not verify) leaves
	 * entries that would be read as the cause of a later, unrelated
	 * failure, and the queue would grow for the thread's life. Whatever
	 * mattered was read where the failure happened (lib/fleet_err.h). */
	fleet_openssl_drain(NULL, 0);
	if (!req)
		return;
	if (req->done) {
		/* Only a whole answer on a connection no deadline cut: then the
		 * socket is still open (server.h, fleet_http_done_fn). */
		bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK &&
			  !fleet_http_conn_was_cut(s, req->conn);
		const union MHD_ConnectionInfo *ci =
			ok ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
		call_done(req, ok && ci, ci ? ci->connect_fd : -1);
	}
	if (req->reserved)
		fleet_http_budget_return(s, req->source, req->reserved);
	fleet_http_conn_idle(s, req->conn);
	fb_free(&req->body);
	free(req);
	*req_cls = NULL;
}
