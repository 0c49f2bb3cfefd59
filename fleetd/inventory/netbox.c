/*
 * netbox.c: the NetBox v4 inventory over HTTPS (libcurl) and jansson.
 *
 * Requests: GET /api/dcim/devices/?serial=S (NetBox's serial filter is
 * iexact, so the match is case-insensitive; we check each result's serial
 * ourselves too), GET /api/dcim/devices/N/, GET /api/core/object-changes/
 * ?changed_object_type=dcim.device&changed_object_id=N&ordering=-time, and
 * PATCH /api/dcim/devices/N/ with {"custom_fields": {"ek_hash", "ek_hash_ecc"}}
 * or {"status"}. NetBox merges a PATCHed custom_fields object into the stored
 * one, so the other custom fields stay as they are. Listings use limit/offset
 * and follow "next" to the end, re-based onto base_url so the token only ever
 * goes to the configured host.
 *
 * Failure semantics: anything that is not an answer (transport error,
 * timeout, TLS failure, 401/403, 429, 5xx, redirect) is UNAVAILABLE; an
 * answer we cannot use (bad JSON, wrong types, caps, a 400) is INVALID; in a
 * listing, one device that does not pass is reported apart instead. Only
 * a device list that is empty is NOT_FOUND, only a 404 on a device is
 * NOT_FOUND, only more than one match is AMBIGUOUS.
 */
#include "fleetd/inventory/netbox.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "fleetd/inventory/netbox_json.h"
#include "lib/buf.h"
#include "lib/file_read.h"

#define DEFAULT_TIMEOUT_MS 10000L
#define DEFAULT_PAGE_SIZE 100u
#define MAX_PAGE_SIZE 1000u
#define MAX_URL 4096

struct netbox {
	struct fleet_inventory inv; /* first: the ops table */
	char *base;                 /* https://host[:port][/prefix], no trailing slash */
	size_t origin_len;          /* length of https://host[:port] within base */
	char *auth_header;          /* "Authorization: Token ..." / "... Bearer ..." */
	struct fleet_buf ca_pem;    /* ca_file's PEM, read once at open; empty: system store */
	long timeout_ms;
	unsigned page_size;
};

struct resp {
	long status;
	struct fleet_buf body;
	bool over;
	char ctype[96];
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t len = sz * n;
	if (r->body.len + len > FLEET_NETBOX_MAX_RESPONSE) {
		r->over = true;
		return 0; /* abort the transfer */
	}
	return fb_put(&r->body, p, len) == FLEET_OK ? len : 0;
}

/* Wipe a header list before freeing it: one entry holds the token. */
static void free_headers(struct curl_slist *h)
{
	for (struct curl_slist *i = h; i; i = i->next)
		OPENSSL_cleanse(i->data, strlen(i->data));
	curl_slist_free_all(h);
}

/*
 * One HTTP exchange. OK means NetBox answered (r->status holds the status,
 * r->body the body); UNAVAILABLE means it did not; INVALID means its answer
 * was over the size cap.
 */
static enum fleet_inv_result exchange(struct netbox *nb, const char *method, const char *url,
				      const char *body, struct resp *r, char *err,
				      size_t errlen)
{
	char ebuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdr = NULL, *tmp;
	CURL *h = curl_easy_init();
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	r->status = 0;
	r->over = false;
	r->ctype[0] = '\0';
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
	long connect_ms = nb->timeout_ms < 5000 ? nb->timeout_ms : 5000;
	struct curl_blob ca_blob = {.data = nb->ca_pem.data, .len = nb->ca_pem.len,
				    .flags = CURL_BLOB_NOCOPY};
	if ((rc = curl_easy_setopt(h, CURLOPT_URL, url)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L)) ||
	    (rc = nb->ca_pem.len ? curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca_blob) : CURLE_OK) ||
	    (rc = nb->ca_pem.len ? curl_easy_setopt(h, CURLOPT_CAPATH, NULL) : CURLE_OK) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, nb->timeout_ms)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_USERAGENT, "fleetd")) ||
	    (rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, r)) ||
	    (rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf)))
		goto out;
	if (body && ((rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body)) ||
		     (rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					    (curl_off_t)strlen(body)))))
		goto out;
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK) {
		char *ct = NULL;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
			snprintf(r->ctype, sizeof(r->ctype), "%s", ct);
	}
