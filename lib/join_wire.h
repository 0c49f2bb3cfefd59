/*
 * join_wire.h: the join service's wire format (issue 13, "The join
 * service"; spec "Two-round joins", JoinService of better-compute). In the
 * style of lib/attest_wire.h and with its readers (lib/attest_wire_json.h):
 * JSON over HTTPS, POST, "v": 1, base64url without padding.
 *
 *   POST /v1/join  fleet_join_request -> envelope { body = fleet_join_response }
 *
 *   request  {"v":1, "attestor":"" | "<id>",
 *             "token":"<b64u sealed token>",            (optional)
 *             "attestation":"<b64u evidence>",          (optional)
 *             "csr":"<b64u DER PKCS#10>",
 *             "role":"node" | "site" | "ramdisk",
 *             "claims":{"macs":["aa:bb:cc:dd:ee:ff", ..], (optional)
 *                       "product_uuid":"<uuid>"}}       (optional, both)
 *
 *   envelope {"v":1, "body":"<b64u body bytes>", "sig":"<b64u DER ECDSA>",
 *             "kid":"<16 lowercase hex>"}
 *
 *   body     {"v":1,"status":"joined","node_id":"..","chain":["<b64u DER>",..],
 *             "csr_sha256":"<64 hex>"}
 *          | {"v":1,"status":"pending","request_id":"..","retry_after_seconds":30,
 *             "csr_sha256":".."}
 *          | {"v":1,"status":"challenge","attestor":"..","payload":"<b64u>",
 *             "not_after":1790000000,"csr_sha256":".."}
 *          | {"v":1,"status":"denied"}
 *
 * "denied" is the one generic ACCESS_DENIED: every refusal, whatever the
 * attestor and its reason, is that body and nothing else (the reason goes
 * to the on_refusal hook and the security.join.refused event only). A
 * deferral (pending, challenge) issues nothing and spends nothing; the
 * agent sends the same CSR again, after retry_after_seconds or with its
 * answer to the challenge in "attestation".
 *
 * Signing is not this file's: the server encodes the body
 * (fleet_join_body_encode), signs exactly those bytes with the join
 * service's signing key (lib/ca.h fleet_ca_sign: ECDSA over SHA-256, DER)
 * and wraps bytes, signature and key id (fleet_join_envelope_encode).
 *
 * The rules (each traced to a test in tests/unit/test_join_wire.c, named
 * after it; tests/fuzz/fuzz_join_wire.c holds JW1, JW2 and JW12 on any
 * bytes, from seeds test_corpus_seeds checks are valid):
 *
 * JW1  Every decoder reads untrusted bytes and takes a message whole or not
 *      at all: *out is zeroed first, and on a refusal freed and zeroed
 *      again, with the field named in ec->detail (its path, "claims.macs[2]",
 *      never bytes of the input). FLEET_E_TOO_LARGE is a value over its cap,
 *      FLEET_E_MALFORMED any other refusal. Every refusal test below, and
 *      test_refusal_leaves_out_zero.
 * JW2  The JSON layer (wj_load): a JSON object; a key given twice at any
 *      depth, a key the message does not know, or "v" other than the
 *      integer 1 is refused; a whole message over its cap is TOO_LARGE
 *      before it is parsed (request FLEET_JOIN_MAX_REQUEST, body
 *      FLEET_JOIN_MAX_BODY, envelope FLEET_JOIN_MAX_ENVELOPE bytes, each
 *      above the largest message its encoder can write).
 *      test_request_refusals, test_body_refusals, test_envelope_refusals,
 *      test_message_caps.
 * JW3  Binary fields are base64url without padding in its one spelling
 *      (fleet_b64url_decode: no '=', no '+' or '/', unused bits zero) of
 *      1..cap bytes: an empty string is refused, as is one byte over the
 *      cap (TOO_LARGE). Caps: token FLEET_JOIN_MAX_TOKEN (a sealing,
 *      FLEET_SEAL_MAX_SEALED), attestation FLEET_JOIN_MAX_ATTESTATION, csr
 *      FLEET_JOIN_MAX_CSR, each chain entry FLEET_JOIN_MAX_CERT, payload
 *      FLEET_JOIN_MAX_PAYLOAD, body FLEET_JOIN_MAX_BODY, sig
 *      FLEET_JOIN_MAX_SIG. test_request_refusals, test_caps.
 * JW4  Request: "attestor" is required, 0..FLEET_JOIN_MAX_ATTESTOR of
 *      a-z 0-9 '-' ("" is join-token); "csr" and "role" (node, site or
 *      ramdisk) are required; "token" and "attestation" are optional
 *      (has_token, has_attestation) and never empty when present. Which
 *      attestor needs a token or evidence is the service's decision (a
 *      refusal there is "denied"), not the wire's. test_request_roundtrip,
 *      test_request_refusals.
 * JW5  Claims: "claims", when present, is an object of "macs" and
 *      "product_uuid", both optional. macs is an array of
 *      0..FLEET_JOIN_MAX_MACS distinct lowercase "aa:bb:cc:dd:ee:ff"
 *      (capitals, another spelling or a repeat are refused; 17 entries are
 *      TOO_LARGE); product_uuid is 36 characters, lowercase 8-4-4-4-12 hex.
 *      Absent claims, {} and "macs":[] read the same: no MACs, no UUID.
 *      test_claims_refusals.
 * JW6  Body: "status" is joined, pending, challenge or denied, and the body
 *      holds exactly that status's fields (the table above), every one
 *      required: a field of another status is refused by its name
 *      ("<field>: not with status <status>"), an unknown one as unknown;
 *      "denied" has no csr_sha256. test_body_refusals.
 * JW7  Body values: node_id and request_id 1..FLEET_JOIN_MAX_ID of
 *      a-z 0-9 '_' '-'; chain 1..FLEET_JOIN_MAX_CHAIN DER certificates, the
 *      leaf first (0 entries refused, 5 TOO_LARGE); retry_after_seconds an
 *      integer 1..FLEET_JOIN_MAX_RETRY_AFTER; the challenge's attestor
 *      1..FLEET_JOIN_MAX_ATTESTOR of JW4's set (join-token never
 *      challenges); not_after an integer of Unix seconds
 *      1..FLEET_JOIN_MAX_NOT_AFTER; csr_sha256 exactly 64 lowercase hex.
 *      test_body_refusals.
 * JW8  Envelope: "body" 1..FLEET_JOIN_MAX_BODY bytes, "sig"
 *      1..FLEET_JOIN_MAX_SIG bytes, "kid" exactly 16 lowercase hex: the
 *      signing key's id, the first 8 bytes of SHA-256 over its SPKI DER (as
 *      lib/token_seal names keys), fleet_join_kid of its certificate. It
 *      picks among pinned keys and proves nothing. The envelope's decoder
 *      does not look inside the body. test_envelope_roundtrip,
 *      test_envelope_refusals, test_kid.
 * JW9  The signature is over the body bytes exactly as the envelope carries
 *      them: envelope_decode gives back byte for byte what envelope_encode
 *      was given (whatever those bytes are), and nothing is re-encoded
 *      between signing and verifying. A body is a JSON object ('{', not a
 *      certificate's DER SEQUENCE) whose "status" names what it is, as
 *      lib/ca.h asks of what fleet_ca_sign signs. test_signed_envelope.
 * JW10 The client's rules, in order: (a) decode the envelope; (b) verify
 *      "sig" over envelope.body with the pinned join service key
 *      (fleet_ca_verify; the key whose fleet_join_kid is "kid", none
 *      other) BEFORE decoding the body, and treat a failure as no
 *      answer; (c) decode the body; (d) for joined, pending and
 *      challenge, compare csr_sha256 to fleet_join_csr_sha256 of the CSR it
 *      sent and refuse a mismatch (an answer to another request); (e) a
 *      challenge names the attestor the request named, and is answered
 *      before not_after with the same CSR; (f) "denied" carries nothing to
 *      check and ends the join. (a)..(d): test_signed_envelope,
 *      test_client_binding; (e) and (f) are the join client's to hold and
 *      test (issue 13's client), not this file's.
 * JW11 Every encoder refuses (FLEET_E_INVALID_ARG, out unchanged) a struct
 *      its decoder would refuse: the same predicates check both
 *      directions, including a has_* flag that disagrees with its bytes,
 *      an unknown role or status, and a field set for a status that has
 *      none. test_encode_refusals.
 * JW12 Encodings are canonical: compact JSON, keys in the order above,
 *      absent optional fields omitted (no empty claims). decode(encode(m))
 *      equals m, and encode(decode(encode(m))) is the same bytes.
 *      test_request_roundtrip, test_body_roundtrip, test_envelope_roundtrip.
 * JW13 A free function wipes every byte field (OPENSSL_cleanse) before
 *      freeing it, then zeroes the struct; NULL or a zeroed struct is a
 *      no-op, so free after a failed decode is safe. test_free_twice (the
 *      wipe itself by construction).
 * JW14 fleet_join_csr_sha256: SHA-256 of the CSR's bytes as sent (the DER),
 *      64 lowercase hex and a NUL; an empty CSR or one over
 *      FLEET_JOIN_MAX_CSR is FLEET_E_INVALID_ARG. test_csr_sha256 (a known
 *      answer).
 */
