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
 * (event=pass-deadline / pass-cancelled, with how many), as do the binding
 * author reads below.
 *
 * Binding authors (pass_authors.c; docs/admission.md, "Binding authors").
 * NetBox purges change-log entries after CHANGELOG_RETENTION (90 days by
 * default), and with them the proof admission needs that binding_author
 * wrote a planned device's binding (I7). When the record callbacks are
 * wired, each pass keeps fleetd's own copy of that proof while the log
 * still holds it, from the same one listing of the inventory:
 *   B1 Candidates: devices the listing has in status planned with
 *      approved_ek_hash set. One whose store record proves exactly its
 *      current values (fleet_store_binding_author_matches) is proven; the
 *      others are unproven.
 *   B2 Each pass reads the change log of at most `author_reads` unproven
 *      devices (FLEET_PASS_AUTHOR_READS by default) and a quarter as many
 *      proven ones, each set in turn by device id from where the last pass
 *      stopped, so every device is reached within ceil(n / reads) passes
 *      and 10,000 planned devices never cost 10,000 reads a pass. Those
 *      left are counted (fleetd_pass_binding_authors_waiting).
 *   B3 The latest binding change by binding_author: recorded only when the
 *      log, read again after the device was read, still names that same
 *      change as the latest; the values recorded are the device's as read
 *      between the two, so they are the ones that change wrote. A change
 *      between the reads records nothing ("changed-while-read"); the next
 *      pass sees what it is.
 *   B4 A latest binding change by anyone else: the device's record is
 *      forgotten (a proven device's too: changed and changed back is still
 *      a change by someone else while the log holds it). No change that set
 *      the binding: an unproven device's record (of other values) is
 *      forgotten, a proven device's is kept (that is what it is for).
 *   B5 A record of a device that is no longer a candidate (not planned, no
 *      binding, gone from a whole listing) is forgotten, at most
 *      FLEET_PASS_AUTHOR_FORGETS a pass; a malformed device's record is
 *      kept (it is not absent), and none is forgotten as absent while the
 *      listing holds a malformed device without an id.
 *   B6 An inventory that does not answer ends the pass's author work and
 *      leaves every record as it is; a malformed change log for one device
 *      leaves its record as it is. Each outcome is counted
 *      (fleetd_pass_binding_authors_total{result}); each record written or
 *      forgotten is journaled, the rest in one line a pass.
 */
#ifndef FLEET_PASS_H
#define FLEET_PASS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
	/* Binding author records (B1..B6): the pass's handle is read-only, so
	 * it writes them through these (the daemon passes
	 * fleet_admission_record_binding_author and
	 * fleet_admission_forget_binding_author). NULL: the pass keeps no
	 * records. ec gets the store's context on failure (fleet_store_errctx). */
	fleet_err (*record_author)(void *ctx, const struct fleet_store_binding_author *r,
				   struct fleet_errctx *ec);
	fleet_err (*forget_author)(void *ctx, int64_t device_id, bool *forgot,
				   struct fleet_errctx *ec);
	void *author_ctx;
	/* The installs in flight (fleetd/install/install.h W1-W3, A1-A4),
	 * reconciled after spire-nodes.json; NULL: none. */
	void (*reconcile_installs)(void *ctx, time_t now);
	void *installs_ctx;
	/* Unproven devices whose change log one pass reads (B2); 0:
	 * FLEET_PASS_AUTHOR_READS. */
	unsigned author_reads;
};

#define FLEET_PASS_AUTHOR_READS 32    /* each costs up to three inventory requests */
#define FLEET_PASS_AUTHOR_FORGETS 256 /* records of former candidates forgotten a pass */

/*
 * The allocator as the pass needs it, for the whole process: main() calls
 * it once, before any thread starts (fleetd/main.c; bench_pass does the
 * same, so that it measures what the daemon runs). glibc raises its mmap
 * threshold to the largest block freed (up to 32 MiB): after one pass every
 * NetBox page, the file's encoding and the listings' arrays came from the
 * heap, where what is freed stays resident between live blocks, and every
 * later pass peaked 15 MiB higher at 50,000 devices (66 MiB against 51,
 * docs/benchmark-pass.md). Set once, the threshold stays at glibc's
 * default (128 KiB): large blocks stay mapped and go back to the kernel when
 * freed. Nothing on other C libraries.
 */
void fleet_pass_malloc_setup(void);

fleet_err fleet_pass_new(const struct fleet_pass_deps *deps, struct fleet_pass **out);
void fleet_pass_free(struct fleet_pass *p);

/* Run one pass at time now. Returns the result's stable name ("ok",
 * "inventory-error", "store-error", "write-error", "cancelled",
 * "out-of-memory"), the label it is counted under in fleetd_pass_total;
 * never fails hard. A pass past its deadline is still "ok" for what it
 * wrote. Out of memory is "out-of-memory" whatever the layer that ran out
 * (fleet_err_code NOMEM); the other failures are named by their layer. */
const char *fleet_pass_run(struct fleet_pass *p, time_t now);

#endif