out:
	free_headers(hdr);
	curl_easy_cleanup(h);
	if (r->over) {
		snprintf(err, errlen, "NetBox's answer to %s is over %u bytes", method,
			 FLEET_NETBOX_MAX_RESPONSE);
		return FLEET_INV_INVALID;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(err, errlen, "NetBox did not answer %s within %ld ms", method,
			 nb->timeout_ms);
		return FLEET_INV_UNAVAILABLE;
	}
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "NetBox unreachable (%s): %s", curl_easy_strerror(rc),
			 ebuf[0] ? ebuf : "no detail");
		return FLEET_INV_UNAVAILABLE;
	}
	return FLEET_INV_OK;
}

/*
 * An exchange whose answer must be a JSON object with HTTP 200. A 404 is
 * NOT_FOUND when not_found_ok (a device that does not exist), else NetBox is
 * not where base_url says it is.
 */
static enum fleet_inv_result request_json(struct netbox *nb, const char *method, const char *url,
					  const char *body, bool not_found_ok, json_t **out,
					  char *err, size_t errlen)
{
	struct resp r = {0};
	char detail[160];
	*out = NULL;
	fb_init_capped(&r.body, FLEET_NETBOX_MAX_RESPONSE); /* NetBox's answer: untrusted */
	enum fleet_inv_result res = exchange(nb, method, url, body, &r, err, errlen);
	if (res != FLEET_INV_OK)
		goto done;
	nb_error_detail((const char *)r.body.data, r.body.len, detail, sizeof(detail));
	const char *sep = detail[0] ? ": " : "";
	if (r.status == 200) {
		json_error_t je;
		if (strncmp(r.ctype, "application/json", 16) != 0) {
			snprintf(err, errlen, "NetBox answered %s with Content-Type \"%.40s\", not JSON",
				 method, r.ctype);
			res = FLEET_INV_INVALID;
			goto done;
		}
		*out = json_loadb((const char *)r.body.data, r.body.len, JSON_REJECT_DUPLICATES,
				  &je);
		if (!json_is_object(*out)) {
			char why[sizeof(je.text)];
			size_t k = 0;
			for (size_t i = 0; je.text[i] && k + 1 < sizeof(why); i++)
				why[k++] = (je.text[i] >= 0x20 && je.text[i] < 0x7f) ? je.text[i] : '?';
			why[k] = '\0';
			snprintf(err, errlen, "NetBox's answer to %s is not a JSON object (line %d: %.60s)",
				 method, je.line, *out ? "another JSON value" : why);
			json_decref(*out);
			*out = NULL;
			res = FLEET_INV_INVALID;
		}
	} else if (r.status == 404 && not_found_ok) {
		snprintf(err, errlen, "NetBox has no such device (HTTP 404%s%s)", sep, detail);
		res = FLEET_INV_NOT_FOUND;
	} else if (r.status == 401 || r.status == 403) {
		snprintf(err, errlen, "NetBox refused fleetd's token (HTTP %ld%s%s)", r.status, sep,
			 detail);
		res = FLEET_INV_UNAVAILABLE;
	} else if (r.status == 400) {
		snprintf(err, errlen, "NetBox rejected the %s (HTTP 400%s%s)", method, sep, detail);
		res = FLEET_INV_INVALID;
	} else if (r.status >= 300 && r.status < 400) {
		snprintf(err, errlen,
			 "NetBox redirected (HTTP %ld); base_url must name the final location",
			 r.status);
		res = FLEET_INV_UNAVAILABLE;
	} else {
		snprintf(err, errlen, "NetBox failed the %s (HTTP %ld%s%s)", method, r.status, sep,
			 detail);
		res = FLEET_INV_UNAVAILABLE;
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
 * as it saw it (behind a proxy its scheme or host may differ), so only its
 * path and query are taken, the path must be the one we asked for, and the
 * result is re-based onto our own origin.
 */
static enum fleet_inv_result next_url(struct netbox *nb, const json_t *next, const char *path,
				      char *url, size_t urllen, char *err, size_t errlen)
{
	const char *s = json_string_value(next);
	const char *p = s ? strstr(s, "://") : NULL;
	if (!p || !(p = strchr(p + 3, '/'))) {
		snprintf(err, errlen, "NetBox's next page link is not an absolute URL");
		return FLEET_INV_INVALID;
	}
	size_t plen = strlen(path);
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f || *c == '#') {
			snprintf(err, errlen, "NetBox's next page link holds a bad character");
			return FLEET_INV_INVALID;
		}
	if (strncmp(p, path, plen) != 0 || p[plen] != '?') {
		snprintf(err, errlen, "NetBox's next page link leaves %s", path);
		return FLEET_INV_INVALID;
	}
	if ((size_t)snprintf(url, urllen, "%.*s%s", (int)nb->origin_len, nb->base, p) >= urllen) {
		snprintf(err, errlen, "NetBox's next page link is too long");
		return FLEET_INV_INVALID;
	}
	return FLEET_INV_OK;
}

/* Called for each result of a listing; a non-OK result stops the walk. */
typedef enum fleet_inv_result (*each_fn)(const json_t *item, void *ctx, char *err,
					 size_t errlen);

/* GET endpoint?query and every next page; each result goes to fn. */
static enum fleet_inv_result walk(struct netbox *nb, const char *endpoint, const char *query,
				  each_fn fn, void *ctx, char *err, size_t errlen)
{
	char path[MAX_URL], url[MAX_URL];
	size_t seen = 0;
	snprintf(path, sizeof(path), "%s%s", nb->base + nb->origin_len, endpoint);
	if ((size_t)snprintf(url, sizeof(url), "%s%s?%s%slimit=%u", nb->base, endpoint, query,
			     query[0] ? "&" : "", nb->page_size) >= sizeof(url)) {
		snprintf(err, errlen, "request URL too long");
		return FLEET_INV_INVALID;
	}
	for (unsigned page = 0;; page++) {
		json_t *j;
		enum fleet_inv_result r = request_json(nb, "GET", url, NULL, false, &j, err, errlen);
		if (r != FLEET_INV_OK)
			return r;
		const json_t *results = json_object_get(j, "results");
		const json_t *next = json_object_get(j, "next");
		if (!json_is_array(results) || !(json_is_null(next) || json_is_string(next))) {
			snprintf(err, errlen, "NetBox's listing of %s has no results array or next link",
				 endpoint);
			json_decref(j);
			return FLEET_INV_INVALID;
		}
		size_t i;
		const json_t *item;
		json_array_foreach(results, i, item) {
			if (++seen > FLEET_NETBOX_MAX_OBJECTS) {
				snprintf(err, errlen, "NetBox lists over %u objects under %s",
					 FLEET_NETBOX_MAX_OBJECTS, endpoint);
				r = FLEET_INV_INVALID;
			} else {
				r = fn(item, ctx, err, errlen);
			}
			if (r != FLEET_INV_OK) {
				json_decref(j);
				return r;
			}
		}
		if (json_is_null(next)) {
			json_decref(j);
			return FLEET_INV_OK;
		}
		if (json_array_size(results) == 0 || page + 1 >= FLEET_NETBOX_MAX_PAGES) {
			snprintf(err, errlen, "NetBox's listing of %s does not end", endpoint);
			json_decref(j);
			return FLEET_INV_INVALID;
		}
		r = next_url(nb, next, path, url, sizeof(url), err, errlen);
		json_decref(j);
		if (r != FLEET_INV_OK)
			return r;
	}
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
	const char *serial;
	struct fleet_inv_device *out;
	size_t n;
	long ids[2];
};

static enum fleet_inv_result find_each(const json_t *item, void *ctx, char *err, size_t errlen)
{
	struct find_ctx *f = ctx;
	struct fleet_inv_device d;
	enum fleet_inv_result r = nb_parse_device(item, &d, NULL, 0, err, errlen);
	if (r != FLEET_INV_OK)
		return r;
	if (!same_serial(d.serial, f->serial)) {
		/* The filter was not applied (or not as documented): refuse
		 * rather than pick from an unfiltered list. */
		snprintf(err, errlen, "NetBox answered the serial lookup with device %ld, whose "
			 "serial differs", d.id);
		return FLEET_INV_INVALID;
	}
	if (f->n < 2)
		f->ids[f->n] = d.id;
	if (f->n++ == 0)
		*f->out = d;
	return FLEET_INV_OK;
}

static enum fleet_inv_result nb_find_by_serial(struct fleet_inventory *inv, const char *serial,
					       struct fleet_inv_device *out, char *err,
					       size_t errlen)
{
	struct netbox *nb = (struct netbox *)inv;
	char q[3 * FLEET_INV_STR + 64], esc[3 * FLEET_INV_STR];
	struct find_ctx f = {.serial = serial, .out = out};
	memset(out, 0, sizeof(*out));
	/* An empty serial filter is no filter at all: NetBox would list every
	 * device. A serial too long for the inventory matches none. */
	if (!serial || !serial[0] || strlen(serial) >= FLEET_INV_STR) {
		snprintf(err, errlen, "no device has an empty or overlong serial");
		return FLEET_INV_NOT_FOUND;
	}
	if (!url_escape(serial, esc, sizeof(esc))) {
		snprintf(err, errlen, "serial too long to look up");
		return FLEET_INV_NOT_FOUND;
	}
	snprintf(q, sizeof(q), "serial=%s&exclude=config_context", esc);
	enum fleet_inv_result r = walk(nb, "/api/dcim/devices/", q, find_each, &f, err, errlen);
	if (r != FLEET_INV_OK) {
		memset(out, 0, sizeof(*out));
		return r;
	}
	if (f.n == 0) {
		snprintf(err, errlen, "NetBox has no device with that serial");
		return FLEET_INV_NOT_FOUND;
	}
	if (f.n > 1) {
		memset(out, 0, sizeof(*out));
		snprintf(err, errlen, "%zu NetBox devices have that serial (ids %ld, %ld%s); "
			 "refusing to guess", f.n, f.ids[0], f.ids[1], f.n > 2 ? ", ..." : "");
		return FLEET_INV_AMBIGUOUS;
	}
	return FLEET_INV_OK;
}

/* Parse a single-device answer and check it is the device asked for. */
static enum fleet_inv_result device_answer(json_t *j, long id, struct fleet_inv_device *out,
					   char *err, size_t errlen)
{
	enum fleet_inv_result r = nb_parse_device(j, out, NULL, 0, err, errlen);
	if (r == FLEET_INV_OK && out->id != id) {
		snprintf(err, errlen, "NetBox answered for device %ld with device %ld", id, out->id);
		r = FLEET_INV_INVALID;
	}
	if (r != FLEET_INV_OK)
		memset(out, 0, sizeof(*out));
	return r;
}

static enum fleet_inv_result nb_get(struct fleet_inventory *inv, long id,
				    struct fleet_inv_device *out, char *err, size_t errlen)
{
	struct netbox *nb = (struct netbox *)inv;
	char url[MAX_URL];
	json_t *j;
	memset(out, 0, sizeof(*out));
	if (id <= 0) {
		snprintf(err, errlen, "device id %ld cannot exist", id);
		return FLEET_INV_NOT_FOUND;
	}
	snprintf(url, sizeof(url), "%s/api/dcim/devices/%ld/?exclude=config_context", nb->base,
		 id);
	enum fleet_inv_result r = request_json(nb, "GET", url, NULL, true, &j, err, errlen);
	if (r != FLEET_INV_OK)
		return r;
	r = device_answer(j, id, out, err, errlen);
	json_decref(j);
	return r;
}

struct change_ctx {
	long device_id;
	struct nb_change best;
	bool found;
};

static enum fleet_inv_result change_each(const json_t *item, void *ctx, char *err,
					 size_t errlen)
{
	struct change_ctx *c = ctx;
	struct nb_change ch;
	enum fleet_inv_result r = nb_parse_change(item, c->device_id, &ch, err, errlen);
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

static enum fleet_inv_result nb_binding_change(struct fleet_inventory *inv, long id,
					       struct fleet_inv_binding_change *out, char *err,
					       size_t errlen)
{
	struct netbox *nb = (struct netbox *)inv;
	struct change_ctx c = {.device_id = id};
	char q[128];
	memset(out, 0, sizeof(*out));
	if (id <= 0) {
		snprintf(err, errlen, "device id %ld cannot exist", id);
		return FLEET_INV_NOT_FOUND;
	}
	snprintf(q, sizeof(q), "changed_object_type=dcim.device&changed_object_id=%ld"
		 "&ordering=-time", id);
	enum fleet_inv_result r = walk(nb, "/api/core/object-changes/", q, change_each, &c, err,
				       errlen);
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
static enum fleet_inv_result patch(struct netbox *nb, long id, json_t *body,
				   struct fleet_inv_device *after, char *err, size_t errlen)
{
	char url[MAX_URL];
	json_t *j;
	char *text = json_dumps(body, JSON_COMPACT);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return FLEET_INV_UNAVAILABLE;
	}
	snprintf(url, sizeof(url), "%s/api/dcim/devices/%ld/", nb->base, id);
	enum fleet_inv_result r = request_json(nb, "PATCH", url, text, true, &j, err, errlen);
	free(text);
	if (r != FLEET_INV_OK)
		return r;
	r = device_answer(j, id, after, err, errlen);
	json_decref(j);
	return r;
}

static enum fleet_inv_result nb_write_ek_hashes(struct fleet_inventory *inv, long id,
						const char *ek_hash, const char *ek_hash_ecc,
						char *err, size_t errlen)
{
	struct netbox *nb = (struct netbox *)inv;
	struct fleet_inv_device after;
	const char *v[2] = {ek_hash ? ek_hash : "", ek_hash_ecc ? ek_hash_ecc : ""};
	static const char *const key[2] = {"ek_hash", "ek_hash_ecc"};
	if (id <= 0) {
		snprintf(err, errlen, "device id %ld cannot exist", id);
		return FLEET_INV_NOT_FOUND;
	}
	json_t *cf = json_object(), *body = json_object();
	if (!cf || !body || json_object_set(body, "custom_fields", cf)) {
		json_decref(cf);
		json_decref(body);
		snprintf(err, errlen, "out of memory");
		return FLEET_INV_UNAVAILABLE;
	}
	json_decref(cf); /* body holds it */
	for (int i = 0; i < 2; i++) {
		if (v[i][0] && !nb_is_ek_hash(v[i])) {
			json_decref(body);
			snprintf(err, errlen, "%s to write is not 64 lowercase hex digits", key[i]);
			return FLEET_INV_INVALID;
		}
		/* "" clears: NetBox stores an unset custom field as null. */
		if (json_object_set_new(cf, key[i], v[i][0] ? json_string(v[i]) : json_null())) {
			json_decref(body);
			snprintf(err, errlen, "out of memory");
			return FLEET_INV_UNAVAILABLE;
		}
	}
	enum fleet_inv_result r = patch(nb, id, body, &after, err, errlen);
	json_decref(body);
	if (r != FLEET_INV_OK)
		return r;
	if (strcmp(after.ek_hash, v[0]) != 0 || strcmp(after.ek_hash_ecc, v[1]) != 0) {
		snprintf(err, errlen, "NetBox accepted the write to device %ld but answers with "
			 "other EK hashes", id);
		return FLEET_INV_INVALID;
	}
	return FLEET_INV_OK;
}

static enum fleet_inv_result nb_set_status(struct fleet_inventory *inv, long id,
					   const char *status, char *err, size_t errlen)
{
	struct netbox *nb = (struct netbox *)inv;
	struct fleet_inv_device after;
	if (id <= 0) {
		snprintf(err, errlen, "device id %ld cannot exist", id);
		return FLEET_INV_NOT_FOUND;
	}
	if (!status || !nb_is_status_slug(status)) {
		snprintf(err, errlen, "the status to write is not a status slug");
		return FLEET_INV_INVALID;
	}
	json_t *body = json_pack("{s:s}", "status", status);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return FLEET_INV_UNAVAILABLE;
	}
	enum fleet_inv_result r = patch(nb, id, body, &after, err, errlen);
	json_decref(body);
	if (r != FLEET_INV_OK)
		return r;
	if (strcmp(after.status, status) != 0) {
		snprintf(err, errlen, "NetBox accepted status %s for device %ld but answers with %s",
			 status, id, after.status);
		return FLEET_INV_INVALID;
	}
	return FLEET_INV_OK;
}

struct list_ctx {
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
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			return "name:not-ascii";
	return NULL;
}

/* What can still be read of a malformed record, to find the device it is. */
static void malformed_keys(const json_t *item, struct fleet_inv_malformed *m)
{
	const json_t *id = json_object_get(item, "id");
	const json_t *serial = json_object_get(item, "serial");
	if (json_is_integer(id) && json_integer_value(id) > 0 &&
	    json_integer_value(id) <= (json_int_t)LONG_MAX)
		m->id = (long)json_integer_value(id);
	if (json_is_string(serial)) {
		const char *s = json_string_value(serial);
		size_t n = json_string_length(serial);
		bool ok = strlen(s) == n && n < sizeof(m->serial);
		for (size_t i = 0; ok && i < n; i++)
			ok = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] != 0x7f;
		if (ok)
			memcpy(m->serial, s, n + 1);
	}
}

