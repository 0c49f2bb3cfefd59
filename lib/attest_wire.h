/*
 * attest_wire.h: the attestation protocol between tink-attest (HookOS) and
 * fleetd, one definition for both sides. docs/protocol.md explains every
 * binding; this file is the format.
 *
 * JSON over HTTPS, POST, Content-Type application/json. Every message has
 * "v": 1. Binary fields are base64url without padding. Every field has a cap
 * checked on decode, before anything else looks at it; unknown fields, a
 * wrong version, a missing required field, a duplicate key, bad base64url
 * or a value over its cap make the whole message malformed
 * (FLEET_E_MALFORMED / FLEET_E_TOO_LARGE, with the field named in ec).
 *
 *   POST /v1/attest/intake   fleet_wire_intake   -> fleet_wire_intake_reply
 *   POST /v1/attest/answer   fleet_wire_answer   -> fleet_wire_verdict
 *   POST /v1/attest/confirm  fleet_wire_confirm  -> fleet_wire_confirm_reply
 *
 * Bindings (computed by both sides with the functions at the end):
 *   certify extraData = SHA-256(ldevid_request bytes)
 *   quote extraData   = SHA-256(nonce || SHA-256(network_report bytes))
 *   proof             = HMAC-SHA-256(secret_rsa || secret_ecc,
 *                         "fleetd answer v1\0" || session || SHA-256(quote attest))
 *   confirm statement = "fleetd confirm v1\0" || session
 *                         || SHA-256(LAK cert DER) || SHA-256(LDevID cert DER),
 *                       signed (TPMT_SIGNATURE, ECDSA SHA-256) by the LDevID key
 */
#ifndef FLEET_ATTEST_WIRE_H
#define FLEET_ATTEST_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"
#include "lib/tpm.h"

#define FLEET_WIRE_VERSION 1

/*
 * Decoding rules beyond the caps (lib/attest_wire.c enforces them, so both
 * sides hold the same reading):
 *  - caps are bytes: after base64url decoding, or of UTF-8 for strings;
 *  - a binary field is never empty; session, nonce and proof are exactly
 *    FLEET_WIRE_ID_LEN bytes; base64url has exactly one spelling (no
 *    padding, no '+' or '/', unused low bits zero);
 *  - strings hold no C0 control, DEL or C1 control (U+0080..U+009F);
 *    "serial" is at least one byte;
 *  - "ek_rsa", "ek_ecc", "credential_ecc" and "provision" are required
 *    keys whose value may be null ("ek_rsa": null decodes; fleetd then
 *    refuses it as ek-rsa-missing);
 *  - a "pending" or "refused" reply carries "v" and "status" only;
 *  - "deadline" is UTC, "YYYY-MM-DDThh:mm:ssZ", a date that exists;
 *  - "pcr_selection" must parse with fleet_pcr_selection_parse;
 *  - PCR keys are "0".."23" without leading zeros, digests lowercase hex
 *    of the bank's size, each bank a non-empty object.
 */

/* Caps (bytes after base64url decoding, or bytes of UTF-8 for strings). */
#define FLEET_WIRE_MAX_BODY (2u * 1024 * 1024) /* whole request or reply */
#define FLEET_WIRE_MAX_SERIAL 64
#define FLEET_WIRE_MAX_UUID 64
#define FLEET_WIRE_MAX_BIOS 128
#define FLEET_WIRE_MAX_MACS 32
#define FLEET_WIRE_MAC_LEN 17 /* "aa:bb:cc:dd:ee:ff", lowercase */
#define FLEET_WIRE_MAX_REPORT 4096 /* network report */
#define FLEET_WIRE_MAX_LLDP_FIELD 255
#define FLEET_WIRE_MAX_TPM_STRUCT 1024 /* TPM2B_PUBLIC, TPMS_ATTEST, signatures, blobs */
#define FLEET_WIRE_MAX_CERT 8192
#define FLEET_WIRE_MAX_REQUEST 2048 /* the LDevID request */
#define FLEET_WIRE_MAX_EVENTLOG (1024u * 1024)
#define FLEET_WIRE_MAX_SELECTION 128
#define FLEET_WIRE_ID_LEN 32     /* session id, nonce, proof, secrets */

/* Bytes owned by the structure that holds them (malloc'd; freed by the
 * structure's free function). */
struct fleet_wire_bytes {
	uint8_t *data;
	size_t len;
};

/* ---- round 1: intake ---------------------------------------------------- */

