/*
 * inventory.h: where fleetd learns what a machine is meant to be. Two
 * implementations: NetBox v4 (inventory/netbox.c) and the nodes file
 * (inventory/nodes_file.c, the same YAML the Terraform module reads).
 *
 * Every call distinguishes "the inventory said no" (NOT_FOUND, AMBIGUOUS)
 * from "the inventory could not answer" (UNAVAILABLE, NOMEM): a NetBox
 * error or timeout during a pass, or fleetd out of memory reading the
 * answer, must write no verdict and quarantine nothing, so a caller must
 * never read UNAVAILABLE or NOMEM as an answer. Both fail closed the same
 * way; NOMEM is said as what it is, not as NetBox's fault.
 */
#ifndef FLEET_INVENTORY_H
#define FLEET_INVENTORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/fleet_err.h"

/* What an inventory call says, in the one error space (lib/fleet_err.h):
 * layer FLEET_LAYER_INVENTORY. NOT_FOUND and AMBIGUOUS are answers about
 * the inventory's contents; UNAVAILABLE and NOMEM say it could not answer;
 * INVALID that it answered with something malformed. */
#define FLEET_INV_ERR(code) FLEET_ERR(FLEET_LAYER_INVENTORY, FLEET_CODE_##code)
enum {
	FLEET_INV_OK = FLEET_OK,
	FLEET_INV_NOT_FOUND = FLEET_INV_ERR(NOT_FOUND),     /* no device with that serial */
	FLEET_INV_AMBIGUOUS = FLEET_INV_ERR(AMBIGUOUS),     /* more than one: a refusal, never a guess */
	FLEET_INV_UNAVAILABLE = FLEET_INV_ERR(UNAVAILABLE), /* transport error, timeout, 5xx, auth failure */
	FLEET_INV_INVALID = FLEET_INV_ERR(MALFORMED),       /* the inventory answered with something malformed */
	FLEET_INV_NOMEM = FLEET_INV_ERR(NOMEM),             /* this process ran out of memory, not NetBox */
};

#define FLEET_INV_STR 128

/* One device, as the inventory declares it. Empty string = not set. */
struct fleet_inv_device {
	long id; /* NetBox's device id; the nodes file numbers its entries */
	char name[FLEET_INV_STR];
	char serial[FLEET_INV_STR];
	char status[32]; /* NetBox status value: planned, staged, active, failed,
			    offline, decommissioning, inventory, quarantined... */
	char primary_ip4[64];
	/* The custom fields terraform/netbox/folly declares. */
	char class_name[FLEET_INV_STR];
	char install_disk[FLEET_INV_STR];
	char install_disk_serial[FLEET_INV_STR];
	char bmc_type[FLEET_INV_STR];
	char tpm_version[32];
	int amt;                  /* -1 unset, 0 false, 1 true */
	int secure_boot_expected; /* -1 unset, 0 false, 1 true */
	char expected_port[FLEET_INV_STR];
	char desired_action[32];
	/* The binding (Terraform writes these). */
	char approved_ek_hash[65];
	char approved_ek_hash_ecc[65];
	/* What fleetd proved (fleetd alone writes these; they authorize nothing). */
	char ek_hash[65];
	char ek_hash_ecc[65];
};

/* Who last changed the binding fields (approved_ek_hash[_ecc]) and when. */
struct fleet_inv_binding_change {
	bool found; /* false: the binding was never set through a recorded change */
	char user[FLEET_INV_STR];
	time_t when;
	long change_id;
};

/* A device the inventory lists whose record cannot be read (a field of the
 * wrong type, over its cap, an EK hash that is not 64 lowercase hex digits,
 * a null or non-ASCII name). It is reported, never silently skipped: a
 * skipped device would look absent, and absent devices are revoked. */
struct fleet_inv_malformed {
	long id;                    /* 0: the record has no usable id */
	char serial[FLEET_INV_STR]; /* "" when it could not be read either */
	char reason[64];            /* stable, "<field>:<problem>", e.g. "name:null" */
};

