/*
 * spire_nodes_format.c: spire-nodes.json's rules, its canonical bytes and
 * its strict reading (spire_nodes_format.h).
 *
 * Decoding uses jansson (duplicate keys refused), so JSON itself is never
 * ours to get wrong. Encoding writes the bytes directly: every string the
 * format carries is checked to need no escaping before it is written
 * (names, hex, times, the trust domain), and the layout is exactly the one
 * jansson's two-space indent gave the writer before (the round-trip fuzz
 * target compares the two), at a known size per entry.
 */
#include "lib/spire_nodes_format.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/hex.h"

bool fleet_spire_trust_domain_ok(const char *s)
{
	if (!s)
		return false;
	size_t n = strnlen(s, FLEET_SPIRE_TRUST_DOMAIN_MAX + 1);
	if (n == 0 || n > FLEET_SPIRE_TRUST_DOMAIN_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			return false;
	}
	return true;
}

bool fleet_spire_name_ok(const char *s)
{
	if (!s)
		return false;
	size_t n = strnlen(s, FLEET_SPIRE_NAME_MAX + 1);
	if (n == 0 || n > FLEET_SPIRE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '-' && c != '_' && c != '.')))
			return false;
	}
	return true;
}

/* ---- times ---------------------------------------------------------------- */

/* 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z: always 20 characters. */
#define TIME_MAX INT64_C(253402300799)

bool fleet_spire_time_format(int64_t t, char out[21])
{
	if (t < 0 || t > TIME_MAX)
		return false;
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return false;
	return strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) == 20;
}

/* The number in s[at..at+n), digits checked by the caller. */
static int num(const char *s, int at, int n)
{
	int v = 0;
	while (n--)
		v = v * 10 + (s[at++] - '0');
	return v;
}

bool fleet_spire_time_parse(const char *s, int64_t *out)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";
	for (size_t i = 0; i < sizeof(form); i++) /* the NUL too: exactly 20 */
		if (form[i] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != form[i])
			return false;
	int y = num(s, 0, 4), mo = num(s, 5, 2), d = num(s, 8, 2);
	int h = num(s, 11, 2), mi = num(s, 14, 2), sec = num(s, 17, 2);
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59)
		return false;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] + (mo == 2 && leap))
		return false;
	/* Days from 1970-01-01 (the civil-from-days inverse, March-based). */
	int64_t yy = y - (mo <= 2);
	int64_t era = yy / 400, yoe = yy - era * 400;
	int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t days = era * 146097 + doe - 719468;
	*out = days * 86400 + h * 3600 + mi * 60 + sec;
	return true;
}

/* ---- the rules -------------------------------------------------------------- */

static const char *list_name(bool revoked)
{
	return revoked ? "revoked" : "eligible";
}

/* The rules one entry keeps alone; where is "eligible[3]". */
static fleet_err entry_ok(const struct fleet_spire_node *e, bool revoked, const char *where,
			  struct fleet_errctx *ec)
{
	char t[21];
	if (!fleet_spire_name_ok(e->name))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.name must be 1 to %d letters, digits, '.', '-' or "
					"'_', starting with a letter or digit",
					where, FLEET_SPIRE_NAME_MAX);
	if (!fleet_hex_is_lower(e->ek_hash, 64))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.ek_hash must be 64 lowercase hex digits (the "
					"SHA-256 of the EK's SubjectPublicKeyInfo)",
					where);
	if (e->ek_hash_ecc[0] && !fleet_hex_is_lower(e->ek_hash_ecc, 64))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.ek_hash_ecc must be null or 64 lowercase hex "
					"digits",
					where);
	if (!strcmp(e->ek_hash_ecc, e->ek_hash))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.ek_hash_ecc equals its ek_hash: one TPM has two "
					"different endorsement keys",
					where);
	if (e->n_ldevid > FLEET_SPIRE_LDEVID_MAX)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.ldevid_sha1 has %zu fingerprints, more than %d", where,
					e->n_ldevid, FLEET_SPIRE_LDEVID_MAX);
	if (e->n_ldevid && !e->ldevid_sha1)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.ldevid_sha1 has fingerprints but no array", where);
	for (size_t k = 0; k < e->n_ldevid; k++) {
		if (!fleet_hex_is_lower(e->ldevid_sha1[k], 40))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s.ldevid_sha1[%zu] must be 40 lowercase hex "
						"digits (an LDevID certificate's SHA-1)",
						where, k);
		if (k > 0 && strcmp(e->ldevid_sha1[k - 1], e->ldevid_sha1[k]) >= 0)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s.ldevid_sha1[%zu] repeats an earlier "
						"fingerprint or is out of order (they are sorted)",
						where, k);
	}
	if (revoked && !fleet_spire_time_format(e->not_after, t))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.not_after must be a UTC time such as "
					"2027-01-01T00:00:00Z",
					where);
	if (!revoked && e->not_after)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s has a not_after: only revoked entries carry one",
					where);
	return FLEET_OK;
}

