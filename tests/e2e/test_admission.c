/*
 * test_admission.c: "Check the machine" end to end (fleetd/admission/
 * admission.h, rules I1..I8, A1..A5, C1..C2).
 *
 * The real things: the fleetd binary, started with a configuration this
 * test writes (a free port, a TLS certificate it mints, NetBox as the
 * inventory); two machines, each a swtpm booted by the firmware simulator
 * (tests/fwsim/worker.events.yaml, admitted by tests/fwsim/worker.profile.yaml); the
 * tink-attest binary; the NetBox contract fake. Where a rule needs
 * something to happen between two rounds, the machine is tink-attest's own
 * library (tink_run) over its own libcurl transport, with a hook between
 * the requests; fleetd is still the binary over HTTPS.
 *
 * The tests run in order and share fleetd's state: machine A is admitted
 * as w1, then re-attests as an active device, then boots unexpectedly.
 * Skips (77) without swtpm, python3 or openssl.
 *
 * Rules (admission.h) and the tests that fail without them:
 *   I1 malformed_flood            I2 open_session_kept (+ unit sessions,
 *                                    test_admission_state.c)
 *   I3 unknown_serial_pending, netbox_down_at_intake
 *   I4 class_unknown_refused      I5 intake_proofs_refused
 *   I6 declarations_refused
 *   I7 impostor_refused, missing_binding_pending, binding_author_refused,
 *      active_reattest, unexpected_boot
 *   I8, A5, C2 planned_admitted   A1 malformed_flood (unknown session)
 *   A2, C1 forgeries_refused      A3 policy_fail_verdict
 *   A4 binding_changed_in_session, netbox_down_at_answer
 *   C2 binding_changed_before_confirm
 *   the daemon: startup_refusals
 * and, for rules tests/mutants/ found untested (scripts/mutants.sh):
 *   I1 lldp_fields_capped_in_log  I6 each_declaration_refused
 *   I7 rsa_ek_mismatch_refused, past_planned_store_only,
 *      other_statuses_refused
 *   A2 ecc_secret_missing_refused A4 device_changed_in_session
 */
#include "tests/e2e/admission_fixture.h"
#include "lib/reattest_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tss2/tss2_mu.h>

#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "lib/tpm.h"
#include "lib/tpm_alg.h"
#include "lib/tpm_credential.h"
#include "fleetd/obs/journal.h"
#include "tests/e2e/http_client.h"
#include "tests/e2e/netbox_harness.h"

/* ---- the NetBox seed ------------------------------------------------------ */

static void seed_device(FILE *f, int id, const char *serial, const char *by,
			const char *approved, const char *approved_ecc, const char *port,
			const char *disk, bool last)
{
	fprintf(f,
		"  {\"id\": %d, \"name\": \"w%d\", \"serial\": \"%s\", \"status\": \"planned\",\n"
		"   \"primary_ip4\": \"10.0.0.%d/24\", \"created_by\": \"%s\",\n"
		"   \"custom_fields\": {\"class\": \"worker\", \"install_disk\": %s%s%s,\n"
		"     \"install_disk_serial\": \"S5GXNF0R%d\", \"bmc_type\": \"ipmi\",\n"
		"     \"tpm_version\": \"2.0\", \"amt\": false, \"secure_boot_expected\": true,\n"
		"     \"expected_port\": \"%s\", \"approved_ek_hash\": %s%s%s,\n"
		"     \"approved_ek_hash_ecc\": %s%s%s, \"ek_hash\": null, \"ek_hash_ecc\": null,\n"
		"     \"desired_action\": null}}%s\n",
		id, id, serial, 10 + id, by, disk ? "\"" : "", disk ? disk : "null",
		disk ? "\"" : "", id, port, approved ? "\"" : "", approved ? approved : "null",
		approved ? "\"" : "", approved_ecc ? "\"" : "",
		approved_ecc ? approved_ecc : "null", approved_ecc ? "\"" : "", last ? "" : ",");
}

/* The nine declarations I6 requires (seed_more's null_field names one;
 * the first is the device's class, the last its primary address), as
 * fleetd names them in FLEET_DETAIL. */
static const char *const DECLARATIONS[] = {
	"class",	  "install_disk",	  "install_disk_serial",
	"bmc_type",	  "tpm_version",	  "amt",
	"secure_boot_expected", "expected_port", "primary_ip4",
};
#define N_DECLARATIONS (sizeof(DECLARATIONS) / sizeof(DECLARATIONS[0]))

/* NetBox statuses that are neither planned nor staged/active (I7). */
static const char *const OTHER_STATUSES[] = {"failed", "offline", "decommissioning",
					     "inventory"};
#define N_OTHER_STATUSES (sizeof(OTHER_STATUSES) / sizeof(OTHER_STATUSES[0]))

/* One device w<id> (serial ADM-00<id>) with every declaration set and the
 * binding written by Terraform, in status; ek/ek_ecc NULL: NetBox's
 * ek_hash fields null; null_field: that declaration null (primary_ip4:
 * no primary address). */
static void seed_more(FILE *f, int id, const char *status, const char *approved,
		      const char *approved_ecc, const char *ek, const char *ek_ecc,
		      const char *null_field, bool last)
{
	char name[16], serial[16], ip[32], disk_serial[32];
	snprintf(name, sizeof(name), "w%d", id);
	snprintf(serial, sizeof(serial), "ADM-%04d", id);
	snprintf(ip, sizeof(ip), "10.0.0.%d/24", 10 + id);
	snprintf(disk_serial, sizeof(disk_serial), "S5GXNF0R%d", id);
	json_t *cf = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:s, s:s?, s:s?, s:s?, s:s?, s:n}",
			       "class", "worker", "install_disk", "/dev/nvme0n1",
			       "install_disk_serial", disk_serial, "bmc_type", "ipmi",
			       "tpm_version", "2.0", "amt", 0, "secure_boot_expected", 1,
			       "expected_port", PORT_OK, "approved_ek_hash", approved,
			       "approved_ek_hash_ecc", approved_ecc, "ek_hash", ek, "ek_hash_ecc",
			       ek_ecc, "desired_action");
	json_t *d = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:o}", "id", id, "name", name,
			      "serial", serial, "status", status, "primary_ip4", ip, "created_by",
			      "terraform", "custom_fields", cf);
	assert_non_null(d);
	if (null_field && strcmp(null_field, "primary_ip4") == 0)
		json_object_set_new(d, "primary_ip4", json_null());
	else if (null_field)
		json_object_set_new(cf, null_field, json_null());
	char *text = json_dumps(d, JSON_COMPACT);
	assert_non_null(text);
	fprintf(f, "  %s%s\n", text, last ? "" : ",");
	free(text);
	json_decref(d);
}

