/*
 * pass.h: the periodic reconcile pass of fleetd (spec: "Each pass ...").
 *
 * Today a pass: drops expired attestation sessions, and when
 * spire.trust_domain is configured writes spire-nodes.json
 * (fleetd/spire/spire_nodes.h) and writes the store's proven ek_hash /
 * ek_hash_ecc back to the inventory where it holds other values (a failed
 * write is journaled; the pass goes on). A pass never decides anything about
 * a machine from an inventory error: the SPIRE file then stays as it was,
 * and the failure is journaled and counted
 * (fleetd_pass_total{result="inventory-error"}). One malformed device is not
 * an inventory error: it is left out of both lists, journaled once per
 * (device id, reason) while it stays malformed, and counted
 * (fleetd_inventory_malformed_devices, fleetd_inventory_malformed_total).
 *
 * The store is read only (fleetd gives the pass its own read-only handle).
 *
 * Bounded: a pass runs on its own thread (pass_runner.h), never on the one
 * that pings systemd's watchdog, and it stops its remaining inventory work
 * once pass.deadline_seconds (at most the interval) have passed since it
 * began, or at once when *cancel is set (fleetd stopping). The listing is
 * one read; spire-nodes.json is written from a whole listing or not at all,
 * so an ended pass leaves the previous file or a complete new one, and the
 * ek_hash writes it did not reach wait for the next pass
 * (event=pass-deadline / pass-cancelled, with how many).
 */
#ifndef FLEET_PASS_H
#define FLEET_PASS_H

#include <stdatomic.h>
#include <time.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"

struct fleet_pass;

struct fleet_pass_deps {
	const struct fleet_config *config;
	struct fleet_inventory *inventory;
	struct fleet_store *store;
	struct fleet_metrics *metrics;      /* NULL: not counted */
	/* Drops expired attestation sessions (the daemon passes
	 * fleet_admission_reap); NULL: nothing to reap. */
	size_t (*reap_sessions)(void *ctx);
	void *reap_ctx;
	/* Set by another thread to end a pass early; NULL: never. */
	const atomic_bool *cancel;
};

fleet_err fleet_pass_new(const struct fleet_pass_deps *deps, struct fleet_pass **out);
void fleet_pass_free(struct fleet_pass *p);

/* Run one pass at time now. Returns the result's stable name ("ok",
 * "inventory-error", "store-error", "write-error", "cancelled"); never
 * fails hard. A pass past its deadline is still "ok" for what it wrote. */
const char *fleet_pass_run(struct fleet_pass *p, time_t now);

#endif
