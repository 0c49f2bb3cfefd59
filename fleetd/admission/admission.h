/*
 * admission.h: fleetd's decisions on a HookOS machine, round by round.
 *
 * This is where the protocol's round functions (fleetd/attest/attest_server.h), the
 * inventory (NetBox or the nodes file), fleetd's own store and the journal
 * meet. Each handler takes a decoded request and returns the HTTP status and
 * the JSON body to send; it never trusts anything the machine says until a
 * round function has proven it, and it writes a verdict only for
 * TPM-authenticated evidence.
 *
 * The rules, in the order they apply (spec 004, "Check the machine"; each
 * has a test in tests/e2e/test_admission.c, and what an attack or a crash
 * does to the state they keep in tests/e2e/test_admission_state.c; the
 * mutants in tests/mutants/ check that the tests still guard them):
 *
 * Every request that proves nothing (an intake, an answer or confirm that
 * fails its proof) is counted (fleetd_unproven_total{reason} and the round
 * counters) and journaled only as the first of its kind in a window
 * (adm_log_limited: keys of stable reasons and inventory names, never a
 * claimed value); it writes nothing to the store and ends no session.
 *
 * Intake
 *  I1  Malformed or oversized bodies are the HTTP layer's: 4xx, counted,
 *      not journaled. Claimed fields are sanitised (fleet_log_claimed)
 *      before any log line holds them.
 *  I2  Sessions of the same serial are left as they are: this intake opens
 *      a parallel challenge (sessions.h), replacing only an unproven one of
 *      its own source address. At most ADM_SESSIONS_PER_SERIAL per serial
 *      and ADM_SESSIONS_PER_PEER unproven per source ("session-open" /
 *      "session-peer": 503, the machine retries), max_open_sessions in all
 *      (503). An unproven session ends sessions.answer_seconds after its
 *      intake.
 *  I3  Inventory lookup by serial, bounded (lookup.h: coalesced, cached a
 *      moment, a fleet-wide budget: 503 past it). UNAVAILABLE or INVALID:
 *      503, no claim, no verdict, nothing quarantined. AMBIGUOUS: refused
 *      ("serial-ambiguous"), journaled. NOT_FOUND: a proof-only challenge;
 *      the pending claim (reason unknown-serial) is written at the answer,
 *      once the TPM proved its EKs, never for an intake alone.
 *  I4  The class's profile (config class -> profile); none: refused
 *      ("class-unknown"), journaled.
 *  I5  The intake's own proofs (fleet_attest_intake): EK chains, EK key
 *      match, AK and LDevID rules. A failure: refused with its reason,
 *      journaled, counted; no verdict (nothing is TPM-authenticated yet).
 *      These run first, before I2 and I3: they need nothing remote, so
 *      an intake that proves nothing costs no inventory request and never
 *      holds its serial's place in the session table.
 *  I6  Required declarations: class, install_disk, install_disk_serial,
 *      bmc_type, tpm_version, amt, secure_boot_expected, expected_port and
 *      the primary address must all be set ("declaration-missing"); the
 *      network report's port must equal expected_port ("port-mismatch").
 *      fleetd never fills in a missing declaration.
 *  I7  Status planned (first admission):
 *      - the binding: approved_ek_hash must be set, and approved_ek_hash_ecc
 *        must be set exactly when the machine has an ECC EK; a missing
 *        binding is a proof-only challenge and, once proven, a pending
 *        claim (reason no-binding), no access;
 *      - every presented EK hash must equal its approved one; a different
 *        EK is refused ("ek-not-approved"), journaled, and the binding is
 *        left untouched;
 *      - the binding's latest change must come from binding_author
 *        ("binding-author"), else refused and journaled. A change the
 *        change log holds always decides, a later one by anyone else is
 *        refused; only when the log holds no change that set the binding
 *        (NetBox purged it after CHANGELOG_RETENTION) does fleetd's record
 *        of that change decide (fleet_store_binding_author_matches): the
 *        record the pass made while the log held it, for exactly this
 *        device id, serial, approved_ek_hash and approved_ek_hash_ecc, of a
 *        change by binding_author. A record of other values proves nothing
 *        (the binding changed since). The journal names the recorded change
 *        ("binding-author-from-record"); no record: refused
 *        ("binding-author"); the store unreadable: 503.
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
 *      device id, name, status and the binding snapshot read here. An
 *      intake past its round deadline (sessions.round_seconds, counted
 *      from its arrival; see R1) is challenged not: 503, no session.
 *
 * Every round
 *  R1  A round has its own deadline, sessions.round_seconds (20 s),
 *      shorter than the client's per-request timeout (tink-attest 30 s),
 *      checked after the round's last inventory read and before anything
 *      is issued, recorded or opened: past it the session is left exactly
 *      as it was and the reply is 503 ("late", event round-late), so
 *      fleetd never completes a round the machine may have given up on,
 *      and the machine's retry of the same request can still complete.
 *
 * Answer
 *  A1  Unknown, expired or superseded session id: refused, no verdict.
 *  A2  fleet_attest_answer: FLEET_E_VERIFY (not TPM-authenticated):
 *      refused, counted, journaled as an authentication failure, NO
 *      verdict, nothing quarantined, the session unchanged.
 *      Authenticated: this session is proven and every other session of
 *      the serial ends (the machine's latest proof wins; their provisional
 *      certificates are revoked). A proof-only session records the pending
 *      claim with the proven EK hashes and answers "pending".
 *  A3  Authenticated and the profile refuses: a failed verdict (store +
 *      verdicts.jsonl, with reasons and EK hashes), journaled; "refused".
 *  A4  Authenticated and the profile passes: read the device and the
 *      binding change again. UNAVAILABLE: 503, no verdict, nothing
 *      changed (the machine retries). The binding (approved hashes and the
 *      change id; for an author proven by fleetd's record, that record,
 *      still matching) must equal the intake's snapshot, else refused
 *      ("binding-changed"), journaled, no certificates; so must the
 *      device's serial, name and status ("device-changed"); and I6 holds
 *      again on this read: every declaration still set
 *      ("declaration-missing") and expected_port the one the report was
 *      held to ("port-mismatch"), since the owner can change either while
 *      the session runs.
 *      A round past its deadline (R1): 503, nothing issued.
 *  A5  Issue both certificates (fleet_attest_issue) PROVISIONALLY: they are
 *      recorded under the session (fleet_store_provisional_issue, one
 *      transaction) and belong to no device; the device is not admitted,
 *      its EKs are not recorded, no passing verdict is written, SPIRE lists
 *      neither. "admitted" with the certificates. A session that ends any
 *      other way than C2 (refused or unauthenticated confirm and its
 *      deadline, superseded, reaped, a restart) revokes them, and the
 *      journal names them.
 *
 * Confirm
 *  C1  fleet_attest_confirm (the LDevID's signature over the issued
 *      certificates); a failure: refused, session unchanged.
 *  C2  Read the binding again (as A4). Changed: the provisional
 *      certificates are revoked, nothing else was ever recorded; refused.
 *      Past the round's deadline (R1): 503, not admitted, the provisional
 *      certificates stay for the retried confirm.
 *      Unchanged: ONE transaction (fleet_store_admit) admits the device
 *      (row, never rebinding a serial), makes the certificates its own and
 *      writes the passing verdict; then verdicts.jsonl, then
 *      ek_hash/ek_hash_ecc to the inventory (fleetd writes only those two
 *      and status; a failure is journaled, the store is the authority);
 *      then, on that same fresh read, the installation is authorised or
 *      not (deps.provision: fleetd/install/install.h S1-S8), its code and
 *      proof in the answer when one started; "confirmed". The session
 *      closes.
 */
