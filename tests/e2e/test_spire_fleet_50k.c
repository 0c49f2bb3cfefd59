/*
 * test_spire_fleet_50k.c: a fleet of 50,000 machines, end to end: the store
 * → the pass (fleetd/pass/, as fleetd runs it, through a read-only store
 * handle) → spire-nodes.json → the applier's plan, directly and through the
 * real spire-server-fleet-entries against the spire-server contract fake.
 *
 * 50,000 admitted devices, each with a passing verdict and an LDevID, every
 * tenth with an ECC EK. The inventory has w00000..w48999 active (eligible),
 * w49000..w49499 decommissioning and w49500..w49999 gone from it (both
 * revoked): every one of the 50,000 is in the file, past the 4,096 a list
 * the applier used to take and the 10,000 rows the store used to list,
 * revoked ones included, and every one is in the plan (its entries created,
 * or its agents banned). Then a server that holds all of it: nothing to
 * create, update or delete.
 *
 * Each stage's time is printed; the bounds asserted are loose (this runs
 * under ASan too) but fail a planner or reader that went quadratic.
 *
 * Usage: test_spire_fleet_50k APPLIER SPIRE_SERVER_FAKE
 * (the applier stage skips without python3).
 */
#include "tests/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/inventory.h"
#include "fleetd/pass/pass.h"
#include "fleetd/store/store.h"
#include "lib/file_read.h"
#include "lib/buf.h"
#include "lib/spire_nodes_format.h"
#include "spire-server-fleet-entries/applier_config.h"
#include "spire-server-fleet-entries/plan.h"

#define NOW ((time_t)1796014800) /* 2026-11-30T05:00:00Z */
#define DAY 86400
#define TD "fleet.example"
#define N 50000
#define N_ACTIVE 49000  /* w00000..w48999 */
#define N_DECOM 49500   /* w49000..w49499 decommissioning, the rest gone */
#define N_ECC (N_ACTIVE / 10)
#define STAGE_MAX_S 60.0 /* seconds; a few at most in a plain build */

static const char *applier, *fake;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double stage(const char *what, double t0)
{
	double s = now_s() - t0;
	print_message("    %-44s %6.2f s\n", what, s);
	if (s > STAGE_MAX_S)
		fail_msg("%s took %.1f s, more than %.0f", what, s, STAGE_MAX_S);
	return now_s();
}

/* ---- the store: 50,000 admissions ---------------------------------------- */

/* The rows admission writes (a device, its passing verdict, its LDevID),
 * 50,000 of each in one transaction behind the API: through it they would
 * be 150,000 fsync'ed transactions. The EK hashes are the index as 64
 * decimal digits (hex digits too): device i has RSA 2i+1, ECC 2i+2. */
static void seed_store(const char *dir)
{
	struct fleet_store *st;
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	char path[600];
	if (fleet_store_open(dir, FLEET_STORE_RW, &st, &sec) != FLEET_STORE_OK)
		fail_msg("store: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	fleet_store_close(st); /* the schema is the store's own */
	snprintf(path, sizeof(path), "%s/" FLEET_STORE_FILE, dir);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char sql[2048];
	snprintf(sql, sizeof(sql),
		 "BEGIN;"
		 "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < %d) "
		 "INSERT INTO devices (name, serial, inventory_id, ek_hash, ek_hash_ecc, "
		 " first_admitted, last_seen) SELECT printf('w%%05d', i), printf('SN-%%05d', i), "
		 " i + 1, printf('%%064d', 2 * i + 1), "
		 " CASE WHEN i %% 10 = 0 THEN printf('%%064d', 2 * i + 2) END, %lld, %lld FROM k;"
		 "INSERT INTO verdicts (time, device, serial, session, result, reasons, ek_hash, "
		 " ek_hash_ecc) SELECT %lld, name, serial, '0a', 'pass', '[]', ek_hash, "
		 " ek_hash_ecc FROM devices;"
		 "INSERT INTO certificates (device_id, kind, sha1, not_after, issued_at, der) "
		 " SELECT id, 'ldevid', printf('%%040d', id), %lld, %lld, x'3000' FROM devices;"
		 "COMMIT;",
		 N - 1, (long long)(NOW - 30 * DAY), (long long)(NOW - 30 * DAY),
		 (long long)(NOW - DAY), (long long)(NOW + 300 * DAY), (long long)(NOW - DAY));
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("seeding: %s", msg);
	sqlite3_close(db);
}

/* ---- the inventory ------------------------------------------------------- */

struct fake_inv {
	struct fleet_inventory base;
	struct fleet_inv_device *devs;
	size_t n;
};

static fleet_err fake_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			   struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	(void)ec;
	struct fake_inv *f = (struct fake_inv *)inv;
	*out = malloc(f->n * sizeof(**out));
	assert_non_null(*out);
	memcpy(*out, f->devs, f->n * sizeof(**out));
	*n = f->n;
	*bad = NULL;
	*n_bad = 0;
	return FLEET_INV_OK;
}

