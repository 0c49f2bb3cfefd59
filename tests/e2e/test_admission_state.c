/*
 * test_admission_state.c: admission's state against the attacks and the
 * outages that independent testing found (fleetd/admission/admission.h,
 * sessions.h, lookup.h; fleetd/store/store.h "One admission"). Each test
 * reproduces its attack against the real fleetd binary over HTTPS, with
 * two swtpm machines, tink-attest's library and the NetBox contract fake;
 * a forger is a second client on 127.0.0.2 replaying what it saw.
 *
 *   forged_intakes_cannot_block   a replayed intake every 200 ms while the
 *                                 machine attests: it is admitted
 *   unproven_flood_not_journaled  1,000 unproven requests: a handful of
 *                                 journal lines, every one counted
 *   claim_only_after_proof        replayed intakes of an unknown serial
 *                                 write no claim; the TPM's answer does
 *   inventory_budget              a flood costs NetBox a bounded number of
 *                                 requests, the rest 503
 *   unconfirmed_is_provisional    certificates without a confirm belong to
 *                                 no device, are revoked when superseded or
 *                                 at the deadline, and SPIRE lists neither
 *   kill9_each_write_point        kill -9 at every durable write of the
 *                                 answer and confirm: after a restart the
 *                                 state is the before or the after
 */
#include "tests/e2e/admission_fixture.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "tests/e2e/http_client.h"
#include "tests/e2e/netbox_harness.h"

#define FORGER "127.0.0.2"
#define N_SERIALS 6 /* STA-0001 .. STA-0006, approved for machine A */

static char CONFIG[700], ARM[700];

static void write_seed(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"paginate_count\": 50, \"max_page_size\": 50,\n"
		   " \"tokens\": {\"" TOKEN "\": {\"user\": \"fleetd\"}},\n"
		   " \"custom_fields\": [\"class\", \"install_disk\", \"install_disk_serial\",\n"
		   "   \"bmc_type\", \"tpm_version\", \"amt\", \"secure_boot_expected\",\n"
		   "   \"expected_port\", \"approved_ek_hash\", \"approved_ek_hash_ecc\",\n"
		   "   \"ek_hash\", \"ek_hash_ecc\", \"desired_action\"],\n"
		   " \"devices\": [\n");
	for (int id = 1; id <= N_SERIALS; id++)
		fprintf(f,
			"  {\"id\": %d, \"name\": \"s%d\", \"serial\": \"STA-%04d\", \"status\": "
			"\"planned\", \"primary_ip4\": \"10.0.1.%d/24\", \"created_by\": \"terraform\",\n"
			"   \"custom_fields\": {\"class\": \"worker\", \"install_disk\": \"/dev/nvme0n1\",\n"
			"     \"install_disk_serial\": \"S5GX%d\", \"bmc_type\": \"ipmi\", \"tpm_version\": "
			"\"2.0\", \"amt\": false, \"secure_boot_expected\": true, \"expected_port\": \"%s\",\n"
			"     \"approved_ek_hash\": \"%s\", \"approved_ek_hash_ecc\": \"%s\", \"ek_hash\": "
			"null, \"ek_hash_ecc\": null, \"desired_action\": null}}%s\n",
			id, id, id, 10 + id, id, PORT_OK, MA.ek, MA.ek_ecc,
			id == N_SERIALS ? "" : ",");
	fprintf(f, " ]}\n");
	assert_int_equal(fclose(f), 0);
}

static void write_config(void)
{
	char cfg[4096];
	snprintf(cfg, sizeof(cfg),
		 "listen:\n  address: 127.0.0.1\n  port: %u\n"
		 /* the forger's floods must reach admission, not stop at the
		  * listener's per-source limit (test_http_server.c tests that) */
		 "  rate_per_second: 100000\n  rate_burst: 100000\n"
		 "tls:\n  cert: %s/fleetd.crt\n  key: %s/fleetd.key\n"
		 "state_dir: %s\nroots_dir: %s/roots\nca_dir: %s/ca\nprofiles_dir: %s/profiles\n"
		 "classes:\n  worker: worker.yaml\n"
		 "inventory:\n  kind: netbox\n  netbox:\n    url: %s\n    token_file: %s/token\n"
		 "    ca_file: %s\n    timeout_ms: 5000\n    lookups_per_second: 5\n"
		 "binding_author: terraform\n"
		 "sessions:\n  ttl_seconds: 30\n  answer_seconds: 5\n"
		 "spire:\n  trust_domain: fleet.test\n",
		 (unsigned)FD.port, D, D, STATE, D, D, D, E.base, D, E.ca);
	put(CONFIG, cfg);
}

