/*
 * netbox_json.c: checked conversion of NetBox v4 JSON into inventory structs.
 *
 * The shapes follow NetBox's serializers: a device has "id", "name" (string
 * or null), "serial", "status" {"value","label"}, "primary_ip4" (null or
 * {"id","address":"a.b.c.d/n",...}) and "custom_fields" (every custom field
 * of the model, null when unset). An object change has "id", "time",
 * "user_name", "action" {"value"}, "changed_object_type" ("dcim.device"),
 * "changed_object_id" and "prechange_data"/"postchange_data", which are the
 * model serialized for the change log: there the custom fields sit under
 * "custom_fields" and may simply be absent when never set.
 */
#include "fleetd/inventory/netbox_json.h"

#include <arpa/inet.h>
#include <jansson.h> /* nb_error_detail only: an error body is read as before */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fleetd/inventory/json_view.h"
#include "lib/sanitize.h"

/* Printable ASCII or UTF-8 text without control characters. */
static bool clean_text(const char *s, size_t n)
{
	return fleet_ascii_printable(s, n, FLEET_ASCII_SPACE | FLEET_ASCII_8BIT);
}

/* Where a reason goes (buf NULL: nowhere): "<field>:<problem>". */
struct why {
	char *buf;
	size_t len;
};

static fleet_err bad(struct why *w, const char *field, const char *problem)
{
	if (w && w->buf && w->len)
		snprintf(w->buf, w->len, "%s:%s", field, problem);
	return FLEET_INV_INVALID;
}

/*
 * Copy the string member key of o into out[cap]. A missing member or null is
 * "" when optional, else INVALID; any other type, an embedded NUL, a control
 * character or a length of cap or more is INVALID. what names the object.
 */
static fleet_err get_text_as(const struct jv_doc *j, uint32_t o, const char *key,
			     const char *label, const char *field, struct why *w, bool optional,
			     char *out, size_t cap, const char *what, struct fleet_errctx *ec)
{
	uint32_t v = jv_get(j, o, key);
	out[0] = '\0';
	if (jv_type(j, v) == JV_ABSENT || jv_type(j, v) == JV_NULL) {
		if (optional)
			return FLEET_INV_OK;
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s is missing", what, label);
		return bad(w, field, v != JV_NONE ? "null" : "missing");
	}
	if (jv_type(j, v) != JV_STRING) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s is not a string", what, label);
		return bad(w, field, "not-string");
	}
	size_t n;
	const char *s = jv_str(j, v, &n);
	/* the view refuses \u0000 as jansson does; the length check stays so
	 * that a NUL could never shorten a value unseen */
	if (strlen(s) != n || !clean_text(s, n)) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s holds a control character", what,
				 label);
		return bad(w, field, "control-character");
	}
	if (n >= cap) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s is %zu bytes, over the cap of %zu",
				 what, label, n, cap - 1);
		return bad(w, field, "too-long");
	}
	memcpy(out, s, n + 1);
	return FLEET_INV_OK;
}

static fleet_err get_text(const struct jv_doc *j, uint32_t o, const char *key, struct why *w,
			  bool optional, char *out, size_t cap, const char *what,
			  struct fleet_errctx *ec)
{
	return get_text_as(j, o, key, key, key, w, optional, out, cap, what, ec);
}

static fleet_err get_custom_text(const struct jv_doc *j, uint32_t cf, const char *key,
				 struct why *w, char *out, size_t cap, const char *what,
				 struct fleet_errctx *ec)
{
	char label[64], field[64];
	snprintf(label, sizeof(label), "custom field %s", key);
	snprintf(field, sizeof(field), "custom_fields.%s", key);
	return get_text_as(j, cf, key, label, field, w, true, out, cap, what, ec);
}

