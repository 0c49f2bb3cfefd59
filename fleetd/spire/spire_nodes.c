/*
 * spire_nodes.c: who is eligible for SPIRE and who is revoked, from the
 * inventory and fleetd's store (spire_nodes.h has the rules; docs/spire-nodes.md
 * the reasons behind them).
 *
 * The store is the authority for what fleetd proved: the EK hashes, the
 * certificates and the verdicts come from it alone. The inventory only says
 * what state each machine is meant to be in. Every name written to the file
 * is therefore the store's (which it checked when the device was admitted),
 * and an inventory name is used only when it equals it.
 */
#include "fleetd/spire/spire_nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "fleetd/obs/journal.h"
#include "lib/hex.h"
#include "lib/sanitize.h"

void fleet_spire_doc_free(struct fleet_spire_doc *doc)
{
	if (!doc)
		return;
	fleet_spire_node_list_free(doc->eligible, doc->n_eligible);
	fleet_spire_node_list_free(doc->revoked, doc->n_revoked);
	free(doc->excluded);
	free(doc->malformed);
	free(doc->ek_stale);
	free(doc->not_admitted);
	memset(doc, 0, sizeof(*doc));
}

/* Copy an inventory string for the journal: sanitised (lib/sanitize.h),
 * within cap, "[+N]" when cut; NULL becomes "". */
static void copy_printable(char *dst, size_t cap, const char *src)
{
	fleet_sanitize(src, src ? strlen(src) : 0, dst, cap, SIZE_MAX);
}

/* The growing lists of one build. */
/* The store as one snapshot showed it: the compact devices and, from one
 * statement each, every device's latest verdict and certificates, both by
 * device id (fleet_store_latest_verdicts, fleet_store_certs_all): the
 * judgement reads these instead of two statements a device. */
struct store_view {
	const struct fleet_store_latest_verdict *verdicts;
	size_t n_verdicts;
	const struct fleet_store_cert_brief *certs;
	size_t n_certs;
};

struct build {
	struct fleet_spire_doc *doc;
	const struct store_view *view;
	size_t cap_eligible, cap_revoked, cap_excluded, cap_ek_stale, cap_not_admitted;
	struct fleet_errctx *ec;
};

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *nv = reallocarray(*v, ncap, size);
	if (!nv)
		return false;
	*v = nv;
	*cap = ncap;
	return true;
}

/* Room for one more entry at the end of *v (n entries, *cap of room): its
 * address, zeroed and counted in *n; NULL (with b->ec set) when out of memory. */
static void *append(struct build *b, void **v, size_t *cap, size_t *n, size_t size)
{
	if (!grow(v, cap, *n, size)) {
		fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
		return NULL;
	}
	void *x = (char *)*v + (*n)++ * size;
	memset(x, 0, size);
	return x;
}

static fleet_err exclude(struct build *b, const char *name, const char *reason,
				    const char *status)
{
	struct fleet_spire_doc *d = b->doc;
	struct fleet_spire_excluded *x = append(b, (void **)&d->excluded, &b->cap_excluded,
						&d->n_excluded, sizeof(*x));
	if (!x)
		return FLEET_SPIRE_E_NOMEM;
	copy_printable(x->name, sizeof(x->name), name);
	x->reason = reason;
	copy_printable(x->status, sizeof(x->status), status);
	return FLEET_SPIRE_OK;
}

/* What the build reads of an inventory device, compacted from the listing
 * (struct fleet_inv_device is 1,336 bytes, mostly fields the build never
 * reads: 63 MiB at 50,000 devices, docs/benchmark-pass.md). The strings
 * point into one arena sized before it is filled. */
struct inv_rec {
	long id;
	const char *name, *serial, *status;
	char ek_hash[65];
	char ek_hash_ecc[65];
};

struct inv_set {
	struct inv_rec *v;
	size_t n;
	char *arena;
};

static void inv_set_free(struct inv_set *s)
{
	free(s->v);
	free(s->arena);
	memset(s, 0, sizeof(*s));
}

static char *arena_put(char **at, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = *at;
	memcpy(p, s, n);
	*at += n;
	return p;
}

