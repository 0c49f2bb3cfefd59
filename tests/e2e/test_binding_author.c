/*
 * test_binding_author.c: I7's binding author after NetBox purged its change
 * log (CHANGELOG_RETENTION), end to end: the fleetd binary, whose passes
 * record the author's change while the log holds it (fleetd/pass/pass.h,
 * B1..B6); the NetBox contract fake, whose /_fake/purge does what NetBox's
 * housekeeping does; real swtpm machines booted by the firmware simulator
 * and the tink-attest binary (its library where a hook between rounds is
 * needed).
 *
 * fleetd runs a pass as it starts (and every hour): these tests restart it
 * to have a pass, and wait for the pass's line in its log. They run in
 * order and share fleetd's state. Skips (77) without swtpm, python3 or
 * openssl.
 *
 *   recorded_then_purged_admitted   the binding written by the author, a pass
 *                                   records it, the log is purged, the
 *                                   machine boots: admitted (refused
 *                                   binding-author before the record existed)
 *   unrecorded_purged_refused       no pass saw the change: refused
 *   purged_and_changed_since_refused the value changed after the record,
 *                                   then purged: the record is ignored
 *   later_change_by_other_wins      a later change by another user, held by
 *                                   the log, is refused whatever was recorded;
 *                                   the next pass forgets the record, and
 *                                   after the purge nothing speaks for it
 *   record_changed_before_confirm   the confirm's re-read requires the same
 *                                   record (C2)
 *   recreated_device_has_no_record  deleted and re-created with the same
 *                                   serial: a new id, no record
 *
 * The journal holds the first refusal of a kind per device a minute
 * (admission.h): a second refusal of one device is looked for after a
 * restart.
 */
#include "tests/e2e/admission_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "tests/e2e/netbox_harness.h"

static char CONFIG[800];

/* ---- the NetBox seed ------------------------------------------------------ */

/* Device w<id>, serial BA-<id>, planned, every declaration set, its binding
 * (NULL: none) written by `by` when it was created. */
static json_t *device(int id, const char *ek, const char *ek_ecc)
{
	char name[16], serial[16], ip[32], disk[32];
	snprintf(name, sizeof(name), "w%d", id);
	snprintf(serial, sizeof(serial), "BA-%04d", id % 100);
	snprintf(ip, sizeof(ip), "10.0.1.%d/24", id);
	snprintf(disk, sizeof(disk), "S5GXNF0R%d", id);
	json_t *cf = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:s, s:s?, s:s?, s:n, s:n, s:n}",
			       "class", "worker", "install_disk", "/dev/nvme0n1",
			       "install_disk_serial", disk, "bmc_type", "ipmi", "tpm_version",
			       "2.0", "amt", 0, "secure_boot_expected", 1, "expected_port", PORT_OK,
			       "approved_ek_hash", ek, "approved_ek_hash_ecc", ek_ecc, "ek_hash",
			       "ek_hash_ecc", "desired_action");
	json_t *d = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:o}", "id", id, "name", name,
			      "serial", serial, "status", "planned", "primary_ip4", ip,
			      "created_by", "terraform", "custom_fields", cf);
	assert_non_null(d);
	return d;
}

static void write_seed(const char *path)
{
	json_t *devs = json_array();
	/* w1, w4, w5, w6: approved for A by Terraform */
	json_array_append_new(devs, device(1, MA.ek, MA.ek_ecc));
	/* w2: no binding yet; Terraform writes it after fleetd's first pass */
	json_array_append_new(devs, device(2, NULL, NULL));
	/* w3: approved for B by Terraform; someone else approves A later */
	json_array_append_new(devs, device(3, MB.ek, MB.ek_ecc));
	json_array_append_new(devs, device(4, MA.ek, MA.ek_ecc));
	json_array_append_new(devs, device(5, MA.ek, MA.ek_ecc));
	json_array_append_new(devs, device(6, MA.ek, MA.ek_ecc));
	json_t *seed = json_pack(
		"{s:i, s:i, s:{s:{s:s}}, s:[s,s,s,s,s,s,s,s,s,s,s,s,s], s:o}", "paginate_count",
		50, "max_page_size", 50, "tokens", TOKEN, "user", "fleetd", "custom_fields",
		"class", "install_disk", "install_disk_serial", "bmc_type", "tpm_version", "amt",
		"secure_boot_expected", "expected_port", "approved_ek_hash", "approved_ek_hash_ecc",
		"ek_hash", "ek_hash_ecc", "desired_action", "devices", devs);
	assert_non_null(seed);
	assert_int_equal(json_dump_file(seed, path, 0), 0);
	json_decref(seed);
}

/* ---- fleetd and its passes -------------------------------------------------- */

static size_t passes(void)
{
	return adm_log_count(LOG, "event=binding-authors-pass", (char *)NULL);
}

