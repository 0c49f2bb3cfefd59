/*
 * store_int.h: what the store's files share, not part of its interface.
 */
#ifndef FLEETD_STORE_INT_H
#define FLEETD_STORE_INT_H

#include <sqlite3.h>

#include "fleetd/store/store.h"

struct fleet_store {
	sqlite3 *db;
	bool readonly;
	char msg[256];
};

enum fleet_store_err st_fail(struct fleet_store *st, enum fleet_store_err e, const char *fmt,
			     ...) __attribute__((format(printf, 3, 4)));
/* Map a SQLite result code to the store's enum, keeping SQLite's message. */
enum fleet_store_err st_sqlite(struct fleet_store *st, int rc, const char *what);
enum fleet_store_err st_prepare(struct fleet_store *st, const char *sql, sqlite3_stmt **out);
enum fleet_store_err st_begin(struct fleet_store *st);
enum fleet_store_err st_commit(struct fleet_store *st);
void st_rollback(struct fleet_store *st);
enum fleet_store_err st_writable(struct fleet_store *st);

/* Checks on values going in. */
bool st_text_ok(const char *s, size_t max);      /* 1..max printable ASCII */
bool st_hash_ok(const char *s);                  /* NULL, "" or 64 lowercase hex */
bool st_hex_ok(const char *s, size_t min, size_t max);
/* Bind a hash: NULL for NULL or "". */
int st_bind_hash(sqlite3_stmt *s, int i, const char *h);

/* Copy a text column into out[cap]; NULL reads as "". false when it does
 * not fit or holds a byte outside printable ASCII: the caller reports
 * CORRUPT. */
bool st_col_text(sqlite3_stmt *s, int col, char *out, size_t cap);

/* Room for one more row of a list result: the array doubles when full
 * (first 16 rows), the count and capacity stay the caller's. Returns the
 * array (perhaps moved), or NULL with FLEET_STORE_E_NOMEM said in the
 * store's message, leaving the old array for the caller to free. */
void *st_grow(struct fleet_store *st, void *v, size_t *cap, size_t elem);

#endif
