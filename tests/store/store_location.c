/*
 * store_location.c: store_location.h's two engines for the tests.
 */
#include "tests/store/store_location.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static char base[1024]; /* the cluster's conninfo (its postgres database) */
static int pg_state = -1; /* -1 unknown, 0 SQLite, 1 PostgreSQL */

static void load(void)
{
	if (pg_state >= 0)
		return;
	const char *file = getenv("FLEET_TEST_PG");
	pg_state = 0;
	if (!file || !*file)
		return;
	FILE *fp = fopen(file, "r");
	if (!fp || !fgets(base, sizeof(base), fp) || !strncmp(base, "none", 4)) {
		if (fp)
			fclose(fp);
		const char *req = getenv("FLEET_REQUIRE_PG");
		fprintf(stderr, "no PostgreSQL test cluster (%s says none or is missing): %s\n",
			file, req && !strcmp(req, "1") ? "FLEET_REQUIRE_PG=1, failing" : "skipping");
		exit(req && !strcmp(req, "1") ? 1 : 77);
	}
	fclose(fp);
	base[strcspn(base, "\r\n")] = '\0';
	pg_state = 1;
}

bool store_location_pg(void)
{
	load();
	return pg_state == 1;
}

/* base is "postgresql:///postgres?host=...": the same with another dbname. */
static void with_db(const char *db, char *out, size_t cap)
{
	const char *q = strchr(base, '?');
	snprintf(out, cap, "postgresql:///%s%s", db, q ? q : "");
}

static PGconn *admin(void)
{
	PGconn *c = PQconnectdb(base);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("the PostgreSQL test cluster: %s", PQerrorMessage(c));
	return c;
}

void store_location_new(const char *state_dir, char *out, size_t cap)
{
	if (!store_location_pg()) {
		snprintf(out, cap, "%s", state_dir);
		return;
	}
	static unsigned n;
	char name[64], sql[160];
	snprintf(name, sizeof(name), "fleet_t_%ld_%u", (long)getpid(), n++);
	PGconn *c = admin();
	/* FILE_COPY: the cluster runs without fsync, where it is the faster */
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s STRATEGY FILE_COPY", name);
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
	with_db(name, out, cap);
	/* The tests' own SQL (not the store's) makes rows with SQLite's
	 * printf('%0Nd' | '%0Nx', i); the same function here, for the tests. */
	c = PQconnectdb(out);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("%s: %s", name, PQerrorMessage(c));
	r = PQexec(c, "CREATE FUNCTION printf(fmt text, i bigint) RETURNS text LANGUAGE plpgsql"
		      " IMMUTABLE AS $$ DECLARE m text[]; BEGIN"
		      " m := regexp_match(fmt, '^(.*)%0([0-9]+)([dx])(.*)$');"
		      " RETURN m[1] || lpad(CASE m[3] WHEN 'x' THEN to_hex(i) ELSE i::text END,"
		      " m[2]::int, '0') || m[4]; END $$");
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fail_msg("the tests' printf: %s", PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
}

void store_location_free(const char *loc)
{
	if (!store_location_pg() || strncmp(loc, "postgresql:///", 14) != 0)
		return;
	char name[64];
	size_t len = strcspn(loc + 14, "?");
	if (len == 0 || len >= sizeof(name))
		return;
	memcpy(name, loc + 14, len);
	name[len] = '\0';
	char sql[128];
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
	PGconn *c = admin();
	PQclear(PQexec(c, sql));
	PQfinish(c);
}

struct raw {
	sqlite3 *lite;
	PGconn *pg;
	char err[512];
};

struct raw *raw_open(const char *loc)
{
	struct raw *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	if (!strncmp(loc, "postgres", 8)) {
		r->pg = PQconnectdb(loc);
		if (PQstatus(r->pg) != CONNECTION_OK)
			fail_msg("raw connection: %s", PQerrorMessage(r->pg));
		PQclear(PQexec(r->pg, "SET client_min_messages = warning"));
		return r;
	}
	char p[1100];
	snprintf(p, sizeof(p), "%s/fleetd.db", loc);
	assert_int_equal(sqlite3_open(p, &r->lite), SQLITE_OK);
	sqlite3_busy_timeout(r->lite, 5000);
	return r;
}

int raw_exec(struct raw *r, const char *sql)
{
	if (r->lite) {
		int rc = sqlite3_exec(r->lite, sql, NULL, NULL, NULL);
		snprintf(r->err, sizeof(r->err), "%s", sqlite3_errmsg(r->lite));
		return rc & 0xff;
	}
	/* The migration tests drop the tables a later version adds, whose
	 * foreign keys point both ways (nodes.token, join_tokens.target_node):
	 * SQLite drops them one by one, PostgreSQL only with CASCADE. */
	char *q = malloc(strlen(sql) * 2 + 1), *o = q;
	assert_non_null(q);
	for (const char *p = sql; *p;) {
		if (!strncmp(p, "DROP TABLE ", 11)) {
			size_t n = 11 + strcspn(p + 11, ";");
			memcpy(o, p, n), o += n, p += n;
			o += sprintf(o, " CASCADE");
			continue;
		}
		*o++ = *p++;
	}
	*o = '\0';
	PGresult *res = PQexec(r->pg, q);
	free(q);
	ExecStatusType st = PQresultStatus(res);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? RAW_OK
		 : state && !strncmp(state, "23", 2)		  ? RAW_CONSTRAINT
								  : 1;
	snprintf(r->err, sizeof(r->err), "%s", PQresultErrorMessage(res));
	PQclear(res);
	if (rc != RAW_OK && PQtransactionStatus(r->pg) == PQTRANS_INERROR)
		PQclear(PQexec(r->pg, "ROLLBACK"));
	return rc;
}

long long raw_int(struct raw *r, const char *sql)
{
	if (r->lite) {
		sqlite3_stmt *s;
		assert_int_equal(sqlite3_prepare_v2(r->lite, sql, -1, &s, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(s), SQLITE_ROW);
		long long v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		return v;
	}
	PGresult *res = PQexec(r->pg, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		fail_msg("%s: %s", sql, PQresultErrorMessage(res));
	const char *v = PQgetvalue(res, 0, 0);
	long long n = v[0] == 't' ? 1 : v[0] == 'f' ? 0 : strtoll(v, NULL, 10);
	PQclear(res);
	return n;
}

const char *raw_errmsg(struct raw *r) { return r->err; }

void raw_close(struct raw *r)
{
	if (!r)
		return;
	if (r->lite)
		sqlite3_close(r->lite);
	if (r->pg)
		PQfinish(r->pg);
	free(r);
}