static void start(bool shim)
{
	if (shim) {
		setenv("LD_PRELOAD", CRASH_SHIM, 1);
		setenv("FLEET_CRASH_ARM", ARM, 1);
	}
	fleetd_start(&FD, FLEETD_BIN, CONFIG, LOG);
	unsetenv("LD_PRELOAD");
	unsetenv("FLEET_CRASH_ARM");
}

static int setup(void **state)
{
	(void)state;
	struct fleet_errctx ec;
	char path[800];
	swtpm_require_or_skip();
	setenv("TSS2_LOG", "all+NONE", 0);
	D = make_temp_dir("admstate");
	assert_non_null(D);
	snprintf(STATE, sizeof(STATE), "%s/state", D);
	snprintf(LOG, sizeof(LOG), "%s/fleetd.log", D);
	snprintf(LLDP, sizeof(LLDP), "%s/lldp.json", D);
	snprintf(EVLOG, sizeof(EVLOG), "%s/eventlog.bin", D);
	snprintf(CONFIG, sizeof(CONFIG), "%s/fleetd.yaml", D);
	snprintf(ARM, sizeof(ARM), "%s/crash-arm", D);
	put(LLDP, lldp_json);
	machine_up(&MA, EVLOG);
	machine_up(&MB, NULL);
	nbf_setup(write_seed);
	assert_int_equal(tink_curl_global_init(), 0);
	shf("mkdir -p %s/roots %s/profiles"
	    " && for f in %s/*; do cp \"$f\" %s/roots/a-\"${f##*/}\"; done"
	    " && for f in %s/*; do cp \"$f\" %s/roots/b-\"${f##*/}\"; done"
	    " && cp %s/demo/worker.profile.yaml %s/profiles/worker.yaml",
	    D, D, MA.t.roots, D, MB.t.roots, D, FLEET_SOURCE_DIR, D);
	snprintf(path, sizeof(path), "%s/ca", D);
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_ca_init(path, "fleetd state test CA", 30, &ec), FLEET_OK);
	adm_mint_tls(D, FD.tls_ca, sizeof(FD.tls_ca));
	snprintf(path, sizeof(path), "%s/token", D);
	put(path, TOKEN "\n");
	chmod(path, 0600);
	FD.port = adm_free_port();
	write_config();
	start(false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = FD.pid ? fleetd_stop(&FD) : 0;
	nbf_teardown();
	swtpm_stop(&MA.t);
	swtpm_stop(&MB.t);
	if (getenv("FLEET_KEEP_TEST_DIR"))
		fprintf(stderr, "kept %s\n", D);
	else
		rm_rf(D);
	free(D);
	return rc == 0 ? 0 : -1;
}

/* ---- the machine's rounds, seen and steered -------------------------------- */

/* What a hooked run captured, and where it stops. */
struct capture {
	struct hooked h;
	struct fleet_buf intake, answer;
	const char *stop_before; /* a round's path: the machine vanishes there */
};

static void capture_before(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	struct capture *c = (struct capture *)h;
	if (strcmp(path, "/v1/attest/intake") == 0 && c->intake.len == 0)
		fb_put(&c->intake, body->data, body->len);
	if (strcmp(path, "/v1/attest/answer") == 0 && c->answer.len == 0)
		fb_put(&c->answer, body->data, body->len);
	if (c->stop_before && strcmp(path, c->stop_before) == 0) {
		/* the machine is gone: nothing answers, nothing is retried */
		snprintf(h->curl.base_url, sizeof(h->curl.base_url), "https://127.0.0.1:1");
		h->seen++;
	}
}

static int run_captured(struct machine *m, const char *serial, struct capture *c,
			const char *stop_before)
{
	char out[800];
	memset(c, 0, sizeof(*c));
	fb_init(&c->intake);
	fb_init(&c->answer);
	c->stop_before = stop_before;
	c->h.before = capture_before;
	return run_hooked(m, serial, &c->h, 1, out, sizeof(out));
}

static void capture_free(struct capture *c)
{
	fb_free(&c->intake);
	fb_free(&c->answer);
}

/* POST from the forger; returns the status, and the reply's session id
 * (hex) when it is a challenge. */