static fleet_err fake_list_bounded(struct fleet_inventory *inv, const struct fleet_inv_bound *bound,
				   struct fleet_inv_device **out, size_t *n,
				   struct fleet_inv_malformed **bad, size_t *n_bad,
				   struct fleet_errctx *ec)
{
	(void)bound;
	return fake_list(inv, out, n, bad, n_bad, ec);
}

static const struct fleet_inventory_ops fake_ops = {.list = fake_list,
						    .list_bounded = fake_list_bounded};

/* What NetBox would list: the active and the decommissioning, each with
 * the EK hashes fleetd proved (so the pass writes none back). */
static void make_inventory(struct fake_inv *f)
{
	f->base.ops = &fake_ops;
	f->n = N_DECOM;
	f->devs = calloc(f->n, sizeof(*f->devs));
	assert_non_null(f->devs);
	for (size_t i = 0; i < f->n; i++) {
		struct fleet_inv_device *d = &f->devs[i];
		d->id = (long)i + 1;
		snprintf(d->name, sizeof(d->name), "w%05zu", i);
		snprintf(d->serial, sizeof(d->serial), "SN-%05zu", i);
		snprintf(d->status, sizeof(d->status), "%s",
			 i < N_ACTIVE ? "active" : "decommissioning");
		snprintf(d->ek_hash, sizeof(d->ek_hash), "%064zu", 2 * i + 1);
		if (i % 10 == 0)
			snprintf(d->ek_hash_ecc, sizeof(d->ek_hash_ecc), "%064zu", 2 * i + 2);
	}
}

/* ---- the file ------------------------------------------------------------ */

static void check_file(const struct fleet_spire_nodes *sn)
{
	assert_int_equal(sn->n_eligible, N_ACTIVE);
	assert_int_equal(sn->n_revoked, N - N_ACTIVE);
	char name[16], ek[65], ld[41];
	for (size_t i = 0; i < N; i++) {
		bool rev = i >= N_ACTIVE;
		const struct fleet_spire_node *e = rev ? &sn->revoked[i - N_ACTIVE] : &sn->eligible[i];
		snprintf(name, sizeof(name), "w%05zu", i);
		snprintf(ek, sizeof(ek), "%064zu", 2 * i + 1);
		snprintf(ld, sizeof(ld), "%040zu", i + 1); /* the row id */
		assert_string_equal(e->name, name);
		assert_string_equal(e->ek_hash, ek);
		assert_int_equal(e->ek_hash_ecc[0] != '\0', i % 10 == 0);
		assert_int_equal(e->n_ldevid, 1);
		assert_string_equal(e->ldevid_sha1[0], ld);
		assert_int_equal(e->not_after, rev ? NOW + 300 * DAY : 0);
	}
}

/* ---- the plan ------------------------------------------------------------ */

static const struct plan_action *next_of(const struct plan *p, size_t *at, enum plan_kind k)
{
	while (*at < p->n && p->a[*at].kind != k)
		(*at)++;
	return *at < p->n ? &p->a[(*at)++] : NULL;
}

/* Against an empty server: each eligible machine's entries are created (one
 * per EK, in the file's order), each revoked machine's agents banned (its
 * tpm agent by each EK, its tpm_devid agent by its LDevID). */
