/*
 * join.c: POST /v1/join (join.h JS1-JS7). The request is decoded and
 * checked without the store (JS2); then the attestor and the service's own
 * decisions run in one store transaction (JS3-JS6), the certificate signed
 * inside it and answered only once it committed (JS7).
 */
#include "fleetd/join/join_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "fleetd/obs/journal.h"
#include "lib/hex.h"
#include "lib/sanitize.h"
#include "policy/attestors/cloud_iid.h"
#include "lib/tpm_join_evidence.h"

const char *const join_service_reasons[] = {
	FLEET_CA_REASON_CSR_MALFORMED, FLEET_CA_REASON_CSR_KEY_TYPE, FLEET_CA_REASON_CSR_SIGNATURE,
	"token-seal", "token-malformed", "pool-attestor", "expect-mac", "product-uuid-mismatch",
	"reclaim-not-allowed", "reclaim-pool", "reclaim-role", "bound-elsewhere", "node-retired",
	"node-key-statement", "pool-unknown",
	FLEET_ATTEST_TOKEN_REASONS,
	/* An attestor that refuses without saying why (none here does). */
	"refused", NULL};

/* ---- the answer ----------------------------------------------------------- */

/* Sign the body and wrap it (JS7). */
fleet_err join_answer(struct fleet_join *j, const struct fleet_join_response *r,
		      struct fleet_buf *out)
{
	struct fleet_join_envelope env;
	struct fleet_buf body, sig;
	struct fleet_errctx ec;
	fleet_err e;
	memset(&env, 0, sizeof(env));
	memset(&ec, 0, sizeof(ec));
	fb_init(&body);
	fb_init(&sig);
	if ((e = fleet_join_body_encode(r, &body)) ||
	    (e = fleet_ca_sign(j->cfg.ca, body.data, body.len, &sig, &ec)))
		goto out;
	env.body.data = body.data;
	env.body.len = body.len;
	env.sig.data = sig.data;
	env.sig.len = sig.len;
	memcpy(env.kid, j->kid, sizeof(env.kid));
	e = fleet_join_envelope_encode(&env, out);
out:
	fb_free(&body);
	fb_free(&sig);
	ERR_clear_error();
	return e;
}

/* A plain error for what is no decision (a request that does not decode,
 * the store unavailable): {"error": what, "detail": the decoder's field
 * path}. The detail names a field, never bytes of the input (JW1), and is
 * still checked printable. */
void join_error(struct fleet_buf *out, const char *what, const char *detail)
{
	char line[400];
	bool ok = detail && detail[0] && strlen(detail) < 200 &&
		  fleet_ascii_printable(detail, strlen(detail), FLEET_ASCII_SPACE) &&
		  !strpbrk(detail, "\"\\");
	snprintf(line, sizeof(line), ok ? "{\"error\":\"%s\",\"detail\":\"%s\"}"
				       : "{\"error\":\"%s\"}",
		 what, ok ? detail : "");
	fb_reset(out);
	fb_put(out, line, strlen(line));
}

/* The one generic ACCESS_DENIED (JS1), after the reason went where it
 * may. */
static int denied(struct fleet_join *j, const struct join_refusal *rf, struct fleet_buf *out,
		  const char **reason)
{
	struct fleet_join_response r;
	join_refused(j, rf);
	memset(&r, 0, sizeof(r));
	r.status = FLEET_JOIN_DENIED;
	*reason = "join-denied";
	fb_reset(out);
	if (join_answer(j, &r, out) != FLEET_OK)
		return 500;
	return 403;
}

/* ---- the transaction ------------------------------------------------------ */

struct join_tx {
	struct fleet_join *j;
	const struct fleet_attestor *att;
	struct fleet_join_input in;
	struct fleet_attest_result res;
	const char *refused; /* a refusal: rolled back */
	char pool_owner[64]; /* pool-attestor is the owner's */
	char node_id[FLEET_STORE_NODE_ID_MAX + 1];
	bool reclaimed;
	struct fleet_buf cert; /* the leaf, DER */
};

static fleet_err tx_refuse(struct join_tx *t, const char *reason)
{
	t->refused = reason;
	return FLEET_STORE_E_STATE; /* rolls everything back (X1) */
}

static bool pool_lists(const struct fleet_store_pool *p, const char *id)
{
	for (size_t i = 0; i < p->n_attestors; i++)
		if (strcmp(p->attestors[i], id) == 0)
			return true;
	return false;
}

