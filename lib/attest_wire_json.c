/*
 * attest_wire_json.c: reading and writing the protocol's JSON fields with
 * jansson, every value checked for type and cap before it is used.
 */
#include "lib/attest_wire_json.h"
#include "lib/attest_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/sanitize.h"

fleet_err wj_keys(const json_t *obj, const char *const *allowed, const char *path,
		  struct fleet_errctx *ec)
{
	const char *key;
	json_t *v;
	size_t i = 0;

	json_object_foreach((json_t *)obj, key, v) {
		bool known = false;
		(void)v;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(key, *a) == 0)
				known = true;
		/* The key itself is input: name its position, not its text. */
		if (!known)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s: unknown field (member %zu)", path, i + 1);
		i++;
	}
	return FLEET_OK;
}

json_t *wj_need(const json_t *obj, const char *key, const char *path, fleet_err *e,
		struct fleet_errctx *ec)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		*e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s%s%s: missing", path,
				      path[0] ? "." : "", key);
	return v;
}

fleet_err wj_load(const uint8_t *body, size_t len, const char *const *allowed, json_t **out,
		  struct fleet_errctx *ec)
{
	json_error_t jerr;
	json_t *root, *v;
	fleet_err e = FLEET_OK;

	*out = NULL;
	if (!body && len)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "body: NULL");
	if (len > FLEET_WIRE_MAX_BODY)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "body: %zu bytes, over %u", len,
					FLEET_WIRE_MAX_BODY);
	/* jansson refuses NUL in strings, invalid UTF-8, trailing bytes and
	 * (with this flag) a key given twice, which JSON would let the last
	 * one win silently. */
	root = json_loadb((const char *)(body ? body : (const uint8_t *)""), len,
			  JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, (size_t)jerr.position,
					"body: not valid JSON (or a duplicate key)");
	if (!json_is_object(root)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "body: not a JSON object");
		goto fail;
	}
	if ((e = wj_keys(root, allowed, "body", ec)) != FLEET_OK)
		goto fail;
	if (!(v = wj_need(root, "v", "", &e, ec)))
		goto fail;
	if (!json_is_integer(v) || json_integer_value(v) != FLEET_WIRE_VERSION) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "v: not %d", FLEET_WIRE_VERSION);
		goto fail;
	}
	*out = root;
	return FLEET_OK;
fail:
	json_decref(root);
	return e;
}

bool fleet_wire_text_ok(const char *s, size_t n)
{
	return wj_text_ok(s, n);
}

bool wj_text_ok(const char *s, size_t n)
{
	if (!fleet_ascii_printable(s, n, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT))
		return false;
	/* U+0080..U+009F (C1) are 0xC2 0x80..0x9F in UTF-8. */
	for (size_t i = 0; i + 1 < n; i++)
		if ((unsigned char)s[i] == 0xc2 && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f)
			return false;
	return true;
}

fleet_err wj_string(const json_t *v, const char *path, size_t min, size_t max, char *dst,
		    struct fleet_errctx *ec)
{
	size_t n;
	const char *s;

	if (!v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", path);
	if (!json_is_string(v))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not a string", path);
	n = json_string_length(v);
	s = json_string_value(v);
	if (n > max)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "%s: %zu bytes, over %zu", path, n,
					max);
	if (n < min)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: shorter than %zu", path, min);
	if (!wj_text_ok(s, n))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: control character", path);
	memcpy(dst, s, n);
	dst[n] = '\0';
	return FLEET_OK;
}

fleet_err wj_bytes(const json_t *v, const char *path, size_t max, struct fleet_wire_bytes *out,
		   struct fleet_errctx *ec)
{
	fleet_err e;

	if (!v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", path);
	if (!json_is_string(v))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not a string", path);
	e = fleet_b64url_decode(json_string_value(v), json_string_length(v), max, out);
	if (e == FLEET_E_TOO_LARGE)
		return fleet_errctx_msg(ec, e, "%s: over %zu bytes", path, max);
	if (e != FLEET_OK)
		return fleet_errctx_msg(ec, e, "%s: not base64url without padding", path);
	if (out->len == 0) {
		free(out->data);
		out->data = NULL;
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: empty", path);
	}
	return FLEET_OK;
}

fleet_err wj_fixed(const json_t *v, const char *path, uint8_t *dst, size_t n,
		   struct fleet_errctx *ec)
{
	struct fleet_wire_bytes b = {0};
	fleet_err e = wj_bytes(v, path, n, &b, ec);

