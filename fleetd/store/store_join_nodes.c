/*
 * store_join_nodes.c: the join service's nodes, their certificates and
 * bindings (store.h N1-N4, schema version 7).
 */
#include "fleetd/store/store_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

bool st_node_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > FLEET_STORE_NODE_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

static bool node_role_ok(const char *r)
{
	return r && (!strcmp(r, "node") || !strcmp(r, "site") || !strcmp(r, "ramdisk"));
}

/* SHA-256 and notAfter of one whole DER certificate. */
static bool cert_facts(const uint8_t *der, size_t len, uint8_t sha[32], int64_t *not_after)
{
	const unsigned char *p = der;
	X509 *x = der && len ? d2i_X509(NULL, &p, (long)len) : NULL;
	struct tm tm;
	unsigned int n = 0;
	bool ok = x && p == der + len && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1 &&
		  EVP_Digest(der, len, sha, &n, EVP_sha256(), NULL) && n == 32;
	if (ok)
		*not_after = (int64_t)timegm(&tm);
	X509_free(x);
	return ok;
}

fleet_err st_node_cert_insert(struct fleet_store *st, const char *node_id, int64_t generation,
			     const uint8_t *der, size_t len, time_t now)
{
	uint8_t sha[32];
	int64_t not_after;
	struct db_stmt *s;
	fleet_err e;
	if (len > 16384 || !cert_facts(der, len, sha, &not_after))
		return st_fail(st, FLEET_STORE_E_INVALID, "not one DER X.509 certificate");
	if ((e = st_prepare(st,
			    "INSERT INTO node_certs (node_id, generation, sha256, der, not_after, "
			    "issued_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
			    &s)))
		return e;
	db_bind_text(s, 1, node_id, -1);
	db_bind_int64(s, 2, generation);
	db_bind_blob(s, 3, sha, 32);
	db_bind_blob(s, 4, der, (int)len);
	db_bind_int64(s, 5, not_after);
	db_bind_int64(s, 6, now);
	return st_step_done(st, s, "record node certificate", NULL);
}

/* ---- N1: a token join's final round ---------------------------------------- */

/* The join transaction's functions (store.h X3, X6) in one transaction:
 * the same writes the join service makes for a token join. */
struct join_commit_arg {
	const struct fleet_store_join_in *in;
	struct fleet_store_token *token_out;
	const char **reason;
};

static fleet_err join_commit_tx(struct fleet_store_tx *tx, void *arg)
{
	struct join_commit_arg *a = arg;
	const struct fleet_store_join_in *in = a->in;
	struct fleet_store_token t;
	fleet_err e = fleet_store_tx_token(tx, in->token_id, in->token_secret, in->token_role, true,
					   &t, a->reason);
	if (e)
		return e;
	struct fleet_store_node_in ni = {
		.id = in->node_id,
		.pool = t.pool,
		.site = t.site[0] ? t.site : NULL,
		.role = in->node_role,
		.joined_by = in->attestor,
		.token = t.id,
		.product_uuid = in->product_uuid,
		.cert_der = in->cert_der,
		.cert_len = in->cert_len,
		.now = in->now,
	};
	if ((e = fleet_store_tx_node_insert(tx, &ni)))
		return e;
	if (a->token_out)
		*a->token_out = t;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_join_commit(struct fleet_store *st, const struct fleet_store_join_in *in,
				  struct fleet_store_token *token_out, const char **reason)
{
	const char *dummy;
	if (!st || !in)
		return FLEET_STORE_E_INVALID;
	if (!reason)
		reason = &dummy;
	*reason = NULL;
	if (!node_role_ok(in->node_role) || !in->attestor || strlen(in->attestor) < 1 ||
	    strlen(in->attestor) > 31 || (in->product_uuid && strlen(in->product_uuid) != 36) ||
	    in->now < 0)
		return FLEET_STORE_E_INVALID;
	struct join_commit_arg a = {.in = in, .token_out = token_out, .reason = reason};
	return fleet_store_join_tx(st, join_commit_tx, &a);
}

/* ---- nodes ------------------------------------------------------------------- */

fleet_err st_node_get(struct fleet_store *st, const char *id, struct fleet_store_node *out)
{
	struct db_stmt *s;
	fleet_err e;
	memset(out, 0, sizeof(*out));
	if (!st_node_id_ok(id))
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "not a node id");
	if ((e = st_prepare(st,
			    "SELECT id, pool, site, role, generation, joined_at, joined_by, token, "
			    "product_uuid, retired_at FROM nodes WHERE id = ?1",
			    &s)))
		return e;
	db_bind_text(s, 1, id, -1);
	int rc = db_step(s);
	if (rc == DB_ROW) {
		if (!st_col_text(s, 0, out->id, sizeof(out->id)) ||
		    !st_col_text(s, 1, out->pool, sizeof(out->pool)) ||
		    !st_col_text(s, 2, out->site, sizeof(out->site)) ||
		    !st_col_text(s, 3, out->role, sizeof(out->role)) ||
		    !st_col_text(s, 6, out->joined_by, sizeof(out->joined_by)) ||
		    !st_col_text(s, 7, out->token, sizeof(out->token)) ||
		    !st_col_text(s, 8, out->product_uuid, sizeof(out->product_uuid)))
			e = st_fail(st, FLEET_STORE_E_CORRUPT, "a nodes row holds what it cannot");
		out->generation = db_column_int64(s, 4);
		out->joined_at = db_column_int64(s, 5);
		out->retired_at = db_column_int64(s, 9);
	} else if (rc == DB_DONE) {
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no node %s", id);
	} else {
		e = st_dberr(st, rc, "read node");
	}
	db_finalize(s);
	return e;
}

