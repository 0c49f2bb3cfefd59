/*
 * pass_authors.h: the pass's binding author records (pass.h, "Binding
 * authors"); what pass.c and pass_authors.c share, not part of the pass's
 * interface.
 *
 * The pass lists the inventory once: the listing is taken through a view
 * (struct pass_listing) that the SPIRE build lists through as it always
 * did, and that keeps a copy of what the binding authors need (the planned
 * devices with a binding, the malformed device ids).
 */
#ifndef FLEET_PASS_AUTHORS_H
#define FLEET_PASS_AUTHORS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/pass/pass.h"

/* A planned device with a binding, as the listing had it. */
struct pass_candidate {
	long id;
	char name[FLEET_INV_STR];
	char serial[FLEET_INV_STR];
	char ek[65], ek_ecc[65];
};

struct pass_listing {
	struct fleet_inventory inv; /* the view (first): hand &inv to whoever lists */
	struct fleet_inventory_ops ops; /* the view's: list kept, the rest forwarded */
	struct fleet_inventory *real;
	/* What bounds the listing (the pass's deadline, fleetd's stop): the
	 * view lists through the real inventory's list_bounded when it has one. */
	struct fleet_inv_bound bound;
	bool listed;                /* a whole listing was read */
	bool incomplete;            /* out of memory copying it: nothing is decided */
	bool bad_unnamed;           /* a malformed device without a usable id */
	struct pass_candidate *cand; /* by id */
	size_t n_cand;
	long *bad_ids;               /* malformed devices' ids, sorted */
	size_t n_bad;
};

/* A view over real that lists through it. */
void pass_listing_init(struct pass_listing *l, struct fleet_inventory *real);
/* List through the view and drop what the caller would have kept (the
 * pass without a SPIRE file to build). */
fleet_err pass_listing_list(struct pass_listing *l, struct fleet_errctx *ec);
void pass_listing_free(struct pass_listing *l);

/* The binding authors' state, kept from pass to pass. */
struct pass_authors {
	struct fleet_pass_deps d;
	unsigned reads; /* devices whose change log one pass reads */
	long cursor_unproven, cursor_proven; /* round-robin positions, by id */
	struct fleet_metric *results;        /* fleetd_pass_binding_authors_total{result} */
	struct fleet_metric *waiting;        /* fleetd_pass_binding_authors_waiting */
	/* The pass past its deadline or cancelled (pass.h): no more reads;
	 * NULL: never. Checked before each device's change-log read. */
	bool (*over)(const void *ctx);
	const void *over_ctx;
};

fleet_err pass_authors_init(struct pass_authors *pa, const struct fleet_pass_deps *deps);
/* One pass's binding author work over a whole listing (nothing when the
 * listing was not read whole, or the records are not wired). */
void pass_authors_run(struct pass_authors *pa, const struct pass_listing *l, time_t now);

#endif