	if (e != FLEET_OK)
		return e;
	if (b.len != n) {
		free(b.data);
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not %zu bytes", path, n);
	}
	memcpy(dst, b.data, n);
	free(b.data);
	return FLEET_OK;
}

fleet_err wj_status(const json_t *obj, const char *const *names, const enum fleet_wire_status *vals,
		    size_t n, enum fleet_wire_status *out, struct fleet_errctx *ec)
{
	fleet_err e = FLEET_OK;
	json_t *v = wj_need(obj, "status", "", &e, ec);

	if (!v)
		return e;
	if (json_is_string(v))
		for (size_t i = 0; i < n; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = vals[i];
				return FLEET_OK;
			}
	return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "status: not one this message may carry");
}

fleet_err wj_int(const json_t *v, const char *path, json_int_t min, json_int_t max,
		 json_int_t *out, struct fleet_errctx *ec)
{
	if (!v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: missing", path);
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s: not an integer %lld..%lld",
					path, (long long)min, (long long)max);
	*out = json_integer_value(v);
	return FLEET_OK;
}

bool wj_mac_ok(const char *s)
{
	if (strlen(s) != FLEET_WIRE_MAC_LEN)
		return false;
	for (size_t i = 0; i < FLEET_WIRE_MAC_LEN; i++) {
		char c = s[i];
		if (i % 3 == 2 ? c != ':' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

bool wj_bytes_ok(const struct fleet_wire_bytes *b, size_t max)
{
	return b->data && b->len > 0 && b->len <= max;
}

void wj_bytes_free(struct fleet_wire_bytes *b)
{
	if (b->data)
		OPENSSL_cleanse(b->data, b->len);
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

json_t *wj_start(void)
{
	json_t *root = json_object();
	if (root && json_object_set_new(root, "v", json_integer(FLEET_WIRE_VERSION)) != 0) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int wj_put_string(json_t *obj, const char *key, const char *s)
{
	if (!s || !wj_text_ok(s, strlen(s)))
		return -1;
	/* json_string refuses invalid UTF-8 by returning NULL. */
	return json_object_set_new(obj, key, json_string(s));
}

json_t *wj_bytes_value(const uint8_t *p, size_t n)
{
	struct fleet_buf b;
	json_t *v = NULL;

	fb_init(&b);
	if (n > 0 && p && fleet_b64url_encode(p, n, &b) == FLEET_OK)
		v = json_stringn((const char *)b.data, b.len);
	fb_free(&b);
	return v;
}

int wj_put_bytes(json_t *obj, const char *key, const uint8_t *p, size_t n)
{
	json_t *v = wj_bytes_value(p, n);

	/* json_object_set_new takes (and releases) v, and refuses NULL. */
	return v ? json_object_set_new(obj, key, v) : -1;
}

fleet_err wj_finish(json_t *obj, struct fleet_buf *out)
{
	char *s = json_dumps(obj, JSON_COMPACT);
	fleet_err e;

	json_decref(obj);
	if (!s)
		return FLEET_E_NOMEM;
	e = fb_put(out, s, strlen(s));
	free(s);
	return e;
}

fleet_err wj_end(json_t *obj, int rc, struct fleet_buf *out)
{
	if (rc != 0) {
		json_decref(obj);
		return FLEET_E_INVALID_ARG;
	}
	return wj_finish(obj, out);
}

fleet_err wj_time_format(time_t t, char out[21])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 1970 || tm.tm_year + 1900 > 9999)
		return FLEET_E_INVALID_ARG;
	if (strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) != 20)
		return FLEET_E_INVALID_ARG;
	return FLEET_OK;
}

/* Exactly n decimal digits. */
static bool digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

fleet_err wj_time_parse(const char *s, time_t *out)
{
	struct tm tm;
	int y, mo, d, h, mi, se;
	char back[21];
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (strlen(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':' || s[19] != 'Z' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
	    !digits(s + 17, 2, &se))
		return FLEET_E_MALFORMED;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59)
		return FLEET_E_MALFORMED;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	t = timegm(&tm);
	/* timegm normalises "02-31" to March: a date that does not come back
	 * unchanged did not exist. */
	if (t == (time_t)-1 || wj_time_format(t, back) != FLEET_OK || strcmp(back, s) != 0)
		return FLEET_E_MALFORMED;
	*out = t;
	return FLEET_OK;
}

fleet_err wj_load_capped(const uint8_t *msg, size_t len, size_t cap, const char *what,
			 const char *const *keys, json_t **root, struct fleet_errctx *ec)
{
	*root = NULL;
	if (len > cap)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "%s: %zu bytes, over %zu", what, len,
					cap);
	return wj_load(msg, len, keys, root, ec);
}
