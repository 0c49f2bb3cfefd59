/*
 * kube_client.c: the client's handle and one HTTPS request, K1-K5
 * (kube.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "fleetd/kube/kube_internal.h"

#define KUBE_DEFAULT_TIMEOUT 10u
#define KUBE_DEFAULT_MAX_RESPONSE (4u * 1024u * 1024u)
#define KUBE_PATH_MAX 4096u

int fleet_kube_path_ok(const char *path)
{
	if (!path || (strncmp(path, "/api/", 5) != 0 && strncmp(path, "/apis/", 6) != 0))
		return 0;
	size_t n = strlen(path);
	if (n > KUBE_PATH_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c <= 0x20 || c >= 0x7f || c == '#' || c == '\\')
			return 0;
	}
	/* no ".." segment in the path part */
	size_t plen = strcspn(path, "?");
	for (size_t i = 0; i + 2 <= plen; i++)
		if (path[i] == '/' && path[i + 1] == '.' && path[i + 2] == '.' &&
		    (i + 3 >= plen || path[i + 3] == '/'))
			return 0;
	return 1;
}

fleet_err fleet_kube_open(const struct fleet_kube_config *cfg, struct fleet_kube **out,
			  struct fleet_errctx *ec)
{
	*out = NULL;
	if (!cfg)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "no configuration");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "libcurl could not start");
	struct fleet_kube *k = calloc(1, sizeof(*k));
	if (!k) {
		curl_global_cleanup();
		return fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
	}
	fleet_err e = cfg->kubeconfig ? fleet_kubeconfig_load(cfg->kubeconfig, &k->auth, ec)
				      : fleet_kube_in_cluster(cfg->sa_dir, &k->auth, ec);
	if (e) {
		fleet_kube_auth_free(&k->auth);
		free(k);
		curl_global_cleanup();
		return e;
	}
	k->timeout_ms = 1000L * (cfg->timeout_seconds ? cfg->timeout_seconds : KUBE_DEFAULT_TIMEOUT);
	k->max_response = cfg->max_response ? cfg->max_response : KUBE_DEFAULT_MAX_RESPONSE;
	k->watch_timeout = 60;
	k->list_page = FLEET_KUBE_LIST_PAGE;
	*out = k;
	return FLEET_OK;
}

void fleet_kube_close(struct fleet_kube *k)
{
	if (!k)
		return;
	fleet_kube_auth_free(&k->auth);
	free(k);
	curl_global_cleanup();
}

void fleet_kube_set_watch_timeout(struct fleet_kube *k, unsigned seconds)
{
	if (k && seconds >= 1 && seconds <= 3600)
		k->watch_timeout = seconds;
}

void fleet_kube_set_list_page(struct fleet_kube *k, unsigned limit)
{
	if (k && limit >= 1 && limit <= FLEET_KUBE_LIST_PAGE)
		k->list_page = limit;
}

struct xfer {
	CURL *h;
	struct fleet_buf *resp;
	size_t max;
	bool over;
	bool nomem;
	struct kube_stream *st;
	int mode; /* 0 undecided, 1 body, 2 lines */
	struct fleet_buf line;
};

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = sz * n;
	if (x->mode == 0) {
		long code = 0;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
		x->mode = (x->st && x->st->on_line && code == 200) ? 2 : 1;
	}
	if (x->mode == 1) {
		if (x->resp->len + len > x->max) {
			x->over = true;
			return 0;
		}
		if (fb_put(x->resp, p, len)) {
			if (fb_err(x->resp) == FLEET_E_TOO_LARGE)
				x->over = true;
			else
				x->nomem = true;
			return 0;
		}
		return len;
	}
	/* K13: lines, each at most FLEET_KUBE_EVENT_MAX bytes */
	size_t i = 0;
	while (i < len) {
		const char *nl = memchr(p + i, '\n', len - i);
		size_t take = nl ? (size_t)(nl - (p + i)) : len - i;
		if (x->line.len + take > FLEET_KUBE_EVENT_MAX) {
			x->st->line_too_big = true;
			return 0;
		}
		if (fb_put(&x->line, p + i, take)) {
			x->nomem = true;
			return 0;
		}
		i += take;
		if (!nl)
			break;
		i++; /* the newline */
		size_t ll = x->line.len;
		if (ll && x->line.data[ll - 1] == '\r')
			ll--;
		if (ll) {
			if (fb_put_u8(&x->line, 0)) {
				x->nomem = true;
				return 0;
			}
			if (!x->st->on_line(x->st->ctx, (const char *)x->line.data, ll)) {
				x->st->ended_by_cb = true;
				return 0;
			}
		}
		fb_reset(&x->line);
	}
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	struct kube_stream *st = arg;
	if (st && st->stop && *st->stop) {
		st->stopped = true;
		return 1;
	}
	return 0;
}