struct fleet_wire_ek {
	bool present;                 /* false: the machine has no such EK */
	struct fleet_wire_bytes pub;  /* marshaled TPM2B_PUBLIC */
	struct fleet_wire_bytes cert; /* the certificate as read from NV */
};

/*
 * {"v":1, "serial":"..", "product_uuid":"..", "bios_version":"..",
 *  "macs":["aa:bb:..", ..], "network_report":"<b64u>",
 *  "ek_rsa":{"public":"<b64u>","cert":"<b64u>"}, "ek_ecc":{..}|null,
 *  "ak_public":"<b64u>",
 *  "ldevid":{"public":"<b64u>","request":"<b64u>",
 *            "certify_attest":"<b64u>","certify_signature":"<b64u>"}}
 * Strings must be valid UTF-8 without control characters.
 */
struct fleet_wire_intake {
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	char product_uuid[FLEET_WIRE_MAX_UUID + 1];
	char bios_version[FLEET_WIRE_MAX_BIOS + 1];
	size_t n_macs;
	char macs[FLEET_WIRE_MAX_MACS][FLEET_WIRE_MAC_LEN + 1];
	/* The exact bytes the quote binds (fleet_network_report_parse reads
	 * them): a JSON object {"chassis_id","port_id","system_name"}. */
	struct fleet_wire_bytes network_report;
	struct fleet_wire_ek ek_rsa;
	struct fleet_wire_ek ek_ecc;
	struct fleet_wire_bytes ak_public;
	struct fleet_wire_bytes ldevid_public;
	/* The exact bytes certify binds: {"v":1,"serial":"..","spki_sha256":"<64 hex>"} */
	struct fleet_wire_bytes ldevid_request;
	struct fleet_wire_bytes ldevid_certify_attest;
	struct fleet_wire_bytes ldevid_certify_sig;
};

struct fleet_network_report {
	char chassis_id[FLEET_WIRE_MAX_LLDP_FIELD + 1];
	char port_id[FLEET_WIRE_MAX_LLDP_FIELD + 1];
	char system_name[FLEET_WIRE_MAX_LLDP_FIELD + 1];
};

struct fleet_ldevid_request {
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	uint8_t spki_sha256[32];
};

enum fleet_wire_status {
	FLEET_WIRE_CHALLENGE = 1, /* intake reply: go on to round 2 */
	FLEET_WIRE_PENDING,       /* no decision yet (unknown serial, unapproved binding) */
	FLEET_WIRE_REFUSED,       /* one generic refusal; the reason stays on the server */
	FLEET_WIRE_ADMITTED,      /* verdict: certificates follow */
	FLEET_WIRE_CONFIRMED,     /* confirm reply */
};

struct fleet_wire_credential {
	bool present;
	struct fleet_wire_bytes id_object;  /* marshaled TPM2B_ID_OBJECT */
	struct fleet_wire_bytes enc_secret; /* marshaled TPM2B_ENCRYPTED_SECRET */
};

/*
 * {"v":1,"status":"challenge","session":"<b64u 32>","nonce":"<b64u 32>",
 *  "credential_rsa":{"id_object":..,"encrypted_secret":..},
 *  "credential_ecc":{..}|null, "pcr_selection":"sha256:0,1,2,3,4,5,7",
 *  "deadline":"2026-11-30T06:00:00Z"}
 * or {"v":1,"status":"pending"} / {"v":1,"status":"refused"}.
 */
struct fleet_wire_intake_reply {
	enum fleet_wire_status status;
	uint8_t session[FLEET_WIRE_ID_LEN];
	uint8_t nonce[FLEET_WIRE_ID_LEN];
	struct fleet_wire_credential cred_rsa;
	struct fleet_wire_credential cred_ecc;
	char pcr_selection[FLEET_WIRE_MAX_SELECTION + 1]; /* tpm2-tools syntax */
	time_t deadline;
};

/* ---- round 2: answer ---------------------------------------------------- */

/*
 * {"v":1,"session":"<b64u>","proof":"<b64u 32>",
 *  "quote_attest":"<b64u>","quote_signature":"<b64u>",
 *  "pcrs":{"sha256":{"0":"<hex>",..}}, "event_log":"<b64u>",
 *  "network_report":"<b64u>"}
 * pcrs come out in selection order: banks by algorithm id, PCRs ascending.
 */
