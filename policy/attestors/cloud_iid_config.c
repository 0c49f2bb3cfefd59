/*
 * cloud_iid_config.c: the cloud-iid attestor's YAML file
 * (docs/attestor-cloud-iid.md), read with lib/yaml_strict.h: one
 * document, every mapping's keys known (an unknown one refused with its
 * path, line and column), no aliases, no tags.
 *
 *   providers:              1..16
 *     - id: gcp             1..63 of a-z 0-9 _ - (the evidence's "provider")
 *       type: gcp           gcp | aws | oidc
 *       audience: ...       gcp, oidc (required): the token's aud is "<audience>#<csr sha256>"
 *       jwks_file: path     gcp, oidc: exactly one of jwks_file, jwks_url
 *       jwks_url: https://...
 *       projects: [..]      gcp: the project ids accepted (absent or []: all)
 *       accounts: [..]      aws, oidc: the account ids accepted (absent or []: all)
 *       certificates:       aws (required): region -> PEM file; '*' the others
 *       issuers: [..]       oidc (required)
 *       account_claim: a.b  oidc (required): dotted paths to string claims
 *       instance_claim: c
 *       max_age_seconds: N  gcp, oidc 600; aws 1800 (of pendingTime); 1..86400
 *   resolve:                first match wins
 *     - {provider, account, instance?, pool, site?, role?}
 *   roles: [node]           the roles a cloud VM may join as (node, site, ramdisk)
 *
 * Everything a type does not use is refused for it (a `projects` on an
 * aws provider would otherwise read as a limit that is not applied).
 */
#include "policy/attestors/cloud_iid_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "lib/file_read.h"
#include "lib/yaml_strict.h"

#define MAX_FILE (256u * 1024)
#define MAX_PROVIDERS 16
#define MAX_RESOLVE 4096
#define MAX_LIST 256
#define MAX_CERTS 64
#define MAX_PATH 1024
#define MAX_CERT_FILE (64u * 1024)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
	/* Once, before any thread uses libcurl (curl_global_init is not
	 * thread-safe). */
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct cctx {
	struct fleet_yaml *y;
	struct fleet_cloud_iid_config *c;
};

static fleet_err node(struct cctx *x, int idx, const yaml_mark_t *m, yaml_node_type_t t,
		      const char *what, yaml_node_t **out)
{
	fleet_err e = fleet_yaml_reach(x->y, idx, m, out);
	return e ? e : fleet_yaml_want(x->y, *out, t, what);
}

static fleet_err str(struct cctx *x, int idx, const yaml_mark_t *m, const char *what, char *out,
		     size_t cap)
{
	yaml_node_t *n;
	fleet_err e = fleet_yaml_reach(x->y, idx, m, &n);
	if (!e && !(e = fleet_yaml_str(x->y, n, what, out, cap)) && !out[0])
		e = fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &n->start_mark, "%s is empty", what);
	return e;
}

static fleet_err dup(struct cctx *x, int idx, const yaml_mark_t *m, const char *what,
		     size_t cap, char **out)
{
	char *b = malloc(cap);
	fleet_err e = b ? str(x, idx, m, what, b, cap)
			: fleet_yaml_fail(x->y, FLEET_E_NOMEM, m, "out of memory");
	if (e)
		free(b);
	else
		*out = b;
	return e;
}

static bool slug_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-'))
			return false;
	return true;
}

static fleet_err list(struct cctx *x, int idx, const yaml_mark_t *m, const char *what,
		      size_t cap, char ***out, size_t *n)
{
	yaml_node_t *s;
	fleet_err e = node(x, idx, m, YAML_SEQUENCE_NODE, what, &s);
	if (e)
		return e;
	size_t count = (size_t)(s->data.sequence.items.top - s->data.sequence.items.start);
	if (count > MAX_LIST)
		return fleet_yaml_fail(x->y, FLEET_E_TOO_LARGE, &s->start_mark,
				       "%s has %zu entries, at most %d", what, count, MAX_LIST);
	if (count && !(*out = calloc(count, sizeof(char *))))
		return fleet_yaml_fail(x->y, FLEET_E_NOMEM, m, "out of memory");
	for (yaml_node_item_t *it = s->data.sequence.items.start; it < s->data.sequence.items.top;
	     it++) {
		if ((e = dup(x, *it, &s->start_mark, what, cap, &(*out)[*n])))
			return e;
		(*n)++;
	}
	return FLEET_OK;
}