/* K3: the header list holds a copy of the token; wipe every entry. */
static void free_headers(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		if (p->data)
			explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

static fleet_err add_header(struct curl_slist **hdr, const char *s)
{
	struct curl_slist *t = curl_slist_append(*hdr, s);
	if (!t)
		return FLEET_KUBE_E_NOMEM;
	*hdr = t;
	return FLEET_OK;
}

fleet_err kube_request_ex(struct fleet_kube *k, const char *method, const char *path,
			  const char *content_type, const void *body, size_t body_len,
			  long *status, struct fleet_buf *resp, struct kube_stream *st,
			  struct fleet_errctx *ec)
{
	*status = 0;
	if (!k || !method || !resp)
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "no client, method or buffer");
	if (!fleet_kube_path_ok(path))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID,
					"a request path must start with /api/ or /apis/ and be "
					"printable ASCII without spaces, '#', '\\' or '..'");
	if (strcmp(method, "GET") && strcmp(method, "POST") && strcmp(method, "PUT") &&
	    strcmp(method, "PATCH") && strcmp(method, "DELETE"))
		return fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "method %.10s is not one of "
					"GET POST PUT PATCH DELETE", method);
	fb_reset(resp);
	char url[FLEET_KUBE_SERVER_MAX + KUBE_PATH_MAX + 2];
	snprintf(url, sizeof(url), "%s%s", k->auth.server, path);

	struct fleet_buf tok, authz;
	fb_init(&authz);
	fleet_err e = fleet_kube_auth_token(&k->auth, &tok, ec); /* K3: read now */
	if (e)
		return e;
	struct curl_slist *hdr = NULL;
	CURL *h = NULL;
	struct xfer x = {.resp = resp, .max = k->max_response, .st = st};
	fb_init_capped(&x.line, FLEET_KUBE_EVENT_MAX + 1);
	if (tok.len) {
		fb_init_secret(&authz, tok.len + 32);
		fb_put(&authz, "Authorization: Bearer ", 22);
		fb_put(&authz, tok.data, tok.len);
		fb_put_u8(&authz, 0);
		if (fb_err(&authz) || add_header(&hdr, (const char *)authz.data)) {
			e = fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
			goto out;
		}
	}
	char ct[160];
	if (body) {
		snprintf(ct, sizeof(ct), "Content-Type: %s",
			 content_type ? content_type : "application/json");
		if (strpbrk(ct, "\r\n")) {
			e = fleet_errctx_msg(ec, FLEET_KUBE_E_INVALID, "a bad content type");
			goto out;
		}
	}
	if (add_header(&hdr, "Accept: application/json") || add_header(&hdr, "Expect:") ||
	    (body && add_header(&hdr, ct))) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory");
		goto out;
	}
	if (!(h = curl_easy_init())) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory for a curl handle");
		goto out;
	}
	x.h = h;
	long total_ms = st && st->total_ms ? st->total_ms : k->timeout_ms;
	long connect_ms = k->timeout_ms < 5000 ? k->timeout_ms : 5000;
	char ebuf[CURL_ERROR_SIZE] = "";
	struct curl_blob ca = {.data = k->auth.ca_pem.data, .len = k->auth.ca_pem.len,
			       .flags = CURL_BLOB_NOCOPY};
	struct curl_blob cert = {.data = k->auth.cert_pem.data, .len = k->auth.cert_pem.len,
				 .flags = CURL_BLOB_NOCOPY};
	struct curl_blob key = {.data = k->auth.key_pem.data, .len = k->auth.key_pem.len,
				.flags = CURL_BLOB_NOCOPY};
	CURLcode rc;
	if ((rc = curl_easy_setopt(h, CURLOPT_URL, url)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "https")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_PROXY, "")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L)) ||
	    (rc = ca.len ? curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca) : CURLE_OK) ||
	    (rc = ca.len ? curl_easy_setopt(h, CURLOPT_CAPATH, NULL) : CURLE_OK) ||
	    (rc = cert.len ? curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert) : CURLE_OK) ||
	    (rc = cert.len ? curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM") : CURLE_OK) ||
	    (rc = key.len ? curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key) : CURLE_OK) ||
	    (rc = key.len ? curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM") : CURLE_OK) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total_ms)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_USERAGENT, "fleetd")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, &x)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_NOPROGRESS, st && st->stop ? 0L : 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_XFERINFODATA, st)) ||
	    (rc = (st && st->on_line) ? CURLE_OK
				      : curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
							 (curl_off_t)k->max_response))) {
		e = fleet_errctx_msg(ec, rc == CURLE_OUT_OF_MEMORY ? FLEET_KUBE_E_NOMEM
								   : FLEET_KUBE_E_UNAVAILABLE,
				     "libcurl refused an option: %s", curl_easy_strerror(rc));
		goto out;
	}
	if (body && ((rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body)) ||
		     (rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len)))) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_UNAVAILABLE, "libcurl refused the body");
		goto out;
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	if (rc == CURLE_ABORTED_BY_CALLBACK && st && st->stopped) {
		e = FLEET_OK;
	} else if (rc == CURLE_WRITE_ERROR && st && st->ended_by_cb) {
		e = FLEET_OK;
	} else if (x.over || rc == CURLE_FILESIZE_EXCEEDED) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_TOO_LARGE,
				     "the API server's answer to %s %.200s is over %zu bytes", method,
				     path, k->max_response);
	} else if (st && st->line_too_big) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_TOO_LARGE,
				     "a watch event line of %.200s is over %u bytes", path,
				     FLEET_KUBE_EVENT_MAX);
	} else if (x.nomem || rc == CURLE_OUT_OF_MEMORY) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_NOMEM, "out of memory for the answer");
	} else if (rc == CURLE_OPERATION_TIMEDOUT && st && st->on_line && *status == 200) {
		e = FLEET_OK; /* a watch that outlived its own deadline: ended */
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_UNAVAILABLE,
				     "the API server did not answer %s %.200s within %ld ms", method,
				     path, total_ms);
	} else if (rc != CURLE_OK) {
		e = fleet_errctx_msg(ec, FLEET_KUBE_E_UNAVAILABLE,
				     "the API server is unreachable (%s): %.300s",
				     curl_easy_strerror(rc), ebuf[0] ? ebuf : "no detail");
	}
out:
	curl_easy_cleanup(h);
	free_headers(hdr);
	fb_free_secret(&authz);
	fb_free_secret(&tok);
	fb_free(&x.line);
	return e;
}

fleet_err fleet_kube_request(struct fleet_kube *k, const char *method, const char *path,
			     const char *content_type, const void *body, size_t body_len,
			     long *status, struct fleet_buf *resp, struct fleet_errctx *ec)
{
	return kube_request_ex(k, method, path, content_type, body, body_len, status, resp, NULL,
			       ec);
}
