/*
 * attestor.h: the one interface every attestor module implements (issue
 * 13; spec 001 "Attestation": an AttestorVerifier that runs inside
 * JoinService's join transaction).
 *
 *     verify(tx, request, evidence) -> result | deferral | refusal(reason)
 *
 * The join service (fleetd/join/) decodes the request, checks the CSR,
 * opens the sealed token, opens the store's join transaction
 * (fleetd/store/store.h X1-X6) and calls the attestor the request names.
 * The attestor reads what it must through the transaction and answers
 * with one of three outcomes in *out; the service then does what every
 * attestor shares: the pool's joinAttestors, the token's expect binding
 * and reclaim flag, the one use of the token, the node id, the
 * certificate, the rows. So an attestor never issues, never picks a node
 * id and never spends a token: it says who the machine is.
 *
 * The contract (each traced to tests/unit/test_attestors.c and the HTTPS
 * tests in tests/e2e/join_e2e.sh, named after the reason):
 *
 * A1 verify returns FLEET_OK with out->outcome set, or an error of its own
 *    (a store failure): then the join is answered 503 and the transaction
 *    rolled back. Every decision about the machine is an outcome, never an
 *    error.
 * A2 REFUSE carries a stable reason (the spec's where it names one, else
 *    "<attestor>-<what>"); the service rolls back everything the
 *    transaction wrote, answers the one generic "denied", and the reason
 *    goes only to the journal (security.join.refused), the counter and the
 *    on_refusal hook.
 * A3 DEFER writes only the attestor's own rows (a pending request), which
 *    the service commits; it issues nothing and spends nothing: an
 *    attestor checks a token with take false only.
 * A4 RESULT names the pool (and site) the machine joins, the certificate's
 *    role, and either a new node (node_id "") or the node it is (reclaim
 *    in place: the generation raised, every older certificate revoked).
 *    token_based says the result rests on the request's token: the
 *    service then enforces its expect binding and reclaim flag and takes
 *    its one use in the same transaction.
 * A5 use_subject, when set, is recorded in attestation_uses (the
 *    attestor's name, kept until use_expires_at) by the service on the
 *    final round only; a second record refuses the join with
 *    use_reason.
 * A6 bind_kind/bind_value, when set, is a hardware key the attestor
 *    proved (the tpm attestor's "ek", the EK's SHA-256): the service binds
 *    it to the node in the same transaction, and a key bound to another
 *    node refuses the join bound-elsewhere. An attestor that finds the key
 *    bound names that node in node_id (a reclaim).
 * A8 node_key_uri, when set, is a statement about where the node's key
 *    lives that every renewal must prove again: the service writes it
 *    into the certificate after the SPIFFE ID (and after statement) only
 *    when it is one renewals can prove (urn:bc:tpm-ak:, lib/
 *    tpm_join_evidence.h), and refuses the join node-key-statement
 *    otherwise, rather than issue a certificate that could never renew.
 * A7 prepare, when set, runs before the transaction opens, for the I/O an
 *    attestor's verify must not do while the store is locked (a JWKS
 *    refresh); it decides nothing about the machine, and an error answers
 *    the join 503 (the machine retries).
 */
#ifndef FLEET_POLICY_ATTESTOR_H
#define FLEET_POLICY_ATTESTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleetd/store/store.h"
#include "lib/ca.h"
#include "lib/join_token.h"
#include "lib/join_wire.h"
#include "lib/tpm.h"

/* What the service hands an attestor: the decoded request and what it
 * derived from it. The token's secret is the service's; it is wiped after
 * the transaction. */
struct fleet_join_input {
	const struct fleet_join_request *req;
	bool has_token;
	struct fleet_join_token token; /* opened from req->token */
	uint8_t csr_sha256[32];        /* over the CSR's bytes as sent */
	uint8_t csr_spki_sha256[32];   /* over its SubjectPublicKeyInfo (NC1-NC3 passed) */
	char csr_sha256_hex[FLEET_JOIN_SHA256_HEX + 1];
	const char *role; /* "node" | "site" | "ramdisk": the request's */
};

enum fleet_attest_outcome {
	FLEET_ATTEST_REFUSE = 1,
	FLEET_ATTEST_DEFER,
	FLEET_ATTEST_RESULT,
};

struct fleet_attest_result {
	enum fleet_attest_outcome outcome;
	const char *reason; /* REFUSE: static, stable */

