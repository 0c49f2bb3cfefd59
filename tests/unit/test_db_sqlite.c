/*
 * test_db_sqlite.c: db.h DB8 on the SQLite engine, the statement cache.
 * A statement handed back for a text prepared before must behave as a
 * fresh one (no old bindings, no old position), a text in use is never
 * handed out twice, the cache is bounded, and db_close frees it all (the
 * ASan build's leak check). The live statements are counted with
 * sqlite3_next_stmt on the connection itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "fleetd/store/db.h"

static struct db *open_mem(void)
{
	struct db *db = NULL;
	assert_int_equal(db_sqlite_open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db),
			 DB_OK);
	assert_int_equal(db_exec(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)"), DB_OK);
	assert_int_equal(db_exec(db, "INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')"),
			 DB_OK);
	return db;
}

/* The connection's live statements whose SQL is sql (NULL: all of them). */
static int live_of(struct db *db, const char *sql)
{
	int n = 0;
	for (sqlite3_stmt *s = sqlite3_next_stmt(db_sqlite_handle(db), NULL); s;
	     s = sqlite3_next_stmt(db_sqlite_handle(db), s))
		n += !sql || !strcmp(sqlite3_sql(s), sql);
	return n;
}

static int live(struct db *db) { return live_of(db, NULL); }

static const char *SEL = "SELECT v FROM t WHERE k = ?1";

/* A finalized statement is kept, and the next prepare of its text takes
 * it rather than compiling another. */
static void test_a_text_is_compiled_once(void **state)
{
	(void)state;
	struct db *db = open_mem();
	for (int i = 0; i < 5; i++) {
		struct db_stmt *s;
		assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
		assert_int_equal(live(db), 1);
		assert_int_equal(db_bind_int64(s, 1, 2), DB_OK);
		assert_int_equal(db_step(s), DB_ROW);
		assert_string_equal((const char *)db_column_text(s, 0), "two");
		db_finalize(s);
		assert_int_equal(live(db), 1); /* kept, not finalized */
	}
	db_close(db);
}

/* Handed back as new: the last user's binding is gone (an unbound
 * parameter is NULL, so no row), and stepping starts from the first row
 * even though the last user stopped after one of three. */
static void test_a_reused_statement_is_fresh(void **state)
{
	(void)state;
	struct db *db = open_mem();
	struct db_stmt *s;
	assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
	assert_int_equal(db_bind_int64(s, 1, 1), DB_OK);
	assert_int_equal(db_step(s), DB_ROW);
	db_finalize(s);
	assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
	assert_int_equal(db_step(s), DB_DONE); /* k = NULL matches nothing */
	db_finalize(s);

	const char *all = "SELECT k FROM t ORDER BY k";
	assert_int_equal(db_prepare(db, all, &s), DB_OK);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_column_int64(s, 0), 1);
	db_finalize(s); /* two rows left unread */
	assert_int_equal(db_prepare(db, all, &s), DB_OK);
	for (int64_t k = 1; k <= 3; k++) {
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_column_int64(s, 0), k);
	}
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	db_close(db);
}

/* A text in use: a second prepare gets a statement of its own (two
 * live, each with its own binding); the second, uncached, is finalized at
 * its end and the first goes back to the cache. */
static void test_a_text_in_use_is_not_handed_out_twice(void **state)
{
	(void)state;
	struct db *db = open_mem();
	struct db_stmt *a, *b;
	assert_int_equal(db_prepare(db, SEL, &a), DB_OK);
	assert_int_equal(db_prepare(db, SEL, &b), DB_OK);
	assert_int_equal(live(db), 2);
	assert_int_equal(db_bind_int64(a, 1, 1), DB_OK);
	assert_int_equal(db_bind_int64(b, 1, 3), DB_OK);
	assert_int_equal(db_step(a), DB_ROW);
	assert_int_equal(db_step(b), DB_ROW);
	assert_string_equal((const char *)db_column_text(a, 0), "one");
	assert_string_equal((const char *)db_column_text(b, 0), "three");
	db_finalize(b);
	assert_int_equal(live(db), 1);
	db_finalize(a);
	assert_int_equal(live(db), 1);
	db_close(db);
}

/* The text is the key, not the pointer: the same text from another
 * buffer takes the cached statement, and a buffer reused for another
 * text after its prepare does not change what the cache holds. */
static void test_the_text_is_the_key(void **state)
{
	(void)state;
	struct db *db = open_mem();
	char buf[64];
	struct db_stmt *s;
	snprintf(buf, sizeof(buf), "%s", SEL);
	assert_int_equal(db_prepare(db, buf, &s), DB_OK);
	db_finalize(s);
	snprintf(buf, sizeof(buf), "SELECT count(*) FROM t");
	assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
	assert_int_equal(live(db), 1); /* the first text's, not a new one */
	assert_int_equal(db_bind_int64(s, 1, 3), DB_OK);
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal((const char *)db_column_text(s, 0), "three");
	db_finalize(s);
	assert_int_equal(db_prepare(db, buf, &s), DB_OK);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_column_int64(s, 0), 3);
	db_finalize(s);
	assert_int_equal(live(db), 2);
	db_close(db);
}

/* Bounded, least recently used out: 300 texts, SEL used after each, leave
 * DB_SQLITE_STMT_CACHE statements: SEL and the last ones, exactly. */
