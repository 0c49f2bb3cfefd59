/*
 * tpm_join_evidence.h: the tpm attestor's evidence, its challenge and the
 * renewal's key attestation (issue 14; spec 001 "tpm" and "Renewing a
 * TPM-held key"). The join client (tink-attest/fleet_join.c) builds these
 * from a real TPM, policy/attestors/tpm.c and fleetd/join/join_renew.c read
 * them; both sides share this one definition, as they share
 * lib/join_wire.h and lib/join_evidence.h.
 *
 * Every TPM structure travels marshaled exactly as the TPM produced it
 * (TPM 2.0 Part 2 big-endian encodings, what tpm2-tools writes and
 * Tss2_MU_*_Marshal produces), base64url in JSON; the verifier parses it
 * through lib/tpm.h's readers and never trusts a length the wire states.
 *
 * Round 1, the request's attestation (attestor "tpm"), UTF-8 JSON:
 *   {"v":1,"round":1,"ek_public":"<b64u TPM2B_PUBLIC>",
 *    "ek_cert":"<b64u DER, as read from NV>",            (optional)
 *    "ak_public":"<b64u TPM2B_PUBLIC>"}
 * ek_cert is absent only for a TPM with no manufacturer certificate, which
 * only tpm.allow_uncertified_ek admits (labs; loudly logged).
 *
 * The challenge (the answer's deferral.payload, status "challenge",
 * attestor "tpm"):
 *   {"v":1,"id_object":"<b64u TPM2B_ID_OBJECT>",
 *    "enc_secret":"<b64u TPM2B_ENCRYPTED_SECRET>",
 *    "pcrs":"sha256:0,1,2,3,4,5,6,7",                    (tpm2-tools syntax)
 *    "state":"<b64u sealed>"}
 * state is lib/challenge_state.h's sealing: opaque to the agent, sent back
 * unchanged in round 2. id_object and enc_secret are the two inputs of
 * TPM2_ActivateCredential (the EK the key, the AK the object).
 *
 * Round 2, the same CSR's next request's attestation:
 *   {"v":1,"round":2,"state":"<b64u>","secret":"<b64u activated secret>",
 *    "quote":"<b64u TPMS_ATTEST>","quote_sig":"<b64u TPMT_SIGNATURE>",
 *    "pcr_values":["<b64u digest>", ..],   (the challenge's selection, in
 *                                           selection order: banks as
 *                                           listed, PCRs ascending)
 *    "event_log":"<b64u TCG log>",                        (optional)
 *    "node_key":{"public":"<b64u TPM2B_PUBLIC>",           (optional)
 *                "certify_info":"<b64u TPMS_ATTEST>",
 *                "signature":"<b64u TPMT_SIGNATURE>"}}
 * The quote's extraData is SHA-256(secret || SHA-256(csr)) (fleet_tpm_
 * quote_nonce); node_key is the AK's TPM2_Certify of the CSR's key with
 * extraData SHA-256(csr). event_log is what the quote's PCRs replay
 * (required when the attestor has a pcr profile).
 *
 * The renewal's key attestation, the member "key_attestation" of POST
 * /v1/renew's request (lib/join_evidence.h; required when the leaf names
 * an AK):
 *   {"ak_public":"<b64u TPM2B_PUBLIC>","key_public":"<b64u TPM2B_PUBLIC>",
 *    "certify_info":"<b64u TPMS_ATTEST>","signature":"<b64u TPMT_SIGNATURE>"}
 *
 * The certificate statement of a certified TPM join, the URI SAN after the
 * SPIFFE ID (fleet_tpm_ak_uri): "urn:bc:tpm-ak:" followed by the AK's TPM
 * name in lowercase hex (nameAlg || digest: 68 hex digits for SHA-256).
 *
 * The rules (tests/unit/test_tpm_join_evidence.c, named after each; the
 * decoders fuzzed by tests/fuzz/fuzz_tpm_join_evidence.c):
 *
 * TE1 Decoders take untrusted bytes whole or not at all, as JE1 (one
 *     object, no repeated or unknown key, "v" the integer 1, "round" 1 or
 *     2 and only that round's keys; base64url in its one spelling; *out
 *     zeroed, and freed and zeroed on a refusal; the field's path in
 *     ec->detail). Caps: a public area FLEET_TPM_MAX_PUBLIC, an attest
 *     FLEET_TPM_MAX_ATTEST, a signature FLEET_TPM_MAX_SIG, ek_cert
 *     FLEET_JOIN_MAX_CERT, id_object and enc_secret FLEET_TPM_MAX_BLOB,
 *     state FLEET_CHALLENGE_MAX_STATE + FLEET_CHALLENGE_OVERHEAD, secret
 *     1..FLEET_TPM_MAX_SECRET, pcr_values 1..FLEET_TPM_MAX_PCRS entries of
 *     1..FLEET_DIGEST_MAX bytes, event_log FLEET_TPM_MAX_EVENTLOG, pcrs
 *     1..FLEET_TPM_MAX_SELECTION characters of "a-z0-9:,+", the whole
 *     attestation FLEET_JOIN_MAX_ATTESTATION, the challenge
 *     FLEET_JOIN_MAX_PAYLOAD. FLEET_E_TOO_LARGE over a cap,
 *     FLEET_E_MALFORMED otherwise. The bytes are not parsed as TPM
 *     structures here: that is the verifier's, with its reasons.
 * TE2 Encoders refuse (FLEET_E_INVALID_ARG, out unchanged) what their
 *     decoder would refuse; encodings are canonical (compact, keys in the
 *     order above, absent optionals omitted); decode(encode(m)) == m.
 * TE3 fleet_tpm_quote_nonce is SHA-256(secret || csr_sha256) (a known
 *     answer in the test); secret 1..FLEET_TPM_MAX_SECRET bytes.
 * TE4 fleet_tpm_ak_uri writes "urn:bc:tpm-ak:" and the name's lowercase hex;
 *     fleet_tpm_ak_uri_parse reads it back into the name's bytes, refusing
 *     (FLEET_E_MALFORMED) another prefix, upper case or odd hex, a name
 *     whose first two bytes are not a SHA-256/384/512 nameAlg or whose
 *     length is not 2 + that digest's: a statement that cannot be an AK
 *     name is never compared as one.
 * TE5 Free functions wipe every byte field (the secret above all) and zero
 *     the struct; NULL and a zeroed struct are no-ops.
 * TE6 fleet_tpm_leaf_statement reads a node certificate's statements (its
 *     URI SANs after the SPIFFE ID, lib/ca.h NR5): NULL and ak_uri the one
 *     urn:bc:tpm-ak: statement ("" none), or the reason: "tpm-ak-uri" (two
 *     of them, or one that TE4 refuses), "key-statement-unknown" (any
 *     other statement). The renewal (what it must prove again) and x509pop
 *     (what it may not re-join without) read it from the store's own leaf.
 */