static X509 *read_cert(struct cctx *x, const char *path, const yaml_mark_t *m, fleet_err *e)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("an AWS certificate", MAX_CERT_FILE);
	struct fleet_buf b;
	X509 *cert = NULL;
	fb_init(&b);
	if ((*e = fleet_file_read(AT_FDCWD, path, &policy, &b, x->y->ec))) {
		fleet_errctx_wrap(x->y->ec, *e, "certificates: cannot read ", NULL);
		fb_free(&b);
		return NULL;
	}
	BIO *bio = BIO_new_mem_buf(b.data, (int)b.len);
	if (!bio || !(cert = PEM_read_bio_X509(bio, NULL, NULL, NULL)))
		*e = fleet_yaml_fail(x->y, FLEET_E_MALFORMED, m, "certificates: %s holds no PEM "
								  "certificate", path);
	BIO_free(bio);
	fb_free(&b);
	ERR_clear_error();
	return cert;
}

static fleet_err certs(struct cctx *x, struct ciid_provider *p, int idx, const yaml_mark_t *m)
{
	yaml_node_t *map;
	fleet_err e = node(x, idx, m, YAML_MAPPING_NODE, "certificates", &map);
	if (e)
		return e;
	size_t count = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	if (count == 0 || count > MAX_CERTS)
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &map->start_mark,
				       "certificates has %zu entries, 1..%d", count, MAX_CERTS);
	if (!(p->certs = calloc(count, sizeof(*p->certs))))
		return fleet_yaml_fail(x->y, FLEET_E_NOMEM, m, "out of memory");
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
	     pr++) {
		struct ciid_cert *c = &p->certs[p->n_certs];
		char path[MAX_PATH];
		yaml_node_t *k;
		if ((e = fleet_yaml_reach(x->y, pr->key, &map->start_mark, &k)) ||
		    (e = fleet_yaml_str(x->y, k, "a region", c->region, sizeof(c->region))))
			return e;
		for (size_t i = 0; i < p->n_certs; i++)
			if (!strcmp(p->certs[i].region, c->region))
				return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &k->start_mark,
						       "certificates names a region twice");
		if ((e = str(x, pr->value, &k->start_mark, "a certificate file", path, sizeof(path))))
			return e;
		if (!(c->cert = read_cert(x, path, &k->start_mark, &e)))
			return e;
		p->n_certs++;
	}
	return FLEET_OK;
}

enum {
	P_ID,
	P_TYPE,
	P_AUDIENCE,
	P_JWKS_FILE,
	P_JWKS_URL,
	P_PROJECTS,
	P_ACCOUNTS,
	P_CERTIFICATES,
	P_ISSUERS,
	P_ACCOUNT_CLAIM,
	P_INSTANCE_CLAIM,
	P_MAX_AGE,
	P_N
};

