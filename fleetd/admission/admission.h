/*
 * admission.h: fleetd's decisions on a HookOS machine, round by round.
 *
 * This is where the protocol's round functions (lib/attest_server.h), the
 * inventory (NetBox or the nodes file), fleetd's own store and the journal
 * meet. Each handler takes a decoded request and returns the HTTP status and
 * the JSON body to send; it never trusts anything the machine says until a
 * round function has proven it, and it writes a verdict only for
 * TPM-authenticated evidence.
 *
 * The rules, in the order they apply (spec 004, "Check the machine"; each
 * has a test in tests/e2e/test_admission.c):
 *
 * Intake
 *  I1  Malformed or oversized bodies are the HTTP layer's: 4xx, counted,
 *      not journaled. Claimed fields are sanitised (fleet_log_claimed)
 *      before any log line holds them.
 *  I2  An open (unexpired) session for the same serial: refused
 *      ("session-open"); the open session is untouched (trust rule 4).
 *      At most max_open_sessions sessions: 503, nothing recorded.
 *  I3  Inventory lookup by serial. UNAVAILABLE or INVALID: 503, no claim,
 *      no verdict, nothing quarantined. AMBIGUOUS: refused
 *      ("serial-ambiguous"), journaled. NOT_FOUND: a pending claim
 *      (fleet_store_claim_upsert, reason unknown-serial) and "pending".
 *  I4  The class's profile (config class -> profile); none: refused
 *      ("class-unknown"), journaled.
 *  I5  The intake's own proofs (fleet_attest_intake): EK chains, EK key
 *      match, AK and LDevID rules. A failure: refused with its reason,
 *      journaled, counted; no verdict (nothing is TPM-authenticated yet).
 *      These run first, before I2 and I3: they need nothing remote, so
 *      an intake that proves nothing costs no inventory request and never
 *      holds its serial's place in the session table, and a pending claim
 *      records only EK hashes whose certificates chain to the roots.
 *  I6  Required declarations: class, install_disk, install_disk_serial,
 *      bmc_type, tpm_version, amt, secure_boot_expected, expected_port and
 *      the primary address must all be set ("declaration-missing"); the
 *      network report's port must equal expected_port ("port-mismatch").
 *      fleetd never fills in a missing declaration.
 *  I7  Status planned (first admission):
 *      - the binding: approved_ek_hash must be set, and approved_ek_hash_ecc
 *        must be set exactly when the machine has an ECC EK; a missing
 *        binding is a pending claim (reason no-binding), no access;
 *      - every presented EK hash must equal its approved one; a different
 *        EK is refused ("ek-not-approved"), journaled, and the binding is
 *        left untouched;
 *      - the binding's latest change must come from binding_author
 *        ("binding-author"), else refused and journaled.
 *      Status past planned (staged, active, ...; re-attest or reprovision):
 *      - the EKs must match the hashes fleetd's store holds
 *        (fleet_store_device_check_eks); the inventory's approved or
 *        ek_hash fields never stand in ("ek-not-recorded" when the store
 *        has no such device, "ek-mismatch" when they differ);
 *      - an active device with no requested run (desired_action empty) is
 *        an unexpected HookOS boot: refused ("unexpected-boot"),
 *        journaled, counted (fleetd_unexpected_boot_total), and its store
 *        rows, certificates and identity are left untouched.
 *      Other statuses (failed, offline, decommissioning, inventory):
 *      refused ("status-<value>").
 *  I8  Challenge (fleet_attest_challenge); the session remembers the
 *      device id, name, status and the binding snapshot read here.
 *
 * Answer
 *  A1  Unknown or expired session id: refused, no verdict.
 *  A2  fleet_attest_answer: FLEET_E_VERIFY (not TPM-authenticated):
 *      refused, counted, journaled as an authentication failure, NO
 *      verdict, nothing quarantined, the session unchanged.
 *  A3  Authenticated and the profile refuses: a failed verdict (store +
 *      verdicts.jsonl, with reasons and EK hashes), journaled; "refused".
 *  A4  Authenticated and the profile passes: read the device and the
 *      binding change again. UNAVAILABLE: 503, no verdict, nothing
 *      changed (the machine retries). The binding (approved hashes and the
 *      change id) must equal the intake's snapshot, else refused
 *      ("binding-changed"), journaled, no certificates; so must the
 *      device's serial, name and status ("device-changed").
 *  A5  Issue both certificates (fleet_attest_issue), record them and the
 *      admission in the store (the store refuses to rebind a serial), write
 *      ek_hash/ek_hash_ecc to the inventory (fleetd writes only those two
 *      and status), a passing verdict; "admitted" with the certificates.
 *      An inventory write failure after issuing is journaled and retried by
 *      the next pass; the store is the authority, not NetBox.
 *
 * Confirm
 *  C1  fleet_attest_confirm (the LDevID's signature over the issued
 *      certificates); a failure: refused, session unchanged.
 *  C2  Read the binding again (as A4); unchanged: the device is admitted
 *      (store state admitted), "confirmed". The session closes.
 */
#ifndef FLEET_ADMISSION_H
#define FLEET_ADMISSION_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"
#include "fleetd/store/verdict_log.h"
#include "lib/attest_server.h"
#include "lib/buf.h"
#include "lib/ca.h"
#include "lib/x509_ek.h"

struct fleet_admission;

/* Everything the handlers use; owned by the caller (the daemon's main), who
 * keeps it alive while the admission object lives. */
struct fleet_admission_deps {
	const struct fleet_config *config;
	struct fleet_inventory *inventory;
	struct fleet_store *store;
	struct fleet_vlog *verdicts;
	struct fleet_metrics *metrics;
	const struct fleet_ek_roots *roots;
	const struct fleet_ca *ca;
	/* time source; NULL: time(NULL). */
	time_t (*now)(void *ctx);
	void *now_ctx;
};

fleet_err fleet_admission_new(const struct fleet_admission_deps *deps,
			      struct fleet_admission **out, char *err, size_t errlen);
void fleet_admission_free(struct fleet_admission *a);

/* The three rounds: body in, HTTP status and JSON reply out (appended to
 * reply). Thread-safe: the HTTP server may call them concurrently. For a
 * 4xx (a body that does not decode), *reject is the reason
 * fleetd_http_rejected_total counts it under (fleetd/http/server.h:
 * malformed-json, malformed-message, unsupported-version,
 * field-too-large); NULL otherwise. */
int fleet_admission_intake(struct fleet_admission *a, const uint8_t *body, size_t len,
			   struct fleet_buf *reply, const char **reject);
int fleet_admission_answer(struct fleet_admission *a, const uint8_t *body, size_t len,
			   struct fleet_buf *reply, const char **reject);
int fleet_admission_confirm(struct fleet_admission *a, const uint8_t *body, size_t len,
			    struct fleet_buf *reply, const char **reject);

/* Drop expired sessions (the pass calls it). Returns how many. */
size_t fleet_admission_reap(struct fleet_admission *a);

#endif
