/*
 * reattest.h: fleetd's side of the hourly re-check of a running node
 * (spec "Check the running node"; lib/reattest_wire.h is the format). A
 * component on its own: the daemon wires it to POST /v1/reattest/nonce and
 * /v1/reattest/check, looks the device's class profile up, and writes the
 * verdict, the quarantine and the cordon; this file decides.
 *
 * The rules (each traced to a test in tests/tpm/test_reattest.c, named
 * after it; the adversarial ones in tests/tpm/test_reattest_attack.c):
 *
 * RA1  A nonce is issued only for a LAK certificate fleetd's CA signed
 *      (lib/ca.h: its signature, its issuer, its validity at now, the TCG
 *      AIK extended key usage): anything else gets none, REFUSED
 *      "lak-unknown", and costs nothing else (no store read).
 * RA2  A nonce is 32 bytes: 12 random, its issue time, and a 16-byte
 *      HMAC-SHA256 under a key fleetd makes at start over the LAK
 *      certificate's SHA-256 and both. It is valid FLEET_REATTEST_NONCE_TTL
 *      (60) s, for that LAK only ("nonce-unknown": not fleetd's, another
 *      LAK's, or a key of an earlier fleetd process; "nonce-expired"), and
 *      used once: it is recorded as used when a check's quote over it
 *      verified (RA8), and a second such check is "nonce-replayed".
 * RA3  Issuing a nonce writes nothing, and an unproven check records
 *      nothing: whoever holds a copy of a LAK certificate (it travels in
 *      every request) can neither evict a node's nonce nor fill memory.
 *      The used set holds FLEET_REATTEST_MAX_NONCES nonces, each for its
 *      60 s; a proven check that finds it full is FAILED (retryable, RA12),
 *      never answered by evicting a live entry (that would allow a replay).
 * RA4  The check's LAK certificate passes RA1's checks ("lak-unknown";
 *      past its notAfter "lak-expired").
 * RA5  The store holds this exact certificate as a "lak" of the device its
 *      subject CN names ("lak-unknown"), not revoked ("lak-revoked"), and
 *      for the key of the device's newest unrevoked "lak"
 *      ("lak-not-current"): a renewal certifies the same AK again, and the
 *      older certificate stays good until its notAfter, so a node that lost
 *      the renewal's answer still checks (and renews) with the one it has.
 *      So whoever revokes a LAK to stop a node must revoke every LAK
 *      certificate of that key (nothing in fleetd revokes LAKs today;
 *      tests/tpm/test_reattest_attack.c pins this).
 * RA6  The device may be checked: its store state is not "retired"
 *      ("device-retired"), and the inventory status the caller passes is
 *      not "planned" ("device-planned"; a planned device cannot renew).
 * RA7  The nonce passes RA2's MAC and age for this certificate; it is
 *      spent only after RA8.
 * RA8  The quote is signed by the LAK's key ("quote-signature") over
 *      extraData SHA-256(nonce || SHA-256(report)) ("quote-extradata"),
 *      the report is signed by the same key ("report-signature") and is a
 *      network report document ("network-report-malformed"). The AK's
 *      public area is rebuilt from the certificate's key with the AK rules
 *      (restricted ECDSA P-256/SHA-256, fixedTPM, fixedParent,
 *      sensitiveDataOrigin): the CA issued the LAK only for such a key
 *      (lib/ca.c key_fits_kind), so the certificate vouches for them.
 * RA9  From here the evidence is the TPM's own answer to our nonce. The
 *      quote's resetCount and restartCount are not below the last ones
 *      the store recorded for the device (REFUSED "clock-backwards",
 *      authenticated); every authenticated check records its clock
 *      (forwards only: fleet_store_reattest_clock_record).
 * RA10 The event log is judged as the admission judges it (lib/eventlog.h
 *      replay in the profile's bank, policy/evaluate.h): the replayed
 *      values of the profile's PCRs must be what the quote signed (else the
 *      verdict "log-quote-mismatch"), an unreadable log is the verdict
 *      "event-log-malformed", PCR 0 comes from pcr0_by_bios for the BIOS
 *      version the check reports. A failing verdict is REFUSED with the
 *      verdict's first reason, authenticated; result->verdict has them all.
 *      For a renewal, renew_required_authorities are checked too, but they
 *      decide the renewal only (RN3): a missing one sets
 *      result->renew_authority_missing and is not in the verdict.
 * RA11 Only RA9 and RA10 refusals (and a pass) set result->authenticated:
 *      a bad signature, an unknown or replayed nonce, an unknown or revoked
 *      LAK never do, and write nothing at all (not even the clock).
 * RA12 FAILED is fleetd's own trouble (the store, memory, the crypto
 *      library): the caller answers it with a retryable error, no verdict.
 *
 * Renewal (POST /v1/reattest/renew: the check's message with the next
 * LDevID key; spec "Certificate renewal starts 30 days before expiry. A
 * planned device cannot renew."; tests/tpm/test_reattest.c renew_*):
 *
 * RN1  Only after fleet_reattest_check passed the same message with
 *      renewal set (result->authenticated, verdict pass): the renewal is
 *      the hourly check plus a key, never instead of it. Otherwise
 *      FLEET_E_INVALID_ARG: the caller's mistake.
 * RN2  The message carries the key ("renew-missing").
 * RN3  renew_required_authorities were all in the log
 *      ("renew-authority-missing"); an empty list asks for none.
 * RN4  The binding is fleetd's own, read from its store, never from the
 *      inventory: the device row is not quarantined ("renew-quarantined":
 *      a quarantined worker cannot renew; a control plane is never
 *      quarantined, so this reads the flag, not the role), its state is
 *      admitted, provisioning or active ("renew-device-state"), and a
 *      confirm recorded its EK ("renew-not-bound"). The inventory's
 *      status is active or staged ("renew-inventory-status": a
 *      decommissioning, failed or offline device, or one whose status is
 *      not known, gets nothing new); a planned device was refused by RA6
 *      ("device-planned").
 * RN5  It is due by the store: the device's newest current LAK or LDevID
 *      certificate ends within FLEET_REATTEST_RENEW_WINDOW (30 days), or it
 *      has none ("renew-not-due"). Never by the certificate presented: a
 *      node that keeps an older LAK (RA5) must not renew again and again.
 * RN6  The key passes the intake's own check, fleet_ldevid_proof_verify
 *      (lib/attest_wire.h), for the LAK's key and the store's serial: a
 *      TPM2B_PUBLIC ("ldevid-public-malformed"), the request document
 *      ("ldevid-request-malformed") naming the serial
 *      ("ldevid-request-serial"), TPM2_Certify by the LAK's own key over
 *      SHA-256(request) ("signature-invalid" when another TPM's AK signed
 *      it, or none did; "attest-extradata" for another request; the other
 *      reasons of fleet_certify_verify), not restricted
 *      ("ldevid-restricted"), the request's SPKI hash the key's
 *      ("ldevid-request-key"); and it is not the key of a revoked or
 *      expired LDevID certificate of the device ("renew-key-reused": the
 *      next key is a new key). A key that has a current LDevID certificate
 *      is a renewal whose answer the node lost: that certificate and the
 *      device's newest current LAK certificate are answered again
 *      (out->again), whether or not RN5 holds, and nothing is written, so
 *      the node's next run recovers instead of being refused until its
 *      certificates expire.
 * RN7  fleetd's CA issues a LAK certificate for the same AK and a LDevID
 *      certificate for the key (env->cert_validity_days, the store's name
 *      and serial), and the store records both in one transaction that
 *      reads the device and its certificates again
 *      (fleet_store_renewal_issue): "renew-device-changed" when it was
 *      quarantined or retired meanwhile, or the presented LAK was revoked
 *      or the device re-admitted with another AK; a concurrent renewal of
 *      the same key that committed first is answered as RN6's lost answer;
 *      "renew-too-many" at FLEET_REATTEST_RENEW_MAX_LDEVID current LDevID
 *      certificates. The old certificates are not revoked:
 *      they stay listed in spire-nodes.json until their notAfter.
 * RN8  A refused renewal writes nothing (what the check wrote stands).
 */
