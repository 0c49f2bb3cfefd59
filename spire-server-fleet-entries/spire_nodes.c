/*
 * spire_nodes.c: spire-nodes.json, read strictly (spire_nodes.h).
 *
 * The applier acts as root on the SPIRE server with what this file says, so
 * the reader is the place where "malformed" is decided once: wrong version,
 * an unknown or missing field, a duplicate key or name, a hash that is not
 * exactly 64 lowercase hex digits, a count past its cap. Each refusal is a
 * sentence naming the list, the index and the rule; it carries no bytes of
 * the input other than numbers, so it is safe to log.
 */
#include "spire-server-fleet-entries/spire_nodes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hex.h"

static fleet_err refuse(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static fleet_err refuse(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return FLEET_E_MALFORMED;
}


static int two(const char *p, int lo, int hi)
{
	if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
		return 0;
	int v = (p[0] - '0') * 10 + (p[1] - '0');
	return v >= lo && v <= hi;
}

/* Exactly YYYY-MM-DDTHH:MM:SSZ, in UTC, as fleetd writes it. */
static int time_ok(const char *s)
{
	if (strlen(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':' || s[19] != 'Z')
		return 0;
	for (int i = 0; i < 4; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return two(s + 5, 1, 12) && two(s + 8, 1, 31) && two(s + 11, 0, 23) &&
	       two(s + 14, 0, 59) && two(s + 17, 0, 60);
}

/* Copy a JSON string into out (cap bytes with the NUL); 0 if it is not a
 * string, holds a NUL, or does not fit. */
static int get_str(json_t *v, char *out, size_t cap)
{
	if (!json_is_string(v))
		return 0;
	size_t n = json_string_length(v);
	const char *s = json_string_value(v);
	if (n >= cap || memchr(s, '\0', n))
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return 1;
}

/* Every key of o must be one of keys[]; every one of keys[] must be there. */
static fleet_err check_keys(json_t *o, const char *const *keys, size_t nkeys, const char *where,
			    char *why, size_t whylen)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		size_t i;
		for (i = 0; i < nkeys; i++)
			if (!strcmp(k, keys[i]))
				break;
		if (i == nkeys)
			return refuse(why, whylen, "%s has a field this reader does not know "
					"(the format allows only its documented fields)", where);
	}
	for (size_t i = 0; i < nkeys; i++)
		if (!json_object_get(o, keys[i]))
			return refuse(why, whylen, "%s lacks the required field \"%s\"", where,
				      keys[i]);
	return FLEET_OK;
}

static const char *const dev_keys[] = {"name", "ek_hash", "ek_hash_ecc", "ldevid_sha1",
				       "not_after"};

static fleet_err get_device(json_t *o, int revoked, size_t idx, struct sn_device *d, char *why,
			    size_t whylen)
{
	const char *list = revoked ? "revoked" : "eligible";
	char where[48];
	snprintf(where, sizeof(where), "%s[%zu]", list, idx);
	if (!json_is_object(o))
		return refuse(why, whylen, "%s is not an object", where);
	fleet_err e = check_keys(o, dev_keys, revoked ? 5 : 4, where, why, whylen);
	if (e)
		return e;
	if (!get_str(json_object_get(o, "name"), d->name, sizeof(d->name)) ||
	    !fleet_spire_name_ok(d->name))
		return refuse(why, whylen, "%s.name must be 1 to %d letters, digits, '.', '-' or "
			      "'_', starting with a letter or digit", where, SN_NAME_MAX);
	if (!get_str(json_object_get(o, "ek_hash"), d->ek_hash, sizeof(d->ek_hash)) ||
	    !fleet_hex_is_lower(d->ek_hash, 64))
		return refuse(why, whylen, "%s.ek_hash must be 64 lowercase hex digits (the "
			      "SHA-256 of the EK's SubjectPublicKeyInfo)", where);
	json_t *ecc = json_object_get(o, "ek_hash_ecc");
	if (json_is_null(ecc)) {
		d->ek_hash_ecc[0] = '\0';
	} else if (!get_str(ecc, d->ek_hash_ecc, sizeof(d->ek_hash_ecc)) ||
		   !fleet_hex_is_lower(d->ek_hash_ecc, 64)) {
		return refuse(why, whylen, "%s.ek_hash_ecc must be null or 64 lowercase hex "
			      "digits", where);
	} else if (!strcmp(d->ek_hash_ecc, d->ek_hash)) {
		return refuse(why, whylen, "%s.ek_hash_ecc equals its ek_hash: one TPM has two "
			      "different endorsement keys", where);
	}
	json_t *ld = json_object_get(o, "ldevid_sha1");
	if (!json_is_array(ld))
		return refuse(why, whylen, "%s.ldevid_sha1 must be an array", where);
	if (json_array_size(ld) > SN_MAX_LDEVID)
		return refuse(why, whylen, "%s.ldevid_sha1 has %zu fingerprints, more than %d",
			      where, json_array_size(ld), SN_MAX_LDEVID);
	for (size_t i = 0; i < json_array_size(ld); i++) {
		char *fp = d->ldevid_sha1[d->n_ldevid];
		if (!get_str(json_array_get(ld, i), fp, 41) || !fleet_hex_is_lower(fp, 40))
			return refuse(why, whylen, "%s.ldevid_sha1[%zu] must be 40 lowercase hex "
				      "digits (an LDevID certificate's SHA-1)", where, i);
		for (size_t j = 0; j < d->n_ldevid; j++)
			if (!strcmp(d->ldevid_sha1[j], fp))
				return refuse(why, whylen, "%s.ldevid_sha1[%zu] repeats an "
					      "earlier fingerprint", where, i);
		d->n_ldevid++;
	}
	if (revoked && (!get_str(json_object_get(o, "not_after"), d->not_after,
				 sizeof(d->not_after)) || !time_ok(d->not_after)))
		return refuse(why, whylen, "%s.not_after must be a UTC time such as "
			      "2027-01-01T00:00:00Z", where);
	return FLEET_OK;
}

static fleet_err get_list(json_t *root, int revoked, struct sn_device **out, size_t *n,
			  char *why, size_t whylen)
{
	const char *list = revoked ? "revoked" : "eligible";
	json_t *a = json_object_get(root, list);
	if (!json_is_array(a))
		return refuse(why, whylen, "%s must be an array", list);
	size_t cnt = json_array_size(a);
	if (cnt > SN_MAX_DEVICES)
		return refuse(why, whylen, "%s has %zu devices, more than %d", list, cnt,
			      SN_MAX_DEVICES);
	*out = calloc(cnt ? cnt : 1, sizeof(**out));
	if (!*out)
		return FLEET_E_NOMEM;
	for (size_t i = 0; i < cnt; i++) {
		fleet_err e = get_device(json_array_get(a, i), revoked, i, &(*out)[i], why, whylen);
		if (e)
			return e;
		*n = i + 1;
	}
	return FLEET_OK;
}

static const struct sn_device *find(const struct sn_device *d, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].name, name))
			return &d[i];
	return NULL;
}