static fleet_err provider(struct cctx *x, struct ciid_provider *p, const yaml_node_t *n,
			  size_t i)
{
	static const char *const keys[P_N] = {
		"id",       "type",         "audience", "jwks_file",     "jwks_url",
		"projects", "accounts",     "certificates", "issuers",   "account_claim",
		"instance_claim", "max_age_seconds"};
	/* Which keys each type takes (1) and needs (2). */
	static const unsigned char rule[3][P_N] = {
		/* gcp */ {2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 1},
		/* aws */ {2, 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1},
		/* oidc */ {2, 2, 2, 1, 1, 0, 1, 0, 2, 2, 2, 1},
	};
	int v[P_N];
	yaml_mark_t mk[P_N];
	char type[8], path[MAX_PATH], url[MAX_PATH];
	char where[32];
	uint64_t age;
	fleet_err e;

	snprintf(where, sizeof(where), "providers[%zu]: ", i);
	if ((e = fleet_yaml_keys(x->y, n, keys, P_N, v, mk)))
		return fleet_errctx_wrap(x->y->ec, e, where, NULL);
	if (!v[P_ID] || !v[P_TYPE])
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &n->start_mark,
				       "%sid and type are required", where);
	if ((e = str(x, v[P_ID], &mk[P_ID], "a provider id", p->id, sizeof(p->id))) ||
	    (e = str(x, v[P_TYPE], &mk[P_TYPE], "a provider type", type, sizeof(type))))
		return e;
	if (!slug_ok(p->id))
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &mk[P_ID],
				       "%sid is a-z 0-9 _ - only", where);
	p->type = !strcmp(type, "gcp") ? CIID_GCP : !strcmp(type, "aws") ? CIID_AWS
				 : !strcmp(type, "oidc") ? CIID_OIDC : 0;
	if (!p->type)
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &mk[P_TYPE],
				       "%stype is gcp, aws or oidc", where);
	for (int k = 0; k < P_N; k++) {
		unsigned char r = rule[p->type - 1][k];
		if (v[k] && !r)
			return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &mk[k],
					       "%s%s is not for a %s provider", where, keys[k], type);
		if (!v[k] && r == 2)
			return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &n->start_mark,
					       "%s%s is required for a %s provider", where, keys[k],
					       type);
	}
	p->max_age = p->type == CIID_AWS ? 1800 : 600;
	if (v[P_MAX_AGE]) {
		yaml_node_t *a;
		if ((e = fleet_yaml_reach(x->y, v[P_MAX_AGE], &mk[P_MAX_AGE], &a)) ||
		    (e = fleet_yaml_uint(x->y, a, "max_age_seconds", 1, 86400, &age)))
			return e;
		p->max_age = (uint32_t)age;
	}
	if (v[P_AUDIENCE] && (e = dup(x, v[P_AUDIENCE], &mk[P_AUDIENCE], "audience", 512,
				     &p->audience)))
		return e;
	if (p->type != CIID_AWS) {
		if (!v[P_JWKS_FILE] == !v[P_JWKS_URL])
			return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &n->start_mark,
					       "%sexactly one of jwks_file and jwks_url", where);
		if (v[P_JWKS_FILE] &&
		    (e = str(x, v[P_JWKS_FILE], &mk[P_JWKS_FILE], "jwks_file", path, sizeof(path))))
			return e;
		if (v[P_JWKS_URL]) {
			if ((e = str(x, v[P_JWKS_URL], &mk[P_JWKS_URL], "jwks_url", url, sizeof(url))))
				return e;
			if (!ciid_url_ok(url))
				return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &mk[P_JWKS_URL],
						       "%sjwks_url must be https:// (http:// only "
						       "to 127.0.0.1)", where);
		}
		if ((e = ciid_src_init(&p->jwks, v[P_JWKS_FILE] ? path : NULL,
				       v[P_JWKS_URL] ? url : NULL, x->y->ec)))
			return e;
		p->has_jwks = true;
		/* A file is read now, so a broken one stops the start, not
		 * every join; a URL waits for the first join's prepare. */
		if (p->jwks.file && (e = ciid_src_refresh(&p->jwks, NULL, x->y->ec)))
			return fleet_errctx_wrap(x->y->ec, e, where, NULL);
	}
	int allow = p->type == CIID_GCP ? P_PROJECTS : P_ACCOUNTS;
	if (v[allow] && (e = list(x, v[allow], &mk[allow], keys[allow], CIID_MAX_ID + 1,
				  &p->allow, &p->n_allow)))
		return e;
	if (v[P_ISSUERS] && (e = list(x, v[P_ISSUERS], &mk[P_ISSUERS], "issuers", 512,
				      &p->issuers, &p->n_issuers)))
		return e;
	if (p->type == CIID_OIDC && !p->n_issuers)
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &mk[P_ISSUERS],
				       "%sissuers is empty", where);
	if (v[P_ACCOUNT_CLAIM] && (e = dup(x, v[P_ACCOUNT_CLAIM], &mk[P_ACCOUNT_CLAIM],
					   "account_claim", 256, &p->account_claim)))
		return e;
	if (v[P_INSTANCE_CLAIM] && (e = dup(x, v[P_INSTANCE_CLAIM], &mk[P_INSTANCE_CLAIM],
					    "instance_claim", 256, &p->instance_claim)))
		return e;
	if (v[P_CERTIFICATES] && (e = certs(x, p, v[P_CERTIFICATES], &mk[P_CERTIFICATES])))
		return e;
	return FLEET_OK;
}

