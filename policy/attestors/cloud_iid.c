/*
 * cloud_iid.c: the cloud-iid attestor (spec 001 "cloud-iid", "Single-use
 * evidence"): a VM that a provider account created proves it with the
 * identity document its cloud signed, so it needs no token.
 *
 * Refused unless, in this order:
 *   the role asked is one of the configured roles (node)   cloud-iid-role
 *   the evidence is {"v":1,"provider","document"[,"pkcs7"]}
 *     (pkcs7 for an aws provider only, and there required)  cloud-iid-malformed
 *   the provider is configured                              cloud-iid-provider
 *   the provider's checks (gcp, oidc below; aws in
 *     cloud_iid_aws.c)                                       cloud-iid-*
 *   resolve maps (provider, account, instance) somewhere    unknown-instance
 *   of the role asked                                       cloud-iid-role
 *   the instance never joined before                        instance-reused
 *
 * gcp and oidc (a JWT, cloud_iid_jose.c): alg RS256 or ES256
 * (cloud-iid-alg), a key of the provider's JWKS by kid (cloud-iid-key),
 * the signature (cloud-iid-signature), then the claims: iss Google's or
 * one of issuers (cloud-iid-issuer), aud exactly
 * "<audience>#<sha256(csr) hex>" (cloud-iid-audience: the token was asked
 * for this CSR, so a token read off another join cannot carry a key of
 * the thief's), iat at most 60 s ahead (cloud-iid-future) and at most
 * max_age behind (cloud-iid-too-old), exp ahead (cloud-iid-expired), the
 * identity claims (cloud-iid-claims), projects (cloud-iid-project) or
 * accounts (cloud-iid-account).
 *
 * Single use (A5): use_subject is SHA-256(provider 0x00 account 0x00
 * instance), kept forever (INT64_MAX: the prune deletes only rows whose
 * expires_at has passed). Even a token bound to its CSR must not mint a
 * second node, and an AWS document is bound to nothing. A known instance
 * that lost its certificate re-joins with x509pop. The service records
 * the use; verify refuses a subject already recorded before deciding
 * anything else about it, as discovery does.
 */
#include "policy/attestors/cloud_iid_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>

#include "lib/attest_wire.h"
#include "lib/attest_wire_json.h"
#include "lib/hex.h"
#include "lib/tpm_alg.h"

#define GOOGLE_ISSUER "https://accounts.google.com"

const char *const fleet_attestor_cloud_iid_reasons[] = {
	"cloud-iid-role",     "cloud-iid-malformed", "cloud-iid-provider", "cloud-iid-alg",
	"cloud-iid-key",      "cloud-iid-signature", "cloud-iid-issuer",   "cloud-iid-audience",
	"cloud-iid-future",   "cloud-iid-too-old",   "cloud-iid-expired",  "cloud-iid-claims",
	"cloud-iid-project",  "cloud-iid-account",   "cloud-iid-region",   "unknown-instance",
	"instance-reused",    NULL};

bool ciid_id_ok(const json_t *s, char out[CIID_MAX_ID + 1])
{
	if (!json_is_string(s))
		return false;
	size_t n = json_string_length(s);
	const char *v = json_string_value(s);
	/* Printable ASCII: these reach the journal and the store. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
			return false;
	if (n == 0 || n > CIID_MAX_ID)
		return false;
	memcpy(out, v, n + 1);
	return true;
}

bool ciid_listed(char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

const struct ciid_provider *ciid_provider_find(const struct fleet_cloud_iid_config *c,
					       const char *id)
{
	for (size_t i = 0; i < c->n_providers; i++)
		if (!strcmp(c->providers[i].id, id))
			return &c->providers[i];
	return NULL;
}

/* ---- the evidence -------------------------------------------------------- */

struct evidence {
	json_t *root;
	char provider[CIID_MAX_NAME + 1];
	const char *doc, *pkcs7;
	size_t doc_len, pkcs7_len;
};

static bool evidence_decode(const struct fleet_join_input *in, struct evidence *ev)
{
	static const char *const keys[] = {"v", "provider", "document", "pkcs7", NULL};
	const json_t *d, *p;
	memset(ev, 0, sizeof(*ev));
	if (!in->req->has_attestation ||
	    wj_load(in->req->attestation.data, in->req->attestation.len, keys, &ev->root, NULL))
		return false;
	d = json_object_get(ev->root, "document");
	p = json_object_get(ev->root, "pkcs7");
	if (wj_string(json_object_get(ev->root, "provider"), "provider", 1, CIID_MAX_NAME,
		      ev->provider, NULL) ||
	    !json_is_string(d) || json_string_length(d) == 0 ||
	    json_string_length(d) > CIID_MAX_JWT || (p && !json_is_string(p))) {
		json_decref(ev->root);
		ev->root = NULL;
		return false;
	}
	ev->doc = json_string_value(d);
	ev->doc_len = json_string_length(d);
	if (p) {
		ev->pkcs7 = json_string_value(p);
		ev->pkcs7_len = json_string_length(p);
	}
	return true;
}

/* ---- gcp and oidc -------------------------------------------------------- */

/* A dotted path into the claims ("google.compute_engine.project_id"). */
static const json_t *claim_at(const json_t *o, const char *path)
{
	char seg[128];
	while (o && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n == 0 || n >= sizeof(seg) || !json_is_object(o))
			return NULL;
		memcpy(seg, path, n);
		seg[n] = 0;
		o = json_object_get(o, seg);
		path += n + (dot ? 1 : 0);
	}
	return o;
}