#ifndef FLEET_REATTEST_H
#define FLEET_REATTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "fleetd/store/store.h"
#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "lib/reattest_wire.h"
#include "lib/tpm.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

#define FLEET_REATTEST_MAX_NONCES 4096 /* proven checks within one nonce TTL */
#define FLEET_REATTEST_RENEW_WINDOW (30 * 86400) /* renewal starts 30 days before expiry */
#define FLEET_REATTEST_RENEW_MAX_LDEVID 4        /* current LDevID certificates per device */

/* The nonce key and the used set (RA2, RA3); one mutex, so any thread may
 * use it. */
struct fleet_reattest_nonces;
/* cap 0: FLEET_REATTEST_MAX_NONCES. */
fleet_err fleet_reattest_nonces_new(size_t cap, struct fleet_reattest_nonces **out);
void fleet_reattest_nonces_free(struct fleet_reattest_nonces *t);
/* Used nonces held (expired ones included until reused), for tests. */
size_t fleet_reattest_nonces_count(struct fleet_reattest_nonces *t);

struct fleet_reattest_env {
	const struct fleet_ca *ca;
	struct fleet_store *store;            /* read-write: RA9 records the clock */
	struct fleet_reattest_nonces *nonces;
	time_t now;                           /* 0: time(NULL) */
	unsigned cert_validity_days;          /* renewal (RN7); 0: 90 */
};

