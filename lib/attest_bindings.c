/*
 * attest_bindings.c: the four values that tie the protocol's rounds
 * together (lib/attest_wire.h lists them). Both sides call these, so the
 * client and fleetd cannot drift apart on one byte of them.
 *
 * The labels end in a NUL so that no label is a prefix of another
 * message's label followed by attacker-chosen bytes.
 */
#include "lib/attest_wire.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

static const char answer_label[] = "fleetd answer v1"; /* sizeof counts the NUL */
static const char confirm_label[] = "fleetd confirm v1";

static fleet_err sha256(const void *p, size_t n, uint8_t out[32])
{
	return fleet_hash(FLEET_ALG_SHA256, p, n, out);
}

static bool bytes_ok(const struct fleet_wire_bytes *b)
{
	return b && (b->data || b->len == 0);
}

fleet_err fleet_wire_quote_qualifier(const uint8_t nonce[FLEET_WIRE_ID_LEN],
				     const struct fleet_wire_bytes *report, uint8_t out[32])
{
	uint8_t buf[FLEET_WIRE_ID_LEN + 32];
	fleet_err e;

	if (!nonce || !bytes_ok(report) || !out)
		return FLEET_E_INVALID_ARG;
	memcpy(buf, nonce, FLEET_WIRE_ID_LEN);
	e = sha256(report->data, report->len, buf + FLEET_WIRE_ID_LEN);
	if (e == FLEET_OK)
		e = sha256(buf, sizeof(buf), out);
	OPENSSL_cleanse(buf, sizeof(buf));
	return e;
}

fleet_err fleet_wire_certify_qualifier(const struct fleet_wire_bytes *request, uint8_t out[32])
{
	if (!bytes_ok(request) || !out)
		return FLEET_E_INVALID_ARG;
	return sha256(request->data, request->len, out);
}

fleet_err fleet_wire_answer_proof(const uint8_t secret_rsa[FLEET_WIRE_ID_LEN],
				  const uint8_t *secret_ecc, const uint8_t session[FLEET_WIRE_ID_LEN],
				  const struct fleet_wire_bytes *quote_attest,
				  uint8_t out[FLEET_WIRE_ID_LEN])
{
	uint8_t key[2 * FLEET_WIRE_ID_LEN];
	uint8_t msg[sizeof(answer_label) + FLEET_WIRE_ID_LEN + 32];
	size_t key_len = FLEET_WIRE_ID_LEN;
	unsigned int mac_len = 0;
	fleet_err e;

	if (!secret_rsa || !session || !bytes_ok(quote_attest) || !out)
		return FLEET_E_INVALID_ARG;
	memcpy(key, secret_rsa, FLEET_WIRE_ID_LEN);
	if (secret_ecc) {
		memcpy(key + FLEET_WIRE_ID_LEN, secret_ecc, FLEET_WIRE_ID_LEN);
		key_len += FLEET_WIRE_ID_LEN;
	}
	memcpy(msg, answer_label, sizeof(answer_label));
	memcpy(msg + sizeof(answer_label), session, FLEET_WIRE_ID_LEN);
	e = sha256(quote_attest->data, quote_attest->len,
		   msg + sizeof(answer_label) + FLEET_WIRE_ID_LEN);
	if (e == FLEET_OK &&
	    (!HMAC(EVP_sha256(), key, (int)key_len, msg, sizeof(msg), out, &mac_len) ||
	     mac_len != FLEET_WIRE_ID_LEN))
		e = FLEET_E_CRYPTO;
	OPENSSL_cleanse(key, sizeof(key));
	if (e != FLEET_OK)
		OPENSSL_cleanse(out, FLEET_WIRE_ID_LEN);
	return e;
}

fleet_err fleet_wire_confirm_statement_hashes(const uint8_t session[FLEET_WIRE_ID_LEN],
					      const uint8_t lak_cert_sha256[32],
					      const uint8_t ldevid_cert_sha256[32],
					      struct fleet_buf *out)
{
	if (!session || !lak_cert_sha256 || !ldevid_cert_sha256 || !out)
		return FLEET_E_INVALID_ARG;
	fb_put(out, confirm_label, sizeof(confirm_label));
	fb_put(out, session, FLEET_WIRE_ID_LEN);
	fb_put(out, lak_cert_sha256, 32);
	fb_put(out, ldevid_cert_sha256, 32);
	return fb_err(out);
}

fleet_err fleet_wire_confirm_statement(const uint8_t session[FLEET_WIRE_ID_LEN],
				       const struct fleet_wire_bytes *lak_cert,
				       const struct fleet_wire_bytes *ldevid_cert,
				       struct fleet_buf *out)
{
	uint8_t lak[32], ldevid[32];
	fleet_err e;

	if (!session || !bytes_ok(lak_cert) || !bytes_ok(ldevid_cert) || !out)
		return FLEET_E_INVALID_ARG;
	if ((e = sha256(lak_cert->data, lak_cert->len, lak)) != FLEET_OK ||
	    (e = sha256(ldevid_cert->data, ldevid_cert->len, ldevid)) != FLEET_OK)
		return e;
	return fleet_wire_confirm_statement_hashes(session, lak, ldevid, out);
}