/* JS5: which node the result joins as; *reclaim when it exists. */
static fleet_err which_node(struct join_tx *t, struct fleet_store_tx *tx, const char **hw_out,
			    bool *bind)
{
	const struct fleet_attest_result *r = &t->res;
	const struct fleet_join_request *req = t->in.req;
	char bound[FLEET_STORE_NODE_ID_MAX + 1] = "";
	struct fleet_store_node n;
	fleet_err e;
	*bind = false;
	*hw_out = NULL;
	const char *hw = r->product_uuid[0]                      ? r->product_uuid
			 : r->token_based && req->product_uuid[0] ? req->product_uuid
								   : NULL;
	/* A product UUID is trusted when the attestor proved it or the token
	 * was minted expecting it (JS4 checked the claim against it). */
	bool trusted = r->product_uuid[0] || (r->token_based && r->token.expect_product_uuid[0]);
	if (!strcmp(r->role, "ramdisk"))
		hw = NULL;
	if (hw) {
		e = fleet_store_tx_binding(tx, "product-uuid", hw, bound);
		if (e && e != FLEET_STORE_E_NOT_FOUND)
			return e;
	}
	*hw_out = hw;
	if (r->node_id[0]) {
		if (bound[0] && strcmp(bound, r->node_id) != 0)
			return tx_refuse(t, "bound-elsewhere");
		memcpy(t->node_id, r->node_id, sizeof(t->node_id));
		t->reclaimed = true;
		*bind = hw && trusted && !bound[0];
	} else if (bound[0]) {
		/* Only a UUID the token was minted expecting reclaims: a claim
		 * alone would let any holder of a reclaim token take over any
		 * node of its pool by naming that node's UUID. */
		if (trusted && r->token_based && r->token.allow_reclaim) {
			memcpy(t->node_id, bound, sizeof(t->node_id));
			t->reclaimed = true;
		} else if (trusted) {
			return tx_refuse(t, "reclaim-not-allowed");
		} else {
			/* A claim nobody vouched for reclaims nothing and binds
			 * nothing: the machine is a new node. */
			hw = NULL;
			*hw_out = NULL;
		}
	} else {
		*bind = hw && trusted;
	}
	if (t->reclaimed) {
		/* The attestor read it, or a binding names it (a foreign key):
		 * a node that is not there is the store's trouble. */
		if ((e = fleet_store_tx_node(tx, t->node_id, &n)))
			return e == FLEET_STORE_E_NOT_FOUND ? FLEET_STORE_E_CORRUPT : e;
		if (n.retired_at)
			return tx_refuse(t, "node-retired");
		if (strcmp(n.pool, r->pool) != 0)
			return tx_refuse(t, "reclaim-pool");
		if (strcmp(n.role, r->role) != 0)
			return tx_refuse(t, "reclaim-role");
	} else if ((e = fleet_attest_new_id("node_", t->node_id, sizeof(t->node_id)))) {
		return e;
	}
	return FLEET_OK;
}

static fleet_err issue(struct join_tx *t, int64_t now)
{
	const struct fleet_attest_result *r = &t->res;
	struct fleet_node_cert_request cr;
	struct fleet_errctx ec;
	X509 *x = NULL;
	memset(&cr, 0, sizeof(cr));
	memset(&ec, 0, sizeof(ec));
	cr.csr_der = t->in.req->csr.data;
	cr.csr_len = t->in.req->csr.len;
	cr.trust_domain = t->j->cfg.trust_domain;
	cr.node_id = t->node_id;
	cr.role = r->role;
	size_t ns = 0;
	if (r->statement[0])
		cr.statements[ns++] = r->statement;
	if (r->node_key_uri[0]) /* A8: after the attestor's statement */
		cr.statements[ns++] = r->node_key_uri;
	cr.not_before = (time_t)now;
	cr.validity_seconds = r->validity_seconds ? r->validity_seconds : t->j->cfg.cert_ttl_seconds;
	if (!strcmp(r->role, "ramdisk") && cr.validity_seconds > FLEET_NODE_RAMDISK_VALIDITY_MAX)
		cr.validity_seconds = FLEET_NODE_RAMDISK_VALIDITY_MAX;
	fleet_err e = fleet_ca_issue_node(t->j->cfg.ca, &cr, &x, &ec);
	if (e) {
		ERR_clear_error();
		/* The CSR passed NC1-NC3 before the transaction; what is left
		 * is this side's (the CA expires, a bad trust domain). */
		fleet_log(LOG_ERR, "join-issue-failed",
			  FLEET_LOG_FIELDS({"FLEET_REASON", ec.reason}), "node certificate: %s",
			  ec.detail);
		return FLEET_E_CRYPTO;
	}
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);
	X509_free(x);
	if (n <= 0) {
		ERR_clear_error();
		return FLEET_E_NOMEM;
	}
	e = fb_put(&t->cert, der, (size_t)n);
	OPENSSL_free(der);
	return e;
}