/* The listing, compacted; false when out of memory. */
static bool inv_set_of(struct inv_set *s, const struct fleet_inv_device *d, size_t n)
{
	size_t bytes = 1;
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++)
		bytes += strlen(d[i].name) + strlen(d[i].serial) + strlen(d[i].status) + 3;
	s->v = calloc(n ? n : 1, sizeof(*s->v));
	s->arena = malloc(bytes);
	if (!s->v || !s->arena) {
		inv_set_free(s);
		return false;
	}
	char *at = s->arena;
	for (size_t i = 0; i < n; i++) {
		struct inv_rec *r = &s->v[i];
		r->id = d[i].id;
		r->name = arena_put(&at, d[i].name);
		r->serial = arena_put(&at, d[i].serial);
		r->status = arena_put(&at, d[i].status);
		memcpy(r->ek_hash, d[i].ek_hash, sizeof(r->ek_hash));
		memcpy(r->ek_hash_ecc, d[i].ek_hash_ecc, sizeof(r->ek_hash_ecc));
	}
	s->n = n;
	return true;
}

/* Streamed (list_stream): records and arena grown as devices come, the
 * strings kept as offsets until the arena stops moving. */
struct inv_stream {
	struct inv_set s;
	size_t cap, len, arena_cap;
	size_t (*off)[3]; /* name, serial, status offsets of each record */
};

static bool arena_add(struct inv_stream *x, const char *str, size_t *off)
{
	size_t n = strlen(str) + 1;
	if (x->len + n > x->arena_cap) {
		size_t ncap = x->arena_cap ? x->arena_cap * 2 : 4096;
		while (ncap < x->len + n)
			ncap *= 2;
		char *na = realloc(x->s.arena, ncap);
		if (!na)
			return false;
		x->s.arena = na;
		x->arena_cap = ncap;
	}
	memcpy(x->s.arena + x->len, str, n);
	*off = x->len;
	x->len += n;
	return true;
}

static fleet_err inv_stream_each(void *ctx, const struct fleet_inv_device *d)
{
	struct inv_stream *x = ctx;
	if (x->s.n == x->cap) {
		size_t ncap = x->cap ? x->cap * 2 : 1024;
		struct inv_rec *nv = reallocarray(x->s.v, ncap, sizeof(*nv));
		if (!nv)
			return FLEET_SPIRE_E_NOMEM;
		x->s.v = nv;
		size_t(*no)[3] = reallocarray(x->off, ncap, sizeof(*no));
		if (!no)
			return FLEET_SPIRE_E_NOMEM;
		x->off = no;
		x->cap = ncap;
	}
	size_t *o = x->off[x->s.n];
	if (!arena_add(x, d->name, &o[0]) || !arena_add(x, d->serial, &o[1]) ||
	    !arena_add(x, d->status, &o[2]))
		return FLEET_SPIRE_E_NOMEM;
	struct inv_rec *r = &x->s.v[x->s.n++];
	r->id = d->id;
	memcpy(r->ek_hash, d->ek_hash, sizeof(r->ek_hash));
	memcpy(r->ek_hash_ecc, d->ek_hash_ecc, sizeof(r->ek_hash_ecc));
	return FLEET_OK;
}

/* The whole listing streamed into *out; the inventory's failure as its own. */
static fleet_err inv_set_stream(struct fleet_inventory *inv, struct inv_set *out,
				struct fleet_inv_malformed **bad, size_t *n_bad,
				struct fleet_errctx *ec)
{
	struct inv_stream x;
	memset(&x, 0, sizeof(x));
	memset(out, 0, sizeof(*out));
	fleet_err r = inv->ops->list_stream(inv, NULL, inv_stream_each, &x, bad, n_bad, ec);
	if (r == FLEET_OK && !x.s.arena && !(x.s.arena = malloc(1)))
		r = fleet_errctx_msg(ec, FLEET_SPIRE_E_NOMEM, "out of memory");
	if (r != FLEET_OK) {
		free(x.off);
		inv_set_free(&x.s);
		return r;
	}
	for (size_t i = 0; i < x.s.n; i++) {
		x.s.v[i].name = x.s.arena + x.off[i][0];
		x.s.v[i].serial = x.s.arena + x.off[i][1];
		x.s.v[i].status = x.s.arena + x.off[i][2];
	}
	free(x.off);
	*out = x.s;
	return FLEET_OK;
}

