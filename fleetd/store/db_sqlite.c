/*
 * db_sqlite.c: db.h on an embedded SQLite file. A thin layer: db.h is
 * SQLite's own shape; only the result codes are mapped (DB6: SQLite's
 * extended codes to their primary meaning).
 */
#include "fleetd/store/db.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* DB8: the connection's prepared statements, kept for the next prepare of
 * the same SQL text. The store prepares every statement each time it runs
 * it; parsing and planning was ~7 % of fleetd's CPU per admission (perf,
 * 2026-12-06, docs/benchmark.md), for the same few dozen texts. A slot
 * whose statement is in use (taken) is not handed out twice: a second
 * prepare of that text while the first is live gets a statement of its
 * own, finalized at its end. The least recently used free slot makes room
 * for a new text, so the cache never holds more than L_SLOTS statements.
 * The store's texts are fixed literals (about 110), so the bound is set to
 * hold them all: eviction is for a caller this file does not know. */
#define L_SLOTS DB_SQLITE_STMT_CACHE

struct l_slot {
	char *sql;          /* NULL: empty */
	size_t len;
	uint64_t hash;
	sqlite3_stmt *s;    /* NULL while taken */
	uint64_t used;      /* the connection's clock at its last prepare */
};

struct db_sqlite {
	struct db base;
	sqlite3 *h;
	uint64_t clock;
	size_t taken;   /* statements prepared and not yet finalized */
	bool closed;    /* db_close came while some were: the last frees it */
	struct l_slot slot[L_SLOTS];
};

struct db_sqlite_stmt {
	struct db_stmt base;
	sqlite3_stmt *s;
	int slot; /* its cache slot, or -1: finalized at its end */
};

#define H(db) (((struct db_sqlite *)(db))->h)
#define S(st) (((struct db_sqlite_stmt *)(st))->s)

static int map(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return DB_OK;
	case SQLITE_ROW:
		return DB_ROW;
	case SQLITE_DONE:
		return DB_DONE;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return DB_BUSY;
	case SQLITE_NOMEM:
		return DB_NOMEM;
	case SQLITE_READONLY:
		return DB_READONLY;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
	case SQLITE_FULL:
		return DB_IOERR;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return DB_CORRUPT;
	case SQLITE_CONSTRAINT:
		return DB_CONSTRAINT;
	default:
		return DB_ERROR;
	}
}

static int l_exec(struct db *db, const char *sql) { return map(sqlite3_exec(H(db), sql, NULL, NULL, NULL)); }

static uint64_t l_hash(const char *sql, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)sql[i]) * 0x100000001b3ULL;
	return h;
}

/* The slot holding this text (taken or not), or -1. */
static int l_find(const struct db_sqlite *db, const char *sql, size_t len, uint64_t hash)
{
	for (int i = 0; i < L_SLOTS; i++) {
		const struct l_slot *c = &db->slot[i];
		if (c->sql && c->hash == hash && c->len == len && !memcmp(c->sql, sql, len))
			return i;
	}
	return -1;
}

/* An empty slot, else the least recently used free one (emptied), else
 * -1 (every slot taken). */
static int l_make_room(struct db_sqlite *db)
{
	int lru = -1;
	for (int i = 0; i < L_SLOTS; i++) {
		struct l_slot *c = &db->slot[i];
		if (!c->sql)
			return i;
		if (c->s && (lru < 0 || c->used < db->slot[lru].used))
			lru = i;
	}
	if (lru >= 0) {
		struct l_slot *c = &db->slot[lru];
		sqlite3_finalize(c->s);
		free(c->sql);
		memset(c, 0, sizeof(*c));
	}
	return lru;
}

static int l_prepare(struct db *db, const char *sql, struct db_stmt **out)
{
	struct db_sqlite *d = (struct db_sqlite *)db;
	size_t len = strlen(sql);
	uint64_t hash = l_hash(sql, len);
	struct db_sqlite_stmt *st = calloc(1, sizeof(*st));
	if (!st)
		return DB_NOMEM;
	st->base.db = db;
	st->slot = -1;
	int i = l_find(d, sql, len, hash);
	if (i >= 0 && d->slot[i].s) {
		/* Left reset and with no bindings by l_finalize: as new. */
		st->s = d->slot[i].s;
		d->slot[i].s = NULL;
		d->slot[i].used = ++d->clock;
		st->slot = i;
		d->taken++;
		*out = &st->base;
		return DB_OK;
	}
	int rc = sqlite3_prepare_v3(H(db), sql, (int)len + 1, SQLITE_PREPARE_PERSISTENT, &st->s,
				    NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(st->s);
		free(st);
		return map(rc);
	}
	d->taken++;
	/* A text taken already stays uncached here; a new one gets a slot
	 * if one is free (a copy of the text: the caller's may not live).
	 * Text with no statement in it (empty, a comment) compiles to no
	 * statement at all: nothing to keep. */
	char *copy;
	if (st->s && i < 0 && (i = l_make_room(d)) >= 0 && (copy = malloc(len + 1)) != NULL) {
		memcpy(copy, sql, len + 1);
		d->slot[i] = (struct l_slot){.sql = copy, .len = len, .hash = hash, .used = ++d->clock};
		st->slot = i;
	}
	*out = &st->base;
	return DB_OK;
}

