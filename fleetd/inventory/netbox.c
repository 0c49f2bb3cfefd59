/*
 * netbox.c: the NetBox v4 inventory over HTTPS (libcurl) and jansson.
 *
 * Requests: GET /api/dcim/devices/?serial=S (NetBox's serial filter is
 * iexact, so the match is case-insensitive; we check each result's serial
 * ourselves too), GET /api/dcim/devices/N/, GET /api/core/object-changes/
 * ?changed_object_type=dcim.device&changed_object_id=N&ordering=-time, and
 * PATCH /api/dcim/devices/N/ with {"custom_fields": {"ek_hash", "ek_hash_ecc"}}
 * or {"status"}. NetBox merges a PATCHed custom_fields object into the stored
 * one, so the other custom fields stay as they are. Device GETs ask only for
 * the fields read (fields=). Listings use limit/offset and follow "next" to
 * the end, re-based onto base_url (origin and prefix) so the token only ever
 * goes to the configured host; a page over the response cap is asked again
 * in halves. Requests reuse pooled connections; a 429/503 with Retry-After
 * is asked again within the request's time budget.
 *
 * Failure semantics: anything that is not an answer (transport error,
 * timeout, TLS failure, 401/403, 429, 5xx, redirect) is UNAVAILABLE; this
 * process out of memory (a request not made, an answer not kept) is NOMEM,
 * never blamed on NetBox; an answer we cannot use (bad JSON, wrong types,
 * caps, a 400) is INVALID; in a listing, one device that does not pass is
 * reported apart instead. Only
 * a device list that is empty is NOT_FOUND, only a 404 on a device is
 * NOT_FOUND, only more than one match is AMBIGUOUS.
 */
#include "fleetd/inventory/netbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <curl/header.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "fleetd/inventory/json_view.h"
#include "fleetd/inventory/netbox_json.h"
#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/sanitize.h"

#define DEFAULT_TIMEOUT_MS 10000L
#define DEFAULT_PAGE_SIZE 100u
#define MAX_PAGE_SIZE 1000u
#define MAX_URL 4096
/* Idle easy handles kept, each with its live connection to NetBox: enough
 * for the pass and a few concurrent admissions; more are made when needed
 * and closed when returned to a full pool. */
#define POOL_MAX 8

struct netbox {
	struct fleet_inventory inv; /* first: the ops table */
	char *base;                 /* https://host[:port][/prefix], no trailing slash */
	size_t origin_len;          /* length of https://host[:port] within base */
	char *auth_header;          /* "Authorization: Token ..." / "... Bearer ..." */
	struct fleet_buf ca_pem;    /* ca_file's PEM, read once at open; empty: system store */
	long timeout_ms;
	unsigned page_size;
	/* TLS sessions and DNS answers, shared by every handle (libcurl
	 * supports that across threads, with these locks). The connections are
	 * not shared: libcurl does not support one connection cache used by
	 * concurrent threads (CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT), so each
	 * easy handle keeps its own, and a caller borrows a whole handle. */
	CURLSH *share;
	pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
	bool share_locks_ready;
	pthread_mutex_t lock; /* pool and stats */
	bool lock_ready;
	CURL *pool[POOL_MAX]; /* idle handles, the most recently used last */
	size_t n_pool;
	struct fleet_netbox_stats stats;
};

struct resp {
	long status;
	struct fleet_buf body;
	bool over;
	bool nomem; /* the body could not be kept: out of memory, not over the cap */
	char ctype[96];
	char retry_after[64]; /* a 429/503's Retry-After, printable ASCII; "" none */
	bool retry_after_bad; /* it held something else, or was longer */
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t len = sz * n;
	if (r->body.len + len > FLEET_NETBOX_MAX_RESPONSE) {
		r->over = true;
		return 0; /* abort the transfer */
	}
	if (fb_put(&r->body, p, len) != FLEET_OK) {
		r->nomem = true;
		return 0;
	}
	return len;
}

/* Wipe a header list before freeing it: one entry holds the token. */
static void free_headers(struct curl_slist *h)
{
	for (struct curl_slist *i = h; i; i = i->next)
		OPENSSL_cleanse(i->data, strlen(i->data));
	curl_slist_free_all(h);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct netbox *nb = ud;
	(void)h;
	(void)access;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&nb->share_lock[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
	struct netbox *nb = ud;
	(void)h;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&nb->share_lock[data]);
}

/* A handle for one exchange: the idle one used last (so a pass's pages, one
 * after another on one thread, go over one connection), or a new one. */
static CURL *borrow(struct netbox *nb)
{
	CURL *h = NULL;
	pthread_mutex_lock(&nb->lock);
	if (nb->n_pool)
		h = nb->pool[--nb->n_pool];
	pthread_mutex_unlock(&nb->lock);
	return h ? h : curl_easy_init();
}

static void give_back(struct netbox *nb, CURL *h, const struct resp *r, long connects)
{
	/* Options point at the caller's stack (error buffer, headers with the
	 * token, the body): none may outlive the exchange. A reset keeps the
	 * live connection, which is what the pool is for. */
	curl_easy_reset(h);
	pthread_mutex_lock(&nb->lock);
	nb->stats.requests++;
	nb->stats.connections += connects > 0 ? (unsigned long long)connects : 0;
	nb->stats.bytes += r->body.len;
	if (h && nb->n_pool < POOL_MAX) {
		nb->pool[nb->n_pool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&nb->lock);
	curl_easy_cleanup(h);
}

/* The Retry-After header of the answer h holds (the last one, if NetBox or
 * a proxy sent several), kept only when it is short printable ASCII. */
static void read_retry_after(CURL *h, struct resp *r)
{
	struct curl_header *hh = NULL;
	if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hh) != CURLHE_OK || !hh ||
	    !hh->value)
		return;
	size_t n = strlen(hh->value);
	r->retry_after_bad = n == 0 || n >= sizeof(r->retry_after) ||
			     !fleet_ascii_printable(hh->value, n, FLEET_ASCII_SPACE);
	if (!r->retry_after_bad)
		memcpy(r->retry_after, hh->value, n + 1);
}

/*
 * One HTTP exchange, bounded by timeout_ms. OK means NetBox answered
 * (r->status holds the status, r->body the body); UNAVAILABLE means it did
 * not; INVALID means its answer was over the size cap (r->over); NOMEM that
 * this process could not make the request or keep the answer.
 */
