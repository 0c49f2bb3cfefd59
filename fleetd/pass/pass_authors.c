/*
 * pass_authors.c: binding author records, rules B1..B6 of pass.h.
 *
 * Why a record at all: NetBox deletes change-log entries older than
 * CHANGELOG_RETENTION, and re-applying the same value through Terraform
 * writes no new change, so without a copy a binding written long before
 * the hardware first boots could never be admitted. Why only a copy: the
 * pass decides nothing about a machine; it keeps what the inventory said
 * while the inventory could still say it, and admission reads it only when
 * the log has nothing to say (docs/admission.md, "Binding authors").
 */
#include "fleetd/pass/pass_authors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fleetd/obs/journal.h"

/* ---- the listing view ---------------------------------------------------- */

/* The view is the first member of its listing. */
static struct pass_listing *view_of(struct fleet_inventory *inv)
{
	return (struct pass_listing *)inv;
}

static int by_id(const void *x, const void *y)
{
	long a = ((const struct pass_candidate *)x)->id, b = ((const struct pass_candidate *)y)->id;
	return (a > b) - (a < b);
}

static int long_cmp(const void *x, const void *y)
{
	long a = *(const long *)x, b = *(const long *)y;
	return (a > b) - (a < b);
}

static void forget_copy(struct pass_listing *l)
{
	free(l->cand);
	free(l->bad_ids);
	l->cand = NULL;
	l->bad_ids = NULL;
	l->n_cand = l->n_bad = 0;
	l->listed = l->incomplete = l->bad_unnamed = false;
}

/* B1's candidates and the malformed ids, copied from a whole listing. */
static void copy_listing(struct pass_listing *l, const struct fleet_inv_device *devs, size_t n,
			 const struct fleet_inv_malformed *bad, size_t n_bad)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += strcmp(devs[i].status, "planned") == 0 && devs[i].approved_ek_hash[0];
	l->cand = k ? calloc(k, sizeof(*l->cand)) : NULL;
	l->bad_ids = n_bad ? calloc(n_bad, sizeof(*l->bad_ids)) : NULL;
	if ((k && !l->cand) || (n_bad && !l->bad_ids)) {
		l->incomplete = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct fleet_inv_device *d = &devs[i];
		if (strcmp(d->status, "planned") != 0 || !d->approved_ek_hash[0])
			continue;
		struct pass_candidate *c = &l->cand[l->n_cand++];
		c->id = d->id;
		memcpy(c->name, d->name, sizeof(c->name));
		memcpy(c->serial, d->serial, sizeof(c->serial));
		memcpy(c->ek, d->approved_ek_hash, sizeof(c->ek));
		memcpy(c->ek_ecc, d->approved_ek_hash_ecc, sizeof(c->ek_ecc));
	}
	for (size_t i = 0; i < n_bad; i++) {
		if (bad[i].id > 0)
			l->bad_ids[l->n_bad++] = bad[i].id;
		else
			l->bad_unnamed = true;
	}
	if (l->n_cand)
		qsort(l->cand, l->n_cand, sizeof(*l->cand), by_id);
	if (l->n_bad)
		qsort(l->bad_ids, l->n_bad, sizeof(*l->bad_ids), long_cmp);
}

static fleet_err view_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			   struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	struct pass_listing *l = view_of(inv);
	const struct fleet_inventory_ops *o = l->real->ops;
	fleet_err r = o->list_bounded ? o->list_bounded(l->real, &l->bound, out, n, bad, n_bad, ec)
				      : o->list(l->real, out, n, bad, n_bad, ec);
	forget_copy(l);
	if (r == FLEET_INV_OK) {
		copy_listing(l, *out, *n, *bad, *n_bad);
		l->listed = true;
	}
	return r;
}

/* Streamed: each planned device with a binding kept as it passes (B1),
 * then handed on; the malformed ids once the listing is whole. */
struct view_stream {
	struct pass_listing *l;
	fleet_err (*fn)(void *ctx, const struct fleet_inv_device *d);
	void *ctx;
	size_t cap;
};