static void check_fresh_plan(const struct plan *p)
{
	assert_int_equal(plan_count(p, PK_CREATE), N_ACTIVE + N_ECC);
	assert_int_equal(plan_count(p, PK_BAN), 2 * (N - N_ACTIVE) + (N - N_ACTIVE) / 10);
	assert_int_equal(plan_count(p, PK_DELETE) + plan_count(p, PK_UPDATE), 0);
	assert_int_equal(p->removed_nodes, 0);
	size_t at = 0;
	char id[80];
	for (size_t i = 0; i < N_ACTIVE; i++) {
		for (int ecc = 0; ecc < 1 + (i % 10 == 0); ecc++) {
			const struct plan_action *a = next_of(p, &at, PK_CREATE);
			snprintf(id, sizeof(id), "fleet-w%05zu%s", i, ecc ? "-ecc" : "");
			assert_non_null(a);
			assert_string_equal(a->entry_id, id);
		}
	}
	at = 0;
	for (size_t i = N_ACTIVE; i < N; i++) {
		char dev[16];
		snprintf(dev, sizeof(dev), "w%05zu", i);
		const struct plan_action *a = next_of(p, &at, PK_BAN);
		assert_non_null(a);
		assert_string_equal(a->device, dev); /* its bans together, in the file's order */
		while (at < p->n && p->a[at].kind == PK_BAN && !strcmp(p->a[at].device, dev))
			at++;
	}
}

/* The server after the plan was applied: the created entries as the CLI
 * lists them, and each machine's tpm agent (the revoked ones not yet
 * banned). */
static void server_of(const struct plan *p, struct sp_entries *l, struct sp_agents *ag)
{
	memset(l, 0, sizeof(*l));
	memset(ag, 0, sizeof(*ag));
	l->e = calloc(p->n, sizeof(*l->e));
	ag->a = calloc(N, sizeof(*ag->a));
	assert_non_null(l->e);
	assert_non_null(ag->a);
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *a = &p->a[i];
		if (a->kind != PK_CREATE)
			continue;
		struct sp_entry *e = &l->e[l->n++];
		e->id = strdup(a->entry_id);
		e->spiffe_id = strdup(a->spiffe_id);
		e->parent_id = strdup(a->parent_id);
		e->selectors = calloc(a->n_selectors + 1, sizeof(char *));
		for (size_t k = 0; k < a->n_selectors; k++)
			e->selectors[k] = strdup(a->selectors[k]);
		e->n_selectors = a->n_selectors;
	}
	l->n_total = l->n;
	char buf[200];
	for (size_t i = 0; i < N; i++) { /* in ID order, as sp_parse_agents keeps them */
		struct sp_agent *a = &ag->a[ag->n++];
		snprintf(buf, sizeof(buf), "spiffe://" TD "/spire/agent/tpm/%064zu", 2 * i + 1);
		a->id = strdup(buf);
		a->attestation_type = strdup("tpm");
		a->selectors = calloc(1, sizeof(char *));
		snprintf(buf, sizeof(buf), "tpm:pub_hash:%064zu", 2 * i + 1);
		a->selectors[0] = strdup(buf);
		a->n_selectors = 1;
	}
}

/* The real binary, --dry-run, against the contract fake with an empty
 * server: its own reader (and its file cap) takes the whole file. */
static void run_applier(const char *dir, const char *file)
{
	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		print_message("    the applier stage skipped: no python3\n");
		return;
	}
	char bin[600], cmd[4096], out[600], state[600];
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	snprintf(state, sizeof(state), "%s/spire-state.json", dir);
	snprintf(out, sizeof(out), "%s/applier.out", dir);
	assert_int_equal(mkdir(bin, 0755), 0);
	snprintf(cmd, sizeof(cmd), "%s/spire-server", bin);
	assert_int_equal(symlink(fake, cmd), 0);
	FILE *fp = fopen(state, "w");
	assert_non_null(fp);
	fputs("{\"trust_domain\": \"" TD "\", \"entries\": [], \"agents\": {}}\n", fp);
	assert_int_equal(fclose(fp), 0);
	snprintf(cmd, sizeof(cmd),
		 "PATH='%s':/usr/local/bin:/usr/bin:/bin SPIRE_FAKE_STATE='%s' '%s' --file '%s' "
		 "--dry-run >'%s' 2>&1",
		 bin, state, applier, file, out);
	int rc = system(cmd);
	struct fleet_buf b;
	read_file_or_fail(out, &b);
	char *text = calloc(1, b.len + 1);
	assert_non_null(text);
	memcpy(text, b.data, b.len);
	char want[160];
	snprintf(want, sizeof(want), "plan: %d ban, 0 delete, 0 update, %d create; 0 node(s) leave",
		 2 * (N - N_ACTIVE) + (N - N_ACTIVE) / 10, N_ACTIVE + N_ECC);
	if (rc != 0 || !strstr(text, want) || !strstr(text, "49000 eligible, 1000 revoked"))
		fail_msg("the applier (exit %d) did not plan the whole file:\n%.2000s", rc,
			 strstr(text, "file serial") ? strstr(text, "file serial") : text);
	free(text);
	fb_free(&b);
}