static fleet_err not_admitted(struct build *b, const struct inv_rec *d)
{
	struct fleet_spire_doc *doc = b->doc;
	struct fleet_spire_not_admitted *x = append(b, (void **)&doc->not_admitted,
						    &b->cap_not_admitted, &doc->n_not_admitted,
						    sizeof(*x));
	if (!x)
		return FLEET_SPIRE_E_NOMEM;
	x->id = d->id;
	copy_printable(x->name, sizeof(x->name), d->name);
	return FLEET_SPIRE_OK;
}

static int cmp_not_admitted(const void *a, const void *b)
{
	long x = ((const struct fleet_spire_not_admitted *)a)->id;
	long y = ((const struct fleet_spire_not_admitted *)b)->id;
	return (x > y) - (x < y);
}

/* qsort, which must not be given a NULL array even with nothing in it. */
static void sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

static int cmp_sha1(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(((const struct fleet_spire_node *)a)->name,
		      ((const struct fleet_spire_node *)b)->name);
}

static bool ek_ok(const char *h)
{
	return h[0] == '\0' || fleet_hex_is_lower(h, 64);
}

struct ldevid {
	char sha1[41];
	int64_t not_after;
};

static int cmp_ldevid_latest(const void *a, const void *b)
{
	const struct ldevid *p = a, *q = b;
	if (p->not_after != q->not_after)
		return p->not_after < q->not_after ? 1 : -1; /* latest first */
	return strcmp(p->sha1, q->sha1);
}

/* The LDevID certificates to list: for eligible, the current ones (not
 * revoked, now <= notAfter); for revoked, every one whose notAfter has not
 * passed (a revoked one is exactly what to ban). *out malloc'd. */
static fleet_err pick_ldevids(struct build *b, const struct fleet_store_device_brief *dev,
			      bool revoked, time_t now, struct ldevid **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	/* dev's certificates: its run in the store's bulk listing (by device
	 * id), the rows fleet_store_certs_for_device gives it. */
	const struct fleet_store_cert_brief *certs = b->view->certs;
	size_t lo = 0, hi = b->view->n_certs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (certs[mid].device_id < dev->id)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t nc = 0;
	while (lo + nc < b->view->n_certs && certs[lo + nc].device_id == dev->id)
		nc++;
	certs += lo;
	struct ldevid *v = nc ? calloc(nc, sizeof(*v)) : NULL;
	if (nc && !v)
		return fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < nc; i++) {
		const struct fleet_store_cert_brief *c = &certs[i];
		if (strcmp(c->kind, FLEET_STORE_CERT_LDEVID) != 0)
			continue;
		if (!fleet_hex_is_lower(c->sha1, 40)) {
			free(v);
			return fleet_errctx_msg(b->ec, FLEET_STORE_E_CORRUPT,
						"the store holds a malformed fingerprint for %s",
						dev->name);
		}
		if ((int64_t)now > c->not_after || (!revoked && c->revoked))
			continue;
		memcpy(v[*n].sha1, c->sha1, 41);
		v[(*n)++].not_after = c->not_after;
	}
	*out = v;
	return FLEET_SPIRE_OK;
}

/* Add dev to eligible or revoked. A revoked device with no certificate left
 * is not added: nothing of it remains to ban. */