const struct sn_device *sn_find_eligible(const struct sn_file *f, const char *name)
{
	return find(f->eligible, f->n_eligible, name);
}

const struct sn_device *sn_find_revoked(const struct sn_file *f, const char *name)
{
	return find(f->revoked, f->n_revoked, name);
}

/* Names unique across both lists; none may be another's name plus "-ecc"
 * (fleet-<n>-ecc would then name two entries); an EK belongs to one
 * eligible device only. */
static fleet_err check_unique(const struct sn_file *f, char *why, size_t whylen)
{
	size_t total = f->n_eligible + f->n_revoked;
	for (size_t i = 0; i < total; i++) {
		const struct sn_device *a = i < f->n_eligible ? &f->eligible[i]
							      : &f->revoked[i - f->n_eligible];
		for (size_t j = 0; j < i; j++) {
			const struct sn_device *b = j < f->n_eligible
							    ? &f->eligible[j]
							    : &f->revoked[j - f->n_eligible];
			if (!strcmp(a->name, b->name))
				return refuse(why, whylen, "device %zu's name repeats device %zu's "
					      "(names are unique across eligible and revoked)",
					      i, j);
			size_t la = strlen(a->name), lb = strlen(b->name);
			if ((la == lb + 4 && !strncmp(a->name, b->name, lb) &&
			     !strcmp(a->name + lb, "-ecc")) ||
			    (lb == la + 4 && !strncmp(b->name, a->name, la) &&
			     !strcmp(b->name + la, "-ecc")))
				return refuse(why, whylen, "devices %zu and %zu: one name is the "
					      "other's plus \"-ecc\", so their entry IDs collide",
					      j, i);
			if (i < f->n_eligible &&
			    (!strcmp(a->ek_hash, b->ek_hash) ||
			     (a->ek_hash_ecc[0] && !strcmp(a->ek_hash_ecc, b->ek_hash_ecc)) ||
			     (a->ek_hash_ecc[0] && !strcmp(a->ek_hash_ecc, b->ek_hash)) ||
			     (b->ek_hash_ecc[0] && !strcmp(b->ek_hash_ecc, a->ek_hash))))
				return refuse(why, whylen, "eligible[%zu] and eligible[%zu] share an "
					      "EK hash", j, i);
		}
	}
	return FLEET_OK;
}