static fleet_err exchange(struct netbox *nb, const char *method, const char *url, const char *body,
			  long timeout_ms, struct resp *r, struct fleet_errctx *ec)
{
	char ebuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdr = NULL, *tmp;
	CURL *h = borrow(nb);
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	long connects = 0;
	r->status = 0;
	r->over = false;
	r->nomem = false;
	r->ctype[0] = '\0';
	r->retry_after[0] = '\0';
	r->retry_after_bad = false;
	fb_reset(&r->body);
	if (!h)
		goto out;
	const char *hdrs[] = {nb->auth_header, "Accept: application/json",
			      body ? "Content-Type: application/json" : NULL};
	for (size_t i = 0; i < 3 && hdrs[i]; i++) {
		if (!(tmp = curl_slist_append(hdr, hdrs[i])))
			goto out;
		hdr = tmp;
	}
	long connect_ms = timeout_ms < 5000 ? timeout_ms : 5000;
	struct curl_blob ca_blob = {.data = nb->ca_pem.data, .len = nb->ca_pem.len,
				    .flags = CURL_BLOB_NOCOPY};
	if ((rc = curl_easy_setopt(h, CURLOPT_URL, url)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L)) ||
	    (rc = nb->ca_pem.len ? curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca_blob) : CURLE_OK) ||
	    (rc = nb->ca_pem.len ? curl_easy_setopt(h, CURLOPT_CAPATH, NULL) : CURLE_OK) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SHARE, nb->share)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_USERAGENT, "fleetd")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
				   (curl_off_t)FLEET_NETBOX_MAX_RESPONSE)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, r)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf)))
		goto out;
	if (body && ((rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body)) ||
		     (rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					    (curl_off_t)strlen(body)))))
		goto out;
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
	/* a Content-Length over the cap is refused before the body is read */
	if (rc == CURLE_FILESIZE_EXCEEDED)
		r->over = true;
	if (rc == CURLE_OK) {
		char *ct = NULL;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
			snprintf(r->ctype, sizeof(r->ctype), "%s", ct);
		if (r->status == 429 || r->status == 503)
			read_retry_after(h, r);
	}
out:
	free_headers(hdr);
	if (h)
		give_back(nb, h, r, connects);
	if (r->over)
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox's answer to %s is over %u bytes", method,
					FLEET_NETBOX_MAX_RESPONSE);
	if (rc == CURLE_OUT_OF_MEMORY || r->nomem)
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM,
					"out of memory for NetBox's answer to %s", method);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
					"NetBox did not answer %s within %ld ms", method,
					timeout_ms);
	if (rc != CURLE_OK)
		return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE, "NetBox unreachable (%s): %s",
					curl_easy_strerror(rc), ebuf[0] ? ebuf : "no detail");
	return FLEET_INV_OK;
}

/* NetBox's own words for a request it did not authenticate
 * (netbox/api/authentication.py TokenAuthentication, DRF's NotAuthenticated):
 * the token is wrong, missing, disabled, expired, bound to other source
 * addresses, or its user is inactive. */
static bool token_refusal(const char *detail)
{
	static const char *const prefix[] = {
		"Invalid v1 token", "Invalid v2 token", "Invalid authorization header",
		"Authentication credentials were not provided", "Token disabled", "Token expired",
		"User inactive", "Source IP ", "Client IP address could not be determined",
		"Invalid token",
	};
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncmp(detail, prefix[i], strlen(prefix[i])) == 0)
			return true;
	return false;
}

/* DRF's PermissionDenied: a valid token whose user may not do this. */
#define NB_NO_PERMISSION "You do not have permission to perform this action."

/* The permission NetBox checks for method on url (TokenPermissions.perms_map:
 * GET needs view_<model>, PATCH change_<model>). */
static const char *permission_for(const char *method, const char *url)
{
	bool get = strcmp(method, "GET") == 0;
	if (strstr(url, "/api/core/object-changes/"))
		return get ? "core.view_objectchange" : "core.change_objectchange";
	return get ? "dcim.view_device" : "dcim.change_device";
}

/*
 * A 401/403 said as what it is: the token refused (fix the token), a valid
 * token whose user lacks the permission (fix the user's permissions; NetBox
 * gives the same sentence for a token that is not write-enabled), or a
 * refusal NetBox did not word (a proxy or firewall in front of it).
 */
static fleet_err refused(const char *method, const char *url, long status, const char *detail,
			 struct fleet_errctx *ec)
{
	if (strcmp(detail, NB_NO_PERMISSION) == 0) {
		bool write = strcmp(method, "GET") != 0;
		return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
					"NetBox denied fleetd's %s: fleetd's NetBox user likely "
					"lacks the %s permission%s (HTTP %ld: %s)",
					method, permission_for(method, url),
					write ? ", or its token is not write-enabled" : "", status,
					detail);
	}
	if (token_refusal(detail))
		return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
					"NetBox refused fleetd's token (HTTP %ld: %s)", status,
					detail);
	return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
				"NetBox refused fleetd's %s (HTTP %ld: %s); neither a token nor a "
				"permission refusal in NetBox's words: a proxy in front of it?",
				method, status, detail[0] ? detail : "no NetBox error body");
}

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_ms(long long ms)
{
	struct timespec t = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/*
 * Retry-After (RFC 9110, 10.2.3): delay-seconds (1*DIGIT) or an HTTP-date
 * (IMF-fixdate, or the obsolete RFC 850 and asctime forms a recipient must
 * accept: all three start with a day name). *ms = how long from now, 0 for a
 * date already past. false: neither form.
 */
static bool parse_retry_after(const char *v, long long *ms)
{
	size_t n = strlen(v), i;
	for (i = 0; i < n && v[i] >= '0' && v[i] <= '9'; i++)
		;
	if (n && i == n) {
		*ms = n > 9 ? 999999999000LL : atoll(v) * 1000; /* beyond any cap either way */
		return true;
	}
	static const char *const days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
	bool day = false;
	for (i = 0; i < 7; i++)
		day = day || strncmp(v, days[i], 3) == 0;
	time_t t = day && n >= 24 ? curl_getdate(v, NULL) : -1;
	if (t == (time_t)-1)
		return false;
	time_t now = time(NULL);
	*ms = t > now ? (long long)(t - now) * 1000 : 0;
	return true;
}

/*
 * Whether to ask again after a 429 or 503 (NetBox, or the proxy in front of
 * it, saying "not now"): only when it said when (Retry-After), only within
 * RETRY_WAIT_CAP_MS and before the request's deadline, and at most RETRY_MAX
 * times. Asking again is safe for every request fleetd makes: GETs, and
 * PATCHes that set fields to given values (the same PATCH twice changes
 * nothing more). Otherwise note says why not, for the error.
 */
#define RETRY_MAX 2
#define RETRY_WAIT_CAP_MS 5000
static bool retry_after(const struct resp *r, int retries, long long deadline,
			long long *wait_ms, char *note, size_t notelen)
{
	note[0] = '\0';
	if ((r->status != 429 && r->status != 503) || (!r->retry_after[0] && !r->retry_after_bad))
		return false;
	if (r->retry_after_bad || !parse_retry_after(r->retry_after, wait_ms)) {
		snprintf(note, notelen, ", Retry-After \"%s\" is neither seconds nor an HTTP-date",
			 r->retry_after_bad ? "(unreadable)" : r->retry_after);
		return false;
	}
	if (*wait_ms > RETRY_WAIT_CAP_MS)
		snprintf(note, notelen, ", Retry-After: %s, over the %d s fleetd waits",
			 r->retry_after, RETRY_WAIT_CAP_MS / 1000);
	else if (now_ms() + *wait_ms >= deadline)
		snprintf(note, notelen, ", Retry-After: %s, past this request's time budget",
			 r->retry_after);
	else if (retries >= RETRY_MAX)
		snprintf(note, notelen, ", Retry-After: %s, still so after %d retries",
			 r->retry_after, RETRY_MAX);
	else
		return true;
	return false;
}

/*
 * Why a 200's body is not a JSON object, in the words fleetd has always used
 * (jansson's line and text): this path is the rare one, so a refused body
 * is read again by json_loadb for them. An array (other_value) needs no
 * second read: jansson said "line -1" of every value it took. Where jansson
 * took what the view refused (json_view.h J1: only a NUL after a number or
 * a literal; fuzz_netbox_answer checks there is nothing else) the view's
 * own reason shows, by offset.
 */
static fleet_err not_json(const char *method, const struct resp *r, bool other_value,
			  const struct jv_error *jerr, struct fleet_errctx *ec)
{
	json_error_t je;
	char why[61]; /* what %.60s below takes whole */
	if (other_value)
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox's answer to %s is not a JSON object (line -1: "
					"another JSON value)",
					method);
	json_t *j = json_loadb((const char *)r->body.data, r->body.len, JSON_REJECT_DUPLICATES,
			       &je);
	bool jansson_took = j != NULL;
	json_decref(j);
	if (jansson_took) {
		fleet_sanitize(jerr->text, strlen(jerr->text), why, sizeof(why), SIZE_MAX);
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox's answer to %s is not a JSON object (offset %zu: "
					"%.60s)",
					method, jerr->offset, why);
	}
	if (json_error_code(&je) == json_error_out_of_memory)
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM,
					"out of memory reading NetBox's answer to %s", method);
	fleet_sanitize(je.text, strlen(je.text), why, sizeof(why), SIZE_MAX);
	return fleet_errctx_msg(ec, FLEET_INV_INVALID,
				"NetBox's answer to %s is not a JSON object (line %d: %.60s)",
				method, je.line, why);
}