static fleet_err get_id(const struct jv_doc *j, uint32_t o, const char *key, struct why *w,
			long *out, const char *what, struct fleet_errctx *ec)
{
	uint32_t v = jv_get(j, o, key);
	if (jv_type(j, v) != JV_INT || j->tok[v].v.i <= 0 || j->tok[v].v.i > (int64_t)LONG_MAX) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s is not a positive integer", what,
				 key);
		return bad(w, key, "not-positive-integer");
	}
	*out = (long)j->tok[v].v.i;
	return FLEET_INV_OK;
}

/* A boolean custom field: true, false, or null/absent (unset). */
static fleet_err get_tristate(const struct jv_doc *j, uint32_t cf, const char *key, struct why *w,
			      int *out, const char *what, struct fleet_errctx *ec)
{
	enum jv_type t = jv_type(j, jv_get(j, cf, key));
	if (t == JV_ABSENT || t == JV_NULL)
		*out = -1;
	else if (t == JV_TRUE || t == JV_FALSE)
		*out = t == JV_TRUE ? 1 : 0;
	else {
		char field[64];
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: custom field %s is not a boolean",
				 what, key);
		snprintf(field, sizeof(field), "custom_fields.%s", key);
		return bad(w, field, "not-boolean");
	}
	return FLEET_INV_OK;
}

bool nb_is_ek_hash(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

bool nb_is_status_slug(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return i >= 1 && i <= 31;
}

static fleet_err get_ek_hash(const struct jv_doc *j, uint32_t cf, const char *key, struct why *w,
			     char out[65], const char *what, struct fleet_errctx *ec)
{
	char tmp[FLEET_INV_STR];
	fleet_err r = get_custom_text(j, cf, key, w, tmp, sizeof(tmp), what, ec);
	if (r != FLEET_INV_OK)
		return r;
	if (tmp[0] && !nb_is_ek_hash(tmp)) {
		char field[64];
		fleet_errctx_msg(ec, FLEET_INV_INVALID,
				 "%s: custom field %s is not 64 lowercase hex digits", what, key);
		snprintf(field, sizeof(field), "custom_fields.%s", key);
		return bad(w, field, "not-ek-hash");
	}
	memcpy(out, tmp, strlen(tmp) + 1);
	return FLEET_INV_OK;
}

/* "a.b.c.d/n" with a real IPv4 address and 0 <= n <= 32. */
static bool is_ipv4_cidr(const char *s)
{
	const char *slash = strchr(s, '/');
	char addr[16];
	struct in_addr a;
	if (!slash || (size_t)(slash - s) >= sizeof(addr))
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	if (inet_pton(AF_INET, addr, &a) != 1)
		return false;
	const char *p = slash + 1;
	if (!p[0] || strlen(p) > 2 || (p[1] && p[0] == '0'))
		return false;
	int n = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		n = n * 10 + (*p - '0');
	}
	return n <= 32;
}

struct text_field {
	const char *key;
	size_t off;
	size_t cap;
};

#define TF(k, m) {k, offsetof(struct fleet_inv_device, m), sizeof(((struct fleet_inv_device *)0)->m)}
static const struct text_field text_fields[] = {
	TF("class", class_name),
	TF("install_disk", install_disk),
	TF("install_disk_serial", install_disk_serial),
	TF("bmc_type", bmc_type),
	TF("tpm_version", tpm_version),
	TF("expected_port", expected_port),
	TF("desired_action", desired_action),
};
#undef TF

