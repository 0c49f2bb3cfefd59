/*
 * plan.c: the plan (plan.h). Nothing here runs anything; the whole plan
 * exists, and is checked against the removal limit, before the first
 * command.
 */
#include "spire-server-fleet-entries/plan.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *plan_kind_name(enum plan_kind k)
{
	switch (k) {
	case PK_BAN: return "ban";
	case PK_DELETE: return "delete";
	case PK_UPDATE: return "update";
	case PK_CREATE: return "create";
	}
	return "?";
}

static struct plan_action *add(struct plan *p, enum plan_kind k, const char *device,
			       const char *why)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct plan_action *a = realloc(p->a, cap * sizeof(*a));
		if (!a)
			return NULL;
		p->a = a;
		p->cap = cap;
	}
	struct plan_action *a = &p->a[p->n++];
	memset(a, 0, sizeof(*a));
	a->kind = k;
	snprintf(a->device, sizeof(a->device), "%s", device);
	a->why = why;
	return a;
}

static void note(struct plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct plan *p, const char *fmt, ...)
{
	if (p->n_notes == sizeof(p->notes) / sizeof(p->notes[0]))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->notes[p->n_notes++], sizeof(p->notes[0]), fmt, ap);
	va_end(ap);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One wanted entry. */
struct want {
	char id[FLEET_SPIRE_NAME_MAX + 16];
	char spiffe_id[PLAN_STR];
	char *sel[AC_MAX_TEMPLATES];
	size_t n_sel;
	const char *device;
	int seen;
};

static void want_free(struct want *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < w[i].n_sel; j++)
			free(w[i].sel[j]);
	free(w);
}

static fleet_err build_wants(const struct fleet_spire_nodes *f, const struct applier_config *c,
			     struct want **out, size_t *n, struct fleet_errctx *ec)
{
	struct want *w = calloc(f->n_eligible * 2 + 1, sizeof(*w));
	if (!w)
		return FLEET_E_NOMEM;
	size_t k = 0;
	for (size_t i = 0; i < f->n_eligible; i++) {
		const struct fleet_spire_node *d = &f->eligible[i];
		for (int ecc = 0; ecc < 2; ecc++) {
			if (ecc && (!c->per_ek || !d->ek_hash_ecc[0]))
				break;
			struct want *x = &w[k++];
			x->device = d->name;
			snprintf(x->id, sizeof(x->id), "%s%s%s", SP_FLEET_PREFIX, d->name,
				 ecc ? "-ecc" : "");
			snprintf(x->spiffe_id, sizeof(x->spiffe_id), "spiffe://%s/node/%s",
				 f->trust_domain, d->name);
			struct ac_vars v = {d->name, ecc ? d->ek_hash_ecc : d->ek_hash,
					    f->trust_domain, NULL};
			for (size_t s = 0; s < c->n_selector; s++) {
				char buf[PLAN_STR];
				if (ac_expand(c->selector[s], &v, buf, sizeof(buf))) {
					want_free(w, k);
					return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE,
								"selector %zu for %s does not "
								"expand within %d bytes",
								s, d->name, PLAN_STR - 1);
				}
				if (!(x->sel[x->n_sel++] = strdup(buf))) {
					want_free(w, k);
					return FLEET_E_NOMEM;
				}
			}
			qsort(x->sel, x->n_sel, sizeof(char *), cmp_str);
		}
	}
	*out = w;
	*n = k;
	return FLEET_OK;
}

static int differs(const struct want *w, const struct sp_entry *e, const char *parent)
{
	if (strcmp(w->spiffe_id, e->spiffe_id) || strcmp(parent, e->parent_id) || e->admin ||
	    e->downstream || w->n_sel != e->n_selectors)
		return 1;
	for (size_t i = 0; i < w->n_sel; i++)
		if (strcmp(w->sel[i], e->selectors[i]))
			return 1;
	return 0;
}

static fleet_err fill_entry(struct plan_action *a, const struct want *w, const char *parent)
{
	snprintf(a->entry_id, sizeof(a->entry_id), "%s", w->id);
	snprintf(a->spiffe_id, sizeof(a->spiffe_id), "%s", w->spiffe_id);
	snprintf(a->parent_id, sizeof(a->parent_id), "%s", parent);
	for (size_t i = 0; i < w->n_sel; i++)
		if (!(a->selectors[a->n_selectors++] = strdup(w->sel[i])))
			return FLEET_E_NOMEM;
	return FLEET_OK;
}