/*
 * An exchange whose answer must be a JSON object with HTTP 200, within
 * timeout_ms all told (waits after a Retry-After and retries included). A
 * 404 is NOT_FOUND when not_found_ok (a device that does not exist), else
 * NetBox is not where base_url says it is. *over (may be NULL): the answer
 * was over FLEET_NETBOX_MAX_RESPONSE. On OK, out holds the answer (its root,
 * token 0, an object) until jv_free; on anything else it is empty.
 */
static fleet_err request_json(struct netbox *nb, const char *method, const char *url,
			      const char *body, bool not_found_ok, struct jv_doc *out,
			      bool *over, struct fleet_errctx *ec)
{
	struct resp r = {0};
	char detail[400], note[160] = "";
	long long deadline = now_ms() + nb->timeout_ms, wait_ms = 0;
	fleet_err res;
	memset(out, 0, sizeof(*out));
	if (over)
		*over = false;
	fb_init_capped(&r.body, FLEET_NETBOX_MAX_RESPONSE); /* NetBox's answer: untrusted */
	for (int retries = 0;; retries++) {
		long long left = deadline - now_ms();
		if (left <= 0) {
			res = fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
					       "NetBox did not answer %s within %ld ms", method,
					       nb->timeout_ms);
			goto done;
		}
		res = exchange(nb, method, url, body, retries ? (long)left : nb->timeout_ms, &r,
			       ec);
		if (res != FLEET_INV_OK || !retry_after(&r, retries, deadline, &wait_ms, note,
							 sizeof(note)))
			break;
		sleep_ms(wait_ms);
		pthread_mutex_lock(&nb->lock);
		nb->stats.retries++;
		pthread_mutex_unlock(&nb->lock);
	}
	if (over)
		*over = r.over;
	if (res != FLEET_INV_OK)
		goto done;
	/* an error body is read for its message; a 200's is parsed once, below */
	detail[0] = '\0';
	if (r.status != 200)
		nb_error_detail((const char *)r.body.data, r.body.len, detail, sizeof(detail));
	const char *sep = detail[0] ? ": " : "";
	if (r.status == 200) {
		struct jv_error jerr;
		enum jv_result jr;
		if (strncmp(r.ctype, "application/json", 16) != 0) {
			res = fleet_errctx_msg(
				ec, FLEET_INV_INVALID,
				"NetBox answered %s with Content-Type \"%.40s\", not JSON", method,
				r.ctype);
			goto done;
		}
		/* One pass over the bytes into a flat view (json_view.h: it
		 * accepts what json_loadb with JSON_REJECT_DUPLICATES accepts). */
		jr = jv_parse(out, (const char *)r.body.data, r.body.len, &jerr);
		if (jr == JV_NOMEM) {
			res = fleet_errctx_msg(ec, FLEET_INV_NOMEM,
					       "out of memory reading NetBox's answer to %s",
					       method);
		} else if (jr != JV_OK || jv_type(out, 0) != JV_OBJECT) {
			/* freed first: not_json may parse the body again */
			jv_free(out);
			res = not_json(method, &r, jr == JV_OK, &jerr, ec);
		}
	} else if (r.status == 404 && not_found_ok) {
		/* NetBox restricts the queryset by the user's permission before it
		 * looks the device up: a device outside the constraints of
		 * fleetd's permission is a 404 too. */
		res = fleet_errctx_msg(
			ec, FLEET_INV_NOT_FOUND, "NetBox has no such device (HTTP 404%s%s)%s", sep,
			detail,
			strcmp(method, "PATCH") == 0
				? ", or the constraints of fleetd's dcim.change_device permission "
				  "exclude it"
				: "");
	} else if (r.status == 401 || r.status == 403) {
		res = refused(method, url, r.status, detail, ec);
	} else if (r.status == 400) {
		res = fleet_errctx_msg(ec, FLEET_INV_INVALID,
				       "NetBox rejected the %s (HTTP 400%s%s)", method, sep,
				       detail);
	} else if (r.status >= 300 && r.status < 400) {
		res = fleet_errctx_msg(
			ec, FLEET_INV_UNAVAILABLE,
			"NetBox redirected (HTTP %ld); base_url must name the final location",
			r.status);
	} else {
		res = fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
				       "NetBox failed the %s (HTTP %ld%s%s%s)", method, r.status,
				       note, sep, detail);
	}
done:
	fb_free(&r.body);
	return res;
}