fleet_err nb_parse_device(const struct jv_doc *j, uint32_t o, struct fleet_inv_device *d,
			  char *reason, size_t reasonlen, struct fleet_errctx *ec)
{
	fleet_err r;
	char what[48] = "device";
	struct why why = {reason, reasonlen}, *w = &why;
	if (reason && reasonlen)
		reason[0] = '\0';
	memset(d, 0, sizeof(*d));
	d->amt = d->secure_boot_expected = -1;
	if (jv_type(j, o) != JV_OBJECT) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "a device is not a JSON object");
		return bad(w, "device", "not-object");
	}
	if ((r = get_id(j, o, "id", w, &d->id, what, ec)) != FLEET_INV_OK)
		return r;
	snprintf(what, sizeof(what), "device %ld", d->id);
	if ((r = get_text(j, o, "name", w, true, d->name, sizeof(d->name), what, ec)) ||
	    (r = get_text(j, o, "serial", w, false, d->serial, sizeof(d->serial), what, ec)))
		return r;

	uint32_t st = jv_get(j, o, "status");
	if (jv_type(j, st) != JV_OBJECT) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: status is not an object with a value",
				 what);
		return bad(w, "status", "not-object");
	}
	if ((r = get_text_as(j, st, "value", "value", "status", w, false, d->status,
			     sizeof(d->status), what, ec)))
		return r;
	if (!nb_is_status_slug(d->status)) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: status value is not a status slug",
				 what);
		return bad(w, "status", "not-slug");
	}

	uint32_t ip = jv_get(j, o, "primary_ip4");
	if (jv_type(j, ip) != JV_ABSENT && jv_type(j, ip) != JV_NULL) {
		if (jv_type(j, ip) != JV_OBJECT) {
			fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: primary_ip4 is not an object",
					 what);
			return bad(w, "primary_ip4", "not-object");
		}
		if ((r = get_text_as(j, ip, "address", "address", "primary_ip4", w, false,
				     d->primary_ip4, sizeof(d->primary_ip4), what, ec)))
			return r;
		if (!is_ipv4_cidr(d->primary_ip4)) {
			fleet_errctx_msg(ec, FLEET_INV_INVALID,
					 "%s: primary_ip4 address is not an IPv4 address/prefix",
					 what);
			return bad(w, "primary_ip4", "not-ipv4");
		}
	}

	uint32_t cf = jv_get(j, o, "custom_fields");
	if (jv_type(j, cf) != JV_OBJECT) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: custom_fields is not an object", what);
		return bad(w, "custom_fields", "not-object");
	}
	for (size_t i = 0; i < sizeof(text_fields) / sizeof(text_fields[0]); i++) {
		const struct text_field *f = &text_fields[i];
		if ((r = get_custom_text(j, cf, f->key, w, (char *)d + f->off, f->cap, what, ec)))
			return r;
	}
	if ((r = get_tristate(j, cf, "amt", w, &d->amt, what, ec)) ||
	    (r = get_tristate(j, cf, "secure_boot_expected", w, &d->secure_boot_expected, what,
			      ec)) ||
	    (r = get_ek_hash(j, cf, "approved_ek_hash", w, d->approved_ek_hash, what, ec)) ||
	    (r = get_ek_hash(j, cf, "approved_ek_hash_ecc", w, d->approved_ek_hash_ecc, what,
			     ec)) ||
	    (r = get_ek_hash(j, cf, "ek_hash", w, d->ek_hash, what, ec)) ||
	    (r = get_ek_hash(j, cf, "ek_hash_ecc", w, d->ek_hash_ecc, what, ec)))
		return r;
	return FLEET_INV_OK;
}

static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

bool nb_parse_time(const char *s, time_t *t, long *usec)
{
	/* YYYY-MM-DDTHH:MM:SS */
	if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':')
		return false;
	int Y = digits(s, 4), M = digits(s + 5, 2), D = digits(s + 8, 2);
	int h = digits(s + 11, 2), m = digits(s + 14, 2), sec = digits(s + 17, 2);
	if (Y < 1970 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 ||
	    m > 59 || sec < 0 || sec > 60)
		return false;
	const char *p = s + 19;
	long us = 0;
	if (*p == '.') {
		int n = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 6)
				us = us * 10 + (*p - '0');
		if (n == 0 || n > 9)
			return false;
		for (; n < 6; n++)
			us *= 10;
	}
	long off = 0;
	if (p[0] == 'Z' && p[1] == '\0') {
		off = 0;
	} else if ((p[0] == '+' || p[0] == '-') && strlen(p) == 6 && p[3] == ':') {
		int oh = digits(p + 1, 2), om = digits(p + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return false;
		off = (oh * 3600L + om * 60L) * (p[0] == '+' ? 1 : -1);
	} else {
		return false;
	}
	struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D,
			.tm_hour = h, .tm_min = m, .tm_sec = sec};
	time_t base = timegm(&tm);
	if (base == (time_t)-1)
		return false;
	*t = base - off;
	*usec = us;
	return true;
}

