/*
 * code.h: the configuration code and the proof of a passing check (spec
 * 004 "Authorize installation": "It returns a 32-byte random code wrapped
 * to the TPM"; "Deliver the configuration": "The entrypoint writes the code
 * and proof of a passing check to /worker/fleet. The template requires both
 * before wiping the disk").
 *
 *   D1  the code is FLEET_CODE_LEN (32) bytes from the CSPRNG
 *       (RAND_priv_bytes); it travels as 64 lowercase hex digits (what
 *       tink-attest writes to /worker/fleet/code and Talos puts in
 *       talos.config=...?code=); fleetd keeps only SHA-256 of the 32 raw
 *       bytes, so a stolen store holds no code. A code in any other form
 *       (upper case, 63 or 65 digits, a newline) is malformed, never
 *       normalised.
 *   D2  the code is wrapped with MakeCredential (lib/tpm_credential.h) to
 *       the session's RSA EK (the EK tink-attest activates the code with,
 *       tink-attest/session.c store_provision), bound to the session's AK
 *       name: only ActivateCredential in that TPM with that AK loaded
 *       opens it. Only a CONFIRMED session (fleet_attest_confirm passed)
 *       gets a code.
 *   D3  the proof is a statement fleetd signs with its CA key (ECDSA P-256,
 *       SHA-256; lib/ca.h fleet_ca_sign). Its bytes, the whole file:
 *
 *         <statement>\n<signature>\n
 *
 *       statement: one line of compact JSON with exactly these members in
 *       this order:
 *         {"v":1,"kind":"fleet-provision-proof","device":"<name>",
 *          "serial":"<SMBIOS serial>","ldevid_sha256":"<64 hex>",
 *          "code_sha256":"<64 hex>","issued_at":<unix s>,"expires_at":<unix s>}
 *       signature: base64url without padding of the DER ECDSA signature
 *       over exactly the statement's bytes (without its newline).
 *       Anyone with the CA certificate checks it without fleetd:
 *         head -n1 proof | tr -d '\n' > stmt
 *         sed -n 2p proof | tr -- '-_' '+/' | base64 -d > sig.der  (add '=' to a multiple of 4)
 *         openssl dgst -sha256 -verify <(openssl x509 -in ca.crt -pubkey -noout) \
 *           -signature sig.der stmt
 *       or `fleetctl provision proof-verify FILE --ca CERT`.
 *       The statement begins with '{', so it can never be mistaken for a
 *       certificate's TBS (DER, first byte 0x30) the same key signs, and
 *       "kind" names its purpose.
 *   D4  verification takes nothing it has not authenticated: the
 *       signature is checked over the statement's bytes before the
 *       statement is parsed; the signature's base64url must be canonical
 *       (re-encoding it gives the same text), so no byte of the file can
 *       change without the file being refused. Then the statement is
 *       read strictly: JSON without duplicate members, exactly the eight
 *       members, v 1, the kind, a device name and serial the CA's subject
 *       rule accepts (fleet_ca_subject_ok), 64 lowercase hex digits per
 *       hash, 0 < issued_at < expires_at, and expires_at - issued_at at
 *       most FLEET_CODE_PROOF_MAX_TTL.
 *   D5  at the time of checking, now, the statement is refused expired
 *       when now >= expires_at, and not yet valid when now is more than
 *       FLEET_CODE_PROOF_SKEW before issued_at.
 *
 * Refusals (ec->reason, FLEET_E_VERIFY unless said):
 *   "proof-malformed"  (FLEET_E_MALFORMED) not the shape of D3, or a
 *                      statement D4 refuses (over FLEET_CODE_PROOF_MAX
 *                      bytes: FLEET_E_TOO_LARGE)
 *   "proof-signature"  not signed by this CA over these bytes
 *   "proof-expired", "proof-not-yet-valid"  D5
 */
#ifndef FLEETD_PROVISION_CODE_H
#define FLEETD_PROVISION_CODE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/x509.h>