static int cmp_node_ptr(const void *a, const void *b)
{
	return strcmp((*(const struct fleet_spire_node *const *)a)->name,
		      (*(const struct fleet_spire_node *const *)b)->name);
}

const struct fleet_spire_node *fleet_spire_nodes_find(const struct fleet_spire_node *v, size_t n,
						      const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v[mid].name, name);
		if (c == 0)
			return &v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Where a sorted entry came from: its index in the file (orig, when the
 * decoder sorted the list) or its own. */
static size_t at(const size_t *orig, size_t i)
{
	return orig ? orig[i] : i;
}

struct ekref {
	const char *hash;
	size_t node;
};

static int cmp_ekref(const void *a, const void *b)
{
	return strcmp(((const struct ekref *)a)->hash, ((const struct ekref *)b)->hash);
}

/* The rules between entries, over lists sorted by name: names unique in
 * and across the lists, none another's plus "-ecc", no EK hash on two
 * eligible entries. orig_e/orig_r map sorted positions back to the file's
 * for the sentence (NULL: the same). */
static fleet_err cross_ok(const struct fleet_spire_nodes *d, const size_t *orig_e,
			  const size_t *orig_r, struct fleet_errctx *ec)
{
	const struct fleet_spire_node *const lists[2] = {d->eligible, d->revoked};
	const size_t counts[2] = {d->n_eligible, d->n_revoked};
	const size_t *const origs[2] = {orig_e, orig_r};
	for (int l = 0; l < 2; l++)
		for (size_t i = 1; i < counts[l]; i++)
			if (!strcmp(lists[l][i - 1].name, lists[l][i].name))
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
							"%s[%zu].name repeats %s[%zu]'s (names are "
							"unique across eligible and revoked)",
							list_name(l), at(origs[l], i), list_name(l),
							at(origs[l], i - 1));
	for (size_t i = 0; i < d->n_revoked; i++) {
		const struct fleet_spire_node *e =
			fleet_spire_nodes_find(d->eligible, d->n_eligible, d->revoked[i].name);
		if (e)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"revoked[%zu].name repeats eligible[%zu]'s (names "
						"are unique across eligible and revoked)",
						at(orig_r, i),
						at(orig_e, (size_t)(e - d->eligible)));
	}
	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < counts[l]; i++) {
			const char *name = lists[l][i].name;
			size_t len = strlen(name);
			if (len <= 4 || strcmp(name + len - 4, "-ecc"))
				continue;
			char base[FLEET_SPIRE_NAME_MAX + 1];
			memcpy(base, name, len - 4);
			base[len - 4] = '\0';
			for (int m = 0; m < 2; m++) {
				const struct fleet_spire_node *b =
					fleet_spire_nodes_find(lists[m], counts[m], base);
				if (b)
					return fleet_errctx_msg(
						ec, FLEET_E_MALFORMED,
						"%s[%zu] and %s[%zu]: one name is "
						"the other's plus \"-ecc\", so their entry IDs "
						"collide",
						list_name(m), at(origs[m], (size_t)(b - lists[m])),
						list_name(l), at(origs[l], i));
			}
		}
	size_t n = d->n_eligible;
	struct ekref *r = calloc(2 * n + 1, sizeof(*r));
	if (!r)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		r[nr++] = (struct ekref){d->eligible[i].ek_hash, i};
		if (d->eligible[i].ek_hash_ecc[0])
			r[nr++] = (struct ekref){d->eligible[i].ek_hash_ecc, i};
	}
	if (nr > 1)
		qsort(r, nr, sizeof(*r), cmp_ekref);
	fleet_err e = FLEET_OK;
	for (size_t i = 1; !e && i < nr; i++)
		if (!strcmp(r[i - 1].hash, r[i].hash)) {
			size_t a = at(orig_e, r[i - 1].node), b = at(orig_e, r[i].node);
			e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					     "eligible[%zu] and eligible[%zu] share an EK hash",
					     a < b ? a : b, a < b ? b : a);
		}
	free(r);
	return e;
}

