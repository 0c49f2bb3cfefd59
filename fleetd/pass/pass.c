#include "fleetd/pass/pass.h"

#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "fleetd/obs/journal.h"
#include "fleetd/pass/pass_authors.h"
#include "fleetd/spire/spire_nodes.h"

/* A malformed inventory device already journaled: (id, reason). */
struct seen {
	long id;
	char reason[64];
};

struct fleet_pass {
	struct fleet_pass_deps d;
	struct fleet_metric *runs; /* fleetd_pass_total{result} */
	struct fleet_metric *eligible;
	struct fleet_metric *revoked;
	struct fleet_metric *malformed;     /* gauge: in the last listing */
	struct fleet_metric *malformed_new; /* counter: each (id, reason) journaled */
	struct fleet_metric *ek_writes;     /* fleetd_pass_ek_hash_writes_total{result} */
	/* The malformed devices of the last listing, each journaled once. */
	struct seen *seen;
	size_t n_seen;
	struct pass_authors authors; /* B1..B6 (pass_authors.c) */
	struct fleet_metric *seconds; /* gauge: the last pass's duration */
	uint64_t t0;                  /* this pass's start, monotonic ms */
	/* The inventory's active devices fleetd never admitted, likewise. */
	struct fleet_spire_not_admitted_log *not_admitted;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool cancelled(const struct fleet_pass *p)
{
	return p->d.cancel && atomic_load(p->d.cancel);
}

/* The deadline: pass.deadline_seconds, never past the next pass's start. */
static uint64_t deadline_ms(const struct fleet_pass *p)
{
	uint32_t s = p->d.config->pass_deadline_seconds;
	if (!s || s > p->d.config->pass_interval_seconds)
		s = p->d.config->pass_interval_seconds;
	return p->t0 + (uint64_t)s * 1000u;
}

static bool past_deadline(const struct fleet_pass *p)
{
	return mono_ms() >= deadline_ms(p);
}

/* pass_authors' check between change-log reads. */
static bool over(const void *ctx)
{
	const struct fleet_pass *p = ctx;
	return cancelled(p) || past_deadline(p);
}

fleet_err fleet_pass_new(const struct fleet_pass_deps *deps, struct fleet_pass **out)
{
	struct fleet_pass *p = calloc(1, sizeof(*p));
	if (!p)
		return FLEET_E_NOMEM;
	p->d = *deps;
	if (deps->metrics) {
		static const char *const results[] = {
			"ok",        "inventory-error", "store-error", "write-error",
			"cancelled", "out-of-memory",   "other-replica", NULL};
		fleet_err e = fleet_metrics_register(deps->metrics, FLEET_METRIC_COUNTER,
						     "fleetd_pass_total", "Reconcile passes, by result.",
						     "result", results, &p->runs, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
						   "fleetd_spire_eligible_nodes",
						   "Devices eligible in the last spire-nodes.json.",
						   NULL, NULL, &p->eligible, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
						   "fleetd_spire_revoked_nodes",
						   "Devices revoked in the last spire-nodes.json.", NULL,
						   NULL, &p->revoked, NULL);
		static const char *const writes[] = {"ok", "failed", NULL};
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
						   "fleetd_inventory_malformed_devices",
						   "Inventory devices malformed in the last listing "
						   "(in neither SPIRE list).",
						   NULL, NULL, &p->malformed, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_COUNTER,
						   "fleetd_inventory_malformed_total",
						   "Malformed inventory devices journaled, once per "
						   "device and reason.",
						   NULL, NULL, &p->malformed_new, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_GAUGE,
						   "fleetd_pass_duration_seconds",
						   "How long the last pass ran.", NULL, NULL,
						   &p->seconds, NULL);
		if (e == FLEET_OK)
			e = fleet_metrics_register(deps->metrics, FLEET_METRIC_COUNTER,
						   "fleetd_pass_ek_hash_writes_total",
						   "ek_hash/ek_hash_ecc written back to the inventory "
						   "by the pass, by result.",
						   "result", writes, &p->ek_writes, NULL);
		if (e != FLEET_OK) {
			free(p);
			return e;
		}
	}
	fleet_err e = pass_authors_init(&p->authors, deps);
	p->authors.over = over;
	p->authors.over_ctx = p;
	if (e == FLEET_OK)
		e = fleet_spire_not_admitted_log_new(deps->metrics, &p->not_admitted);
	if (e != FLEET_OK) {
		free(p);
		return e;
	}
	*out = p;
	return FLEET_OK;
}

