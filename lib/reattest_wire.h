/*
 * reattest_wire.h: the hourly re-check of a running node (tpm-reattest ->
 * fleetd), in the style of lib/attest_wire.h and with its readers: JSON over
 * HTTPS, POST, "v": 1, base64url without padding, every field capped on
 * decode, unknown or duplicate keys, a wrong version, a missing field, bad
 * base64url or a value over its cap refused as a whole (FLEET_E_MALFORMED /
 * FLEET_E_TOO_LARGE, the field named in ec).
 *
 *   POST /v1/reattest/nonce  fleet_reattest_nonce_req -> fleet_reattest_nonce_reply
 *     {"v":1,"lak_cert":"<b64u DER>"}
 *     -> {"v":1,"nonce":"<b64u 32 bytes>","expires_in":60}
 *   POST /v1/reattest/check  fleet_reattest_check     -> fleet_reattest_check_reply
 *     {"v":1,"lak_cert":"<b64u DER>","nonce":"<b64u 32>",
 *      "quote":{"attest":"<b64u TPMS_ATTEST>","signature":"<b64u TPMT_SIGNATURE>"},
 *      "eventlog":"<b64u>","bios_version":"..","report":"<b64u>",
 *      "report_signature":"<b64u TPMT_SIGNATURE>"}
 *     -> {"v":1,"status":"pass"|"refused"}
 *   POST /v1/reattest/renew  fleet_reattest_check (with "ldevid") -> fleet_reattest_check_reply
 *     the check's fields and
 *     "ldevid":{"public":"<b64u TPM2B_PUBLIC>","request":"<b64u>",
 *               "certify_attest":"<b64u TPMS_ATTEST>","certify_signature":"<b64u>"}
 *     -> {"v":1,"status":"renewed","lak_cert":"<b64u DER>","ldevid_cert":"<b64u DER>"}
 *      | {"v":1,"status":"pass"}     the check passed, the renewal was refused
 *      | {"v":1,"status":"refused"}  the check was refused
 *
 * Bindings:
 *   quote extraData  = SHA-256(nonce || SHA-256(report))
 *                      (fleet_wire_quote_qualifier, the admission's binding)
 *   report_signature = TPMT_SIGNATURE by the LAK's key over SHA-256(report)
 *   certify          = TPM2_Certify of the next LDevID key by the LAK with
 *                      extraData SHA-256(request) (fleet_wire_certify_qualifier);
 *                      request is the admission's LDevID request document
 *                      {"v":1,"serial":"..","spki_sha256":".."}
 *                      (fleet_ldevid_request_parse), naming the new key
 *                      (a restricted key signs a digest the TPM hashed
 *                      itself: TPM2_Hash's ticket, then TPM2_Sign)
 * The report is the admission's network report document
 * (fleet_network_report_parse); the reply is one generic refusal, the
 * reason stays on the server. No PCR values travel: fleetd replays the
 * event log and checks the replay against the quote's digest.
 */
#ifndef FLEET_REATTEST_WIRE_H
#define FLEET_REATTEST_WIRE_H

#include <stdint.h>

#include "lib/attest_wire.h"

#define FLEET_REATTEST_NONCE_TTL 60      /* seconds a nonce is valid */
#define FLEET_REATTEST_MAX_EXPIRES 3600  /* the largest expires_in a client accepts */

/* {"v":1,"lak_cert":"<b64u>"}: lak_cert 1..FLEET_WIRE_MAX_CERT bytes. */
struct fleet_reattest_nonce_req {
	struct fleet_wire_bytes lak_cert;
};

/* {"v":1,"nonce":"<b64u 32>","expires_in":1..3600} */
struct fleet_reattest_nonce_reply {
	uint8_t nonce[FLEET_WIRE_ID_LEN];
	unsigned expires_in;
	/* What to quote: the class profile's bank and PCRs, in tpm2-tools
	 * syntax as the intake reply says it ("sha256:0,1,2,3,4,5,7"), so the
	 * client never guesses a selection the check would refuse. */
	char pcr_selection[FLEET_WIRE_MAX_SELECTION + 1];
};

