/*
 * join_renew.c: POST /v1/renew (join.h JS8): a node renews its current
 * certificate by proving it holds that certificate's key, over the new
 * CSR. An expired certificate does not renew (the node re-joins with
 * x509pop), a revoked one or one of an older generation never does.
 */
#include "fleetd/join/join_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "fleetd/obs/journal.h"
#include "lib/join_evidence.h"
#include "lib/tpm_alg.h"
#include "lib/tpm_join_evidence.h"
#include "lib/tpm.h"

const char *const join_renew_reasons[] = {
	FLEET_CA_REASON_CSR_MALFORMED, FLEET_CA_REASON_CSR_KEY_TYPE,
	FLEET_CA_REASON_CSR_SIGNATURE, "cert-unknown", "cert-revoked", "cert-generation",
	"node-retired", "renew-expired", "renew-ramdisk", "renew-too-many", "renew-signature",
	"tpm-ak-uri", "key-statement-unknown", "key-statement-unsupported",
	"key-attestation-missing", "key-attestation-ak", "node-key-malformed",
	"node-key-signature", "node-key-nonce", "node-key-name", "node-key-attributes",
	"node-key-not-csr", NULL};

struct renew_tx {
	struct fleet_join *j;
	const struct fleet_renew_request *req;
	uint8_t csr_spki_sha256[32];
	char statement[FLEET_NODE_STATEMENT_MAX + 1]; /* the leaf's urn:bc:tpm-ak:, "" none */
	const char *refused;
	struct fleet_store_node node;
	struct fleet_buf cert;
};

static fleet_err refuse(struct renew_tx *t, const char *reason)
{
	t->refused = reason;
	return FLEET_STORE_E_STATE;
}

/* A leaf naming an AK renews only with that AK's certification of the new
 * key (spec: renewing a TPM-held key). NULL, or the reason. */
static const char *key_attested(const struct renew_tx *t, const char *statement)
{
	const struct fleet_renew_request *q = t->req;
	const struct fleet_tpm_key_attestation *ka = &q->key_attestation;
	struct fleet_errctx ec;
	TPM2B_PUBLIC ak;
	uint8_t want[2 + 64], name[2 + 64], csr_sha256[32];
	size_t want_len, name_len;
	const char *why = NULL;
	memset(&ec, 0, sizeof(ec));
	if (!t->j->tpm_on)
		return "key-statement-unsupported";
	if (!q->has_key_attestation)
		return "key-attestation-missing";
	if (fleet_tpm_ak_uri_parse(statement, want, sizeof(want), &want_len))
		return "tpm-ak-uri";
	if (fleet_tpm_public_parse(ka->ak_public.data, ka->ak_public.len, &ak, &ec) ||
	    fleet_tpm_name(&ak.publicArea, name, sizeof(name), &name_len) ||
	    name_len != want_len || CRYPTO_memcmp(name, want, name_len) != 0 ||
	    fleet_tpm_ak_check(&ak.publicArea, &why))
		return "key-attestation-ak";
	if (fleet_hash(FLEET_ALG_SHA256, q->csr.data, q->csr.len, csr_sha256) ||
	    fleet_tpm_certification_check(&ak.publicArea, &ka->cert, csr_sha256,
					  t->csr_spki_sha256, &why))
		return "node-key-malformed";
	return why;
}

static fleet_err renew_tx(struct fleet_store_tx *tx, void *arg)
{
	struct renew_tx *t = arg;
	const struct fleet_renew_request *q = t->req;
	struct fleet_node_cert_request cr;
	struct fleet_errctx ec;
	struct fleet_buf msg;
	const char *why = NULL;
	int64_t now, not_after = 0;
	X509 *leaf = NULL, *x = NULL;
	fleet_err e;

	memset(&ec, 0, sizeof(ec));
	fb_init(&msg);
	if ((e = fleet_store_tx_now(tx, &now)))
		return e;
	e = fleet_store_tx_node_cert(tx, q->cert.data, q->cert.len, &t->node, &not_after, &why);
	if (e == FLEET_STORE_E_NOT_FOUND || (e == FLEET_STORE_E_STATE && why))
		return refuse(t, why ? why : "cert-unknown");
	if (e)
		return e;
	if (not_after <= now)
		return refuse(t, "renew-expired");
	if (!strcmp(t->node.role, "ramdisk"))
		return refuse(t, "renew-ramdisk");
	/* A node renews about once a day; a node that renews in a loop
	 * (or a captured renewal sent again) stops at the cap rather than
	 * grow its rows without end. */
	size_t current = 0;
	if ((e = fleet_store_tx_node_certs_current(tx, t->node.id, &current)))
		return e;
	if (current >= JOIN_RENEW_MAX_CURRENT)
		return refuse(t, "renew-too-many");
	const unsigned char *p = q->cert.data;
	leaf = d2i_X509(NULL, &p, (long)q->cert.len);
	EVP_PKEY *pub = leaf ? X509_get0_pubkey(leaf) : NULL;
	if (!pub ||
	    (e = fleet_renew_signing_input(q->csr.data, q->csr.len, q->cert.data, q->cert.len,
					   &msg)) ||
	    fleet_es256_verify(pub, msg.data, msg.len, q->sig, &ec) != FLEET_OK) {
		ERR_clear_error();
		e = refuse(t, "renew-signature");
		goto out;
	}
	/* The statement is judged after the key's proof: a refusal here
	 * names a node that proved itself, and is its owner's to see. */
	/* The statement is read from the leaf the store holds byte for byte,
	 * never from the CSR, so a CSR can neither add nor drop it. */
	if ((why = fleet_tpm_leaf_statement(leaf, t->statement, sizeof(t->statement))) ||
	    (t->statement[0] && (why = key_attested(t, t->statement)))) {
		e = refuse(t, why);
		goto out;
	}
	memset(&cr, 0, sizeof(cr));
	/* No downgrade: the statement goes forward into the new leaf. */
	cr.statements[0] = t->statement[0] ? t->statement : NULL;
	cr.csr_der = q->csr.data;
	cr.csr_len = q->csr.len;
	cr.trust_domain = t->j->cfg.trust_domain;
	cr.node_id = t->node.id;
	cr.role = t->node.role;
	cr.not_before = (time_t)now;
	cr.validity_seconds = t->j->cfg.cert_ttl_seconds;
	if ((e = fleet_ca_issue_node(t->j->cfg.ca, &cr, &x, &ec))) {
		ERR_clear_error();
		fleet_log(LOG_ERR, "join-issue-failed",
			  FLEET_LOG_FIELDS({"FLEET_REASON", ec.reason}), "node certificate: %s",
			  ec.detail);
		e = FLEET_E_CRYPTO;
		goto out;
	}
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);
	if (n <= 0) {
		ERR_clear_error();
		e = FLEET_E_NOMEM;
		goto out;
	}
	e = fb_put(&t->cert, der, (size_t)n);
	OPENSSL_free(der);
	if (!e)
		e = fleet_store_tx_node_cert_add(tx, t->node.id, t->cert.data, t->cert.len, now);