static fleet_err view_stream_each(void *ctx, const struct fleet_inv_device *d)
{
	struct view_stream *vs = ctx;
	struct pass_listing *l = vs->l;
	if (!l->incomplete && strcmp(d->status, "planned") == 0 && d->approved_ek_hash[0]) {
		if (l->n_cand == vs->cap) {
			size_t ncap = vs->cap ? vs->cap * 2 : 16;
			struct pass_candidate *nv = reallocarray(l->cand, ncap, sizeof(*nv));
			if (!nv)
				l->incomplete = true; /* nothing is decided from this listing */
			else {
				l->cand = nv;
				vs->cap = ncap;
			}
		}
		if (!l->incomplete) {
			struct pass_candidate *c = &l->cand[l->n_cand++];
			memset(c, 0, sizeof(*c));
			c->id = d->id;
			memcpy(c->name, d->name, sizeof(c->name));
			memcpy(c->serial, d->serial, sizeof(c->serial));
			memcpy(c->ek, d->approved_ek_hash, sizeof(c->ek));
			memcpy(c->ek_ecc, d->approved_ek_hash_ecc, sizeof(c->ek_ecc));
		}
	}
	return vs->fn(vs->ctx, d);
}

static fleet_err view_stream(struct fleet_inventory *inv, const struct fleet_inv_bound *bound,
			     fleet_err (*fn)(void *ctx, const struct fleet_inv_device *d),
			     void *ctx, struct fleet_inv_malformed **bad, size_t *n_bad,
			     struct fleet_errctx *ec)
{
	struct pass_listing *l = view_of(inv);
	struct view_stream vs = {.l = l, .fn = fn, .ctx = ctx};
	(void)bound; /* the view's own bound is the pass's */
	forget_copy(l);
	fleet_err r = l->real->ops->list_stream(l->real, &l->bound, view_stream_each, &vs, bad,
						 n_bad, ec);
	if (r != FLEET_INV_OK) {
		forget_copy(l);
		return r;
	}
	if (!l->incomplete && *n_bad) {
		l->bad_ids = calloc(*n_bad, sizeof(*l->bad_ids));
		if (!l->bad_ids)
			l->incomplete = true;
		for (size_t i = 0; l->bad_ids && i < *n_bad; i++) {
			if ((*bad)[i].id > 0)
				l->bad_ids[l->n_bad++] = (*bad)[i].id;
			else
				l->bad_unnamed = true;
		}
	}
	if (l->n_cand > 1)
		qsort(l->cand, l->n_cand, sizeof(*l->cand), by_id);
	if (l->n_bad > 1)
		qsort(l->bad_ids, l->n_bad, sizeof(*l->bad_ids), long_cmp);
	l->listed = true;
	return FLEET_INV_OK;
}

static fleet_err view_find(struct fleet_inventory *inv, const char *serial,
			   struct fleet_inv_device *out, struct fleet_errctx *ec)
{
	struct fleet_inventory *real = view_of(inv)->real;
	return real->ops->find_by_serial(real, serial, out, ec);
}

static fleet_err view_get(struct fleet_inventory *inv, long id, struct fleet_inv_device *out,
			  struct fleet_errctx *ec)
{
	struct fleet_inventory *real = view_of(inv)->real;
	return real->ops->get(real, id, out, ec);
}

static fleet_err view_change(struct fleet_inventory *inv, long id,
			     struct fleet_inv_binding_change *out, struct fleet_errctx *ec)
{
	struct fleet_inventory *real = view_of(inv)->real;
	return real->ops->binding_change(real, id, out, ec);
}

static fleet_err view_write(struct fleet_inventory *inv, long id, const char *ek,
			    const char *ek_ecc, struct fleet_errctx *ec)
{
	struct fleet_inventory *real = view_of(inv)->real;
	return real->ops->write_ek_hashes(real, id, ek, ek_ecc, ec);
}

static fleet_err view_status(struct fleet_inventory *inv, long id, const char *status,
			     struct fleet_errctx *ec)
{
	struct fleet_inventory *real = view_of(inv)->real;
	return real->ops->set_status(real, id, status, ec);
}

void pass_listing_init(struct pass_listing *l, struct fleet_inventory *real)
{
	const struct fleet_inventory_ops *o = real->ops;
	memset(l, 0, sizeof(*l));
	l->real = real;
	/* Forwarded as the real inventory has them; the view closes nothing
	 * (the inventory is the caller's). */
	l->ops = (struct fleet_inventory_ops){
		.find_by_serial = o->find_by_serial ? view_find : NULL,
		.get = o->get ? view_get : NULL,
		.binding_change = o->binding_change ? view_change : NULL,
		.write_ek_hashes = o->write_ek_hashes ? view_write : NULL,
		.set_status = o->set_status ? view_status : NULL,
		.list = o->list ? view_list : NULL,
		.list_stream = o->list_stream ? view_stream : NULL,
	};
	l->inv.ops = &l->ops;
}