static fleet_err add_node(struct build *b,
				     const struct fleet_store_device_brief *dev, bool revoked,
				     time_t now)
{
	if (!ek_ok(dev->ek_hash) || !ek_ok(dev->ek_hash_ecc))
		return fleet_errctx_msg(b->ec, FLEET_STORE_E_CORRUPT,
					"the store's device row %lld is malformed",
					(long long)dev->id);
	struct ldevid *ld;
	size_t n;
	fleet_err e = pick_ldevids(b, dev, revoked, now, &ld, &n);
	if (e)
		return e;
	struct fleet_spire_node node = {.ldevid_sha1 = NULL};
	if (revoked && n == 0)
		goto out;
	if (n > FLEET_SPIRE_LDEVID_MAX) {
		if (!revoked) {
			e = exclude(b, dev->name, FLEET_SPIRE_X_TOO_MANY_LDEVID, "active");
			goto out;
		}
		/* Ban the ones that stay valid longest; the rest expire sooner. */
		sort(ld, n, sizeof(*ld), cmp_ldevid_latest);
		n = FLEET_SPIRE_LDEVID_MAX;
	}
	/* fleet_spire_name_ok: it fits. Copied by its length: the name is in
	 * the store listing's arena, with nothing to read past its NUL. */
	snprintf(node.name, sizeof(node.name), "%s", dev->name);
	memcpy(node.ek_hash, dev->ek_hash, sizeof(node.ek_hash));
	memcpy(node.ek_hash_ecc, dev->ek_hash_ecc, sizeof(node.ek_hash_ecc));
	if (n && !(node.ldevid_sha1 = calloc(n, sizeof(*node.ldevid_sha1)))) {
		e = fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(node.ldevid_sha1[i], ld[i].sha1, 41);
		if (revoked && ld[i].not_after > node.not_after)
			node.not_after = ld[i].not_after;
	}
	node.n_ldevid = n;
	sort(node.ldevid_sha1, n, sizeof(*node.ldevid_sha1), cmp_sha1);
	struct fleet_spire_doc *d = b->doc;
	struct fleet_spire_node **list = revoked ? &d->revoked : &d->eligible;
	size_t *cnt = revoked ? &d->n_revoked : &d->n_eligible;
	size_t *cap = revoked ? &b->cap_revoked : &b->cap_eligible;
	if (!grow((void **)list, cap, *cnt, sizeof(**list))) {
		e = fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
		goto out;
	}
	(*list)[(*cnt)++] = node;
	node.ldevid_sha1 = NULL; /* the list owns it now */
out:
	free(node.ldevid_sha1);
	free(ld);
	return e;
}

/* An active device the store knows under the same name: eligible unless
 * the store holds it back. */