/*
 * The binding value key from a change-log snapshot (prechange_data or
 * postchange_data, either may be null): absent, null and "" all mean unset.
 */
static fleet_err snapshot_value(const struct jv_doc *j, uint32_t snap, const char *key,
				const char **out, const char *what, struct fleet_errctx *ec)
{
	*out = "";
	if (jv_type(j, snap) == JV_ABSENT || jv_type(j, snap) == JV_NULL)
		return FLEET_INV_OK;
	if (jv_type(j, snap) != JV_OBJECT) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: change data is not an object", what);
		return FLEET_INV_INVALID;
	}
	uint32_t cf = jv_get(j, snap, "custom_fields");
	if (jv_type(j, cf) == JV_ABSENT || jv_type(j, cf) == JV_NULL)
		return FLEET_INV_OK;
	if (jv_type(j, cf) != JV_OBJECT) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID,
				 "%s: custom_fields in change data is not an object", what);
		return FLEET_INV_INVALID;
	}
	uint32_t v = jv_get(j, cf, key);
	if (jv_type(j, v) == JV_ABSENT || jv_type(j, v) == JV_NULL)
		return FLEET_INV_OK;
	size_t n;
	const char *s = jv_str(j, v, &n);
	if (!s || strlen(s) != n) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s in change data is not a string",
				 what, key);
		return FLEET_INV_INVALID;
	}
	*out = s;
	return FLEET_INV_OK;
}

fleet_err nb_parse_change(const struct jv_doc *j, uint32_t o, long device_id,
			  struct nb_change *c, struct fleet_errctx *ec)
{
	fleet_err r;
	char what[64] = "object change";
	char buf[64];
	long obj_id;
	memset(c, 0, sizeof(*c));
	if (jv_type(j, o) != JV_OBJECT) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "an object change is not a JSON object");
		return FLEET_INV_INVALID;
	}
	if ((r = get_id(j, o, "id", NULL, &c->id, what, ec)))
		return r;
	snprintf(what, sizeof(what), "object change %ld", c->id);
	if ((r = get_text(j, o, "changed_object_type", NULL, false, buf, sizeof(buf), what, ec)) ||
	    (r = get_id(j, o, "changed_object_id", NULL, &obj_id, what, ec)))
		return r;
	if (strcmp(buf, "dcim.device") != 0 || obj_id != device_id) {
		/* The filter was not applied: never read another object's history
		 * as this device's. */
		fleet_errctx_msg(ec, FLEET_INV_INVALID,
				 "%s is about another object, not dcim.device %ld", what,
				 device_id);
		return FLEET_INV_INVALID;
	}
	if ((r = get_text(j, o, "time", NULL, false, buf, sizeof(buf), what, ec)))
		return r;
	if (!nb_parse_time(buf, &c->when, &c->usec)) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: time is not an ISO 8601 date and time",
				 what);
		return FLEET_INV_INVALID;
	}
	if ((r = get_text(j, o, "user_name", NULL, false, c->user, sizeof(c->user), what, ec)))
		return r;
	uint32_t act = jv_get(j, o, "action");
	if (jv_type(j, act) != JV_OBJECT ||
	    (r = get_text(j, act, "value", NULL, false, buf, sizeof(buf), what, ec)) ||
	    (strcmp(buf, "create") && strcmp(buf, "update") && strcmp(buf, "delete"))) {
		fleet_errctx_msg(ec, FLEET_INV_INVALID,
				 "%s: action is not create, update or delete", what);
		return FLEET_INV_INVALID;
	}
	static const char *const binding[] = {"approved_ek_hash", "approved_ek_hash_ecc"};
	uint32_t pre = jv_get(j, o, "prechange_data");
	uint32_t post = jv_get(j, o, "postchange_data");
	for (size_t i = 0; i < 2; i++) {
		const char *a, *b;
		if ((r = snapshot_value(j, pre, binding[i], &a, what, ec)) ||
		    (r = snapshot_value(j, post, binding[i], &b, what, ec)))
			return r;
		if (strcmp(a, b) != 0)
			c->binding_changed = true;
	}
	return FLEET_INV_OK;
}