#ifndef FLEET_ADMISSION_H
#define FLEET_ADMISSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/inventory.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"
#include "fleetd/store/verdict_log.h"
#include "fleetd/attest/attest_server.h"
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
	/* After C2 admitted the machine: whether to install it now, and the
	 * code and proof in the reply when so (fleetd/install/install.h
	 * S1-S8, which journals what it did). dev is the confirm's fresh
	 * read, s the session the TPM proved. NULL: fleetd installs nothing. */
	void (*provision)(void *ctx, const struct fleet_inv_device *dev,
			  const struct fleet_attest_session *s, struct fleet_wire_confirm_reply *cr);
	void *provision_ctx;
	/* The re-check (admission_reattest.c): whether a class installs
	 * control planes (NULL, or a class it does not know: handled as a
	 * control plane, which is never cordoned), and the cordon of a
	 * quarantined worker's node (NULL: none requested, journaled). */
	bool (*is_controlplane)(void *ctx, const char *class_name, bool *known);
	void (*cordon)(void *ctx, const char *device);
	void *reattest_ctx;
};

/* ec (may be NULL) gets what stopped it: a sentence ("class worker:
 * profile ...", "metric ...: ...", "admission: out of memory"). */
fleet_err fleet_admission_new(const struct fleet_admission_deps *deps,
			      struct fleet_admission **out, struct fleet_errctx *ec);
void fleet_admission_free(struct fleet_admission *a);