static fleet_err head_ok(const struct fleet_spire_nodes *d, struct fleet_errctx *ec)
{
	char t[21];
	if (d->version != FLEET_SPIRE_NODES_VERSION)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "version must be the integer %d",
					FLEET_SPIRE_NODES_VERSION);
	if (d->serial < 0 || d->serial > FLEET_SPIRE_SERIAL_MAX)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"serial must be an integer from 0 to %lld",
					(long long)FLEET_SPIRE_SERIAL_MAX);
	if (!fleet_spire_time_format(d->generated_at, t))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"generated_at must be a UTC time such as "
					"2026-11-30T05:00:00Z");
	if (!fleet_spire_trust_domain_ok(d->trust_domain))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"trust_domain must be 1 to %d lowercase letters, "
					"digits, '.', '-' or '_' (a SPIFFE trust domain name)",
					FLEET_SPIRE_TRUST_DOMAIN_MAX);
	return FLEET_OK;
}

static fleet_err count_ok(size_t n, const void *v, bool revoked, struct fleet_errctx *ec)
{
	if (n > FLEET_SPIRE_LIST_MAX)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s has %zu devices, more than %d",
					list_name(revoked), n, FLEET_SPIRE_LIST_MAX);
	if (n && !v)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s has entries but no array",
					list_name(revoked));
	return FLEET_OK;
}

fleet_err fleet_spire_nodes_check(const struct fleet_spire_nodes *d, struct fleet_errctx *ec)
{
	fleet_err e = head_ok(d, ec);
	if (e)
		return e;
	for (int l = 0; l < 2; l++) {
		const struct fleet_spire_node *v = l ? d->revoked : d->eligible;
		size_t n = l ? d->n_revoked : d->n_eligible;
		if ((e = count_ok(n, v, l, ec)))
			return e;
		for (size_t i = 0; i < n; i++) {
			char where[32];
			snprintf(where, sizeof(where), "%s[%zu]", list_name(l), i);
			if ((e = entry_ok(&v[i], l, where, ec)))
				return e;
			if (i > 0 && strcmp(v[i - 1].name, v[i].name) > 0)
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
							"%s.name is out of order (the lists are "
							"sorted by name)",
							where);
		}
	}
	return cross_ok(d, NULL, NULL, ec);
}

/* ---- encoding ------------------------------------------------------------- */

struct out {
	char *p;
	size_t len, cap;
	bool over; /* the sizes above were wrong: never, but never past cap */
};

