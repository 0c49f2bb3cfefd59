/*
 * db_pg.c: db.h on a PostgreSQL server (libpq), for several fleetd
 * replicas sharing one store. What the table code relies on from SQLite is
 * reproduced here (db.h DB1-DB7); what PostgreSQL does differently is said
 * where it matters:
 *
 * - a statement runs at its first step, with its parameters in text (a
 *   blob in binary), and its whole result is kept until the next run or
 *   the finalize: the store's reads are bounded by their LIMITs;
 * - COMMIT of a transaction a failed statement aborted is answered
 *   "ROLLBACK" without an error by PostgreSQL: here it is an error, so the
 *   table code never believes a failed transaction committed (DB5);
 * - a connection the server dropped is re-established before the next
 *   statement outside a transaction; inside one, the statement fails and
 *   the transaction is rolled back as any failure is.
 */
#include "fleetd/store/db.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hex.h"

/* pg_type.h's OIDs, which libpq-fe.h does not carry. */
#define PG_BOOLOID 16
#define PG_BYTEAOID 17
#define PG_TEXTOID 25
#define PG_INT8OID 20
#define PG_INT2OID 21
#define PG_INT4OID 23
#define PG_OIDOID 26
#define PG_NUMERICOID 1700

struct db_pg {
	struct db base;
	PGconn *c;
	bool readonly;
	int changes;
	char set[384]; /* the session's settings, sent again after a reset */
	char err[512];
};

struct db_pg_stmt {
	struct db_stmt base;
	char *sql; /* with $N placeholders */
	int nparams;
	const char **vals;
	int *lens;
	int *fmts;
	Oid *types;
	char (*ints)[24]; /* the text of each integer parameter */
	bool *used;       /* ?N appears in the text (an unused one is typed text) */
	PGresult *res;
	int row, nrows;
	bool ran;
	/* the current row's decoded bytea columns */
	unsigned char **blob;
	size_t *blob_len;
	int ncols;
};

#define P(db) ((struct db_pg *)(db))
#define PS(s) ((struct db_pg_stmt *)(s))

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg; /* notices (e.g. "already exists, skipping") are not errors */
}

__attribute__((format(printf, 3, 4))) static int set_err(struct db_pg *db, int code,
							     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(db->err, sizeof(db->err), fmt, ap);
	va_end(ap);
	/* libpq's messages end in a newline, and may hold more than one line */
	for (char *p = db->err; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = *(p + 1) ? ' ' : '\0';
	return code;
}

/* DB6: SQLSTATE classes to db.h's codes. */
static int map_state(const char *state)
{
	if (!state || strlen(state) != 5)
		return DB_IOERR; /* no SQLSTATE: the connection, not the statement */
	if (!strncmp(state, "23", 2))
		return DB_CONSTRAINT;
	if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03") ||
	    !strcmp(state, "57014"))
		return DB_BUSY; /* serialization, deadlock, lock_timeout, statement_timeout */
	if (!strcmp(state, "25006"))
		return DB_READONLY;
	if (!strcmp(state, "53200"))
		return DB_NOMEM;
	if (!strncmp(state, "08", 2) || !strncmp(state, "53", 2) || !strncmp(state, "57", 2) ||
	    !strncmp(state, "58", 2))
		return DB_IOERR;
	if (!strcmp(state, "XX001") || !strcmp(state, "XX002"))
		return DB_CORRUPT;
	return DB_ERROR;
}

static int result_err(struct db_pg *db, PGresult *r)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (!msg)
		msg = PQerrorMessage(db->c);
	return set_err(db, map_state(state), "%s%s", msg ? msg : "",
		       state ? "" : " (no answer from the server)");
}

/* A dropped connection comes back before a statement that begins no work
 * in flight (outside a transaction). */
static void revive(struct db_pg *db)
{
	if (PQstatus(db->c) != CONNECTION_BAD)
		return;
	PQreset(db->c);
	if (PQstatus(db->c) == CONNECTION_OK)
		PQclear(PQexec(db->c, db->set));
}

