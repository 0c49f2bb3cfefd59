/*
 * fuzz_spire_nodes_roundtrip.c: spire-nodes.json's one definition
 * (lib/spire_nodes_format.h), both ways.
 *
 *   1. The input as a file: whatever the decoder accepts passes the rules,
 *      encodes, and decodes back to the same document; whatever it refuses
 *      leaves nothing to free. It never crashes.
 *   2. The input as the makings of a document (names, hashes, fingerprints,
 *      times, counts, often breaking a rule): rendered as JSON in its own
 *      order, the decoder accepts it exactly when the rules pass for it
 *      sorted (the writer refuses what the reader would refuse, and nothing
 *      else), and then decodes it to that sorted document;
 *      decode(encode(x)) == x for every x the rules pass.
 *
 * Every encoding must also be byte for byte what jansson's two-space indent
 * makes of it: the bytes fleetd wrote before the encoder was its own.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/spire_nodes_format.h"

static bool same(const struct fleet_spire_nodes *a, const struct fleet_spire_nodes *b)
{
	return a->serial == b->serial && a->generated_at == b->generated_at &&
	       fleet_spire_nodes_same_content(a, b);
}

/* enc is what jansson's indent makes of it, plus the final newline. */
static void check_canonical(const char *enc, size_t len)
{
	json_error_t je;
	json_t *j = json_loadb(enc, len, JSON_REJECT_DUPLICATES, &je);
	char *again = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	if (!again || strlen(again) + 1 != len || memcmp(again, enc, len - 1) ||
	    enc[len - 1] != '\n')
		abort();
	free(again);
	json_decref(j);
}

/* x passes the rules: its encoding decodes back to x. */
static void round_trip(const struct fleet_spire_nodes *x)
{
	char *enc = NULL;
	struct fleet_errctx ec;
	size_t len = 0;
	if (fleet_spire_nodes_encode(x, &enc, &len, &ec) != FLEET_OK)
		abort();
	if (len > FLEET_SPIRE_HEAD_MAX_BYTES +
			  (x->n_eligible + x->n_revoked) * FLEET_SPIRE_ENTRY_MAX_BYTES)
		abort(); /* the size the file cap is derived from */
	check_canonical(enc, len);
	struct fleet_spire_nodes y;
	if (fleet_spire_nodes_decode((const uint8_t *)enc, len, &y, &ec) != FLEET_OK ||
	    !same(x, &y))
		abort();
	fleet_spire_nodes_free(&y);
	free(enc);
}

/* ---- 1: the input as a file ---------------------------------------------- */

static void as_file(const uint8_t *data, size_t size)
{
	struct fleet_spire_nodes x;
	struct fleet_errctx ec;
	if (fleet_spire_nodes_decode(data, size, &x, &ec) != FLEET_OK) {
		if (x.eligible || x.revoked) /* the sentence: fuzz_spire_nodes */
			abort();
		return;
	}
	if (fleet_spire_nodes_check(&x, &ec) != FLEET_OK)
		abort();
	round_trip(&x);
	fleet_spire_nodes_free(&x);
}

/* ---- 2: the input as the makings of a document --------------------------- */

struct src {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct src *s)
{
	if (!s->n)
		return 0;
	s->n--;
	return *s->p++;
}

static int64_t bytes(struct src *s, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | byte(s);
	return (int64_t)v;
}

/* Up to cap-1 characters of alphabet, sometimes cap-1 or more than a rule
 * allows. */
static void text(struct src *s, const char *alphabet, char *out, size_t cap)
{
	uint8_t b = byte(s);
	size_t len = b == 0xff ? cap - 1 : b == 0xfe ? cap - 2 : b % 6;
	size_t na = strlen(alphabet);
	for (size_t i = 0; i < len; i++)
		out[i] = alphabet[byte(s) % na];
	out[len] = '\0';
}

/* A hash of n hex digits, from a small set so that some repeat; sometimes
 * empty, short or not lowercase hex. */
static void hash(struct src *s, char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b = byte(s);
	if (b < 24) {
		out[0] = '\0';
		return;
	}
	memset(out, hex[b % 16], n);
	out[n] = '\0';
	uint8_t m = byte(s);
	if (m < 8)
		out[m] = "GA -x/Z."[m]; /* not lowercase hex */
	else if (m == 8)
		out[n - 1] = '\0'; /* one short */
	else
		out[m % n] = hex[m / 16];
}

static void gen_node(struct src *s, struct fleet_spire_node *e, bool revoked)
{
	text(s, "ab1.-_A/", e->name, sizeof(e->name));
	if (byte(s) < 40 && strlen(e->name) + 4 < sizeof(e->name))
		strcat(e->name, "-ecc");
	hash(s, e->ek_hash, 64);
	hash(s, e->ek_hash_ecc, 64);
	e->n_ldevid = byte(s) % (FLEET_SPIRE_LDEVID_MAX + 2);
	if (e->n_ldevid && !(e->ldevid_sha1 = calloc(e->n_ldevid, sizeof(*e->ldevid_sha1))))
		abort();
	for (size_t k = 0; k < e->n_ldevid; k++) {
		hash(s, e->ldevid_sha1[k], 40);
		if (!e->ldevid_sha1[k][0])
			memset(e->ldevid_sha1[k], '0' + (int)(k % 10), 40);
	}
	if (revoked)
		e->not_after = byte(s) == 0 ? -1 : bytes(s, 5);
}