/* The final round (JS4-JS6), in the transaction. */
static fleet_err finish(struct join_tx *t, struct fleet_store_tx *tx)
{
	const struct fleet_attest_result *r = &t->res;
	const struct fleet_join_request *req = t->in.req;
	struct fleet_store_pool pool;
	const char *hw, *why = NULL;
	bool bind;
	int64_t now;
	fleet_err e;
	if ((e = fleet_store_tx_now(tx, &now)))
		return e;
	/* A8: only a statement every renewal can prove again. */
	if (r->node_key_uri[0]) {
		uint8_t name[2 + 64];
		size_t name_len;
		if (fleet_tpm_ak_uri_parse(r->node_key_uri, name, sizeof(name), &name_len))
			return tx_refuse(t, "node-key-statement");
	}
	/* A token's or a node's pool is there (foreign keys); one an
	 * attestor's configuration names (a resolve list, enrollment) may
	 * not be yet: that is the operator's to fix, and said so, not the
	 * store's corruption. */
	e = fleet_store_tx_pool(tx, r->pool, &pool);
	if (e == FLEET_STORE_E_NOT_FOUND && !r->token_based && !r->node_id[0])
		return tx_refuse(t, "pool-unknown");
	if (e)
		return e == FLEET_STORE_E_NOT_FOUND ? FLEET_STORE_E_CORRUPT : e;
	if (pool.n_attestors && !pool_lists(&pool, t->att->id)) {
		snprintf(t->pool_owner, sizeof(t->pool_owner), "%s", pool.owner);
		return tx_refuse(t, "pool-attestor");
	}
	if (r->token_based) {
		if (r->token.expect_mac[0] && !fleet_attest_claims_mac(req, r->token.expect_mac))
			return tx_refuse(t, "expect-mac");
		if (r->token.expect_product_uuid[0] &&
		    strcmp(r->token.expect_product_uuid, req->product_uuid) != 0)
			return tx_refuse(t, "product-uuid-mismatch");
	}
	if ((e = which_node(t, tx, &hw, &bind)))
		return e;
	if (r->token_based) {
		/* The one use, taken under the row's lock this transaction
		 * has held since the attestor read it. */
		e = fleet_store_tx_token(tx, t->in.token.id, t->in.token.secret, NULL, true, NULL,
					 &why);
		if (e == FLEET_STORE_E_STATE && why)
			return tx_refuse(t, why);
		if (e)
			return e;
	}
	if (r->use_subject[0]) {
		e = fleet_store_tx_use(tx, t->att->id, r->use_subject, r->use_expires_at);
		if (e == FLEET_STORE_E_CONFLICT)
			return tx_refuse(t, r->use_reason ? r->use_reason : "refused");
		if (e)
			return e;
	}
	/* The attestor read it approved in this transaction. */
	if (r->request_done[0] && (e = fleet_store_tx_join_request_used(tx, r->request_done, now)))
		return e;
	if ((e = issue(t, now)))
		return e;
	if (t->reclaimed)
		e = fleet_store_tx_node_reclaim(tx, t->node_id, t->cert.data, t->cert.len, now, NULL);
	else {
		struct fleet_store_node_in ni = {
			.id = t->node_id,
			.pool = r->pool,
			.site = r->site[0] ? r->site : NULL,
			.role = r->role,
			.joined_by = t->att->id,
			.token = r->token_based ? r->token.id : NULL,
			.product_uuid = hw ? hw : (req->product_uuid[0] ? req->product_uuid : NULL),
			.cert_der = t->cert.data,
			.cert_len = t->cert.len,
			.now = now,
		};
		e = fleet_store_tx_node_insert(tx, &ni);
	}
	if (e)
		return e;
	if (bind && hw) {
		e = fleet_store_tx_node_bind(tx, "product-uuid", hw, t->node_id, now);
		if (e == FLEET_STORE_E_CONFLICT)
			return tx_refuse(t, "bound-elsewhere");
		if (e)
			return e;
	}
	if (r->bind_kind[0]) { /* A6: the same node again is no change */
		e = fleet_store_tx_node_bind(tx, r->bind_kind, r->bind_value, t->node_id, now);
		if (e == FLEET_STORE_E_CONFLICT)
			return tx_refuse(t, "bound-elsewhere");
	}
	return e;
}

