/*
 * store_join_tx.c: the join transaction (store.h X1-X6). The join service
 * runs an attestor and its own decisions (pool, expect, reclaim, the node
 * and its certificate) inside ONE write transaction, so what the attestor
 * read (a token's uses, a certificate's row, a lease's epoch) cannot change
 * before the join's writes commit, and a refusal or a kill -9 anywhere in
 * it leaves the store as it was.
 */
#include "fleetd/store/store_int.h"

#include <string.h>

fleet_err fleet_store_join_tx(struct fleet_store *st, fleet_store_tx_fn fn, void *arg)
{
	struct fleet_store_tx tx = {.st = st};
	struct db_stmt *s;
	fleet_err e;
	if (!st || !fn)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	if ((e = st_writable(st)) || (e = st_begin(st)))
		return st_unlock(st, e);
	/* X2: one clock for the whole transaction, the store's. */
	if (!(e = st_prepare(st, "SELECT unixepoch()", &s))) {
		if (db_step(s) == DB_ROW)
			tx.now = db_column_int64(s, 0);
		db_finalize(s);
		if (tx.now <= 0)
			e = st_fail(st, FLEET_STORE_E_IO, "the store's clock did not answer");
	}
	if (!e)
		e = fn(&tx, arg);
	if (e) {
		st_rollback(st);
		return st_unlock(st, e);
	}
	return st_unlock(st, st_commit(st));
}

fleet_err fleet_store_tx_now(struct fleet_store_tx *tx, int64_t *now)
{
	if (!tx || !now)
		return FLEET_STORE_E_INVALID;
	*now = tx->now;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_tx_token(struct fleet_store_tx *tx, const char *id, const uint8_t secret[32],
			       const char *role, bool take, struct fleet_store_token *out,
			       const char **reason)
{
	const char *dummy;
	if (!tx)
		return FLEET_STORE_E_INVALID;
	if (!reason)
		reason = &dummy;
	*reason = NULL;
	return st_token_check_tx(tx->st, id, secret, role, take, out, reason);
}

fleet_err fleet_store_tx_pool(struct fleet_store_tx *tx, const char *id,
			      struct fleet_store_pool *out)
{
	if (!tx || !out)
		return FLEET_STORE_E_INVALID;
	return st_pool_get(tx->st, id, out);
}

fleet_err fleet_store_tx_node(struct fleet_store_tx *tx, const char *id,
			      struct fleet_store_node *out)
{
	if (!tx || !out)
		return FLEET_STORE_E_INVALID;
	return st_node_get(tx->st, id, out);
}

fleet_err fleet_store_tx_node_cert(struct fleet_store_tx *tx, const uint8_t *der, size_t len,
				   struct fleet_store_node *node, int64_t *not_after,
				   const char **reason)
{
	const char *dummy;
	if (!tx || !node)
		return FLEET_STORE_E_INVALID;
	if (!reason)
		reason = &dummy;
	return st_node_cert_lookup(tx->st, der, len, node, not_after, reason);
}

fleet_err fleet_store_tx_use(struct fleet_store_tx *tx, const char *attestor, const char *subject,
			     int64_t expires_at)
{
	if (!tx)
		return FLEET_STORE_E_INVALID;
	return st_attestation_use(tx->st, attestor, subject, (time_t)expires_at);
}

fleet_err fleet_store_tx_use_seen(struct fleet_store_tx *tx, const char *attestor,
				  const char *subject, bool *seen)
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !attestor || !subject || !seen)
		return FLEET_STORE_E_INVALID;
	*seen = false;
	if ((e = st_prepare(tx->st,
			    "SELECT 1 FROM attestation_uses WHERE attestor = ?1 AND subject = ?2",
			    &s)))
		return e;
	db_bind_text(s, 1, attestor, -1);
	db_bind_text(s, 2, subject, -1);
	int rc = db_step(s);
	db_finalize(s);
	if (rc == DB_ROW)
		*seen = true;
	else if (rc != DB_DONE)
		return st_dberr(tx->st, rc, "read attestation use");
	return FLEET_STORE_OK;
}

static bool role_ok(const char *r)
{
	return r && (!strcmp(r, "node") || !strcmp(r, "site") || !strcmp(r, "ramdisk"));
}

fleet_err fleet_store_tx_node_insert(struct fleet_store_tx *tx, const struct fleet_store_node_in *in)
{
	struct fleet_store *st;
	struct fleet_store_node old;
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !in)
		return FLEET_STORE_E_INVALID;
	st = tx->st;
	if (!st_node_id_ok(in->id) || !role_ok(in->role) || !in->pool || !in->joined_by ||
	    !st_text_ok(in->joined_by, 31) || (in->product_uuid && strlen(in->product_uuid) != 36) ||
	    in->now < 0)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a node has an id (a-z 0-9 _ -), a pool, a role and its attestor");
	e = st_node_get(st, in->id, &old);
	if (e == FLEET_STORE_OK)
		return st_fail(st, FLEET_STORE_E_CONFLICT, "node %s exists", in->id);
	if (e != FLEET_STORE_E_NOT_FOUND)
		return e;
	if ((e = st_prepare(st,
			    "INSERT INTO nodes (id, pool, site, role, generation, joined_at, "
			    "joined_by, token, product_uuid) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8)",
			    &s)))
		return e;
	db_bind_text(s, 1, in->id, -1);
	db_bind_text(s, 2, in->pool, -1);
	if (in->site && in->site[0])
		db_bind_text(s, 3, in->site, -1);
	else
		db_bind_null(s, 3);
	db_bind_text(s, 4, in->role, -1);
	db_bind_int64(s, 5, in->now);
	db_bind_text(s, 6, in->joined_by, -1);
	if (in->token && in->token[0])
		db_bind_text(s, 7, in->token, -1);
	else
		db_bind_null(s, 7);
	if (in->product_uuid)
		db_bind_text(s, 8, in->product_uuid, -1);
	else
		db_bind_null(s, 8);
	if ((e = st_step_done(st, s, "insert node", NULL)))
		return e;
	return st_node_cert_insert(st, in->id, 1, in->cert_der, in->cert_len, (time_t)in->now);
}