static const char *const top_keys[] = {"version", "serial",  "generated_at", "trust_domain",
				       "eligible", "revoked"};

fleet_err sn_parse(const uint8_t *buf, size_t len, struct sn_file *out, char *why,
		   size_t whylen)
{
	memset(out, 0, sizeof(*out));
	if (whylen)
		why[0] = '\0';
	if (len > SN_MAX_FILE)
		return refuse(why, whylen, "the file has %zu bytes, more than %u", len,
			      SN_MAX_FILE);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return refuse(why, whylen, "not JSON (or a repeated key) at line %d column %d",
			      jerr.line, jerr.column);
	fleet_err e = FLEET_E_MALFORMED;
	if (!json_is_object(root)) {
		refuse(why, whylen, "the top level is not an object");
		goto out;
	}
	if ((e = check_keys(root, top_keys, 6, "the top level", why, whylen)))
		goto out;
	e = FLEET_E_MALFORMED;
	json_t *v = json_object_get(root, "version");
	if (!json_is_integer(v) || json_integer_value(v) != SN_VERSION) {
		refuse(why, whylen, "version must be the integer %d", SN_VERSION);
		goto out;
	}
	v = json_object_get(root, "serial");
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		refuse(why, whylen, "serial must be a non-negative integer");
		goto out;
	}
	out->serial = (long long)json_integer_value(v);
	if (!get_str(json_object_get(root, "generated_at"), out->generated_at,
		     sizeof(out->generated_at)) || !time_ok(out->generated_at)) {
		refuse(why, whylen, "generated_at must be a UTC time such as 2026-11-30T05:00:00Z");
		goto out;
	}
	if (!get_str(json_object_get(root, "trust_domain"), out->trust_domain,
		     sizeof(out->trust_domain)) || !fleet_spire_trust_domain_ok(out->trust_domain)) {
		refuse(why, whylen, "trust_domain must be 1 to %d lowercase letters, digits, "
		       "'.', '-' or '_' (a SPIFFE trust domain name)", SN_TD_MAX);
		goto out;
	}
	if ((e = get_list(root, 0, &out->eligible, &out->n_eligible, why, whylen)) ||
	    (e = get_list(root, 1, &out->revoked, &out->n_revoked, why, whylen)) ||
	    (e = check_unique(out, why, whylen)))
		goto out;
out:
	json_decref(root);
	if (e)
		sn_free(out);
	return e;
}

void sn_free(struct sn_file *f)
{
	free(f->eligible);
	free(f->revoked);
	memset(f, 0, sizeof(*f));
}
