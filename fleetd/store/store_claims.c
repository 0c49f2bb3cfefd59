/*
 * store_claims.c: pending claims. A machine with an unknown serial, or one
 * whose device has no binding, leaves a claim for `fleetctl claims`; the
 * claim grants nothing. Both tables are capped: claims come from machines
 * nobody has approved yet, so their number is the attacker's to choose.
 */
#include "fleetd/store/store_int.h"

#include <stdlib.h>
#include <string.h>

static fleet_err run(struct fleet_store *st, sqlite3_stmt *s, const char *what)
{
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? FLEET_STORE_OK : st_sqlite(st, rc, what);
}

/* count(*) with at most one integer parameter ?1 (an SQL without one ignores key).
 * *out is 0 on an error. */
static fleet_err count_rows(struct fleet_store *st, const char *sql, int64_t key,
				       int64_t *out)
{
	*out = 0;
	sqlite3_stmt *s;
	fleet_err e = st_prepare(st, sql, &s);
	if (e)
		return e;
	sqlite3_bind_int64(s, 1, key);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else
		e = st_sqlite(st, rc, "count");
	sqlite3_finalize(s);
	return e;
}

/* The claim's id for serial, or 0. */
static fleet_err claim_id(struct fleet_store *st, const char *serial, int64_t *id)
{
	sqlite3_stmt *s;
	fleet_err e = st_prepare(st, "SELECT id FROM claims WHERE serial = ?1", &s);
	if (e)
		return e;
	sqlite3_bind_text(s, 1, serial, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	*id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		e = st_sqlite(st, rc, "find claim");
	sqlite3_finalize(s);
	return e;
}

static fleet_err record_eks(struct fleet_store *st, int64_t id, const char *ek,
				       const char *ecc, time_t now)
{
	sqlite3_stmt *s;
	fleet_err e = st_prepare(
		st, "UPDATE claim_eks SET last_seen = ?4, count = count + 1 "
		    "WHERE claim_id = ?1 AND ek_hash = ?2 AND ek_hash_ecc = ?3", &s);
	if (e)
		return e;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, ek, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, ecc, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)now);
	if ((e = run(st, s, "count claim EKs")) || sqlite3_changes(st->db) > 0)
		return e;
	int64_t have;
	if ((e = count_rows(st, "SELECT count(*) FROM claim_eks WHERE claim_id = ?1", id, &have)))
		return e;
	if (have >= FLEET_STORE_CLAIM_EKS) {
		if ((e = st_prepare(st, "UPDATE claims SET eks_dropped = 1 WHERE id = ?1", &s)))
			return e;
		sqlite3_bind_int64(s, 1, id);
		return run(st, s, "mark claim");
	}
	if ((e = st_prepare(st, "INSERT INTO claim_eks (claim_id, ek_hash, ek_hash_ecc, first_seen, "
				"last_seen, count) VALUES (?1, ?2, ?3, ?4, ?4, 1)", &s)))
		return e;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, ek, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, ecc, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)now);
	return run(st, s, "record claim EKs");
}

/* How many claims name this EK pair (0 on an error). */
static fleet_err claims_of_eks(struct fleet_store *st, const char *ek, const char *ecc,
					  int64_t *out)
{
	*out = 0;
	sqlite3_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT count(DISTINCT claim_id) FROM claim_eks WHERE ek_hash = ?1 AND "
		    "ek_hash_ecc = ?2", &s);
	if (e)
		return e;
	sqlite3_bind_text(s, 1, ek, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, ecc, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else
		e = st_sqlite(st, rc, "count claims of EKs");
	sqlite3_finalize(s);
	return e;
}