fleet_err fleet_store_node_get(struct fleet_store *st, const char *id, struct fleet_store_node *out)
{
	if (!st || !out)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, st_node_get(st, id, out));
}

/* N2 (store.h X4): the row byte for byte, then the node, with the reason. */
fleet_err st_node_cert_lookup(struct fleet_store *st, const uint8_t *der, size_t len,
			      struct fleet_store_node *node, int64_t *not_after_out,
			      const char **reason)
{
	uint8_t sha[32];
	int64_t not_after;
	struct db_stmt *s;
	fleet_err e;
	char id[FLEET_STORE_NODE_ID_MAX + 1] = "";
	int64_t generation = 0, revoked = 0;
	*reason = "cert-unknown";
	if (!cert_facts(der, len, sha, &not_after))
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "not one DER X.509 certificate");
	if ((e = st_prepare(st,
			    "SELECT node_id, generation, revoked_at, der FROM node_certs "
			    "WHERE sha256 = ?1",
			    &s)))
		return e;
	db_bind_blob(s, 1, sha, 32);
	int rc = db_step(s);
	bool same = false;
	if (rc == DB_ROW) {
		same = (size_t)db_column_bytes(s, 3) == len &&
		       memcmp(db_column_blob(s, 3), der, len) == 0; /* byte for byte */
		if (!st_col_text(s, 0, id, sizeof(id)))
			same = false;
		generation = db_column_int64(s, 1);
		revoked = db_column_int64(s, 2);
	}
	db_finalize(s);
	if (rc != DB_ROW && rc != DB_DONE)
		return st_dberr(st, rc, "read node certificate");
	if (!same)
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "no such node certificate");
	if ((e = st_node_get(st, id, node)))
		return e;
	if (not_after_out)
		*not_after_out = not_after;
	/* An older generation first: a reclaim revoked it too, and the
	 * generation is the reason it is gone. */
	if (generation != node->generation) {
		*reason = "cert-generation";
		return st_fail(st, FLEET_STORE_E_STATE,
			       "the certificate is of an older identity generation");
	}
	if (revoked) {
		*reason = "cert-revoked";
		return st_fail(st, FLEET_STORE_E_STATE, "the certificate is revoked");
	}
	if (node->retired_at) {
		*reason = "node-retired";
		return st_fail(st, FLEET_STORE_E_STATE, "the node is retired");
	}
	*reason = NULL;
	return FLEET_STORE_OK;
}

static fleet_err cert_current(struct fleet_store *st, const uint8_t *der, size_t len,
			      struct fleet_store_node *node)
{
	const char *reason;
	return st_node_cert_lookup(st, der, len, node, NULL, &reason);
}

fleet_err fleet_store_node_cert_current(struct fleet_store *st, const uint8_t *der, size_t len,
					struct fleet_store_node *node)
{
	if (!st || !node)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, cert_current(st, der, len, node));
}

/* N3 inside the caller's transaction (X6). */
fleet_err st_node_reclaim_tx(struct fleet_store *st, const char *node_id, const uint8_t *der,
			     size_t len, time_t now, int64_t *generation)
{
	struct fleet_store_node n;
	struct db_stmt *s;
	fleet_err e;
	if ((e = st_node_get(st, node_id, &n)))
		return e;
	if (n.retired_at)
		return st_fail(st, FLEET_STORE_E_STATE, "a retired node is not reclaimed");
	int64_t g = n.generation + 1;
	if ((e = st_prepare(st, "UPDATE nodes SET generation = ?2 WHERE id = ?1", &s)))
		return e;
	db_bind_text(s, 1, node_id, -1);
	db_bind_int64(s, 2, g);
	if ((e = st_step_done(st, s, "raise generation", NULL)))
		return e;
	if ((e = st_prepare(st,
			    "UPDATE node_certs SET revoked_at = ?2 WHERE node_id = ?1 AND "
			    "generation < ?3 AND revoked_at IS NULL",
			    &s)))
		return e;
	db_bind_text(s, 1, node_id, -1);
	db_bind_int64(s, 2, now);
	db_bind_int64(s, 3, g);
	if ((e = st_step_done(st, s, "revoke older certificates", NULL)))
		return e;
	if ((e = st_node_cert_insert(st, node_id, g, der, len, now)))
		return e;
	if (generation)
		*generation = g;
	return FLEET_STORE_OK;
}