static fleet_err judge_active(struct build *b,
					 const struct fleet_store_device_brief *dev, time_t now)
{
	if (dev->quarantined)
		return exclude(b, dev->name, FLEET_SPIRE_X_QUARANTINED, "active");
	if (strcmp(dev->state, FLEET_STORE_STATE_RETIRED) == 0)
		return exclude(b, dev->name, FLEET_SPIRE_X_RETIRED, "active");
	/* The latest verdict (the highest row id: the verdict recorded last),
	 * from the store's bulk read, by device id. */
	const struct fleet_store_latest_verdict *lv = b->view->verdicts, *v = NULL;
	size_t lo = 0, hi = b->view->n_verdicts;
	while (lo < hi && !v) {
		size_t mid = lo + (hi - lo) / 2;
		if (lv[mid].device_id == dev->id)
			v = &lv[mid];
		else if (lv[mid].device_id < dev->id)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool pass = v && v->pass;
	if (!v)
		return exclude(b, dev->name, FLEET_SPIRE_X_NO_VERDICT, "active");
	if (!pass)
		return exclude(b, dev->name, FLEET_SPIRE_X_VERDICT_FAILED, "active");
	return add_node(b, dev, false, now);
}

/* Inventory devices with a serial, sorted by it (case-insensitively, as
 * the store compares serials), so each store device is found in log time. */
static int cmp_inv_serial(const void *a, const void *b)
{
	const struct inv_rec *x = *(const struct inv_rec *const *)a;
	const struct inv_rec *y = *(const struct inv_rec *const *)b;
	return strcasecmp(x->serial, y->serial);
}

/* The first index whose serial is not below serial. */
static size_t lower_bound(const struct inv_rec *const *idx, size_t n, const char *serial)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcasecmp(idx[mid]->serial, serial) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The malformed inventory device that is dev, if any: by the inventory id
 * the store recorded, else by serial. */
static struct fleet_spire_malformed *malformed_of(struct build *b,
						  const struct fleet_inv_malformed *bad,
						  size_t n_bad,
						  const struct fleet_store_device_brief *dev)
{
	for (size_t i = 0; i < n_bad; i++)
		if ((dev->inventory_id > 0 && bad[i].id == dev->inventory_id) ||
		    (bad[i].serial[0] && strcasecmp(bad[i].serial, dev->serial) == 0))
			return &b->doc->malformed[i];
	return NULL;
}

/* dev's inventory EK hashes are not the store's: note it for the pass. */
static fleet_err note_ek_stale(struct build *b, const struct inv_rec *d,
					  const struct fleet_store_device_brief *dev)
{
	if (!ek_ok(dev->ek_hash) || !ek_ok(dev->ek_hash_ecc) ||
	    (!dev->ek_hash[0] && !dev->ek_hash_ecc[0]) ||
	    (dev->inventory_id > 0 && dev->inventory_id != d->id))
		return FLEET_SPIRE_OK; /* nothing proven to write, or another device */
	if (strcmp(d->ek_hash, dev->ek_hash) == 0 && strcmp(d->ek_hash_ecc, dev->ek_hash_ecc) == 0)
		return FLEET_SPIRE_OK;
	struct fleet_spire_doc *doc = b->doc;
	struct fleet_spire_ek_stale *x = append(b, (void **)&doc->ek_stale, &b->cap_ek_stale,
						&doc->n_ek_stale, sizeof(*x));
	if (!x)
		return FLEET_SPIRE_E_NOMEM;
	x->inventory_id = d->id;
	snprintf(x->name, sizeof(x->name), "%s", dev->name); /* an arena string */
	memcpy(x->ek_hash, dev->ek_hash, sizeof(x->ek_hash));
	memcpy(x->ek_hash_ecc, dev->ek_hash_ecc, sizeof(x->ek_hash_ecc));
	return FLEET_SPIRE_OK;
}

static fleet_err judge_all(struct build *b,
				      const struct inv_rec *inv, size_t n_inv,
				      const struct fleet_inv_malformed *bad, size_t n_bad,
				      const struct fleet_store_device_brief *devs, size_t n_devs,
				      time_t now)
{
	const struct inv_rec **idx = calloc(n_inv ? n_inv : 1, sizeof(*idx));
	bool *matched = calloc(n_inv ? n_inv : 1, sizeof(*matched));
	fleet_err e = FLEET_SPIRE_OK;
	if (!idx || !matched) {
		e = fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
		goto out;
	}
	size_t n_idx = 0;
	for (size_t i = 0; i < n_inv; i++)
		if (inv[i].serial[0])
			idx[n_idx++] = &inv[i];
	sort(idx, n_idx, sizeof(*idx), cmp_inv_serial);
	if (n_bad) {
		b->doc->malformed = calloc(n_bad, sizeof(*b->doc->malformed));
		if (!b->doc->malformed) {
			e = fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
			goto out;
		}
		b->doc->n_malformed = n_bad;
		for (size_t i = 0; i < n_bad; i++) {
			b->doc->malformed[i].id = bad[i].id;
			snprintf(b->doc->malformed[i].reason, sizeof(b->doc->malformed[i].reason),
				 "%s", bad[i].reason);
		}
	}

	for (size_t i = 0; i < n_devs && !e; i++) {
		const struct fleet_store_device_brief *dev = &devs[i];
		size_t lo = lower_bound(idx, n_idx, dev->serial), hits = 0;
		while (lo + hits < n_idx && strcasecmp(idx[lo + hits]->serial, dev->serial) == 0) {
			matched[idx[lo + hits] - inv] = true;
			hits++;
		}
		if (hits == 1 && (e = note_ek_stale(b, idx[lo], dev)))
			break;
		/* What the format cannot carry is in neither list. Such a device
		 * is never eligible, so it never had entries to revoke either. */
		if (!fleet_spire_name_ok(dev->name)) {
			e = exclude(b, dev->name, FLEET_SPIRE_X_NAME_UNUSABLE, "");
			continue;
		}
		if (!dev->ek_hash[0]) {
			e = exclude(b, dev->name, FLEET_SPIRE_X_NO_RSA_EK, "");
			continue;
		}
		if (hits == 0) {
			/* Listed but malformed is not absent: neither list. */
			struct fleet_spire_malformed *m = malformed_of(b, bad, n_bad, dev);
			if (m) {
				if (!m->device[0])
					snprintf(m->device, sizeof(m->device), "%s",
						 dev->name); /* an arena string */
				continue;
			}
			e = add_node(b, dev, true, now); /* absent from the inventory */
			continue;
		}
		const struct inv_rec *d = idx[lo];
		if (hits > 1)
			e = exclude(b, dev->name, FLEET_SPIRE_X_AMBIGUOUS, "");
		else if (strcmp(d->name, dev->name) != 0)
			e = exclude(b, d->name, FLEET_SPIRE_X_NAME_MISMATCH, d->status);
		else if (strcmp(d->status, "active") == 0)
			e = judge_active(b, dev, now);
		else if (strcmp(d->status, "decommissioning") == 0 ||
			 strcmp(d->status, "offline") == 0)
			e = add_node(b, dev, true, now);
		else
			e = exclude(b, dev->name, FLEET_SPIRE_X_NOT_ACTIVE, d->status);
	}
	/* Active in the inventory but never admitted by fleetd: kept apart,
	 * for the journal to say once per device rather than every pass. */
	for (size_t i = 0; i < n_inv && !e; i++)
		if (!matched[i] && strcmp(inv[i].status, "active") == 0)
			e = not_admitted(b, &inv[i]);
	sort(b->doc->not_admitted, b->doc->n_not_admitted, sizeof(*b->doc->not_admitted),
	     cmp_not_admitted);
out:
	free(idx);
	free(matched);
	return e;
}

/* Remove the marked entries of a list, saying why for each. */
static fleet_err drop_marked(struct build *b, struct fleet_spire_node *list,
					size_t *n, const bool *mark, const char *reason)
{
	fleet_err e = FLEET_SPIRE_OK;
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		if (!mark[i]) {
			list[k++] = list[i];
			continue;
		}
		fleet_err xe = exclude(b, list[i].name, reason, "");
		if (!e)
			e = xe;
		free(list[i].ldevid_sha1);
	}
	*n = k;
	return e;
}