	/* RESULT (A4) */
	char pool[FLEET_STORE_POOL_ID_MAX + 1];
	char site[FLEET_STORE_POOL_ID_MAX + 1]; /* "" none */
	char role[16];                          /* the certificate's */
	char node_id[FLEET_STORE_NODE_ID_MAX + 1]; /* "": a new node */
	bool token_based;
	struct fleet_store_token token; /* the token row, token_based only */
	char product_uuid[FLEET_JOIN_UUID_LEN + 1]; /* recorded on a new node, "" none */
	unsigned validity_seconds;                  /* 0: the service's default */
	char statement[FLEET_NODE_STATEMENT_MAX + 1]; /* one urn:bc: statement, "" none */
	char use_subject[65];                       /* A5 */
	int64_t use_expires_at;
	const char *use_reason;
	char request_done[FLEET_STORE_NODE_ID_MAX + 1]; /* an approved join request spent */
	char node_key_uri[FLEET_NODE_STATEMENT_MAX + 1]; /* A8: "" none */
	char bind_kind[16];   /* A6: "" none */
	const char *notice;   /* static: a warning the service journals with the join */
	char bind_value[129];

	/* DEFER (A3) */
	struct fleet_join_deferral deferral;
	bool challenge; /* false: pending */
};

struct fleet_attestor;
typedef fleet_err (*fleet_attestor_verify_fn)(const struct fleet_attestor *a,
					      struct fleet_store_tx *tx,
					      const struct fleet_join_input *in,
					      struct fleet_attest_result *out);

typedef fleet_err (*fleet_attestor_prepare_fn)(const struct fleet_attestor *a,
					       const struct fleet_join_input *in);

struct fleet_attestor {
	const char *id; /* the request's "attestor" ("" is join-token) */
	fleet_attestor_verify_fn verify;
	const void *cfg; /* the attestor's options, its own struct */
	/* Every reason verify can refuse with, NULL-terminated (the
	 * refusal counter's labels; docs/attestors.md's tables). */
	const char *const *reasons;
	fleet_attestor_prepare_fn prepare; /* A7: NULL none */
};

/* The reasons every token-based attestor can give through
 * fleet_attest_token (store.h J3 and the request's token). */
#define FLEET_ATTEST_TOKEN_REASONS                                                        \
	"token-missing", "token-unknown", "token-secret", "token-revoked", "token-expired", \
		"token-used-up", "token-role"

/* Helpers every token-based attestor uses. */

/* Refuse with reason (A2). Always FLEET_OK. */
fleet_err fleet_attest_refuse(struct fleet_attest_result *out, const char *reason);

/* The request's token checked in the transaction without a take (A3),
 * with the role the attestor requires: FLEET_OK with *refused false and
 * out->token filled, or FLEET_OK with *refused true and the refusal in out
 * (no token: "token-missing"; the store's J3 reasons). A store failure is
 * returned. */
fleet_err fleet_attest_token(struct fleet_store_tx *tx, const struct fleet_join_input *in,
			     const char *role, struct fleet_attest_result *out, bool *refused);

/* prefix and 26 characters of a-z 0-9 from the CSPRNG into out (cap
 * bytes with the NUL): node ids ("node_"), join request ids ("jr_"). */
fleet_err fleet_attest_new_id(const char *prefix, char *out, size_t cap);

/* The claims name this MAC. */
bool fleet_attest_claims_mac(const struct fleet_join_request *req, const char *mac);

/* The ids of the attestors this server runs, NULL-terminated: a pool's
 * join_attestors may name only these (fleetctl pool create). */
extern const char *const fleet_attestor_ids[];

/* The built-in attestors. */
extern const struct fleet_attestor fleet_attestor_join_token;

struct fleet_x509pop_config {
	uint32_t grace_seconds;  /* expired at most this long ago (7 days) */
	uint32_t window_seconds; /* clientTime within this of the store's clock (60) */
	uint32_t min_interval_seconds; /* between two re-joins of one node (600; 0: none) */
};
extern const char *const fleet_attestor_x509pop_reasons[];
extern const char *const fleet_attestor_provisioned_reasons[];
extern const char *const fleet_attestor_discovery_reasons[];
fleet_err fleet_attestor_x509pop_verify(const struct fleet_attestor *a, struct fleet_store_tx *tx,
					const struct fleet_join_input *in,
					struct fleet_attest_result *out);

fleet_err fleet_attestor_provisioned_verify(const struct fleet_attestor *a,
					    struct fleet_store_tx *tx,
					    const struct fleet_join_input *in,
					    struct fleet_attest_result *out);