static fleet_err node_reclaim(struct fleet_store *st, const char *node_id, const uint8_t *der,
			      size_t len, time_t now, int64_t *generation)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if ((e = st_begin(st)))
		return e;
	if ((e = st_node_reclaim_tx(st, node_id, der, len, now, generation))) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_node_reclaim(struct fleet_store *st, const char *node_id,
				   const uint8_t *cert_der, size_t cert_len, time_t now,
				   int64_t *generation)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, node_reclaim(st, node_id, cert_der, cert_len, now, generation));
}

/* N4 inside the caller's transaction (X6). */
fleet_err st_node_bind_tx(struct fleet_store *st, const char *kind, const char *subject,
			  const char *node_id, time_t now)
{
	struct db_stmt *s;
	char owner[FLEET_STORE_NODE_ID_MAX + 1] = "";
	fleet_err e = st_binding_get(st, kind, subject, owner);
	if (e == FLEET_STORE_OK)
		return strcmp(owner, node_id) == 0
			       ? FLEET_STORE_OK
			       : st_fail(st, FLEET_STORE_E_CONFLICT, "bound-elsewhere: %s", owner);
	if (e != FLEET_STORE_E_NOT_FOUND)
		return e;
	if (!st_node_id_ok(node_id))
		return st_fail(st, FLEET_STORE_E_INVALID, "a binding names a node");
	if ((e = st_prepare(st,
			    "INSERT INTO node_bindings (kind, subject, node_id, created_at) "
			    "VALUES (?1, ?2, ?3, ?4)",
			    &s)))
		return e;
	db_bind_text(s, 1, kind, -1);
	db_bind_text(s, 2, subject, -1);
	db_bind_text(s, 3, node_id, -1);
	db_bind_int64(s, 4, now);
	return st_step_done(st, s, "bind", NULL);
}

/* The node (kind, subject) is bound to; NOT_FOUND when none. */
fleet_err st_binding_get(struct fleet_store *st, const char *kind, const char *subject,
			 char owner[FLEET_STORE_NODE_ID_MAX + 1])
{
	struct db_stmt *s;
	fleet_err e;
	owner[0] = '\0';
	if (!kind || (strcmp(kind, "ek") && strcmp(kind, "product-uuid")) || !st_text_ok(subject, 128))
		return st_fail(st, FLEET_STORE_E_INVALID, "a binding is ek or product-uuid and a "
							  "subject");
	if ((e = st_prepare(st, "SELECT node_id FROM node_bindings WHERE kind = ?1 AND subject = ?2",
			    &s)))
		return e;
	db_bind_text(s, 1, kind, -1);
	db_bind_text(s, 2, subject, -1);
	int rc = db_step(s);
	if (rc == DB_ROW) {
		if (!st_col_text(s, 0, owner, FLEET_STORE_NODE_ID_MAX + 1) || !owner[0])
			e = st_fail(st, FLEET_STORE_E_CORRUPT, "a binding names no node");
	} else if (rc == DB_DONE) {
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "not bound");
	} else {
		e = st_dberr(st, rc, "read binding");
	}
	db_finalize(s);
	return e;
}

static fleet_err node_bind(struct fleet_store *st, const char *kind, const char *subject,
			   const char *node_id, time_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if ((e = st_begin(st)))
		return e;
	if ((e = st_node_bind_tx(st, kind, subject, node_id, now))) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_node_bind(struct fleet_store *st, const char *kind, const char *subject,
				const char *node_id, time_t now)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, node_bind(st, kind, subject, node_id, now));
}

/* N5, N6: the operator's, each one statement after the node is read. */
static fleet_err node_end(struct fleet_store *st, const char *node_id, time_t now, bool retire,
			  size_t *revoked)
{
	struct fleet_store_node n;
	struct db_stmt *s;
	int changes = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if ((e = st_begin(st)))
		return e;
	if ((e = st_node_get(st, node_id, &n)))
		goto out;
	if (retire && n.retired_at) {
		e = st_fail(st, FLEET_STORE_E_STATE, "node %s is retired already", node_id);
		goto out;
	}
	if ((e = st_prepare(st,
			    retire ? "UPDATE nodes SET retired_at = ?2 WHERE id = ?1"
				   : "UPDATE node_certs SET revoked_at = ?2 WHERE node_id = ?1 AND "
				     "revoked_at IS NULL",
			    &s)))
		goto out;
	db_bind_text(s, 1, node_id, -1);
	db_bind_int64(s, 2, now);
	e = st_step_done(st, s, retire ? "retire node" : "revoke node certificates", &changes);
	if (!e && revoked)
		*revoked = (size_t)changes;
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_node_retire(struct fleet_store *st, const char *node_id, time_t now)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, node_end(st, node_id, now, true, NULL));
}

fleet_err fleet_store_node_revoke(struct fleet_store *st, const char *node_id, time_t now,
				  size_t *revoked)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, node_end(st, node_id, now, false, revoked));
}