struct fleet_wire_answer {
	uint8_t session[FLEET_WIRE_ID_LEN];
	uint8_t proof[FLEET_WIRE_ID_LEN];
	struct fleet_wire_bytes quote_attest;
	struct fleet_wire_bytes quote_sig;
	size_t n_pcrs;
	struct fleet_pcr_value pcrs[4 * FLEET_PCR_COUNT];
	struct fleet_wire_bytes event_log;
	struct fleet_wire_bytes network_report;
};

/*
 * {"v":1,"status":"admitted","lak_cert":"<b64u DER>","ldevid_cert":"<b64u DER>",
 *  "ca_cert":"<b64u DER>"} or {"v":1,"status":"pending"|"refused"}.
 */
struct fleet_wire_verdict {
	enum fleet_wire_status status;
	struct fleet_wire_bytes lak_cert;
	struct fleet_wire_bytes ldevid_cert;
	struct fleet_wire_bytes ca_cert;
};

/* ---- round 3: confirm --------------------------------------------------- */

/* {"v":1,"session":"<b64u>","signature":"<b64u TPMT_SIGNATURE>"} */
struct fleet_wire_confirm {
	uint8_t session[FLEET_WIRE_ID_LEN];
	struct fleet_wire_bytes signature;
};

/*
 * {"v":1,"status":"confirmed","provision":null} or {"v":1,"status":"refused"}.
 * "provision", when not null, is {"id_object":"<b64u>","encrypted_secret":
 * "<b64u>","proof":"<b64u>"} (proof at most FLEET_WIRE_MAX_CERT bytes) and
 * carries the configuration code wrapped to the TPM and the
 * proof of a passing check once fleetd provisions (a later protocol
 * revision fills it; v1 clients accept null and an object they store).
 */
struct fleet_wire_confirm_reply {
	enum fleet_wire_status status;
	bool has_provision;
	struct fleet_wire_credential code; /* the 32-byte code, MakeCredential'd */
	struct fleet_wire_bytes proof;     /* opaque to the client; written to disk */
};

/* ---- encode / decode ---------------------------------------------------- */

/* Each decode takes the whole body, fills *out (zeroed first) and on error
 * names the field in ec. Each encode appends JSON to out. */
fleet_err fleet_wire_intake_decode(const uint8_t *body, size_t len, struct fleet_wire_intake *out,
				   struct fleet_errctx *ec);
fleet_err fleet_wire_intake_encode(const struct fleet_wire_intake *in, struct fleet_buf *out);
void fleet_wire_intake_free(struct fleet_wire_intake *m);

fleet_err fleet_wire_intake_reply_decode(const uint8_t *body, size_t len,
					 struct fleet_wire_intake_reply *out,
					 struct fleet_errctx *ec);
fleet_err fleet_wire_intake_reply_encode(const struct fleet_wire_intake_reply *in,
					 struct fleet_buf *out);
void fleet_wire_intake_reply_free(struct fleet_wire_intake_reply *m);

fleet_err fleet_wire_answer_decode(const uint8_t *body, size_t len, struct fleet_wire_answer *out,
				   struct fleet_errctx *ec);
fleet_err fleet_wire_answer_encode(const struct fleet_wire_answer *in, struct fleet_buf *out);
void fleet_wire_answer_free(struct fleet_wire_answer *m);

fleet_err fleet_wire_verdict_decode(const uint8_t *body, size_t len, struct fleet_wire_verdict *out,
				    struct fleet_errctx *ec);
fleet_err fleet_wire_verdict_encode(const struct fleet_wire_verdict *in, struct fleet_buf *out);
void fleet_wire_verdict_free(struct fleet_wire_verdict *m);

fleet_err fleet_wire_confirm_decode(const uint8_t *body, size_t len, struct fleet_wire_confirm *out,
				    struct fleet_errctx *ec);
fleet_err fleet_wire_confirm_encode(const struct fleet_wire_confirm *in, struct fleet_buf *out);
void fleet_wire_confirm_free(struct fleet_wire_confirm *m);

fleet_err fleet_wire_confirm_reply_decode(const uint8_t *body, size_t len,
					  struct fleet_wire_confirm_reply *out,
					  struct fleet_errctx *ec);
fleet_err fleet_wire_confirm_reply_encode(const struct fleet_wire_confirm_reply *in,
					  struct fleet_buf *out);
void fleet_wire_confirm_reply_free(struct fleet_wire_confirm_reply *m);

/* The two small JSON documents carried as exact bytes. */
fleet_err fleet_network_report_parse(const struct fleet_wire_bytes *b,
				     struct fleet_network_report *out, struct fleet_errctx *ec);