/* The device a departing entry was for: the name in its SPIFFE ID when
 * that is its entry ID's name (with or without "-ecc"), else the entry
 * ID's name whole. Unknown shapes therefore count as separate nodes,
 * which errs toward refusing. */
static void departing_device(const struct fleet_spire_nodes *f, const struct sp_entry *e,
			     char *out, size_t outlen)
{
	const char *x = e->id + strlen(SP_FLEET_PREFIX);
	char node_prefix[FLEET_SPIRE_TRUST_DOMAIN_MAX + 32];
	snprintf(node_prefix, sizeof(node_prefix), "spiffe://%s/node/", f->trust_domain);
	size_t pl = strlen(node_prefix), xl = strlen(x);
	if (!strncmp(e->spiffe_id, node_prefix, pl)) {
		const char *n = e->spiffe_id + pl;
		size_t nl = strlen(n);
		if (!strcmp(n, x) || (xl == nl + 4 && !strncmp(x, n, nl) && !strcmp(x + nl, "-ecc"))) {
			snprintf(out, outlen, "%s", n);
			return;
		}
	}
	snprintf(out, outlen, "%s", x);
}

/* Is a stale entry's device still eligible (by entry ID or SPIFFE ID)? */
static int still_eligible(const struct fleet_spire_nodes *f, const char *dev)
{
	return fleet_spire_nodes_find(f->eligible, f->n_eligible, dev) != NULL;
}

/* What names one device in an agent's ID or selectors. */
struct marks {
	const char *name;
	const char (*eks)[65];
	size_t n_eks;
	const char (*ld)[41];
	size_t n_ld;
	char **sel; /* selectors that name the device ("type:value") */
	size_t n_sel;
};

/* Did this agent attest as the device (marks)? By its ID: the tpm
 * attestor's spiffe://<td>/spire/agent/tpm/<EK hash>, the tpm_devid
 * attestor's .../tpm_devid/<LDevID SHA-1>. By its selectors: the tpm
 * attestor's tpm:pub_hash:<EK hash>; the tpm_devid attestor's
 * tpm_devid:subject:cn:<name>, since fleetd's LDevIDs have the subject
 * CN=<device name> (docs/identity-ca.md); and any selector of the device's
 * own entries that names it (a configured selector with {name} or
 * {ek_hash}). */
static int agent_is(const struct sp_agent *a, const char *td, const struct marks *m)
{
	char buf[PLAN_STR];
	int n = snprintf(buf, sizeof(buf), "spiffe://%s/spire/agent/", td);
	if (n < 0 || (size_t)n >= sizeof(buf) || strncmp(a->id, buf, (size_t)n))
		return 0;
	const char *tail = a->id + n;
	for (size_t k = 0; k < m->n_eks; k++) {
		snprintf(buf, sizeof(buf), "tpm:pub_hash:%s", m->eks[k]);
		if ((!strncmp(tail, "tpm/", 4) && !strcmp(tail + 4, m->eks[k])) ||
		    sp_agent_has_selector(a, buf))
			return 1;
	}
	for (size_t k = 0; k < m->n_ld; k++)
		if (!strncmp(tail, "tpm_devid/", 10) && !strcmp(tail + 10, m->ld[k]))
			return 1;
	snprintf(buf, sizeof(buf), "tpm_devid:subject:cn:%s", m->name);
	if (sp_agent_has_selector(a, buf))
		return 1;
	for (size_t k = 0; k < m->n_sel; k++)
		if (sp_agent_has_selector(a, m->sel[k]))
			return 1;
	return 0;
}

/* ---- what the plan looks things up by ------------------------------------ *
 *
 * Built once a plan, so that a fleet of 50,000 machines plans in time
 * linear in what it holds (times a log), not in the product of the file,
 * the server's entries and its agents. */

struct keyref {
	const char *key;
	size_t idx;
};

static int cmp_keyref(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The position of the first (lowest idx) entry with this key, or
 * SIZE_MAX; *end (may be NULL) the position past the last. */
static size_t key_first(const struct keyref *v, size_t n, const char *key, size_t *end)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t e = lo;
	while (e < n && !strcmp(v[e].key, key))
		e++;
	if (end)
		*end = e;
	return lo < e ? lo : SIZE_MAX;
}