static const char *jwt_claims(const struct ciid_provider *p, const json_t *c,
			      const struct fleet_join_input *in, int64_t now,
			      struct ciid_identity *id)
{
	const json_t *iss = json_object_get(c, "iss"), *aud = json_object_get(c, "aud");
	const json_t *iat = json_object_get(c, "iat"), *exp = json_object_get(c, "exp");
	char want[1024];

	if (!json_is_string(iss) ||
	    (p->type == CIID_GCP ? strcmp(json_string_value(iss), GOOGLE_ISSUER) != 0
				 : !ciid_listed(p->issuers, p->n_issuers, json_string_value(iss))))
		return "cloud-iid-issuer";
	/* One audience, a string: an array would let a token asked for
	 * several CSRs serve each. */
	snprintf(want, sizeof(want), "%s#%s", p->audience, in->csr_sha256_hex);
	if (!json_is_string(aud) || strcmp(json_string_value(aud), want) != 0)
		return "cloud-iid-audience";
	if (!json_is_integer(iat) || !json_is_integer(exp))
		return "cloud-iid-claims";
	if (json_integer_value(iat) > now + CIID_CLOCK_SKEW)
		return "cloud-iid-future";
	/* Compared without a subtraction from the token's value: an iat
	 * near INT64_MIN would overflow it and pass. */
	if (json_integer_value(iat) < now - (int64_t)p->max_age)
		return "cloud-iid-too-old";
	if (json_integer_value(exp) <= now)
		return "cloud-iid-expired";
	if (p->type == CIID_GCP) {
		/* format=full: Google's documented compute_engine claims. */
		const json_t *ce = claim_at(c, "google.compute_engine");
		char zone[CIID_MAX_ID + 1], name[CIID_MAX_ID + 1];
		if (!json_is_object(ce) ||
		    !ciid_id_ok(json_object_get(ce, "project_id"), id->account) ||
		    !ciid_id_ok(json_object_get(ce, "instance_id"), id->instance) ||
		    !ciid_id_ok(json_object_get(ce, "zone"), zone) ||
		    !ciid_id_ok(json_object_get(ce, "instance_name"), name))
			return "cloud-iid-claims";
		if (p->n_allow && !ciid_listed(p->allow, p->n_allow, id->account))
			return "cloud-iid-project";
		return NULL;
	}
	if (!ciid_id_ok(claim_at(c, p->account_claim), id->account) ||
	    !ciid_id_ok(claim_at(c, p->instance_claim), id->instance))
		return "cloud-iid-claims";
	if (p->n_allow && !ciid_listed(p->allow, p->n_allow, id->account))
		return "cloud-iid-account";
	return NULL;
}

static const char *jwt_identity(const struct ciid_provider *p, const struct evidence *ev,
				const struct fleet_join_input *in, int64_t now,
				struct ciid_identity *id)
{
	struct ciid_jws j;
	const char *reason;
	ciid_jws_decode(ev->doc, ev->doc_len, &j, &reason);
	if (!reason) {
		ciid_jws_verify(&j, (struct ciid_jwks_src *)&p->jwks, &reason);
		if (!reason)
			reason = jwt_claims(p, j.payload, in, now, id);
	}
	ciid_jws_free(&j);
	return reason;
}

/* ---- resolve and the use ------------------------------------------------- */

static const struct ciid_resolve *resolve(const struct fleet_cloud_iid_config *c,
					  const char *provider, const struct ciid_identity *id)
{
	for (size_t i = 0; i < c->n_resolve; i++) {
		const struct ciid_resolve *r = &c->resolve[i];
		if (!strcmp(r->provider, provider) && !strcmp(r->account, id->account) &&
		    (!r->instance[0] || !strcmp(r->instance, id->instance)))
			return r;
	}
	return NULL;
}