/* s sanitised (lib/sanitize.h) into out at *o: at most max characters of
 * s, "[+N]" when cut, never past outlen - 1. */
static void put_clean(char *out, size_t outlen, size_t *o, const char *s, size_t max)
{
	fleet_sanitize(s, strlen(s), out + *o, outlen - *o, max);
	*o += strlen(out + *o);
}

#define DETAIL_DEPTH 4      /* custom_fields.<name> is two levels; a little room */
#define DETAIL_PATH 80      /* bytes of a field path shown */
#define DETAIL_MESSAGE 120  /* characters of one message shown */
#define DETAIL_SHOWN 3      /* messages shown; the rest are counted */

struct detail {
	char *out;
	size_t outlen, o;
	unsigned shown, more;
};

/* One message at path: "<path>: <message>", or the message alone for the
 * whole request (no path, "detail", Django's "__all__", DRF's
 * "non_field_errors"). */
static void detail_add(struct detail *d, const char *path, const char *msg)
{
	if (d->shown == DETAIL_SHOWN) {
		d->more++;
		return;
	}
	if (d->shown++)
		put_clean(d->out, d->outlen, &d->o, "; ", 2);
	if (path[0]) {
		put_clean(d->out, d->outlen, &d->o, path, DETAIL_PATH);
		put_clean(d->out, d->outlen, &d->o, ": ", 2);
	}
	put_clean(d->out, d->outlen, &d->o, msg, DETAIL_MESSAGE);
}

static bool whole_request_key(const char *k)
{
	return !strcmp(k, "detail") || !strcmp(k, "__all__") || !strcmp(k, "non_field_errors");
}

/*
 * Django REST framework's error shapes, as NetBox renders them: a string, a
 * list of strings, or an object whose members are errors of the field they
 * name - nested for a field that is itself an object. NetBox answers a bad
 * custom_fields with {"custom_fields": {"<name>": "<message>"}} (an unknown
 * name, 4.5.8 and later), {"custom_fields": ["<message>"]} (not an object)
 * or {"__all__": ["Invalid value for custom field '<name>': ..."]} (a value
 * the field's validation refuses). A list of objects (a bulk request) keeps
 * the same path for each. Depth is capped: the body is NetBox's, not ours.
 */
static void detail_walk(struct detail *d, const json_t *v, const char *path, int depth)
{
	if (json_is_string(v)) {
		detail_add(d, path, json_string_value(v));
	} else if (json_is_array(v) && depth < DETAIL_DEPTH) {
		size_t i;
		const json_t *e;
		json_array_foreach(v, i, e)
			detail_walk(d, e, path, depth + 1);
	} else if (json_is_object(v) && depth < DETAIL_DEPTH) {
		const char *k;
		const json_t *e;
		json_object_foreach((json_t *)v, k, e) {
			char sub[DETAIL_PATH + 1];
			if (whole_request_key(k))
				snprintf(sub, sizeof(sub), "%s", path);
			else
				snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", k);
			detail_walk(d, e, sub, depth + 1);
		}
	}
}

void nb_error_detail(const char *body, size_t len, char *out, size_t outlen)
{
	json_error_t je;
	struct detail d = {.out = out, .outlen = outlen};
	if (!outlen)
		return;
	out[0] = '\0';
	json_t *j = json_loadb(body, len, 0, &je);
	if (json_is_object(j) || json_is_array(j))
		detail_walk(&d, j, "", 0);
	json_decref(j);
	if (d.more) {
		char tail[32];
		snprintf(tail, sizeof(tail), " (+%u more)", d.more);
		put_clean(out, outlen, &d.o, tail, sizeof(tail));
	}
}
