/*
 * store_claims.c: pending claims. A machine with an unknown serial, or one
 * whose device has no binding, leaves a claim for `fleetctl claims`; the
 * claim grants nothing. Both tables are capped: claims come from machines
 * nobody has approved yet, so their number is the attacker's to choose.
 */
#include "fleetd/store/store_int.h"

#include <stdlib.h>
#include <string.h>

static fleet_err run(struct fleet_store *st, struct db_stmt *s, const char *what)
{
	int rc = db_step(s);
	db_finalize(s);
	return rc == DB_DONE ? FLEET_STORE_OK : st_dberr(st, rc, what);
}

/* count(*) with at most one integer parameter ?1 (an SQL without one ignores key).
 * *out is 0 on an error. */
static fleet_err count_rows(struct fleet_store *st, const char *sql, int64_t key,
				       int64_t *out)
{
	*out = 0;
	struct db_stmt *s;
	fleet_err e = st_prepare(st, sql, &s);
	if (e)
		return e;
	db_bind_int64(s, 1, key);
	int rc = db_step(s);
	if (rc == DB_ROW)
		*out = db_column_int64(s, 0);
	else
		e = st_dberr(st, rc, "count");
	db_finalize(s);
	return e;
}

/* The claim's id for serial, or 0. */
static fleet_err claim_id(struct fleet_store *st, const char *serial, int64_t *id)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(st, "SELECT id FROM claims WHERE serial = ?1", &s);
	if (e)
		return e;
	db_bind_text(s, 1, serial, -1);
	int rc = db_step(s);
	*id = rc == DB_ROW ? db_column_int64(s, 0) : 0;
	if (rc != DB_ROW && rc != DB_DONE)
		e = st_dberr(st, rc, "find claim");
	db_finalize(s);
	return e;
}

static fleet_err record_eks(struct fleet_store *st, int64_t id, const char *ek,
				       const char *ecc, time_t now)
{
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "UPDATE claim_eks SET last_seen = ?4, count = count + 1 "
		    "WHERE claim_id = ?1 AND ek_hash = ?2 AND ek_hash_ecc = ?3", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, id);
	db_bind_text(s, 2, ek, -1);
	db_bind_text(s, 3, ecc, -1);
	db_bind_int64(s, 4, now);
	if ((e = run(st, s, "count claim EKs")) || db_changes(st->db) > 0)
		return e;
	int64_t have;
	if ((e = count_rows(st, "SELECT count(*) FROM claim_eks WHERE claim_id = ?1", id, &have)))
		return e;
	if (have >= FLEET_STORE_CLAIM_EKS) {
		if ((e = st_prepare(st, "UPDATE claims SET eks_dropped = 1 WHERE id = ?1", &s)))
			return e;
		db_bind_int64(s, 1, id);
		return run(st, s, "mark claim");
	}
	if ((e = st_prepare(st, "INSERT INTO claim_eks (claim_id, ek_hash, ek_hash_ecc, first_seen, "
				"last_seen, count) VALUES (?1, ?2, ?3, ?4, ?4, 1)", &s)))
		return e;
	db_bind_int64(s, 1, id);
	db_bind_text(s, 2, ek, -1);
	db_bind_text(s, 3, ecc, -1);
	db_bind_int64(s, 4, now);
	return run(st, s, "record claim EKs");
}

/* How many claims name this EK pair (0 on an error). */
static fleet_err claims_of_eks(struct fleet_store *st, const char *ek, const char *ecc,
					  int64_t *out)
{
	*out = 0;
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT count(DISTINCT claim_id) FROM claim_eks WHERE ek_hash = ?1 AND "
		    "ek_hash_ecc = ?2", &s);
	if (e)
		return e;
	db_bind_text(s, 1, ek, -1);
	db_bind_text(s, 2, ecc, -1);
	int rc = db_step(s);
	if (rc == DB_ROW)
		*out = db_column_int64(s, 0);
	else
		e = st_dberr(st, rc, "count claims of EKs");
	db_finalize(s);
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
	struct db_stmt *s;
	if ((e = claim_id(st, serial, &id)))
		goto fail;
	if (id) {
		if ((e = st_prepare(st, "UPDATE claims SET reason = ?1, last_seen = ?2, "
					"count = count + 1 WHERE id = ?3", &s)))
			goto fail;
		db_bind_text(s, 1, reason, -1);
		db_bind_int64(s, 2, now);
		db_bind_int64(s, 3, id);
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
		db_bind_text(s, 1, serial, -1);
		db_bind_text(s, 2, reason, -1);
		db_bind_int64(s, 3, now);
		if ((e = run(st, s, "insert claim")))
			goto fail;
		id = db_last_insert_rowid(st->db);
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
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT ek_hash, ek_hash_ecc, first_seen, last_seen, count FROM claim_eks "
		    "WHERE claim_id = ?1 ORDER BY first_seen, ek_hash, ek_hash_ecc LIMIT ?2", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, id);
	db_bind_int64(s, 2, FLEET_STORE_CLAIM_EKS);
	int rc;
	c->n_eks = 0;
	while ((rc = db_step(s)) == DB_ROW && c->n_eks < FLEET_STORE_CLAIM_EKS) {
		struct fleet_store_claim_ek *k = &c->eks[c->n_eks++];
		k->first_seen = db_column_int64(s, 2);
		k->last_seen = db_column_int64(s, 3);
		k->count = db_column_int64(s, 4);
		if (!st_col_text(s, 0, k->ek_hash, sizeof(k->ek_hash)) ||
		    !st_col_text(s, 1, k->ek_hash_ecc, sizeof(k->ek_hash_ecc))) {
			db_finalize(s);
			return st_fail(st, FLEET_STORE_E_CORRUPT, "a claim EK row is impossible");
		}
	}
	if (rc != DB_DONE && rc != DB_ROW)
		e = st_dberr(st, rc, "list claim EKs");
	db_finalize(s);
	return e;
}

static fleet_err claim_row(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx)
{
	struct fleet_store_claim *c = el;
	(void)ctx;
	c->first_seen = db_column_int64(s, 3);
	c->last_seen = db_column_int64(s, 4);
	c->count = db_column_int64(s, 5);
	c->eks_dropped = db_column_int64(s, 6) != 0;
	if (!st_col_text(s, 1, c->serial, sizeof(c->serial)) ||
	    !st_col_text(s, 2, c->reason, sizeof(c->reason)))
		return st_fail(st, FLEET_STORE_E_CORRUPT, "a claim row holds an impossible value");
	return claim_eks(st, db_column_int64(s, 0), c);
}

static fleet_err claims_list(struct fleet_store *st,
					struct fleet_store_claim **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct db_stmt *s;
	fleet_err e = st_prepare(
		st, "SELECT id, serial, reason, first_seen, last_seen, count, eks_dropped "
		    "FROM claims ORDER BY last_seen DESC, id DESC LIMIT ?1", &s);
	if (e)
		return e;
	db_bind_int64(s, 1, FLEET_STORE_LIST_MAX);
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
