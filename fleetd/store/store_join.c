/*
 * store_join.c: the join service's pools, tokens and single-use evidence
 * (store.h J1-J5, schema version 6).
 */
#include "fleetd/store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/tpm_alg.h"

/* 1..max of a-z 0-9 '-' */
static bool slug_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

static bool token_id_ok(const char *s)
{
	if (!s || strlen(s) != FLEET_STORE_TOKEN_ID_LEN)
		return false;
	for (size_t i = 0; i < FLEET_STORE_TOKEN_ID_LEN; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

static bool role_ok(const char *r)
{
	return r && (!strcmp(r, "node") || !strcmp(r, "site") || !strcmp(r, "provisioned") ||
		     !strcmp(r, "discovery"));
}

static bool pattern_ok(const char *s, size_t len, const char *allowed)
{
	if (!s)
		return true;
	if (strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr(allowed, s[i]))
			return false;
	return true;
}

/* ---- pools ----------------------------------------------------------------- */

static fleet_err pool_create(struct fleet_store *st, const struct fleet_store_pool *p)
{
	char list[FLEET_STORE_POOL_MAX_ATTESTORS * (FLEET_STORE_ATTESTOR_MAX + 1) + 1] = "";
	size_t off = 0;
	struct db_stmt *s;
	fleet_err e = st_writable(st);

	if (e)
		return e;
	if (!slug_ok(p->id, FLEET_STORE_POOL_ID_MAX) || !st_text_ok(p->owner, 63) ||
	    p->n_attestors > FLEET_STORE_POOL_MAX_ATTESTORS || p->created_at < 0)
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a pool is an id of a-z 0-9 '-', an owner and 0..%d attestors",
			       FLEET_STORE_POOL_MAX_ATTESTORS);
	for (size_t i = 0; i < p->n_attestors; i++) {
		if (!slug_ok(p->attestors[i], FLEET_STORE_ATTESTOR_MAX))
			return st_fail(st, FLEET_STORE_E_INVALID,
				       "an attestor id is 1..%d of a-z 0-9 '-'",
				       FLEET_STORE_ATTESTOR_MAX);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->attestors[i], p->attestors[j]))
				return st_fail(st, FLEET_STORE_E_INVALID,
					       "attestor %s is listed twice", p->attestors[i]);
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? "," : "",
					p->attestors[i]);
	}
	if ((e = st_prepare(st,
			    "INSERT INTO pools (id, owner, join_attestors, created_at) "
			    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id) DO NOTHING",
			    &s)))
		return e;
	db_bind_text(s, 1, p->id, -1);
	db_bind_text(s, 2, p->owner, -1);
	if (p->n_attestors)
		db_bind_text(s, 3, list, -1);
	else
		db_bind_null(s, 3);
	db_bind_int64(s, 4, p->created_at);
	int changes = 0;
	if ((e = st_step_done(st, s, "create pool", &changes)))
		return e;
	return changes ? FLEET_STORE_OK
		       : st_fail(st, FLEET_STORE_E_CONFLICT, "a pool %s exists already", p->id);
}

fleet_err fleet_store_pool_create(struct fleet_store *st, const struct fleet_store_pool *p)
{
	if (!st || !p)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, pool_create(st, p));
}

static fleet_err pool_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_pool *p = el;
	char list[FLEET_STORE_POOL_MAX_ATTESTORS * (FLEET_STORE_ATTESTOR_MAX + 1) + 1];
	(void)ctx;
	if (!st_col_text(s, 0, p->id, sizeof(p->id)) || !st_col_text(s, 1, p->owner, sizeof(p->owner)) ||
	    !st_col_text(s, 2, list, sizeof(list)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a pools row holds what it cannot");
	p->created_at = db_column_int64(s, 3);
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (p->n_attestors == FLEET_STORE_POOL_MAX_ATTESTORS ||
		    strlen(t) > FLEET_STORE_ATTESTOR_MAX)
			return st_fail(st, FLEET_STORE_E_CORRUPT, "a pool's attestors are too many");
		snprintf(p->attestors[p->n_attestors++], FLEET_STORE_ATTESTOR_MAX + 1, "%s", t);
	}
	return FLEET_STORE_OK;
}