enum fleet_discovery_approval {
	FLEET_DISCOVERY_APPROVE_NEVER = 0, /* the default: no operator in the loop */
	FLEET_DISCOVERY_APPROVE_UNKNOWN,   /* machines no node binding names wait */
	FLEET_DISCOVERY_APPROVE_ALWAYS,
};
struct fleet_discovery_config {
	enum fleet_discovery_approval approval;
	uint32_t max_age_seconds;     /* 900: min(not_after, issued_at + this) */
	uint32_t cert_ttl_seconds;    /* <= 7200 */
	uint32_t pending_ttl_seconds; /* 86400 */
	uint32_t retry_after_seconds; /* 30 */
};
fleet_err fleet_attestor_discovery_verify(const struct fleet_attestor *a,
					  struct fleet_store_tx *tx,
					  const struct fleet_join_input *in,
					  struct fleet_attest_result *out);

/* The tpm attestor (tpm.c; spec 001 "tpm"). */
enum fleet_tpm_node_key_rule {
	FLEET_TPM_NODE_KEY_CERTIFIED = 0, /* the default: the AK certifies the CSR's key */
	FLEET_TPM_NODE_KEY_ANY,           /* also an uncertified key (a file): no claim */
};
/* Where an EK no node is bound to joins (the spec's resolve): an
 * allow-list of EK hashes, each with its pool and site, or a node it is
 * (a machine that joined another way and now proves its TPM). */
struct fleet_tpm_resolve_entry {
	char ek_hash[65];
	char pool[FLEET_STORE_POOL_ID_MAX + 1];
	char site[FLEET_STORE_POOL_ID_MAX + 1]; /* "" none */
	char node[FLEET_STORE_NODE_ID_MAX + 1]; /* "" a new node */
};
struct fleet_tpm_resolve {
	size_t n;
	struct fleet_tpm_resolve_entry *e;
};
struct fleet_ek_roots;
struct fleet_profile;
struct fleet_tpm_attestor_config {
	uint8_t challenge_key[32];
	const struct fleet_ek_roots *ek_roots; /* NULL or empty: no EK certificate chains */
	bool allow_uncertified_ek;             /* labs only; every use journaled */
	char pcr_selection[128];               /* tpm2-tools syntax; "" sha256:0..7 */
	const struct fleet_profile *pcr_profile; /* NULL: no boot policy */
	enum fleet_tpm_node_key_rule node_key;
	uint32_t challenge_ttl_seconds; /* 1..300 */
	char role[16];                  /* the role it admits: "node" (or "site") */
	const struct fleet_tpm_resolve *resolve; /* NULL: none */
	/* enrollment: unknown EKs wait for an operator (join requests) */
	char enrollment_pool[FLEET_STORE_POOL_ID_MAX + 1]; /* "" none */
	char enrollment_site[FLEET_STORE_POOL_ID_MAX + 1];
	uint32_t pending_ttl_seconds, retry_after_seconds;
};
extern const char *const fleet_attestor_tpm_reasons[];
/* The AK's TPM2_Certify of a key over SHA-256(csr), whose SPKI must be the
 * CSR's (the join's node key, the renewal's key_attestation): FLEET_OK with
 * *reason NULL when it holds, else the spec's node-key-* reason; an error
 * only when out of memory. */
struct fleet_tpm_certification;
fleet_err fleet_tpm_certification_check(const TPMT_PUBLIC *ak,
					const struct fleet_tpm_certification *c,
					const uint8_t csr_sha256[32],
					const uint8_t csr_spki_sha256[32], const char **reason);
fleet_err fleet_attestor_tpm_verify(const struct fleet_attestor *a, struct fleet_store_tx *tx,
				    const struct fleet_join_input *in,
				    struct fleet_attest_result *out);
/* The resolve file: one "<ek_hash> pool=<pool> [site=<site>] [node=<node>]"
 * a line, '#' comments and blank lines; at most FLEET_TPM_RESOLVE_MAX
 * entries, each EK once. FLEET_E_MALFORMED with the line in ec. */
#define FLEET_TPM_RESOLVE_MAX 100000
fleet_err fleet_tpm_resolve_parse(const uint8_t *buf, size_t len, struct fleet_tpm_resolve *out,
				  struct fleet_errctx *ec);
void fleet_tpm_resolve_free(struct fleet_tpm_resolve *r);
const struct fleet_tpm_resolve_entry *fleet_tpm_resolve_find(const struct fleet_tpm_resolve *r,
							     const char *ek_hash);

/* The commissioning kinds a ramdisk certificate allows (spec:
 * discoveryAllowedKinds), as the statement it carries. */
#define FLEET_DISCOVERY_KINDS_STATEMENT \
	"urn:bc:allowed-kinds:inventory.refresh,logs.collect,diag.*,disk.wipe,deploy.*,boot.kexec"

#endif
