/*
 * discovery.c: the discovery attestor (spec 001 "discovery"): a ramdisk
 * the site's boot server just PXE-booted, vouched for by two parties: the
 * single-use discovery token its iPXE script carried, and the boot
 * server's signed assertion that it just served that MAC
 * (lib/join_evidence.h, fleet-join assert).
 *
 * Refused unless, in this order:
 *   the role asked is ramdisk                              discovery-role
 *   a token of role discovery, live (J3)                   token-* (store.h J3)
 *   exactly one use left                                   not-single-use
 *   the assertion decodes                                  discovery-malformed
 *   the assertion admitted no join before                  assertion-reused
 *   the token is for the assertion's site                  discovery-site
 *   the token's expect MAC, when set, is the asserted MAC  discovery-mac
 *   the signer is a site node of that site                 discovery-signer
 *     not retired                                          node-retired
 *   holding the site's boot lease at exactly the epoch     discovery-lease
 *   the signature under purpose discovery-assertion
 *     by the signer's current, unexpired certificate       discovery-signer-cert,
 *                                                          discovery-signature
 *   fresh: now <= min(not_after, issued_at + 15 min), and
 *     issued_at at most 60 s ahead of the store's clock    discovery-stale
 *   the claimed MACs include the asserted MAC              discovery-mac
 *   the claimed product UUID is the asserted one (when
 *     the assertion names one)                             product-uuid-mismatch
 *   approval: a pending request waits (deferral), a
 *     denied one is refused until its decision ends        discovery-denied
 *
 * The join is a new ramdisk node whose certificate lasts at most
 * cert_ttl_seconds (<= 2 h) and carries the commissioning kinds it allows
 * (FLEET_DISCOVERY_KINDS_STATEMENT). Requests are keyed on SHA-256 of
 * site and MAC (no trusted hardware key is configured). A machine is
 * known when the product UUID its boot server asserted is bound to a node;
 * approval unknown-machines defers the others.
 */
#include "policy/attestors/attestor.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "lib/hex.h"
#include "lib/join_evidence.h"
#include "lib/tpm_alg.h"

#define CLOCK_SKEW 60

static fleet_err hw_key(const char *site, const char *mac, char out[65])
{
	uint8_t buf[FLEET_EVIDENCE_SITE_MAX + 1 + FLEET_WIRE_MAC_LEN], h[32];
	size_t a = strlen(site), b = strlen(mac);
	if (a > FLEET_EVIDENCE_SITE_MAX || b > FLEET_WIRE_MAC_LEN)
		return FLEET_E_INVALID_ARG;
	memcpy(buf, site, a);
	buf[a] = 0;
	memcpy(buf + a + 1, mac, b);
	fleet_err e = fleet_hash(FLEET_ALG_SHA256, buf, a + 1 + b, h);
	if (!e)
		fleet_hex_encode(h, sizeof(h), out);
	return e;
}

/* approval: FLEET_OK with *decided set when the join waits (a deferral) or
 * is refused, else the approved request to spend (or none) in
 * out->request_done. A request is the machine's (site and MAC), not its
 * CSR's: a machine that rebooted with a new key while it waited is still
 * the machine the operator approved, and what makes it that machine is
 * what discovery already checked (the boot server's signed word for that
 * MAC and the token its iPXE script carried). */
static fleet_err approval(const struct fleet_discovery_config *cfg, struct fleet_store_tx *tx,
			  const struct fleet_join_input *in,
			  const struct fleet_discovery_assertion *as, int64_t now,
			  struct fleet_attest_result *out, bool *decided)
{
	char key[65], bound[FLEET_STORE_NODE_ID_MAX + 1];
	fleet_err e;
	*decided = false;
	if (cfg->approval == FLEET_DISCOVERY_APPROVE_NEVER)
		return FLEET_OK;
	/* Known: the product UUID the boot server asserted (the claim was
	 * checked equal to it) is bound to a node. A UUID only claimed makes
	 * nobody known: any machine can claim an enrolled node's UUID. */
	if (cfg->approval == FLEET_DISCOVERY_APPROVE_UNKNOWN && as->product_uuid[0]) {
		e = fleet_store_tx_binding(tx, "product-uuid", as->product_uuid, bound);
		if (e == FLEET_OK)
			return FLEET_OK;
		if (e != FLEET_STORE_E_NOT_FOUND)
			return e;
	}
	if ((e = hw_key(as->site, as->mac, key)))
		return e;
	const struct fleet_attest_request q = {
		.attestor = "discovery",
		.hw_key = key,
		.site = as->site,
		.mac = as->mac,
		.denied_reason = "discovery-denied",
		.now = now,
		.ttl_seconds = cfg->pending_ttl_seconds,
		.retry_after_seconds = cfg->retry_after_seconds,
	};
	return fleet_attest_join_request(tx, in, &q, out, decided);
}

const char *const fleet_attestor_discovery_reasons[] = {
	"discovery-role",   FLEET_ATTEST_TOKEN_REASONS, "not-single-use",
	"discovery-malformed", "discovery-site",       "discovery-mac",
	"discovery-signer", "node-retired",            "discovery-lease",
	"discovery-signer-cert", "discovery-signature", "discovery-stale",
	"product-uuid-mismatch", "assertion-reused",   "discovery-denied", NULL};