struct index {
	struct keyref *wants; /* wanted entries by ID */
	size_t n_wants;
	char (*dev)[PLAN_DEVICE_MAX]; /* each server entry's device (departing_device) */
	struct keyref *by_dev;         /* server entries by device, in server order */
	struct keyref *eks, *lds;      /* eligible devices by EK hash, LDevID fingerprint */
	size_t n_eks, n_lds;
	struct keyref *sels; /* agents by selector ("type:value") */
	size_t n_sels;
	char agent_prefix[PLAN_STR]; /* spiffe://<td>/spire/agent/ */
	size_t agent_plen;
};

static void index_free(struct index *ix)
{
	free(ix->wants);
	free(ix->dev);
	free(ix->by_dev);
	free(ix->eks);
	free(ix->lds);
	free(ix->sels);
}

static void sort_refs(struct keyref *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_keyref);
}

static fleet_err index_build(struct index *ix, const struct fleet_spire_nodes *f,
			     const struct want *w, size_t nw, const struct sp_entries *server,
			     const struct sp_agents *agents)
{
	memset(ix, 0, sizeof(*ix));
	size_t n_ld = 0, n_sel = 0;
	for (size_t i = 0; i < f->n_eligible; i++)
		n_ld += f->eligible[i].n_ldevid;
	for (size_t i = 0; i < agents->n; i++)
		n_sel += agents->a[i].n_selectors;
	ix->wants = calloc(nw + 1, sizeof(*ix->wants));
	ix->dev = calloc(server->n + 1, sizeof(*ix->dev));
	ix->by_dev = calloc(server->n + 1, sizeof(*ix->by_dev));
	ix->eks = calloc(2 * f->n_eligible + 1, sizeof(*ix->eks));
	ix->lds = calloc(n_ld + 1, sizeof(*ix->lds));
	ix->sels = calloc(n_sel + 1, sizeof(*ix->sels));
	if (!ix->wants || !ix->dev || !ix->by_dev || !ix->eks || !ix->lds || !ix->sels) {
		index_free(ix);
		return FLEET_E_NOMEM;
	}
	for (size_t j = 0; j < nw; j++)
		ix->wants[ix->n_wants++] = (struct keyref){w[j].id, j};
	for (size_t i = 0; i < server->n; i++) {
		departing_device(f, &server->e[i], ix->dev[i], sizeof(ix->dev[i]));
		ix->by_dev[i] = (struct keyref){ix->dev[i], i};
	}
	for (size_t i = 0; i < f->n_eligible; i++) {
		const struct fleet_spire_node *d = &f->eligible[i];
		ix->eks[ix->n_eks++] = (struct keyref){d->ek_hash, i};
		if (d->ek_hash_ecc[0])
			ix->eks[ix->n_eks++] = (struct keyref){d->ek_hash_ecc, i};
		for (size_t k = 0; k < d->n_ldevid; k++)
			ix->lds[ix->n_lds++] = (struct keyref){d->ldevid_sha1[k], i};
	}
	for (size_t i = 0; i < agents->n; i++)
		for (size_t k = 0; k < agents->a[i].n_selectors; k++)
			ix->sels[ix->n_sels++] = (struct keyref){agents->a[i].selectors[k], i};
	sort_refs(ix->wants, ix->n_wants);
	sort_refs(ix->by_dev, server->n);
	sort_refs(ix->eks, ix->n_eks);
	sort_refs(ix->lds, ix->n_lds);
	sort_refs(ix->sels, ix->n_sels);
	int n = snprintf(ix->agent_prefix, sizeof(ix->agent_prefix), "spiffe://%s/spire/agent/",
			 f->trust_domain);
	ix->agent_plen = n > 0 && (size_t)n < sizeof(ix->agent_prefix) ? (size_t)n : 0;
	return FLEET_OK;
}

/* Lower *best to the idx of key's first entry, if any. */
static void lower(size_t *best, const struct keyref *v, size_t n, const char *key)
{
	size_t at = key_first(v, n, key, NULL);
	if (at != SIZE_MAX && v[at].idx < *best)
		*best = v[at].idx;
}

/* The eligible device this agent (also) attests as, or NULL: such an agent
 * is never banned, whichever device's departure names it. The first in the
 * file's order when several: agent_is for each, looked up, not tried. */