#define POOL_COLS "id, owner, join_attestors, created_at"

fleet_err st_pool_get(struct fleet_store *st, const char *id, struct fleet_store_pool *out)
{
	struct db_stmt *s;
	fleet_err e;
	memset(out, 0, sizeof(*out));
	if (!slug_ok(id, FLEET_STORE_POOL_ID_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "not a pool id");
	if ((e = st_prepare(st, "SELECT " POOL_COLS " FROM pools WHERE id = ?1", &s)))
		return e;
	db_bind_text(s, 1, id, -1);
	int rc = db_step(s);
	if (rc == DB_ROW)
		e = pool_row(st, s, out, NULL);
	else if (rc == DB_DONE)
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no pool %s", id);
	else
		e = st_dberr(st, rc, "read pool");
	db_finalize(s);
	return e;
}

fleet_err fleet_store_pool_get(struct fleet_store *st, const char *id, struct fleet_store_pool *out)
{
	if (!st || !out)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, st_pool_get(st, id, out));
}

fleet_err fleet_store_pools_list(struct fleet_store *st, struct fleet_store_pool **out, size_t *n)
{
	struct db_stmt *s;
	void *v = NULL;
	if (!st || !out || !n)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	fleet_err e = st_prepare(st, "SELECT " POOL_COLS " FROM pools ORDER BY id", &s);
	if (!e)
		e = st_collect(st, s, sizeof(struct fleet_store_pool), FLEET_STORE_LIST_MAX, "pools",
			       pool_row, NULL, NULL, &v, n);
	*out = v;
	return st_unlock(st, e);
}

/* ---- tokens ---------------------------------------------------------------- */

#define TOKEN_COLS                                                                        \
	"id, pool, site, role, uses_total, uses_left, created_at, expires_at, created_by, " \
	"revoked_at, last_used_at, expect_mac, expect_product_uuid, allow_reclaim, target_node"