fleet_err fleet_attestor_discovery_verify(const struct fleet_attestor *a,
					  struct fleet_store_tx *tx,
					  const struct fleet_join_input *in,
					  struct fleet_attest_result *out)
{
	const struct fleet_discovery_config *cfg = a->cfg;
	struct fleet_discovery_signed sd;
	struct fleet_discovery_assertion as;
	struct fleet_store_node signer, owner;
	struct fleet_errctx ec;
	struct fleet_buf msg;
	char holder[FLEET_STORE_NODE_ID_MAX + 1];
	const char *reason = NULL;
	int64_t now, epoch = 0, cert_not_after = 0;
	bool refused, decided;
	X509 *cert = NULL;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	memset(&sd, 0, sizeof(sd));
	fb_init(&msg);
	if (strcmp(in->role, "ramdisk") != 0)
		return fleet_attest_refuse(out, "discovery-role");
	if ((e = fleet_attest_token(tx, in, "discovery", out, &refused)) || refused)
		return e;
	if (out->token.uses_left != 1)
		return fleet_attest_refuse(out, "not-single-use");
	if (!in->req->has_attestation ||
	    fleet_discovery_signed_decode(in->req->attestation.data, in->req->attestation.len, &sd,
					  &ec) ||
	    fleet_discovery_body_decode(sd.body.data, sd.body.len, &as, &ec)) {
		e = fleet_attest_refuse(out, "discovery-malformed");
		goto out;
	}
	if ((e = fleet_store_tx_now(tx, &now)))
		goto out;
	/* Each signed assertion admits one join, whatever else it says. */
	uint8_t h[32];
	bool seen = false;
	if ((e = fleet_hash(FLEET_ALG_SHA256, sd.body.data, sd.body.len, h)))
		goto out;
	fleet_hex_encode(h, sizeof(h), out->use_subject);
	if ((e = fleet_store_tx_use_seen(tx, a->id, out->use_subject, &seen)))
		goto out;
	if (seen) {
		e = fleet_attest_refuse(out, "assertion-reused");
		goto out;
	}
	if (strcmp(out->token.site, as.site) != 0) {
		e = fleet_attest_refuse(out, "discovery-site");
		goto out;
	}
	if (out->token.expect_mac[0] && strcmp(out->token.expect_mac, as.mac) != 0) {
		e = fleet_attest_refuse(out, "discovery-mac");
		goto out;
	}
	e = fleet_store_tx_node(tx, as.signer, &signer);
	if (e == FLEET_STORE_E_NOT_FOUND ||
	    (!e && (strcmp(signer.role, "site") != 0 || strcmp(signer.site, as.site) != 0))) {
		e = fleet_attest_refuse(out, "discovery-signer");
		goto out;
	}
	if (e)
		goto out;
	if (signer.retired_at) {
		e = fleet_attest_refuse(out, "node-retired");
		goto out;
	}
	/* The lease fences a boot server that lost it: its epoch is gone. */
	e = fleet_store_tx_site_lease(tx, as.site, holder, &epoch);
	if (e == FLEET_STORE_E_NOT_FOUND || (!e && (strcmp(holder, signer.id) || epoch != as.epoch))) {
		e = fleet_attest_refuse(out, "discovery-lease");
		goto out;
	}
	if (e)
		goto out;
	e = fleet_store_tx_node_cert(tx, sd.cert.data, sd.cert.len, &owner, &cert_not_after,
				     &reason);
	if (e == FLEET_STORE_E_NOT_FOUND || e == FLEET_STORE_E_STATE ||
	    (!e && (strcmp(owner.id, signer.id) != 0 || cert_not_after <= now))) {
		e = fleet_attest_refuse(out, "discovery-signer-cert");
		goto out;
	}
	if (e)
		goto out;
	const unsigned char *p = sd.cert.data;
	cert = d2i_X509(NULL, &p, (long)sd.cert.len);
	EVP_PKEY *pub = cert ? X509_get0_pubkey(cert) : NULL;
	if (!pub || (e = fleet_discovery_signing_input(sd.body.data, sd.body.len, &msg)) ||
	    fleet_es256_verify(pub, msg.data, msg.len, sd.sig, &ec) != FLEET_OK) {
		ERR_clear_error();
		e = fleet_attest_refuse(out, "discovery-signature");
		goto out;
	}
	int64_t until = as.not_after;
	if (as.issued_at + (int64_t)cfg->max_age_seconds < until)
		until = as.issued_at + (int64_t)cfg->max_age_seconds;
	if (now > until || as.issued_at > now + CLOCK_SKEW) {
		e = fleet_attest_refuse(out, "discovery-stale");
		goto out;
	}
	if (!fleet_attest_claims_mac(in->req, as.mac)) {
		e = fleet_attest_refuse(out, "discovery-mac");
		goto out;
	}
	if (as.product_uuid[0] && strcmp(as.product_uuid, in->req->product_uuid) != 0) {
		e = fleet_attest_refuse(out, "product-uuid-mismatch");
		goto out;
	}
	out->use_expires_at = until;
	out->use_reason = "assertion-reused";
	if ((e = approval(cfg, tx, in, &as, now, out, &decided)) || decided)
		goto out;
	snprintf(out->site, sizeof(out->site), "%s", as.site);
	snprintf(out->role, sizeof(out->role), "ramdisk");
	snprintf(out->product_uuid, sizeof(out->product_uuid), "%s", in->req->product_uuid);
	snprintf(out->statement, sizeof(out->statement), "%s", FLEET_DISCOVERY_KINDS_STATEMENT);
	out->validity_seconds = cfg->cert_ttl_seconds;
	out->outcome = FLEET_ATTEST_RESULT;
	e = FLEET_OK;
out:
	X509_free(cert);
	fb_free(&msg);
	fleet_discovery_signed_free(&sd);
	return e;
}
