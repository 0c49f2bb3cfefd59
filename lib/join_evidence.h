/*
 * join_evidence.h: the evidence the token-based attestors read and the
 * renewal's proof (issue 13; spec 001 "x509pop", "discovery", and
 * "Renewing" of JoinService). The join client builds these, the attestors
 * in policy/attestors/ and the join service read them; both sides share
 * this one definition, as they share lib/join_wire.h.
 *
 * Every signature here is ES256 as JOSE defines it (RFC 7518 3.4): ECDSA
 * on P-256 over SHA-256 of the signing input, the signature the 64 bytes
 * r || s (each 32 bytes, big-endian, left-padded), never DER. The signing
 * input always begins with its purpose and a NUL, so a signature made for
 * one purpose is never a valid one for another (a renew proof is no
 * x509pop proof, an x509pop proof no discovery assertion):
 *
 *   x509pop    "x509pop" 0x00 || SHA-256(csr DER) (32) || u8 len(node_id)
 *              || node_id || be64(client_time_ms)
 *   renew      "renew" 0x00 || SHA-256(csr DER) (32) || SHA-256(leaf DER) (32)
 *   discovery  "discovery-assertion" 0x00 || the assertion's body bytes,
 *              exactly as carried
 *
 * x509pop evidence (the attestation bytes, UTF-8 JSON; key names are the
 * spec's):
 *   {"v":1,"nodeId":"node_..","chain":["<b64u DER leaf>", ..],
 *    "clientTime":<Unix ms>,"sig":"<b64u 64 bytes>"}
 *
 * A discovery attestation (what the boot server signed, carried whole):
 *   {"v":1,"assertion":"<b64u body bytes>","cert":"<b64u signer leaf DER>",
 *    "sig":"<b64u 64 bytes>"}
 * and its body (the SignedDiscoveryAssertion's fields, fleetd's JSON
 * spelling of bettercompute.site.v1):
 *   {"v":1,"site":"..","signer":"<node id>","epoch":N,"mac":"aa:..",
 *    "ip":"..","product_uuid":"..","workflow":"..",      (the three optional)
 *    "issued_at":<Unix s>,"not_after":<Unix s>}
 *
 * POST /v1/renew (answered with lib/join_wire.h's envelope, status joined):
 *   {"v":1,"cert":"<b64u the current leaf DER>","csr":"<b64u DER>",
 *    "sig":"<b64u 64 bytes>",
 *    "key_attestation":{..}}              (optional; lib/tpm_join_evidence.h)
 *
 * The rules (tests/unit/test_join_evidence.c, named after each; the
 * decoders fuzzed by tests/fuzz/fuzz_join_evidence.c):
 *
 * JE1 Decoders take untrusted bytes whole or not at all, as lib/join_wire.h
 *     JW1-JW3 (wj_load: one object, no repeated or unknown key, "v" the
 *     integer 1; base64url in its one spelling; *out zeroed, and freed and
 *     zeroed on a refusal; the field's path in ec->detail). Caps: each
 *     certificate FLEET_JOIN_MAX_CERT, the CSR FLEET_JOIN_MAX_CSR (as
 *     JW3), chain 1..FLEET_JOIN_MAX_CHAIN entries, the assertion body
 *     FLEET_EVIDENCE_MAX_BODY, the whole message FLEET_JOIN_MAX_ATTESTATION
 *     (the renew request FLEET_JOIN_MAX_REQUEST). FLEET_E_TOO_LARGE over a cap,
 *     FLEET_E_MALFORMED otherwise.
 * JE2 Values: nodeId and signer 1..FLEET_JOIN_MAX_ID of a-z 0-9 _ -;
 *     clientTime 0..FLEET_JOIN_MAX_NOT_AFTER*1000; sig exactly 64 bytes
 *     (fewer MALFORMED, more TOO_LARGE, as wj_fixed reads a fixed field);
 *     site 1..63 of a-z 0-9 -; epoch 1..2^53; mac lowercase
 *     aa:bb:cc:dd:ee:ff; product_uuid lowercase 8-4-4-4-12; ip 1..45 of
 *     0-9 a-f . : ; workflow 1..63 of a-z 0-9 . _ -; issued_at and
 *     not_after 1..FLEET_JOIN_MAX_NOT_AFTER with issued_at <= not_after.
 * JE3 Encoders refuse (FLEET_E_INVALID_ARG, out unchanged) what their
 *     decoder would refuse; encodings are canonical (compact, keys in the
 *     order above, absent optionals omitted), decode(encode(m)) == m.
 * JE4 The signing inputs are exactly the layouts above (a known answer in
 *     the test); a node id outside JE2 or an empty CSR is INVALID_ARG, as
 *     is any other input a decoder would refuse (a clientTime outside JE2;
 *     a CSR, leaf or body empty or over its JE1 cap): what no message could
 *     carry is never signed.
 * JE5 fleet_es256_sign signs with a P-256 private key only; verify takes a
 *     P-256 public key only (another curve or RSA: FLEET_E_UNSUPPORTED,
 *     reason "es256-key"), a signature whose r or s is 0 or >= n, or that
 *     does not verify, is FLEET_E_VERIFY, reason "es256-signature";
 *     OpenSSL's queue is left empty.
 * JE6 Free functions wipe every byte field and zero the struct; NULL and a
 *     zeroed struct are no-ops.
 */
