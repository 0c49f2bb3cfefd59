/*
 * db.c: db.h's calls, handed to the connection's engine (db_sqlite.c,
 * db_pg.c). Nothing here knows an engine.
 */
#include "fleetd/store/db.h"

#include <stddef.h>

enum db_engine db_engine(const struct db *db) { return db->engine; }
int db_exec(struct db *db, const char *sql) { return db->ops->exec(db, sql); }
int db_prepare(struct db *db, const char *sql, struct db_stmt **out)
{
	*out = NULL;
	return db->ops->prepare(db, sql, out);
}
int db_bind_int64(struct db_stmt *s, int i, int64_t v) { return s->db->ops->bind_int64(s, i, v); }
int db_bind_text(struct db_stmt *s, int i, const char *v, int len)
{
	return v ? s->db->ops->bind_text(s, i, v, len) : s->db->ops->bind_null(s, i);
}
int db_bind_blob(struct db_stmt *s, int i, const void *v, int len)
{
	return v ? s->db->ops->bind_blob(s, i, v, len) : s->db->ops->bind_null(s, i);
}
int db_bind_null(struct db_stmt *s, int i) { return s->db->ops->bind_null(s, i); }
int db_step(struct db_stmt *s) { return s->db->ops->step(s); }
int db_column_type(struct db_stmt *s, int col) { return s->db->ops->column_type(s, col); }
int64_t db_column_int64(struct db_stmt *s, int col) { return s->db->ops->column_int64(s, col); }
const unsigned char *db_column_text(struct db_stmt *s, int col)
{
	return s->db->ops->column_text(s, col);
}
const void *db_column_blob(struct db_stmt *s, int col) { return s->db->ops->column_blob(s, col); }
int db_column_bytes(struct db_stmt *s, int col) { return s->db->ops->column_bytes(s, col); }
void db_finalize(struct db_stmt *s)
{
	if (s)
		s->db->ops->finalize(s);
}
int db_changes(struct db *db) { return db->ops->changes(db); }
int64_t db_last_insert_rowid(struct db *db) { return db->ops->last_insert_rowid(db); }
int db_begin_write(struct db *db) { return db->ops->begin_write(db); }
int db_begin_snapshot(struct db *db) { return db->ops->begin_snapshot(db); }
int db_commit(struct db *db) { return db->ops->commit(db); }
void db_rollback(struct db *db) { db->ops->rollback(db); }
bool db_in_transaction(struct db *db) { return db->ops->in_transaction(db); }
const char *db_errmsg(struct db *db) { return db->ops->errmsg(db); }
void db_close(struct db *db)
{
	if (db)
		db->ops->close(db);
}
