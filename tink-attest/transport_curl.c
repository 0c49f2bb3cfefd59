/* transport_curl.c: the libcurl transport (transport_curl.h). */
#include "tink-attest/transport_curl.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/rand.h>

#include "tink-attest/log.h"

int tink_curl_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

struct sink {
	struct fleet_buf *out;
	size_t max;
	int over;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	if (s->out->len + len > s->max) {
		s->over = 1;
		return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
	}
	if (fb_put(s->out, p, len) != FLEET_OK)
		return 0;
	return len;
}

/* Worth another attempt: the network or fleetd may be back shortly. */
static int transient(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR: /* a reset in the handshake */
		return 1;
	default:
		return 0;
	}
}

/* Full jitter: uniform in [0, min(cap, base * 2^(attempt-1))]. */
static double backoff(const struct tink_curl *c, unsigned attempt)
{
	double ceil = c->backoff_base_s;
	for (unsigned i = 1; i < attempt && ceil < c->backoff_cap_s; i++)
		ceil *= 2;
	if (ceil > c->backoff_cap_s)
		ceil = c->backoff_cap_s;
	uint32_t r = 0;
	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		r = UINT32_MAX / 2;
	return ceil * ((double)r / (double)UINT32_MAX);
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* One attempt. Returns the curl code; *status the HTTP status (0 if none). */
static CURLcode attempt(struct tink_curl *c, const char *url, const struct fleet_buf *body,
			struct sink *sink, long *status, char *ebuf)
{
	CURL *h = c->handle;
	struct curl_slist *hdr = NULL;
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	*status = 0;
	/* A reset handle forgets every option and keeps its live
	 * connection: the next request sets them all again. */
	if (h)
		curl_easy_reset(h);
	else if (!(c->handle = h = curl_easy_init()))
		return rc;
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	if (!hdr)
		goto out;
	struct curl_blob blob = {.data = c->ca_pem.data, .len = c->ca_pem.len,
				 .flags = CURL_BLOB_COPY};
	ebuf[0] = '\0';
	if ((rc = curl_easy_setopt(h, CURLOPT_URL, url)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CAPATH, NULL)) ||
	    (rc = c->ca_file ? curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file)
			     : curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)c->connect_timeout_s)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)c->timeout_s)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)body->data)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, sink)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf)))
		goto out;
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
out:
	curl_slist_free_all(hdr);
	/* A failed attempt does not leave its connection to the next. */
	if (rc != CURLE_OK || !c->keep_alive)
		tink_curl_close(c);
	return rc;
}

void tink_curl_close(struct tink_curl *c)
{
	if (c && c->handle) {
		curl_easy_cleanup(c->handle);
		c->handle = NULL;
	}
}

static enum tink_tx_result post(void *ctx, const char *path, const struct fleet_buf *body,
				size_t max_reply, struct fleet_buf *reply, long *http_status,
				struct fleet_errctx *ec)
{
	struct tink_curl *c = ctx;
	char url[1200], ebuf[CURL_ERROR_SIZE], err[sizeof(ec->detail) + 80];
	snprintf(url, sizeof(url), "%s%s", c->base_url, path);
	for (unsigned n = 1;; n++) {
		struct sink sink = {.out = reply, .max = max_reply};
		fb_reset(reply);
		CURLcode rc = attempt(c, url, body, &sink, http_status, ebuf);
		if (rc == CURLE_OK && *http_status < 500)
			return TINK_TX_OK;
		if (sink.over) {
			fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "fleetd's answer is over %zu bytes",
					 max_reply);
			return TINK_TX_FATAL;
		}
		if (rc == CURLE_OK)
			fleet_errctx_msg(ec, FLEET_ERR(FLEET_LAYER_LIB, FLEET_CODE_UNAVAILABLE),
					 "HTTP %ld", *http_status);
		else
			fleet_errctx_msg(ec, FLEET_E_IO, "%s",
					 ebuf[0] ? ebuf : curl_easy_strerror(rc));
		fleet_errctx_text(ec, err, sizeof(err));
		if (rc != CURLE_OK && !transient(rc))
			return TINK_TX_FATAL; /* the pin, a bad URL: trying again changes nothing */
		if (n >= c->attempts) {
			tink_log("POST %s attempt %u/%u failed: %s; giving up", path, n,
				 c->attempts, err);
			return TINK_TX_UNREACHABLE;
		}
		double wait = backoff(c, n);
		tink_log("POST %s attempt %u/%u failed: %s; retrying in %.2f s", path, n,
			 c->attempts, err, wait);
		sleep_s(wait);
	}
}

struct tink_transport tink_curl_transport(struct tink_curl *c)
{
	struct tink_transport t = {.post = post, .ctx = c};
	return t;
}
