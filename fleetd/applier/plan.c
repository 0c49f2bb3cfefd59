/*
 * plan.c: the plan (plan.h). Nothing here runs anything; the whole plan
 * exists, and is checked against the removal limit, before the first
 * command.
 */
#include "fleetd/applier/plan.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static fleet_err refuse(char *why, size_t whylen, fleet_err e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static fleet_err refuse(char *why, size_t whylen, fleet_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return e;
}

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
	char id[SN_NAME_MAX + 16];
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

static fleet_err build_wants(const struct sn_file *f, const struct applier_config *c,
			     struct want **out, size_t *n, char *why, size_t whylen)
{
	struct want *w = calloc(f->n_eligible * 2 + 1, sizeof(*w));
	if (!w)
		return FLEET_E_NOMEM;
	size_t k = 0;
	for (size_t i = 0; i < f->n_eligible; i++) {
		const struct sn_device *d = &f->eligible[i];
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
					return refuse(why, whylen, FLEET_E_TOO_LARGE,
						      "selector %zu for %s does not expand within "
						      "%d bytes", s, d->name, PLAN_STR - 1);
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
static void departing_device(const struct sn_file *f, const struct sp_entry *e, char *out,
			     size_t outlen)
{
	const char *x = e->id + strlen(SP_FLEET_PREFIX);
	char node_prefix[SN_TD_MAX + 32];
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
static int still_eligible(const struct sn_file *f, const char *dev)
{
	return sn_find_eligible(f, dev) != NULL;
}

static int have_ban(const struct plan *p, const char *agent)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->a[i].kind == PK_BAN && !strcmp(p->a[i].spiffe_id, agent))
			return 1;
	return 0;
}

/* Ban every agent ID form the configuration names for this device, from
 * what is known of it: its revoked record (EKs, LDevIDs) and the EK hashes
 * its departing entries' selectors carry. */
static fleet_err plan_bans(struct plan *p, const struct sn_file *f,
			   const struct applier_config *c, const char *device,
			   const struct sp_entries *server, const char *why)
{
	char eks[2 + SP_MAX_SELECTORS * 2][65];
	size_t n_eks = 0;
	const struct sn_device *r = sn_find_revoked(f, device);
	if (r) {
		snprintf(eks[n_eks++], 65, "%s", r->ek_hash);
		if (r->ek_hash_ecc[0])
			snprintf(eks[n_eks++], 65, "%s", r->ek_hash_ecc);
	}
	struct ac_vars v = {device, NULL, f->trust_domain, NULL};
	for (size_t i = 0; i < server->n; i++) {
		const struct sp_entry *e = &server->e[i];
		char dev[PLAN_DEVICE_MAX];
		departing_device(f, e, dev, sizeof(dev));
		if (strcmp(dev, device))
			continue;
		for (size_t s = 0; s < e->n_selectors; s++)
			for (size_t t = 0; t < c->n_selector; t++) {
				char ek[65];
				if (!ac_match_ek(c->selector[t], &v, e->selectors[s], ek))
					continue;
				size_t k;
				for (k = 0; k < n_eks; k++)
					if (!strcmp(eks[k], ek))
						break;
				if (k == n_eks && n_eks < sizeof(eks) / sizeof(eks[0]))
					memcpy(eks[n_eks++], ek, 65);
			}
	}
	for (size_t t = 0; t < c->n_agent_id; t++) {
		const char *tm = c->agent_id[t];
		int uses_ek = ac_uses(tm, "{ek_hash}"), uses_ld = ac_uses(tm, "{ldevid_sha1}");
		size_t reps = uses_ek ? n_eks : uses_ld ? (r ? r->n_ldevid : 0) : 1;
		if (reps == 0)
			note(p, "%s: no %s known, so agent_id %zu is not banned", device,
			     uses_ek ? "EK hash" : "LDevID fingerprint", t);
		for (size_t k = 0; k < reps; k++) {
			struct ac_vars w = v;
			if (uses_ek)
				w.ek_hash = eks[k];
			if (uses_ld)
				w.ldevid_sha1 = r->ldevid_sha1[k];
			char agent[PLAN_STR];
			if (ac_expand(tm, &w, agent, sizeof(agent)))
				continue; /* cannot fit: said by the note below */
			if (have_ban(p, agent))
				continue;
			struct plan_action *a = add(p, PK_BAN, device, why);
			if (!a)
				return FLEET_E_NOMEM;
			snprintf(a->spiffe_id, sizeof(a->spiffe_id), "%s", agent);
		}
	}
	return FLEET_OK;
}

fleet_err plan_build(const struct sn_file *f, const struct applier_config *c,
		     const struct sp_entries *server, struct plan *p, char *why, size_t whylen)
{
	memset(p, 0, sizeof(*p));
	struct want *w = NULL;
	size_t nw = 0;
	fleet_err e = build_wants(f, c, &w, &nw, why, whylen);
	if (e)
		return e;
	char parent[PLAN_STR];
	snprintf(parent, sizeof(parent), "spiffe://%s/spire/server", f->trust_domain);

	/* Departed devices, in server order, each once. */
	char (*gone)[PLAN_DEVICE_MAX] = calloc(server->n + 1, sizeof(*gone));
	if (!gone) {
		want_free(w, nw);
		return FLEET_E_NOMEM;
	}
	size_t n_gone = 0;
	const struct want **match = calloc(server->n + 1, sizeof(*match));
	if (!match) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < server->n; i++) {
		for (size_t j = 0; j < nw; j++)
			if (!strcmp(w[j].id, server->e[i].id)) {
				match[i] = &w[j];
				w[j].seen = 1;
				break;
			}
		if (match[i])
			continue;
		char dev[PLAN_DEVICE_MAX];
		departing_device(f, &server->e[i], dev, sizeof(dev));
		if (still_eligible(f, dev))
			continue;
		size_t k;
		for (k = 0; k < n_gone; k++)
			if (!strcmp(gone[k], dev))
				break;
		if (k == n_gone)
			memcpy(gone[n_gone++], dev, sizeof(gone[0]));
	}
	p->removed_nodes = n_gone;

	/* 1. Bans: departed devices, then revoked ones. */
	for (size_t k = 0; k < n_gone; k++)
		if ((e = plan_bans(p, f, c, gone[k], server, "left the eligible list")))
			goto out;
	for (size_t k = 0; k < f->n_revoked; k++)
		if ((e = plan_bans(p, f, c, f->revoked[k].name, server, "revoked")))
			goto out;
	/* 2. Deletes. */
	for (size_t i = 0; i < server->n; i++) {
		if (match[i])
			continue;
		char dev[PLAN_DEVICE_MAX];
		departing_device(f, &server->e[i], dev, sizeof(dev));
		int stale = still_eligible(f, dev);
		struct plan_action *a = add(p, PK_DELETE, dev, stale ? "not wanted for an "
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
	free(gone);
	want_free(w, nw);
	if (e)
		plan_free(p);
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