static const struct fleet_spire_node *agent_of_eligible(const struct index *ix,
							const struct fleet_spire_nodes *f,
							const struct sp_agent *a)
{
	if (!ix->agent_plen || strncmp(a->id, ix->agent_prefix, ix->agent_plen))
		return NULL;
	const char *tail = a->id + ix->agent_plen;
	size_t best = SIZE_MAX;
	if (!strncmp(tail, "tpm/", 4))
		lower(&best, ix->eks, ix->n_eks, tail + 4);
	if (!strncmp(tail, "tpm_devid/", 10))
		lower(&best, ix->lds, ix->n_lds, tail + 10);
	for (size_t k = 0; k < a->n_selectors; k++) {
		const char *s = a->selectors[k];
		if (!strncmp(s, "tpm:pub_hash:", 13))
			lower(&best, ix->eks, ix->n_eks, s + 13);
		if (!strncmp(s, "tpm_devid:subject:cn:", 21)) {
			const struct fleet_spire_node *d =
				fleet_spire_nodes_find(f->eligible, f->n_eligible, s + 21);
			if (d && (size_t)(d - f->eligible) < best)
				best = (size_t)(d - f->eligible);
		}
	}
	return best == SIZE_MAX ? NULL : &f->eligible[best];
}

static const struct sp_agent *find_agent(const struct sp_agents *l, const char *id)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->a[mid].id, id);
		if (!c)
			return &l->a[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int add_sel(char ***v, size_t *n, size_t *cap, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		char **x = realloc(*v, c * sizeof(*x));
		if (!x)
			return -1;
		*v = x;
		*cap = c;
	}
	return ((*v)[*n] = strdup(s)) ? (++*n, 0) : -1;
}

/* A ban; one the plan holds already is dropped later (dedupe_bans). */
static fleet_err add_ban(struct plan *p, const char *device, const char *agent, const char *why)
{
	struct plan_action *a = add(p, PK_BAN, device, why);
	if (!a)
		return FLEET_E_NOMEM;
	snprintf(a->spiffe_id, sizeof(a->spiffe_id), "%s", agent);
	return FLEET_OK;
}

/* The bans, all the plan holds yet, each agent once: the first of its
 * bans stays, in its place. */
static fleet_err dedupe_bans(struct plan *p)
{
	struct keyref *r = calloc(p->n + 1, sizeof(*r));
	char *dup = calloc(p->n + 1, 1);
	if (!r || !dup) {
		free(r);
		free(dup);
		return FLEET_E_NOMEM;
	}
	for (size_t i = 0; i < p->n; i++)
		r[i] = (struct keyref){p->a[i].spiffe_id, i};
	sort_refs(r, p->n);
	for (size_t i = 1; i < p->n; i++)
		if (!strcmp(r[i - 1].key, r[i].key))
			dup[r[i].idx] = 1;
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++)
		if (!dup[i])
			p->a[k++] = p->a[i];
	p->n = k;
	free(r);
	free(dup);
	return FLEET_OK;
}