void fleet_pass_free(struct fleet_pass *p)
{
	if (!p)
		return;
	free(p->seen);
	fleet_spire_not_admitted_log_free(p->not_admitted);
	free(p);
}

static const char *count(struct fleet_pass *p, const char *result)
{
	if (p->runs)
		fleet_metric_inc_label(p->runs, result);
	if (p->seconds)
		fleet_metric_set(p->seconds, (int64_t)((mono_ms() - p->t0) / 1000u));
	return result;
}

/* The label of a pass that failed with e (FLEET_OK: "ok"). fleetd's own
 * out of memory is said as such whatever the layer that ran out; any other
 * failure keeps the layer it began in (lib/fleet_err.h). */
static const char *spire_result(fleet_err e)
{
	if (e == FLEET_OK)
		return "ok";
	if (fleet_err_code(e) == FLEET_CODE_NOMEM)
		return "out-of-memory";
	switch (fleet_err_layer(e)) {
	case FLEET_LAYER_INVENTORY:
		return "inventory-error";
	case FLEET_LAYER_STORE:
		return "store-error";
	default:
		return "write-error";
	}
}

static bool was_seen(const struct seen *v, size_t n, const struct fleet_spire_malformed *m)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].id == m->id && strcmp(v[i].reason, m->reason) == 0)
			return true;
	return false;
}

/* Journal each malformed device the previous listing did not already have
 * with the same reason, then remember this listing's. A device that stays
 * malformed is journaled once; one that recovers and breaks again, again. */
static void journal_malformed(struct fleet_pass *p, const struct fleet_spire_doc *doc)
{
	struct seen *now = doc->n_malformed ? calloc(doc->n_malformed, sizeof(*now)) : NULL;
	char id_s[24];
	for (size_t i = 0; i < doc->n_malformed; i++) {
		const struct fleet_spire_malformed *m = &doc->malformed[i];
		if (now) {
			now[i].id = m->id;
			memcpy(now[i].reason, m->reason, sizeof(now[i].reason));
		}
		if (was_seen(p->seen, p->n_seen, m))
			continue;
		snprintf(id_s, sizeof(id_s), "%ld", m->id);
		if (m->device[0])
			fleet_log(LOG_WARNING, "inventory-device-malformed",
				  FLEET_LOG_FIELDS({"FLEET_INVENTORY_ID", id_s},
						   {"FLEET_REASON", m->reason},
						   {"FLEET_DEVICE", m->device}),
				  "inventory device %ld is malformed (%s): %s, admitted by fleetd, "
				  "is excluded from SPIRE until it is fixed",
				  m->id, m->reason, m->device);
		else
			fleet_log(LOG_WARNING, "inventory-device-malformed",
				  FLEET_LOG_FIELDS({"FLEET_INVENTORY_ID", id_s},
						   {"FLEET_REASON", m->reason}),
				  "inventory device %ld is malformed (%s): left out of the pass "
				  "until it is fixed (not a device fleetd admitted)",
				  m->id, m->reason);
		if (p->malformed_new)
			fleet_metric_inc(p->malformed_new);
	}
	if (now || !doc->n_malformed) {
		free(p->seen);
		p->seen = now;
		p->n_seen = doc->n_malformed;
	} /* out of memory: keep the old set (at worst a repeat next pass) */
	if (p->malformed)
		fleet_metric_set(p->malformed, (int64_t)doc->n_malformed);
}

/* Write the store's proven EK hashes to the inventory where it holds other
 * values (the admission's own write may have failed). Each failure is
 * journaled; the next pass tries again, and the pass goes on. */