/* Percent-encode everything but RFC 3986's unreserved characters. */
static bool url_escape(const char *s, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
		if (o + (plain ? 1 : 3) >= outlen)
			return false;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return true;
}

/*
 * The URL of the page after this one. NetBox builds "next" from the request
 * as it saw it: behind a reverse proxy its scheme or host may differ, and a
 * proxy that maps base_url's path prefix onto NetBox's root (https://host/
 * netbox/ to NetBox's /) leaves the prefix out. So only the path relative to
 * the API root (from its first "/api/" on) and the query are taken; that path
 * must be the endpoint we asked for, and the page is asked of our own origin
 * and prefix. The token goes to base_url and nowhere else.
 */
static fleet_err next_url(struct netbox *nb, const char *s, const char *endpoint, char *url,
			  size_t urllen, struct fleet_errctx *ec)
{
	const char *p = s ? strstr(s, "://") : NULL;
	if (!p || !(p = strchr(p + 3, '/')))
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox's next page link is not an absolute URL");
	if (!fleet_ascii_printable(p, strlen(p), 0) || strchr(p, '#'))
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox's next page link holds a bad character");
	const char *query = strchr(p, '?');
	const char *prefix = nb->base + nb->origin_len;
	size_t plen = strlen(prefix), elen = strlen(endpoint);
	const char *api = NULL;
	if (query) {
		/* our own prefix as we sent it (NetBox under BASE_PATH, or a
		 * proxy that keeps the path), else from the first "/api/" */
		if ((size_t)(query - p) == plen + elen && strncmp(p, prefix, plen) == 0)
			api = p + plen;
		else if ((api = strstr(p, "/api/")) && api > query)
			api = NULL;
	}
	if (!api || (size_t)(query - api) != elen || strncmp(api, endpoint, elen) != 0)
		return fleet_errctx_msg(ec, FLEET_INV_INVALID, "NetBox's next page link leaves %s",
					endpoint);
	if ((size_t)snprintf(url, urllen, "%s%s%s", nb->base, endpoint, query) >= urllen)
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox's next page link is too long");
	return FLEET_INV_OK;
}

/* Called for each result of a listing, token item of j; a non-OK result
 * stops the walk. */
typedef fleet_err (*each_fn)(const struct jv_doc *j, uint32_t item, void *ctx,
			     struct fleet_errctx *ec);

/* The value of the query parameter name in url, as Django reads it (the
 * last one), into out; false when there is none. */
static bool query_param(const char *url, const char *name, char *out, size_t outlen)
{
	const char *q = strchr(url, '?');
	size_t nlen = strlen(name);
	bool found = false;
	for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
		const char *k = p + 1;
		if (strncmp(k, name, nlen) != 0 || k[nlen] != '=')
			continue;
		size_t vlen = strcspn(k + nlen + 1, "&");
		snprintf(out, outlen, "%.*s", (int)vlen, k + nlen + 1);
		found = true;
	}
	return found;
}

static unsigned query_limit(const char *url)
{
	char v[16];
	if (!query_param(url, "limit", v, sizeof(v)) || !v[0] || strlen(v) > 7 ||
	    strspn(v, "0123456789") != strlen(v))
		return 0;
	return (unsigned)atoi(v);
}

/* url with every limit= dropped and limit=n appended. */
static bool set_limit(char *url, size_t urllen, unsigned n)
{
	char out[MAX_URL];
	const char *q = strchr(url, '?');
	if (!q)
		return false;
	size_t o = (size_t)(q - url);
	memcpy(out, url, o);
	char sep = '?';
	for (const char *p = q; *p;) {
		const char *k = p + 1;
		size_t len = strcspn(k, "&");
		if (len && !(strncmp(k, "limit=", 6) == 0 || (len == 5 && !strncmp(k, "limit", 5)))) {
			if (o + 1 + len >= sizeof(out))
				return false;
			out[o++] = sep;
			memcpy(out + o, k, len);
			o += len;
			sep = '&';
		}
		p = k + len;
	}
	if ((size_t)snprintf(out + o, sizeof(out) - o, "%climit=%u", sep, n) >= sizeof(out) - o ||
	    strlen(out) >= urllen)
		return false;
	memcpy(url, out, strlen(out) + 1);
	return true;
}

/*
 * GET endpoint?query and every next page; each result goes to fn.
 *
 * A page whose answer is over FLEET_NETBOX_MAX_RESPONSE (a few devices with
 * a huge custom field, or a NetBox that ignored fields=) is asked again from
 * the same offset with half the limit, down to one object; the rest of the
 * walk keeps the smaller limit, so pages of big objects are not asked twice
 * each. One object over the cap on its own fails the walk.
 */
