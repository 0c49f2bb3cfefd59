/*
 * store_location.h: where a store test keeps its store, so that every
 * store test runs on both engines (issue 16): a state directory (SQLite)
 * by default; a fresh PostgreSQL database of its own when FLEET_TEST_PG
 * names the test cluster's conninfo file (tests/pg.cmake starts the
 * cluster: scripts/pg-test-cluster.sh). A test that needs what only one
 * engine has (a file's mode, a pragma) asks store_location_pg() and skips
 * itself there, saying so.
 *
 * And a raw connection beside the store's own, to look behind the API or
 * damage a row, on either engine.
 */
#ifndef FLEET_TESTS_STORE_LOCATION_H
#define FLEET_TESTS_STORE_LOCATION_H

#include <stdbool.h>
#include <stddef.h>

/* true when this run's store tests use PostgreSQL. When FLEET_TEST_PG is
 * set but its file says the cluster could not start ("none"), the test
 * exits 77 saying so, or fails when FLEET_REQUIRE_PG=1 (CI). */
bool store_location_pg(void);
/* out (cap bytes) gets state_dir itself, or the URI of a new, empty
 * database. */
void store_location_new(const char *state_dir, char *out, size_t cap);
/* Drop the database a location named (nothing for a directory); every
 * handle on it must be closed. */
void store_location_free(const char *loc);

struct raw;
/* loc: a location from store_location_new (a state directory: its
 * fleetd.db). */
struct raw *raw_open(const char *loc);
/* RAW_OK when the SQL (several statements allowed) ran; RAW_CONSTRAINT
 * when it broke a constraint (SQLite's code, PostgreSQL's class 23); any
 * other failure another nonzero value. */
#define RAW_OK 0
#define RAW_CONSTRAINT 19
int raw_exec(struct raw *r, const char *sql);
long long raw_int(struct raw *r, const char *sql);
/* The engine's last error message. */
const char *raw_errmsg(struct raw *r);
void raw_close(struct raw *r);

/* The skip of a test that checks what only SQLite has. */
#define SKIP_ON_PG(why)                                                                  \
	do {                                                                             \
		if (store_location_pg()) {                                               \
			print_message("[ SKIP-PG  ] %s: %s\n", __func__, why);           \
			return;                                                          \
		}                                                                        \
	} while (0)

#endif