static void write_ek_hashes(struct fleet_pass *p, const struct fleet_spire_doc *doc)
{
	struct fleet_inventory *inv = p->d.inventory;
	if (!inv->ops->write_ek_hashes)
		return;
	for (size_t i = 0; i < doc->n_ek_stale; i++) {
		const struct fleet_spire_ek_stale *x = &doc->ek_stale[i];
		/* One write is one NetBox request: checked before each, so a
		 * slow NetBox and many stale devices cannot stretch a pass. */
		bool stop = cancelled(p);
		if (stop || past_deadline(p)) {
			char left[24];
			snprintf(left, sizeof(left), "%zu", doc->n_ek_stale - i);
			fleet_log(LOG_WARNING, stop ? "pass-cancelled" : "pass-deadline",
				  FLEET_LOG_FIELDS({"FLEET_REASON", stop ? "cancelled" : "deadline"},
						   {"FLEET_COUNT", left}),
				  "pass: %s; %zu ek_hash write%s left for the next pass",
				  stop ? "fleetd is stopping" : "past pass.deadline_seconds",
				  doc->n_ek_stale - i, doc->n_ek_stale - i == 1 ? "" : "s");
			return;
		}
		struct fleet_errctx ec = {0};
		char err[sizeof(ec.detail) + 80], id_s[24];
		snprintf(id_s, sizeof(id_s), "%ld", x->inventory_id);
		fleet_err r = inv->ops->write_ek_hashes(inv, x->inventory_id, x->ek_hash,
							x->ek_hash_ecc, &ec);
		if (r == FLEET_INV_OK) {
			fleet_log(LOG_NOTICE, "ek-hash-written",
				  FLEET_LOG_FIELDS({"FLEET_DEVICE", x->name},
						   {"FLEET_INVENTORY_ID", id_s}),
				  "pass: wrote the proven ek_hash/ek_hash_ecc of %s to the "
				  "inventory", x->name);
			if (p->ek_writes)
				fleet_metric_inc_label(p->ek_writes, "ok");
		} else {
			fleet_log(LOG_WARNING, "ek-hash-write-failed",
				  FLEET_LOG_FIELDS({"FLEET_DEVICE", x->name},
						   {"FLEET_INVENTORY_ID", id_s},
						   {"FLEET_REASON", fleet_err_str(r)}),
				  "pass: writing the ek_hash of %s to the inventory failed (%s): "
				  "%s; the next pass tries again",
				  x->name, fleet_err_str(r), fleet_errctx_text(&ec, err, sizeof(err)));
			if (p->ek_writes)
				fleet_metric_inc_label(p->ek_writes, "failed");
		}
	}
}

/* spire-nodes.json from the inventory listed through the pass's view. */
static const char *spire_pass(struct fleet_pass *p, struct fleet_inventory *inv, time_t now)
{
	const struct fleet_config *c = p->d.config;
	struct fleet_spire_doc doc;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80], serial_s[24];
	bool changed = false;
	int64_t serial = 0;
	memset(&doc, 0, sizeof(doc));
	fleet_err e = fleet_spire_nodes_build(inv, p->d.store, c->spire_trust_domain, now, &doc,
					      &ec);
	if (cancelled(p)) {
		/* fleetd is stopping: the previous file stands, the next start's
		 * pass writes a new one. */
		fleet_log(LOG_NOTICE, "pass-cancelled", FLEET_LOG_FIELDS({"FLEET_REASON", "cancelled"}),
			  "pass: fleetd is stopping; spire-nodes.json is left as it was");
		fleet_spire_doc_free(&doc);
		return "cancelled";
	}
	if (e == FLEET_SPIRE_OK) {
		/* What the listing said holds whether or not the file can be
		 * written now. */
		journal_malformed(p, &doc);
		fleet_spire_not_admitted_journal(p->not_admitted, &doc);
		write_ek_hashes(p, &doc);
		e = fleet_spire_nodes_write(c->state_dir, &doc, now, &changed, &serial, &ec);
	}
	const char *result = spire_result(e);
	if (e != FLEET_SPIRE_OK) {
		/* The previous file stands: a pass that could not see the
		 * inventory must not make anyone eligible or ineligible. */
		fleet_log(LOG_ERR, "pass-failed",
			  FLEET_LOG_FIELDS({"FLEET_REASON", fleet_err_str(e)}),
			  "pass: spire-nodes.json not written (%s): %s", fleet_err_str(e),
			  fleet_errctx_text(&ec, err, sizeof(err)));
		fleet_spire_doc_free(&doc);
		return result;
	}
	for (size_t i = 0; i < doc.n_excluded; i++)
		fleet_log(LOG_INFO, "spire-excluded",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", doc.excluded[i].name},
					   {"FLEET_REASON", doc.excluded[i].reason},
					   {"FLEET_STATUS", doc.excluded[i].status}),
			  "not eligible for SPIRE: %s", doc.excluded[i].reason);
	if (changed) {
		snprintf(serial_s, sizeof(serial_s), "%" PRId64, serial);
		fleet_log(LOG_NOTICE, "spire-nodes-written",
			  FLEET_LOG_FIELDS({"FLEET_SERIAL_NUMBER", serial_s}),
			  "spire-nodes.json serial %" PRId64 ": %zu eligible, %zu revoked", serial,
			  doc.n_eligible, doc.n_revoked);
	}
	if (p->eligible)
		fleet_metric_set(p->eligible, (int64_t)doc.n_eligible);
	if (p->revoked)
		fleet_metric_set(p->revoked, (int64_t)doc.n_revoked);
	fleet_spire_doc_free(&doc);
	return result;
}

