/*
 * x509pop.c: the x509pop attestor (spec 001 "x509pop"): a node whose
 * certificate expired while it was offline re-joins as itself, by its last
 * certificate chain and an ES256 proof by that certificate's key over the
 * new CSR's hash, its node id and the client's time (lib/join_evidence.h).
 *
 * Refused unless, in this order:
 *   the evidence decodes                                  x509pop-malformed
 *   the role asked is node or site                        x509pop-role
 *   the proof was not used before                         x509pop-replayed
 *   the leaf is byte for byte a node_certs row            cert-unknown
 *     not revoked                                         cert-revoked
 *     of the node's current identity generation           cert-generation
 *     the node not retired                                node-retired
 *   the row's node is the evidence's nodeId                x509pop-node-id
 *   the certificate's role is the requested one            x509pop-role
 *   it expired at most grace_seconds ago                   x509pop-expired
 *   clientTime within window_seconds of the store's clock  x509pop-client-time
 *   the node's newest certificate is min_interval_seconds
 *     old                                                  x509pop-too-soon
 *   the signature verifies under the leaf's key            x509pop-signature
 *   the leaf names no AK (urn:bc:tpm-ak:, or any statement
 *     fleetd could not carry into the new certificate)     x509pop-key-statement
 *
 * The replay record is attestation_uses (SHA-256 of the signed bytes, kept
 * window_seconds past clientTime), so it holds across restarts and every
 * replica of the store, where the spec's default is a 10,000-entry cache
 * in memory; the pass prunes it. A successful re-join raises the node's
 * generation, so the old leaf is refused cert-generation from then on.
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/ca.h"
#include "lib/hex.h"
#include "lib/tpm_alg.h"
#include "lib/join_evidence.h"
#include "lib/tpm_join_evidence.h"

const char *const fleet_attestor_x509pop_reasons[] = {
	"x509pop-malformed", "cert-unknown",  "cert-revoked",        "cert-generation",
	"node-retired",      "x509pop-node-id", "x509pop-role",      "x509pop-expired",
	"x509pop-client-time", "x509pop-too-soon", "x509pop-signature", "x509pop-replayed",
	"x509pop-key-statement", NULL};

fleet_err fleet_attestor_x509pop_verify(const struct fleet_attestor *a, struct fleet_store_tx *tx,
					const struct fleet_join_input *in,
					struct fleet_attest_result *out)
{
	const struct fleet_x509pop_config *cfg = a->cfg;
	struct fleet_x509pop_evidence ev;
	struct fleet_store_node node;
	struct fleet_node_identity ident;
	struct fleet_errctx ec;
	struct fleet_buf msg;
	const char *reason = NULL;
	int64_t now, not_after = 0;
	X509 *leaf = NULL;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	fb_init(&msg);
	if (!in->req->has_attestation ||
	    fleet_x509pop_decode(in->req->attestation.data, in->req->attestation.len, &ev, &ec))
		return fleet_attest_refuse(out, "x509pop-malformed");
	if ((e = fleet_store_tx_now(tx, &now)))
		goto out;
	/* Only node and site certificates re-join: a ramdisk's two hours and
	 * its commissioning kinds are not to be renewed this way. */
	if (strcmp(in->role, "node") != 0 && strcmp(in->role, "site") != 0) {
		e = fleet_attest_refuse(out, "x509pop-role");
		goto out;
	}
	/* The proof's subject: SHA-256 of what it signs (the CSR's hash, the
	 * node id, the client time), refused when seen before whatever else
	 * holds (a captured request sent again). Not of the signature:
	 * ECDSA's (r, n - s) is a second valid one over the same bytes. */
	uint8_t h[32];
	bool seen = false;
	if ((e = fleet_x509pop_signing_input(in->csr_sha256, ev.node_id, ev.client_time_ms, &msg)) ||
	    (e = fleet_hash(FLEET_ALG_SHA256, msg.data, msg.len, h)))
		goto out;
	fleet_hex_encode(h, sizeof(h), out->use_subject);
	if ((e = fleet_store_tx_use_seen(tx, a->id, out->use_subject, &seen)))
		goto out;
	if (seen) {
		e = fleet_attest_refuse(out, "x509pop-replayed");
		goto out;
	}
	e = fleet_store_tx_node_cert(tx, ev.chain[0].data, ev.chain[0].len, &node, &not_after,
				     &reason);
	if (e == FLEET_STORE_E_NOT_FOUND || (e == FLEET_STORE_E_STATE && reason)) {
		e = fleet_attest_refuse(out, reason ? reason : "cert-unknown");
		goto out;
	}
	if (e)
		goto out;
	if (strcmp(node.id, ev.node_id) != 0) {
		e = fleet_attest_refuse(out, "x509pop-node-id");
		goto out;
	}
	const unsigned char *p = ev.chain[0].data;
	leaf = d2i_X509(NULL, &p, (long)ev.chain[0].len);
	if (!leaf || fleet_node_cert_spiffe_id(leaf, &ident, &ec) != FLEET_OK) {
		/* The store recorded it, so fleetd issued it: a leaf that does
		 * not read back is this side's trouble, refused all the same. */
		ERR_clear_error();
		e = fleet_attest_refuse(out, "x509pop-malformed");
		goto out;
	}
	if (strcmp(ident.role, in->role) != 0 || strcmp(ident.node_id, node.id) != 0) {
		e = fleet_attest_refuse(out, "x509pop-role");
		goto out;
	}
	if (not_after < now - (int64_t)cfg->grace_seconds) {
		e = fleet_attest_refuse(out, "x509pop-expired");
		goto out;
	}
	int64_t ct = ev.client_time_ms / 1000;
	if (ct < now - (int64_t)cfg->window_seconds || ct > now + (int64_t)cfg->window_seconds) {
		e = fleet_attest_refuse(out, "x509pop-client-time");
		goto out;
	}
	/* A node re-joins at most once per min_interval_seconds: each re-join
	 * is a new generation and a certificate row, so a loop with a
	 * current certificate is stopped here. */
	int64_t newest = 0;
	if ((e = fleet_store_tx_node_newest_cert(tx, node.id, &newest)))
		goto out;
	if (cfg->min_interval_seconds && newest > now - (int64_t)cfg->min_interval_seconds) {
		e = fleet_attest_refuse(out, "x509pop-too-soon");
		goto out;
	}
	EVP_PKEY *pub = X509_get0_pubkey(leaf);
	if (!pub || fleet_es256_verify(pub, msg.data, msg.len, ev.sig, &ec) != FLEET_OK) {
		ERR_clear_error();
		e = fleet_attest_refuse(out, "x509pop-signature");
		goto out;
	}
	/* A leaf whose key its TPM certified (urn:bc:tpm-ak:) never re-joins
	 * by a proof of that key alone: the new certificate would name no AK
	 * and renew with a key kept anywhere, for good. Such a node joins
	 * again with its TPM (the tpm attestor reclaims it). */
	char ak_uri[FLEET_TPM_AK_URI_MAX + 1];
	if (fleet_tpm_leaf_statement(leaf, ak_uri, sizeof(ak_uri)) || ak_uri[0]) {
		e = fleet_attest_refuse(out, "x509pop-key-statement");
		goto out;
	}
	out->use_expires_at = ct + (int64_t)cfg->window_seconds;
	out->use_reason = "x509pop-replayed";
	memcpy(out->pool, node.pool, sizeof(out->pool));
	memcpy(out->site, node.site, sizeof(out->site));
	memcpy(out->node_id, node.id, sizeof(out->node_id));
	snprintf(out->role, sizeof(out->role), "%s", ident.role);
	out->outcome = FLEET_ATTEST_RESULT;
	e = FLEET_OK;
out:
	X509_free(leaf);
	fb_free(&msg);
	fleet_x509pop_free(&ev);
	return e;
}