static fleet_err use_subject(const char *provider, const struct ciid_identity *id,
			     char out[65])
{
	uint8_t buf[CIID_MAX_NAME + 2 * (CIID_MAX_ID + 1)], h[32];
	size_t a = strlen(provider), b = strlen(id->account), c = strlen(id->instance);
	memcpy(buf, provider, a);
	buf[a] = 0;
	memcpy(buf + a + 1, id->account, b);
	buf[a + 1 + b] = 0;
	memcpy(buf + a + 2 + b, id->instance, c);
	fleet_err e = fleet_hash(FLEET_ALG_SHA256, buf, a + 2 + b + c, h);
	if (!e)
		fleet_hex_encode(h, sizeof(h), out);
	return e;
}

static bool role_configured(const struct fleet_cloud_iid_config *c, const char *role)
{
	for (size_t i = 0; i < c->n_roles; i++)
		if (!strcmp(c->roles[i], role))
			return true;
	return false;
}

fleet_err fleet_attestor_cloud_iid_verify(const struct fleet_attestor *a,
					  struct fleet_store_tx *tx,
					  const struct fleet_join_input *in,
					  struct fleet_attest_result *out)
{
	const struct fleet_cloud_iid_config *cfg = a->cfg;
	const struct ciid_provider *p;
	const struct ciid_resolve *r;
	struct ciid_identity id;
	struct evidence ev;
	const char *reason;
	int64_t now;
	bool seen = false;
	fleet_err e;

	memset(&id, 0, sizeof(id));
	if (!role_configured(cfg, in->role))
		return fleet_attest_refuse(out, "cloud-iid-role");
	if (!evidence_decode(in, &ev))
		return fleet_attest_refuse(out, "cloud-iid-malformed");
	if (!(p = ciid_provider_find(cfg, ev.provider))) {
		e = fleet_attest_refuse(out, "cloud-iid-provider");
		goto out;
	}
	if ((p->type == CIID_AWS) != (ev.pkcs7 != NULL)) {
		e = fleet_attest_refuse(out, "cloud-iid-malformed");
		goto out;
	}
	if ((e = fleet_store_tx_now(tx, &now)))
		goto out;
	if (p->type == CIID_AWS)
		ciid_aws_verify(p, ev.doc, ev.doc_len, ev.pkcs7, ev.pkcs7_len, now, &id, &reason);
	else
		reason = jwt_identity(p, &ev, in, now, &id);
	if (reason) {
		e = fleet_attest_refuse(out, reason);
		goto out;
	}
	if (!(r = resolve(cfg, p->id, &id))) {
		e = fleet_attest_refuse(out, "unknown-instance");
		goto out;
	}
	if (strcmp(r->role, in->role) != 0) {
		e = fleet_attest_refuse(out, "cloud-iid-role");
		goto out;
	}
	if ((e = use_subject(p->id, &id, out->use_subject)) ||
	    (e = fleet_store_tx_use_seen(tx, a->id, out->use_subject, &seen)))
		goto out;
	if (seen) {
		e = fleet_attest_refuse(out, "instance-reused");
		goto out;
	}
	out->outcome = FLEET_ATTEST_RESULT;
	snprintf(out->pool, sizeof(out->pool), "%s", r->pool);
	snprintf(out->site, sizeof(out->site), "%s", r->site);
	snprintf(out->role, sizeof(out->role), "%s", r->role);
	out->node_id[0] = 0; /* a new node */
	out->token_based = false;
	out->validity_seconds = 0;
	out->use_expires_at = INT64_MAX; /* forever */
	out->use_reason = "instance-reused";
out:
	json_decref(ev.root);
	ERR_clear_error();
	return e;
}

fleet_err fleet_attestor_cloud_iid_prepare(const struct fleet_attestor *a,
					   const struct fleet_join_input *in)
{
	const struct fleet_cloud_iid_config *cfg = a->cfg;
	const struct ciid_provider *p;
	struct fleet_errctx ec = {0};
	struct evidence ev;
	struct ciid_jws j;
	const char *reason;
	fleet_err e = FLEET_OK;

	/* Nothing to fetch for evidence verify will refuse anyway. */
	if (!evidence_decode(in, &ev))
		return FLEET_OK;
	p = ciid_provider_find(cfg, ev.provider);
	if (p && p->has_jwks) {
		ciid_jws_decode(ev.doc, ev.doc_len, &j, &reason);
		e = ciid_src_refresh((struct ciid_jwks_src *)&p->jwks, reason ? NULL : j.kid, &ec);
		ciid_jws_free(&j);
	}
	json_decref(ev.root);
	ERR_clear_error();
	return e;
}