fleet_err fleet_network_report_encode(const struct fleet_network_report *in,
				      struct fleet_buf *out);
fleet_err fleet_ldevid_request_parse(const struct fleet_wire_bytes *b,
				     struct fleet_ldevid_request *out, struct fleet_errctx *ec);
fleet_err fleet_ldevid_request_encode(const struct fleet_ldevid_request *in,
				      struct fleet_buf *out);

/* The text rule every string on the wire obeys: no C0 control characters,
 * no DEL, no C1 (U+0080..U+009F). A client checks what it will send with
 * this, so what it accepts locally and what it can encode never differ. */
bool fleet_wire_text_ok(const char *s, size_t n);

/* base64url without padding; decode refuses padding, other alphabets and
 * anything over max bytes. */
fleet_err fleet_b64url_encode(const uint8_t *in, size_t len, struct fleet_buf *out);
fleet_err fleet_b64url_decode(const char *in, size_t inlen, size_t max, struct fleet_wire_bytes *out);
/* Standard base64 with padding, in its one canonical spelling (what
 * Kubernetes' JSON holds for bytes: a CSR's request, its certificate). */
fleet_err fleet_b64std_decode(const char *in, size_t inlen, size_t max, struct fleet_wire_bytes *out);

/* ---- the bindings ------------------------------------------------------- */

/* SHA-256(nonce || SHA-256(report)): the quote's qualifying data. */
fleet_err fleet_wire_quote_qualifier(const uint8_t nonce[FLEET_WIRE_ID_LEN],
				     const struct fleet_wire_bytes *report, uint8_t out[32]);
/* SHA-256(request): the certify's qualifying data. */
fleet_err fleet_wire_certify_qualifier(const struct fleet_wire_bytes *request, uint8_t out[32]);

/*
 * An LDevID key proven by an AK, as the intake and a renewal receive it
 * (lib/ldevid_proof.c; fleetd/attest/attest_server.h, fleetd/reattest RN6):
 * public parses as a TPM2B_PUBLIC ("ldevid-public-malformed"); request is
 * an LDevID request document ("ldevid-request-malformed") naming serial
 * ("ldevid-request-serial"); the certify is TPM2_Certify of that key by ak
 * over fleet_wire_certify_qualifier(request) (fleet_certify_verify's
 * reasons: "signature-invalid" when another key signed, "attest-extradata"
 * for another request, "certify-name", "key-not-fixedtpm", ...); the key is
 * not restricted ("ldevid-restricted": an LDevID signs whatever its owner
 * asks); and the request's SPKI hash is the key's ("ldevid-request-key").
 * On FLEET_OK *key and spki (its SubjectPublicKeyInfo's SHA-256) are set.
 * Refusals are FLEET_E_VERIFY or FLEET_E_MALFORMED with *reason set.
 */
struct fleet_ldevid_proof {
	const struct fleet_wire_bytes *public_area;
	const struct fleet_wire_bytes *request;
	const struct fleet_wire_bytes *certify_attest;
	const struct fleet_wire_bytes *certify_sig;
};
fleet_err fleet_ldevid_proof_verify(const struct fleet_ldevid_proof *p, const TPMT_PUBLIC *ak,
				    const char *serial, TPM2B_PUBLIC *key, uint8_t spki[32],
				    const char **reason);
/* The answer's proof of both activated secrets (secret_ecc NULL when the
 * machine has no ECC EK). */
fleet_err fleet_wire_answer_proof(const uint8_t secret_rsa[FLEET_WIRE_ID_LEN],
				  const uint8_t *secret_ecc, const uint8_t session[FLEET_WIRE_ID_LEN],
				  const struct fleet_wire_bytes *quote_attest,
				  uint8_t out[FLEET_WIRE_ID_LEN]);
/* The statement the LDevID key signs in round 3. */
fleet_err fleet_wire_confirm_statement(const uint8_t session[FLEET_WIRE_ID_LEN],
				       const struct fleet_wire_bytes *lak_cert,
				       const struct fleet_wire_bytes *ldevid_cert,
				       struct fleet_buf *out);
/* The same statement from the two certificates' SHA-256 hashes (what
 * fleetd keeps in its session instead of the DER). */
fleet_err fleet_wire_confirm_statement_hashes(const uint8_t session[FLEET_WIRE_ID_LEN],
					      const uint8_t lak_cert_sha256[32],
					      const uint8_t ldevid_cert_sha256[32],
					      struct fleet_buf *out);

#endif
