/*
 * lookup.h: intake's device lookup, bounded (admission.h, I3).
 *
 * Every intake that passes its local checks costs an inventory request,
 * and an intake proves nothing: a forged flood would become a flood on
 * NetBox. Three bounds, none of which ever stands in for the re-reads the
 * spec requires (answer and confirm read the inventory themselves, uncached,
 * and compare with what intake decided by: the binding and its change, the
 * serial, name, status, class and requested run (adm_reread); so a stale
 * lookup can only cause a refusal the machine retries, never an admission):
 *
 *  - coalescing: concurrent lookups of one serial share one request;
 *  - a short cache (inventory.netbox.lookup_cache_ms, default 2 s; 0: off)
 *    of answers that were answers (a device, or no such serial; never a
 *    transport error), dropped early whenever a session of it ends;
 *  - a fleet-wide budget (a token bucket, lookups_per_second with a burst
 *    of twice that) over every request intake makes (the device, and the
 *    binding's change log): past it intake answers 503 and the machine
 *    retries.
 */
#ifndef FLEET_ADMISSION_LOOKUP_H
#define FLEET_ADMISSION_LOOKUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/inventory/inventory.h"

#define ADM_LOOKUP_ENTRIES 1024

struct adm_lookup_entry {
	char serial[FLEET_INV_STR];
	bool used, inflight;
	unsigned long gen; /* which lookup filled it: its waiters take its answer */
	struct timespec at; /* CLOCK_MONOTONIC of the answer */
	fleet_err r;
	struct fleet_inv_device dev;
};

struct adm_lookup {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fleet_inventory *inv;
	double tokens, rate, burst;
	double ttl_s; /* 0: nothing cached (in-flight lookups still shared) */
	struct timespec refilled;
	struct adm_lookup_entry *v; /* ADM_LOOKUP_ENTRIES */
	unsigned long requests;     /* inventory requests made (tests, metrics) */
	unsigned long gens;
};

int adm_lookup_init(struct adm_lookup *l, struct fleet_inventory *inv, unsigned per_second,
		    unsigned cache_ms);
void adm_lookup_destroy(struct adm_lookup *l);

/* find_by_serial, bounded as above. Returns the inventory's result; when
 * the budget says no, *over_budget is set, nothing is asked, and the
 * result is FLEET_INV_UNAVAILABLE. */
fleet_err adm_lookup_device(struct adm_lookup *l, const char *serial, struct fleet_inv_device *out,
			    bool *over_budget, struct fleet_errctx *ec);

/* One more intake request to the inventory (the binding's change log):
 * false when the budget says no. */
bool adm_lookup_budget(struct adm_lookup *l);

/* Forget what is cached for serial. */
void adm_lookup_forget(struct adm_lookup *l, const char *serial);

#endif
