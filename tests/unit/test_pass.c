/* The pass: spire-nodes.json written from the real store and the real
 * nodes-file inventory; an inventory that cannot be read leaves the previous
 * file exactly as it was (nothing decided from an error). */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetd/config/config.h"
#include "fleetd/inventory/nodes_file.h"
#include "fleetd/pass/pass.h"
#include "fleetd/store/store.h"
#include "tests/store/store_location.h"

#define EK "1111111111111111111111111111111111111111111111111111111111111111"

static void write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void pass_writes_then_keeps_file_on_inventory_error(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		skip(); /* the nodes file must be root's: the rule under test */
		return;
	}
	char *dir = make_temp_dir("pass");
	char nodes[512], file[512];
	snprintf(nodes, sizeof(nodes), "%s/nodes.yaml", dir);
	snprintf(file, sizeof(file), "%s/spire-nodes.json", dir);
	write_text(nodes,
		   "version: 1\nnodes:\n  - name: w1\n    serial: SN-1\n    status: active\n"
		   "    class: worker\n",
		   0644);
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80] = "";
	struct fleet_inventory *inv = NULL;
	struct fleet_errctx ec;
	if (fleet_nodes_file_open(nodes, &inv, &ec) != FLEET_OK)
		fail_msg("nodes file: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	struct fleet_store *st = NULL;
	if (fleet_store_open(dir, FLEET_STORE_RW, &st, &sec) != FLEET_STORE_OK)
		fail_msg("store: %s", fleet_errctx_text(&sec, err, sizeof(err)));
	assert_int_equal(fleet_store_device_record_admission(st, "w1", "SN-1", 0, EK, "", 1000),
			 FLEET_STORE_OK);
	struct fleet_store_verdict_in v = {.time = 1000, .device = "w1", .serial = "SN-1",
					   .session = "00", .pass = true, .ek_hash = EK};
	assert_int_equal(fleet_store_verdict_insert(st, &v, NULL), FLEET_STORE_OK);

	struct fleet_config c;
	fleet_config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.spire_trust_domain, sizeof(c.spire_trust_domain), "fleet.example");
	struct fleet_pass_deps d = {.config = &c, .inventory = inv, .store = st};
	struct fleet_pass *p = NULL;
	assert_int_equal(fleet_pass_new(&d, &p), FLEET_OK);

	assert_string_equal(fleet_pass_run(p, 2000), "ok");
	struct fleet_buf before;
	read_file_or_fail(file, &before);
	json_error_t jerr;
	json_t *doc = json_loadb((const char *)before.data, before.len, 0, &jerr);
	assert_non_null(doc);
	json_t *w1 = json_array_get(json_object_get(doc, "eligible"), 0);
	assert_string_equal(json_string_value(json_object_get(w1, "name")), "w1");
	assert_string_equal(json_string_value(json_object_get(w1, "ek_hash")), EK);
	assert_true(json_is_null(json_object_get(w1, "ek_hash_ecc")));
	json_decref(doc);

	/* The inventory becomes unreadable (writable by others: refused). */
	assert_int_equal(chmod(nodes, 0666), 0);
	assert_string_equal(fleet_pass_run(p, 3000), "inventory-error");
	struct fleet_buf after;
	read_file_or_fail(file, &after);
	assert_int_equal(after.len, before.len);
	assert_memory_equal(after.data, before.data, before.len);

	/* Without a trust domain the pass writes no file at all. */
	unlink(file);
	c.spire_trust_domain[0] = '\0';
	assert_string_equal(fleet_pass_run(p, 4000), "ok");
	assert_int_not_equal(access(file, F_OK), 0);

	fb_free(&before);
	fb_free(&after);
	fleet_pass_free(p);
	fleet_store_close(st);
	inv->ops->close(inv);
	rm_rf(dir);
	free(dir);
}

/* P1: one replica at a time runs the pass. While another handle on the
 * same store (another replica) holds the pass lock, this replica's pass is
 * "other-replica" and writes nothing; once released, the pass runs, and
 * releases it in turn. On both engines (test_pass_pg). */
static void pass_runs_on_one_replica_at_a_time(void **state)
{
	(void)state;
	char *dir = make_temp_dir("pass-p1");
	char nodes[512], file[512], loc[512];
	snprintf(nodes, sizeof(nodes), "%s/nodes.yaml", dir);
	snprintf(file, sizeof(file), "%s/spire-nodes.json", dir);
	write_text(nodes, "version: 1\nnodes: []\n", 0644);
	struct fleet_inventory *inv = NULL;
	struct fleet_errctx ec;
	char err[sizeof(ec.detail) + 80] = "";
	if (fleet_nodes_file_open(nodes, &inv, &ec) != FLEET_OK) {
		/* the nodes file must be root's */
		rm_rf(dir);
		free(dir);
		skip();
		return;
	}
	store_location_new(dir, loc, sizeof(loc));
	struct fleet_store *st = NULL, *other = NULL;
	if (fleet_store_open(loc, FLEET_STORE_RW, &st, &ec) != FLEET_STORE_OK ||
	    fleet_store_open(loc, FLEET_STORE_RW, &other, &ec) != FLEET_STORE_OK)
		fail_msg("store: %s", fleet_errctx_text(&ec, err, sizeof(err)));
	struct fleet_config c;
	fleet_config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	snprintf(c.spire_trust_domain, sizeof(c.spire_trust_domain), "fleet.example");
	struct fleet_pass_deps d = {.config = &c, .inventory = inv, .store = st};
	struct fleet_pass *p = NULL;
	assert_int_equal(fleet_pass_new(&d, &p), FLEET_OK);

	bool held = false;
	assert_int_equal(fleet_store_pass_lock(other, &held), FLEET_STORE_OK);
	assert_true(held);
	assert_string_equal(fleet_pass_run(p, 2000), "other-replica");
	assert_int_not_equal(access(file, F_OK), 0); /* nothing written */
	fleet_store_pass_unlock(other);
	assert_string_equal(fleet_pass_run(p, 3000), "ok");
	assert_int_equal(access(file, F_OK), 0);
	/* the pass gave the lock back: the other replica's turn */
	held = false;
	assert_int_equal(fleet_store_pass_lock(other, &held), FLEET_STORE_OK);
	assert_true(held);
	/* the holder's end (a replica killed mid-pass closes too) frees it */
	fleet_store_close(other);
	assert_string_equal(fleet_pass_run(p, 4000), "ok");

	fleet_pass_free(p);
	fleet_store_close(st);
	store_location_free(loc);
	inv->ops->close(inv);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pass_writes_then_keeps_file_on_inventory_error),
		cmocka_unit_test(pass_runs_on_one_replica_at_a_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