/* Appends; room was reserved for the whole document up front. */
static void put(struct out *o, const char *s, size_t n)
{
	if (o->over || n >= o->cap - o->len) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

/* The canonical head's bytes around its two values: the encoder writes them
 * and fleet_spire_nodes_head reads them, from these same constants, so the
 * two cannot drift apart. */
static const char head_a[] = "{\n  \"version\": 1,\n  \"serial\": ";
static const char head_b[] = ",\n  \"generated_at\": \"";
static const char head_c[] = "\",\n";

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* "      \"key\": \"value\"" */
static void put_kv(struct out *o, const char *key, const char *value, bool last)
{
	puts_(o, "      \"");
	puts_(o, key);
	if (value) {
		puts_(o, "\": \"");
		puts_(o, value);
		puts_(o, last ? "\"\n" : "\",\n");
	} else {
		puts_(o, last ? "\": null\n" : "\": null,\n");
	}
}

static void put_node(struct out *o, const struct fleet_spire_node *e, bool revoked, bool last)
{
	puts_(o, "    {\n");
	put_kv(o, "name", e->name, false);
	put_kv(o, "ek_hash", e->ek_hash, false);
	put_kv(o, "ek_hash_ecc", e->ek_hash_ecc[0] ? e->ek_hash_ecc : NULL, false);
	if (e->n_ldevid == 0) {
		puts_(o, revoked ? "      \"ldevid_sha1\": [],\n" : "      \"ldevid_sha1\": []\n");
	} else {
		puts_(o, "      \"ldevid_sha1\": [\n");
		for (size_t k = 0; k < e->n_ldevid; k++) {
			puts_(o, "        \"");
			put(o, e->ldevid_sha1[k], 40);
			puts_(o, k + 1 < e->n_ldevid ? "\",\n" : "\"\n");
		}
		puts_(o, revoked ? "      ],\n" : "      ]\n");
	}
	if (revoked) {
		char t[21];
		fleet_spire_time_format(e->not_after, t); /* checked */
		put_kv(o, "not_after", t, true);
	}
	puts_(o, last ? "    }\n" : "    },\n");
}

static void put_list(struct out *o, const struct fleet_spire_node *v, size_t n, bool revoked)
{
	puts_(o, revoked ? "  \"revoked\": [" : "  \"eligible\": [");
	if (n) {
		puts_(o, "\n");
		for (size_t i = 0; i < n; i++)
			put_node(o, &v[i], revoked, i + 1 == n);
		puts_(o, "  ]");
	} else {
		puts_(o, "]");
	}
	puts_(o, revoked ? "\n" : ",\n");
}

fleet_err fleet_spire_nodes_encode(const struct fleet_spire_nodes *d, char **out, size_t *len,
				   struct fleet_errctx *ec)
{
	*out = NULL;
	*len = 0;
	fleet_err e = fleet_spire_nodes_check(d, ec);
	if (e)
		return e;
	/* The sizes the header derives its cap from bound the bytes. */
	struct out o = {.cap = FLEET_SPIRE_HEAD_MAX_BYTES +
			       (d->n_eligible + d->n_revoked) * FLEET_SPIRE_ENTRY_MAX_BYTES + 1};
	if (!(o.p = malloc(o.cap)))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	char num[24], t[21];
	fleet_spire_time_format(d->generated_at, t); /* checked */
	snprintf(num, sizeof(num), "%lld", (long long)d->serial);
	puts_(&o, head_a);
	puts_(&o, num);
	puts_(&o, head_b);
	puts_(&o, t);
	puts_(&o, head_c);
	puts_(&o, "  \"trust_domain\": \"");
	puts_(&o, d->trust_domain);
	puts_(&o, "\",\n");
	put_list(&o, d->eligible, d->n_eligible, false);
	put_list(&o, d->revoked, d->n_revoked, true);
	puts_(&o, "}\n");
	if (o.over) {
		free(o.p);
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"the document is longer than its limits allow");
	}
	o.p[o.len] = '\0';
	*out = o.p;
	*len = o.len;
	return FLEET_OK;
}

/* ---- the canonical head ---------------------------------------------------- */

bool fleet_spire_nodes_head(const char *buf, size_t len, int64_t *serial, int64_t *generated_at,
			    size_t *body)
{
	size_t i = sizeof(head_a) - 1;
	if (!buf || len < i || memcmp(buf, head_a, i) != 0)
		return false;
	/* 1..16 digits: FLEET_SPIRE_SERIAL_MAX has 16; "0" alone or no
	 * leading zero, as "%lld" writes it. */
	size_t d0 = i;
	int64_t v = 0;
	while (i < len && i - d0 < 17 && buf[i] >= '0' && buf[i] <= '9')
		v = v * 10 + (buf[i++] - '0');
	size_t nd = i - d0;
	if (nd == 0 || nd > 16 || (nd > 1 && buf[d0] == '0') || v > FLEET_SPIRE_SERIAL_MAX)
		return false;
	if (len - i < sizeof(head_b) - 1 || memcmp(buf + i, head_b, sizeof(head_b) - 1) != 0)
		return false;
	i += sizeof(head_b) - 1;
	char t[21];
	if (len - i < 20)
		return false;
	memcpy(t, buf + i, 20);
	t[20] = '\0';
	int64_t at;
	if (!fleet_spire_time_parse(t, &at))
		return false;
	i += 20;
	if (len - i < sizeof(head_c) - 1 || memcmp(buf + i, head_c, sizeof(head_c) - 1) != 0)
		return false;
	i += sizeof(head_c) - 1;
	*serial = v;
	*generated_at = at;
	*body = i;
	return true;
}

/* ---- decoding ------------------------------------------------------------- */

/* Copy a JSON string into out (cap bytes with the NUL); false if it is not
 * a string, holds a NUL, or does not fit. */
static bool get_str(json_t *v, char *out, size_t cap)
{
	if (!json_is_string(v))
		return false;
	size_t n = json_string_length(v);
	const char *s = json_string_value(v);
	if (n >= cap || memchr(s, '\0', n))
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/* Every key of o must be one of keys[]; every one of keys[] must be there. */
static fleet_err keys_ok(json_t *o, const char *const *keys, size_t nkeys, const char *where,
			 struct fleet_errctx *ec)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		size_t i;
		for (i = 0; i < nkeys; i++)
			if (!strcmp(k, keys[i]))
				break;
		if (i == nkeys)
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s has a field this reader does not know "
						"(the format allows only its documented fields)",
						where);
	}
	for (size_t i = 0; i < nkeys; i++)
		if (!json_object_get(o, keys[i]))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s lacks the required field \"%s\"", where,
						keys[i]);
	return FLEET_OK;
}