static int add_idx(size_t **v, size_t *n, size_t *cap, size_t x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		size_t *nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/* Every listed agent that may have attested as the device m: by ID (the
 * tpm and tpm_devid forms of its EK hashes and fingerprints) and by
 * selector (tpm:pub_hash, subject:cn, m's own), in the list's order, each
 * once. agent_is decides; an agent it would take is always here. */
static fleet_err candidates(const struct index *ix, const struct sp_agents *agents,
			    const struct marks *m, size_t **out, size_t *n)
{
	size_t *v = NULL, cap = 0;
	*n = 0;
	char key[PLAN_STR + 80]; /* a prefix of PLAN_STR, a form, a hash */
	for (size_t k = 0; k < m->n_eks + m->n_ld; k++) {
		bool ek = k < m->n_eks;
		snprintf(key, sizeof(key), "%s%s%s", ix->agent_prefix, ek ? "tpm/" : "tpm_devid/",
			 ek ? m->eks[k] : m->ld[k - m->n_eks]);
		const struct sp_agent *a = find_agent(agents, key);
		if (a && add_idx(&v, n, &cap, (size_t)(a - agents->a)))
			goto nomem;
	}
	for (size_t k = 0; k < m->n_eks + 1 + m->n_sel; k++) {
		if (k < m->n_eks)
			snprintf(key, sizeof(key), "tpm:pub_hash:%s", m->eks[k]);
		else if (k == m->n_eks)
			snprintf(key, sizeof(key), "tpm_devid:subject:cn:%s", m->name);
		else
			snprintf(key, sizeof(key), "%s", m->sel[k - m->n_eks - 1]);
		size_t end, i = key_first(ix->sels, ix->n_sels, key, &end);
		for (; i != SIZE_MAX && i < end; i++)
			if (add_idx(&v, n, &cap, ix->sels[i].idx))
				goto nomem;
	}
	if (*n > 1)
		qsort(v, *n, sizeof(*v), cmp_size);
	size_t u = 0;
	for (size_t i = 0; i < *n; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
	*out = v;
	return FLEET_OK;
nomem:
	free(v);
	*n = 0;
	return FLEET_E_NOMEM;
}

/* Ban every agent that attested as this device: each agent ID form the
 * configuration names, from what is known of it (its revoked record's EKs
 * and LDevIDs, the EK hashes its departing entries' selectors carry), and
 * each agent the server lists that attested as it (agent_is). An agent the
 * list shows banned already, or one that attests as an eligible device, is
 * left alone. */
static fleet_err plan_bans(struct plan *p, const struct index *ix,
			   const struct fleet_spire_nodes *f, const struct applier_config *c,
			   const char *device, const struct sp_entries *server,
			   const struct sp_agents *agents, const char *why)
{
	char eks[2 + SP_MAX_SELECTORS * 2][65];
	size_t n_eks = 0;
	char **sel = NULL;
	size_t n_sel = 0, cap_sel = 0, *cand = NULL, n_cand = 0;
	fleet_err err = FLEET_OK;
	const struct fleet_spire_node *r =
		fleet_spire_nodes_find(f->revoked, f->n_revoked, device);
	if (r) {
		snprintf(eks[n_eks++], 65, "%s", r->ek_hash);
		if (r->ek_hash_ecc[0])
			snprintf(eks[n_eks++], 65, "%s", r->ek_hash_ecc);
	}
	struct ac_vars v = {device, NULL, f->trust_domain, NULL};
	/* The server's entries for this device, in the server's order. */
	size_t end, first = key_first(ix->by_dev, server->n, device, &end);
	for (size_t q = first; first != SIZE_MAX && q < end; q++) {
		const struct sp_entry *e = &server->e[ix->by_dev[q].idx];
		for (size_t s = 0; s < e->n_selectors; s++)
			for (size_t t = 0; t < c->n_selector; t++) {
				char ek[65], x[PLAN_STR];
				if (!ac_uses(c->selector[t], "{ek_hash}")) {
					if (ac_uses(c->selector[t], "{name}") &&
					    !ac_expand(c->selector[t], &v, x, sizeof(x)) &&
					    !strcmp(x, e->selectors[s]) &&
					    add_sel(&sel, &n_sel, &cap_sel, x)) {
						err = FLEET_E_NOMEM;
						goto out;
					}
					continue;
				}
				if (!ac_match_ek(c->selector[t], &v, e->selectors[s], ek))
					continue;
				if (add_sel(&sel, &n_sel, &cap_sel, e->selectors[s])) {
					err = FLEET_E_NOMEM;
					goto out;
				}
				size_t k;
				for (k = 0; k < n_eks; k++)
					if (!strcmp(eks[k], ek))
						break;
				if (k == n_eks && n_eks < sizeof(eks) / sizeof(eks[0]))
					memcpy(eks[n_eks++], ek, 65);
			}
	}
	/* The configured selectors as they name this device now. */
	for (size_t t = 0; t < c->n_selector; t++) {
		int uses_ek = ac_uses(c->selector[t], "{ek_hash}");
		if (!uses_ek && !ac_uses(c->selector[t], "{name}"))
			continue;
		for (size_t k = 0; k < (uses_ek ? n_eks : 1); k++) {
			struct ac_vars w = v;
			char x[PLAN_STR];
			if (uses_ek)
				w.ek_hash = eks[k];
			if (!ac_expand(c->selector[t], &w, x, sizeof(x)) &&
			    add_sel(&sel, &n_sel, &cap_sel, x)) {
				err = FLEET_E_NOMEM;
				goto out;
			}
		}
	}
	struct marks m = {device, (const char (*)[65])eks, n_eks,
			  r ? (const char (*)[41])r->ldevid_sha1 : NULL, r ? r->n_ldevid : 0,
			  sel, n_sel};
	if ((err = candidates(ix, agents, &m, &cand, &n_cand)))
		goto out;

	/* The configured agent ID forms. */
	int unexpanded[AC_MAX_TEMPLATES] = {0};
	for (size_t t = 0; t < c->n_agent_id; t++) {
		const char *tm = c->agent_id[t];
		int uses_ek = ac_uses(tm, "{ek_hash}"), uses_ld = ac_uses(tm, "{ldevid_sha1}");
		size_t reps = uses_ek ? n_eks : uses_ld ? (r ? r->n_ldevid : 0) : 1;
		unexpanded[t] = reps == 0;
		for (size_t k = 0; k < reps; k++) {
			struct ac_vars w = v;
			if (uses_ek)
				w.ek_hash = eks[k];
			if (uses_ld)
				w.ldevid_sha1 = r->ldevid_sha1[k];
			char agent[PLAN_STR];
			if (ac_expand(tm, &w, agent, sizeof(agent)))
				continue; /* cannot fit: said by the note below */
			const struct sp_agent *known = find_agent(agents, agent);
			if (known && known->banned)
				continue;
			struct sp_agent bare = {.id = agent};
			const struct fleet_spire_node *other =
				agent_of_eligible(ix, f, known ? known : &bare);
			if (other) {
				note(p, "%s: agent %s attests as eligible %s: not banned", device,
				     agent, other->name);
				continue;
			}
			if ((err = add_ban(p, device, agent, why)))
				goto out;
		}
	}
	/* The agents the server lists that attested as this device. */
	for (size_t q = 0; q < n_cand; q++) {
		const struct sp_agent *a = &agents->a[cand[q]];
		if (a->banned || !agent_is(a, f->trust_domain, &m))
			continue;
		const struct fleet_spire_node *other = agent_of_eligible(ix, f, a);
		if (other) {
			note(p, "%s: agent %s attests as eligible %s: not banned", device, a->id,
			     other->name);
			continue;
		}
		if ((err = add_ban(p, device, a->id, why)))
			goto out;
	}
	/* A form that could not be expanded is said, unless a listed agent of
	 * that form was found for the device. */
	for (size_t t = 0; t < c->n_agent_id; t++) {
		if (!unexpanded[t])
			continue;
		const char *tm = c->agent_id[t];
		int uses_ek = ac_uses(tm, "{ek_hash}");
		struct ac_vars w = v;
		char prefix[PLAN_STR];
		if (uses_ek)
			w.ek_hash = "\x01";
		else
			w.ldevid_sha1 = "\x01";
		int found = 0;
		if (!ac_expand(tm, &w, prefix, sizeof(prefix))) {
			*strchr(prefix, '\x01') = '\0';
			for (size_t q = 0; q < n_cand && !found; q++) {
				const struct sp_agent *a = &agents->a[cand[q]];
				found = !strncmp(a->id, prefix, strlen(prefix)) &&
					agent_is(a, f->trust_domain, &m);
			}
		}
		if (!found)
			note(p, "%s: no %s known and no such agent listed, so agent_id %zu is "
			     "not banned", device, uses_ek ? "EK hash" : "LDevID fingerprint", t);
	}
out:
	for (size_t i = 0; i < n_sel; i++)
		free(sel[i]);
	free(sel);
	free(cand);
	return err;
}

fleet_err plan_build(const struct fleet_spire_nodes *f, const struct applier_config *c,
		     const struct sp_entries *server, const struct sp_agents *agents,
		     struct plan *p, struct fleet_errctx *ec)
{
	memset(p, 0, sizeof(*p));
	struct want *w = NULL;
	size_t nw = 0;
	fleet_err e = build_wants(f, c, &w, &nw, ec);
	if (e)
		return e == FLEET_E_NOMEM ? fleet_errctx_msg(ec, e, "out of memory") : e;
	struct index ix;
	if ((e = index_build(&ix, f, w, nw, server, agents))) {
		want_free(w, nw);
		return fleet_errctx_msg(ec, e, "out of memory");
	}
	char parent[PLAN_STR];
	snprintf(parent, sizeof(parent), "spiffe://%s/spire/server", f->trust_domain);

	/* Departed devices, in server order, each once (marked at the start
	 * of its entries in ix.by_dev). */
	const char **gone = calloc(server->n + 1, sizeof(*gone));
	char *listed = calloc(server->n + 1, 1);
	const struct want **match = calloc(server->n + 1, sizeof(*match));
	size_t n_gone = 0;
	if (!gone || !listed || !match) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < server->n; i++) {
		size_t j = key_first(ix.wants, ix.n_wants, server->e[i].id, NULL);
		if (j != SIZE_MAX) {
			match[i] = &w[ix.wants[j].idx];
			w[ix.wants[j].idx].seen = 1;
			continue;
		}
		if (still_eligible(f, ix.dev[i]))
			continue;
		size_t first = key_first(ix.by_dev, server->n, ix.dev[i], NULL);
		if (!listed[first]) {
			listed[first] = 1;
			gone[n_gone++] = ix.dev[i];
		}
	}
	p->removed_nodes = n_gone;

	/* 1. Bans: departed devices, then revoked ones. */
	for (size_t k = 0; k < n_gone; k++)
		if ((e = plan_bans(p, &ix, f, c, gone[k], server, agents,
				   "left the eligible list")))
			goto out;
	for (size_t k = 0; k < f->n_revoked; k++)
		if ((e = plan_bans(p, &ix, f, c, f->revoked[k].name, server, agents, "revoked")))
			goto out;
	if ((e = dedupe_bans(p)))
		goto out;
	/* 2. Deletes. */
	for (size_t i = 0; i < server->n; i++) {
		if (match[i])
			continue;
		int stale = still_eligible(f, ix.dev[i]);
		struct plan_action *a = add(p, PK_DELETE, ix.dev[i], stale ? "not wanted for an "
					    "eligible device" : "left the eligible list");
		if (!a) {
			e = FLEET_E_NOMEM;
			goto out;
		}
		snprintf(a->entry_id, sizeof(a->entry_id), "%s", server->e[i].id);
	}
	/* 3. Updates, 4. creates. */
	for (size_t i = 0; i < server->n; i++) {
		if (!match[i] || !differs(match[i], &server->e[i], parent))
			continue;
		struct plan_action *a = add(p, PK_UPDATE, match[i]->device, "differs from the file");
		if (!a || (e = fill_entry(a, match[i], parent))) {
			e = e ? e : FLEET_E_NOMEM;
			goto out;
		}
	}
	for (size_t j = 0; j < nw; j++) {
		if (w[j].seen)
			continue;
		struct plan_action *a = add(p, PK_CREATE, w[j].device, "eligible");
		if (!a || (e = fill_entry(a, &w[j], parent))) {
			e = e ? e : FLEET_E_NOMEM;
			goto out;
		}
	}
out:
	free(match);
	free(listed);
	free(gone);
	index_free(&ix);
	want_free(w, nw);
	if (e)
		plan_free(p);
	if (e == FLEET_E_NOMEM)
		fleet_errctx_msg(ec, e, "out of memory");
	return e;
}

void plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		for (size_t j = 0; j < p->a[i].n_selectors; j++)
			free(p->a[i].selectors[j]);
	free(p->a);
	memset(p, 0, sizeof(*p));
}

size_t plan_count(const struct plan *p, enum plan_kind k)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++)
		n += p->a[i].kind == k;
	return n;
}

void plan_print(const struct plan *p, FILE *to)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->a[i];
		if (a->kind == PK_BAN) {
			fprintf(to, "ban     %s  %s  (%s)\n", a->device, a->spiffe_id, a->why);
			continue;
		}
		fprintf(to, "%-7s %s  %s", plan_kind_name(a->kind), a->device, a->entry_id);
		if (a->kind != PK_DELETE) {
			fprintf(to, "  %s", a->spiffe_id);
			for (size_t j = 0; j < a->n_selectors; j++)
				fprintf(to, " -selector %s", a->selectors[j]);
		}
		fprintf(to, "  (%s)\n", a->why);
	}
	for (size_t i = 0; i < p->n_notes; i++)
		fprintf(to, "note    %s\n", p->notes[i]);
	fprintf(to, "plan: %zu ban, %zu delete, %zu update, %zu create; %zu node(s) leave\n",
		plan_count(p, PK_BAN), plan_count(p, PK_DELETE), plan_count(p, PK_UPDATE),
		plan_count(p, PK_CREATE), p->removed_nodes);
}
