/*
 * attest_server.h: fleetd's side of each protocol round, as functions the
 * daemon calls (it adds the inventory, the store and the journal around
 * them) and the tests call in-process.
 *
 * The order of checks is the spec's: EK certificates against the roots,
 * credential activation (the proof), then the quote and the event log
 * against the class profile; certificates are issued only after the caller
 * has read the binding again.
 *
 * The caller keeps trust rule 4 around intake: an intake holds nothing
 * fresh (the AK and LDevID are the same every boot) and can be replayed, so
 * no intake, valid or not, may displace a session that is still open.
 *
 * The judging rounds (intake, answer, confirm) return a struct
 * fleet_decision (lib/fleet_err.h), never a bare error: FLEET_PASSED,
 * FLEET_REFUSED with a stable reason (the request's evidence is at fault),
 * or FLEET_FAILED with the error that kept fleetd from judging (out of
 * memory, the crypto library): a refusal is the machine's doing, a
 * failure fleetd's, and the daemon answers them differently (a refusal,
 * or a 500 that a retry can pass).
 *
 * Trust rule 1: only TPM-authenticated evidence becomes a verdict.
 * fleet_attest_answer() therefore says "no" in two ways:
 *   FLEET_REFUSED + reason    the evidence is not proven to come from the
 *                             TPM that was challenged (bad proof, bad quote
 *                             signature, wrong nonce, replayed session):
 *                             NO verdict may be written, nothing quarantined;
 *   FLEET_PASSED + verdict.pass = false   the TPM proved what it booted and
 *                             the profile refuses it: a failed verdict.
 *
 * Reasons (stable; the client only ever hears "refused"):
 *   intake:  "ek-cert-unparseable", "ek-chain-*" (lib/x509_ek.h),
 *            "ek-key-mismatch", "ek-rsa-missing", "ek-public-malformed",
 *            "ek-wrong-type" (an ECC key in the RSA slot or back),
 *            "ek-not-restricted", "ek-not-decrypt", "ek-sign-set"
 *            (an EK is a storage key: only such a key runs
 *            ActivateCredential), "ek-name-alg-unsupported" (SHA-1, SM3),
 *            "ek-scheme-unsupported" (OAEP, ...), "ek-kdf-unsupported",
 *            "ek-key-unsupported" (key size, exponent, curve),
 *            "ek-symmetric-unsupported" (NULL, CTR, ...): the EK is not
 *            one MakeCredential wraps to (fleet_credential_ek_supported,
 *            lib/tpm_credential.h, the very rule fleet_make_credential
 *            applies, so the challenge never fails on an accepted EK),
 *            "ek-not-fixedtpm", "ek-not-fixedparent",
 *            "ek-hash-mismatch" (the certificate's ek_hash is not the
 *            public area's; both are the canonical SPKI hash of the key,
 *            fleet_ek_hash, so an id-RSAES-OAEP label makes no
 *            difference),
 *            "ak-malformed", "ak-unsupported",
 *            "ak-*" (lib/tpm.h), "ldevid-*": "ldevid-public-malformed",
 *            "ldevid-request-malformed", "ldevid-request-serial",
 *            "ldevid-request-key", "ldevid-restricted", and the certify reasons of lib/tpm.h
 *            ("certify-name", "key-decrypt-set", ...),
 *            "network-report-malformed"
 *   answer:  "session-unknown", "session-expired", "session-state",
 *            "proof-invalid", "network-report-changed",
 *            the quote reasons of lib/tpm.h; and as a failed verdict (not
 *            an error), "event-log-malformed"
 *   confirm: "session-unknown", "session-state", "confirm-signature"
 *
 * Trust rule 4: a round that fails before its request is authenticated
 * (answer: before the proof and the quote verify; confirm: before the
 * LDevID signature verifies) leaves the session exactly as it was, state
 * included, so a forged or replayed request cannot end a machine's open
 * session. An expired session is reported, not closed: expiry is the
 * clock's doing, and the daemon reaps expired sessions itself.
 */
#ifndef FLEET_ATTEST_SERVER_H
#define FLEET_ATTEST_SERVER_H

#include <stdbool.h>
#include <time.h>

#include <openssl/x509.h>

#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "lib/x509_ek.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

enum fleet_session_state {
	FLEET_SESSION_CHALLENGED = 1, /* intake checked, challenge sent */
	FLEET_SESSION_VERIFIED,       /* answer proven and judged */
	FLEET_SESSION_ISSUED,         /* certificates issued, awaiting confirm */
	FLEET_SESSION_CONFIRMED,
	FLEET_SESSION_CLOSED,         /* refused or expired; nothing more accepted */
};