static void test_fleet_50k(void **state)
{
	(void)state;
	char *dir = make_temp_dir("fleet50k");
	assert_non_null(dir);
	char file[600];
	snprintf(file, sizeof(file), "%s/" "spire-nodes.json", dir);
	double t = now_s();
	seed_store(dir);
	t = stage("seeding the store (50,000 admissions)", t);

	struct fleet_store *ro;
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(dir, FLEET_STORE_READONLY, &ro, &sec) != FLEET_STORE_OK)
		fail_msg("store (read-only): %s", fleet_errctx_text(&sec, err, sizeof(err)));
	struct fake_inv inv;
	make_inventory(&inv);
	struct fleet_config c;
	fleet_config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.spire_trust_domain, sizeof(c.spire_trust_domain), TD);
	struct fleet_pass_deps deps = {.config = &c, .inventory = &inv.base, .store = ro};
	struct fleet_pass *pass;
	assert_int_equal(fleet_pass_new(&deps, &pass), FLEET_OK);
	t = now_s();
	assert_string_equal(fleet_pass_run(pass, NOW), "ok");
	t = stage("the pass: store + inventory -> the file", t);

	struct fleet_buf b;
	fb_init(&b);
	assert_int_equal(fleet_file_read_data(file, FLEET_SPIRE_NODES_MAX_BYTES, &b, NULL), FLEET_OK);
	print_message("    spire-nodes.json: %zu bytes (%zu a machine)\n", b.len, b.len / N);
	struct fleet_spire_nodes sn;
	struct fleet_errctx ec;
	if (fleet_spire_nodes_decode(b.data, b.len, &sn, &ec) != FLEET_OK)
		fail_msg("the applier's decoder refuses the file: %s", ec.detail);
	t = stage("decoding the file", t);
	check_file(&sn);

	struct applier_config ac;
	ac_defaults(&ac);
	struct sp_entries none = {0};
	struct sp_agents no_agents = {0};
	struct plan p;
	t = now_s();
	if (plan_build(&sn, &ac, &none, &no_agents, &p, &ec) != FLEET_OK)
		fail_msg("plan: %s", ec.detail);
	t = stage("the plan, an empty server", t);
	check_fresh_plan(&p);

	struct sp_entries l;
	struct sp_agents ag;
	server_of(&p, &l, &ag);
	struct plan again;
	t = now_s();
	if (plan_build(&sn, &ac, &l, &ag, &again, &ec) != FLEET_OK)
		fail_msg("plan: %s", ec.detail);
	t = stage("the plan, a server holding it all", t);
	assert_int_equal(plan_count(&again, PK_CREATE) + plan_count(&again, PK_UPDATE) +
				 plan_count(&again, PK_DELETE),
			 0);
	assert_int_equal(again.removed_nodes, 0);
	assert_int_equal(plan_count(&again, PK_BAN), plan_count(&p, PK_BAN));
	plan_free(&again);
	sp_entries_free(&l);
	sp_agents_free(&ag);
	plan_free(&p);

	t = now_s();
	run_applier(dir, file);
	stage("spire-server-fleet-entries --dry-run", t);

	fleet_spire_nodes_free(&sn);
	fb_free(&b);
	fleet_pass_free(pass);
	fleet_store_close(ro);
	free(inv.devs);
	rm_rf(dir);
	free(dir);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_spire_fleet_50k APPLIER SPIRE_SERVER_FAKE\n");
		return 2;
	}
	static char fake_path[4096];
	applier = argv[1];
	fake = realpath(argv[2], fake_path) ? fake_path : argv[2]; /* a symlink's target */
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_fleet_50k)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