static fleet_err run_tx(struct fleet_store_tx *tx, void *arg)
{
	struct join_tx *t = arg;
	fleet_err e;
	memset(&t->res, 0, sizeof(t->res));
	if ((e = t->att->verify(t->att, tx, &t->in, &t->res)))
		return e;
	switch (t->res.outcome) {
	case FLEET_ATTEST_REFUSE:
		return tx_refuse(t, t->res.reason ? t->res.reason : "refused");
	case FLEET_ATTEST_DEFER:
		return FLEET_OK; /* the attestor's own rows commit (A3) */
	case FLEET_ATTEST_RESULT:
		return finish(t, tx);
	}
	return FLEET_E_INVALID_ARG;
}

/* ---- the route ------------------------------------------------------------ */

int fleet_join_handle(struct fleet_join *j, const char *peer, const uint8_t *body, size_t len,
		      struct fleet_buf *out, const char **reason)
{
	struct fleet_join_request req;
	struct fleet_join_response resp;
	struct join_refusal rf;
	struct fleet_errctx ec;
	struct fleet_buf pt;
	struct join_tx t;
	uint8_t spki[32];
	int status = 500;
	fleet_err e;

	memset(&t, 0, sizeof(t));
	memset(&rf, 0, sizeof(rf));
	memset(&ec, 0, sizeof(ec));
	memset(&resp, 0, sizeof(resp));
	fb_init_secret(&pt, FLEET_SEAL_MAX_PLAINTEXT);
	fb_init(&t.cert);
	rf.peer = peer;
	if (fleet_join_request_decode(body, len, &req, &ec) != FLEET_OK) {
		*reason = "join-malformed";
		join_error(out, "join-malformed", ec.detail);
		fb_free(&pt);
		fb_free(&t.cert);
		return 400;
	}
	t.j = j;
	t.in.req = &req;
	t.in.role = fleet_join_role_name(req.role);
	rf.attestor = req.attestor[0] ? req.attestor : "join-token";
	/* JS2, without the store. */
	t.att = join_attestor(j, rf.attestor);
	if (!t.att) {
		rf.attestor = "other";
		rf.reason = "attestor-unknown";
		status = denied(j, &rf, out, reason);
		goto out;
	}
	if (fleet_csr_spki_sha256(req.csr.data, req.csr.len, spki, &ec) != FLEET_OK) {
		ERR_clear_error();
		rf.reason = ec.reason ? ec.reason : FLEET_CA_REASON_CSR_MALFORMED;
		status = denied(j, &rf, out, reason);
		goto out;
	}
	memcpy(t.in.csr_spki_sha256, spki, sizeof(spki));
	if (fleet_join_csr_sha256(&req.csr, t.in.csr_sha256_hex) ||
	    fleet_hex_decode(t.in.csr_sha256_hex, FLEET_JOIN_SHA256_HEX, t.in.csr_sha256, 32)) {
		status = 500;
		goto out;
	}
	if (req.has_token) {
		memset(&ec, 0, sizeof(ec));
		if (fleet_unseal(j->cfg.seal, FLEET_JOIN_TOKEN_PURPOSE, req.token.data, req.token.len,
				 &pt, &ec) != FLEET_OK) {
			ERR_clear_error();
			rf.reason = "token-seal";
			status = denied(j, &rf, out, reason);
			goto out;
		}
		if (fleet_join_token_decode(pt.data, pt.len, &t.in.token, &ec) != FLEET_OK) {
			rf.reason = "token-malformed";
			status = denied(j, &rf, out, reason);
			goto out;
		}
		t.in.has_token = true;
		memcpy(rf.token_id, t.in.token.id, sizeof(rf.token_id));
	}
	/* A7: the attestor's I/O, before the store is locked. */
	if (t.att->prepare && (e = t.att->prepare(t.att, &t.in)) != FLEET_OK)
		goto unavailable;
	e = fleet_store_join_tx(j->cfg.store, run_tx, &t);
	if (t.refused) {
		rf.reason = t.refused;
		rf.pool_owner = t.pool_owner[0] ? t.pool_owner : NULL;
		rf.node_id = t.res.node_id[0] ? t.res.node_id : NULL;
		status = denied(j, &rf, out, reason);
		goto out;
	}
	if (e) {
	unavailable:
		fleet_log(LOG_ERR, "join-failed",
			  FLEET_LOG_FIELDS({"FLEET_ATTESTOR", t.att->id},
					   {"FLEET_ERROR", fleet_err_str(e)}),
			  "a join could not be decided (%s); the machine retries", fleet_err_str(e));
		*reason = "join-unavailable";
		join_error(out, "unavailable", NULL);
		status = 503;
		goto out;
	}
	memcpy(resp.csr_sha256, t.in.csr_sha256_hex, sizeof(resp.csr_sha256));
	if (t.res.outcome == FLEET_ATTEST_DEFER) {
		resp.status = t.res.challenge ? FLEET_JOIN_CHALLENGE : FLEET_JOIN_PENDING;
		resp.deferral = t.res.deferral; /* the payload stays the result's */
		fleet_metric_inc_label(j->m_deferred, t.att->id);
		fleet_log(LOG_INFO, "join-deferred",
			  FLEET_LOG_FIELDS({"FLEET_ATTESTOR", t.att->id},
					   {"FLEET_JOIN_REQUEST", resp.deferral.request_id}),
			  "join by %s deferred (%s)", t.att->id,
			  t.res.challenge ? "challenge" : "pending approval");
	} else {
		resp.status = FLEET_JOIN_JOINED;
		memcpy(resp.node_id, t.node_id, sizeof(resp.node_id));
		resp.n_chain = 2;
		resp.chain[0].data = t.cert.data;
		resp.chain[0].len = t.cert.len;
		resp.chain[1].data = j->ca_der;
		resp.chain[1].len = j->ca_der_len;
		fleet_metric_inc_label(j->m_joined, t.att->id);
		if (t.res.notice)
			fleet_log(LOG_WARNING, "join-notice",
				  FLEET_LOG_FIELDS({"FLEET_NODE", t.node_id},
						   {"FLEET_ATTESTOR", t.att->id}),
				  "node %s joined by %s with %s", t.node_id, t.att->id, t.res.notice);
		fleet_log(LOG_NOTICE, t.reclaimed ? "node-reclaimed" : "node-joined",
			  FLEET_LOG_FIELDS({"FLEET_NODE", t.node_id}, {"FLEET_ATTESTOR", t.att->id},
					   {"FLEET_POOL", t.res.pool}, {"FLEET_ROLE", t.res.role},
					   {"FLEET_TOKEN", rf.token_id[0] ? rf.token_id : NULL},
					   /* spec: nodeKey tpm (certified by the AK) or unattested */
					   {"FLEET_NODE_KEY", t.res.node_key_uri[0] ? "tpm" : "unattested"}),
			  "node %s %s by %s", t.node_id, t.reclaimed ? "reclaimed" : "joined",
			  t.att->id);
	}
	fb_reset(out);
	status = join_answer(j, &resp, out) == FLEET_OK ? 200 : 500;
	/* The chain's entries are borrowed: not the response's to free. */
	memset(&resp, 0, sizeof(resp));
out:
	/* A challenge's payload is the attestor's, for the answer only. */
	free(t.res.deferral.payload.data);
	fleet_join_token_wipe(&t.in.token);
	fleet_join_request_free(&req);
	fb_free(&pt);
	fb_free(&t.cert);
	return status;
}

