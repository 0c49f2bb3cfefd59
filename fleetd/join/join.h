/*
 * join.h: the join service (issue 13; spec 001 "Attestation", better-
 * compute's JoinService): POST /v1/join admits a machine by the evidence
 * one attestor (policy/attestors/) judges, and POST /v1/renew renews a
 * current node certificate by proof of its key. Both answer with the
 * signed envelope of lib/join_wire.h.
 *
 * The rules, each traced to tests/unit/test_join_service.c or the HTTPS
 * tests of tests/e2e/join_e2e.sh, named after the reason:
 *
 * JS1 A request that does not decode is 400 join-malformed (the wire's
 *     error, nothing of the policy). Every refusal after that is the one
 *     signed "denied" body, HTTP 403, whatever the attestor and reason; the
 *     reason goes only to the security.join.refused journal entry (through
 *     the journal limiter: unproven traffic cannot flood it), the counter
 *     fleetd_join_refused_total{reason="<attestor>:<reason>"} and the
 *     on_refusal hook.
 * JS2 Before any store access: the attestor is one this server runs
 *     ("attestor-unknown"), the CSR passes lib/ca.h NC1-NC3 (its reasons),
 *     a token present opens with the sealing key for purpose join-token
 *     ("token-seal") and decodes ("token-malformed").
 * JS3 The attestor and every decision below run in ONE store transaction
 *     (store.h X1): a refusal rolls all of it back, a deferral commits
 *     only the attestor's rows and issues nothing, and a kill -9 anywhere
 *     leaves no token spent and no certificate recorded.
 * JS4 A result: the pool exists and, when its join_attestors is set,
 *     lists the attestor ("pool-attestor", attributed to the pool's
 *     owner); for a token-based result the token's expect MAC is among
 *     the claimed MACs ("expect-mac") and its expect product UUID is the
 *     claimed one ("product-uuid-mismatch").
 * JS5 Which node: the result's node (x509pop, a provisioned target) is
 *     re-keyed in place; else a product UUID bound to a node (node_bindings)
 *     is reclaimed only when the token expects that UUID and has its
 *     reclaim flag, in the token's pool
 *     ("reclaim-not-allowed", "reclaim-pool"), and a result's node that
 *     the UUID is bound elsewhere from is "bound-elsewhere"; else a new
 *     node "node_<26>" whose product UUID is bound when it is trusted
 *     (the token expected it, or the attestor proved it). A ramdisk never
 *     binds or reclaims. A reclaimed node keeps its role ("reclaim-role").
 * JS6 Final round only, in the same transaction: the token's one use is
 *     taken, the attestor's single-use subject recorded (its reason on a
 *     second use), an approved join request spent; then the certificate
 *     (lib/ca.h NC5-NC11: 24 h, or the attestor's shorter ramdisk life,
 *     the attestor's statement after the SPIFFE ID) is signed and recorded
 *     with the node; it is answered only after the commit.
 * JS7 Every answer is the body signed with the CA key (fleet_ca_sign) in
 *     an envelope whose kid is fleet_join_kid(CA certificate); joined
 *     carries the leaf and the CA certificate; all but denied carry the
 *     request's csr_sha256.
 * JS8 /v1/renew: the leaf is byte for byte a current node_certs row (X4's
 *     reasons), not expired ("renew-expired": an expired one re-joins with
 *     x509pop), not a ramdisk's ("renew-ramdisk": its two hours are not
 *     extended), of a node with fewer than 4 current certificates
 *     ("renew-too-many"), and the ES256 signature by its key over lib/join_evidence.h's
 *     renew input verifies ("renew-signature"); the new certificate has the
 *     node's role and generation and is recorded before it is answered.
 */
#ifndef FLEET_JOIN_H
#define FLEET_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "fleetd/obs/metrics.h"
#include "fleetd/store/store.h"
#include "lib/buf.h"
#include "lib/ca.h"
#include "lib/token_seal.h"
#include "policy/attestors/attestor.h"

struct fleet_join_config {
	struct fleet_store *store;        /* read-write, the daemon's */
	const struct fleet_ca *ca;        /* the node CA and the answers' signer */
	const struct fleet_seal_key *seal; /* opens sealed tokens */
	const char *trust_domain;
	unsigned cert_ttl_seconds; /* 60..86400 */
	const char *on_refusal;    /* NULL or "": none */
	struct fleet_metrics *metrics;
	struct fleet_x509pop_config x509pop;
	struct fleet_discovery_config discovery;
	/* The tpm attestor's options (NULL: the attestor is off, and a leaf
	 * naming an AK cannot renew: key-statement-unsupported). Must outlive
	 * the service (its roots, profile and resolve list are borrowed). */
	const struct fleet_tpm_attestor_config *tpm;
	/* The cloud-iid attestor's providers and resolve list
	 * (policy/attestors/cloud_iid.h; NULL: off). Must outlive the service. */
	const struct fleet_cloud_iid_config *cloud_iid;
};

struct fleet_join;
struct fleet_cloud_iid_config;

/* The tpm attestor's files (join_tpm_load.c): the challenge key, 32 bytes
 * or their 64 hex digits, a secret (mode 0600, owned by root or fleetd);
 * the resolve list, configuration (writable by its owner only), parsed by
 * fleet_tpm_resolve_parse. The sentence in ec names the file. */
fleet_err fleet_join_challenge_key_load(const char *path, uint8_t key[32],
					struct fleet_errctx *ec);
fleet_err fleet_join_tpm_resolve_load(const char *path, struct fleet_tpm_resolve *out,
				      struct fleet_errctx *ec);

/* The service; NULL with ec set. Strings are copied; store, ca, seal and
 * metrics must outlive it. */
struct fleet_join *fleet_join_new(const struct fleet_join_config *c, struct fleet_errctx *ec);
/* Stops the hook's thread (what is queued runs first, each bounded). */
void fleet_join_free(struct fleet_join *j);

/* The routes: the HTTP status; out the answer; *reason what
 * fleetd_http_rejected_total counts for a 4xx. */
int fleet_join_handle(struct fleet_join *j, const char *peer, const uint8_t *body, size_t len,
		      struct fleet_buf *out, const char **reason);
int fleet_join_renew(struct fleet_join *j, const char *peer, const uint8_t *body, size_t len,
		     struct fleet_buf *out, const char **reason);

#endif
