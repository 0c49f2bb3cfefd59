/*
 * spire_nodes.h: the SPIRE eligibility file, state_dir/spire-nodes.json
 * (spec 004, "Update SPIRE eligibility"; docs/spire-nodes.md is the format
 * and every decision below).
 *
 * Each pass builds the document from the inventory and fleetd's own store,
 * then writes it atomically, and only when its content changed. fleetd never
 * calls SPIRE: a separate root program (spire-server-fleet-entries) reads the
 * file.
 *
 * Building joins every device the store holds (the devices fleetd admitted)
 * with the inventory's device of the same serial:
 *
 *   eligible  the inventory says active, the inventory name is the store's,
 *             the store has it neither quarantined nor retired, and its latest
 *             verdict is a pass. Its current LDevID certificates (not revoked,
 *             notAfter not passed) are listed.
 *   revoked   the inventory says decommissioning or offline, or has no device
 *             with its serial; its LDevID certificates whose notAfter has not
 *             passed are listed (revoked ones included: those are the ones to
 *             ban), and the entry is dropped once all have expired.
 *
 * A device the format cannot carry (docs/spire-nodes.md, "Rules of the
 * format") is in neither list, so the applier never has a reason to refuse
 * the whole file. Everything else is in neither list too, with a reason in
 * doc->excluded for the journal, except the inventory's active devices that
 * fleetd never admitted: those are in doc->not_admitted, to be journaled
 * once each (fleet_spire_not_admitted_journal), not on every pass. The inventory's devices are judged one by
 * one: a malformed device is in neither list and in doc->malformed, and the
 * rest of the fleet is built as usual. An inventory that does not answer (or
 * whose listing is unusable as a whole) builds nothing, so the previous file
 * stays in place.
 */
#ifndef FLEETD_SPIRE_NODES_H
#define FLEETD_SPIRE_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"
#include "lib/spire_nodes_format.h"

#define FLEET_SPIRE_NODES_FILE "spire-nodes.json"
/* The highest serial ever written, kept beside the file so the serial only
 * grows even when spire-nodes.json is deleted. */
#define FLEET_SPIRE_SERIAL_FILE "spire-nodes.serial"
/* The format's version, limits, node struct, rules, encoder and decoder are
 * lib/spire_nodes_format.h, shared with the applier. */

/* The handoff's own failures, in the one error space (lib/fleet_err.h):
 * layer FLEET_LAYER_SPIRE. A failure of the inventory or the store is
 * returned as that layer's value, unchanged. */
#define FLEET_SPIRE_ERR(code) FLEET_ERR(FLEET_LAYER_SPIRE, FLEET_CODE_##code)
enum {
	FLEET_SPIRE_OK = FLEET_OK,
	FLEET_SPIRE_E_INVALID = FLEET_SPIRE_ERR(INVALID_ARG), /* a caller's value was refused (trust domain, dir) */
	FLEET_SPIRE_E_UNSAFE = FLEET_SPIRE_ERR(UNSAFE),       /* the directory is open to others */
	FLEET_SPIRE_E_BUSY = FLEET_SPIRE_ERR(BUSY),           /* another writer holds the directory's lock */
	FLEET_SPIRE_E_STATE = FLEET_SPIRE_ERR(STATE),         /* the serial file is damaged, or the serial is spent */
	FLEET_SPIRE_E_IO = FLEET_SPIRE_ERR(IO),               /* the file system failed */
	FLEET_SPIRE_E_NOMEM = FLEET_SPIRE_ERR(NOMEM),
};

/* Why a device is in neither list; for the journal, not the file. */
struct fleet_spire_excluded {
	char name[FLEET_INV_STR]; /* sanitised, lib/sanitize.h */
	const char *reason;       /* a constant below */
	char status[32];          /* the inventory's status, same treatment; "" if none */
};

#define FLEET_SPIRE_X_NOT_ACTIVE "not-active"           /* planned, staged, failed, ... */
#define FLEET_SPIRE_X_QUARANTINED "quarantined"         /* the store's flag */
#define FLEET_SPIRE_X_RETIRED "retired"                 /* the store's state */
#define FLEET_SPIRE_X_NO_VERDICT "no-verdict"
#define FLEET_SPIRE_X_VERDICT_FAILED "verdict-failed"   /* the latest verdict failed */
#define FLEET_SPIRE_X_NOT_ADMITTED "not-admitted"       /* active, unknown to the store:
							   doc->not_admitted, not excluded */
#define FLEET_SPIRE_X_NAME_MISMATCH "name-mismatch"     /* serial's device has another name */
#define FLEET_SPIRE_X_AMBIGUOUS "inventory-ambiguous"   /* serial on several devices */
/* What the format cannot carry (docs/spire-nodes.md, "Rules of the format"):
 * a file the applier would refuse whole must never be written. */
#define FLEET_SPIRE_X_NAME_UNUSABLE "name-unusable"     /* not a SPIFFE-safe name */
#define FLEET_SPIRE_X_NAME_ECC "name-collides-ecc"      /* X-ecc beside X */
#define FLEET_SPIRE_X_NO_RSA_EK "no-rsa-ek"             /* ek_hash cannot be null */
#define FLEET_SPIRE_X_EK_SHARED "ek-shared"             /* two eligible devices, one EK */
#define FLEET_SPIRE_X_TOO_MANY_LDEVID "too-many-ldevid" /* eligible, over the cap */

