/*
 * db.h: the store's two database engines behind one statement interface.
 *
 * The store's table code (store_*.c) is written once against this header;
 * db_sqlite.c runs it on an embedded SQLite file (the default) and db_pg.c
 * on a PostgreSQL server shared by several fleetd replicas. The interface
 * is SQLite's own shape (prepare, bind, step, column, finalize), because
 * that is what the table code was written in; the PostgreSQL engine
 * reproduces its semantics where the table code relies on them:
 *
 * DB1 Placeholders are ?N (1-based, reusable in one statement); the
 *     PostgreSQL engine rewrites them to $N outside string literals.
 * DB2 A statement runs at its first db_step; its rows are then stepped in
 *     order. db_changes() is the rows the last write statement on the
 *     connection changed; db_last_insert_rowid() the id the last INSERT on
 *     the connection gave its row (PostgreSQL: lastval()).
 * DB3 Write transactions are serialised across every connection to the
 *     store, whatever process or machine holds it: SQLite's BEGIN
 *     IMMEDIATE takes the file's write lock; PostgreSQL's begin takes one
 *     transaction-scoped advisory lock (DB_PG_WRITE_LOCK) before any
 *     statement, at READ COMMITTED, so every statement after it sees every
 *     transaction committed before it. A writer therefore reads what it
 *     checks and writes on one state, as the table code assumes; no
 *     transaction ever has to be retried. A lock not granted within
 *     DB_BUSY_MS is DB_BUSY.
 * DB4 A read snapshot sees one committed state from its first read to its
 *     end and writes nothing (SQLite: a deferred read transaction in WAL;
 *     PostgreSQL: REPEATABLE READ READ ONLY).
 * DB5 A failed statement leaves the transaction to be rolled back: the
 *     table code never continues a transaction after a failure (PostgreSQL
 *     could not: the transaction is aborted).
 * DB6 Results are reported in this header's codes, not the engine's: a
 *     broken constraint (UNIQUE, CHECK, FOREIGN KEY, NOT NULL) is
 *     DB_CONSTRAINT on both.
 * DB7 Text columns come back as the bytes stored; integer columns as
 *     int64; boolean expressions as 0 or 1; NULL as DB_NULL. A blob column
 *     comes back as its bytes (PostgreSQL bytea, decoded from hex).
 * DB8 A prepare of a text the connection prepared before may hand back
 *     that statement, reset and with no bindings: in every way it is a
 *     fresh one (a parameter not bound is NULL). SQLite keeps at most
 *     DB_SQLITE_STMT_CACHE such statements per connection, each for one
 *     text, the least recently used free one making room, never one in use
 *     (a second prepare of a text in use gets its own); db_close finalizes
 *     them (a statement still in use then ends the connection at its own
 *     finalize). PostgreSQL prepares nothing on the server (db_pg.c).
 *
 * A connection and its statements belong to one thread at a time: the
 * store's handle mutex (store_int.h) provides that.
 */
#ifndef FLEETD_STORE_DB_H
#define FLEETD_STORE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Result codes (DB6). */
enum {
	DB_OK = 0,
	DB_ERROR = 1,     /* anything below that is none of these */
	DB_BUSY = 5,      /* a lock not granted in time */
	DB_NOMEM = 7,
	DB_READONLY = 8,  /* a write on a read-only connection */
	DB_IOERR = 10,    /* the file or the server could not be reached */
	DB_CORRUPT = 11,
	DB_CONSTRAINT = 19,
	DB_ROW = 100,
	DB_DONE = 101,
};

/* Column types (DB7). */
enum { DB_INTEGER = 1, DB_TEXT = 3, DB_BLOB = 4, DB_NULL = 5 };

#define DB_BUSY_MS 5000
#define DB_SQLITE_STMT_CACHE 128 /* DB8 */

/* The PostgreSQL store's advisory lock keys ('fleetd' in ASCII, then the
 * lock's number): the write lock serialises write transactions (DB3); the
 * pass lock is held by the one replica running a pass (store.h P1). */