static void write_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	const char *disk = "/dev/nvme0n1";
	assert_non_null(f);
	fprintf(f, "{\"paginate_count\": 50, \"max_page_size\": 50,\n"
		   " \"tokens\": {\"" TOKEN "\": {\"user\": \"fleetd\"}},\n"
		   " \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\",\n"
		   "   \"bmc_type\", \"tpm_version\", \"amt\", \"secure_boot_expected\",\n"
		   "   \"expected_port\", \"approved_ek_hash\", \"approved_ek_hash_ecc\",\n"
		   "   \"ek_hash\", \"ek_hash_ecc\", \"desired_action\"],\n"
		   " \"devices\": [\n");
	/* w1: approved for A; the impostor B, A's admission, re-attest, boot */
	seed_device(f, 1, "ADM-0001", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	/* w3: no binding */
	seed_device(f, 3, "ADM-0003", "terraform", NULL, NULL, PORT_OK, disk, false);
	/* w4: the binding written by someone other than Terraform */
	seed_device(f, 4, "ADM-0004", "alice", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	/* w5..w8, w11, w12: approved for A, each for one rule below */
	seed_device(f, 5, "ADM-0005", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	seed_device(f, 6, "ADM-0006", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	seed_device(f, 7, "ADM-0007", "terraform", MA.ek, MA.ek_ecc, "Ethernet12", disk, false);
	seed_device(f, 8, "ADM-0008", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	/* w9: another port; w10: no install_disk */
	seed_device(f, 9, "ADM-0009", "terraform", MA.ek, MA.ek_ecc, "leaf-07.folly/Ethernet13",
		    disk, false);
	seed_device(f, 10, "ADM-0010", "terraform", MA.ek, MA.ek_ecc, PORT_OK, NULL, false);
	seed_device(f, 11, "ADM-0011", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	seed_device(f, 12, "ADM-0012", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	seed_device(f, 13, "ADM-0013", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	/* w14: a class fleetd.yaml does not list */
	seed_device(f, 14, "ADM-0014", "terraform", MA.ek, MA.ek_ecc, PORT_OK, disk, false);
	/* w15: A's RSA EK approved beside another TPM's ECC EK */
	seed_device(f, 15, "ADM-0015", "terraform", MA.ek, MB.ek_ecc, PORT_OK, disk, false);
	/* w16: B's RSA EK approved beside A's ECC EK */
	seed_more(f, 16, "planned", MB.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w17, w18: approved for A; the answer's proof without A's ECC secret */
	seed_more(f, 17, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	seed_more(f, 18, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w19: staged, NetBox naming B's EKs everywhere; fleetd's store has no w19 */
	seed_more(f, 19, "staged", MB.ek, MB.ek_ecc, MB.ek, MB.ek_ecc, NULL, false);
	/* w20: approved for A, admitted, then staged with NetBox naming B's EKs */
	seed_more(f, 20, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w21..w23: approved for A; the name, status, serial change mid-session */
	seed_more(f, 21, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	seed_more(f, 22, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	seed_more(f, 23, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w24: approved for A; an LLDP report with hostile fields */
	seed_more(f, 24, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w25..w33: approved for A, one declaration each not set */
	for (size_t i = 0; i < N_DECLARATIONS; i++)
		seed_more(f, 25 + (int)i, "planned", MA.ek, MA.ek_ecc, NULL, NULL, DECLARATIONS[i],
			  false);
	/* w38..w40: approved for A; NetBox slower than a round at answer, confirm, intake */
	seed_more(f, 38, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	seed_more(f, 39, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	seed_more(f, 40, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w41, w42: approved for A; a declaration cleared after intake, the
	 * port moved after the answer */
	seed_more(f, 41, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	seed_more(f, 42, "planned", MA.ek, MA.ek_ecc, NULL, NULL, NULL, false);
	/* w34..w37: approved for A, in a status that admits nothing */
	for (size_t i = 0; i < N_OTHER_STATUSES; i++)
		seed_more(f, 34 + (int)i, OTHER_STATUSES[i], MA.ek, MA.ek_ecc, NULL, NULL, NULL,
			  i + 1 == N_OTHER_STATUSES);
	fprintf(f, " ]}\n");
	assert_int_equal(fclose(f), 0);
}

/* ---- fleetd ---------------------------------------------------------------- */

/* sessions.round_seconds here: short, so that a NetBox read of
 * ROUND_SECONDS + 1 s outlasts a round and not the NetBox client's 5 s
 * timeout; long against what a round costs under a loaded sanitizer run. */
#define ROUND_SECONDS "3"
#define SLOW_NETBOX "{\"ms\": 4000, \"count\": 1}"

/* The flood below sends 1,000 requests at once from 127.0.0.1; these tests
 * change NetBox and boot at once: no lookup cache (test_admission_state.c
 * runs with the default). */
static void write_config(const char *path)
{
	adm_write_config(path, "    lookup_cache_ms: 0\n",
			 "  ttl_seconds: 300\n  round_seconds: " ROUND_SECONDS "\n");
}

static int setup(void **state)
{
	(void)state;
	char path[800];
	adm_fixture_up("admission", write_seed);
	snprintf(path, sizeof(path), "%s/fleetd.yaml", D);
	write_config(path);
	fleetd_start(&FD, FLEETD_BIN, path, LOG);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = fleetd_stop(&FD);
	adm_fixture_down();
	return rc == 0 ? 0 : -1; /* fleetd stops cleanly on SIGTERM */
}

/* ---- the rules ----------------------------------------------------------------- */

/* I7: a second machine presenting w1's serial with its own EKs. */
static void impostor_refused(void **state)
{
	(void)state;
	char out[800];
	json_t *before = nb_device(1);
	size_t writes = nb_writes();
	struct fleet_store_device d;
	assert_int_equal(run_tink(&MB, "ADM-0001", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0001", "ek-not-approved");
	json_t *after = nb_device(1);
	assert_true(json_equal(before, after)); /* the binding untouched */
	assert_int_equal(nb_writes(), writes);
	assert_false(store_device("ADM-0001", &d));
	assert_false(exists_in(out, "lak.pem"));
	json_decref(before);
	json_decref(after);
}

/* Every approved EK must match, the second too: A's RSA EK is the approved
 * one, its ECC EK is not. Refused, journaled, NetBox untouched. */
static void second_ek_mismatch_refused(void **state)
{
	(void)state;
	char out[800];
	json_t *before = nb_device(15);
	size_t writes = nb_writes();
	struct fleet_store_device d;
	assert_int_equal(run_tink(&MA, "ADM-0015", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0015", "ek-not-approved");
	json_t *after = nb_device(15);
	assert_true(json_equal(before, after));
	assert_int_equal(nb_writes(), writes);
	assert_false(store_device("ADM-0015", &d));
	assert_false(exists_in(out, "lak.pem"));
	json_decref(before);
	json_decref(after);
}

/* I1..I8, A1..A5, C1..C2: the planned device with its approved binding. */
static void planned_admitted(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_device d;
	json_t *before = nb_device(1);
	json_t *s0 = nbf_state();
	size_t changes0 = json_array_size(json_object_get(s0, "changes"));
	json_decref(s0);

	assert_int_equal(run_tink(&MA, "ADM-0001", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	assert_true(exists_in(out, "lak.pem") && exists_in(out, "ldevid.pem") &&
		    exists_in(out, "ca.pem"));
	/* the store: the device with both proven hashes, both certificates */
	assert_true(store_device("ADM-0001", &d));
	assert_string_equal(d.name, "w1");
	assert_string_equal(d.ek_hash, MA.ek);
	assert_string_equal(d.ek_hash_ecc, MA.ek_ecc);
	assert_string_equal(d.state, FLEET_STORE_STATE_ADMITTED);
	assert_int_equal(store_certs("w1", NULL), 2);
	size_t pass, fail;
	store_verdicts("w1", &pass, &fail, NULL);
	assert_int_equal(pass, 1);
	assert_int_equal(fail, 0);
	assert_int_equal(vlog_count("\"device\":\"w1\"", "\"result\":\"pass\""), 1);
	assert_int_equal(adm_log_count(LOG, "event=device-admitted", "FLEET_DEVICE=w1",
				       (char *)NULL), 1);

	/* NetBox: ek_hash and ek_hash_ecc written, by fleetd, nothing else */
	json_t *after = nb_device(1);
	json_t *cf = json_object_get(after, "custom_fields");
	assert_string_equal(json_string_value(json_object_get(cf, "ek_hash")), MA.ek);
	assert_string_equal(json_string_value(json_object_get(cf, "ek_hash_ecc")), MA.ek_ecc);
	json_object_set_new(cf, "ek_hash", json_null());
	json_object_set_new(cf, "ek_hash_ecc", json_null());
	assert_true(json_equal(before, after));
	json_t *s1 = nbf_state();
	json_t *changes = json_object_get(s1, "changes");
	assert_int_equal(json_array_size(changes), changes0 + 1);
	json_t *last = json_array_get(changes, json_array_size(changes) - 1);
	assert_string_equal(json_string_value(json_object_get(last, "user_name")), "fleetd");
	assert_int_equal(json_integer_value(json_object_get(last, "changed_object_id")), 1);
	json_decref(s1);
	json_decref(before);
	json_decref(after);
	assert_int_equal(metric("fleetd_verdicts_total{result=\"pass\"}"), 1);
	assert_int_equal(metric("fleetd_open_sessions"), 0); /* confirm closed it */
}

/* I3: an unknown serial is a pending claim (fleetctl claims shows it). */
static void unknown_serial_pending(void **state)
{
	(void)state;
	char out[800], cmd[1200];
	struct fleet_buf b;
	assert_int_equal(run_tink(&MA, "ADM-9999", NULL, out, sizeof(out)), TINK_EXIT_PENDING);
	snprintf(cmd, sizeof(cmd), "'%s' claims --state-dir '%s' --json", fleetctl_path(), STATE);
	fb_init(&b);
	assert_int_equal(run_capture(cmd, &b), 0);
	json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
	assert_non_null(j);
	json_t *c, *found = NULL;
	size_t i;
	json_array_foreach(json_object_get(j, "claims"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "serial")), "ADM-9999") == 0)
			found = c;
	assert_non_null(found);
	assert_string_equal(json_string_value(json_object_get(found, "reason")), "unknown-serial");
	json_t *ek = json_array_get(json_object_get(found, "eks"), 0);
	assert_string_equal(json_string_value(json_object_get(ek, "ek_hash")), MA.ek);
	json_decref(j);
	fb_free(&b);
	assert_false(exists_in(out, "lak.pem"));
}

/* I7: a planned device without a binding: pending claim, no access. */
static void missing_binding_pending(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store *st;
	struct fleet_store_claim *c = NULL;
	size_t n = 0;
	bool found = false;
	assert_int_equal(run_tink(&MA, "ADM-0003", NULL, out, sizeof(out)), TINK_EXIT_PENDING);
	st = store_ro();
	assert_int_equal(fleet_store_claims_list(st, &c, &n), FLEET_STORE_OK);
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].serial, "ADM-0003") == 0) {
			assert_string_equal(c[i].reason, FLEET_STORE_CLAIM_NO_BINDING);
			found = true;
		}
	free(c);
	fleet_store_close(st);
	assert_true(found);
	assert_false(exists_in(out, "lak.pem"));
}

/* I7: the binding's latest change is not Terraform's. */
static void binding_author_refused(void **state)
{
	(void)state;
	char out[800];
	size_t writes = nb_writes();
	assert_int_equal(run_tink(&MA, "ADM-0004", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0004", "binding-author");
	assert_int_equal(adm_log_count(LOG, "FLEET_REASON=binding-author", "alice", (char *)NULL),
			 1);
	assert_int_equal(nb_writes(), writes);

	/* w3 (no binding so far) gets one from someone else through NetBox's
	 * API: refused; Terraform writes the same binding: admitted. */
	char req[400];
	snprintf(req, sizeof(req),
		 "{\"device\": 3, \"user\": \"mallory\", \"custom_fields\": "
		 "{\"approved_ek_hash\": \"%s\", \"approved_ek_hash_ecc\": \"%s\"}}",
		 MA.ek, MA.ek_ecc);
	nbf_ctl("/_fake/change", req);
	assert_int_equal(run_tink(&MA, "ADM-0003", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0003", "binding-author");
	assert_int_equal(adm_log_count(LOG, "FLEET_REASON=binding-author", "mallory", (char *)NULL),
			 1);
	snprintf(req, sizeof(req),
		 "{\"device\": 3, \"user\": \"terraform\", \"custom_fields\": "
		 "{\"approved_ek_hash\": null, \"approved_ek_hash_ecc\": null}}");
	nbf_ctl("/_fake/change", req);
	snprintf(req, sizeof(req),
		 "{\"device\": 3, \"user\": \"terraform\", \"custom_fields\": "
		 "{\"approved_ek_hash\": \"%s\", \"approved_ek_hash_ecc\": \"%s\"}}",
		 MA.ek, MA.ek_ecc);
	nbf_ctl("/_fake/change", req);
	assert_int_equal(run_tink(&MA, "ADM-0003", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	assert_true(exists_in(out, "lak.pem"));
}

/* I6: the wrong port; a missing declaration. */
static void declarations_refused(void **state)
{
	(void)state;
	char out[800];
	assert_int_equal(run_tink(&MA, "ADM-0009", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0009", "port-mismatch");
	assert_int_equal(run_tink(&MA, "ADM-0010", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0010", "declaration-missing");
	assert_int_equal(adm_log_count(LOG, "FLEET_REASON=declaration-missing",
				       "FLEET_DETAIL=install_disk", (char *)NULL), 1);
}

/* I5: an intake whose own proofs fail (the RSA EK's certificate swapped for
 * the ECC one) is refused before the inventory is asked anything. */
static void swap_ek_certs_first(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	struct fleet_wire_intake in;
	struct fleet_buf forged;
	if (strcmp(path, "/v1/attest/intake") != 0 || h->seen)
		return;
	assert_int_equal(fleet_wire_intake_decode(body->data, body->len, &in, NULL), FLEET_OK);
	struct fleet_wire_bytes c = in.ek_rsa.cert;
	in.ek_rsa.cert = in.ek_ecc.cert;
	in.ek_ecc.cert = c;
	fb_init(&forged);
	assert_int_equal(fleet_wire_intake_encode(&in, &forged), FLEET_OK);
	size_t asked = nbf_log_len();
	post_raw(path, forged.data, forged.len, 200, "\"refused\"");
	assert_int_equal(nbf_log_len(), asked); /* NetBox was not asked */
	h->seen++;
	fb_free(&forged);
	fleet_wire_intake_free(&in);
}

static void intake_proofs_refused(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	size_t before = adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=ADM-0004",
				      (char *)NULL);
	long long unproven0 = metric(UNPROVEN("intake-proof"));
	memset(&h, 0, sizeof(h));
	h.before = swap_ek_certs_first;
	/* the genuine intake then goes on to w4's binding-author refusal */
	assert_int_equal(run_hooked(&MA, "ADM-0004", &h, 2, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(h.seen, 1);
	/* the genuine one's binding-author refusal of w4 repeats one journaled
	 * in binding_author_refused within the window: counted, not journaled
	 * again (adm_log_limited) */
	assert_int_equal(adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=ADM-0004",
				       (char *)NULL),
			 before + 1);
	/* the forged one: an ek-* reason, and no device (nothing was looked up) */
	assert_int_equal(adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=ADM-0004",
				       "FLEET_REASON=ek-", (char *)NULL),
			 1);
	assert_int_equal(adm_log_count(LOG, "FLEET_REASON=ek-", "FLEET_DEVICE=w4", (char *)NULL),
			 0);
	/* counted as what it is: an intake whose own proofs failed */
	assert_int_equal(metric(UNPROVEN("intake-proof")), unproven0 + 1);
}

/* I4: a class without a profile. */
static void class_unknown_refused(void **state)
{
	(void)state;
	char out[800];
	nbf_ctl("/_fake/change", "{\"device\": 14, \"user\": \"terraform\","
				 " \"custom_fields\": {\"class\": \"gpu\"}}");
	assert_int_equal(run_tink(&MA, "ADM-0014", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0014", "class-unknown");
}

/* I3: NetBox does not answer the intake's lookup: 503 (the machine
 * retries), no claim; an unknown answer is never read as "not found". */
static void netbox_down_at_intake(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store *st;
	struct fleet_store_claim *c = NULL;
	size_t n = 0;
	long long un0 = metric("fleetd_intake_total{result=\"unavailable\"}");
	nbf_ctl("/_fake/fail", "{\"status\": 502, \"count\": 2}");
	assert_int_equal(run_tink(&MA, "ADM-8888", NULL, out, sizeof(out)),
			 TINK_EXIT_UNREACHABLE);
	assert_int_equal(metric("fleetd_intake_total{result=\"unavailable\"}"), un0 + 2);
	st = store_ro();
	assert_int_equal(fleet_store_claims_list(st, &c, &n), FLEET_STORE_OK);
	for (size_t i = 0; i < n; i++)
		assert_string_not_equal(c[i].serial, "ADM-8888");
	free(c);
	fleet_store_close(st);
}

/* A3: the TPM proves its boot, the profile refuses the log: a failed
 * verdict, no certificates. */
static void policy_fail_verdict(void **state)
{
	(void)state;
	char out[800];
	size_t pass, fail;
	struct fleet_store_device d;
	assert_int_equal(run_tink(&MA, "ADM-0011", BADLOG, out, sizeof(out)), TINK_EXIT_REFUSED);
	store_verdicts("w11", &pass, &fail, "event-log-malformed");
	assert_int_equal(pass, 0);
	assert_int_equal(fail, 1);
	assert_int_equal(vlog_count("\"device\":\"w11\"", "\"result\":\"fail\""), 1);
	assert_int_equal(adm_log_count(LOG, "event=verdict-failed", "FLEET_DEVICE=w11",
				       (char *)NULL), 1);
	assert_false(store_device("ADM-0011", &d));
	assert_false(exists_in(out, "lak.pem"));
}

/* The binding changes after intake: no certificates. */
static void change_binding(struct hooked *h, const char *path, const struct fleet_buf *body,
			   long status, const struct fleet_buf *reply)
{
	(void)body;
	(void)reply;
	char req[300];
	if (strcmp(path, "/v1/attest/intake") != 0 || status != 200)
		return;
	snprintf(req, sizeof(req),
		 "{\"device\": 6, \"user\": \"terraform\", \"custom_fields\": "
		 "{\"approved_ek_hash_ecc\": \"%s\"}}",
		 MB.ek_ecc);
	nbf_ctl("/_fake/change", req);
	h->seen++;
}

static void binding_changed_in_session(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	struct fleet_store_device d;
	size_t pass, fail;
	memset(&h, 0, sizeof(h));
	h.after = change_binding;
	assert_int_equal(run_hooked(&MA, "ADM-0006", &h, 2, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(h.seen, 1);
	assert_false(exists_in(out, "lak.pem"));
	assert_int_equal(adm_log_count(LOG, "event=binding-changed", "FLEET_DEVICE=w6",
				       (char *)NULL), 1);
	assert_false(store_device("ADM-0006", &d));
	store_verdicts("w6", &pass, &fail, NULL);
	assert_int_equal(pass + fail, 0);
}

/* C2: the binding changes after the certificates were issued: the
 * confirmation is refused and both certificates are marked revoked. */
static void change_binding_after_answer(struct hooked *h, const char *path,
					const struct fleet_buf *body, long status,
					const struct fleet_buf *reply)
{
	(void)body;
	(void)reply;
	if (strcmp(path, "/v1/attest/answer") != 0 || status != 200)
		return;
	nbf_ctl("/_fake/change", "{\"device\": 13, \"user\": \"terraform\","
				 " \"custom_fields\": {\"approved_ek_hash\": null}}");
	h->seen++;
}

static void binding_changed_before_confirm(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	size_t revoked = 0;
	memset(&h, 0, sizeof(h));
	h.after = change_binding_after_answer;
	assert_int_equal(run_hooked(&MA, "ADM-0013", &h, 2, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(h.seen, 1);
	/* nothing of the session was recorded as the device's: no device row,
	 * no certificate, no verdict; its provisional certificates revoked,
	 * and the journal names them */
	struct fleet_store_device d;
	size_t pass, fail;
	assert_false(store_device("ADM-0013", &d));
	assert_int_equal(store_certs("w13", &revoked), 0);
	store_verdicts("w13", &pass, &fail, NULL);
	assert_int_equal(pass + fail, 0);
	assert_int_equal(store_provisional("w13", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_revoked_named("w13", "binding-changed");
	assert_int_equal(adm_log_count(LOG, "event=binding-changed", "FLEET_DEVICE=w13",
				       (char *)NULL), 1);
	assert_int_equal(adm_log_count(LOG, "event=device-admitted", "FLEET_DEVICE=w13",
				       (char *)NULL), 0);
}

/* NetBox fails (503) when answer reads it again: no verdict, nothing
 * written, the machine is told to retry. */
static void fail_netbox(struct hooked *h, const char *path, const struct fleet_buf *body,
			long status, const struct fleet_buf *reply)
{
	(void)body;
	(void)reply;
	if (strcmp(path, "/v1/attest/intake") == 0 && status == 200) {
		char req[80];
		snprintf(req, sizeof(req), "{\"status\": 503, \"count\": %d}", h->seen);
		nbf_ctl("/_fake/fail", req);
	}
}

static void netbox_down_at_answer(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	struct fleet_store_device d;
	size_t pass, fail, writes = nb_writes();
	size_t lines = vlog_count("\"", "\"");
	long long inv0 = metric("fleetd_inventory_errors_total");
	memset(&h, 0, sizeof(h));
	h.after = fail_netbox;
	h.seen = 2; /* both attempts of the answer fail */
	assert_int_equal(run_hooked(&MA, "ADM-0005", &h, 2, out, sizeof(out)),
			 TINK_EXIT_UNREACHABLE);
	assert_false(exists_in(out, "lak.pem"));
	assert_false(store_device("ADM-0005", &d));
	store_verdicts("w5", &pass, &fail, NULL);
	assert_int_equal(pass + fail, 0);
	assert_int_equal(vlog_count("\"", "\""), lines);
	assert_int_equal(nb_writes(), writes);
	assert_int_equal(metric("fleetd_inventory_errors_total"), inv0 + 2);
	assert_true(adm_log_count(LOG, "event=inventory-unavailable", "FLEET_DEVICE=w5",
				  (char *)NULL) >= 2);

	/* A blip: the first answer gets 503, the retry of the same session
	 * is admitted (the 503 left the session as it was). */
	memset(&h, 0, sizeof(h));
	h.after = fail_netbox;
	h.seen = 1;
	assert_int_equal(run_hooked(&MA, "ADM-0007", &h, 3, out, sizeof(out)),
			 TINK_EXIT_CONFIRMED);
	assert_true(exists_in(out, "lak.pem"));
	assert_true(store_device("ADM-0007", &d));
}

/* The round deadline (sessions.round_seconds). NetBox answers the answer's
 * read-again (A4) in 4 s: past the round's 3 s, inside the client's
 * timeout. fleetd issues nothing, keeps the session and answers 503; the
 * machine's retry of the same answer is admitted. At the confirm (C2) the
 * same: past the deadline nothing is admitted, the provisional certificates
 * stay, and the retried confirm admits. Without the deadline the slow
 * round completes, and each check below that sees 503 fails. */
struct late_seen {
	int late_replies;
	size_t provisional, revoked;
	bool admitted;
};
static struct late_seen LATE;

/* The three rounds, by h->seen: the round made slow, its device. */
static const char *const LATE_PATH[] = {"/v1/attest/answer", "/v1/attest/confirm",
					"/v1/attest/intake"};
static const char *const LATE_DEVICE[] = {"w38", "w39", "w40"};
static const char *const LATE_SERIAL[] = {"ADM-0038", "ADM-0039", "ADM-0040"};

/* Before the machine's request of the slow round: the same bytes once
 * with NetBox slow, which must get 503, and what the store then holds; the
 * machine's own request follows as its retry would. */
static void slow_first(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	struct fleet_store_device d;
	if (strcmp(path, LATE_PATH[h->seen]) != 0 || LATE.late_replies)
		return;
	nbf_ctl("/_fake/delay", SLOW_NETBOX);
	post_raw(path, body->data, body->len, 503, NULL);
	LATE.late_replies++;
	LATE.provisional = store_provisional(LATE_DEVICE[h->seen], &LATE.revoked);
	LATE.admitted = store_device(LATE_SERIAL[h->seen], &d);
}

/* The machine LATE_SERIAL[round] runs whole, its round `round` made slow
 * once; it must be admitted in the end, through one late reply. */
static void run_late(int round)
{
	char out[800];
	struct hooked h;
	struct fleet_store_device d;
	memset(&h, 0, sizeof(h));
	memset(&LATE, 0, sizeof(LATE));
	h.before = slow_first;
	h.seen = round;
	assert_int_equal(run_hooked(&MA, LATE_SERIAL[round], &h, 3, out, sizeof(out)),
			 TINK_EXIT_CONFIRMED);
	assert_int_equal(LATE.late_replies, 1);
	assert_true(store_device(LATE_SERIAL[round], &d));
}

/* The round's counter of late replies moved by one, the machine's two
 * certificates are its own and unrevoked. */
static void late_counted(const char *series, long long before, const char *device)
{
	size_t revoked = 0;
	assert_int_equal(metric(series), before + 1);
	assert_int_equal(store_certs(device, &revoked), 2);
	assert_int_equal(revoked, 0);
}

#define LATE_ANSWER "fleetd_answer_total{result=\"late\"}"
#define LATE_CONFIRM "fleetd_confirm_total{result=\"late\"}"
#define LATE_INTAKE "fleetd_intake_total{result=\"late\"}"

static void round_deadline(void **state)
{
	(void)state;

	/* At the answer. */
	long long late0 = metric(LATE_ANSWER);
	run_late(0);
	assert_int_equal(LATE.provisional, 0); /* nothing issued past the deadline */
	assert_false(LATE.admitted);
	assert_int_equal(adm_log_count(LOG, "event=round-late", "FLEET_DEVICE=w38",
				       "FLEET_REASON=round-late", (char *)NULL),
			 1);
	late_counted(LATE_ANSWER, late0, "w38");

	/* At the confirm. */
	late0 = metric(LATE_CONFIRM);
	run_late(1);
	assert_false(LATE.admitted); /* not admitted past the deadline */
	assert_int_equal(LATE.provisional, 2);
	assert_int_equal(LATE.revoked, 0);
	late_counted(LATE_CONFIRM, late0, "w39");

	/* At the intake: no challenge past the deadline (no session holds a
	 * place for a machine that may have given up); the retry is
	 * challenged and admitted. */
	long long open0 = metric("fleetd_open_sessions");
	long long ch0 = metric("fleetd_intake_total{result=\"challenge\"}");
	late0 = metric(LATE_INTAKE);
	run_late(2);
	assert_int_equal(metric("fleetd_intake_total{result=\"challenge\"}"), ch0 + 1);
	assert_int_equal(metric("fleetd_open_sessions"), open0);
	assert_int_equal(adm_log_count(LOG, "event=round-late", "FLEET_SERIAL=ADM-0040",
				       (char *)NULL),
			 1);
	late_counted(LATE_INTAKE, late0, "w40");
}

/* I2: an intake for a serial whose session is open opens a parallel
 * challenge, and the first session to prove itself (the machine's) ends
 * the other. A2/C1: a forged answer and a forged confirmation are refused
 * without a verdict, and the genuine ones still complete. */
static void second_intake(struct hooked *h, const char *path, const struct fleet_buf *body,
			  long status, const struct fleet_buf *reply)
{
	(void)reply;
	if (strcmp(path, "/v1/attest/intake") == 0 && status == 200 && h->seen++ == 0)
		post_raw_from("127.0.0.2", path, body->data, body->len, 200, "\"challenge\"");
}

static void open_session_kept(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	memset(&h, 0, sizeof(h));
	h.after = second_intake;
	assert_int_equal(run_hooked(&MA, "ADM-0008", &h, 2, out, sizeof(out)),
			 TINK_EXIT_CONFIRMED);
	assert_int_equal(h.seen, 1);
	assert_true(exists_in(out, "lak.pem"));
	/* the replayed intake opened a parallel challenge, and the machine's
	 * proof ended it */
	assert_int_equal(adm_log_count(LOG, "event=sessions-superseded", "FLEET_DEVICE=w8",
				       (char *)NULL), 1);
}

/* Send a copy with one byte of the proof (answer) or signature (confirm)
 * flipped first. */
static void forge_first(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	struct fleet_buf forged;
	fb_init(&forged);
	if (strcmp(path, "/v1/attest/answer") == 0) {
		struct fleet_wire_answer a;
		assert_int_equal(fleet_wire_answer_decode(body->data, body->len, &a, NULL),
				 FLEET_OK);
		a.proof[0] ^= 1;
		assert_int_equal(fleet_wire_answer_encode(&a, &forged), FLEET_OK);
		fleet_wire_answer_free(&a);
	} else if (strcmp(path, "/v1/attest/confirm") == 0) {
		struct fleet_wire_confirm c;
		assert_int_equal(fleet_wire_confirm_decode(body->data, body->len, &c, NULL),
				 FLEET_OK);
		c.signature.data[c.signature.len - 1] ^= 1;
		assert_int_equal(fleet_wire_confirm_encode(&c, &forged), FLEET_OK);
		fleet_wire_confirm_free(&c);
	} else {
		return;
	}
	post_raw(path, forged.data, forged.len, 200, "\"refused\"");
	h->seen++;
	fb_free(&forged);
}

static void forgeries_refused(void **state)
{
	(void)state;
	char out[800];
	struct hooked h;
	size_t pass, fail;
	long long auth0 = metric("fleetd_auth_failures_total");
	long long answer0 = metric(UNPROVEN("answer-proof"));
	long long confirm0 = metric(UNPROVEN("confirm-proof"));
	memset(&h, 0, sizeof(h));
	h.before = forge_first;
	assert_int_equal(run_hooked(&MA, "ADM-0012", &h, 2, out, sizeof(out)),
			 TINK_EXIT_CONFIRMED);
	assert_int_equal(h.seen, 2);
	assert_int_equal(metric("fleetd_auth_failures_total"), auth0 + 2);
	assert_int_equal(metric(UNPROVEN("answer-proof")), answer0 + 1);
	assert_int_equal(metric(UNPROVEN("confirm-proof")), confirm0 + 1);
	assert_int_equal(adm_log_count(LOG, "event=auth-failure", "FLEET_DEVICE=w12",
				       "FLEET_REASON=proof-invalid", (char *)NULL), 1);
	assert_int_equal(adm_log_count(LOG, "event=auth-failure", "FLEET_DEVICE=w12",
				       "FLEET_REASON=confirm-signature", (char *)NULL), 1);
	store_verdicts("w12", &pass, &fail, NULL);
	assert_int_equal(pass, 1); /* the genuine answer's; none for the forgery */
	assert_int_equal(fail, 0);
}

/* I7 past planned: an active device re-attests with the EKs the store
 * holds (admitted again), or with others (refused). */
static void active_reattest(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_device d;
	size_t pass, fail;
	nbf_ctl("/_fake/change", "{\"device\": 1, \"user\": \"owner\", \"status\": \"active\","
				 " \"custom_fields\": {\"desired_action\": \"provision\"}}");
	assert_int_equal(run_tink(&MA, "ADM-0001", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	assert_true(exists_in(out, "ldevid.pem"));
	store_verdicts("w1", &pass, &fail, NULL);
	assert_int_equal(pass, 2);
	assert_true(store_device("ADM-0001", &d));
	assert_string_equal(d.ek_hash, MA.ek);

	json_t *before = nb_device(1);
	size_t writes = nb_writes();
	assert_int_equal(run_tink(&MB, "ADM-0001", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0001", "ek-mismatch");
	json_t *after = nb_device(1);
	assert_true(json_equal(before, after));
	assert_int_equal(nb_writes(), writes);
	assert_true(store_device("ADM-0001", &d));
	assert_string_equal(d.ek_hash, MA.ek); /* the store never rebinds */
	json_decref(before);
	json_decref(after);
}

/* I7: an active device boots HookOS with no requested run. */
static void unexpected_boot(void **state)
{
	(void)state;
	char out[800];
	struct fleet_store_device d0, d1;
	nbf_ctl("/_fake/change", "{\"device\": 1, \"user\": \"owner\","
				 " \"custom_fields\": {\"desired_action\": null}}");
	assert_true(store_device("ADM-0001", &d0));
	size_t certs = store_certs("w1", NULL);
	json_t *before = nb_device(1);
	size_t writes = nb_writes();
	assert_int_equal(metric("fleetd_unexpected_boot_total"), 0);
	assert_int_equal(run_tink(&MA, "ADM-0001", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0001", "unexpected-boot");
	assert_int_equal(metric("fleetd_unexpected_boot_total"), 1);
	assert_true(store_device("ADM-0001", &d1));
	assert_memory_equal(&d0, &d1, sizeof(d0)); /* identity untouched */
	assert_int_equal(store_certs("w1", NULL), certs);
	json_t *after = nb_device(1);
	assert_true(json_equal(before, after));
	assert_int_equal(nb_writes(), writes);
	json_decref(before);
	json_decref(after);
}

/* I1, A1: 1,000 requests that prove nothing are counted, not journaled,
 * and fleetd still serves. */
static void malformed_flood(void **state)
{
	(void)state;
	static const char *const bodies[] = {"{not json", "{\"v\":1}", "{\"v\":2}"};
	static const char *const reasons[] = {"malformed-json", "malformed-message",
					      "unsupported-version"};
	long long before[3], unknown0;
	char series[128];
	struct http_client c;
	struct http_reply r;
	for (int k = 0; k < 3; k++) {
		snprintf(series, sizeof(series), "fleetd_http_rejected_total{reason=\"%s\"}",
			 reasons[k]);
		before[k] = metric(series);
	}
	unknown0 = metric("fleetd_confirm_total{result=\"session-unknown\"}");
	size_t lines = adm_log_lines(LOG);

	http_client_init(&c, FD.port, FD.tls_ca);
	for (int i = 0; i < 1000; i++) {
		const char *b = bodies[i % 3];
		const char *path = i % 2 ? "/v1/attest/answer" : "/v1/attest/intake";
		assert_int_equal(http_post(&c, path, "application/json", b, strlen(b), &r), 400);
		http_reply_free(&r);
	}
	/* well formed, for no session: refused, counted, not journaled */
	struct fleet_wire_confirm cf;
	struct fleet_buf fb;
	uint8_t sig[4] = {1, 2, 3, 4};
	memset(&cf, 0, sizeof(cf));
	memset(cf.session, 0x5a, sizeof(cf.session));
	cf.signature.data = sig;
	cf.signature.len = sizeof(sig);
	fb_init(&fb);
	assert_int_equal(fleet_wire_confirm_encode(&cf, &fb), FLEET_OK);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(http_post(&c, "/v1/attest/confirm", "application/json", fb.data,
					   fb.len, &r),
				 200);
		assert_non_null(strstr(r.body, "\"refused\""));
		http_reply_free(&r);
	}
	fb_free(&fb);
	assert_int_equal(http_get(&c, "/healthz", NULL, &r), 200);
	http_reply_free(&r);
	http_client_free(&c);

	long long want[3] = {334, 333, 333};
	for (int k = 0; k < 3; k++) {
		snprintf(series, sizeof(series), "fleetd_http_rejected_total{reason=\"%s\"}",
			 reasons[k]);
		assert_int_equal(metric(series) - before[k], want[k]);
	}
	assert_int_equal(metric("fleetd_confirm_total{result=\"session-unknown\"}") - unknown0, 10);
	assert_int_equal(adm_log_lines(LOG), lines);
}

/* admission.h: a re-check or renewal that proves nothing (here a
 * LAK certificate fleetd's CA never signed) writes and issues nothing, is
 * counted, and a flood of them journals one line per kind, not one per
 * request. */
static void reattest_unproven_writes_nothing(void **state)
{
	(void)state;
	long long proof0 = metric("fleetd_unproven_total{reason=\"reattest-proof\"}");
	long long pass0 = metric("fleetd_verdicts_total{result=\"pass\"}");
	long long fail0 = metric("fleetd_verdicts_total{result=\"fail\"}");
	int journaled0 = adm_log_count(LOG, "event=reattest-unproven", (char *)NULL);
	uint8_t der[300], sig[8] = {1}, nonce_bytes[32] = {7};
	for (size_t i = 0; i < sizeof(der); i++)
		der[i] = (uint8_t)(i * 31 + 7);
	struct fleet_reattest_nonce_req nq = {.lak_cert = {der, sizeof(der)}};
	struct fleet_reattest_check ck;
	memset(&ck, 0, sizeof(ck));
	ck.lak_cert = (struct fleet_wire_bytes){der, sizeof(der)};
	memcpy(ck.nonce, nonce_bytes, sizeof(ck.nonce));
	ck.quote_attest = (struct fleet_wire_bytes){der, 64};
	ck.quote_sig = (struct fleet_wire_bytes){sig, sizeof(sig)};
	ck.eventlog = (struct fleet_wire_bytes){der, 32};
	ck.report = (struct fleet_wire_bytes){(uint8_t *)"{}", 2};
	ck.report_sig = (struct fleet_wire_bytes){sig, sizeof(sig)};
	struct fleet_buf nb, cb;
	fb_init(&nb);
	fb_init(&cb);
	assert_int_equal(fleet_reattest_nonce_req_encode(&nq, &nb), FLEET_OK);
	assert_int_equal(fleet_reattest_check_encode(&ck, &cb), FLEET_OK);
	struct http_client c;
	struct http_reply r;
	http_client_init(&c, FD.port, FD.tls_ca);
	for (int i = 0; i < 6; i++) {
		const struct fleet_buf *b = i % 2 ? &cb : &nb;
		const char *path = i % 2 ? "/v1/reattest/check" : "/v1/reattest/nonce";
		/* the nonce round refuses with 403 (its reply has no status) */
		assert_int_equal(http_post(&c, path, "application/json", b->data, b->len, &r),
				 i % 2 ? 200 : 403);
		assert_non_null(strstr(r.body, "\"refused\""));
		http_reply_free(&r);
	}
	/* the renewal's round is the check's: unproven, it is counted
	 * the same and issues nothing; the key on /check, or none on /renew,
	 * is malformed. */
	struct fleet_buf rb;
	fb_init(&rb);
	ck.has_renew = true;
	ck.renew_public = (struct fleet_wire_bytes){der, 40};
	ck.renew_request = (struct fleet_wire_bytes){der, 40};
	ck.renew_certify_attest = (struct fleet_wire_bytes){der, 40};
	ck.renew_certify_sig = (struct fleet_wire_bytes){sig, sizeof(sig)};
	assert_int_equal(fleet_reattest_check_encode(&ck, &rb), FLEET_OK);
	assert_int_equal(http_post(&c, "/v1/reattest/renew", "application/json", rb.data, rb.len,
				   &r),
			 200);
	assert_non_null(strstr(r.body, "\"refused\""));
	http_reply_free(&r);
	assert_int_equal(http_post(&c, "/v1/reattest/check", "application/json", rb.data, rb.len,
				   &r),
			 400);
	http_reply_free(&r);
	assert_int_equal(http_post(&c, "/v1/reattest/renew", "application/json", cb.data, cb.len,
				   &r),
			 400);
	http_reply_free(&r);
	fb_free(&rb);
	http_client_free(&c);
	fb_free(&nb);
	fb_free(&cb);
	assert_int_equal(metric("fleetd_renewals_total{result=\"renewed\"}"), 0);
	assert_int_equal(metric("fleetd_renewals_total{result=\"refused\"}"), 0);
	assert_int_equal(metric("fleetd_unproven_total{reason=\"reattest-proof\"}") - proof0, 7);
	assert_int_equal(metric("fleetd_verdicts_total{result=\"pass\"}"), pass0);
	assert_int_equal(metric("fleetd_verdicts_total{result=\"fail\"}"), fail0);
	/* one kind (lak-unknown), one line in the window, whatever the count */
	assert_int_equal(adm_log_count(LOG, "event=reattest-unproven", (char *)NULL) - journaled0, 1);
}

/* The daemon's first pass runs at start: spire-nodes.json is in the state
 * directory, in the handoff's format, for the configured trust domain. */
static void pass_writes_spire_nodes(void **state)
{
	(void)state;
	char path[800];
	snprintf(path, sizeof(path), "%s/spire-nodes.json", STATE);
	/* The pass starts with the main loop, just after readiness. */
	for (int i = 0; i < 100 && access(path, F_OK) != 0; i++)
		usleep(50 * 1000);
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	if (!doc)
		fail_msg("%s: %s", path, jerr.text);
	assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
	assert_true(json_integer_value(json_object_get(doc, "serial")) >= 1);
	assert_string_equal(json_string_value(json_object_get(doc, "trust_domain")), "fleet.test");
	assert_true(json_is_array(json_object_get(doc, "eligible")));
	assert_true(json_is_array(json_object_get(doc, "revoked")));
	json_decref(doc);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0644);
}

/* fleetd refuses to start, with a sentence, when what it needs is unsafe
 * or missing; --check-config validates and exits. */
static int run_fleetd(const char *config, const char *extra, char *errf, size_t cap)
{
	char cmd[2400];
	snprintf(errf, cap, "%s/startup.%s.err", D, extra[0] ? "check" : "run");
	snprintf(cmd, sizeof(cmd), "'%s' --config '%s' %s >'%s' 2>&1", FLEETD_BIN, config, extra,
		 errf);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void startup_refusals(void **state)
{
	(void)state;
	char cfg[800], nodes[800], errf[900], text[4096];
	snprintf(cfg, sizeof(cfg), "%s/fleetd.yaml", D);
	assert_int_equal(run_fleetd(cfg, "--check-config", errf, sizeof(errf)), 0);
	assert_int_equal(adm_log_count(errf, "configuration OK", (char *)NULL), 1);

	/* a nodes file others may write: fleetd does not start */
	snprintf(nodes, sizeof(nodes), "%s/nodes/nodes.yaml", D);
	shf("mkdir -p %s/nodes && chmod 755 %s/nodes", D, D);
	put(nodes, "version: 1\nnodes: []\n");
	chmod(nodes, 0666);
	snprintf(cfg, sizeof(cfg), "%s/fleetd-file.yaml", D);
	snprintf(text, sizeof(text),
		 "listen:\n  address: 127.0.0.1\n  port: %u\n"
		 "tls:\n  cert: %s/fleetd.crt\n  key: %s/fleetd.key\n"
		 "state_dir: %s/state-file\nroots_dir: %s/roots\nca_dir: %s/ca\n"
		 "profiles_dir: %s/profiles\nclasses:\n  worker: worker.yaml\n"
		 "inventory:\n  kind: file\n  file:\n    path: %s\n",
		 (unsigned)adm_free_port(), D, D, D, D, D, D, nodes);
	put(cfg, text);
	assert_int_equal(run_fleetd(cfg, "", errf, sizeof(errf)), 1);
	assert_true(adm_log_count(errf, "startup-failed", "nodes file", (char *)NULL) >= 1);

	/* a class whose profile judges another class: refused by the check */
	char bad[900];
	snprintf(bad, sizeof(bad), "%s/fleetd-badclass.yaml", D);
	shf("sed 's/^  worker: worker.yaml/  gpu: worker.yaml/' %s/fleetd.yaml > %s", D, bad);
	assert_int_equal(run_fleetd(bad, "--check-config", errf, sizeof(errf)), 1);
	assert_true(adm_log_count(errf, "class gpu", "is for class", (char *)NULL) >= 1);

	/* Provisioning on: fleetd refuses to start while a class that installs
	 * has no digest (K1), naming the class; and while a class with a
	 * profile is missing from classes.json (K6). */
	static const char inputs_json[] =
		"{\"version\": 1, \"classes\": {\"worker\": {\"cluster_name\": \"folly\", "
		"\"endpoint\": \"https://folly.lan:6443\", \"kubernetes_version\": \"1.32.4\"}}}";
	char classes[900], inputs[900], prov[900], ctext[1024];
	snprintf(classes, sizeof(classes), "%s/classes.json", D);
	snprintf(inputs, sizeof(inputs), "%s/class-inputs.json", D);
	snprintf(prov, sizeof(prov), "%s/fleetd-provision.yaml", D);
	put(inputs, inputs_json);
	char secrets[900];
	snprintf(secrets, sizeof(secrets), "%s/talos-secrets.yaml", D);
	put(secrets, "cluster:\n  id: test\n");
	chmod(secrets, 0600);
	shf("cp %s/fleetd.yaml %s && printf 'provision:\n  classes_file: %s\n  "
	    "class_inputs_file: %s\n  talosctl: /bin/true\n  secrets_file: %s\n"
	    "  tools_image: ghcr.io/folly/fleet-tools@sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
	    "  config_host: fleetd.folly.lan:8443\n' >> %s",
	    D, prov, classes, inputs, secrets, prov);
	const char *digests[] = {"", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef01234567"
				     "89abcdef"};
	for (int i = 0; i < 2; i++) {
		snprintf(ctext, sizeof(ctext),
			 "{\"version\": 1, \"classes\": {\"worker\": {\"role\": \"worker\", "
			 "\"talos_version\": \"v1.13.9\", \"image\": \"ghcr.io/folly/installer\", "
			 "\"digest\": \"%s\"}}}",
			 digests[i]);
		put(classes, ctext);
		int check = run_fleetd(prov, "--check-config", errf, sizeof(errf));
		if (i == 0) {
			assert_int_equal(check, 1);
			assert_true(adm_log_count(errf, "class worker installs", "no-digest",
						  (char *)NULL) >= 1);
			assert_int_equal(run_fleetd(prov, "", errf, sizeof(errf)), 1);
			assert_true(adm_log_count(errf, "startup-failed", "class worker installs",
						  (char *)NULL) >= 1);
		} else {
			assert_int_equal(check, 0);
			assert_int_equal(adm_log_count(errf, "configuration OK", (char *)NULL), 1);
		}
	}
	put(classes, "{\"version\": 1, \"classes\": {\"bmc\": {\"role\": \"none\"}}}");
	put(inputs, "{\"version\": 1, \"classes\": {}}");
	assert_int_equal(run_fleetd(prov, "--check-config", errf, sizeof(errf)), 1);
	assert_true(adm_log_count(errf, "class worker has a profile", "not in classes.json",
				  (char *)NULL) >= 1);

	/* the same file, root's alone: it starts (and stops on SIGTERM) */
	chmod(nodes, 0644);
	struct fleetd_proc p;
	memset(&p, 0, sizeof(p));
	p.port = adm_free_port();
	snprintf(p.tls_ca, sizeof(p.tls_ca), "%s", FD.tls_ca);
	char *port = strstr(text, "port: ");
	assert_non_null(port);
	char tail[4096];
	snprintf(tail, sizeof(tail), "%s", strchr(port, '\n'));
	snprintf(port, sizeof(text) - (size_t)(port - text), "port: %u%s", (unsigned)p.port, tail);
	put(cfg, text);
	snprintf(errf, sizeof(errf), "%s/fleetd-file.log", D);
	fleetd_start(&p, FLEETD_BIN, cfg, errf);
	assert_int_equal(fleetd_stop(&p), 0);
	assert_int_equal(adm_log_count(errf, "event=stopping", (char *)NULL), 1);
}

/* ---- rules the mutants of tests/mutants/ found untested ------------------------ */

/* Nothing of an admission for device: no device in the store, no verdict,
 * no certificate, none written to out. */
static void nothing_recorded(const char *serial, const char *device, const char *out)
{
	struct fleet_store_device d;
	size_t pass, fail;
	assert_false(store_device(serial, &d));
	store_verdicts(device, &pass, &fail, NULL);
	assert_int_equal(pass + fail, 0);
	assert_int_equal(store_certs(device, NULL), 0);
	assert_false(exists_in(out, "lak.pem"));
	assert_false(exists_in(out, "ldevid.pem"));
}

/* I7: every presented EK hash equals its approved one, the RSA one too:
 * B's RSA EK is approved beside A's ECC EK, and A is refused. */
static void rsa_ek_mismatch_refused(void **state)
{
	(void)state;
	char out[800];
	json_t *before = nb_device(16);
	size_t writes = nb_writes();
	assert_int_equal(run_tink(&MA, "ADM-0016", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0016", "ek-not-approved");
	assert_int_equal(adm_log_count(LOG, "event=intake-challenged", "FLEET_SERIAL=ADM-0016",
				       (char *)NULL),
			 0);
	json_t *after = nb_device(16);
	assert_true(json_equal(before, after));
	assert_int_equal(nb_writes(), writes);
	nothing_recorded("ADM-0016", "w16", out);
	json_decref(before);
	json_decref(after);
}

/* A2: the proof is keyed by both activated secrets. The challenge's ECC
 * credential is replaced, on its way to the machine, by one for the same
 * EK and AK that wraps 32 zero bytes (the RSA activation is fleetd's, the
 * ECC one is wrong), or taken out (the machine then keys the proof with
 * the RSA secret alone). HMAC pads a 32-byte key with zeros, so both give
 * the proof of the RSA secret alone: refused as proof-invalid, no verdict,
 * no certificates. */
static enum { ECC_CRED_ZERO, ECC_CRED_DROP } ECC_TAMPER;

static void tamper_ecc_credential(struct hooked *h, const char *path,
				  const struct fleet_buf *body, long status,
				  const struct fleet_buf *reply)
{
	struct fleet_wire_intake in;
	struct fleet_wire_intake_reply ch;
	struct fleet_buf re;
	if (strcmp(path, "/v1/attest/intake") != 0 || status != 200)
		return;
	assert_int_equal(fleet_wire_intake_decode(body->data, body->len, &in, NULL), FLEET_OK);
	assert_int_equal(fleet_wire_intake_reply_decode(reply->data, reply->len, &ch, NULL),
			 FLEET_OK);
	assert_int_equal(ch.status, FLEET_WIRE_CHALLENGE);
	assert_true(ch.cred_ecc.present);
	free(ch.cred_ecc.id_object.data);
	free(ch.cred_ecc.enc_secret.data);
	memset(&ch.cred_ecc, 0, sizeof(ch.cred_ecc));
	if (ECC_TAMPER == ECC_CRED_ZERO) {
		TPM2B_PUBLIC ek, ak;
		uint8_t name[2 + FLEET_DIGEST_MAX], zero[FLEET_WIRE_ID_LEN];
		size_t off = 0, name_len = 0;
		struct fleet_buf id, es;
		memset(&ek, 0, sizeof(ek));
		memset(&ak, 0, sizeof(ak));
		memset(zero, 0, sizeof(zero));
		assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Unmarshal(in.ek_ecc.pub.data,
								in.ek_ecc.pub.len, &off, &ek),
				 TSS2_RC_SUCCESS);
		off = 0;
		assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Unmarshal(in.ak_public.data,
								in.ak_public.len, &off, &ak),
				 TSS2_RC_SUCCESS);
		assert_int_equal(fleet_tpm_name(&ak.publicArea, name, sizeof(name), &name_len),
				 FLEET_OK);
		fb_init(&id);
		fb_init(&es);
		assert_int_equal(fleet_make_credential(&ek.publicArea, zero, sizeof(zero), name,
						       name_len, &id, &es, NULL),
				 FLEET_OK);
		ch.cred_ecc.present = true; /* the buffers become the reply's */
		ch.cred_ecc.id_object.data = id.data;
		ch.cred_ecc.id_object.len = id.len;
		ch.cred_ecc.enc_secret.data = es.data;
		ch.cred_ecc.enc_secret.len = es.len;
	}
	fb_init(&re);
	assert_int_equal(fleet_wire_intake_reply_encode(&ch, &re), FLEET_OK);
	/* The reply is the run's own buffer: what tink_run decodes next. */
	struct fleet_buf *w = (struct fleet_buf *)reply;
	fb_reset(w);
	assert_int_equal(fb_put(w, re.data, re.len), FLEET_OK);
	fb_free(&re);
	fleet_wire_intake_reply_free(&ch);
	fleet_wire_intake_free(&in);
	h->seen++;
}

static void ecc_secret_missing_refused(void **state)
{
	(void)state;
	static const struct {
		int mode;
		const char *serial, *device;
	} runs[] = {{ECC_CRED_ZERO, "ADM-0017", "w17"}, {ECC_CRED_DROP, "ADM-0018", "w18"}};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char out[800], dev[40];
		struct hooked h;
		long long auth0 = metric("fleetd_auth_failures_total");
		long long proof0 = metric("fleetd_unproven_total{reason=\"answer-proof\"}");
		size_t writes = nb_writes();
		snprintf(dev, sizeof(dev), "FLEET_DEVICE=%s", runs[i].device);
		ECC_TAMPER = runs[i].mode;
		memset(&h, 0, sizeof(h));
		h.after = tamper_ecc_credential;
		assert_int_equal(run_hooked(&MA, runs[i].serial, &h, 2, out, sizeof(out)),
				 TINK_EXIT_REFUSED);
		assert_int_equal(h.seen, 1);
		assert_int_equal(metric("fleetd_auth_failures_total"), auth0 + 1);
		assert_int_equal(metric("fleetd_unproven_total{reason=\"answer-proof\"}"),
				 proof0 + 1);
		/* an unproven answer is journaled only as the first of its reason
		 * in the window (forgeries_refused had one): counted, at most one
		 * line */
		assert_true(adm_log_count(LOG, "event=auth-failure", dev,
					  "FLEET_REASON=proof-invalid", (char *)NULL) <= 1);
		assert_int_equal(adm_log_count(LOG, "event=certificates-issued", dev, (char *)NULL),
				 0);
		assert_int_equal(nb_writes(), writes);
		nothing_recorded(runs[i].serial, runs[i].device, out);
	}
}

/* I7 past planned: only fleetd's store vouches for a device's EKs; NetBox's
 * ek_hash fields (and approved ones) naming the machine's EKs stand in for
 * nothing. w19 is staged and NetBox names B everywhere, the store has no
 * w19: ek-not-recorded. w20 is admitted with A, then staged with NetBox
 * naming B: B is refused ek-mismatch, the store still holds A. */
static void past_planned_store_only(void **state)
{
	(void)state;
	char out[800], req[600];
	struct fleet_store_device d;
	size_t writes = nb_writes();
	assert_int_equal(run_tink(&MB, "ADM-0019", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0019", "ek-not-recorded");
	assert_int_equal(nb_writes(), writes);
	nothing_recorded("ADM-0019", "w19", out);

	assert_int_equal(run_tink(&MA, "ADM-0020", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	assert_true(store_device("ADM-0020", &d));
	assert_string_equal(d.ek_hash, MA.ek);
	size_t certs = store_certs("w20", NULL), pass, fail;
	store_verdicts("w20", &pass, &fail, NULL);
	snprintf(req, sizeof(req),
		 "{\"device\": 20, \"user\": \"owner\", \"status\": \"staged\", \"custom_fields\":"
		 " {\"ek_hash\": \"%s\", \"ek_hash_ecc\": \"%s\"}}",
		 MB.ek, MB.ek_ecc);
	nbf_ctl("/_fake/change", req);
	writes = nb_writes();
	size_t refused0 = adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=ADM-0020",
					"FLEET_REASON=ek-mismatch", (char *)NULL);
	assert_int_equal(run_tink(&MB, "ADM-0020", NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
	assert_int_equal(adm_log_count(LOG, "event=intake-refused", "FLEET_SERIAL=ADM-0020",
				       "FLEET_REASON=ek-mismatch", (char *)NULL),
			 refused0 + 1);
	assert_int_equal(nb_writes(), writes);
	assert_true(store_device("ADM-0020", &d));
	assert_string_equal(d.ek_hash, MA.ek);
	assert_string_equal(d.ek_hash_ecc, MA.ek_ecc);
	assert_int_equal(store_certs("w20", NULL), certs);
	size_t pass1, fail1;
	store_verdicts("w20", &pass1, &fail1, NULL);
	assert_int_equal(pass1, pass);
	assert_int_equal(fail1, fail);
	assert_false(exists_in(out, "lak.pem"));
}

/* A4: the device's name, status or serial changes in NetBox between the
 * intake and the answer (not the binding): device-changed, no
 * certificates. */
static const char *DEVICE_CHANGE; /* the /_fake/change body */
static const char *CHANGE_AFTER;  /* the round after which the change lands */

static void change_device(struct hooked *h, const char *path, const struct fleet_buf *body,
			  long status, const struct fleet_buf *reply)
{
	(void)body;
	(void)reply;
	if (strcmp(path, CHANGE_AFTER) != 0 || status != 200)
		return;
	nbf_ctl("/_fake/change", DEVICE_CHANGE);
	h->seen++;
}

static void device_changed_in_session(void **state)
{
	(void)state;
	static const struct {
		const char *serial, *device, *change;
	} runs[] = {
		{"ADM-0021", "w21",
		 "{\"device\": 21, \"user\": \"owner\", \"name\": \"w21-renamed\"}"},
		{"ADM-0022", "w22", "{\"device\": 22, \"user\": \"owner\", \"status\": \"staged\"}"},
		{"ADM-0023", "w23",
		 "{\"device\": 23, \"user\": \"owner\", \"serial\": \"ADM-0023-MOVED\"}"},
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char out[800], dev[40];
		struct hooked h;
		snprintf(dev, sizeof(dev), "FLEET_DEVICE=%s ", runs[i].device);
		DEVICE_CHANGE = runs[i].change;
		CHANGE_AFTER = "/v1/attest/intake";
		memset(&h, 0, sizeof(h));
		h.after = change_device;
		assert_int_equal(run_hooked(&MA, runs[i].serial, &h, 2, out, sizeof(out)),
				 TINK_EXIT_REFUSED);
		assert_int_equal(h.seen, 1);
		assert_int_equal(adm_log_count(LOG, "event=device-changed", dev,
					       "FLEET_REASON=device-changed", (char *)NULL),
				 1);
		assert_int_equal(adm_log_count(LOG, "event=binding-changed", dev, (char *)NULL), 0);
		assert_int_equal(adm_log_count(LOG, "event=certificates-issued", dev, (char *)NULL),
				 0);
		nothing_recorded(runs[i].serial, runs[i].device, out);
	}
}

/* I6 again on each re-read (A4, C2): the owner clears a declaration after
 * the intake, or moves the expected port after the answer; the round that
 * reads it refuses, and nothing is admitted. */
static void declarations_checked_again(void **state)
{
	(void)state;
	static const struct {
		const char *serial, *device, *path, *change, *reason;
	} runs[] = {
		{"ADM-0041", "w41", "/v1/attest/intake",
		 "{\"device\": 41, \"user\": \"owner\", \"custom_fields\": "
		 "{\"install_disk_serial\": null}}",
		 "declaration-missing"},
		{"ADM-0042", "w42", "/v1/attest/answer",
		 "{\"device\": 42, \"user\": \"owner\", \"custom_fields\": "
		 "{\"expected_port\": \"leaf-07.folly/Ethernet99\"}}",
		 "port-mismatch"},
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char out[800], dev[40], why[80];
		struct hooked h;
		snprintf(dev, sizeof(dev), "FLEET_DEVICE=%s ", runs[i].device);
		snprintf(why, sizeof(why), "FLEET_REASON=%s", runs[i].reason);
		DEVICE_CHANGE = runs[i].change;
		CHANGE_AFTER = runs[i].path;
		memset(&h, 0, sizeof(h));
		h.after = change_device;
		assert_int_equal(run_hooked(&MA, runs[i].serial, &h, 2, out, sizeof(out)),
				 TINK_EXIT_REFUSED);
		assert_int_equal(h.seen, 1);
		char event[80];
		snprintf(event, sizeof(event), "event=%s ", runs[i].reason);
		assert_int_equal(adm_log_count(LOG, event, dev, why, (char *)NULL), 1);
		assert_int_equal(adm_log_count(LOG, "event=device-admitted", dev, (char *)NULL), 0);
		if (i == 0) { /* refused at the answer: nothing was issued */
			nothing_recorded(runs[i].serial, runs[i].device, out);
			continue;
		}
		/* refused at the confirm: the answer's provisional certificates
		 * are revoked, nothing is the device's */
		struct fleet_store_device d;
		size_t pass, fail, revoked = 0;
		assert_false(store_device(runs[i].serial, &d));
		assert_int_equal(store_certs(runs[i].device, NULL), 0);
		store_verdicts(runs[i].device, &pass, &fail, NULL);
		assert_int_equal(pass + fail, 0);
		assert_int_equal(store_provisional(runs[i].device, &revoked), 2);
		assert_int_equal(revoked, 2);
		assert_int_equal(adm_log_count(LOG, "event=provisional-revoked", dev, why,
					       (char *)NULL),
				 1);
	}
}

/* The one line of fleetd's log holding all three needles (malloc'd). */
static char *log_line(const char *a, const char *b, const char *c)
{
	FILE *f = fopen(LOG, "r");
	char *line = NULL, *found = NULL;
	size_t cap = 0, n = 0;
	assert_non_null(f);
	while (getline(&line, &cap, f) >= 0)
		if (strstr(line, a) && strstr(line, b) && strstr(line, c)) {
			free(found);
			found = strdup(line);
			n++;
		}
	free(line);
	fclose(f);
	if (n != 1)
		fail_msg("%zu log lines hold %s %s %s", n, a, b, c);
	return found;
}

static size_t longest_run(const char *s, char ch)
{
	size_t best = 0, cur = 0;
	for (; *s; s++) {
		cur = *s == ch ? cur + 1 : 0;
		if (cur > best)
			best = cur;
	}
	return best;
}

/* I1, I6: the LLDP neighbour's system name and port id are claimed: the
 * port-mismatch line shows each escaped and capped at
 * FLEET_LOG_CLAIMED_MAX characters. Each field is as long as the protocol
 * allows (255 bytes) and holds a backslash, a quote, "FIELD=" text,
 * characters that reorder or break a displayed line (U+202E, U+2028,
 * U+2029, U+061C) and invisible format characters (U+200B, U+2060, U+FEFF,
 * U+00AD); the wire refuses C0/C1 controls, so these are what a machine
 * can send. Each of them must reach the journal escaped, byte by byte. */
static void lldp_fields_capped_in_log(void **state)
{
	(void)state;
	char sys[FLEET_WIRE_MAX_LLDP_FIELD + 1], port[FLEET_WIRE_MAX_LLDP_FIELD + 1];
	char out[800];
	size_t n;
	/* "evil\sw" U+202E U+2028 U+061C U+200B U+2060 then A... ;
	 * Eth"12 FLEET_REASON=forged U+2029 U+FEFF U+00AD then B... */
	n = (size_t)snprintf(sys, sizeof(sys),
			     "evil\\sw\xe2\x80\xae\xe2\x80\xa8\xd8\x9c\xe2\x80\x8b\xe2\x81\xa0");
	memset(sys + n, 'A', FLEET_WIRE_MAX_LLDP_FIELD - n);
	sys[FLEET_WIRE_MAX_LLDP_FIELD] = '\0';
	n = (size_t)snprintf(port, sizeof(port),
			     "Eth\"12 FLEET_REASON=forged\xe2\x80\xa9\xef\xbb\xbf\xc2\xad");
	memset(port + n, 'B', FLEET_WIRE_MAX_LLDP_FIELD - n);
	port[FLEET_WIRE_MAX_LLDP_FIELD] = '\0';

	json_t *doc = json_pack("{s:{s:{s:{s:s, s:{s:{s:{s:s, s:s}}}, s:{s:{s:s, s:s}}}}}}",
				"lldp", "interface", "eno1", "via", "LLDP", "chassis", sys, "id",
				"type", "mac", "value", "0c:42:a1:00:07:00", "port", "id", "type",
				"ifname", "value", port);
	assert_non_null(doc);
	char *text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(text);
	put(LLDP, text);
	free(text);
	json_decref(doc);
	int code = run_tink(&MA, "ADM-0024", NULL, out, sizeof(out));
	put(LLDP, lldp_json); /* the other tests' neighbour, whatever happened */
	assert_int_equal(code, TINK_EXIT_REFUSED);
	assert_refused_with("ADM-0024", "port-mismatch");
	nothing_recorded("ADM-0024", "w24", out);

	/* What fleetd must have written: each field through fleet_log_claimed,
	 * the detail escaped by adm_log, quoted on the stderr line. */
	char csys[FLEET_LOG_CLAIMED_BUF], cport[FLEET_LOG_CLAIMED_BUF];
	char detail[2 * FLEET_LOG_CLAIMED_BUF + 64], esc[600], want[1400];
	snprintf(detail, sizeof(detail), "expected %s, reported %s/%s", PORT_OK,
		 fleet_log_claimed(sys, csys, sizeof(csys)),
		 fleet_log_claimed(port, cport, sizeof(cport)));
	fleet_log_escape_n(detail, strlen(detail), esc, sizeof(esc));
	size_t o = (size_t)snprintf(want, sizeof(want), " FLEET_DETAIL=\"");
	for (const char *p = esc; *p && o < sizeof(want) - 3; p++) {
		if (*p == '"' || *p == '\\')
			want[o++] = '\\';
		want[o++] = *p;
	}
	want[o++] = '"';
	want[o] = '\0';

	char *line = log_line("event=intake-refused", "FLEET_SERIAL=ADM-0024",
			      "FLEET_REASON=port-mismatch");
	if (!strstr(line, want))
		fail_msg("the port-mismatch line\n%s\ndoes not hold\n%s", line, want);
	for (const unsigned char *p = (const unsigned char *)line; *p && *p != '\n'; p++)
		if (*p < 0x20 || *p >= 0x7f)
			fail_msg("the port-mismatch line holds the raw byte 0x%02x", *p);
	/* Each bidi and format character by name, as the sanitiser's \xNN
	 * per byte (its backslash escaped again by the detail's escaping and
	 * the line's quoting), whatever the want above was computed with. */
	static const char *const hidden[][2] = {
		{"U+202E", "\xe2\x80\xae"}, {"U+2028", "\xe2\x80\xa8"}, {"U+2029", "\xe2\x80\xa9"},
		{"U+061C", "\xd8\x9c"},     {"U+200B", "\xe2\x80\x8b"}, {"U+2060", "\xe2\x81\xa0"},
		{"U+FEFF", "\xef\xbb\xbf"}, {"U+00AD", "\xc2\xad"},
	};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
		char shown[64];
		size_t k = 0;
		for (const unsigned char *b = (const unsigned char *)hidden[i][1]; *b; b++)
			k += (size_t)snprintf(shown + k, sizeof(shown) - k, "\\\\\\\\x%02X", *b);
		if (!strstr(line, shown))
			fail_msg("%s is not in the port-mismatch line as %s", hidden[i][0], shown);
	}
	assert_true(longest_run(line, 'A') <= FLEET_LOG_CLAIMED_MAX);
	assert_true(longest_run(line, 'B') <= FLEET_LOG_CLAIMED_MAX);
	assert_non_null(strstr(line, "[+")); /* the cut is marked */
	assert_true(strlen(line) < 1024);
	free(line);
}

/* I6: each of the nine declarations, not set: declaration-missing naming
 * it; fleetd fills in none. */
static void each_declaration_refused(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_DECLARATIONS; i++) {
		char out[800], serial[16], device[16], sfield[40], detail[64];
		snprintf(serial, sizeof(serial), "ADM-%04zu", 25 + i);
		snprintf(device, sizeof(device), "w%zu", 25 + i);
		snprintf(sfield, sizeof(sfield), "FLEET_SERIAL=%s ", serial);
		snprintf(detail, sizeof(detail), " FLEET_DETAIL=%s msg=", DECLARATIONS[i]);
		size_t writes = nb_writes();
		assert_int_equal(run_tink(&MA, serial, NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
		assert_refused_with(serial, "declaration-missing");
		if (adm_log_count(LOG, "event=intake-refused", sfield,
				  "FLEET_REASON=declaration-missing", detail, (char *)NULL) != 1)
			fail_msg("%s: no declaration-missing naming %s", serial, DECLARATIONS[i]);
		assert_int_equal(nb_writes(), writes);
		nothing_recorded(serial, device, out);
	}
}

/* I7: failed, offline, decommissioning and inventory admit nothing, even
 * with Terraform's binding for this very machine: status-<value>. */
static void other_statuses_refused(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_OTHER_STATUSES; i++) {
		char out[800], serial[16], device[16], sfield[40], reason[48];
		snprintf(serial, sizeof(serial), "ADM-%04zu", 34 + i);
		snprintf(device, sizeof(device), "w%zu", 34 + i);
		snprintf(sfield, sizeof(sfield), "FLEET_SERIAL=%s ", serial);
		snprintf(reason, sizeof(reason), "status-%s", OTHER_STATUSES[i]);
		size_t writes = nb_writes();
		assert_int_equal(run_tink(&MA, serial, NULL, out, sizeof(out)), TINK_EXIT_REFUSED);
		assert_refused_with(serial, reason);
		assert_int_equal(adm_log_count(LOG, "event=intake-refused", sfield, (char *)NULL),
				 1);
		assert_int_equal(nb_writes(), writes);
		nothing_recorded(serial, device, out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pass_writes_spire_nodes),
		cmocka_unit_test(reattest_unproven_writes_nothing),
		cmocka_unit_test(impostor_refused),
		cmocka_unit_test(second_ek_mismatch_refused),
		cmocka_unit_test(planned_admitted),
		cmocka_unit_test(unknown_serial_pending),
		cmocka_unit_test(missing_binding_pending),
		cmocka_unit_test(binding_author_refused),
		cmocka_unit_test(declarations_refused),
		cmocka_unit_test(intake_proofs_refused),
		cmocka_unit_test(class_unknown_refused),
		cmocka_unit_test(netbox_down_at_intake),
		cmocka_unit_test(policy_fail_verdict),
		cmocka_unit_test(binding_changed_in_session),
		cmocka_unit_test(binding_changed_before_confirm),
		cmocka_unit_test(netbox_down_at_answer),
		cmocka_unit_test(round_deadline),
		cmocka_unit_test(open_session_kept),
		cmocka_unit_test(forgeries_refused),
		cmocka_unit_test(active_reattest),
		cmocka_unit_test(unexpected_boot),
		cmocka_unit_test(malformed_flood),
		cmocka_unit_test(startup_refusals),
		cmocka_unit_test(rsa_ek_mismatch_refused),
		cmocka_unit_test(ecc_secret_missing_refused),
		cmocka_unit_test(past_planned_store_only),
		cmocka_unit_test(device_changed_in_session),
		cmocka_unit_test(declarations_checked_again),
		cmocka_unit_test(lldp_fields_capped_in_log),
		cmocka_unit_test(each_declaration_refused),
		cmocka_unit_test(other_statuses_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