/* ---- the service ---------------------------------------------------------- */

const struct fleet_attestor *join_attestor(const struct fleet_join *j, const char *id)
{
	for (size_t i = 0; i < sizeof(j->attestors) / sizeof(j->attestors[0]); i++)
		if (j->attestors[i].id && strcmp(j->attestors[i].id, id) == 0)
			return &j->attestors[i];
	return NULL;
}

struct fleet_join *fleet_join_new(const struct fleet_join_config *c, struct fleet_errctx *ec)
{
	struct fleet_join *j;
	if (!c || !c->store || !c->ca || !c->seal || !c->trust_domain || !c->metrics) {
		fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "the join service needs its store, CA, "
							  "sealing key, trust domain and metrics");
		return NULL;
	}
	if (!(j = calloc(1, sizeof(*j)))) {
		fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		return NULL;
	}
	j->cfg = *c;
	snprintf(j->trust_domain, sizeof(j->trust_domain), "%s", c->trust_domain);
	j->cfg.trust_domain = j->trust_domain;
	snprintf(j->on_refusal, sizeof(j->on_refusal), "%s", c->on_refusal ? c->on_refusal : "");
	j->cfg.on_refusal = j->on_refusal;
	j->x509pop = c->x509pop;
	j->discovery = c->discovery;
	if (c->tpm) {
		j->tpm = *c->tpm;
		j->tpm_on = true;
		j->cfg.tpm = &j->tpm;
		j->attestors[4] = (struct fleet_attestor){.id = "tpm",
							  .verify = fleet_attestor_tpm_verify,
							  .cfg = &j->tpm,
							  .reasons = fleet_attestor_tpm_reasons};
	}
	if (c->cloud_iid)
		j->attestors[5] = (struct fleet_attestor){.id = "cloud-iid",
							  .verify = fleet_attestor_cloud_iid_verify,
							  .cfg = c->cloud_iid,
							  .reasons = fleet_attestor_cloud_iid_reasons,
							  .prepare = fleet_attestor_cloud_iid_prepare};
	j->attestors[0] = fleet_attestor_join_token;
	j->attestors[1] = (struct fleet_attestor){.id = "x509pop",
						  .verify = fleet_attestor_x509pop_verify,
						  .cfg = &j->x509pop,
						  .reasons = fleet_attestor_x509pop_reasons};
	j->attestors[2] = (struct fleet_attestor){.id = "provisioned",
						  .verify = fleet_attestor_provisioned_verify,
						  .reasons = fleet_attestor_provisioned_reasons};
	j->attestors[3] = (struct fleet_attestor){.id = "discovery",
						  .verify = fleet_attestor_discovery_verify,
						  .cfg = &j->discovery,
						  .reasons = fleet_attestor_discovery_reasons};
	X509 *cac = fleet_ca_cert(c->ca);
	unsigned char *der = NULL;
	int n = cac ? i2d_X509(cac, &der) : -1;
	if (n <= 0 || fleet_join_kid(cac, j->kid) != FLEET_OK) {
		OPENSSL_free(der);
		ERR_clear_error();
		free(j);
		fleet_errctx_msg(ec, FLEET_E_CRYPTO, "the CA certificate does not encode");
		return NULL;
	}
	j->ca_der = der;
	j->ca_der_len = (size_t)n;
	if (join_labels(j, ec) ||
	    fleet_metrics_register(c->metrics, FLEET_METRIC_COUNTER, "fleetd_joins_total",
				   "Machines joined (or reclaimed) by the join service, by attestor",
				   "attestor", fleet_attestor_ids, &j->m_joined, ec) ||
	    fleet_metrics_register(c->metrics, FLEET_METRIC_COUNTER, "fleetd_join_deferred_total",
				   "Joins deferred (pending approval or a challenge), by attestor",
				   "attestor", fleet_attestor_ids, &j->m_deferred, ec) ||
	    fleet_metrics_register(c->metrics, FLEET_METRIC_COUNTER, "fleetd_join_refused_total",
				   "Joins and renewals refused (security.join.refused), by "
				   "attestor:reason",
				   "reason", (const char *const *)j->labels, &j->m_refused, ec) ||
	    fleet_metrics_register(c->metrics, FLEET_METRIC_COUNTER, "fleetd_node_renewals_total",
				   "Node certificates renewed by proof of their key", NULL, NULL,
				   &j->m_renewed, ec) ||
	    join_refusal_start(j, ec)) {
		fleet_join_free(j);
		return NULL;
	}
	return j;
}

void fleet_join_free(struct fleet_join *j)
{
	if (!j)
		return;
	join_refusal_stop(j);
	for (size_t i = 0; j->labels[i]; i++)
		free(j->labels[i]);
	OPENSSL_free(j->ca_der);
	free(j);
}