static int cmp_sha1(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static const char *const node_keys[] = {"name", "ek_hash", "ek_hash_ecc", "ldevid_sha1",
					"not_after"};

/* One entry, its fingerprints sorted. */
static fleet_err get_node(json_t *o, bool revoked, size_t idx, struct fleet_spire_node *d,
			  struct fleet_errctx *ec)
{
	fleet_err e;
	char where[32];
	snprintf(where, sizeof(where), "%s[%zu]", list_name(revoked), idx);
	if (!json_is_object(o))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s is not an object", where);
	if ((e = keys_ok(o, node_keys, revoked ? 5 : 4, where, ec)))
		return e;
	/* A string that does not fit cannot be valid: entry_ok says why. */
	if (!get_str(json_object_get(o, "name"), d->name, sizeof(d->name)))
		d->name[0] = '\0';
	if (!get_str(json_object_get(o, "ek_hash"), d->ek_hash, sizeof(d->ek_hash)))
		strcpy(d->ek_hash, "-");
	json_t *ecc = json_object_get(o, "ek_hash_ecc");
	if (!json_is_null(ecc) && (!get_str(ecc, d->ek_hash_ecc, sizeof(d->ek_hash_ecc)) ||
				   !d->ek_hash_ecc[0]))
		strcpy(d->ek_hash_ecc, "-");
	json_t *ld = json_object_get(o, "ldevid_sha1");
	if (!json_is_array(ld))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s.ldevid_sha1 must be an array",
					where);
	size_t n = json_array_size(ld);
	if (n > FLEET_SPIRE_LDEVID_MAX)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"%s.ldevid_sha1 has %zu fingerprints, more than %d", where,
					n, FLEET_SPIRE_LDEVID_MAX);
	if (n && !(d->ldevid_sha1 = calloc(n, sizeof(*d->ldevid_sha1))))
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	d->n_ldevid = n;
	for (size_t i = 0; i < n; i++) {
		char *fp = d->ldevid_sha1[i];
		if (!get_str(json_array_get(ld, i), fp, 41) || !fleet_hex_is_lower(fp, 40))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s.ldevid_sha1[%zu] must be 40 lowercase hex "
						"digits (an LDevID certificate's SHA-1)",
						where, i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(d->ldevid_sha1[j], fp))
				return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
							"%s.ldevid_sha1[%zu] repeats an "
							"earlier fingerprint",
							where, i);
	}
	if (n > 1)
		qsort(d->ldevid_sha1, n, sizeof(*d->ldevid_sha1), cmp_sha1);
	if (revoked) {
		char t[21];
		if (!get_str(json_object_get(o, "not_after"), t, sizeof(t)) ||
		    !fleet_spire_time_parse(t, &d->not_after))
			return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
						"%s.not_after must be a UTC time such as "
						"2027-01-01T00:00:00Z",
						where);
	}
	return entry_ok(d, revoked, where, ec);
}

/* A list, read in the file's order and then sorted by name; *orig gets
 * each sorted entry's index in the file. */
static fleet_err get_list(json_t *root, bool revoked, struct fleet_spire_node **out, size_t *n,
			  size_t **orig, struct fleet_errctx *ec)
{
	const char *list = list_name(revoked);
	json_t *a = json_object_get(root, list);
	if (!json_is_array(a))
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s must be an array", list);
	size_t cnt = json_array_size(a);
	fleet_err e = count_ok(cnt, a, revoked, ec);
	if (e)
		return e;
	struct fleet_spire_node *v = calloc(cnt ? cnt : 1, sizeof(*v));
	struct fleet_spire_node **by = calloc(cnt ? cnt : 1, sizeof(*by));
	struct fleet_spire_node *sorted = calloc(cnt ? cnt : 1, sizeof(*sorted));
	*orig = calloc(cnt ? cnt : 1, sizeof(**orig));
	if (!v || !by || !sorted || !*orig)
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	size_t got = 0;
	for (; !e && got < cnt; got++)
		e = get_node(json_array_get(a, got), revoked, got, &v[got], ec);
	if (!e) {
		for (size_t i = 0; i < cnt; i++)
			by[i] = &v[i];
		if (cnt > 1)
			qsort(by, cnt, sizeof(*by), cmp_node_ptr);
		for (size_t i = 0; i < cnt; i++) {
			sorted[i] = *by[i];
			(*orig)[i] = (size_t)(by[i] - v);
		}
		*out = sorted;
		*n = cnt;
		sorted = NULL;
	} else {
		fleet_spire_node_list_free(v, cnt); /* zeroed past the one that failed */
		v = NULL;
	}
	free(v); /* its entries moved into sorted */
	free(by);
	free(sorted);
	return e;
}