static fleet_err walk(struct netbox *nb, const char *endpoint, const char *query, each_fn fn,
		      void *ctx, const struct fleet_inv_bound *bound, struct fleet_errctx *ec)
{
	char url[MAX_URL];
	size_t seen = 0;
	unsigned ceiling = 0; /* 0, or the limit every later page stays under */
	if ((size_t)snprintf(url, sizeof(url), "%s%s?%s%slimit=%u", nb->base, endpoint, query,
			     query[0] ? "&" : "", nb->page_size) >= sizeof(url)) {
		return fleet_errctx_msg(ec, FLEET_INV_INVALID, "request URL too long");
	}
	for (unsigned page = 0;; page++) {
		struct jv_doc j;
		bool over;
		/* Before each page: a listing of thousands of devices from a slow
		 * NetBox must end within one request of its caller's bound. */
		const char *stop = fleet_inv_bound_stop(bound);
		if (stop)
			return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
						"the listing of %s stopped after %u page%s: %s",
						endpoint, page, page == 1 ? "" : "s", stop);
		fleet_err r = request_json(nb, "GET", url, NULL, false, &j, &over, ec);
		if (r == FLEET_INV_INVALID && over) {
			unsigned limit = query_limit(url);
			char offset[24] = "0";
			if (limit == 0)
				limit = nb->page_size;
			if (page + 1 >= FLEET_NETBOX_MAX_PAGES)
				return fleet_errctx_msg(ec, FLEET_INV_INVALID,
							"NetBox's listing of %s does not end",
							endpoint);
			if (limit <= 1) {
				query_param(url, "offset", offset, sizeof(offset));
				if (strspn(offset, "0123456789") != strlen(offset))
					snprintf(offset, sizeof(offset), "?");
				pthread_mutex_lock(&nb->lock);
				bool whole = nb->stats.fields_ignored > 0;
				pthread_mutex_unlock(&nb->lock);
				return fleet_errctx_msg(
					ec, FLEET_INV_INVALID,
					"NetBox's answer with a single object of %s (at "
					"offset %s) is over %u bytes: that object cannot be read%s",
					endpoint, offset, FLEET_NETBOX_MAX_RESPONSE,
					whole ? " (and NetBox ignores fields=: it sends whole "
						"objects)"
					      : "");
			}
			ceiling = limit / 2;
			if (!set_limit(url, sizeof(url), ceiling))
				return fleet_errctx_msg(ec, FLEET_INV_INVALID,
							"request URL too long");
			pthread_mutex_lock(&nb->lock);
			nb->stats.smaller_pages++;
			pthread_mutex_unlock(&nb->lock);
			continue;
		}
		if (r != FLEET_INV_OK)
			return r;
		uint32_t results = jv_get(&j, 0, "results");
		uint32_t next = jv_get(&j, 0, "next");
		if (jv_type(&j, results) != JV_ARRAY ||
		    !(jv_type(&j, next) == JV_NULL || jv_type(&j, next) == JV_STRING)) {
			jv_free(&j);
			return fleet_errctx_msg(
				ec, FLEET_INV_INVALID,
				"NetBox's listing of %s has no results array or next "
				"link",
				endpoint);
		}
		uint32_t item = results + 1, count = jv_count(&j, results);
		for (uint32_t i = 0; i < count; i++, item = j.tok[item].next) {
			if (++seen > FLEET_NETBOX_MAX_OBJECTS) {
				r = fleet_errctx_msg(ec, FLEET_INV_INVALID,
						     "NetBox lists over %u objects under %s",
						     FLEET_NETBOX_MAX_OBJECTS, endpoint);
			} else {
				r = fn(&j, item, ctx, ec);
			}
			if (r != FLEET_INV_OK) {
				jv_free(&j);
				return r;
			}
		}
		if (jv_type(&j, next) == JV_NULL) {
			jv_free(&j);
			return FLEET_INV_OK;
		}
		if (count == 0 || page + 1 >= FLEET_NETBOX_MAX_PAGES) {
			jv_free(&j);
			return fleet_errctx_msg(ec, FLEET_INV_INVALID,
						"NetBox's listing of %s does not end", endpoint);
		}
		r = next_url(nb, jv_str(&j, next, NULL), endpoint, url, sizeof(url), ec);
		jv_free(&j);
		if (r != FLEET_INV_OK)
			return r;
		/* NetBox's link carries the limit it used; never above the ceiling */
		if (ceiling && (query_limit(url) == 0 || query_limit(url) > ceiling) &&
		    !set_limit(url, sizeof(url), ceiling)) {
			return fleet_errctx_msg(ec, FLEET_INV_INVALID, "request URL too long");
		}
	}
}

/*
 * The device fields fleetd reads (netbox_json.c), asked for with NetBox's
 * dynamic fields (4.0 and later: ?fields=a,b renders only those top-level
 * fields; about a quarter of a whole device's bytes). exclude=config_context
 * is still sent: without it NetBox computes each device's config context
 * even when it is not rendered, and a NetBox that ignores fields= still
 * leaves it out. fields= is never sent with a PATCH: NetBox would build the
 * writing serializer from those fields too.
 */
#define DEVICE_QUERY "exclude=config_context&fields=id,name,serial,status,primary_ip4,custom_fields"
static const char *const device_fields[] = {"id",     "name",        "serial",
					    "status", "primary_ip4", "custom_fields"};

/*
 * An answer to a fields= request, checked against what was asked. A field
 * asked for and missing is missing, not unset: that NetBox honoured fields=
 * but lacks the field (*missing names it). Fields beyond those asked mean
 * NetBox ignored fields= (an older NetBox, or a proxy that dropped the
 * parameter): the answer is still whole, only larger, and it is counted.
 */
static void check_fields(struct netbox *nb, const struct jv_doc *j, uint32_t o,
			 const char **missing)
{
	size_t n = sizeof(device_fields) / sizeof(device_fields[0]), present = 0;
	*missing = NULL;
	if (jv_type(j, o) != JV_OBJECT)
		return;
	for (size_t i = 0; i < n; i++) {
		if (jv_get(j, o, device_fields[i]) != JV_NONE)
			present++;
		else if (!*missing)
			*missing = device_fields[i];
	}
	if (jv_count(j, o) > present) {
		pthread_mutex_lock(&nb->lock);
		nb->stats.fields_ignored++;
		pthread_mutex_unlock(&nb->lock);
	}
}

/* A device answer (GET, or a listing's result) that passed nb_parse_device:
 * INVALID when a field asked for is missing. */
static fleet_err device_complete(struct netbox *nb, const struct jv_doc *j, uint32_t o,
				 const struct fleet_inv_device *d, char *reason, size_t reasonlen,
				 struct fleet_errctx *ec)
{
	const char *missing;
	check_fields(nb, j, o, &missing);
	if (!missing)
		return FLEET_INV_OK;
	if (reason && reasonlen)
		snprintf(reason, reasonlen, "%s:missing", missing);
	return fleet_errctx_msg(ec, FLEET_INV_INVALID,
				"device %ld: NetBox left out %s, which fleetd asked for", d->id,
				missing);
}

/* ASCII case-insensitive equality: what NetBox's iexact means for serials. */
static bool same_serial(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a, y = *b;
		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (char)(y - 'A' + 'a');
		if (x != y)
			return false;
	}
	return *a == *b;
}

struct find_ctx {
	struct netbox *nb;
	const char *serial;
	struct fleet_inv_device *out;
	size_t n;
	long ids[2];
};

static fleet_err find_each(const struct jv_doc *j, uint32_t item, void *ctx,
			   struct fleet_errctx *ec)
{
	struct find_ctx *f = ctx;
	struct fleet_inv_device d;
	fleet_err r = nb_parse_device(j, item, &d, NULL, 0, ec);
	if (r == FLEET_INV_OK)
		r = device_complete(f->nb, j, item, &d, NULL, 0, ec);
	if (r != FLEET_INV_OK)
		return r;
	if (!same_serial(d.serial, f->serial)) {
		/* The filter was not applied (or not as documented): refuse
		 * rather than pick from an unfiltered list. */
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox answered the serial lookup with device %ld, whose "
					"serial differs",
					d.id);
	}
	if (f->n < 2)
		f->ids[f->n] = d.id;
	if (f->n++ == 0)
		*f->out = d;
	return FLEET_INV_OK;
}