/* bios_version 0..FLEET_WIRE_MAX_BIOS bytes of text (fleet_wire_text_ok;
 * "" when the machine has none); every binary field is required and never
 * empty: lak_cert to FLEET_WIRE_MAX_CERT, quote parts and report_signature
 * to FLEET_WIRE_MAX_TPM_STRUCT, eventlog to FLEET_WIRE_MAX_EVENTLOG, report
 * to FLEET_WIRE_MAX_REPORT. */
struct fleet_reattest_check {
	struct fleet_wire_bytes lak_cert;
	uint8_t nonce[FLEET_WIRE_ID_LEN];
	struct fleet_wire_bytes quote_attest;
	struct fleet_wire_bytes quote_sig;
	struct fleet_wire_bytes eventlog;
	char bios_version[FLEET_WIRE_MAX_BIOS + 1];
	struct fleet_wire_bytes report;
	struct fleet_wire_bytes report_sig;
	/* A renewal's next LDevID key ("ldevid"; absent in an hourly check):
	 * public and both certify parts to FLEET_WIRE_MAX_TPM_STRUCT, request
	 * to FLEET_WIRE_MAX_REQUEST, each required and never empty. */
	bool has_renew;
	struct fleet_wire_bytes renew_public;
	struct fleet_wire_bytes renew_request;
	struct fleet_wire_bytes renew_certify_attest;
	struct fleet_wire_bytes renew_certify_sig;
};

enum fleet_reattest_status {
	FLEET_REATTEST_PASS = 1,
	FLEET_REATTEST_REFUSED,
	FLEET_REATTEST_RENEWED,
};

/* {"v":1,"status":"pass"|"refused"}, or "renewed" with both certificates
 * (1..FLEET_WIRE_MAX_CERT bytes each; present only then). */
struct fleet_reattest_check_reply {
	enum fleet_reattest_status status;
	struct fleet_wire_bytes lak_cert;
	struct fleet_wire_bytes ldevid_cert;
};

/* Each decode takes the whole body, fills *out (zeroed first; freed and
 * zeroed again on error) and names the field in ec; each encode appends
 * JSON to out (FLEET_E_INVALID_ARG for a value the decoder would refuse). */
fleet_err fleet_reattest_nonce_req_decode(const uint8_t *body, size_t len,
					  struct fleet_reattest_nonce_req *out,
					  struct fleet_errctx *ec);
fleet_err fleet_reattest_nonce_req_encode(const struct fleet_reattest_nonce_req *in,
					  struct fleet_buf *out);
void fleet_reattest_nonce_req_free(struct fleet_reattest_nonce_req *m);

fleet_err fleet_reattest_nonce_reply_decode(const uint8_t *body, size_t len,
					    struct fleet_reattest_nonce_reply *out,
					    struct fleet_errctx *ec);
fleet_err fleet_reattest_nonce_reply_encode(const struct fleet_reattest_nonce_reply *in,
					    struct fleet_buf *out);
void fleet_reattest_nonce_reply_free(struct fleet_reattest_nonce_reply *m);

fleet_err fleet_reattest_check_decode(const uint8_t *body, size_t len,
				      struct fleet_reattest_check *out, struct fleet_errctx *ec);
fleet_err fleet_reattest_check_encode(const struct fleet_reattest_check *in,
				      struct fleet_buf *out);
void fleet_reattest_check_free(struct fleet_reattest_check *m);

fleet_err fleet_reattest_check_reply_decode(const uint8_t *body, size_t len,
					    struct fleet_reattest_check_reply *out,
					    struct fleet_errctx *ec);
fleet_err fleet_reattest_check_reply_encode(const struct fleet_reattest_check_reply *in,
					    struct fleet_buf *out);
void fleet_reattest_check_reply_free(struct fleet_reattest_check_reply *m);

#endif