#ifndef FLEET_TPM_JOIN_EVIDENCE_H
#define FLEET_TPM_JOIN_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/attest_wire.h"
#include "lib/buf.h"
#include "lib/challenge_state.h"
#include "lib/fleet_err.h"
#include "lib/join_wire.h"
#include "lib/tpm.h"

#define FLEET_TPM_ATTESTOR_ID "tpm"
#define FLEET_TPM_MAX_PUBLIC 1024  /* sizeof(TPM2B_PUBLIC) and then some */
#define FLEET_TPM_MAX_ATTEST 1024  /* a TPMS_ATTEST: TPM2B_ATTEST's buffer */
#define FLEET_TPM_MAX_SIG 1024     /* a TPMT_SIGNATURE: RSA-4096's 518 */
#define FLEET_TPM_MAX_BLOB 1024    /* TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET */
#define FLEET_TPM_MAX_SECRET 64
#define FLEET_TPM_MAX_PCRS 24
#define FLEET_TPM_MAX_SELECTION 127
#define FLEET_TPM_MAX_EVENTLOG 40960 /* raw; base64 twice stays in the request */
#define FLEET_TPM_MAX_STATE (FLEET_CHALLENGE_MAX_STATE + FLEET_CHALLENGE_OVERHEAD)
#define FLEET_TPM_AK_URI_PREFIX "urn:bc:tpm-ak:"
/* prefix + nameAlg(2) + SHA-512 (64), as hex */
#define FLEET_TPM_AK_URI_MAX (sizeof(FLEET_TPM_AK_URI_PREFIX) - 1 + 2 * (2 + 64))