static fleet_err token_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_token *t = el;
	(void)ctx;
	if (!st_col_text(s, 0, t->id, sizeof(t->id)) || !st_col_text(s, 1, t->pool, sizeof(t->pool)) ||
	    !st_col_text(s, 2, t->site, sizeof(t->site)) ||
	    !st_col_text(s, 3, t->role, sizeof(t->role)) ||
	    !st_col_text(s, 8, t->created_by, sizeof(t->created_by)) ||
	    !st_col_text(s, 11, t->expect_mac, sizeof(t->expect_mac)) ||
	    !st_col_text(s, 12, t->expect_product_uuid, sizeof(t->expect_product_uuid)) ||
	    !st_col_text(s, 14, t->target_node, sizeof(t->target_node)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a join_tokens row holds what it cannot");
	int64_t total = db_column_int64(s, 4), left = db_column_int64(s, 5);
	if (total < 1 || total > FLEET_STORE_TOKEN_MAX_USES || left < 0 || left > total)
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a join_tokens row holds impossible uses");
	t->uses_total = (unsigned)total;
	t->uses_left = (unsigned)left;
	t->created_at = db_column_int64(s, 6);
	t->expires_at = db_column_int64(s, 7);
	t->revoked_at = db_column_int64(s, 9);
	t->last_used_at = db_column_int64(s, 10);
	t->allow_reclaim = db_column_int64(s, 13) != 0;
	return FLEET_STORE_OK;
}

static fleet_err token_create(struct fleet_store *st, const struct fleet_store_token_in *in)
{
	struct fleet_store_pool pool;
	struct db_stmt *s;
	fleet_err e = st_writable(st);

	if (e)
		return e;
	bool wants_site = in->role && (!strcmp(in->role, "site") || !strcmp(in->role, "discovery"));
	if (!token_id_ok(in->id) || !role_ok(in->role) || !in->secret_sha256 || in->uses < 1 ||
	    in->uses > FLEET_STORE_TOKEN_MAX_USES || in->created_at < 0 ||
	    in->expires_at <= in->created_at || !st_text_ok(in->created_by, 64) ||
	    (in->site && !slug_ok(in->site, FLEET_STORE_POOL_ID_MAX)) || wants_site != !!in->site ||
	    !pattern_ok(in->expect_mac, 17, "0123456789abcdef:") ||
	    !pattern_ok(in->expect_product_uuid, 36, "0123456789abcdef-"))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a token is an id, a role (site and discovery tokens name a site), "
			       "1..%d uses, an expiry after now, its creator, and expect values "
			       "in lowercase",
			       FLEET_STORE_TOKEN_MAX_USES);
	/* store.h D1: a provisioned token may name the node it was minted for */
	const char *target = in->target_node && in->target_node[0] ? in->target_node : NULL;
	if (target && (strcmp(in->role, "provisioned") != 0 || !st_node_id_ok(target)))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "only a provisioned token names a target node (a node id)");
	if ((e = st_begin(st)))
		return e;
	if ((e = st_pool_get(st, in->pool, &pool)))
		goto out;
	if (target && (e = st_token_target_check_tx(st, target, in->pool)))
		goto out;
	if ((e = st_prepare(st,
			    "INSERT INTO join_tokens (id, pool, site, role, secret_sha256, "
			    "uses_total, uses_left, created_at, expires_at, created_by, expect_mac, "
			    "expect_product_uuid, allow_reclaim, target_node) VALUES (?1, ?2, ?3, ?4, "
			    "?5, ?6, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
			    &s)))
		goto out;
	db_bind_text(s, 1, in->id, -1);
	db_bind_text(s, 2, in->pool, -1);
	if (in->site)
		db_bind_text(s, 3, in->site, -1);
	else
		db_bind_null(s, 3);
	db_bind_text(s, 4, in->role, -1);
	db_bind_blob(s, 5, in->secret_sha256, 32);
	db_bind_int64(s, 6, (int)in->uses);
	db_bind_int64(s, 7, in->created_at);
	db_bind_int64(s, 8, in->expires_at);
	db_bind_text(s, 9, in->created_by, -1);
	if (in->expect_mac)
		db_bind_text(s, 10, in->expect_mac, -1);
	else
		db_bind_null(s, 10);
	if (in->expect_product_uuid)
		db_bind_text(s, 11, in->expect_product_uuid, -1);
	else
		db_bind_null(s, 11);
	db_bind_int64(s, 12, in->allow_reclaim ? 1 : 0);
	if (target)
		db_bind_text(s, 13, target, -1);
	else
		db_bind_null(s, 13);
	e = st_step_done(st, s, "create token", NULL);
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_token_create(struct fleet_store *st, const struct fleet_store_token_in *in)
{
	if (!st || !in)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, token_create(st, in));
}

/* The token by id (under the caller's transaction when it holds one); its
 * secret's hash too, when hash is not NULL. */
static fleet_err token_get(struct fleet_store *st, const char *id, struct fleet_store_token *out,
			   uint8_t hash[32])
{
	struct db_stmt *s;
	fleet_err e;
	memset(out, 0, sizeof(*out));
	if (!token_id_ok(id))
		return st_fail(st, FLEET_STORE_E_NOT_FOUND, "not a token id");
	if ((e = st_prepare(st, "SELECT " TOKEN_COLS ", secret_sha256 FROM join_tokens WHERE id = ?1",
			    &s)))
		return e;
	db_bind_text(s, 1, id, -1);
	int rc = db_step(s);
	if (rc == DB_ROW) {
		e = token_row(st, s, out, NULL);
		if (!e && hash) {
			if (db_column_bytes(s, 15) != 32)
				e = st_fail(st, FLEET_STORE_E_CORRUPT, "a token's hash is not 32 bytes");
			else
				memcpy(hash, db_column_blob(s, 15), 32);
		}
	} else if (rc == DB_DONE) {
		e = st_fail(st, FLEET_STORE_E_NOT_FOUND, "no token with that id");
	} else {
		e = st_dberr(st, rc, "read token");
	}
	db_finalize(s);
	return e;
}

fleet_err fleet_store_token_get(struct fleet_store *st, const char *id, struct fleet_store_token *out)
{
	if (!st || !out)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, token_get(st, id, out, NULL));
}