#ifndef FLEET_JOIN_WIRE_H
#define FLEET_JOIN_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

#include "lib/attest_wire.h"

/* Caps: bytes after base64url decoding, bytes of a string, or entries. */
#define FLEET_JOIN_MAX_ATTESTOR 31
#define FLEET_JOIN_MAX_TOKEN 4201 /* FLEET_SEAL_MAX_SEALED */
#define FLEET_JOIN_MAX_ATTESTATION 65536
#define FLEET_JOIN_MAX_CSR 4096
#define FLEET_JOIN_MAX_MACS 16
#define FLEET_JOIN_UUID_LEN 36
#define FLEET_JOIN_MAX_ID 63 /* node_id, request_id */
#define FLEET_JOIN_MAX_CHAIN 4
#define FLEET_JOIN_MAX_CERT 8192
#define FLEET_JOIN_MAX_RETRY_AFTER 3600
#define FLEET_JOIN_MAX_PAYLOAD 65536
#define FLEET_JOIN_MAX_NOT_AFTER 253402300799LL /* 9999-12-31T23:59:59Z */
#define FLEET_JOIN_SHA256_HEX 64
#define FLEET_JOIN_KID_LEN 16
#define FLEET_JOIN_MAX_SIG 144 /* DER ECDSA, P-521's 139 and then some */
/* Whole messages (JW2): each above the largest its encoder writes. */
#define FLEET_JOIN_MAX_REQUEST (128u * 1024)
#define FLEET_JOIN_MAX_BODY (128u * 1024)
#define FLEET_JOIN_MAX_ENVELOPE (192u * 1024)