static bool role_ok(const char *r)
{
	return !strcmp(r, "node") || !strcmp(r, "site") || !strcmp(r, "ramdisk");
}

static fleet_err resolve_entry(struct cctx *x, struct ciid_resolve *r, const yaml_node_t *n,
			       size_t i)
{
	static const char *const keys[] = {"provider", "account", "instance",
					   "pool",     "site",    "role"};
	int v[6];
	yaml_mark_t mk[6];
	char where[32];
	fleet_err e;
	snprintf(where, sizeof(where), "resolve[%zu]: ", i);
	if ((e = fleet_yaml_keys(x->y, n, keys, 6, v, mk)))
		return fleet_errctx_wrap(x->y->ec, e, where, NULL);
	if (!v[0] || !v[1] || !v[3])
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &n->start_mark,
				       "%sprovider, account and pool are required", where);
	snprintf(r->role, sizeof(r->role), "node");
	if ((e = str(x, v[0], &mk[0], "provider", r->provider, sizeof(r->provider))) ||
	    (e = str(x, v[1], &mk[1], "account", r->account, sizeof(r->account))) ||
	    (e = str(x, v[3], &mk[3], "pool", r->pool, sizeof(r->pool))) ||
	    (v[4] && (e = str(x, v[4], &mk[4], "site", r->site, sizeof(r->site)))) ||
	    (v[5] && (e = str(x, v[5], &mk[5], "role", r->role, sizeof(r->role)))))
		return e;
	/* instance "" (or absent): any instance of the account. */
	if (v[2]) {
		yaml_node_t *in;
		if ((e = fleet_yaml_reach(x->y, v[2], &mk[2], &in)) ||
		    (e = fleet_yaml_str(x->y, in, "instance", r->instance, sizeof(r->instance))))
			return e;
	}
	if (!ciid_provider_find(x->c, r->provider))
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &mk[0],
				       "%sprovider names no configured provider", where);
	bool listed = false;
	for (size_t k = 0; k < x->c->n_roles; k++)
		listed = listed || !strcmp(x->c->roles[k], r->role);
	if (!listed)
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, v[5] ? &mk[5] : &n->start_mark,
				       "%srole is not one of roles", where);
	return FLEET_OK;
}

static fleet_err seq(struct cctx *x, int idx, const yaml_mark_t *m, const char *what,
		     size_t max, yaml_node_t **out, size_t *count)
{
	fleet_err e = node(x, idx, m, YAML_SEQUENCE_NODE, what, out);
	if (e)
		return e;
	*count = (size_t)((*out)->data.sequence.items.top - (*out)->data.sequence.items.start);
	if (*count > max)
		return fleet_yaml_fail(x->y, FLEET_E_TOO_LARGE, &(*out)->start_mark,
				       "%s has %zu entries, at most %zu", what, *count, max);
	return FLEET_OK;
}