fleet_err fleet_store_tokens_list(struct fleet_store *st, struct fleet_store_token **out, size_t *n)
{
	struct db_stmt *s;
	void *v = NULL;
	if (!st || !out || !n)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	fleet_err e = st_prepare(st,
				 "SELECT " TOKEN_COLS " FROM join_tokens "
				 "ORDER BY created_at DESC, id LIMIT ?1",
				 &s);
	if (!e) {
		db_bind_int64(s, 1, FLEET_STORE_LIST_MAX);
		e = st_collect(st, s, sizeof(struct fleet_store_token), FLEET_STORE_LIST_MAX,
			       "tokens", token_row, NULL, NULL, &v, n);
	}
	*out = v;
	return st_unlock(st, e);
}

static fleet_err token_revoke(struct fleet_store *st, const char *id, time_t now)
{
	struct db_stmt *s;
	struct fleet_store_token t;
	int changes = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if ((e = st_begin(st)))
		return e;
	if ((e = token_get(st, id, &t, NULL)))
		goto out;
	if ((e = st_prepare(st,
			    "UPDATE join_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
			    &s)))
		goto out;
	db_bind_text(s, 1, id, -1);
	db_bind_int64(s, 2, now);
	if (!(e = st_step_done(st, s, "revoke token", &changes)) && !changes)
		e = st_fail(st, FLEET_STORE_E_STATE, "the token is revoked already");
out:
	if (e) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_token_revoke(struct fleet_store *st, const char *id, time_t now)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, token_revoke(st, id, now));
}

static fleet_err refuse(struct fleet_store *st, const char **reason, const char *why)
{
	*reason = why;
	return st_fail(st, FLEET_STORE_E_STATE, "token refused: %s", why);
}

/* J3's body, inside the caller's write transaction (st_begin: the row
 * stays locked until its commit); nothing written unless every rule held. */
fleet_err st_token_consume_tx(struct fleet_store *st, const char *id, const uint8_t secret[32],
			      const char *role, struct fleet_store_token *out,
			      const char **reason)
{
	return st_token_check_tx(st, id, secret, role, true, out, reason);
}

/* take false: every check, nothing written (a deferral spends nothing,
 * store.h X3); role NULL: any role (the attestor checks it). */
fleet_err st_token_check_tx(struct fleet_store *st, const char *id, const uint8_t secret[32],
			    const char *role, bool take, struct fleet_store_token *out,
			    const char **reason)
{
	struct fleet_store_token t;
	uint8_t want[32], got[32];
	struct db_stmt *s;
	int64_t now = 0;
	fleet_err e;

	if (!secret || (role && !role_ok(role)))
		return st_fail(st, FLEET_STORE_E_INVALID, "a consume needs a secret and a role");
	if (fleet_hash(FLEET_ALG_SHA256, secret, 32, got) != FLEET_OK)
		return st_fail(st, FLEET_STORE_E_NOMEM, "hashing the secret failed");
	e = token_get(st, id, &t, want);
	if (e == FLEET_STORE_E_NOT_FOUND) {
		e = refuse(st, reason, "token-unknown");
		goto out;
	}
	if (e)
		goto out;
	if (CRYPTO_memcmp(want, got, 32) != 0) {
		e = refuse(st, reason, "token-secret");
		goto out;
	}
	if (t.revoked_at) {
		e = refuse(st, reason, "token-revoked");
		goto out;
	}
	/* The store's clock, as every replica of one database sees it. */
	if ((e = st_prepare(st, "SELECT unixepoch()", &s)))
		goto out;
	if (db_step(s) == DB_ROW)
		now = db_column_int64(s, 0);
	db_finalize(s);
	if (now <= 0) {
		e = st_fail(st, FLEET_STORE_E_IO, "the store's clock did not answer");
		goto out;
	}
	if (now >= t.expires_at) {
		e = refuse(st, reason, "token-expired");
		goto out;
	}
	if (t.uses_left == 0) {
		e = refuse(st, reason, "token-used-up");
		goto out;
	}
	if (role && strcmp(t.role, role) != 0) {
		e = refuse(st, reason, "token-role");
		goto out;
	}
	if (!take) {
		if (out)
			*out = t;
		*reason = NULL;
		goto out;
	}
	int changes = 0;
	if ((e = st_prepare(st,
			    "UPDATE join_tokens SET uses_left = uses_left - 1, last_used_at = ?2 "
			    "WHERE id = ?1 AND uses_left > 0 AND revoked_at IS NULL",
			    &s)))
		goto out;
	db_bind_text(s, 1, id, -1);
	db_bind_int64(s, 2, now);
	if (!(e = st_step_done(st, s, "consume token", &changes)) && changes != 1)
		e = st_fail(st, FLEET_STORE_E_CORRUPT, "the token changed under its own lock");
	if (!e && out) {
		*out = t;
		out->uses_left--;
		out->last_used_at = now;
	}
	if (!e)
		*reason = NULL;
out:
	OPENSSL_cleanse(got, sizeof(got));
	return e;
}