static fleet_err claim_upsert(struct fleet_store *st, const char *serial,
					 const char *reason, const char *ek_hash,
					 const char *ek_hash_ecc, time_t now)
{
	fleet_err e = st_writable(st);
	if (e)
		return e;
	if (!st_text_ok(serial, FLEET_STORE_NAME_MAX))
		return st_fail(st, FLEET_STORE_E_INVALID, "a serial is 1 to %d printable characters",
			       FLEET_STORE_NAME_MAX);
	if (!reason || (strcmp(reason, FLEET_STORE_CLAIM_UNKNOWN_SERIAL) != 0 &&
			strcmp(reason, FLEET_STORE_CLAIM_NO_BINDING) != 0))
		return st_fail(st, FLEET_STORE_E_INVALID,
			       "a claim's reason is unknown-serial or no-binding");
	if (!st_hash_ok(ek_hash) || !st_hash_ok(ek_hash_ecc))
		return st_fail(st, FLEET_STORE_E_INVALID, "an EK hash is 64 lowercase hex digits");
	const char *ek = ek_hash ? ek_hash : "", *ecc = ek_hash_ecc ? ek_hash_ecc : "";
	if ((e = st_begin(st)))
		return e;
	int64_t id;
	sqlite3_stmt *s;
	if ((e = claim_id(st, serial, &id)))
		goto fail;
	if (id) {
		if ((e = st_prepare(st, "UPDATE claims SET reason = ?1, last_seen = ?2, "
					"count = count + 1 WHERE id = ?3", &s)))
			goto fail;
		sqlite3_bind_text(s, 1, reason, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, (sqlite3_int64)now);
		sqlite3_bind_int64(s, 3, id);
		if ((e = run(st, s, "update claim")))
			goto fail;
	} else {
		int64_t total;
		if ((e = count_rows(st, "SELECT count(*) FROM claims", 0, &total)))
			goto fail;
		if (total >= FLEET_STORE_MAX_CLAIMS) {
			e = st_fail(st, FLEET_STORE_E_FULL,
				    "%d claims are pending; no new claim is recorded until some are "
				    "resolved", FLEET_STORE_MAX_CLAIMS);
			goto fail;
		}
		/* A claim is written once a TPM proved its EKs, but one TPM can
		 * claim any serial it likes: it may hold a few, not the table. */
		if ((ek[0] || ecc[0]) && (e = claims_of_eks(st, ek, ecc, &total)))
			goto fail;
		if ((ek[0] || ecc[0]) && total >= FLEET_STORE_CLAIMS_PER_EK) {
			e = st_fail(st, FLEET_STORE_E_FULL,
				    "these EKs already claim %d serials; no new claim is recorded "
				    "for them", FLEET_STORE_CLAIMS_PER_EK);
			goto fail;
		}
		if ((e = st_prepare(st, "INSERT INTO claims (serial, reason, first_seen, last_seen, "
					"count) VALUES (?1, ?2, ?3, ?3, 1)", &s)))
			goto fail;
		sqlite3_bind_text(s, 1, serial, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, reason, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, (sqlite3_int64)now);
		if ((e = run(st, s, "insert claim")))
			goto fail;
		id = sqlite3_last_insert_rowid(st->db);
	}
	if ((ek[0] || ecc[0]) && (e = record_eks(st, id, ek, ecc, now)))
		goto fail;
	return st_commit(st);
fail:
	st_rollback(st);
	return e;
}

fleet_err fleet_store_claim_upsert(struct fleet_store *st, const char *serial,
					      const char *reason, const char *ek_hash,
					      const char *ek_hash_ecc, time_t now)
{
	st_lock(st);
	return st_unlock(st, claim_upsert(st, serial, reason, ek_hash, ek_hash_ecc, now));
}

static fleet_err claim_eks(struct fleet_store *st, int64_t id,
				      struct fleet_store_claim *c)
{
	sqlite3_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT ek_hash, ek_hash_ecc, first_seen, last_seen, count FROM claim_eks "
		    "WHERE claim_id = ?1 ORDER BY first_seen, ek_hash, ek_hash_ecc LIMIT ?2", &s);
	if (e)
		return e;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, FLEET_STORE_CLAIM_EKS);
	int rc;
	c->n_eks = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && c->n_eks < FLEET_STORE_CLAIM_EKS) {
		struct fleet_store_claim_ek *k = &c->eks[c->n_eks++];
		k->first_seen = sqlite3_column_int64(s, 2);
		k->last_seen = sqlite3_column_int64(s, 3);
		k->count = sqlite3_column_int64(s, 4);
		if (!st_col_text(s, 0, k->ek_hash, sizeof(k->ek_hash)) ||
		    !st_col_text(s, 1, k->ek_hash_ecc, sizeof(k->ek_hash_ecc))) {
			sqlite3_finalize(s);
			return st_fail(st, FLEET_STORE_E_CORRUPT, "a claim EK row is impossible");
		}
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		e = st_sqlite(st, rc, "list claim EKs");
	sqlite3_finalize(s);
	return e;
}

static fleet_err claim_row(struct fleet_store *st, sqlite3_stmt *s, void *el, void *ctx)
{
	struct fleet_store_claim *c = el;
	(void)ctx;
	c->first_seen = sqlite3_column_int64(s, 3);
	c->last_seen = sqlite3_column_int64(s, 4);
	c->count = sqlite3_column_int64(s, 5);
	c->eks_dropped = sqlite3_column_int64(s, 6) != 0;
	if (!st_col_text(s, 1, c->serial, sizeof(c->serial)) ||
	    !st_col_text(s, 2, c->reason, sizeof(c->reason)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a claim row holds an impossible value");
	return claim_eks(st, sqlite3_column_int64(s, 0), c);
}

static fleet_err claims_list(struct fleet_store *st,
					struct fleet_store_claim **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT id, serial, reason, first_seen, last_seen, count, eks_dropped "
		    "FROM claims ORDER BY last_seen DESC, id DESC LIMIT ?1", &s);
	if (e)
		return e;
	sqlite3_bind_int(s, 1, FLEET_STORE_LIST_MAX);
	void *v;
	e = st_collect(st, s, sizeof(struct fleet_store_claim), 0, "claims", claim_row, NULL, NULL,
		       &v, n);
	*out = v;
	return e;
}

fleet_err fleet_store_claims_list(struct fleet_store *st,
					     struct fleet_store_claim **out, size_t *n)
{
	st_lock(st);
	return st_unlock(st, claims_list(st, out, n));
}