static bool in_txn(struct db_pg *db)
{
	PGTransactionStatusType t = PQtransactionStatus(db->c);
	return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

static int run_plain(struct db_pg *db, const char *sql)
{
	if (!in_txn(db))
		revive(db);
	PGresult *r = PQexec(db->c, sql);
	ExecStatusType st = PQresultStatus(r);
	int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? DB_OK : result_err(db, r);
	PQclear(r);
	return rc;
}

static int g_exec(struct db *db, const char *sql) { return run_plain(P(db), sql); }

/* DB1: ?N to $N outside literals and quoted identifiers; a bare ? takes
 * the next number, as in SQLite. */
static char *translate(const char *sql, int *nparams, bool used[1000])
{
	size_t n = strlen(sql);
	char *out = malloc(n * 2 + 1);
	if (!out)
		return NULL;
	char *o = out;
	char quote = 0;
	int max = 0, next = 1;
	for (const char *p = sql; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			*o++ = *p;
			continue;
		}
		if (*p == '\'' || *p == '"') {
			quote = *p;
			*o++ = *p;
			continue;
		}
		if (*p != '?') {
			*o++ = *p;
			continue;
		}
		int num = 0;
		const char *q = p + 1;
		while (*q >= '0' && *q <= '9' && num < 1000)
			num = num * 10 + (*q++ - '0');
		if (q == p + 1)
			num = next;
		if (num < 1 || num > 999) {
			free(out);
			return NULL;
		}
		next = num + 1;
		used[num] = true;
		if (num > max)
			max = num;
		o += sprintf(o, "$%d", num);
		p = q - 1;
	}
	*o = '\0';
	*nparams = max;
	return out;
}

static int g_prepare(struct db *d, const char *sql, struct db_stmt **out)
{
	struct db_pg *db = P(d);
	struct db_pg_stmt *s = calloc(1, sizeof(*s));
	if (!s)
		return DB_NOMEM;
	s->base.db = d;
	bool used[1000] = {false};
	s->sql = translate(sql, &s->nparams, used);
	if (!s->sql) {
		free(s);
		return set_err(db, DB_ERROR, "a placeholder out of range in a statement");
	}
	if (s->nparams) {
		size_t k = (size_t)s->nparams;
		s->vals = calloc(k, sizeof(*s->vals));
		s->lens = calloc(k, sizeof(*s->lens));
		s->fmts = calloc(k, sizeof(*s->fmts));
		s->types = calloc(k, sizeof(*s->types));
		s->ints = calloc(k, sizeof(*s->ints));
		s->used = calloc(k, sizeof(*s->used));
		if (!s->vals || !s->lens || !s->fmts || !s->types || !s->ints || !s->used) {
			free(s->vals), free(s->lens), free(s->fmts), free(s->types), free(s->ints);
			free(s->used);
			free(s->sql);
			free(s);
			return DB_NOMEM;
		}
		for (int i = 0; i < s->nparams; i++)
			s->used[i] = used[i + 1];
	}
	*out = &s->base;
	return DB_OK;
}

static int slot(struct db_pg_stmt *s, int i)
{
	return i >= 1 && i <= s->nparams ? i - 1 : -1;
}

static int g_bind_int64(struct db_stmt *st, int i, int64_t v)
{
	struct db_pg_stmt *s = PS(st);
	int k = slot(s, i);
	if (k < 0)
		return DB_ERROR;
	snprintf(s->ints[k], sizeof(s->ints[k]), "%" PRId64, v);
	s->vals[k] = s->ints[k];
	s->lens[k] = 0;
	s->fmts[k] = 0;
	s->types[k] = PG_INT8OID;
	return DB_OK;
}

static int g_bind_text(struct db_stmt *st, int i, const char *v, int len)
{
	struct db_pg_stmt *s = PS(st);
	int k = slot(s, i);
	if (k < 0)
		return DB_ERROR;
	/* libpq sends text parameters up to their NUL: a length other than
	 * the string's own cannot be said, and the store never binds one */
	if (len >= 0 && (size_t)len != strnlen(v, (size_t)len + 1))
		return DB_ERROR;
	s->vals[k] = v;
	s->lens[k] = 0;
	s->fmts[k] = 0;
	s->types[k] = 0; /* the server infers it from the column it meets */
	return DB_OK;
}

static int g_bind_blob(struct db_stmt *st, int i, const void *v, int len)
{
	struct db_pg_stmt *s = PS(st);
	int k = slot(s, i);
	if (k < 0 || len < 0)
		return DB_ERROR;
	s->vals[k] = len ? v : "";
	s->lens[k] = len;
	s->fmts[k] = 1;
	s->types[k] = PG_BYTEAOID;
	return DB_OK;
}

static int g_bind_null(struct db_stmt *st, int i)
{
	struct db_pg_stmt *s = PS(st);
	int k = slot(s, i);
	if (k < 0)
		return DB_ERROR;
	s->vals[k] = NULL;
	s->lens[k] = 0;
	s->fmts[k] = 0;
	s->types[k] = 0;
	return DB_OK;
}

static void clear_blobs(struct db_pg_stmt *s)
{
	for (int c = 0; s->blob && c < s->ncols; c++) {
		free(s->blob[c]);
		s->blob[c] = NULL;
	}
}