#ifndef FLEET_JOIN_EVIDENCE_H
#define FLEET_JOIN_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "lib/attest_wire.h"
#include "lib/join_wire.h"
#include "lib/tpm_join_evidence.h"

#define FLEET_X509POP_PURPOSE "x509pop"
#define FLEET_RENEW_PURPOSE "renew"
#define FLEET_DISCOVERY_PURPOSE "discovery-assertion"
#define FLEET_ES256_SIG_LEN 64
#define FLEET_EVIDENCE_MAX_BODY 4096
#define FLEET_EVIDENCE_SITE_MAX 63
#define FLEET_EVIDENCE_IP_MAX 45
#define FLEET_EVIDENCE_WORKFLOW_MAX 63

#define FLEET_ES256_REASON_KEY "es256-key"
#define FLEET_ES256_REASON_SIGNATURE "es256-signature"

struct fleet_x509pop_evidence {
	char node_id[FLEET_JOIN_MAX_ID + 1];
	size_t n_chain; /* 1..FLEET_JOIN_MAX_CHAIN, the leaf first */
	struct fleet_wire_bytes chain[FLEET_JOIN_MAX_CHAIN];
	int64_t client_time_ms;
	uint8_t sig[FLEET_ES256_SIG_LEN];
};
fleet_err fleet_x509pop_decode(const uint8_t *msg, size_t len, struct fleet_x509pop_evidence *out,
			       struct fleet_errctx *ec);
fleet_err fleet_x509pop_encode(const struct fleet_x509pop_evidence *in, struct fleet_buf *out);
void fleet_x509pop_free(struct fleet_x509pop_evidence *m);
/* JE4: appended to out. csr_sha256 is the raw 32 bytes. */
fleet_err fleet_x509pop_signing_input(const uint8_t csr_sha256[32], const char *node_id,
				      int64_t client_time_ms, struct fleet_buf *out);

/* The signed assertion as carried. */
struct fleet_discovery_signed {
	struct fleet_wire_bytes body; /* the exact bytes signed */
	struct fleet_wire_bytes cert; /* the signer's leaf, DER */
	uint8_t sig[FLEET_ES256_SIG_LEN];
};
fleet_err fleet_discovery_signed_decode(const uint8_t *msg, size_t len,
					struct fleet_discovery_signed *out, struct fleet_errctx *ec);
fleet_err fleet_discovery_signed_encode(const struct fleet_discovery_signed *in,
					struct fleet_buf *out);
void fleet_discovery_signed_free(struct fleet_discovery_signed *m);

/* Its body. Strings "" when absent (ip, product_uuid, workflow). */
struct fleet_discovery_assertion {
	char site[FLEET_EVIDENCE_SITE_MAX + 1];
	char signer[FLEET_JOIN_MAX_ID + 1];
	int64_t epoch;
	char mac[FLEET_WIRE_MAC_LEN + 1];
	char ip[FLEET_EVIDENCE_IP_MAX + 1];
	char product_uuid[FLEET_JOIN_UUID_LEN + 1];
	char workflow[FLEET_EVIDENCE_WORKFLOW_MAX + 1];
	int64_t issued_at, not_after;
};
fleet_err fleet_discovery_body_decode(const uint8_t *body, size_t len,
				      struct fleet_discovery_assertion *out,
				      struct fleet_errctx *ec);
fleet_err fleet_discovery_body_encode(const struct fleet_discovery_assertion *in,
				      struct fleet_buf *out);
/* JE4: "discovery-assertion" 0x00 || body, appended to out. */
fleet_err fleet_discovery_signing_input(const uint8_t *body, size_t len, struct fleet_buf *out);

struct fleet_renew_request {
	struct fleet_wire_bytes cert; /* the current leaf */
	struct fleet_wire_bytes csr;
	uint8_t sig[FLEET_ES256_SIG_LEN];
	/* "key_attestation" (optional; lib/tpm_join_evidence.h): the AK's
	 * certification of the CSR's key, which a leaf naming an AK needs. */
	bool has_key_attestation;
	struct fleet_tpm_key_attestation key_attestation;
};
fleet_err fleet_renew_request_decode(const uint8_t *msg, size_t len,
				     struct fleet_renew_request *out, struct fleet_errctx *ec);
fleet_err fleet_renew_request_encode(const struct fleet_renew_request *in, struct fleet_buf *out);
void fleet_renew_request_free(struct fleet_renew_request *m);
/* JE4: "renew" 0x00 || SHA-256(csr) || SHA-256(leaf), appended to out. */
fleet_err fleet_renew_signing_input(const uint8_t *csr, size_t csr_len, const uint8_t *leaf,
				    size_t leaf_len, struct fleet_buf *out);

/* JE5 */
fleet_err fleet_es256_sign(EVP_PKEY *key, const uint8_t *msg, size_t len,
			   uint8_t sig[FLEET_ES256_SIG_LEN], struct fleet_errctx *ec);
fleet_err fleet_es256_verify(EVP_PKEY *pub, const uint8_t *msg, size_t len,
			     const uint8_t sig[FLEET_ES256_SIG_LEN], struct fleet_errctx *ec);

#endif
