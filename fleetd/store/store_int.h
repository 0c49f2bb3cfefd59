/*
 * store_int.h: what the store's files share, not part of its interface.
 */
#ifndef FLEETD_STORE_INT_H
#define FLEETD_STORE_INT_H

#include <pthread.h>

#include "fleetd/store/db.h"
#include "fleetd/store/store.h"

/*
 * A handle owns its concurrency (store.h, "Threads"): every public
 * function takes mu for the whole of its work, so its statements and its
 * transaction are never interleaved with another thread's on the same
 * connection, and a snapshot's thread keeps it from begin to end. mu is
 * recursive so that a public function may call another (fleet_store_admit
 * inserts its verdict with fleet_store_verdict_insert) and a snapshot's
 * reads nest inside it. The st_* helpers below run with mu held.
 */
struct fleet_store {
	pthread_mutex_t mu;
	struct db *db; /* SQLite or PostgreSQL (db.h) */
	int pass_lock_fd; /* SQLite: the pass lock file while held, else -1 */
	bool pass_lock_held;
	char dir[4096]; /* SQLite: the state directory ("" on PostgreSQL) */
	bool readonly;
	bool snapshot; /* a read snapshot is open: no writes (st_writable) */
};

/* One schema migration (store.c on SQLite, store_pg_schema.c on
 * PostgreSQL: the same versions and names). */
struct st_migration {
	int version;
	const char *name;
	const char *sql;
};
extern const struct st_migration st_pg_migrations[];
extern const size_t st_pg_n_migrations;

/* Every public function: st_lock(st) first, and return st_unlock(st, e). */
void st_lock(struct fleet_store *st);
fleet_err st_unlock(struct fleet_store *st, fleet_err e);

/* The failure's sentence, into the calling thread's own copy (store.h,
 * fleet_store_errmsg): no other thread's call can overwrite it. */
fleet_err st_fail(struct fleet_store *st, fleet_err e, const char *fmt,
			     ...) __attribute__((format(printf, 3, 4)));
/* The same for a system call that failed with errnum: recorded beside the
 * sentence (fleet_store_errctx passes it on). */
