/*
 * attestor.c: what every token-based attestor shares (attestor.h).
 */
#include "policy/attestors/attestor.h"

#include <string.h>

#include <openssl/rand.h>

const char *const fleet_attestor_ids[] = {"join-token", "x509pop", "provisioned", "discovery",
					 "tpm",	       "cloud-iid",   NULL};

fleet_err fleet_attest_refuse(struct fleet_attest_result *out, const char *reason)
{
	out->outcome = FLEET_ATTEST_REFUSE;
	out->reason = reason;
	return FLEET_OK;
}

fleet_err fleet_attest_token(struct fleet_store_tx *tx, const struct fleet_join_input *in,
			     const char *role, struct fleet_attest_result *out, bool *refused)
{
	const char *reason = NULL;
	*refused = true;
	if (!in->has_token) {
		fleet_attest_refuse(out, "token-missing");
		return FLEET_OK;
	}
	fleet_err e = fleet_store_tx_token(tx, in->token.id, in->token.secret, role, false,
					   &out->token, &reason);
	if (e == FLEET_STORE_E_STATE && reason) {
		fleet_attest_refuse(out, reason);
		return FLEET_OK;
	}
	if (e)
		return e;
	*refused = false;
	out->token_based = true;
	memcpy(out->pool, out->token.pool, sizeof(out->pool));
	memcpy(out->site, out->token.site, sizeof(out->site));
	return FLEET_OK;
}

bool fleet_attest_claims_mac(const struct fleet_join_request *req, const char *mac)
{
	for (size_t i = 0; i < req->n_macs; i++)
		if (strcmp(req->macs[i], mac) == 0)
			return true;
	return false;
}

fleet_err fleet_attest_new_id(const char *prefix, char *out, size_t cap)
{
	static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	uint8_t r[26];
	size_t n = strlen(prefix);
	if (n + sizeof(r) + 1 > cap)
		return FLEET_E_INVALID_ARG;
	if (RAND_bytes(r, sizeof(r)) != 1)
		return FLEET_E_CRYPTO;
	memcpy(out, prefix, n);
	/* 252 = 7 * 36: bytes at or above it would bias the alphabet, so
	 * they are drawn again (130 bits of id, as a token's). */
	for (size_t i = 0; i < sizeof(r); i++) {
		while (r[i] >= 252)
			if (RAND_bytes(&r[i], 1) != 1)
				return FLEET_E_CRYPTO;
		out[n + i] = alphabet[r[i] % 36];
	}
	out[n + sizeof(r)] = '\0';
	return FLEET_OK;
}