/* What bounds one listing (the pass's deadline, fleetd's stop). Checked
 * before each request the listing makes, so it ends within one request's
 * own timeout: FLEET_INV_UNAVAILABLE, ec saying which ("cancelled",
 * "past its deadline"). Either field may be unset. */
struct fleet_inv_bound {
	const atomic_bool *cancel;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC, in ms; 0: none */
};

/* The bound's verdict now: NULL to go on, else why to stop. */
const char *fleet_inv_bound_stop(const struct fleet_inv_bound *b);

struct fleet_inventory;

/*
 * Every call says why it failed in ec (lib/fleet_err.h; may be NULL): a
 * sentence safe to log, and the errno of a system call where one failed.
 * The result is the inventory's answer (FLEET_INV_*); ec->err may hold the
 * cause beneath it (the nodes file refused by a rule: FLEET_E_UNSAFE).
 */
struct fleet_inventory_ops {
	fleet_err (*find_by_serial)(struct fleet_inventory *inv, const char *serial,
				    struct fleet_inv_device *out, struct fleet_errctx *ec);
	fleet_err (*get)(struct fleet_inventory *inv, long id, struct fleet_inv_device *out,
			 struct fleet_errctx *ec);
	fleet_err (*binding_change)(struct fleet_inventory *inv, long id,
				    struct fleet_inv_binding_change *out, struct fleet_errctx *ec);
	/* fleetd writes only ek_hash, ek_hash_ecc ("" clears), status, and
	 * clears desired_action once the run it asked for has started. */
	fleet_err (*write_ek_hashes)(struct fleet_inventory *inv, long id, const char *ek_hash,
				     const char *ek_hash_ecc, struct fleet_errctx *ec);
	fleet_err (*set_status)(struct fleet_inventory *inv, long id, const char *status,
				struct fleet_errctx *ec);
	/* desired_action set to nothing (NetBox: null). The nodes file is the
	 * operator's and fleetd never writes it: there the value reads as
	 * cleared until the file's own value changes or fleetd restarts. */
	fleet_err (*clear_desired_action)(struct fleet_inventory *inv, long id,
					  struct fleet_errctx *ec);
	/* Every device (pagination followed to the end), judged one by one:
	 * the well-formed ones in *out, the malformed ones in *bad (both
	 * malloc'd, either may be NULL when empty). Only an inventory that
	 * does not answer, or a listing that is unusable as a whole (not
	 * JSON, no results array, a foreign next link, over the caps), fails
	 * the list; then *out and *bad are NULL. */
	fleet_err (*list)(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			  struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec);
	/* list, bounded (may be NULL: list is one bounded read, as the
	 * nodes file's is). */
	fleet_err (*list_bounded)(struct fleet_inventory *inv, const struct fleet_inv_bound *bound,
				  struct fleet_inv_device **out, size_t *n,
				  struct fleet_inv_malformed **bad, size_t *n_bad,
				  struct fleet_errctx *ec);
	/* list_bounded, one device at a time, for a caller that keeps only
	 * part of each (the pass at 50,000 devices: docs/benchmark-pass.md):
	 * each well-formed device is handed to fn, valid only during the call;
	 * the malformed ones are in *bad as list gives them. fn's non-OK
	 * result ends the listing with that result. On any failure the
	 * devices already handed over are not a listing: the caller drops
	 * them. NULL: not offered (callers use list). */
	fleet_err (*list_stream)(struct fleet_inventory *inv, const struct fleet_inv_bound *bound,
				 fleet_err (*fn)(void *ctx, const struct fleet_inv_device *d),
				 void *ctx, struct fleet_inv_malformed **bad, size_t *n_bad,
				 struct fleet_errctx *ec);
	void (*close)(struct fleet_inventory *inv);
};

struct fleet_inventory {
	const struct fleet_inventory_ops *ops;
};

#endif