static void test_the_cache_is_bounded(void **state)
{
	(void)state;
	struct db *db = open_mem();
	char sql[64];
	struct db_stmt *s;
	const int texts = 300, keep = DB_SQLITE_STMT_CACHE - 1;
	for (int i = 0; i < texts; i++) {
		snprintf(sql, sizeof(sql), "SELECT %d, v FROM t WHERE k = 1", i);
		assert_int_equal(db_prepare(db, sql, &s), DB_OK);
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_column_int64(s, 0), i);
		db_finalize(s);
		/* SEL kept warm: the least recently used go, not it. */
		assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
		db_finalize(s);
	}
	assert_int_equal(live(db), DB_SQLITE_STMT_CACHE);
	assert_int_equal(live_of(db, SEL), 1);
	for (int i = 0; i < texts; i++) {
		snprintf(sql, sizeof(sql), "SELECT %d, v FROM t WHERE k = 1", i);
		assert_int_equal(live_of(db, sql), i >= texts - keep);
	}
	assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
	assert_int_equal(live(db), DB_SQLITE_STMT_CACHE); /* from the cache, not compiled again */
	db_finalize(s);
	db_close(db);
}

/* Text with no statement in it compiles to none: nothing is kept, and
 * its end is harmless. */
static void test_text_without_a_statement(void **state)
{
	(void)state;
	struct db *db = open_mem();
	const char *empty[] = {"", "   ", "-- a comment"};
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		for (int round = 0; round < 2; round++) {
			struct db_stmt *s;
			assert_int_equal(db_prepare(db, empty[i], &s), DB_OK);
			db_finalize(s);
		}
	}
	assert_int_equal(live(db), 0);
	db_close(db);
}

/* A statement still in use at db_close (a caller's bug) ends the
 * connection at its own finalize, not a use of freed memory (the ASan
 * build checks that, and that nothing leaks). */
static void test_close_with_a_statement_in_use(void **state)
{
	(void)state;
	struct db *db = open_mem();
	struct db_stmt *held, *s;
	assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
	db_finalize(s); /* one cached */
	assert_int_equal(db_prepare(db, "SELECT k FROM t", &held), DB_OK);
	assert_int_equal(db_step(held), DB_ROW);
	db_close(db);
	db_finalize(held);
}

/* A statement in use is never evicted. SEL is taken first, so it is the
 * least recently used slot when the other texts have filled the cache; the
 * next text (X) must take the oldest free slot, not SEL's. Were SEL's
 * slot given to X, SEL's statement would go back under X's text when it
 * ends (X still taken), and the next prepare of X would run SEL. */
static void test_a_taken_statement_is_never_evicted(void **state)
{
	(void)state;
	struct db *db = open_mem();
	struct db_stmt *held, *x, *s;
	char sql[64];
	assert_int_equal(db_prepare(db, SEL, &held), DB_OK);
	for (int i = 0; i < DB_SQLITE_STMT_CACHE - 1; i++) {
		snprintf(sql, sizeof(sql), "SELECT %d", i);
		assert_int_equal(db_prepare(db, sql, &s), DB_OK);
		db_finalize(s);
	}
	const char *xsql = "SELECT 4242";
	assert_int_equal(db_prepare(db, xsql, &x), DB_OK);
	assert_int_equal(db_bind_int64(held, 1, 2), DB_OK);
	assert_int_equal(db_step(held), DB_ROW);
	assert_string_equal((const char *)db_column_text(held, 0), "two");
	db_finalize(held);
	db_finalize(x);
	assert_int_equal(db_prepare(db, xsql, &s), DB_OK);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_column_int64(s, 0), 4242);
	db_finalize(s);
	assert_int_equal(db_prepare(db, SEL, &s), DB_OK);
	assert_int_equal(db_bind_int64(s, 1, 3), DB_OK);
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal((const char *)db_column_text(s, 0), "three");
	db_finalize(s);
	db_close(db);
}

/* A statement whose step failed goes back usable: the constraint's
 * failure is not the next user's. */
static void test_a_failed_statement_goes_back_clean(void **state)
{
	(void)state;
	struct db *db = open_mem();
	const char *ins = "INSERT INTO t (k, v) VALUES (?1, ?2)";
	struct db_stmt *s;
	assert_int_equal(db_prepare(db, ins, &s), DB_OK);
	db_bind_int64(s, 1, 1); /* taken */
	db_bind_text(s, 2, "again", -1);
	assert_int_equal(db_step(s), DB_CONSTRAINT);
	db_finalize(s);
	assert_int_equal(db_prepare(db, ins, &s), DB_OK);
	db_bind_int64(s, 1, 4);
	db_bind_text(s, 2, "four", -1);
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	assert_int_equal(db_changes(db), 1);
	db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_text_is_compiled_once),
		cmocka_unit_test(test_a_reused_statement_is_fresh),
		cmocka_unit_test(test_a_text_in_use_is_not_handed_out_twice),
		cmocka_unit_test(test_the_text_is_the_key),
		cmocka_unit_test(test_the_cache_is_bounded),
		cmocka_unit_test(test_a_taken_statement_is_never_evicted),
		cmocka_unit_test(test_text_without_a_statement),
		cmocka_unit_test(test_close_with_a_statement_in_use),
		cmocka_unit_test(test_a_failed_statement_goes_back_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