static long forge(struct http_client *c, const char *path, const struct fleet_buf *body,
		  uint8_t session[FLEET_WIRE_ID_LEN])
{
	struct http_reply r;
	long st = http_post(c, path, "application/json", body->data, body->len, &r);
	if (session && st == 200) {
		struct fleet_wire_intake_reply ir;
		memset(session, 0, FLEET_WIRE_ID_LEN);
		if (fleet_wire_intake_reply_decode((const uint8_t *)r.body, r.len, &ir, NULL) ==
			    FLEET_OK &&
		    ir.status == FLEET_WIRE_CHALLENGE)
			memcpy(session, ir.session, FLEET_WIRE_ID_LEN);
		fleet_wire_intake_reply_free(&ir);
	}
	http_reply_free(&r);
	return st;
}

static void forger_init(struct http_client *c)
{
	http_client_init(c, FD.port, FD.tls_ca);
	snprintf(c->source, sizeof(c->source), FORGER);
}

/* ---- I2: an unproven intake neither ends nor blocks ------------------------- */

struct flooder {
	const struct fleet_buf *intake;
	volatile int stop;
	unsigned sent, challenged;
};

static void *flood(void *arg)
{
	struct flooder *f = arg;
	struct http_client c;
	forger_init(&c);
	while (!f->stop) {
		uint8_t sid[FLEET_WIRE_ID_LEN];
		if (forge(&c, "/v1/attest/intake", f->intake, sid) == 200)
			f->challenged++;
		f->sent++;
		usleep(200 * 1000);
	}
	http_client_free(&c);
	return NULL;
}