fleet_err fleet_store_tx_node_reclaim(struct fleet_store_tx *tx, const char *node_id,
				      const uint8_t *cert_der, size_t cert_len, int64_t now,
				      int64_t *generation)
{
	if (!tx)
		return FLEET_STORE_E_INVALID;
	return st_node_reclaim_tx(tx->st, node_id, cert_der, cert_len, (time_t)now, generation);
}

fleet_err fleet_store_tx_node_cert_add(struct fleet_store_tx *tx, const char *node_id,
				       const uint8_t *cert_der, size_t cert_len, int64_t now)
{
	struct fleet_store_node n;
	fleet_err e;
	if (!tx)
		return FLEET_STORE_E_INVALID;
	if ((e = st_node_get(tx->st, node_id, &n)))
		return e;
	if (n.retired_at)
		return st_fail(tx->st, FLEET_STORE_E_STATE, "a retired node gets no certificate");
	return st_node_cert_insert(tx->st, node_id, n.generation, cert_der, cert_len, (time_t)now);
}

fleet_err fleet_store_tx_node_certs_current(struct fleet_store_tx *tx, const char *node_id,
					    size_t *n)
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !node_id || !n)
		return FLEET_STORE_E_INVALID;
	*n = 0;
	if ((e = st_prepare(tx->st,
			    "SELECT count(*) FROM node_certs c JOIN nodes n ON n.id = c.node_id "
			    "WHERE c.node_id = ?1 AND c.generation = n.generation AND "
			    "c.revoked_at IS NULL AND c.not_after > ?2",
			    &s)))
		return e;
	db_bind_text(s, 1, node_id, -1);
	db_bind_int64(s, 2, tx->now);
	int rc = db_step(s);
	if (rc == DB_ROW)
		*n = (size_t)db_column_int64(s, 0);
	db_finalize(s);
	return rc == DB_ROW ? FLEET_STORE_OK : st_dberr(tx->st, rc, "count node certificates");
}

fleet_err fleet_store_tx_node_newest_cert(struct fleet_store_tx *tx, const char *node_id,
					  int64_t *issued_at)
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !node_id || !issued_at)
		return FLEET_STORE_E_INVALID;
	*issued_at = 0;
	if ((e = st_prepare(tx->st, "SELECT max(issued_at) FROM node_certs WHERE node_id = ?1", &s)))
		return e;
	db_bind_text(s, 1, node_id, -1);
	int rc = db_step(s);
	if (rc == DB_ROW)
		*issued_at = db_column_int64(s, 0);
	db_finalize(s);
	return rc == DB_ROW ? FLEET_STORE_OK : st_dberr(tx->st, rc, "read node certificates");
}

fleet_err fleet_store_tx_node_bind(struct fleet_store_tx *tx, const char *kind, const char *subject,
				   const char *node_id, int64_t now)
{
	if (!tx)
		return FLEET_STORE_E_INVALID;
	return st_node_bind_tx(tx->st, kind, subject, node_id, (time_t)now);
}

fleet_err fleet_store_tx_binding(struct fleet_store_tx *tx, const char *kind, const char *subject,
				 char node_id[FLEET_STORE_NODE_ID_MAX + 1])
{
	if (!tx || !node_id)
		return FLEET_STORE_E_INVALID;
	return st_binding_get(tx->st, kind, subject, node_id);
}

/* X6: the subject of kind the node holds (a node holds one EK); NOT_FOUND
 * when none. */
fleet_err fleet_store_tx_node_bound(struct fleet_store_tx *tx, const char *node_id,
				    const char *kind, char subject[129])
{
	struct db_stmt *s;
	fleet_err e;
	if (!tx || !node_id || !kind || !subject)
		return FLEET_STORE_E_INVALID;
	subject[0] = '\0';
	if ((e = st_prepare(tx->st,
			    "SELECT subject FROM node_bindings WHERE node_id = ?1 AND kind = ?2 "
			    "ORDER BY created_at, subject LIMIT 1",
			    &s)))
		return e;
	db_bind_text(s, 1, node_id, -1);
	db_bind_text(s, 2, kind, -1);
	int rc = db_step(s);
	if (rc == DB_ROW) {
		if (!st_col_text(s, 0, subject, 129) || !subject[0])
			e = st_fail(tx->st, FLEET_STORE_E_CORRUPT, "a binding names no subject");
	} else if (rc == DB_DONE) {
		e = st_fail(tx->st, FLEET_STORE_E_NOT_FOUND, "not bound");
	} else {
		e = st_dberr(tx->st, rc, "read binding");
	}
	db_finalize(s);
	return e;
}