/* Each device is judged on its own: a malformed one is reported in l->bad
 * and the walk goes on. */
static enum fleet_inv_result list_each(const json_t *item, void *ctx, char *err, size_t errlen)
{
	struct list_ctx *l = ctx;
	if (!list_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)) ||
	    !list_grow((void **)&l->bad, &l->cap_bad, l->n_bad, sizeof(*l->bad))) {
		snprintf(err, errlen, "out of memory listing devices");
		return FLEET_INV_UNAVAILABLE;
	}
	struct fleet_inv_malformed *m = &l->bad[l->n_bad];
	char perr[256];
	memset(m, 0, sizeof(*m));
	enum fleet_inv_result r =
		nb_parse_device(item, &l->v[l->n], m->reason, sizeof(m->reason), perr, sizeof(perr));
	if (r == FLEET_INV_OK) {
		const char *fault = name_fault(l->v[l->n].name);
		if (!fault) {
			l->n++;
			return FLEET_INV_OK;
		}
		snprintf(m->reason, sizeof(m->reason), "%s", fault);
	} else if (r != FLEET_INV_INVALID) {
		snprintf(err, errlen, "%s", perr);
		return r;
	}
	if (!m->reason[0])
		snprintf(m->reason, sizeof(m->reason), "device:invalid");
	malformed_keys(item, m);
	l->n_bad++;
	return FLEET_INV_OK;
}