#define DB_PG_WRITE_LOCK 0x666c6565746401LL
#define DB_PG_PASS_LOCK 0x666c6565746402LL

enum db_engine { DB_SQLITE, DB_POSTGRES };

struct db;
struct db_stmt;

enum db_engine db_engine(const struct db *db);

/* Run SQL that returns no rows, several statements allowed (migrations). */
int db_exec(struct db *db, const char *sql);
int db_prepare(struct db *db, const char *sql, struct db_stmt **out);

/* Binds copy nothing: the value must live until the statement's first
 * db_step, as with SQLite's SQLITE_STATIC. len -1: up to the NUL. */
int db_bind_int64(struct db_stmt *s, int i, int64_t v);
int db_bind_text(struct db_stmt *s, int i, const char *v, int len);
int db_bind_blob(struct db_stmt *s, int i, const void *v, int len);
int db_bind_null(struct db_stmt *s, int i);

int db_step(struct db_stmt *s);
int db_column_type(struct db_stmt *s, int col);
int64_t db_column_int64(struct db_stmt *s, int col);
/* NULL for a NULL column; valid until the next step or the finalize. */
const unsigned char *db_column_text(struct db_stmt *s, int col);
const void *db_column_blob(struct db_stmt *s, int col);
int db_column_bytes(struct db_stmt *s, int col);
void db_finalize(struct db_stmt *s);

int db_changes(struct db *db);
int64_t db_last_insert_rowid(struct db *db);

/* DB3, DB4 and their ends. db_rollback does nothing outside a transaction. */
int db_begin_write(struct db *db);
int db_begin_snapshot(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db);
bool db_in_transaction(struct db *db);

/* The connection's last error, in the engine's words. */
const char *db_errmsg(struct db *db);
void db_close(struct db *db);

/* The engines' openers (db_sqlite.c, db_pg.c). flags: SQLite's open flags.
 * conninfo: a libpq URI (postgres://, postgresql://); readonly: every
 * transaction read-only (SQLSTATE 25006 on a write, DB_READONLY). On
 * failure *out may hold a connection whose db_errmsg says why (close it). */
int db_sqlite_open(const char *path, int flags, struct db **out);
int db_pg_open(const char *conninfo, bool readonly, struct db **out);
/* The SQLite connection under db, for what only SQLite has (its pragmas,
 * store.c's configure); NULL on PostgreSQL. */
struct sqlite3 *db_sqlite_handle(struct db *db);

/* DB_PG_PASS_LOCK on a PostgreSQL connection: try once (*held true when
 * taken), and release. */
int db_pg_try_lock(struct db *db, int64_t key, bool *held);
int db_pg_unlock(struct db *db, int64_t key);

/* The engines' internals: each opener fills the table. */
struct db_ops {
	int (*exec)(struct db *, const char *);
	int (*prepare)(struct db *, const char *, struct db_stmt **);
	int (*bind_int64)(struct db_stmt *, int, int64_t);
	int (*bind_text)(struct db_stmt *, int, const char *, int);
	int (*bind_blob)(struct db_stmt *, int, const void *, int);
	int (*bind_null)(struct db_stmt *, int);
	int (*step)(struct db_stmt *);
	int (*column_type)(struct db_stmt *, int);
	int64_t (*column_int64)(struct db_stmt *, int);
	const unsigned char *(*column_text)(struct db_stmt *, int);
	const void *(*column_blob)(struct db_stmt *, int);
	int (*column_bytes)(struct db_stmt *, int);
	void (*finalize)(struct db_stmt *);
	int (*changes)(struct db *);
	int64_t (*last_insert_rowid)(struct db *);
	int (*begin_write)(struct db *);
	int (*begin_snapshot)(struct db *);
	int (*commit)(struct db *);
	void (*rollback)(struct db *);
	bool (*in_transaction)(struct db *);
	const char *(*errmsg)(struct db *);
	void (*close)(struct db *);
};

struct db {
	const struct db_ops *ops;
	enum db_engine engine;
};

struct db_stmt {
	struct db *db;
};

#endif