static fleet_err nb_find_by_serial(struct fleet_inventory *inv, const char *serial,
				   struct fleet_inv_device *out, struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	char q[3 * FLEET_INV_STR + sizeof(DEVICE_QUERY) + 16], esc[3 * FLEET_INV_STR];
	struct find_ctx f = {.nb = nb, .serial = serial, .out = out};
	memset(out, 0, sizeof(*out));
	/* An empty serial filter is no filter at all: NetBox would list every
	 * device. A serial too long for the inventory matches none. */
	if (!serial || !serial[0] || strlen(serial) >= FLEET_INV_STR)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND,
					"no device has an empty or overlong serial");
	if (!url_escape(serial, esc, sizeof(esc)))
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "serial too long to look up");
	snprintf(q, sizeof(q), "serial=%s&" DEVICE_QUERY, esc);
	fleet_err r = walk(nb, "/api/dcim/devices/", q, find_each, &f, NULL, ec);
	if (r != FLEET_INV_OK) {
		memset(out, 0, sizeof(*out));
		return r;
	}
	if (f.n == 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND,
					"NetBox has no device with that serial");
	if (f.n > 1) {
		memset(out, 0, sizeof(*out));
		return fleet_errctx_msg(ec, FLEET_INV_AMBIGUOUS,
					"%zu NetBox devices have that serial (ids %ld, %ld%s); "
					"refusing to guess",
					f.n, f.ids[0], f.ids[1], f.n > 2 ? ", ..." : "");
	}
	return FLEET_INV_OK;
}

/* Parse a single-device answer and check it is the device asked for. */
static fleet_err device_answer(struct netbox *nb, const struct jv_doc *j, long id,
			       bool asked_fields, struct fleet_inv_device *out,
			       struct fleet_errctx *ec)
{
	fleet_err r = nb_parse_device(j, 0, out, NULL, 0, ec);
	if (r == FLEET_INV_OK && asked_fields)
		r = device_complete(nb, j, 0, out, NULL, 0, ec);
	if (r == FLEET_INV_OK && out->id != id) {
		r = fleet_errctx_msg(ec, FLEET_INV_INVALID,
				     "NetBox answered for device %ld with device %ld", id, out->id);
	}
	if (r != FLEET_INV_OK)
		memset(out, 0, sizeof(*out));
	return r;
}

static fleet_err nb_get(struct fleet_inventory *inv, long id, struct fleet_inv_device *out,
			struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	char url[MAX_URL];
	struct jv_doc j;
	memset(out, 0, sizeof(*out));
	if (id <= 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "device id %ld cannot exist", id);
	snprintf(url, sizeof(url), "%s/api/dcim/devices/%ld/?" DEVICE_QUERY, nb->base, id);
	fleet_err r = request_json(nb, "GET", url, NULL, true, &j, NULL, ec);
	if (r != FLEET_INV_OK)
		return r;
	r = device_answer(nb, &j, id, true, out, ec);
	jv_free(&j);
	return r;
}

struct change_ctx {
	long device_id;
	struct nb_change best;
	bool found;
};

static fleet_err change_each(const struct jv_doc *j, uint32_t item, void *ctx,
			     struct fleet_errctx *ec)
{
	struct change_ctx *c = ctx;
	struct nb_change ch;
	fleet_err r = nb_parse_change(j, item, c->device_id, &ch, ec);
	if (r != FLEET_INV_OK || !ch.binding_changed)
		return r;
	/* Newest by time, then by id; the ordering we asked for is not trusted. */
	if (!c->found || ch.when > c->best.when ||
	    (ch.when == c->best.when &&
	     (ch.usec > c->best.usec || (ch.usec == c->best.usec && ch.id > c->best.id)))) {
		c->best = ch;
		c->found = true;
	}
	return FLEET_INV_OK;
}

static fleet_err nb_binding_change(struct fleet_inventory *inv, long id,
				   struct fleet_inv_binding_change *out, struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	struct change_ctx c = {.device_id = id};
	char q[128];
	memset(out, 0, sizeof(*out));
	if (id <= 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "device id %ld cannot exist", id);
	snprintf(q, sizeof(q), "changed_object_type=dcim.device&changed_object_id=%ld"
		 "&ordering=-time", id);
	fleet_err r = walk(nb, "/api/core/object-changes/", q, change_each, &c, NULL, ec);
	if (r != FLEET_INV_OK)
		return r;
	if (c.found) {
		out->found = true;
		memcpy(out->user, c.best.user, sizeof(out->user));
		out->when = c.best.when;
		out->change_id = c.best.id;
	}
	return FLEET_INV_OK;
}

/* PATCH a device with body and read the device NetBox answers with. */
static fleet_err patch(struct netbox *nb, long id, json_t *body, struct fleet_inv_device *after,
		       struct fleet_errctx *ec)
{
	char url[MAX_URL];
	struct jv_doc j;
	char *text = json_dumps(body, JSON_COMPACT);
	if (!text)
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	snprintf(url, sizeof(url), "%s/api/dcim/devices/%ld/", nb->base, id);
	fleet_err r = request_json(nb, "PATCH", url, text, true, &j, NULL, ec);
	free(text);
	if (r != FLEET_INV_OK)
		return r;
	r = device_answer(nb, &j, id, false, after, ec);
	jv_free(&j);
	return r;
}

static fleet_err nb_write_ek_hashes(struct fleet_inventory *inv, long id, const char *ek_hash,
				    const char *ek_hash_ecc, struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	struct fleet_inv_device after;
	const char *v[2] = {ek_hash ? ek_hash : "", ek_hash_ecc ? ek_hash_ecc : ""};
	static const char *const key[2] = {"ek_hash", "ek_hash_ecc"};
	if (id <= 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "device id %ld cannot exist", id);
	json_t *cf = json_object(), *body = json_object();
	if (!cf || !body || json_object_set(body, "custom_fields", cf)) {
		json_decref(cf);
		json_decref(body);
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	}
	json_decref(cf); /* body holds it */
	for (int i = 0; i < 2; i++) {
		if (v[i][0] && !nb_is_ek_hash(v[i])) {
			json_decref(body);
			return fleet_errctx_msg(ec, FLEET_INV_INVALID,
						"%s to write is not 64 lowercase hex digits",
						key[i]);
		}
		/* "" clears: NetBox stores an unset custom field as null. */
		if (json_object_set_new(cf, key[i], v[i][0] ? json_string(v[i]) : json_null())) {
			json_decref(body);
			return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
		}
	}
	fleet_err r = patch(nb, id, body, &after, ec);
	json_decref(body);
	if (r != FLEET_INV_OK)
		return r;
	if (strcmp(after.ek_hash, v[0]) != 0 || strcmp(after.ek_hash_ecc, v[1]) != 0)
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox accepted the write to device %ld but answers with "
					"other EK hashes",
					id);
	return FLEET_INV_OK;
}

static fleet_err nb_set_status(struct fleet_inventory *inv, long id, const char *status,
			       struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	struct fleet_inv_device after;
	if (id <= 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "device id %ld cannot exist", id);
	if (!status || !nb_is_status_slug(status))
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"the status to write is not a status slug");
	json_t *body = json_pack("{s:s}", "status", status);
	if (!body)
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	fleet_err r = patch(nb, id, body, &after, ec);
	json_decref(body);
	if (r != FLEET_INV_OK)
		return r;
	if (strcmp(after.status, status) != 0)
		return fleet_errctx_msg(
			ec, FLEET_INV_INVALID,
			"NetBox accepted status %s for device %ld but answers with %s", status, id,
			after.status);
	return FLEET_INV_OK;
}