fleet_err pass_listing_list(struct pass_listing *l, struct fleet_errctx *ec)
{
	struct fleet_inv_device *devs = NULL;
	struct fleet_inv_malformed *bad = NULL;
	size_t n = 0, n_bad = 0;
	if (!l->ops.list)
		return fleet_errctx_msg(ec, FLEET_INV_UNAVAILABLE,
					"the inventory cannot list its devices");
	fleet_err r = l->ops.list(&l->inv, &devs, &n, &bad, &n_bad, ec);
	free(devs);
	free(bad);
	return r;
}

void pass_listing_free(struct pass_listing *l)
{
	forget_copy(l);
}

/* ---- the records ---------------------------------------------------------- */

static const char *const results[] = {"recorded",	   "confirmed",	      "forgotten",
				      "unproven",	   "changed-while-read", "inventory-error",
				      "store-error",	   NULL};

fleet_err pass_authors_init(struct pass_authors *pa, const struct fleet_pass_deps *deps)
{
	memset(pa, 0, sizeof(*pa));
	pa->d = *deps;
	pa->reads = deps->author_reads ? deps->author_reads : FLEET_PASS_AUTHOR_READS;
	if (!deps->metrics || !deps->record_author || !deps->forget_author)
		return FLEET_OK;
	fleet_err e = fleet_metrics_register(deps->metrics, FLEET_METRIC_COUNTER,
					     "fleetd_pass_binding_authors_total",
					     "Planned devices' binding authors the pass read or "
					     "kept, by outcome.",
					     "result", results, &pa->results, NULL);
	if (e == FLEET_OK)
		e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
					   "fleetd_pass_binding_authors_waiting",
					   "Planned devices without a binding author record that "
					   "the last pass left for a later one (over its cap).",
					   NULL, NULL, &pa->waiting, NULL);
	return e;
}

/* One pass's tallies, for the metric and the pass's one journal line. */
struct run {
	struct pass_authors *pa;
	time_t now;
	bool stop; /* the inventory did not answer: no more reads this pass */
	bool over; /* the pass's deadline, or fleetd stopping */
	size_t checked, recorded, confirmed, forgotten, unproven, raced, inv_errors,
		store_errors;
	char first_err[256];
};

static void tally(struct run *r, const char *result, size_t *n)
{
	(*n)++;
	if (r->pa->results)
		fleet_metric_inc_label(r->pa->results, result);
}

/* A write through the admission failed: journaled, counted; the pass goes on. */
static void write_failed(struct run *r, const struct pass_candidate *c, long id,
			 const char *what, fleet_err se, const struct fleet_errctx *ec)
{
	char id_s[24], err[sizeof(ec->detail) + 80];
	snprintf(id_s, sizeof(id_s), "%ld", id);
	fleet_log(LOG_ERR, "binding-author-write-failed",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", c ? c->name : NULL},
				   {"FLEET_INVENTORY_ID", id_s},
				   {"FLEET_REASON", fleet_err_str(se)}),
		  "pass: could not %s the binding author record of inventory device %ld (%s): %s; "
		  "the next pass tries again", what, id, fleet_err_str(se),
		  fleet_errctx_text(ec, err, sizeof(err)));
	tally(r, "store-error", &r->store_errors);
}

/* Forget id's record (B4, B5) with why; c NULL for a former candidate. */
static void forget(struct run *r, const struct pass_candidate *c, long id, const char *why,
		   const char *sentence)
{
	struct fleet_errctx ec = {0};
	char id_s[24];
	bool forgot = false;
	fleet_err se = r->pa->d.forget_author(r->pa->d.author_ctx, id, &forgot, &ec);
	if (se != FLEET_STORE_OK) {
		write_failed(r, c, id, "forget", se, &ec);
		return;
	}
	if (!forgot)
		return;
	snprintf(id_s, sizeof(id_s), "%ld", id);
	fleet_log(LOG_NOTICE, "binding-author-forgotten",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", c ? c->name : NULL},
				   {"FLEET_INVENTORY_ID", id_s}, {"FLEET_REASON", why}),
		  "pass: forgot the binding author record of inventory device %ld: %s", id,
		  sentence);
	tally(r, "forgotten", &r->forgotten);
}