/*
 * One attestation session: what fleetd remembers between rounds. Holds
 * secrets (the activation secrets): wipe with fleet_attest_session_wipe.
 */
struct fleet_attest_session {
	enum fleet_session_state state;
	uint8_t id[FLEET_WIRE_ID_LEN];
	uint8_t nonce[FLEET_WIRE_ID_LEN];
	uint8_t secret_rsa[FLEET_WIRE_ID_LEN];
	uint8_t secret_ecc[FLEET_WIRE_ID_LEN];
	bool has_ecc;
	time_t created;
	time_t deadline;
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	char bios_version[FLEET_WIRE_MAX_BIOS + 1];
	TPM2B_PUBLIC ak;
	TPM2B_PUBLIC ldevid;
	TPM2B_PUBLIC ek_rsa;  /* the EK public areas intake verified; */
	TPM2B_PUBLIC ek_ecc;  /* the challenge wraps its secrets to these */
	char ek_hash[65];     /* RSA EK: fleet_ek_hash, canonical SPKI SHA-256 */
	char ek_hash_ecc[65]; /* "" when the machine has no ECC EK */
	struct fleet_network_report report;
	uint8_t report_hash[32]; /* SHA-256 of the intake's report bytes */
	TPML_PCR_SELECTION selection;
	bool verdict_pass;       /* the answer's verdict; issue needs true */
	uint8_t lak_cert_hash[32];
	uint8_t ldevid_cert_hash[32];
};

void fleet_attest_session_wipe(struct fleet_attest_session *s);

/* What the server side needs for a round. */
struct fleet_attest_env {
	const struct fleet_ek_roots *roots; /* manufacturer EK CAs */
	const struct fleet_profile *profile; /* the machine's class profile */
	const struct fleet_ca *ca;           /* issues LAK and LDevID */
	time_t now;                          /* 0: time(NULL) */
	unsigned challenge_ttl_s;            /* 0: 300 */
	unsigned cert_validity_days;         /* 0: 365 */
};

/*
 * Round 1, part 1: everything the intake proves on its own (EK certificates
 * chain to the roots and match their public areas, the AK is an AK, the AK
 * certified the LDevID key over the request, the request names this serial
 * and this key). Fills s (state CHALLENGED is set by fleet_attest_challenge)
 * with the EK hashes, so the caller can compare them with the binding
 * before challenging.
 */
struct fleet_decision fleet_attest_intake(const struct fleet_attest_env *env,
					  const struct fleet_wire_intake *in,
					  struct fleet_attest_session *s)
	__attribute__((warn_unused_result));

/*
 * Round 1, part 2: a fresh session id, nonce and one secret per EK, each
 * wrapped (MakeCredential) to its EK and bound to the AK's name; the PCR
 * selection is the profile's. Sets state CHALLENGED and the deadline.
 *
 * env->profile NULL makes a proof-only session (a machine fleetd has no
 * class for yet, whose pending claim must record only what a TPM proved):
 * the selection is FLEET_ATTEST_PROOF_ONLY_SELECTION, and its answer
 * proves possession of the EKs and the AK's signature over the nonce, and
 * judges nothing: the verdict is not a pass and no certificate can follow.
 */
#define FLEET_ATTEST_PROOF_ONLY_SELECTION "sha256:0"
fleet_err fleet_attest_challenge(const struct fleet_attest_env *env,
				 const struct fleet_wire_intake *in, struct fleet_attest_session *s,
				 struct fleet_wire_intake_reply *out);

/* Round 2: see the comment at the top for the two ways of saying no. On
 * FLEET_PASSED the session is VERIFIED and *verdict holds the policy's
 * word. */
struct fleet_decision fleet_attest_answer(const struct fleet_attest_env *env,
					  struct fleet_attest_session *s,
					  const struct fleet_wire_answer *in,
					  struct fleet_verdict *verdict)
	__attribute__((warn_unused_result));

/* Issue the LAK (for the AK) and LDevID (for the certified key) certificates,
 * subject CN = device_name. Only for a VERIFIED session whose verdict passed;
 * the caller must have read the binding again first (trust rule 5). Fills
 * *out with status ADMITTED and the certificates; state ISSUED. */
fleet_err fleet_attest_issue(const struct fleet_attest_env *env, struct fleet_attest_session *s,
			     const char *device_name, struct fleet_wire_verdict *out);

/* Round 3: the LDevID key's signature over the confirm statement. On
 * FLEET_PASSED the session is CONFIRMED (the caller reads the binding
 * again before it admits the device). */
struct fleet_decision fleet_attest_confirm(const struct fleet_attest_env *env,
					   struct fleet_attest_session *s,
					   const struct fleet_wire_confirm *in)
	__attribute__((warn_unused_result));

#endif