/* An inventory device whose record is malformed (inventory.h,
 * struct fleet_inv_malformed). It is in neither list: never eligible (fail
 * closed), and not revoked for being absent either, since it is not absent.
 * device is the store's name when fleetd admitted it (matched by the
 * inventory id the store recorded, else by serial when that could be read). */
struct fleet_spire_malformed {
	long id;
	char reason[64];
	char device[FLEET_STORE_NAME_MAX + 1]; /* "": not a device fleetd admitted */
};

/* A device active in the inventory that fleetd never admitted (the store
 * holds no device with its serial). It is in neither list, like an excluded
 * device, but kept apart: most of a NetBox is such devices (switches, PDUs,
 * machines not yet booted), and journaling each of them on every pass would
 * bury the journal (6,234 lines a pass at 10,000 devices). */
struct fleet_spire_not_admitted {
	long id;                  /* the inventory's device id */
	char name[FLEET_INV_STR]; /* sanitised, lib/sanitize.h */
};

/* A device fleetd admitted whose inventory ek_hash / ek_hash_ecc differ from
 * what the store proved: the pass writes the store's values back (fleetd
 * alone writes those two fields; they authorize nothing). */
struct fleet_spire_ek_stale {
	long inventory_id;
	char name[FLEET_STORE_NAME_MAX + 1];
	char ek_hash[65];     /* the store's; "" clears */
	char ek_hash_ecc[65]; /* the store's; "" clears */
};

/* What a build found. The first five fields are the file's content (the
 * writer adds version, serial and generated_at: struct fleet_spire_nodes);
 * the rest is for the pass. */
struct fleet_spire_doc {
	char trust_domain[FLEET_SPIRE_TRUST_DOMAIN_MAX + 1];
	struct fleet_spire_node *eligible; /* by name */
	size_t n_eligible;
	struct fleet_spire_node *revoked;  /* by name */
	size_t n_revoked;
	struct fleet_spire_excluded *excluded;
	size_t n_excluded;
	/* Not part of the file: for the pass to journal and act on. */
	struct fleet_spire_malformed *malformed;
	size_t n_malformed;
	struct fleet_spire_ek_stale *ek_stale;
	size_t n_ek_stale;
	struct fleet_spire_not_admitted *not_admitted; /* by id */
	size_t n_not_admitted;
};

/*
 * The journal of doc->not_admitted across passes: each device once, when it
 * first shows up active and never admitted (and again if it stops being so
 * and comes back), one line per pass with the count while there are any, and
 * the gauge fleetd_inventory_not_admitted_devices (metrics may be NULL: not
 * counted). The pass keeps one for its life; not thread-safe.
 */
struct fleet_spire_not_admitted_log;
fleet_err fleet_spire_not_admitted_log_new(struct fleet_metrics *metrics,
					   struct fleet_spire_not_admitted_log **out);
/* Journal what doc says is new since the last call, and the count. */
void fleet_spire_not_admitted_journal(struct fleet_spire_not_admitted_log *l,
				      const struct fleet_spire_doc *doc);
void fleet_spire_not_admitted_log_free(struct fleet_spire_not_admitted_log *l);

/* fleet_spire_name_ok, fleet_spire_trust_domain_ok: lib/spire_nodes_format.h. */

/* Build the document as of now. On any error *doc is left empty and ec
 * (lib/fleet_err.h; may be NULL) says why: the inventory's or the store's
 * failure is returned as theirs, with their context. Free with
 * fleet_spire_doc_free. */
fleet_err fleet_spire_nodes_build(struct fleet_inventory *inv, struct fleet_store *st,
				  const char *trust_domain, time_t now,
				  struct fleet_spire_doc *doc, struct fleet_errctx *ec);
void fleet_spire_doc_free(struct fleet_spire_doc *doc);

/*
 * Write dir/spire-nodes.json, mode 0644, when its content (everything but
 * serial and generated_at) differs from the file there; *changed says which.
 * The write is atomic: a fixed temp file in dir, written, fsync'ed, renamed
 * over the file, then the directory fsync'ed; a reader sees the old file or
 * the new one, never part of one, even if the process is killed. The serial
 * is one more than the highest of the file's and the serial file's, and the
 * serial file is written (the same way) before the file. Writers are
 * serialised by a lock on the directory (BUSY when another holds it). A
 * document the format refuses (fleet_spire_nodes_check: any rule, the
 * limits and the order by name included, so nothing the applier would
 * refuse) is refused here (INVALID) and nothing is written. dir
 * must be owned by this user or root and not writable by group or others.
 * serial (may be NULL) gets the file's serial, old or new.
 */
fleet_err fleet_spire_nodes_write(const char *dir, const struct fleet_spire_doc *doc,
				  time_t now, bool *changed, int64_t *serial,
				  struct fleet_errctx *ec);

/* How many times, in this process, a writer decoded a previous file whole
 * (fleet_spire_nodes_write decodes it only when its bytes do not tell:
 * spire_nodes_file.c compare_prev). For the tests. */
unsigned long fleet_spire_nodes_prev_decodes(void);

/* One pass: build into *doc (for the caller to journal doc->excluded and
 * doc->not_admitted, and free), then write. When building fails nothing is written and the
 * previous file stays as it was. */
fleet_err fleet_spire_nodes_pass(struct fleet_inventory *inv, struct fleet_store *st,
				 const char *trust_domain, const char *dir, time_t now,
				 struct fleet_spire_doc *doc, bool *changed, int64_t *serial,
				 struct fleet_errctx *ec);

#endif