struct ekref {
	const char *hash;
	size_t node;
};

static int cmp_ekref(const void *a, const void *b)
{
	return strcmp(((const struct ekref *)a)->hash, ((const struct ekref *)b)->hash);
}

/* Two eligible entries pinning one EK would give one TPM two identities:
 * neither is eligible. (The store does not make EK hashes unique.) */
static fleet_err drop_shared_eks(struct build *b)
{
	struct fleet_spire_doc *d = b->doc;
	size_t n = d->n_eligible;
	struct ekref *r = calloc(2 * n + 1, sizeof(*r));
	bool *mark = calloc(n + 1, sizeof(*mark));
	fleet_err e = FLEET_SPIRE_OK;
	if (!r || !mark) {
		e = fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
		goto out;
	}
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		r[nr++] = (struct ekref){d->eligible[i].ek_hash, i};
		if (d->eligible[i].ek_hash_ecc[0])
			r[nr++] = (struct ekref){d->eligible[i].ek_hash_ecc, i};
	}
	sort(r, nr, sizeof(*r), cmp_ekref);
	for (size_t i = 1; i < nr; i++)
		if (strcmp(r[i - 1].hash, r[i].hash) == 0)
			mark[r[i - 1].node] = mark[r[i].node] = true;
	e = drop_marked(b, d->eligible, &d->n_eligible, mark, FLEET_SPIRE_X_EK_SHARED);
out:
	free(r);
	free(mark);
	return e;
}

