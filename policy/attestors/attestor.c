/*
 * attestor.c: what every token-based attestor shares (attestor.h).
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
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

static void defer_pending(struct fleet_attest_result *out, const char *id, uint32_t retry)
{
	out->outcome = FLEET_ATTEST_DEFER;
	snprintf(out->deferral.request_id, sizeof(out->deferral.request_id), "%s", id);
	out->deferral.retry_after_seconds = retry;
}

fleet_err fleet_attest_join_request(struct fleet_store_tx *tx, const struct fleet_join_input *in,
				    const struct fleet_attest_request *q,
				    struct fleet_attest_result *out, bool *decided)
{
	struct fleet_store_join_request rq;
	fleet_err e = fleet_store_tx_join_request(tx, q->attestor, q->hw_key, &rq);
	*decided = false;
	if (e == FLEET_OK && !strcmp(rq.status, "approved")) {
		memcpy(out->request_done, rq.id, sizeof(out->request_done));
		return FLEET_OK;
	}
	*decided = true;
	if (e == FLEET_OK && !strcmp(rq.status, "denied"))
		return fleet_attest_refuse(out, q->denied_reason);
	if (e == FLEET_OK && !strcmp(rq.status, "pending")) {
		defer_pending(out, rq.id, q->retry_after_seconds);
		return FLEET_OK;
	}
	if (e != FLEET_OK && e != FLEET_STORE_E_NOT_FOUND)
		return e;
	/* None yet, or an expired, spent or ended one: a new pending request. */
	memset(&rq, 0, sizeof(rq));
	if ((e = fleet_attest_new_id("jr_", rq.id, sizeof(rq.id))))
		return e;
	snprintf(rq.attestor, sizeof(rq.attestor), "%s", q->attestor);
	snprintf(rq.site, sizeof(rq.site), "%s", q->site);
	snprintf(rq.hw_key, sizeof(rq.hw_key), "%s", q->hw_key);
	snprintf(rq.mac, sizeof(rq.mac), "%s", q->mac);
	snprintf(rq.product_uuid, sizeof(rq.product_uuid), "%s", in->req->product_uuid);
	memcpy(rq.csr_sha256, in->csr_sha256_hex, sizeof(rq.csr_sha256));
	snprintf(rq.status, sizeof(rq.status), "pending");
	rq.created_at = q->now;
	rq.expires_at = q->now + (int64_t)q->ttl_seconds;
	if ((e = fleet_store_tx_join_request_put(tx, &rq)))
		return e;
	defer_pending(out, rq.id, q->retry_after_seconds);
	return FLEET_OK;
}