enum fleet_join_role {
	FLEET_JOIN_ROLE_NODE = 1,
	FLEET_JOIN_ROLE_SITE,
	FLEET_JOIN_ROLE_RAMDISK,
};

/* "node", "site", "ramdisk"; NULL for anything else. */
const char *fleet_join_role_name(enum fleet_join_role r);

/* The request (JW4, JW5). Strings are NUL-terminated; "" is absent. */
struct fleet_join_request {
	char attestor[FLEET_JOIN_MAX_ATTESTOR + 1]; /* "": join-token */
	bool has_token;
	struct fleet_wire_bytes token; /* sealed (lib/token_seal.h) */
	bool has_attestation;
	struct fleet_wire_bytes attestation; /* the attestor's evidence or answer */
	struct fleet_wire_bytes csr;         /* DER PKCS#10, required */
	enum fleet_join_role role;
	size_t n_macs;
	char macs[FLEET_JOIN_MAX_MACS][FLEET_WIRE_MAC_LEN + 1];
	char product_uuid[FLEET_JOIN_UUID_LEN + 1]; /* "": none claimed */
};

enum fleet_join_status {
	FLEET_JOIN_JOINED = 1,
	FLEET_JOIN_PENDING,
	FLEET_JOIN_CHALLENGE,
	FLEET_JOIN_DENIED,
};

/* A deferral's fields (JW7): pending uses request_id and
 * retry_after_seconds, challenge the other three; unused ones are zero. */
struct fleet_join_deferral {
	char request_id[FLEET_JOIN_MAX_ID + 1];
	unsigned retry_after_seconds;
	char attestor[FLEET_JOIN_MAX_ATTESTOR + 1];
	struct fleet_wire_bytes payload; /* attestor-specific challenge bytes */
	int64_t not_after;               /* Unix seconds; answers after it are refused */
};

/* The signed body (JW6, JW7). Only the status's own fields are set. */
struct fleet_join_response {
	enum fleet_join_status status;
	char csr_sha256[FLEET_JOIN_SHA256_HEX + 1]; /* all but denied */
	char node_id[FLEET_JOIN_MAX_ID + 1];        /* joined */
	size_t n_chain;                             /* joined: 1..4, leaf first */
	struct fleet_wire_bytes chain[FLEET_JOIN_MAX_CHAIN];
	struct fleet_join_deferral deferral; /* pending, challenge */
};

/* The outer message (JW8, JW9). */
struct fleet_join_envelope {
	struct fleet_wire_bytes body; /* the exact bytes signed */
	struct fleet_wire_bytes sig;  /* DER ECDSA over SHA-256(body) */
	char kid[FLEET_JOIN_KID_LEN + 1];
};

/* Each decode takes the whole message and fills *out (JW1); each encode
 * appends to out (JW11, JW12). */
fleet_err fleet_join_request_decode(const uint8_t *msg, size_t len,
				    struct fleet_join_request *out, struct fleet_errctx *ec);
fleet_err fleet_join_request_encode(const struct fleet_join_request *in, struct fleet_buf *out);
void fleet_join_request_free(struct fleet_join_request *m);

fleet_err fleet_join_body_decode(const uint8_t *body, size_t len, struct fleet_join_response *out,
				 struct fleet_errctx *ec);
fleet_err fleet_join_body_encode(const struct fleet_join_response *in, struct fleet_buf *out);
void fleet_join_response_free(struct fleet_join_response *m);

fleet_err fleet_join_envelope_decode(const uint8_t *msg, size_t len,
				     struct fleet_join_envelope *out, struct fleet_errctx *ec);
fleet_err fleet_join_envelope_encode(const struct fleet_join_envelope *in, struct fleet_buf *out);
void fleet_join_envelope_free(struct fleet_join_envelope *m);

/* The signing key's id from its certificate: SHA-256(SPKI DER)[0..8] in
 * lowercase hex (JW8). FLEET_E_INVALID_ARG without a certificate or key. */
fleet_err fleet_join_kid(X509 *cert, char kid[FLEET_JOIN_KID_LEN + 1]);

/* SHA-256 of the CSR's bytes, lowercase hex (JW14). */
fleet_err fleet_join_csr_sha256(const struct fleet_wire_bytes *csr,
				char hex[FLEET_JOIN_SHA256_HEX + 1]);

#endif