static fleet_err nb_clear_desired_action(struct fleet_inventory *inv, long id,
					 struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	struct fleet_inv_device after;
	if (id <= 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "device id %ld cannot exist", id);
	/* NetBox stores an unset custom field as null. */
	json_t *body = json_pack("{s:{s:n}}", "custom_fields", "desired_action");
	if (!body)
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	fleet_err r = patch(nb, id, body, &after, ec);
	json_decref(body);
	if (r != FLEET_INV_OK)
		return r;
	if (after.desired_action[0])
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"NetBox accepted clearing desired_action of device %ld but "
					"answers with one",
					id);
	return FLEET_INV_OK;
}

struct list_ctx {
	struct netbox *nb;
	/* streamed (fn set): each device parsed into one, then handed to fn;
	 * else kept in v */
	fleet_err (*fn)(void *ctx, const struct fleet_inv_device *d);
	void *fn_ctx;
	struct fleet_inv_device one;
	struct fleet_inv_device *v;
	size_t n, cap;
	struct fleet_inv_malformed *bad;
	size_t n_bad, cap_bad;
};

static bool list_grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 64;
	void *nv = reallocarray(*v, ncap, size);
	if (!nv)
		return false;
	*v = nv;
	*cap = ncap;
	return true;
}

/* A name the pass can carry into the journal and compare: set, printable
 * ASCII (NetBox allows a null name and any Unicode). */
static const char *name_fault(const char *name)
{
	if (!name[0])
		return "name:null";
	if (!fleet_ascii_printable(name, strlen(name), FLEET_ASCII_SPACE))
		return "name:not-ascii";
	return NULL;
}

/* What can still be read of a malformed record, to find the device it is. */
static void malformed_keys(const struct jv_doc *j, uint32_t item, struct fleet_inv_malformed *m)
{
	uint32_t id = jv_get(j, item, "id");
	size_t n;
	const char *s = jv_str(j, jv_get(j, item, "serial"), &n);
	if (jv_type(j, id) == JV_INT && j->tok[id].v.i > 0 && j->tok[id].v.i <= (int64_t)LONG_MAX)
		m->id = (long)j->tok[id].v.i;
	if (s) {
		bool ok = strlen(s) == n && n < sizeof(m->serial) &&
			  fleet_ascii_printable(s, n, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT);
		if (ok)
			memcpy(m->serial, s, n + 1);
	}
}

/* Each device is judged on its own: a malformed one is reported in l->bad
 * and the walk goes on. */
static fleet_err list_each(const struct jv_doc *j, uint32_t item, void *ctx,
			   struct fleet_errctx *ec)
{
	struct list_ctx *l = ctx;
	if ((!l->fn && !list_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v))) ||
	    !list_grow((void **)&l->bad, &l->cap_bad, l->n_bad, sizeof(*l->bad))) {
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory listing devices");
	}
	struct fleet_inv_device *d = l->fn ? &l->one : &l->v[l->n];
	struct fleet_inv_malformed *m = &l->bad[l->n_bad];
	struct fleet_errctx perr; /* a malformed device's: reported apart, by its reason */
	memset(m, 0, sizeof(*m));
	fleet_err r = nb_parse_device(j, item, d, m->reason, sizeof(m->reason), &perr);
	if (r == FLEET_INV_OK)
		r = device_complete(l->nb, j, item, d, m->reason, sizeof(m->reason), &perr);
	if (r == FLEET_INV_OK) {
		const char *fault = name_fault(d->name);
		if (!fault) {
			if (l->fn && (r = l->fn(l->fn_ctx, d)) != FLEET_INV_OK)
				return fleet_errctx_msg(
					ec, r, fleet_err_code(r) == FLEET_CODE_NOMEM
						       ? "out of memory keeping the device list"
						       : "the device list's reader stopped it");
			if (l->fn)
				return FLEET_INV_OK;
			l->n++;
			return FLEET_INV_OK;
		}
		snprintf(m->reason, sizeof(m->reason), "%s", fault);
	} else if (r != FLEET_INV_INVALID) {
		if (ec)
			*ec = perr;
		return r;
	}
	if (!m->reason[0])
		snprintf(m->reason, sizeof(m->reason), "device:invalid");
	malformed_keys(j, item, m);
	l->n_bad++;
	return FLEET_INV_OK;
}

static fleet_err nb_list_bounded(struct fleet_inventory *inv, const struct fleet_inv_bound *bound,
				 struct fleet_inv_device **out, size_t *n,
				 struct fleet_inv_malformed **bad, size_t *n_bad,
				 struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	struct list_ctx l = {.nb = nb};
	*out = NULL;
	*n = 0;
	*bad = NULL;
	*n_bad = 0;
	fleet_err r = walk(nb, "/api/dcim/devices/", DEVICE_QUERY, list_each, &l, bound, ec);
	if (r != FLEET_INV_OK) {
		free(l.v);
		free(l.bad);
		return r;
	}
	*out = l.v;
	*n = l.n;
	/* room for one more is made before each record is judged: none was
	 * malformed, so none is handed out (the interface's "NULL when empty") */
	if (l.n_bad == 0) {
		free(l.bad);
		l.bad = NULL;
	}
	*bad = l.bad;
	*n_bad = l.n_bad;
	return FLEET_INV_OK;
}

static fleet_err nb_list_stream(struct fleet_inventory *inv, const struct fleet_inv_bound *bound,
				fleet_err (*fn)(void *ctx, const struct fleet_inv_device *d),
				void *ctx, struct fleet_inv_malformed **bad, size_t *n_bad,
				struct fleet_errctx *ec)
{
	struct netbox *nb = (struct netbox *)inv;
	struct list_ctx l = {.nb = nb, .fn = fn, .fn_ctx = ctx};
	*bad = NULL;
	*n_bad = 0;
	fleet_err r = walk(nb, "/api/dcim/devices/", DEVICE_QUERY, list_each, &l, bound, ec);
	if (r != FLEET_INV_OK || l.n_bad == 0) {
		free(l.bad);
		l.bad = NULL;
		l.n_bad = 0;
	}
	*bad = l.bad;
	*n_bad = l.n_bad;
	return r;
}

static fleet_err nb_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			 struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	return nb_list_bounded(inv, NULL, out, n, bad, n_bad, ec);
}