static void gen(struct src *s, struct fleet_spire_nodes *x)
{
	memset(x, 0, sizeof(*x));
	x->version = byte(s) == 0x42 ? 2 : FLEET_SPIRE_NODES_VERSION;
	x->serial = byte(s) < 200 ? bytes(s, 2) : bytes(s, 8);
	x->generated_at = byte(s) == 0 ? -1 : bytes(s, 5);
	text(s, "abz09.-_A", x->trust_domain, sizeof(x->trust_domain));
	x->n_eligible = byte(s) % 9;
	x->n_revoked = byte(s) % 9;
	x->eligible = calloc(x->n_eligible + 1, sizeof(*x->eligible));
	x->revoked = calloc(x->n_revoked + 1, sizeof(*x->revoked));
	if (!x->eligible || !x->revoked)
		abort();
	for (size_t i = 0; i < x->n_eligible; i++)
		gen_node(s, &x->eligible[i], false);
	for (size_t i = 0; i < x->n_revoked; i++)
		gen_node(s, &x->revoked[i], true);
}

static json_t *time_json(int64_t t)
{
	char s[21];
	return fleet_spire_time_format(t, s) ? json_string(s) : json_string("not a time");
}

static json_t *node_json(const struct fleet_spire_node *e, bool revoked)
{
	json_t *ld = json_array();
	for (size_t k = 0; k < e->n_ldevid; k++)
		json_array_append_new(ld, json_string(e->ldevid_sha1[k]));
	json_t *o = json_pack("{s:s, s:s, s:o, s:o}", "name", e->name, "ek_hash", e->ek_hash,
			      "ek_hash_ecc",
			      e->ek_hash_ecc[0] ? json_string(e->ek_hash_ecc) : json_null(),
			      "ldevid_sha1", ld);
	if (revoked)
		json_object_set_new(o, "not_after", time_json(e->not_after));
	return o;
}

/* x as any writer might render it: its own order, compact or not. */
static char *render(const struct fleet_spire_nodes *x, bool compact)
{
	json_t *el = json_array(), *rv = json_array();
	for (size_t i = 0; i < x->n_eligible; i++)
		json_array_append_new(el, node_json(&x->eligible[i], false));
	for (size_t i = 0; i < x->n_revoked; i++)
		json_array_append_new(rv, node_json(&x->revoked[i], true));
	json_t *o = json_pack("{s:i, s:I, s:o, s:s, s:o, s:o}", "version", x->version, "serial",
			      (json_int_t)x->serial, "generated_at", time_json(x->generated_at),
			      "trust_domain", x->trust_domain, "eligible", el, "revoked", rv);
	if (!o)
		abort();
	char *text = json_dumps(o, (compact ? JSON_COMPACT : JSON_INDENT(3)) |
					   JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		abort();
	return text;
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(((const struct fleet_spire_node *)a)->name,
		      ((const struct fleet_spire_node *)b)->name);
}

static int cmp_sha1(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* x in the canonical order. */
static void sort_doc(struct fleet_spire_nodes *x)
{
	struct fleet_spire_node *lists[2] = {x->eligible, x->revoked};
	size_t counts[2] = {x->n_eligible, x->n_revoked};
	for (int l = 0; l < 2; l++) {
		qsort(lists[l], counts[l], sizeof(*lists[l]), cmp_node);
		for (size_t i = 0; i < counts[l]; i++)
			if (lists[l][i].n_ldevid > 1)
				qsort(lists[l][i].ldevid_sha1, lists[l][i].n_ldevid,
				      sizeof(*lists[l][i].ldevid_sha1), cmp_sha1);
	}
}

static void as_makings(const uint8_t *data, size_t size)
{
	struct src s = {data, size};
	bool compact = byte(&s) & 1;
	struct fleet_spire_nodes x, y;
	gen(&s, &x);
	char *text = render(&x, compact);
	struct fleet_errctx ec;
	sort_doc(&x);
	bool ok = fleet_spire_nodes_check(&x, &ec) == FLEET_OK;
	fleet_err e = fleet_spire_nodes_decode((const uint8_t *)text, strlen(text), &y, &ec);
	if (ok != (e == FLEET_OK))
		abort(); /* the writer and the reader disagree */
	if (ok) {
		if (!same(&x, &y))
			abort();
		fleet_spire_nodes_free(&y);
		round_trip(&x);
	} else {
		char *enc = NULL;
		size_t len = 0;
		if (fleet_spire_nodes_encode(&x, &enc, &len, &ec) != FLEET_E_MALFORMED || enc)
			abort();
	}
	free(text);
	fleet_spire_nodes_free(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_file(data, size);
	as_makings(data, size);
	return 0;
}
