/*
 * spire_nodes_json.c: the document as JSON (docs/spire-nodes.md). Built with
 * jansson, so escaping is never ours to get wrong; keys are added in the
 * documented order and jansson keeps it.
 */
#include "fleetd/spire/spire_nodes_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/hex.h"

bool spire_rfc3339(int64_t t, char out[21])
{
	/* 1970-01-01 .. 9999-12-31T23:59:59Z: always 20 characters. */
	if (t < 0 || t > INT64_C(253402300799))
		return false;
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return false;
	return strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) == 20;
}

/* Sets key to v (stealing it); false when v is NULL or the set fails. */
static bool put(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0;
}

static json_t *hash_or_null(const char *h)
{
	return h[0] ? json_string(h) : json_null();
}

static json_t *node_json(const struct fleet_spire_node *n, bool revoked)
{
	json_t *o = json_object(), *a = json_array();
	bool ok = o && a;
	for (size_t i = 0; ok && i < n->n_ldevid; i++)
		ok = json_array_append_new(a, json_string(n->ldevid_sha1[i])) == 0;
	ok = ok && put(o, "name", json_string(n->name));
	ok = ok && put(o, "ek_hash", hash_or_null(n->ek_hash));
	ok = ok && put(o, "ek_hash_ecc", hash_or_null(n->ek_hash_ecc));
	if (ok) {
		ok = put(o, "ldevid_sha1", a);
		a = NULL; /* put took it, or failed and freed it */
	}
	if (ok && revoked) {
		char t[21];
		ok = spire_rfc3339(n->not_after, t) && put(o, "not_after", json_string(t));
	}
	if (!ok) {
		json_decref(a);
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *list_json(const struct fleet_spire_node *v, size_t n, bool revoked)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *o = node_json(&v[i], revoked);
		if (!o || json_array_append_new(a, o) != 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *spire_nodes_json(const struct fleet_spire_doc *doc, int64_t serial,
			 const char *generated_at)
{
	json_t *o = json_object();
	bool ok = o && put(o, "version", json_integer(FLEET_SPIRE_NODES_VERSION));
	if (ok && generated_at) {
		ok = put(o, "serial", json_integer((json_int_t)serial)) &&
		     put(o, "generated_at", json_string(generated_at));
	}
	ok = ok && put(o, "trust_domain", json_string(doc->trust_domain));
	ok = ok && put(o, "eligible", list_json(doc->eligible, doc->n_eligible, false));
	ok = ok && put(o, "revoked", list_json(doc->revoked, doc->n_revoked, true));
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static bool list_ok(const struct fleet_spire_node *v, size_t n, bool revoked, const char *which,
		    char *why, size_t whylen)
{
	for (size_t i = 0; i < n; i++) {
		const struct fleet_spire_node *e = &v[i];
		const char *bad = NULL;
		char t[21];
		if (!fleet_spire_name_ok(e->name))
			bad = "a name the format cannot carry";
		else if (i > 0 && strcmp(v[i - 1].name, e->name) >= 0)
			bad = "a name out of order or repeated";
		else if (!fleet_hex_is_lower(e->ek_hash, 64))
			bad = "an ek_hash that is not 64 lowercase hex digits";
		else if (e->ek_hash_ecc[0] && !fleet_hex_is_lower(e->ek_hash_ecc, 64))
			bad = "an ek_hash_ecc that is not 64 lowercase hex digits";
		else if (e->n_ldevid > FLEET_SPIRE_LDEVID_MAX || (e->n_ldevid && !e->ldevid_sha1))
			bad = "too many LDevID fingerprints";
		else if (revoked && !spire_rfc3339(e->not_after, t))
			bad = "a not_after that cannot be written";
		for (size_t k = 0; !bad && k < e->n_ldevid; k++)
			if (!fleet_hex_is_lower(e->ldevid_sha1[k], 40))
				bad = "an LDevID fingerprint that is not 40 lowercase hex digits";
		if (bad) {
			snprintf(why, whylen, "%s[%zu] has %s", which, i, bad);
			return false;
		}
	}
	return true;
}

bool spire_doc_ok(const struct fleet_spire_doc *doc, char *why, size_t whylen)
{
	if (!fleet_spire_trust_domain_ok(doc->trust_domain)) {
		snprintf(why, whylen, "the trust domain is not a SPIFFE trust domain name");
		return false;
	}
	if ((doc->n_eligible && !doc->eligible) || (doc->n_revoked && !doc->revoked)) {
		snprintf(why, whylen, "a list has entries but no array");
		return false;
	}
	return list_ok(doc->eligible, doc->n_eligible, false, "eligible", why, whylen) &&
	       list_ok(doc->revoked, doc->n_revoked, true, "revoked", why, whylen);
}