static const char *const top_keys[] = {"version",      "serial",   "generated_at",
				       "trust_domain", "eligible", "revoked"};

fleet_err fleet_spire_nodes_decode(const uint8_t *buf, size_t len, struct fleet_spire_nodes *out,
				   struct fleet_errctx *ec)
{
	memset(out, 0, sizeof(*out));
	if (ec)
		memset(ec, 0, sizeof(*ec));
	if (len > FLEET_SPIRE_NODES_MAX_BYTES)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"the file has %zu bytes, more than %zu", len,
					FLEET_SPIRE_NODES_MAX_BYTES);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root && json_error_code(&jerr) == json_error_out_of_memory)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	if (!root)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"not JSON (or a repeated key) at line %d column %d",
					jerr.line, jerr.column);
	fleet_err e;
	size_t *orig_e = NULL, *orig_r = NULL;
	char t[21];
	if (!json_is_object(root)) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "the top level is not an object");
		goto out;
	}
	if ((e = keys_ok(root, top_keys, 6, "the top level", ec)))
		goto out;
	json_t *v = json_object_get(root, "version");
	out->version = json_is_integer(v) && json_integer_value(v) == FLEET_SPIRE_NODES_VERSION
			       ? FLEET_SPIRE_NODES_VERSION
			       : 0;
	v = json_object_get(root, "serial");
	out->serial = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
	if (!get_str(json_object_get(root, "generated_at"), t, sizeof(t)) ||
	    !fleet_spire_time_parse(t, &out->generated_at))
		out->generated_at = -1;
	if (!get_str(json_object_get(root, "trust_domain"), out->trust_domain,
		     sizeof(out->trust_domain)))
		out->trust_domain[0] = '\0';
	if (!(e = head_ok(out, ec)) &&
	    !(e = get_list(root, false, &out->eligible, &out->n_eligible, &orig_e, ec)) &&
	    !(e = get_list(root, true, &out->revoked, &out->n_revoked, &orig_r, ec)))
		e = cross_ok(out, orig_e, orig_r, ec);
out:
	free(orig_e);
	free(orig_r);
	json_decref(root);
	if (e)
		fleet_spire_nodes_free(out);
	return e;
}

/* ---- the rest ------------------------------------------------------------- */

void fleet_spire_node_list_free(struct fleet_spire_node *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].ldevid_sha1);
	free(v);
}

void fleet_spire_nodes_free(struct fleet_spire_nodes *doc)
{
	if (!doc)
		return;
	fleet_spire_node_list_free(doc->eligible, doc->n_eligible);
	fleet_spire_node_list_free(doc->revoked, doc->n_revoked);
	memset(doc, 0, sizeof(*doc));
}

static bool node_same(const struct fleet_spire_node *a, const struct fleet_spire_node *b)
{
	if (strcmp(a->name, b->name) || strcmp(a->ek_hash, b->ek_hash) ||
	    strcmp(a->ek_hash_ecc, b->ek_hash_ecc) || a->n_ldevid != b->n_ldevid ||
	    a->not_after != b->not_after)
		return false;
	for (size_t k = 0; k < a->n_ldevid; k++)
		if (memcmp(a->ldevid_sha1[k], b->ldevid_sha1[k], 41))
			return false;
	return true;
}

bool fleet_spire_nodes_same_content(const struct fleet_spire_nodes *a,
				    const struct fleet_spire_nodes *b)
{
	if (a->version != b->version || strcmp(a->trust_domain, b->trust_domain) ||
	    a->n_eligible != b->n_eligible || a->n_revoked != b->n_revoked)
		return false;
	for (size_t i = 0; i < a->n_eligible; i++)
		if (!node_same(&a->eligible[i], &b->eligible[i]))
			return false;
	for (size_t i = 0; i < a->n_revoked; i++)
		if (!node_same(&a->revoked[i], &b->revoked[i]))
			return false;
	return true;
}