/* The inventory's answer was not one (B6): records are left as they are.
 * NOMEM stops the pass's reads as UNAVAILABLE does, said as what it is. */
static void unread(struct run *r, fleet_err ir, const struct fleet_errctx *ec)
{
	char err[sizeof(ec->detail) + 80];
	if (ir == FLEET_INV_NOT_FOUND) {
		/* deleted since the listing: the next listing says so */
		tally(r, "changed-while-read", &r->raced);
		return;
	}
	if (!r->first_err[0])
		snprintf(r->first_err, sizeof(r->first_err), "%s: %s", fleet_err_str(ir),
			 fleet_errctx_text(ec, err, sizeof(err)));
	/* A malformed change log is this device's; anything else is the
	 * inventory's, and every further read would fail the same way. */
	if (ir != FLEET_INV_INVALID)
		r->stop = true;
	tally(r, "inventory-error", &r->inv_errors);
}

/* B3: the latest binding change c1 is binding_author's. The device is
 * read, then the change log again: only when the log still names c1 as
 * the latest binding change were the device's values, read between the
 * two, the ones c1 wrote (a binding change after c1 would be the latest). */
static void record(struct run *r, const struct pass_candidate *c,
		   const struct fleet_inv_binding_change *c1)
{
	struct fleet_inventory *inv = r->pa->d.inventory;
	struct fleet_inv_device d;
	struct fleet_inv_binding_change c2;
	struct fleet_errctx ec = {0};
	memset(&d, 0, sizeof(d));
	memset(&c2, 0, sizeof(c2));
	fleet_err ir = inv->ops->get(inv, c->id, &d, &ec);
	if (ir == FLEET_INV_OK)
		ir = inv->ops->binding_change(inv, c->id, &c2, &ec);
	if (ir != FLEET_INV_OK) {
		unread(r, ir, &ec);
		return;
	}
	if (!c2.found || c2.change_id != c1->change_id || strcmp(c2.user, c1->user) != 0 ||
	    d.id != c->id || strcmp(d.status, "planned") != 0 || !d.approved_ek_hash[0] ||
	    !d.serial[0]) {
		tally(r, "changed-while-read", &r->raced);
		return;
	}
	struct fleet_store_binding_author rec;
	memset(&rec, 0, sizeof(rec));
	rec.device_id = c->id;
	memcpy(rec.serial, d.serial, sizeof(rec.serial));
	memcpy(rec.approved_ek_hash, d.approved_ek_hash, sizeof(rec.approved_ek_hash));
	memcpy(rec.approved_ek_hash_ecc, d.approved_ek_hash_ecc, sizeof(rec.approved_ek_hash_ecc));
	memcpy(rec.user, c1->user, sizeof(rec.user));
	rec.change_id = c1->change_id;
	rec.changed_at = c1->when;
	rec.recorded_at = r->now;
	memset(&ec, 0, sizeof(ec));
	fleet_err se = r->pa->d.record_author(r->pa->d.author_ctx, &rec, &ec);
	if (se != FLEET_STORE_OK) {
		write_failed(r, c, c->id, "write", se, &ec);
		return;
	}
	char id_s[24], ch_s[24], user[FLEET_LOG_CLAIMED_BUF];
	snprintf(id_s, sizeof(id_s), "%ld", c->id);
	snprintf(ch_s, sizeof(ch_s), "%ld", c1->change_id);
	fleet_log_claimed(c1->user, user, sizeof(user));
	fleet_log(LOG_NOTICE, "binding-author-recorded",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", d.name}, {"FLEET_INVENTORY_ID", id_s},
				   {"FLEET_CHANGE_ID", ch_s}, {"FLEET_USER", user}),
		  "pass: recorded that change %ld by %s set the binding of %s; admission may "
		  "rely on it once the change log is purged, while the values stay the same",
		  c1->change_id, user, d.name);
	tally(r, "recorded", &r->recorded);
}

/* B4: nothing in the log proves the current binding's author: a record
 * the device has is forgotten with why. */
static void unproven(struct run *r, const struct pass_candidate *c,
		     const struct fleet_store_binding_author *rec, const char *why,
		     const char *sentence)
{
	if (rec)
		forget(r, c, c->id, why, sentence);
	else
		tally(r, "unproven", &r->unproven);
}

/* B3, B4 for one candidate; rec is its record (NULL: none), proven when
 * the record matches the candidate's current values. */