static fleet_err token_consume(struct fleet_store *st, const char *id, const uint8_t secret[32],
			       const char *role, struct fleet_store_token *out,
			       const char **reason)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	/* BEGIN IMMEDIATE holds the write lock from the first read: the row
	 * cannot change between the checks and the use. */
	if ((e = st_begin(st)))
		return e;
	if ((e = st_token_consume_tx(st, id, secret, role, out, reason))) {
		st_rollback(st);
		return e;
	}
	return st_commit(st);
}

fleet_err fleet_store_token_consume(struct fleet_store *st, const char *id,
				    const uint8_t secret[32], const char *role,
				    struct fleet_store_token *out, const char **reason)
{
	const char *dummy;
	if (!st)
		return FLEET_STORE_E_INVALID;
	if (!reason)
		reason = &dummy;
	*reason = NULL;
	st_lock(st);
	return st_unlock(st, token_consume(st, id, secret, role, out, reason));
}

/* ---- attestation uses (J5) ------------------------------------------------- */

fleet_err st_attestation_use(struct fleet_store *st, const char *attestor, const char *subject,
				 time_t expires_at)
{
	struct db_stmt *s;
	int changes = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!slug_ok(attestor, FLEET_STORE_ATTESTOR_MAX) || !st_text_ok(subject, 255))
		return st_fail(st, FLEET_STORE_E_INVALID, "an attestation use names its attestor "
							  "and a subject of 1..255 printable bytes");
	if ((e = st_prepare(st,
			    "INSERT INTO attestation_uses (attestor, subject, expires_at) "
			    "VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
			    &s)))
		return e;
	db_bind_text(s, 1, attestor, -1);
	db_bind_text(s, 2, subject, -1);
	db_bind_int64(s, 3, expires_at);
	if ((e = st_step_done(st, s, "record attestation use", &changes)))
		return e;
	return changes ? FLEET_STORE_OK
		       : st_fail(st, FLEET_STORE_E_CONFLICT, "that evidence was used before");
}

fleet_err fleet_store_attestation_use(struct fleet_store *st, const char *attestor,
				      const char *subject, time_t expires_at)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, st_attestation_use(st, attestor, subject, expires_at));
}

static fleet_err uses_prune(struct fleet_store *st, time_t now, size_t batch, size_t *deleted)
{
	struct db_stmt *s;
	int changes = 0;
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (batch < 1 || batch > FLEET_STORE_PRUNE_BATCH)
		return st_fail(st, FLEET_STORE_E_INVALID, "a prune batch is 1..%d",
			       FLEET_STORE_PRUNE_BATCH);
	/* By the expiry index, oldest first, at most a batch: a long backlog
	 * costs the pass one short transaction at a time. */
	if ((e = st_prepare(st,
			    "DELETE FROM attestation_uses WHERE (attestor, subject) IN (SELECT attestor, "
			    "subject FROM attestation_uses WHERE expires_at <= ?1 ORDER BY expires_at "
			    "LIMIT ?2)",
			    &s)))
		return e;
	db_bind_int64(s, 1, now);
	db_bind_int64(s, 2, batch);
	if ((e = st_step_done(st, s, "prune attestation uses", &changes)))
		return e;
	if (deleted)
		*deleted = (size_t)changes;
	return FLEET_STORE_OK;
}

fleet_err fleet_store_attestation_uses_prune(struct fleet_store *st, time_t now, size_t batch,
					     size_t *deleted)
{
	if (!st)
		return FLEET_STORE_E_INVALID;
	st_lock(st);
	return st_unlock(st, uses_prune(st, now, batch, deleted));
}