static void nb_close(struct fleet_inventory *inv)
{
	struct netbox *nb = (struct netbox *)inv;
	if (!nb)
		return;
	/* every handle detaches from the share before the share goes */
	for (size_t i = 0; i < nb->n_pool; i++)
		curl_easy_cleanup(nb->pool[i]);
	if (nb->share)
		curl_share_cleanup(nb->share);
	if (nb->share_locks_ready)
		for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&nb->share_lock[i]);
	if (nb->lock_ready)
		pthread_mutex_destroy(&nb->lock);
	if (nb->auth_header) {
		OPENSSL_cleanse(nb->auth_header, strlen(nb->auth_header));
		free(nb->auth_header);
	}
	free(nb->base);
	fb_free(&nb->ca_pem);
	free(nb);
	curl_global_cleanup();
}

static const struct fleet_inventory_ops netbox_ops = {
	.find_by_serial = nb_find_by_serial,
	.get = nb_get,
	.binding_change = nb_binding_change,
	.write_ek_hashes = nb_write_ek_hashes,
	.set_status = nb_set_status,
	.clear_desired_action = nb_clear_desired_action,
	.list = nb_list,
	.list_bounded = nb_list_bounded,
	.list_stream = nb_list_stream,
	.close = nb_close,
};

/* "Token " for a v1 token (40 hex), "Bearer " for a v2 one (nbt_<key>.<secret>,
 * both parts alphanumeric); NULL for anything else. */
static const char *token_scheme(const char *t)
{
	size_t n = strlen(t), i;
	for (i = 0; i < n; i++)
		if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f') ||
		      (t[i] >= 'A' && t[i] <= 'F')))
			break;
	if (i == n && n == 40)
		return "Token";
	if (strncmp(t, "nbt_", 4) != 0 || n > 512)
		return NULL;
	const char *dot = strchr(t + 4, '.');
	if (!dot || dot == t + 4 || !dot[1])
		return NULL;
	for (const char *p = t + 4; *p; p++)
		if (p != dot && !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
				  (*p >= 'A' && *p <= 'Z')))
			return NULL;
	return "Bearer";
}

/* https://authority[/path] without userinfo, query or fragment. Sets the
 * length of scheme + authority. */
static bool check_base_url(const char *u, size_t *origin_len)
{
	if (strncmp(u, "https://", 8) != 0)
		return false;
	const char *auth = u + 8;
	size_t alen = strcspn(auth, "/");
	if (alen == 0 || memchr(auth, '@', alen))
		return false;
	if (!fleet_ascii_printable(u, strlen(u), 0) || strpbrk(u, "?#%"))
		return false;
	*origin_len = 8 + alen;
	return strlen(u) < 1024;
}

struct fleet_inventory *fleet_netbox_open(const struct fleet_netbox_config *cfg,
					  struct fleet_errctx *ec)
{
	size_t origin_len;
	const char *scheme;
	int rc;
	if (!cfg || !cfg->base_url || !check_base_url(cfg->base_url, &origin_len)) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
				 "NetBox base_url must be https://host[:port][/path] with no "
				 "credentials, query or fragment");
		return NULL;
	}
	if (!cfg->token || !(scheme = token_scheme(cfg->token))) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
				 "NetBox token is neither a v1 token (40 hex digits) nor a v2 "
				 "token (nbt_<key>.<secret>)");
		return NULL;
	}
	if (cfg->timeout_ms < 0 || cfg->page_size > MAX_PAGE_SIZE) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
				 "NetBox timeout_ms must be >= 0 and page_size <= %u",
				 MAX_PAGE_SIZE);
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fleet_errctx_msg(ec, FLEET_E_IO, "libcurl initialisation failed");
		return NULL;
	}
	struct netbox *nb = calloc(1, sizeof(*nb));
	if (!nb) {
		curl_global_cleanup();
		fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		return NULL;
	}
	nb->inv.ops = &netbox_ops;
	if ((rc = pthread_mutex_init(&nb->lock, NULL)) != 0) {
		nb_close(&nb->inv);
		fleet_errctx_errno(ec, FLEET_E_IO, rc, "cannot make a mutex");
		return NULL;
	}
	nb->lock_ready = true;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		if ((rc = pthread_mutex_init(&nb->share_lock[i], NULL)) != 0) {
			while (i-- > 0)
				pthread_mutex_destroy(&nb->share_lock[i]);
			nb_close(&nb->inv);
			fleet_errctx_errno(ec, FLEET_E_IO, rc, "cannot make a mutex");
			return NULL;
		}
	nb->share_locks_ready = true;
	if (!(nb->share = curl_share_init()) ||
	    curl_share_setopt(nb->share, CURLSHOPT_LOCKFUNC, share_lock) ||
	    curl_share_setopt(nb->share, CURLSHOPT_UNLOCKFUNC, share_unlock) ||
	    curl_share_setopt(nb->share, CURLSHOPT_USERDATA, nb) ||
	    curl_share_setopt(nb->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) ||
	    curl_share_setopt(nb->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS)) {
		nb_close(&nb->inv);
		fleet_errctx_msg(ec, FLEET_E_IO, "libcurl share handle initialisation failed");
		return NULL;
	}
	size_t hlen = strlen("Authorization: ") + strlen(scheme) + 1 + strlen(cfg->token) + 1;
	if (!(nb->base = strdup(cfg->base_url)) || !(nb->auth_header = calloc(1, hlen))) {
		nb_close(&nb->inv);
		fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		return NULL;
	}
	/* The CA is read once, as configuration (lib/file_read.h,
	 * docs/files.md), and handed to libcurl as bytes: not opened again by
	 * path for every request. Refused as the reader says. */
	static const struct fleet_file_policy ca_policy =
		FLEET_FILE_POLICY_CONFIG("the NetBox CA file", 1024 * 1024);
	fleet_err e;
	if (cfg->ca_file && (e = fleet_file_read(AT_FDCWD, cfg->ca_file, &ca_policy, &nb->ca_pem,
						 ec)) != FLEET_OK) {
		nb_close(&nb->inv);
		fleet_errctx_wrap(ec, e, "cannot read ", NULL);
		return NULL;
	}
	if (cfg->ca_file && nb->ca_pem.len == 0) { /* never the system store instead */
		nb_close(&nb->inv);
		fleet_errctx_msg(ec, FLEET_E_MALFORMED, "the NetBox CA file %s is empty",
				 cfg->ca_file);
		return NULL;
	}
	snprintf(nb->auth_header, hlen, "Authorization: %s %s", scheme, cfg->token);
	size_t bl = strlen(nb->base);
	while (bl > origin_len && nb->base[bl - 1] == '/')
		nb->base[--bl] = '\0';
	nb->origin_len = origin_len;
	nb->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	nb->page_size = cfg->page_size ? cfg->page_size : DEFAULT_PAGE_SIZE;
	return &nb->inv;
}

void fleet_netbox_stats(struct fleet_inventory *inv, struct fleet_netbox_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!inv || inv->ops != &netbox_ops)
		return;
	struct netbox *nb = (struct netbox *)inv;
	pthread_mutex_lock(&nb->lock);
	*out = nb->stats;
	pthread_mutex_unlock(&nb->lock);
}