out:
	X509_free(leaf);
	X509_free(x);
	fb_free(&msg);
	return e;
}

int fleet_join_renew(struct fleet_join *j, const char *peer, const uint8_t *body, size_t len,
		     struct fleet_buf *out, const char **reason)
{
	struct fleet_renew_request req;
	struct fleet_join_response resp;
	struct join_refusal rf;
	struct fleet_errctx ec;
	struct renew_tx t;
	uint8_t spki[32];
	int status = 500;
	fleet_err e;

	memset(&t, 0, sizeof(t));
	memset(&rf, 0, sizeof(rf));
	memset(&ec, 0, sizeof(ec));
	memset(&resp, 0, sizeof(resp));
	fb_init(&t.cert);
	rf.attestor = "renew";
	rf.peer = peer;
	if (fleet_renew_request_decode(body, len, &req, &ec) != FLEET_OK) {
		*reason = "renew-malformed";
		join_error(out, "renew-malformed", ec.detail);
		fb_free(&t.cert);
		return 400;
	}
	if (fleet_csr_spki_sha256(req.csr.data, req.csr.len, spki, &ec) != FLEET_OK) {
		ERR_clear_error();
		rf.reason = ec.reason ? ec.reason : FLEET_CA_REASON_CSR_MALFORMED;
		goto denied;
	}
	t.j = j;
	t.req = &req;
	memcpy(t.csr_spki_sha256, spki, sizeof(spki));
	e = fleet_store_join_tx(j->cfg.store, renew_tx, &t);
	if (t.refused) {
		rf.reason = t.refused;
		rf.node_id = t.node.id[0] ? t.node.id : NULL;
		goto denied;
	}
	if (e) {
		fleet_log(LOG_ERR, "renew-failed", FLEET_LOG_FIELDS({"FLEET_ERROR", fleet_err_str(e)}),
			  "a renewal could not be decided (%s); the node retries", fleet_err_str(e));
		*reason = "join-unavailable";
		join_error(out, "unavailable", NULL);
		status = 503;
		goto out;
	}
	resp.status = FLEET_JOIN_JOINED;
	if (fleet_join_csr_sha256(&req.csr, resp.csr_sha256))
		goto out;
	memcpy(resp.node_id, t.node.id, sizeof(resp.node_id));
	resp.n_chain = 2;
	resp.chain[0].data = t.cert.data;
	resp.chain[0].len = t.cert.len;
	resp.chain[1].data = j->ca_der;
	resp.chain[1].len = j->ca_der_len;
	fleet_metric_inc(j->m_renewed);
	fleet_log(LOG_INFO, "node-renewed", FLEET_LOG_FIELDS({"FLEET_NODE", t.node.id}),
		  "node %s renewed its certificate", t.node.id);
	fb_reset(out);
	status = join_answer(j, &resp, out) == FLEET_OK ? 200 : 500;
	memset(&resp, 0, sizeof(resp));
	goto out;
denied:
	join_refused(j, &rf);
	memset(&resp, 0, sizeof(resp));
	resp.status = FLEET_JOIN_DENIED;
	*reason = "join-denied";
	fb_reset(out);
	status = join_answer(j, &resp, out) == FLEET_OK ? 403 : 500;
out:
	fleet_renew_request_free(&req);
	fb_free(&t.cert);
	return status;
}