static void forged_intakes_cannot_block(void **state)
{
	(void)state;
	struct capture cap;
	char out[800];
	/* the forger saw the machine's intake once (it is public anyway) */
	assert_int_not_equal(run_captured(&MA, "STA-0001", &cap, "/v1/attest/answer"),
			     TINK_EXIT_CONFIRMED);
	struct flooder f = {.intake = &cap.intake};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, flood, &f), 0);
	usleep(1500 * 1000);
	assert_int_equal(run_tink(&MA, "STA-0001", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	f.stop = 1;
	pthread_join(th, NULL);
	assert_true(f.sent >= 5);
	assert_true(f.challenged >= 1); /* its intakes were answered, not refused */
	assert_true(exists_in(out, "ldevid.pem"));
	struct fleet_store_device d;
	assert_true(store_device("STA-0001", &d));
	assert_string_equal(d.ek_hash, MA.ek);
	capture_free(&cap);
}

/* ---- unproven requests are counted, not journaled --------------------------- */

static void unproven_flood_not_journaled(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	struct fleet_wire_answer a;
	assert_int_not_equal(run_captured(&MA, "STA-0002", &cap, "/v1/attest/confirm"),
			     TINK_EXIT_CONFIRMED);
	assert_true(cap.answer.len > 0);
	assert_int_equal(fleet_wire_answer_decode(cap.answer.data, cap.answer.len, &a, NULL),
			 FLEET_OK);
	sleep(2); /* a fresh window for the lookup budget */
	forger_init(&c);
	size_t lines0 = adm_log_lines(LOG);
	long long proof0 = metric("fleetd_unproven_total{reason=\"answer-proof\"}");
	unsigned challenged = 0;
	for (int i = 0; i < 500; i++) {
		uint8_t sid[FLEET_WIRE_ID_LEN];
		long st = forge(&c, "/v1/attest/intake", &cap.intake, sid);
		assert_true(st == 200 || st == 503);
		/* the machine's answer, replayed into the forger's session */
		struct fleet_buf body;
		fb_init(&body);
		if (st == 200) {
			challenged++;
			memcpy(a.session, sid, sizeof(sid));
		} else {
			memset(a.session, (uint8_t)i, sizeof(a.session)); /* no such session */
		}
		assert_int_equal(fleet_wire_answer_encode(&a, &body), FLEET_OK);
		assert_int_equal(forge(&c, "/v1/attest/answer", &body, NULL), 200);
		fb_free(&body);
	}
	http_client_free(&c);
	size_t added = adm_log_lines(LOG) - lines0;
	print_message("1,000 unproven requests: %u challenged, %zu journal lines\n", challenged,
		      added);
	assert_true(challenged >= 1);
	assert_true(added <= 8);
	assert_int_equal(metric("fleetd_unproven_total{reason=\"answer-proof\"}") - proof0,
			 challenged);
	fleet_wire_answer_free(&a);
	capture_free(&cap);
}

/* ---- claims record only what a TPM proved ----------------------------------- */

static void claim_only_after_proof(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	char out[800];
	struct fleet_store_claim *cl;
	size_t n;
	assert_int_not_equal(run_captured(&MB, "STA-UNKNOWN", &cap, "/v1/attest/answer"),
			     TINK_EXIT_PENDING);
	sleep(2);
	forger_init(&c);
	for (int i = 0; i < 100; i++)
		(void)forge(&c, "/v1/attest/intake", &cap.intake, NULL);
	http_client_free(&c);
	struct fleet_store *st = store_ro();
	assert_int_equal(fleet_store_claims_list(st, &cl, &n), FLEET_STORE_OK);
	assert_int_equal(n, 0); /* 101 intakes, not one claim */
	free(cl);
	fleet_store_close(st);
	/* the machine answers its challenge: now the claim is recorded */
	sleep(2);
	assert_int_equal(run_tink(&MB, "STA-UNKNOWN", NULL, out, sizeof(out)), TINK_EXIT_PENDING);
	st = store_ro();
	assert_int_equal(fleet_store_claims_list(st, &cl, &n), FLEET_STORE_OK);
	assert_int_equal(n, 1);
	assert_string_equal(cl[0].serial, "STA-UNKNOWN");
	assert_int_equal(cl[0].count, 1);
	assert_string_equal(cl[0].eks[0].ek_hash, MB.ek);
	free(cl);
	fleet_store_close(st);
	capture_free(&cap);
}

/* ---- what a flood costs NetBox ------------------------------------------------ */

static void inventory_budget(void **state)
{
	(void)state;
	struct capture cap;
	struct http_client c;
	assert_int_not_equal(run_captured(&MA, "STA-0003", &cap, "/v1/attest/answer"),
			     TINK_EXIT_CONFIRMED);
	sleep(3); /* the bucket refills to its burst (10) */
	forger_init(&c);
	size_t asked0 = nbf_log_len();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned busy = 0;
	for (int i = 0; i < 200; i++)
		busy += forge(&c, "/v1/attest/intake", &cap.intake, NULL) == 503;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	http_client_free(&c);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	size_t asked = nbf_log_len() - asked0;
	print_message("200 intakes in %.2f s: %zu NetBox requests, %u answered 503\n", secs, asked,
		      busy);
	/* the burst, plus 5 a second: two requests per intake that passes */
	assert_true((double)asked <= 10 + 5 * secs + 2);
	assert_true(busy >= 150);
	capture_free(&cap);
}

/* ---- certificates without a confirm -------------------------------------------- */

static bool spire_lists(const char *sha1)
{
	char path[800];
	struct fleet_buf b;
	snprintf(path, sizeof(path), "%s/spire-nodes.json", STATE);
	fb_init(&b);
	read_file_or_fail(path, &b);
	fb_put_u8(&b, 0);
	bool found = strstr((const char *)b.data, sha1) != NULL;
	fb_free(&b);
	return found;
}

static void unconfirmed_is_provisional(void **state)
{
	(void)state;
	struct capture cap;
	char out[800];
	size_t revoked;
	struct fleet_store_device d;
	sleep(3); /* the last test drained the lookup budget: let it refill */
	/* the client takes the certificates and never confirms */
	assert_int_not_equal(run_captured(&MA, "STA-0004", &cap, "/v1/attest/confirm"),
			     TINK_EXIT_CONFIRMED);
	assert_false(store_device("STA-0004", &d)); /* not admitted */
	assert_int_equal(store_certs("s4", NULL), 0);
	assert_int_equal(store_provisional("s4", &revoked), 2);
	assert_int_equal(revoked, 0);
	size_t pass, fail;
	store_verdicts("s4", &pass, &fail, NULL);
	assert_int_equal(pass, 0); /* no passing verdict before the confirm */
	/* the same machine's proven retry supersedes it: revoked, admitted anew */
	assert_int_equal(run_tink(&MA, "STA-0004", NULL, out, sizeof(out)), TINK_EXIT_CONFIRMED);
	sleep(2); /* the reaper runs every second */
	assert_int_equal(store_provisional("s4", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_int_equal(adm_log_count(LOG, "event=provisional-revoked", "FLEET_DEVICE=s4",
				       "FLEET_REASON=superseded", (char *)NULL), 1);
	assert_int_equal(store_certs("s4", &revoked), 2);
	assert_int_equal(revoked, 0);

	/* abandoned for good: revoked at the session's deadline */
	capture_free(&cap);
	assert_int_not_equal(run_captured(&MA, "STA-0005", &cap, "/v1/attest/confirm"),
			     TINK_EXIT_CONFIRMED);
	assert_int_equal(store_provisional("s5", &revoked), 2);
	assert_int_equal(revoked, 0);
	sleep(33); /* ttl 30 s, reaped within a second */
	assert_int_equal(store_provisional("s5", &revoked), 2);
	assert_int_equal(revoked, 2);
	assert_int_equal(adm_log_count(LOG, "event=provisional-revoked", "FLEET_DEVICE=s5",
				       "FLEET_REASON=session-expired", (char *)NULL), 1);
	assert_false(store_device("STA-0005", &d));

	/* SPIRE's list (rewritten at the start's pass) holds none of them */
	fleetd_stop(&FD);
	start(false);
	struct fleet_store *st = store_ro();
	struct fleet_store_cert *c = NULL;
	size_t n = 0;
	assert_int_equal(fleet_store_provisional_list(st, &c, &n), FLEET_STORE_OK);
	assert_true(n >= 4);
	for (size_t i = 0; i < n; i++)
		assert_false(spire_lists(c[i].sha1));
	fleet_store_certs_free(c, n);
	fleet_store_close(st);
	capture_free(&cap);
}

/* ---- kill -9 at every write point ------------------------------------------------ */

/* The state for serial/device is "before" (nothing of the admission) or
 * "after" (device, both certificates, a passing verdict in the store and in
 * verdicts.jsonl); never between. Returns true for "after". */
static bool before_or_after(const char *serial, const char *device)
{
	struct fleet_store_device d;
	size_t pass, fail, revoked;
	bool admitted = store_device(serial, &d);
	size_t certs = store_certs(device, &revoked);
	store_verdicts(device, &pass, &fail, NULL);
	size_t lines = vlog_count(device, "\"result\":\"pass\"");
	if (admitted) {
		assert_int_equal(certs, 2);
		assert_int_equal(revoked, 0);
		assert_int_equal(pass, 1);
		assert_int_equal(lines, 1);
	} else {
		assert_int_equal(certs, 0);
		assert_int_equal(pass, 0);
		assert_int_equal(lines, 0);
	}
	/* whatever a lost session was issued is revoked by the restart */
	store_provisional(device, &revoked);
	size_t prov = store_provisional(device, NULL);
	assert_int_equal(revoked, prov);
	return admitted;
}

static long crash_count(void)
{
	char p[800];
	snprintf(p, sizeof(p), "%s.count", ARM);
	FILE *f = fopen(p, "r");
	long n = 0;
	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/* Arm the shim when the machine sends its answer. */
static long arm_at;
static void arm_before_answer(struct hooked *h, const char *path, const struct fleet_buf *body)
{
	(void)body;
	if (strcmp(path, "/v1/attest/answer") == 0 && !h->seen++) {
		char n[32];
		snprintf(n, sizeof(n), "%ld\n", arm_at);
		put(ARM, n);
	}
}

static void kill9_each_write_point(void **state)
{
	(void)state;
	char out[800];
	int crashes = 0;
	fleetd_stop(&FD);
	start(true);
	for (arm_at = 1; arm_at < 200; arm_at++) {
		struct hooked h;
		memset(&h, 0, sizeof(h));
		h.before = arm_before_answer;
		int code = run_hooked(&MA, "STA-0006", &h, 1, out, sizeof(out));
		int st;
		bool died = waitpid(FD.pid, &st, WNOHANG) == FD.pid;
		if (!died && code == TINK_EXIT_CONFIRMED) {
			/* N is past every point of both rounds: the after */
			print_message("kill -9 at each of %ld write points: before or after\n",
				      arm_at - 1);
			unlink(ARM);
			assert_true(before_or_after("STA-0006", "s6"));
			break;
		}
		if (!died) {
			/* the kill may land after the reply went out */
			for (int i = 0; i < 50 && waitpid(FD.pid, &st, WNOHANG) != FD.pid; i++)
				usleep(100 * 1000);
			died = true;
		}
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		FD.pid = 0;
		crashes++;
		unlink(ARM);
		start(true); /* recovers: revokes, reconciles */
		if (before_or_after("STA-0006", "s6")) {
			/* killed after the admission committed, before the reply */
			print_message("killed at point %ld after the commit: the after\n", arm_at);
			arm_at = 200;
			break;
		}
	}
	assert_true(crashes >= 5);
	assert_true(crash_count() > 0);
	assert_true(arm_at < 200 || before_or_after("STA-0006", "s6"));
	unlink(ARM);
	fleetd_stop(&FD);
	start(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forged_intakes_cannot_block),
		cmocka_unit_test(unproven_flood_not_journaled),
		cmocka_unit_test(claim_only_after_proof),
		cmocka_unit_test(inventory_budget),
		cmocka_unit_test(unconfirmed_is_provisional),
		cmocka_unit_test(kill9_each_write_point),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