static void check(struct run *r, const struct pass_candidate *c,
		  const struct fleet_store_binding_author *rec, bool proven)
{
	struct fleet_inventory *inv = r->pa->d.inventory;
	struct fleet_inv_binding_change c1;
	struct fleet_errctx ec = {0};
	memset(&c1, 0, sizeof(c1));
	r->checked++;
	fleet_err ir = inv->ops->binding_change(inv, c->id, &c1, &ec);
	if (ir != FLEET_INV_OK) {
		unread(r, ir, &ec);
		return;
	}
	if (!c1.found && proven) {
		/* purged, as expected: the record is what stands for it */
		tally(r, "confirmed", &r->confirmed);
		return;
	}
	if (!c1.found) {
		unproven(r, c, rec, "binding-changed",
			 "the binding has other values than recorded, and the change log holds no "
			 "change that set them");
		return;
	}
	if (strcmp(c1.user, r->pa->d.config->binding_author) != 0) {
		unproven(r, c, rec, "changed-by-other",
			 "the latest binding change is by someone other than the binding author");
		return;
	}
	if (proven && rec->change_id == c1.change_id) {
		tally(r, "confirmed", &r->confirmed);
		return;
	}
	record(r, c, &c1);
}

/* All records, by device id (the store pages them). */
static fleet_err load_records(struct pass_authors *pa, struct fleet_store_binding_author **out,
			      size_t *n, struct fleet_errctx *ec)
{
	struct fleet_store_binding_author *all = NULL, *page;
	size_t count = 0, got;
	int64_t after = 0;
	*out = NULL;
	*n = 0;
	for (;;) {
		fleet_err se = fleet_store_binding_authors_after(
			pa->d.store, after, FLEET_STORE_LIST_MAX, &page, &got);
		if (se != FLEET_STORE_OK) {
			free(all);
			return fleet_store_errctx(pa->d.store, se, ec);
		}
		if (!got)
			break;
		void *grown = count + got <= FLEET_STORE_MAX_BINDING_AUTHORS
				      ? realloc(all, (count + got) * sizeof(*all))
				      : NULL;
		if (!grown) {
			free(page);
			free(all);
			return count + got > FLEET_STORE_MAX_BINDING_AUTHORS
				       ? fleet_errctx_msg(ec, FLEET_STORE_E_NOMEM,
							  "more than %d binding author records",
							  FLEET_STORE_MAX_BINDING_AUTHORS)
				       : fleet_errctx_msg(ec, FLEET_STORE_E_NOMEM,
							  "out of memory holding the records");
		}
		all = grown;
		memcpy(all + count, page, got * sizeof(*all));
		count += got;
		after = page[got - 1].device_id;
		free(page);
		if (got < FLEET_STORE_LIST_MAX)
			break;
	}
	*out = all;
	*n = count;
	return FLEET_STORE_OK;
}

static int rec_by_id(const void *key, const void *elem)
{
	int64_t a = *(const int64_t *)key;
	int64_t b = ((const struct fleet_store_binding_author *)elem)->device_id;
	return (a > b) - (a < b);
}

/* The record of id among recs (by id), or NULL. */
static const struct fleet_store_binding_author *
find_rec(const struct fleet_store_binding_author *recs, size_t n, long id)
{
	int64_t key = id;
	return n ? bsearch(&key, recs, n, sizeof(*recs), rec_by_id) : NULL;
}

/* B2: up to budget of the candidates idx[0..n) (in id order), from the
 * first past *cursor, wrapping; *cursor becomes the last one taken. */
static size_t take_turns(struct run *r, const struct pass_listing *l, const size_t *idx,
			 size_t n, long *cursor, size_t budget,
			 const struct fleet_store_binding_author *recs, size_t n_recs, bool proven)
{
	size_t start = 0, taken = 0;
	while (start < n && l->cand[idx[start]].id <= *cursor)
		start++;
	for (size_t k = 0; k < n && taken < budget && !r->stop; k++, taken++) {
		const struct pass_candidate *c = &l->cand[idx[(start + k) % n]];
		if (r->pa->over && r->pa->over(r->pa->over_ctx)) {
			r->over = true; /* the rest wait their turn at the next pass */
			break;
		}
		check(r, c, find_rec(recs, n_recs, c->id), proven);
		if (!r->stop) /* a device the inventory did not answer for is first again */
			*cursor = c->id;
	}
	return taken;
}

