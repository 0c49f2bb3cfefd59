/*
 * ldevid_proof.c: an LDevID key proven by an AK (lib/attest_wire.h,
 * fleet_ldevid_proof_verify). One check for the admission's intake and a
 * running node's renewal, so the two cannot accept different keys.
 */
#include "lib/attest_wire.h"

#include <string.h>

#include <openssl/crypto.h>

fleet_err fleet_ldevid_proof_verify(const struct fleet_ldevid_proof *p, const TPMT_PUBLIC *ak,
				    const char *serial, TPM2B_PUBLIC *key, uint8_t spki[32],
				    const char **reason)
{
	struct fleet_ldevid_request req;
	uint8_t qual[32];
	fleet_err e;

	if (!p || !p->public_area || !p->request || !p->certify_attest || !p->certify_sig || !ak ||
	    !serial || !key || !spki)
		return FLEET_E_INVALID_ARG;
	if (fleet_tpm_public_parse(p->public_area->data, p->public_area->len, key, NULL) !=
	    FLEET_OK)
		return fleet_refuse(reason, "ldevid-public-malformed", FLEET_E_MALFORMED);
	if (fleet_ldevid_request_parse(p->request, &req, NULL) != FLEET_OK)
		return fleet_refuse(reason, "ldevid-request-malformed", FLEET_E_MALFORMED);
	if (strcmp(req.serial, serial) != 0)
		return fleet_refuse(reason, "ldevid-request-serial", FLEET_E_VERIFY);
	if ((e = fleet_wire_certify_qualifier(p->request, qual)) != FLEET_OK)
		return fleet_refuse(reason, "ldevid-request-malformed", e);
	struct fleet_certify_check c = {
		.ak = ak,
		.attest = p->certify_attest->data,
		.attest_len = p->certify_attest->len,
		.sig = p->certify_sig->data,
		.sig_len = p->certify_sig->len,
		.extra_data = qual,
		.extra_data_len = sizeof(qual),
		.object = &key->publicArea,
	};
	if ((e = fleet_certify_verify(&c, spki, reason)) != FLEET_OK)
		return e;
	/* fleet_certify_verify lets a restricted key pass (an AK may certify
	 * an AK); an LDevID signs whatever its owner asks, so it must not be
	 * restricted. Refused here, before anything is spent on it, rather
	 * than at issue time after a verdict (found in review). */
	if (key->publicArea.objectAttributes & TPMA_OBJECT_RESTRICTED)
		return fleet_refuse(reason, "ldevid-restricted", FLEET_E_VERIFY);
	if (CRYPTO_memcmp(spki, req.spki_sha256, 32) != 0)
		return fleet_refuse(reason, "ldevid-request-key", FLEET_E_VERIFY);
	return FLEET_OK;
}