/* The AK's certification of a key (round 2's node_key; the renewal's
 * key_attestation without its ak_public). */
struct fleet_tpm_certification {
	struct fleet_wire_bytes key_public;   /* "public" / "key_public" */
	struct fleet_wire_bytes certify_info; /* TPMS_ATTEST */
	struct fleet_wire_bytes signature;    /* TPMT_SIGNATURE */
};

struct fleet_tpm_evidence {
	int round; /* 1 or 2 */
	/* round 1 */
	struct fleet_wire_bytes ek_public;
	struct fleet_wire_bytes ek_cert; /* len 0: absent */
	struct fleet_wire_bytes ak_public;
	/* round 2 */
	struct fleet_wire_bytes state;
	struct fleet_wire_bytes secret;
	struct fleet_wire_bytes quote;
	struct fleet_wire_bytes quote_sig;
	size_t n_pcr_values;
	struct fleet_wire_bytes pcr_values[FLEET_TPM_MAX_PCRS];
	struct fleet_wire_bytes event_log; /* len 0: absent */
	bool has_node_key;
	struct fleet_tpm_certification node_key;
};
fleet_err fleet_tpm_evidence_decode(const uint8_t *msg, size_t len,
				    struct fleet_tpm_evidence *out, struct fleet_errctx *ec);
fleet_err fleet_tpm_evidence_encode(const struct fleet_tpm_evidence *in, struct fleet_buf *out);
void fleet_tpm_evidence_free(struct fleet_tpm_evidence *m);

struct fleet_tpm_challenge {
	struct fleet_wire_bytes id_object;
	struct fleet_wire_bytes enc_secret;
	char pcrs[FLEET_TPM_MAX_SELECTION + 1];
	struct fleet_wire_bytes state;
};
fleet_err fleet_tpm_challenge_decode(const uint8_t *msg, size_t len,
				     struct fleet_tpm_challenge *out, struct fleet_errctx *ec);
fleet_err fleet_tpm_challenge_encode(const struct fleet_tpm_challenge *in, struct fleet_buf *out);
void fleet_tpm_challenge_free(struct fleet_tpm_challenge *m);

struct fleet_tpm_key_attestation {
	struct fleet_wire_bytes ak_public;
	struct fleet_tpm_certification cert; /* cert.key_public is "key_public" */
};
/* The member's value as a jansson object, for lib/join_evidence.c's renew
 * request (which owns the rest of the request). */
struct json_t;
fleet_err fleet_tpm_key_attestation_read(const struct json_t *v, const char *path,
					 struct fleet_tpm_key_attestation *out,
					 struct fleet_errctx *ec);
struct json_t *fleet_tpm_key_attestation_value(const struct fleet_tpm_key_attestation *in);
bool fleet_tpm_key_attestation_ok(const struct fleet_tpm_key_attestation *in);
void fleet_tpm_key_attestation_free(struct fleet_tpm_key_attestation *m);

/* TE3: SHA-256(secret || csr_sha256). */
fleet_err fleet_tpm_quote_nonce(const uint8_t *secret, size_t secret_len,
				const uint8_t csr_sha256[32], uint8_t out[32]);

/* TE6; cap at least FLEET_TPM_AK_URI_MAX + 1. */
#include <openssl/x509.h>
const char *fleet_tpm_leaf_statement(X509 *leaf, char *ak_uri, size_t cap);

/* TE4 */
fleet_err fleet_tpm_ak_uri(const uint8_t *name, size_t name_len, char *out, size_t cap);
fleet_err fleet_tpm_ak_uri_parse(const char *uri, uint8_t *name, size_t cap, size_t *name_len);

#endif