static enum fleet_inv_result nb_list(struct fleet_inventory *inv, struct fleet_inv_device **out,
				     size_t *n, struct fleet_inv_malformed **bad, size_t *n_bad,
				     char *err, size_t errlen)
{
	struct netbox *nb = (struct netbox *)inv;
	struct list_ctx l = {0};
	*out = NULL;
	*n = 0;
	*bad = NULL;
	*n_bad = 0;
	enum fleet_inv_result r = walk(nb, "/api/dcim/devices/", "exclude=config_context",
				       list_each, &l, err, errlen);
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

static void nb_close(struct fleet_inventory *inv)
{
	struct netbox *nb = (struct netbox *)inv;
	if (!nb)
		return;
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
	.list = nb_list,
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
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '?' ||
		    *p == '#' || *p == '%')
			return false;
	*origin_len = 8 + alen;
	return strlen(u) < 1024;
}

struct fleet_inventory *fleet_netbox_open(const struct fleet_netbox_config *cfg, char *err,
					  size_t errlen)
{
	size_t origin_len;
	const char *scheme;
	if (!cfg || !cfg->base_url || !check_base_url(cfg->base_url, &origin_len)) {
		snprintf(err, errlen, "NetBox base_url must be https://host[:port][/path] with no "
			 "credentials, query or fragment");
		return NULL;
	}
	if (!cfg->token || !(scheme = token_scheme(cfg->token))) {
		snprintf(err, errlen, "NetBox token is neither a v1 token (40 hex digits) nor a v2 "
			 "token (nbt_<key>.<secret>)");
		return NULL;
	}
	if (cfg->timeout_ms < 0 || cfg->page_size > MAX_PAGE_SIZE) {
		snprintf(err, errlen, "NetBox timeout_ms must be >= 0 and page_size <= %u",
			 MAX_PAGE_SIZE);
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl initialisation failed");
		return NULL;
	}
	struct netbox *nb = calloc(1, sizeof(*nb));
	if (!nb) {
		curl_global_cleanup();
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nb->inv.ops = &netbox_ops;
	size_t hlen = strlen("Authorization: ") + strlen(scheme) + 1 + strlen(cfg->token) + 1;
	if (!(nb->base = strdup(cfg->base_url)) || !(nb->auth_header = calloc(1, hlen))) {
		nb_close(&nb->inv);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* The CA is read once, as configuration (lib/file_read.h,
	 * docs/files.md), and handed to libcurl as bytes: not opened again by
	 * path for every request. */
	static const struct fleet_file_policy ca_policy =
		FLEET_FILE_POLICY_CONFIG("the NetBox CA file", 1024 * 1024);
	struct fleet_file_error fe;
	if (cfg->ca_file && fleet_file_read(AT_FDCWD, cfg->ca_file, &ca_policy, &nb->ca_pem,
					    &fe) != FLEET_OK) {
		nb_close(&nb->inv);
		snprintf(err, errlen, "cannot read %s", fe.detail);
		return NULL;
	}
	if (cfg->ca_file && nb->ca_pem.len == 0) { /* never the system store instead */
		nb_close(&nb->inv);
		snprintf(err, errlen, "the NetBox CA file %s is empty", cfg->ca_file);
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