/* Restart fleetd and wait for its first pass's binding author line. */
static void restart_for_a_pass(void)
{
	size_t before = passes();
	if (FD.pid > 0)
		assert_int_equal(fleetd_stop(&FD), 0);
	fleetd_start(&FD, FLEETD_BIN, CONFIG, LOG);
	for (int i = 0; i < 200 && passes() == before; i++) {
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (passes() == before)
		fail_msg("fleetd's pass wrote no binding-authors-pass line within 20 s");
}

static int setup(void **state)
{
	(void)state;
	adm_fixture_up("bindingauthor", write_seed);
	snprintf(CONFIG, sizeof(CONFIG), "%s/fleetd.yaml", D);
	adm_write_config(CONFIG, "    lookup_cache_ms: 0\n", "  ttl_seconds: 300\n");
	restart_for_a_pass();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = fleetd_stop(&FD);
	adm_fixture_down();
	return rc == 0 ? 0 : -1;
}

/* fleetd's record for inventory device id (false: none). */
static bool record_of(long id, struct fleet_store_binding_author *r)
{
	struct fleet_store *st = store_ro();
	fleet_err e = fleet_store_binding_author_get(st, id, r);
	fleet_store_close(st);
	assert_true(e == FLEET_STORE_OK || e == FLEET_STORE_E_NOT_FOUND);
	return e == FLEET_STORE_OK;
}

/* NetBox's housekeeping, for one device: its change log is gone. */
static void purge(long id)
{
	char body[64];
	snprintf(body, sizeof(body), "{\"device\": %ld}", id);
	nbf_ctl("/_fake/purge", body);
}

static void change_binding(long id, const char *user, const char *ek, const char *ek_ecc)
{
	json_t *b = json_pack("{s:i, s:s, s:{s:s, s:s}}", "device", (int)id, "user", user,
			      "custom_fields", "approved_ek_hash", ek, "approved_ek_hash_ecc",
			      ek_ecc);
	char *text = json_dumps(b, JSON_COMPACT);
	assert_non_null(text);
	nbf_ctl("/_fake/change", text);
	free(text);
	json_decref(b);
}

/* The fake's object changes for device id. */
static size_t nb_changes(long id)
{
	json_t *s = nbf_state(), *c;
	size_t i, n = 0;
	json_array_foreach(json_object_get(s, "changes"), i, c)
		n += json_integer_value(json_object_get(c, "changed_object_id")) == id;
	json_decref(s);
	return n;
}

/* The log purged, the machine boots as serial: refused, since fleetd holds
 * no record for the device's values, and not admitted. */
static void refused_without_record(long id, const char *serial)
{
	char out[800], want[48];
	purge(id);
	assert_int_equal(run_tink(&MA, serial, NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	snprintf(want, sizeof(want), "FLEET_SERIAL=%s", serial);
	assert_int_equal(adm_log_count(LOG, "event=intake-refused", want,
				       "FLEET_REASON=binding-author", "fleetd holds no record",
				       (char *)NULL), 1);
	struct fleet_store_device d;
	assert_false(store_device(serial, &d));
}

/* ---- the rules ---------------------------------------------------------------- */

static void recorded_then_purged_admitted(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_binding_author r;
	/* the first pass copied the author's change while the log held it */
	assert_true(record_of(1, &r));
	assert_string_equal(r.serial, "BA-0001");
	assert_string_equal(r.approved_ek_hash, MA.ek);
	assert_string_equal(r.approved_ek_hash_ecc, MA.ek_ecc);
	assert_string_equal(r.user, "terraform");
	assert_int_equal(adm_log_count(LOG, "event=binding-author-recorded", "FLEET_DEVICE=w1",
				       "FLEET_USER=terraform", (char *)NULL), 1);
	purge(1);
	assert_int_equal(nb_changes(1), 0);
	assert_int_equal(run_tink(&MA, "BA-0001", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	struct fleet_store_device d;
	assert_true(store_device("BA-0001", &d));
	assert_string_equal(d.name, "w1");
	assert_string_equal(d.ek_hash, MA.ek);
	char detail[96];
	snprintf(detail, sizeof(detail), "FLEET_DETAIL=\"change %lld by terraform recorded at",
		 (long long)r.change_id);
	assert_int_equal(adm_log_count(LOG, "event=binding-author-from-record", "FLEET_DEVICE=w1",
				       (char *)NULL), 1);
	if (adm_log_count(LOG, "event=binding-author-from-record", detail, (char *)NULL) != 1)
		fail_msg("the journal does not name change %lld", (long long)r.change_id);
	assert_int_equal(adm_log_count(LOG, "event=device-admitted", "FLEET_DEVICE=w1",
				       (char *)NULL), 1);
}

/* Terraform writes w2's binding after the pass; the log is purged before
 * the next one: nothing proves who wrote it. */
static void unrecorded_purged_refused(void **state)
{
	(void)state;
	struct fleet_store_binding_author r;
	change_binding(2, "terraform", MA.ek, MA.ek_ecc);
	assert_false(record_of(2, &r));
	refused_without_record(2, "BA-0002");
}

/* w3's record is of B's EKs; mallory (dcim.change_device, not the author)
 * approves A, then waits for the purge. */
static void purged_and_changed_since_refused(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_binding_author r;
	assert_true(record_of(3, &r));
	assert_string_equal(r.approved_ek_hash, MB.ek);
	change_binding(3, "mallory", MA.ek, MA.ek_ecc);
	purge(3);
	assert_int_equal(run_tink(&MA, "BA-0003", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("BA-0003", "binding-author");
	struct fleet_store_device d;
	assert_false(store_device("BA-0003", &d));
	/* and the next pass forgets the record of values that are gone */
	restart_for_a_pass();
	assert_false(record_of(3, &r));
	assert_true(adm_log_count(LOG, "event=binding-author-forgotten", "FLEET_INVENTORY_ID=3",
				  "FLEET_REASON=binding-changed", (char *)NULL) >= 1);
}

/* alice changes w4's binding and changes it back: the log holds her change,
 * and it wins over the record; the next pass forgets the record (the values
 * match it, so it is the proven devices' turn that reads the log), and
 * after the purge nothing speaks for the binding. */
static void later_change_by_other_wins(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_binding_author r;
	assert_true(record_of(4, &r));
	change_binding(4, "alice", MB.ek, MB.ek_ecc);
	change_binding(4, "alice", MA.ek, MA.ek_ecc);
	assert_int_equal(run_tink(&MA, "BA-0004", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("BA-0004", "binding-author");
	assert_true(adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=BA-0004",
				  "by alice", (char *)NULL) >= 1);
	restart_for_a_pass();
	assert_false(record_of(4, &r));
	assert_int_equal(adm_log_count(LOG, "event=binding-author-forgotten", "FLEET_DEVICE=w4",
				       "FLEET_REASON=changed-by-other", (char *)NULL), 1);
	refused_without_record(4, "BA-0004");
}

/* C2: between the answer and the confirm, fleetd's record of w5 becomes
 * another (here written straight into the store, as a pass would replace
 * it): the confirm's re-read refuses, as it does a changed change id. */
static void replace_record_before_confirm(struct hooked *h, const char *path,
					  const struct fleet_buf *body)
{
	(void)body;
	if (strcmp(path, "/v1/attest/confirm") != 0 || h->seen)
		return;
	struct fleet_store *st = NULL;
	struct fleet_store_binding_author r;
	assert_int_equal(fleet_store_open(STATE, FLEET_STORE_RW, &st, NULL), FLEET_STORE_OK);
	assert_int_equal(fleet_store_binding_author_get(st, 5, &r), FLEET_STORE_OK);
	r.change_id += 1000;
	assert_int_equal(fleet_store_binding_author_record(st, &r), FLEET_STORE_OK);
	fleet_store_close(st);
	h->seen++;
}

static void record_changed_before_confirm(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	struct fleet_store_binding_author r;
	assert_true(record_of(5, &r));
	purge(5);
	memset(&h, 0, sizeof(h));
	h.before = replace_record_before_confirm;
	assert_int_equal(run_hooked(&MA, "BA-0005", &h, 2, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(h.seen, 1);
	struct fleet_store_device d;
	assert_false(store_device("BA-0005", &d));
	size_t revoked = 0;
	assert_int_equal(store_provisional("w5", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_int_equal(adm_log_count(LOG, "event=provisional-revoked", "FLEET_DEVICE=w5",
				       "FLEET_REASON=binding-changed", (char *)NULL), 1);
}

/* mallory deletes w6 and creates it again, same serial and binding: NetBox
 * gives it a new id. The log's create is hers (refused); purged, the new
 * id has no record (refused); the old id's record is forgotten by the next
 * pass. */
static void recreated_device_has_no_record(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_binding_author r;
	assert_true(record_of(6, &r));
	nbf_ctl("/_fake/delete", "{\"device\": 6, \"user\": \"mallory\"}");
	json_t *dev = device(106, MA.ek, MA.ek_ecc); /* serial BA-0006 */
	json_t *b = json_pack("{s:o, s:s}", "device", dev, "user", "mallory");
	char *text = json_dumps(b, JSON_COMPACT);
	nbf_ctl("/_fake/create", text);
	free(text);
	json_decref(b);
	assert_int_equal(run_tink(&MA, "BA-0006", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_true(adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=BA-0006",
				  "FLEET_REASON=binding-author", "by mallory", (char *)NULL) >= 1);
	/* the next pass forgets the old id's record, and records nothing of
	 * the new one (mallory's change) */
	restart_for_a_pass();
	assert_false(record_of(6, &r));
	assert_false(record_of(106, &r));
	assert_int_equal(adm_log_count(LOG, "event=binding-author-forgotten",
				       "FLEET_INVENTORY_ID=6", "FLEET_REASON=not-a-candidate",
				       (char *)NULL), 1);
	refused_without_record(106, "BA-0006");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recorded_then_purged_admitted),
		cmocka_unit_test(unrecorded_purged_refused),
		cmocka_unit_test(purged_and_changed_since_refused),
		cmocka_unit_test(later_change_by_other_wins),
		cmocka_unit_test(record_changed_before_confirm),
		cmocka_unit_test(recreated_device_has_no_record),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