static int g_step(struct db_stmt *st)
{
	struct db_pg_stmt *s = PS(st);
	struct db_pg *db = P(st->db);
	if (!s->ran) {
		s->ran = true;
		if (!in_txn(db))
			revive(db);
		/* A number the text skips (the table code binds ?1 and ?2 and
		 * uses only ?2 in one of two texts): PostgreSQL must be told a
		 * type for it, and it is sent as a NULL. */
		for (int i = 0; i < s->nparams; i++)
			if (!s->used[i]) {
				s->vals[i] = NULL;
				s->types[i] = PG_TEXTOID;
				s->fmts[i] = 0;
			}
		s->res = PQexecParams(db->c, s->sql, s->nparams, s->types, s->vals, s->lens,
				      s->fmts, 0);
		ExecStatusType rs = PQresultStatus(s->res);
		if (rs == PGRES_COMMAND_OK) {
			const char *t = PQcmdTuples(s->res);
			db->changes = t && *t ? atoi(t) : 0;
			return DB_DONE;
		}
		if (rs != PGRES_TUPLES_OK)
			return result_err(db, s->res);
		s->nrows = PQntuples(s->res);
		s->ncols = PQnfields(s->res);
		s->row = -1;
		if (s->ncols > 0) {
			s->blob = calloc((size_t)s->ncols, sizeof(*s->blob));
			s->blob_len = calloc((size_t)s->ncols, sizeof(*s->blob_len));
			if (!s->blob || !s->blob_len)
				return set_err(db, DB_NOMEM, "out of memory");
		}
	}
	if (!s->res || PQresultStatus(s->res) != PGRES_TUPLES_OK)
		return DB_DONE;
	clear_blobs(s);
	if (s->row + 1 >= s->nrows) {
		s->row = s->nrows;
		return DB_DONE;
	}
	s->row++;
	return DB_ROW;
}

static bool cell_ok(struct db_pg_stmt *s, int col)
{
	return s->res && s->row >= 0 && s->row < s->nrows && col >= 0 && col < s->ncols;
}

static int g_column_type(struct db_stmt *st, int col)
{
	struct db_pg_stmt *s = PS(st);
	if (!cell_ok(s, col) || PQgetisnull(s->res, s->row, col))
		return DB_NULL;
	switch (PQftype(s->res, col)) {
	case PG_BOOLOID:
	case PG_INT2OID:
	case PG_INT4OID:
	case PG_INT8OID:
	case PG_OIDOID:
	case PG_NUMERICOID:
		return DB_INTEGER;
	case PG_BYTEAOID:
		return DB_BLOB;
	default:
		return DB_TEXT;
	}
}

static int64_t g_column_int64(struct db_stmt *st, int col)
{
	struct db_pg_stmt *s = PS(st);
	if (!cell_ok(s, col) || PQgetisnull(s->res, s->row, col))
		return 0;
	const char *v = PQgetvalue(s->res, s->row, col);
	if (PQftype(s->res, col) == PG_BOOLOID)
		return v[0] == 't';
	errno = 0;
	long long n = strtoll(v, NULL, 10);
	return errno ? 0 : (int64_t)n;
}

static const unsigned char *g_column_text(struct db_stmt *st, int col)
{
	struct db_pg_stmt *s = PS(st);
	if (!cell_ok(s, col) || PQgetisnull(s->res, s->row, col))
		return NULL;
	if (PQftype(s->res, col) == PG_BOOLOID) /* SQLite's text of 0 or 1 */
		return (const unsigned char *)(PQgetvalue(s->res, s->row, col)[0] == 't' ? "1" : "0");
	return (const unsigned char *)PQgetvalue(s->res, s->row, col);
}

/* bytea's text form (bytea_output = hex, which the opener sets): \x then
 * two hex digits a byte. */
static bool decode_bytea(struct db_pg_stmt *s, int col)
{
	if (s->blob[col])
		return true;
	const char *v = PQgetvalue(s->res, s->row, col);
	size_t n = (size_t)PQgetlength(s->res, s->row, col);
	if (n < 2 || v[0] != '\\' || v[1] != 'x' || (n - 2) % 2)
		return false;
	size_t len = (n - 2) / 2;
	unsigned char *b = malloc(len ? len : 1);
	if (!b)
		return false;
	if (fleet_hex_decode(v + 2, n - 2, b, len) != FLEET_OK) {
		free(b);
		return false;
	}
	s->blob[col] = b;
	s->blob_len[col] = len;
	return true;
}

static const void *g_column_blob(struct db_stmt *st, int col)
{
	struct db_pg_stmt *s = PS(st);
	if (!cell_ok(s, col) || PQgetisnull(s->res, s->row, col))
		return NULL;
	if (PQftype(s->res, col) != PG_BYTEAOID)
		return PQgetvalue(s->res, s->row, col);
	return decode_bytea(s, col) ? s->blob[col] : NULL;
}