fleet_err st_fail_errno(struct fleet_store *st, fleet_err e, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Map a db.h result code to the store's enum, keeping the engine's message. */
fleet_err st_dberr(struct fleet_store *st, int rc, const char *what);
fleet_err st_prepare(struct fleet_store *st, const char *sql, struct db_stmt **out);
fleet_err st_begin(struct fleet_store *st);
fleet_err st_commit(struct fleet_store *st);
void st_rollback(struct fleet_store *st);
fleet_err st_writable(struct fleet_store *st);

/* Run one bound write statement and finalize it; *changes (may be NULL)
 * gets the rows it changed. */
fleet_err st_step_done(struct fleet_store *st, struct db_stmt *s, const char *what,
				  int *changes);

/* The body of fleet_store_device_record_admission, inside a transaction the
 * caller holds (store_admission.c joins it with the certificates and the
 * verdict). *device_id gets the row's id. */
fleet_err st_device_admit_tx(struct fleet_store *st, const char *name,
				       const char *serial, int64_t inventory_id, const char *ek_hash,
				       const char *ek_hash_ecc, time_t now, int64_t *device_id);
/* Parse DER as the store's own check (one whole certificate, nothing after
 * it): its notAfter and lowercase hex SHA-1 fingerprint. */
bool st_cert_facts(const uint8_t *der, size_t len, int64_t *not_after, char sha1[41]);

/* The body of fleet_store_cert_insert, inside whatever transaction the
 * caller holds (store_reattest.c joins two in a renewal). */
fleet_err st_cert_insert(struct fleet_store *st, const char *device, const char *kind,
			 const uint8_t *der, size_t der_len, time_t issued_at, char *sha1_out);

/* store.h J3's body inside the caller's write transaction (store_join.c;
 * the join's commit joins it with the node and its certificate). */
fleet_err st_token_consume_tx(struct fleet_store *st, const char *id, const uint8_t secret[32],
			      const char *role, struct fleet_store_token *out,
			      const char **reason);
fleet_err st_token_check_tx(struct fleet_store *st, const char *id, const uint8_t secret[32],
			    const char *role, bool take, struct fleet_store_token *out,
			    const char **reason);
/* store_join_nodes.c's helpers for store_join_tx.c (inside a transaction). */
fleet_err st_node_get(struct fleet_store *st, const char *id, struct fleet_store_node *out);
fleet_err st_node_cert_insert(struct fleet_store *st, const char *node_id, int64_t generation,
			      const uint8_t *der, size_t len, time_t now);
bool st_node_id_ok(const char *s);
fleet_err st_node_cert_lookup(struct fleet_store *st, const uint8_t *der, size_t len,
			      struct fleet_store_node *node, int64_t *not_after_out,
			      const char **reason);
fleet_err st_node_reclaim_tx(struct fleet_store *st, const char *node_id, const uint8_t *der,
			     size_t len, time_t now, int64_t *generation);
fleet_err st_node_bind_tx(struct fleet_store *st, const char *kind, const char *subject,
			  const char *node_id, time_t now);
fleet_err st_binding_get(struct fleet_store *st, const char *kind, const char *subject,
			 char owner[FLEET_STORE_NODE_ID_MAX + 1]);
/* store_join.c's, for the join transaction. */
fleet_err st_pool_get(struct fleet_store *st, const char *id, struct fleet_store_pool *out);
fleet_err st_attestation_use(struct fleet_store *st, const char *attestor, const char *subject,
			     time_t expires_at);
/* store.h D1, inside token_create's transaction (store_join_requests.c):
 * the target node exists (NOT_FOUND), is not retired (STATE) and is of
 * pool (CONFLICT). */
fleet_err st_token_target_check_tx(struct fleet_store *st, const char *node_id, const char *pool);

/* The join transaction's handle (store.h X1-X6): the store, locked, with
 * its write transaction open; now read once (X2). */
struct fleet_store_tx {
	struct fleet_store *st;
	int64_t now;
};

/* Step a prepared certificate query (kind, sha1, not_after, issued_at,
 * revoked, revoked_at, der[, device]) into *out; finalizes s. device NULL:
 * each row's name is its eighth column. */
fleet_err st_read_certs(struct fleet_store *st, struct db_stmt *s, const char *device,
				   struct fleet_store_cert **out, size_t *n);

/* Checks on values going in. */
bool st_text_ok(const char *s, size_t max);      /* 1..max printable ASCII */
bool st_hash_ok(const char *s);                  /* NULL, "" or 64 lowercase hex */
bool st_hex_ok(const char *s, size_t min, size_t max);
/* Bind a hash: NULL for NULL or "". */
int st_bind_hash(struct db_stmt *s, int i, const char *h);

/* Copy a text column into out[cap]; NULL reads as "". false when it does
 * not fit or holds a byte outside printable ASCII: the caller reports
 * CORRUPT. */
bool st_col_text(struct db_stmt *s, int col, char *out, size_t cap);

/*
 * A list result: every row of s, one element of elem bytes each, zeroed
 * and then filled by row(st, s, element, ctx), which returns FLEET_OK or
 * the failure (CORRUPT for a row that cannot be). The array doubles when
 * full (first 16 rows). More than max rows (0: no cap) is FULL, said as
 * "more than <max> <what>: too many to list at once"; SQLite's failure is
 * said as "list <what>". On FLEET_OK *out holds *n elements (NULL when
 * none); on any failure free_el (NULL: nothing to free) is called on each
 * element filled so far, nothing is kept, and *out is NULL, *n 0.
 * Finalizes s in every case.
 */
fleet_err st_collect(struct fleet_store *st, struct db_stmt *s, size_t elem, size_t max,
		     const char *what,
		     fleet_err (*row)(struct fleet_store *st, struct db_stmt *s, void *el, void *ctx),
		     void *ctx, void (*free_el)(void *el), void **out, size_t *n);

#endif