static int l_bind_int64(struct db_stmt *s, int i, int64_t v) { return map(sqlite3_bind_int64(S(s), i, v)); }
static int l_bind_text(struct db_stmt *s, int i, const char *v, int len)
{
	return map(sqlite3_bind_text(S(s), i, v, len, SQLITE_STATIC));
}
static int l_bind_blob(struct db_stmt *s, int i, const void *v, int len)
{
	return map(sqlite3_bind_blob(S(s), i, v, len, SQLITE_STATIC));
}
static int l_bind_null(struct db_stmt *s, int i) { return map(sqlite3_bind_null(S(s), i)); }
static int l_step(struct db_stmt *s) { return map(sqlite3_step(S(s))); }
static int l_column_type(struct db_stmt *s, int col)
{
	switch (sqlite3_column_type(S(s), col)) {
	case SQLITE_INTEGER:
		return DB_INTEGER;
	case SQLITE_NULL:
		return DB_NULL;
	case SQLITE_BLOB:
		return DB_BLOB;
	default:
		return DB_TEXT;
	}
}
static int64_t l_column_int64(struct db_stmt *s, int col) { return sqlite3_column_int64(S(s), col); }
static const unsigned char *l_column_text(struct db_stmt *s, int col) { return sqlite3_column_text(S(s), col); }
static const void *l_column_blob(struct db_stmt *s, int col) { return sqlite3_column_blob(S(s), col); }
static int l_column_bytes(struct db_stmt *s, int col) { return sqlite3_column_bytes(S(s), col); }
static void l_finalize(struct db_stmt *s)
{
	struct db_sqlite *d = (struct db_sqlite *)s->db;
	struct db_sqlite_stmt *st = (struct db_sqlite_stmt *)s;
	d->taken--;
	if (d->closed) {
		/* After db_close: the connection is a zombie (sqlite3_close_v2)
		 * until its last statement goes; then it and d are freed. */
		sqlite3_finalize(st->s);
		free(s);
		if (d->taken == 0)
			free(d);
		return;
	}
	if (st->s && st->slot >= 0 && !d->slot[st->slot].s) {
		/* Back as a fresh one would be: no bindings (they point at the
		 * caller's memory, SQLITE_STATIC) and no position; a reset also
		 * ends the statement's hold on the file. Its step's error was
		 * the caller's to read already. */
		sqlite3_reset(st->s);
		sqlite3_clear_bindings(st->s);
		d->slot[st->slot].s = st->s;
	} else {
		sqlite3_finalize(st->s);
	}
	free(s);
}
static int l_changes(struct db *db) { return sqlite3_changes(H(db)); }
static int64_t l_last_insert_rowid(struct db *db) { return sqlite3_last_insert_rowid(H(db)); }
/* IMMEDIATE: take the write lock now, so a transaction never fails
 * half-way on a lock upgrade (DB3). */
static int l_begin_write(struct db *db) { return l_exec(db, "BEGIN IMMEDIATE"); }
/* DEFERRED: the read transaction starts at the first read and keeps that
 * state of the file (WAL) until the end; it takes no write lock, so the
 * daemon's writers never wait for it (DB4). */
static int l_begin_snapshot(struct db *db) { return l_exec(db, "BEGIN DEFERRED"); }
static int l_commit(struct db *db) { return l_exec(db, "COMMIT"); }
static bool l_in_transaction(struct db *db) { return !sqlite3_get_autocommit(H(db)); }
static void l_rollback(struct db *db)
{
	if (l_in_transaction(db))
		sqlite3_exec(H(db), "ROLLBACK", NULL, NULL, NULL);
}
static const char *l_errmsg(struct db *db) { return sqlite3_errmsg(H(db)); }
/* A statement still taken at close is a caller's bug, but it must not
 * turn into a use of freed memory at its finalize: the connection closes
 * when its last statement goes (sqlite3_close_v2) and d lives until then. */
static void l_close(struct db *db)
{
	struct db_sqlite *d = (struct db_sqlite *)db;
	for (int i = 0; i < L_SLOTS; i++) {
		sqlite3_finalize(d->slot[i].s); /* a taken one is its holder's */
		free(d->slot[i].sql);
		memset(&d->slot[i], 0, sizeof(d->slot[i]));
	}
	sqlite3_close_v2(H(db));
	if (d->taken == 0)
		free(db);
	else
		d->closed = true;
}

static const struct db_ops sqlite_ops = {
	l_exec,		  l_prepare,	   l_bind_int64,  l_bind_text,	     l_bind_blob,
	l_bind_null,	  l_step,	   l_column_type, l_column_int64,    l_column_text,
	l_column_blob,	  l_column_bytes,  l_finalize,	  l_changes,	     l_last_insert_rowid,
	l_begin_write,	  l_begin_snapshot, l_commit,	  l_rollback,	     l_in_transaction,
	l_errmsg,	  l_close,
};

int db_sqlite_open(const char *path, int flags, struct db **out)
{
	*out = NULL;
	struct db_sqlite *db = calloc(1, sizeof(*db));
	if (!db)
		return DB_NOMEM;
	db->base.ops = &sqlite_ops;
	db->base.engine = DB_SQLITE;
	int rc = sqlite3_open_v2(path, &db->h, flags, NULL);
	*out = &db->base; /* even on failure: its errmsg says why */
	return map(rc);
}

struct sqlite3 *db_sqlite_handle(struct db *db)
{
	return db && db->engine == DB_SQLITE ? H(db) : NULL;
}