#include "fleetd/attest/attest_server.h"
#include "lib/attest_wire.h"
#include "lib/buf.h"
#include "lib/ca.h"
#include "lib/fleet_err.h"

#define FLEET_CODE_LEN 32
#define FLEET_CODE_PROOF_MAX FLEET_WIRE_MAX_CERT    /* the wire's cap on the proof */
#define FLEET_CODE_PROOF_MAX_TTL (7 * 24 * 3600)   /* D4 */
#define FLEET_CODE_PROOF_SKEW 300                  /* D5, seconds */
#define FLEET_CODE_PROOF_KIND "fleet-provision-proof"

/* D1: 32 bytes from the CSPRNG; hex is 64 lowercase hex + NUL; hash =
 * SHA-256(raw 32 bytes). FLEET_E_CRYPTO when the CSPRNG fails (then all
 * three outputs are wiped). The caller wipes code and hex when done. */
fleet_err fleet_code_new(uint8_t code[FLEET_CODE_LEN], char hex[2 * FLEET_CODE_LEN + 1],
			 uint8_t hash[32]);

/* D1: parse + hash. FLEET_E_MALFORMED unless hex is exactly 64 lowercase
 * hex digits (and its NUL). */
fleet_err fleet_code_hash_hex(const char *hex, uint8_t hash[32]);

/* D2: MakeCredential of the code to s->ek_rsa, bound to the name of s->ak.
 * out is filled (present, id_object, enc_secret: malloc'd, freed with the
 * message that holds it: fleet_wire_confirm_reply_free). A session not
 * CONFIRMED is FLEET_E_INVALID_ARG; nothing is allocated on error. */
fleet_err fleet_code_wrap(const struct fleet_attest_session *s, const uint8_t code[FLEET_CODE_LEN],
			  struct fleet_wire_credential *out, struct fleet_errctx *ec);

/* What the statement says. For fleet_code_proof_make every member is the
 * caller's (ldevid_sha256: SHA-256 of the LDevID certificate's DER, as
 * session->ldevid_cert_hash; code_hash: SHA-256 of the raw code). */
struct fleet_code_proof_in {
	const char *device, *serial;
	const uint8_t *ldevid_sha256;
	const uint8_t *code_hash;
	int64_t issued_at, expires_at;
};

/* D3: appends the proof (statement, newline, signature, newline) to out.
 * FLEET_E_INVALID_ARG for an input D4 would refuse. */
fleet_err fleet_code_proof_make(const struct fleet_ca *ca, const struct fleet_code_proof_in *in,
				struct fleet_buf *out, struct fleet_errctx *ec);

/* A verified statement: in's pointers point into this structure's own
 * buffers (so it stays valid as long as the structure, and copying it
 * needs fleet_code_proof_fix). */
struct fleet_code_proof {
	struct fleet_code_proof_in in;
	char device[4 * 64 + 1]; /* 64 UTF-8 characters at most (lib/ca.h) */
	char serial[64 + 1];
	uint8_t ldevid_sha256[32];
	uint8_t code_hash[32];
};

/* D3-D5 at time(NULL): FLEET_OK and *out filled, or a refusal (above)
 * with *out zeroed. */
fleet_err fleet_code_proof_verify(X509 *ca_cert, const void *proof, size_t len,
				  struct fleet_code_proof *out, struct fleet_errctx *ec);
/* The same at now. */
fleet_err fleet_code_proof_verify_at(X509 *ca_cert, const void *proof, size_t len, time_t now,
				     struct fleet_code_proof *out, struct fleet_errctx *ec);

/* D4's reading of the statement alone (no signature, no clock): for the
 * fuzz target and the tests. */
fleet_err fleet_code_statement_parse(const char *stmt, size_t len, struct fleet_code_proof *out,
				     struct fleet_errctx *ec);

/* Point p->in at p's own buffers again (after a struct copy). */
void fleet_code_proof_fix(struct fleet_code_proof *p);

#endif