/* RA1-RA3: on FLEET_PASSED, *out holds the nonce and expires_in. */
struct fleet_decision fleet_reattest_nonce(const struct fleet_reattest_env *env,
					   const struct fleet_reattest_nonce_req *in,
					   struct fleet_reattest_nonce_reply *out)
	__attribute__((warn_unused_result));

/* RA4 alone, for the caller to find the device (its class profile, its
 * inventory status) before the check: the subject CN of a certificate the
 * CA signed, into device. REFUSED "lak-unknown" / "lak-expired". */
struct fleet_decision fleet_reattest_lak_device(const struct fleet_reattest_env *env,
						const struct fleet_wire_bytes *lak_cert,
						char device[FLEET_STORE_NAME_MAX + 1])
	__attribute__((warn_unused_result));

struct fleet_reattest_input {
	const struct fleet_reattest_check *msg;
	const struct fleet_profile *profile; /* the device's class profile */
	const char *inventory_status;        /* NetBox's status; NULL: not known */
	bool renewal;                        /* a renewal: renew_required_authorities too */
};

struct fleet_reattest_result {
	/* RA11: true only when the TPM proved the evidence (a pass, or a
	 * refusal by RA9 or RA10): only then may the caller write a verdict. */
	bool authenticated;
	char device[FLEET_STORE_NAME_MAX + 1]; /* from RA5 on */
	struct fleet_tpm_clock clock;          /* authenticated: the quote's */
	struct fleet_network_report report;    /* authenticated: the signed report */
	struct fleet_verdict verdict;          /* RA10's, when it ran */
	bool renew_authority_missing;          /* RA10/RN3, renewal only */
};

/* RA4-RA12. result is filled whatever the outcome (zeroed first). */
struct fleet_decision fleet_reattest_check(const struct fleet_reattest_env *env,
					   const struct fleet_reattest_input *in,
					   struct fleet_reattest_result *result)
	__attribute__((warn_unused_result));

/* What a renewal issued (RN7): both certificates' DER, malloc'd. */
struct fleet_reattest_renewed {
	struct fleet_wire_bytes lak_cert;
	struct fleet_wire_bytes ldevid_cert;
	char lak_sha1[41];
	char ldevid_sha1[41];
	bool again; /* RN6: what an earlier renewal of this key issued, sent again */
};

/* RN1-RN8. *out is zeroed first and filled on FLEET_PASSED only. */
struct fleet_decision fleet_reattest_renew(const struct fleet_reattest_env *env,
					   const struct fleet_reattest_input *in,
					   const struct fleet_reattest_result *checked,
					   struct fleet_reattest_renewed *out)
	__attribute__((warn_unused_result));
void fleet_reattest_renewed_free(struct fleet_reattest_renewed *r);

#endif