/* The three rounds: body in, HTTP status and JSON reply out (appended to
 * reply); peer is the client's numeric address. Thread-safe: the HTTP server may call them concurrently. For a
 * 4xx (a body that does not decode), *reject is the reason
 * fleetd_http_rejected_total counts it under (fleetd/http/server.h:
 * malformed-json, malformed-message, unsupported-version,
 * field-too-large); NULL otherwise. */
int fleet_admission_intake(struct fleet_admission *a, const char *peer, const uint8_t *body,
			   size_t len, struct fleet_buf *reply, const char **reject);
int fleet_admission_answer(struct fleet_admission *a, const uint8_t *body, size_t len,
			   struct fleet_buf *reply, const char **reject);
int fleet_admission_confirm(struct fleet_admission *a, const uint8_t *body, size_t len,
			    struct fleet_buf *reply, const char **reject);

/* The hourly re-check of a running node (spec "Check the running node";
 * fleetd/reattest/reattest.h RA1-RA12 decide), rules R-1..R-6:
 *  R-1 POST /v1/reattest/nonce: a nonce for a LAK certificate fleetd's CA
 *      signed, with the PCR selection of the device's class profile (a
 *      refusal is HTTP 403: the nonce reply has no status); the
 *      device's class is read through intake's bounded lookup (lookup.h),
 *      so a flood of nonce requests costs at most its budget.
 *  R-2 POST /v1/reattest/check: anything RA11 calls unauthenticated (a bad
 *      signature, an unknown or replayed nonce, an unknown, revoked or
 *      stale LAK, a planned device) writes nothing, quarantines nothing,
 *      is counted (fleetd_unproven_total{reattest-proof}) and journaled
 *      only as the first of its kind in a window.
 *  R-3 A pass writes a passing verdict only when the device's last verdict
 *      was not one (the next passing check after a quarantine lift restores
 *      eligibility; an hourly pass is not a row an hour).
 *  R-4 An authenticated failure writes the failed verdict (store and
 *      verdicts.jsonl) and counts fleetd_reattest_failed_total{role}. A
 *      worker is then quarantined in the store and its cordon requested
 *      (deps.cordon); a control plane (or a class of unknown role) is not:
 *      a journal entry at crit ("reattest-failed") raises the alert.
 *  R-5 fleetd's own trouble (the store, memory) or the inventory not
 *      answering: 503, nothing written, the node retries next hour. */
int fleet_admission_reattest_nonce(struct fleet_admission *a, const uint8_t *body, size_t len,
				   struct fleet_buf *reply, const char **reject);
int fleet_admission_reattest_check(struct fleet_admission *a, const uint8_t *body, size_t len,
				   struct fleet_buf *reply, const char **reject);
/*  R-6 POST /v1/reattest/renew: the check's message with the next LDevID
 *      key; R-2..R-5 apply to its check as to an hourly one (renewal adds
 *      no way around them). Only after that check passed does the renewal
 *      run (RN1-RN8): "renewed" with both certificates (journaled
 *      "certificates-renewed" with both SHA-1s), or "pass" with nothing
 *      issued (journaled "renewal-refused" with the reason, once per device
 *      and reason in a window), counted in fleetd_renewals_total{result}.
 *      A check message with the key on /check, or one without it on
 *      /renew, is malformed (400). */
int fleet_admission_reattest_renew(struct fleet_admission *a, const uint8_t *body, size_t len,
				   struct fleet_buf *reply, const char **reject);

/* End sessions past their deadline, past their answer window while
 * unproven, or superseded, revoking what they were issued; flush the
 * journal limiter's summaries. The daemon calls it every second. Returns
 * how many sessions ended. */
size_t fleet_admission_reap(struct fleet_admission *a);

/* Forget revoked provisional certificates past their notAfter (the pass
 * calls it; journaled on failure). */
void fleet_admission_prune(struct fleet_admission *a);

/* Binding author records (I7), for the pass: its store handle is read-only,
 * so it writes through these, on the admission's handle, each one
 * transaction. A record must be of a change by
 * binding_author (INVALID otherwise: no other record could prove anything).
 * A failure is counted (fleetd_store_errors_total) and ec says why (the
 * store's context, fleet_store_errctx); the pass journals it. */
fleet_err fleet_admission_record_binding_author(struct fleet_admission *a,
						const struct fleet_store_binding_author *r,
						struct fleet_errctx *ec);
fleet_err fleet_admission_forget_binding_author(struct fleet_admission *a, int64_t device_id,
						bool *forgot, struct fleet_errctx *ec);

/* Inventory lookups intake has made (lookup.h), for tests and metrics. */
unsigned long fleet_admission_inventory_lookups(struct fleet_admission *a);

#endif