static fleet_err parse_root(struct cctx *x)
{
	static const char *const keys[] = {"providers", "resolve", "roles"};
	struct fleet_cloud_iid_config *c = x->c;
	int v[3];
	yaml_mark_t mk[3];
	yaml_node_t *s, *item;
	size_t count;
	fleet_err e;

	if ((e = fleet_yaml_want(x->y, x->y->root, YAML_MAPPING_NODE, "the cloud-iid file")) ||
	    (e = fleet_yaml_keys(x->y, x->y->root, keys, 3, v, mk)))
		return e;
	if (!v[0])
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &x->y->root->start_mark,
				       "providers is required");
	/* roles first: resolve entries are checked against them. */
	snprintf(c->roles[0], sizeof(c->roles[0]), "node");
	c->n_roles = 1;
	if (v[2]) {
		if ((e = seq(x, v[2], &mk[2], "roles", 3, &s, &count)))
			return e;
		c->n_roles = 0;
		for (yaml_node_item_t *it = s->data.sequence.items.start;
		     it < s->data.sequence.items.top; it++) {
			char *r = c->roles[c->n_roles];
			if ((e = str(x, *it, &s->start_mark, "a role", r, sizeof(c->roles[0]))))
				return e;
			if (!role_ok(r))
				return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &s->start_mark,
						       "roles: node, site or ramdisk");
			c->n_roles++;
		}
	}
	if ((e = seq(x, v[0], &mk[0], "providers", MAX_PROVIDERS, &s, &count)))
		return e;
	if (!count)
		return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &s->start_mark, "providers is empty");
	if (!(c->providers = calloc(count, sizeof(*c->providers))))
		return fleet_yaml_fail(x->y, FLEET_E_NOMEM, NULL, "out of memory");
	for (yaml_node_item_t *it = s->data.sequence.items.start; it < s->data.sequence.items.top;
	     it++) {
		struct ciid_provider *p = &c->providers[c->n_providers];
		if ((e = node(x, *it, &s->start_mark, YAML_MAPPING_NODE, "a provider", &item)))
			return e;
		c->n_providers++; /* freed whatever provider() filled */
		if ((e = provider(x, p, item, c->n_providers - 1)))
			return e;
		for (size_t k = 0; k + 1 < c->n_providers; k++)
			if (!strcmp(c->providers[k].id, p->id))
				return fleet_yaml_fail(x->y, FLEET_E_MALFORMED, &item->start_mark,
						       "two providers have the id %s", p->id);
	}
	if (v[1]) {
		if ((e = seq(x, v[1], &mk[1], "resolve", MAX_RESOLVE, &s, &count)))
			return e;
		if (count && !(c->resolve = calloc(count, sizeof(*c->resolve))))
			return fleet_yaml_fail(x->y, FLEET_E_NOMEM, NULL, "out of memory");
		for (yaml_node_item_t *it = s->data.sequence.items.start;
		     it < s->data.sequence.items.top; it++) {
			if ((e = node(x, *it, &s->start_mark, YAML_MAPPING_NODE, "a resolve entry",
				      &item)) ||
			    (e = resolve_entry(x, &c->resolve[c->n_resolve], item, c->n_resolve)))
				return e;
			c->n_resolve++;
		}
	}
	return FLEET_OK;
}

static void free_list(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void fleet_cloud_iid_config_free(struct fleet_cloud_iid_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_providers; i++) {
		struct ciid_provider *p = &c->providers[i];
		free(p->audience);
		ciid_src_free(&p->jwks);
		free_list(p->allow, p->n_allow);
		free_list(p->issuers, p->n_issuers);
		free(p->account_claim);
		free(p->instance_claim);
		for (size_t k = 0; k < p->n_certs; k++)
			X509_free(p->certs[k].cert);
		free(p->certs);
	}
	free(c->providers);
	free(c->resolve);
	free(c);
}

fleet_err fleet_cloud_iid_config_parse(const uint8_t *buf, size_t len,
				       struct fleet_cloud_iid_config **out, struct fleet_errctx *ec)
{
	struct fleet_yaml y;
	fleet_err e;
	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if ((e = fleet_yaml_load(&y, buf, len, MAX_FILE, "the cloud-iid file", ec)))
		return e;
	struct cctx x = {.y = &y, .c = calloc(1, sizeof(*x.c))};
	if (!x.c)
		e = fleet_yaml_fail(&y, FLEET_E_NOMEM, NULL, "out of memory");
	else
		e = parse_root(&x);
	fleet_yaml_free(&y);
	if (e)
		fleet_cloud_iid_config_free(x.c);
	else
		*out = x.c;
	return e;
}

fleet_err fleet_cloud_iid_config_load(const char *path, struct fleet_cloud_iid_config **out,
				      struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the cloud-iid file", MAX_FILE);
	struct fleet_buf b;
	fb_init(&b);
	*out = NULL;
	fleet_err e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec);
	if (e)
		fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	else
		e = fleet_cloud_iid_config_parse(b.data, b.len, out, ec);
	fb_free(&b);
	return e;
}