static bool has_name(const struct fleet_spire_node *v, size_t n, const char *name, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(v[mid].name, name, len);
		if (c == 0 && v[mid].name[len] != '\0')
			c = 1;
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The applier names the ECC entry of X "X-ecc": a device actually named
 * X-ecc beside X would collide with it, so X-ecc is left out. Lists must be
 * sorted by name. */
static fleet_err drop_ecc_collisions(struct build *b, struct fleet_spire_node *list,
						size_t *n)
{
	const struct fleet_spire_doc *d = b->doc;
	bool *mark = calloc(*n + 1, sizeof(*mark));
	if (!mark)
		return fleet_errctx_msg(b->ec, FLEET_SPIRE_E_NOMEM, "out of memory");
	for (size_t i = 0; i < *n; i++) {
		size_t len = strlen(list[i].name);
		if (len <= 4 || strcmp(list[i].name + len - 4, "-ecc") != 0)
			continue;
		mark[i] = has_name(d->eligible, d->n_eligible, list[i].name, len - 4) ||
			  has_name(d->revoked, d->n_revoked, list[i].name, len - 4);
	}
	fleet_err e = drop_marked(b, list, n, mark, FLEET_SPIRE_X_NAME_ECC);
	free(mark);
	return e;
}

fleet_err fleet_spire_nodes_build(struct fleet_inventory *inv, struct fleet_store *st,
				  const char *trust_domain, time_t now, struct fleet_spire_doc *doc,
				  struct fleet_errctx *ec)
{
	if (ec)
		memset(ec, 0, sizeof(*ec));
	if (!doc)
		return fleet_errctx_msg(ec, FLEET_SPIRE_E_INVALID, "no document to build");
	memset(doc, 0, sizeof(*doc));
	if (!inv || !inv->ops || !inv->ops->list || !st)
		return fleet_errctx_msg(ec, FLEET_SPIRE_E_INVALID,
					"an inventory and a store are required");
	if (!fleet_spire_trust_domain_ok(trust_domain))
		return fleet_errctx_msg(
			ec, FLEET_SPIRE_E_INVALID,
			"the trust domain must be 1..255 of a-z, 0-9, '.', '-', '_'");

	struct fleet_inv_device *devs_inv = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n_inv = 0, n_bad = 0;
	struct inv_set invs;
	/* Streamed when the inventory can: only the compact records are ever
	 * held (63 MiB of listing structs at 50,000 devices otherwise). */
	bool streamed = inv->ops->list_stream != NULL;
	fleet_err ir = streamed ? inv_set_stream(inv, &invs, &bad, &n_bad, ec)
				: inv->ops->list(inv, &devs_inv, &n_inv, &bad, &n_bad, ec);
	if (ir != FLEET_INV_OK) {
		/* The inventory's own context (its errno, its cause), said as
		 * the list's. */
		char what[80];
		free(devs_inv);
		free(bad);
		snprintf(what, sizeof(what),
			 "the inventory's device list: %s: ", fleet_err_str(ir));
		return fleet_errctx_wrap(ec, ir, what, NULL);
	}
	/* Compacted, and the listing's array freed before the store's rows
	 * are read: the two are never held at once. */
	bool compact = streamed || inv_set_of(&invs, devs_inv, n_inv);
	free(devs_inv);
	if (!compact) {
		free(bad);
		return fleet_errctx_msg(ec, FLEET_SPIRE_E_NOMEM,
					"out of memory keeping the inventory's device list");
	}
	/* One state of the store for the whole judgement: every device's
	 * row, verdict and certificates as of the same moment, whatever the
	 * admission commits meanwhile on its own handle. */
	/* The compact listing: the fields judged, not the store's whole rows
	 * (34 MiB of them at 50,000 devices). */
	struct fleet_store_device_briefs devs = {0};
	struct fleet_store_latest_verdict *verdicts = NULL;
	struct fleet_store_cert_brief *certs = NULL;
	struct store_view view = {0};
	const char *what = "devices";
	fleet_err se = fleet_store_snapshot_begin(st);
	if (!se && (se = fleet_store_devices_brief(st, &devs)) == FLEET_STORE_OK) {
		what = "latest verdicts";
		se = fleet_store_latest_verdicts(st, &verdicts, &view.n_verdicts);
	}
	if (!se) {
		what = "certificates";
		se = fleet_store_certs_all(st, &certs, &view.n_certs);
	}
	fleet_store_snapshot_end(st); /* everything judged is read */
	view.verdicts = verdicts;
	view.certs = certs;
	/* The lookups by device id bisect: rows out of order would be
	 * misjudged silently, so they are refused. */
	bool disorder = false;
	for (size_t i = 1; !se && !disorder && i < view.n_verdicts; i++)
		disorder = verdicts[i - 1].device_id >= verdicts[i].device_id;
	for (size_t i = 1; !se && !disorder && i < view.n_certs; i++)
		disorder = certs[i - 1].device_id > certs[i].device_id;
	if (se || disorder) {
		fleet_store_device_briefs_free(&devs);
		free(verdicts);
		free(certs);
		inv_set_free(&invs);
		free(bad);
		if (disorder)
			return fleet_errctx_msg(ec, FLEET_STORE_E_CORRUPT,
						"the store's bulk reads are not in device order");
		return fleet_errctx_msg(ec, se, "the store's %s: %s: %s", what, fleet_err_str(se),
					fleet_store_errmsg(st));
	}

	snprintf(doc->trust_domain, sizeof(doc->trust_domain), "%s", trust_domain);
	struct build b = {.doc = doc, .view = &view, .ec = ec};
	fleet_err e = judge_all(&b, invs.v, invs.n, bad, n_bad, devs.v, devs.n, now);
	inv_set_free(&invs);
	free(bad);
	fleet_store_device_briefs_free(&devs);
	free(verdicts);
	free(certs);
	if (!e) {
		sort(doc->eligible, doc->n_eligible, sizeof(*doc->eligible), cmp_node);
		sort(doc->revoked, doc->n_revoked, sizeof(*doc->revoked), cmp_node);
		e = drop_shared_eks(&b);
	}
	if (!e)
		e = drop_ecc_collisions(&b, doc->eligible, &doc->n_eligible);
	if (!e)
		e = drop_ecc_collisions(&b, doc->revoked, &doc->n_revoked);
	if (e)
		fleet_spire_doc_free(doc);
	return e;
}

/* ---- the journal of devices fleetd never admitted ------------------------ */

struct fleet_spire_not_admitted_log {
	long *seen; /* the ids of the last pass's not_admitted, sorted */
	size_t n_seen;
	bool journaled_count; /* the last pass journaled a count */
	struct fleet_metric *gauge;
};

fleet_err fleet_spire_not_admitted_log_new(struct fleet_metrics *metrics,
					   struct fleet_spire_not_admitted_log **out)
{
	struct fleet_spire_not_admitted_log *l = calloc(1, sizeof(*l));
	if (!l)
		return FLEET_E_NOMEM;
	if (metrics) {
		fleet_err e = fleet_metrics_register(
			metrics, FLEET_METRIC_GAUGE, "fleetd_inventory_not_admitted_devices",
			"Devices active in the inventory that fleetd never admitted, in the last "
			"listing (in neither SPIRE list).",
			NULL, NULL, &l->gauge, NULL);
		if (e != FLEET_OK) {
			free(l);
			return e;
		}
	}
	*out = l;
	return FLEET_OK;
}

static bool seen_before(const struct fleet_spire_not_admitted_log *l, long id)
{
	size_t lo = 0, hi = l->n_seen;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->seen[mid] == id)
			return true;
		if (l->seen[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void fleet_spire_not_admitted_journal(struct fleet_spire_not_admitted_log *l,
				      const struct fleet_spire_doc *doc)
{
	size_t n = doc->n_not_admitted, fresh = 0;
	long *now = n ? calloc(n, sizeof(*now)) : NULL;
	char id_s[24];
	for (size_t i = 0; i < n; i++) {
		const struct fleet_spire_not_admitted *x = &doc->not_admitted[i];
		if (now)
			now[i] = x->id; /* doc->not_admitted is sorted by id */
		if (seen_before(l, x->id))
			continue;
		fresh++;
		snprintf(id_s, sizeof(id_s), "%ld", x->id);
		fleet_log(LOG_INFO, "spire-excluded",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", x->name},
					   {"FLEET_INVENTORY_ID", id_s},
					   {"FLEET_REASON", FLEET_SPIRE_X_NOT_ADMITTED},
					   {"FLEET_STATUS", "active"}),
			  "not eligible for SPIRE: %s (inventory device %ld is active but fleetd "
			  "never admitted it; said once while it stays so)",
			  FLEET_SPIRE_X_NOT_ADMITTED, x->id);
	}
	/* One line a pass with the count, while there are any (and once when
	 * there are none again), so the journal still shows them each pass. */
	if (n || l->journaled_count) {
		char n_s[24];
		snprintf(n_s, sizeof(n_s), "%zu", n);
		fleet_log(LOG_INFO, "spire-not-admitted",
			  FLEET_LOG_FIELDS({"FLEET_COUNT", n_s}),
			  "pass: %zu device(s) active in the inventory were never admitted by "
			  "fleetd (%zu new); in neither SPIRE list", n, fresh);
	}
	l->journaled_count = n > 0;
	if (now || !n) {
		free(l->seen);
		l->seen = now;
		l->n_seen = n;
	} /* out of memory: keep the old set (at worst a repeat next pass) */
	if (l->gauge)
		fleet_metric_set(l->gauge, (int64_t)n);
}

void fleet_spire_not_admitted_log_free(struct fleet_spire_not_admitted_log *l)
{
	if (!l)
		return;
	free(l->seen);
	free(l);
}