/* B5: records of devices that are no longer candidates. */
static void prune(struct run *r, const struct pass_listing *l,
		  const struct fleet_store_binding_author *recs, size_t n_recs)
{
	size_t forgets = 0, c = 0;
	/* A malformed device without an id might be any absent one. */
	if (l->bad_unnamed)
		return;
	/* Both in id order: one walk. */
	for (size_t i = 0; i < n_recs && forgets < FLEET_PASS_AUTHOR_FORGETS; i++) {
		long id = (long)recs[i].device_id;
		while (c < l->n_cand && l->cand[c].id < id)
			c++;
		if ((c < l->n_cand && l->cand[c].id == id) ||
		    (l->n_bad && bsearch(&id, l->bad_ids, l->n_bad, sizeof(*l->bad_ids), long_cmp)))
			continue;
		forgets++;
		forget(r, NULL, id, "not-a-candidate",
		       "the device is no longer planned with a binding, or no longer in the "
		       "inventory");
	}
}

void pass_authors_run(struct pass_authors *pa, const struct pass_listing *l, time_t now)
{
	if (!pa->d.record_author || !pa->d.forget_author || !l->listed)
		return;
	struct run r = {.pa = pa, .now = now};
	struct fleet_store_binding_author *recs = NULL;
	size_t n_recs = 0;
	size_t *unproven = NULL, *proven = NULL, n_unproven = 0, n_proven = 0;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	fleet_err se = FLEET_STORE_OK;
	if (l->incomplete)
		se = fleet_errctx_msg(&ec, FLEET_STORE_E_NOMEM,
				      "out of memory copying the inventory's listing");
	else if ((se = load_records(pa, &recs, &n_recs, &ec)) == FLEET_STORE_OK && l->n_cand &&
		 (!(unproven = calloc(l->n_cand, sizeof(*unproven))) ||
		  !(proven = calloc(l->n_cand, sizeof(*proven)))))
		se = fleet_errctx_msg(&ec, FLEET_STORE_E_NOMEM, "out of memory");
	if (se != FLEET_STORE_OK) {
		fleet_log(LOG_ERR, "binding-authors-unread",
			  FLEET_LOG_FIELDS({"FLEET_REASON", fleet_err_str(se)}),
			  "pass: binding author records could not be read (%s): %s; none is "
			  "written or forgotten this pass", fleet_err_str(se),
			  fleet_errctx_text(&ec, err, sizeof(err)));
		tally(&r, "store-error", &r.store_errors);
		goto out;
	}
	/* B1 */
	for (size_t i = 0; i < l->n_cand; i++) {
		const struct pass_candidate *c = &l->cand[i];
		const struct fleet_store_binding_author *rec = find_rec(recs, n_recs, c->id);
		if (fleet_store_binding_author_matches(rec, c->id, c->serial, c->ek, c->ek_ecc,
						       pa->d.config->binding_author))
			proven[n_proven++] = i;
		else
			unproven[n_unproven++] = i;
	}
	/* B2: the unproven first (they are what admission lacks), then a
	 * quarter as many proven ones, each read again in turn (B4). */
	size_t taken = take_turns(&r, l, unproven, n_unproven, &pa->cursor_unproven, pa->reads,
				  recs, n_recs, false);
	take_turns(&r, l, proven, n_proven, &pa->cursor_proven, pa->reads / 4 ? pa->reads / 4 : 1,
		   recs, n_recs, true);
	if (pa->waiting)
		fleet_metric_set(pa->waiting, (int64_t)(n_unproven - taken));
	/* B5 */
	prune(&r, l, recs, n_recs);
	if (r.checked || r.forgotten || n_unproven > taken)
		fleet_log(r.inv_errors ? LOG_WARNING : LOG_INFO, "binding-authors-pass",
			  FLEET_LOG_FIELDS({"FLEET_DETAIL", r.first_err[0] ? r.first_err : NULL}),
			  "pass: binding authors: %zu planned devices read (%zu recorded, %zu "
			  "still proven, %zu without a provable author, %zu changed while read, "
			  "%zu unreadable), %zu records forgotten, %zu write failures; %zu "
			  "unproven left for a later pass%s",
			  r.checked, r.recorded, r.confirmed, r.unproven, r.raced, r.inv_errors,
			  r.forgotten, r.store_errors, n_unproven - taken,
			  r.stop   ? " (the inventory stopped answering: records left as they are)"
			  : r.over ? " (the pass's deadline: the rest at the next pass)"
				   : "");
out:
	free(unproven);
	free(proven);
	free(recs);
}