static int g_column_bytes(struct db_stmt *st, int col)
{
	struct db_pg_stmt *s = PS(st);
	if (!cell_ok(s, col) || PQgetisnull(s->res, s->row, col))
		return 0;
	if (PQftype(s->res, col) != PG_BYTEAOID)
		return PQgetlength(s->res, s->row, col);
	return decode_bytea(s, col) && s->blob_len[col] <= INT32_MAX ? (int)s->blob_len[col] : 0;
}

static void g_finalize(struct db_stmt *st)
{
	struct db_pg_stmt *s = PS(st);
	clear_blobs(s);
	free(s->blob);
	free(s->blob_len);
	PQclear(s->res);
	free(s->vals), free(s->lens), free(s->fmts), free(s->types), free(s->ints);
	free(s->used);
	free(s->sql);
	free(s);
}

static int g_changes(struct db *db) { return P(db)->changes; }

static int64_t g_last_insert_rowid(struct db *d)
{
	struct db_pg *db = P(d);
	PGresult *r = PQexec(db->c, "SELECT lastval()");
	int64_t v = 0;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return v;
}

static int g_begin_write(struct db *d)
{
	struct db_pg *db = P(d);
	char sql[160];
	snprintf(sql, sizeof(sql),
		 "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(%lld)",
		 (long long)DB_PG_WRITE_LOCK);
	int rc = run_plain(db, sql);
	if (rc != DB_OK && in_txn(db))
		run_plain(db, "ROLLBACK");
	return rc;
}

static int g_begin_snapshot(struct db *d)
{
	return run_plain(P(d), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

static int g_commit(struct db *d)
{
	struct db_pg *db = P(d);
	PGresult *r = PQexec(db->c, "COMMIT");
	int rc;
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = result_err(db, r);
	else if (strcmp(PQcmdStatus(r), "COMMIT") != 0)
		rc = set_err(db, DB_ERROR, "the transaction had failed and was rolled back");
	else
		rc = DB_OK;
	PQclear(r);
	return rc;
}

static bool g_in_transaction(struct db *d) { return in_txn(P(d)); }

static void g_rollback(struct db *d)
{
	if (in_txn(P(d)))
		PQclear(PQexec(P(d)->c, "ROLLBACK"));
}

static const char *g_errmsg(struct db *d) { return P(d)->err; }

static void g_close(struct db *d)
{
	PQfinish(P(d)->c);
	free(d);
}

static const struct db_ops pg_ops = {
	g_exec,		  g_prepare,	    g_bind_int64,  g_bind_text,	     g_bind_blob,
	g_bind_null,	  g_step,	    g_column_type, g_column_int64,   g_column_text,
	g_column_blob,	  g_column_bytes,   g_finalize,	   g_changes,	     g_last_insert_rowid,
	g_begin_write,	  g_begin_snapshot, g_commit,	   g_rollback,	     g_in_transaction,
	g_errmsg,	  g_close,
};

int db_pg_open(const char *conninfo, bool readonly, struct db **out)
{
	*out = NULL;
	struct db_pg *db = calloc(1, sizeof(*db));
	if (!db)
		return DB_NOMEM;
	db->base.ops = &pg_ops;
	db->base.engine = DB_POSTGRES;
	db->readonly = readonly;
	*out = &db->base;
	const char *const keys[] = {"dbname", "fallback_application_name", NULL};
	const char *const vals[] = {conninfo, "fleetd", NULL};
	db->c = PQconnectdbParams(keys, vals, 1);
	if (!db->c)
		return set_err(db, DB_NOMEM, "out of memory");
	if (PQstatus(db->c) != CONNECTION_OK)
		return set_err(db, DB_IOERR, "cannot connect to PostgreSQL: %s",
			       PQerrorMessage(db->c));
	PQsetNoticeProcessor(db->c, quiet, NULL);
	/* Session settings (sent again by revive: a reset keeps the
	 * connection string, not these). lock_timeout: the write lock's wait (DB3, DB_BUSY_MS);
	 * idle_in_transaction_session_timeout: a replica that stops in the
	 * middle of a transaction lets the others go on. */
	snprintf(db->set, sizeof(db->set),
		 "SET lock_timeout = %d; SET idle_in_transaction_session_timeout = 60000;"
		 " SET bytea_output = 'hex'; SET client_min_messages = warning;"
		 " SET default_transaction_read_only = %s",
		 DB_BUSY_MS, readonly ? "on" : "off");
	return run_plain(db, db->set);
}

int db_pg_try_lock(struct db *d, int64_t key, bool *held)
{
	struct db_pg *db = P(d);
	*held = false;
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT pg_try_advisory_lock(%lld)", (long long)key);
	revive(db);
	PGresult *r = PQexec(db->c, sql);
	int rc = DB_OK;
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		rc = result_err(db, r);
	else
		*held = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return rc;
}

int db_pg_unlock(struct db *d, int64_t key)
{
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT pg_advisory_unlock(%lld)", (long long)key);
	return run_plain(P(d), sql);
}