const char *fleet_pass_run(struct fleet_pass *p, time_t now)
{
	p->t0 = mono_ms();
	if (p->d.reap_sessions)
		p->d.reap_sessions(p->d.reap_ctx);
	/* P1 (store.h): one replica at a time runs the pass; the others
	 * skip theirs while it holds the lock. The lock is the store's,
	 * released with the holder's connection or process, so a replica
	 * killed mid-pass leaves the next one its turn; each step of a pass
	 * is its own transaction or atomic file write, so what it leaves is
	 * a consistent state the next pass starts from. */
	bool held = false;
	if (p->d.store) {
		fleet_err le = fleet_store_pass_lock(p->d.store, &held);
		if (le != FLEET_STORE_OK) {
			fleet_log(LOG_ERR, "pass-failed", FLEET_LOG_FIELDS({"FLEET_REASON", "store"}),
				  "pass: the pass lock could not be taken: %s",
				  fleet_store_errmsg(p->d.store));
			return count(p, "store-error");
		}
		if (!held)
			return count(p, "other-replica");
	}
	const char *result = "ok";
	bool authors = p->d.record_author && p->d.forget_author;
	/* One listing a pass: the SPIRE build lists through the view, which
	 * keeps what the binding authors need (pass_authors.h). */
	struct pass_listing listing;
	pass_listing_init(&listing, p->d.inventory);
	listing.bound = (struct fleet_inv_bound){.cancel = p->d.cancel,
						 .deadline_ms = deadline_ms(p)};
	if (p->d.config->spire_trust_domain[0]) {
		result = spire_pass(p, &listing.inv, now);
	} else if (authors) {
		struct fleet_errctx ec = {0};
		char err[sizeof(ec.detail) + 80];
		fleet_err r = pass_listing_list(&listing, &ec);
		if (r != FLEET_INV_OK) {
			fleet_log(LOG_ERR, "pass-failed",
				  FLEET_LOG_FIELDS({"FLEET_REASON", "inventory"}),
				  "pass: the inventory could not be listed (%s): %s; binding author "
				  "records are left as they are",
				  fleet_err_str(r), fleet_errctx_text(&ec, err, sizeof(err)));
			result = fleet_err_code(r) == FLEET_CODE_NOMEM ? "out-of-memory"
								       : "inventory-error";
		}
	}
	/* After spire-nodes.json: its revocations never wait on change-log
	 * reads. */
	if (authors && strcmp(result, "cancelled") != 0)
		pass_authors_run(&p->authors, &listing, now);
	pass_listing_free(&listing);
	if (p->d.reconcile_installs && strcmp(result, "cancelled") != 0)
		p->d.reconcile_installs(p->d.installs_ctx, now);
	if (held)
		fleet_store_pass_unlock(p->d.store);
	return count(p, result);
}

void fleet_pass_malloc_setup(void)
{
#ifdef __GLIBC__
	/* Setting it at all turns the dynamic threshold off (mallopt(3)). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}
