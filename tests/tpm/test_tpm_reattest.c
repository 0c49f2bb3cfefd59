/*
 * test_tpm_reattest.c: tpm-reattest, the node's hourly re-check client
 * (tpm-reattest/reattest_client.h), on a real TPM (swtpm) booted by the
 * firmware simulator, against fleetd's own check (fleetd/reattest/,
 * RA1-RA12) with a real CA (lib/ca.h) and a real store holding the LAK
 * certificate issued for the TPM's AK (tink-attest's template).
 *
 * The full runs use an in-process transport that decodes each request with
 * lib/reattest_wire.h and hands it to fleet_reattest_nonce/_check as the
 * daemon's routes will (the nonce reply carrying the class profile's
 * selection, fleet_profile_selection); no HTTPS. A transport that fails the
 * test when called proves that a local refusal sends nothing.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tctildr.h>

#include "fleetd/reattest/reattest.h"
#include "fleetd/store/store.h"
#include "lib/reattest_wire.h"
#include "tests/fwsim/fwsim.h"
#include "tests/tpm/swtpm_harness.h"
#include "tests/tpm/tpm_evidence.h"
#include "tpm-reattest/reattest_client.h"

#define DEVICE "worker-1"
#define SERIAL "FLEET-SIM-0001"
#define BIOS "fleetd-sim-1.0"
#define EK_HASH "1111111111111111111111111111111111111111111111111111111111111111"

static const char lldp_json[] =
	"{\"lldp\":{\"interface\":{\"eno1\":{\"via\":\"LLDP\","
	"\"chassis\":{\"leaf-07.folly\":{\"id\":{\"type\":\"mac\",\"value\":\"0c:42:a1:00:07:00\"}}},"
	"\"port\":{\"id\":{\"type\":\"ifname\",\"value\":\"Ethernet12\"}}}}}}\n";

static struct {
	struct swtpm t;
	TPM2B_PUBLIC ak_pub, other_pub, ldevid0_pub, ldevid1_pub;
	char *base;
	char sysfs[600], lldp[600], log[600];
	struct fleet_ca *ca;
	struct fleet_profile *profile;
	char profile_yaml[4096];
} G;

struct fx {
	char *dir;
	char lak_path[700];
	char ldevid_path[700];
	struct fleet_store *st;
	struct fleet_reattest_nonces *nonces;
	struct fleet_reattest_env env;
	const struct fleet_profile *profile; /* the device's class profile */
	struct tpm_reattest_config cfg;
	/* What the in-process server saw. */
	unsigned posts, renew_posts;
	struct fleet_wire_bytes wrong_ldevid; /* set: the renewal answers with it */
	struct fleet_decision last, renew;
	struct fleet_reattest_result res;
};

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void mkdirs(const char *path)
{
	char cmd[1100];
	int n = snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

static void load_profile_text(const char *yaml, struct fleet_profile **out)
{
	struct fleet_errctx ec = {0};
	if (fleet_profile_parse((const uint8_t *)yaml, strlen(yaml), out, &ec) != FLEET_OK)
		fail_msg("profile %u:%u: %s", ec.line, ec.column, ec.detail);
}

/* A LAK certificate for key, as PEM in path; its DER in *der (may be NULL). */
static void issue_cert(const struct fleet_ca *ca, enum fleet_cert_kind kind,
		       const TPM2B_PUBLIC *key, time_t not_before, const char *path,
		       struct fleet_wire_bytes *der)
{
	struct fleet_issue_request req = {
		.kind = kind,
		.key = &key->publicArea,
		.device_name = DEVICE,
		.serial = SERIAL,
		.not_before = not_before,
		.validity_days = 365,
	};
	struct fleet_errctx ec = {0};
	X509 *x = NULL;
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_OK);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	assert_int_equal(fclose(f), 0);
	if (der) {
		unsigned char *d = NULL;
		int n = i2d_X509(x, &d);
		assert_true(n > 0);
		der->data = malloc((size_t)n);
		assert_non_null(der->data);
		memcpy(der->data, d, (size_t)n);
		der->len = (size_t)n;
		OPENSSL_free(d);
	}
	X509_free(x);
}

static void issue_lak_by(const struct fleet_ca *ca, const TPM2B_PUBLIC *key, const char *path,
			 struct fleet_wire_bytes *der)
{
	issue_cert(ca, FLEET_CERT_LAK, key, time(NULL) - 86400, path, der);
}

static void issue_lak(const TPM2B_PUBLIC *key, const char *path, struct fleet_wire_bytes *der)
{
	issue_lak_by(G.ca, key, path, der);
}

static int group_setup(void **state)
{
	struct fleet_errctx ec = {0};
	struct fwsim_events *ev = NULL;
	struct fleet_buf log, pb;
	char err[300], path[700];
	(void)state;
	setenv("TSS2_LOG", "all+none", 0);
	if (swtpm_start(&G.t, NULL) != 0)
		return -1;
	ESYS_CONTEXT *e = swtpm_esys(&G.t);
	if (!e)
		return -1;
	snprintf(path, sizeof(path), "%s/tests/fwsim/worker.events.yaml", FLEET_SOURCE_DIR);
	assert_int_equal(fwsim_load(path, &ev, err, sizeof(err)), FLEET_OK);
	fb_init(&log);
	assert_int_equal(fwsim_apply(e, ev, &log, err, sizeof(err)), FLEET_OK);
	fwsim_free(ev);

	/* The AK as tink-attest makes it, and some other signing key. */
	TPM2B_PUBLIC t = tink_key_template(TINK_KEY_AK);
	ESYS_TR h = tev_primary(e, ESYS_TR_RH_ENDORSEMENT, &t, &G.ak_pub);
	Esys_FlushContext(e, h);
	t = tev_ecc_template(TEV_AK_ATTRS, TPM2_ALG_ECDSA, 7);
	h = tev_primary(e, ESYS_TR_RH_ENDORSEMENT, &t, &G.other_pub);
	Esys_FlushContext(e, h);
	/* The admission's LDevID key and the one a first renewal makes. */
	t = tink_ldevid_template(0);
	h = tev_primary(e, ESYS_TR_RH_OWNER, &t, &G.ldevid0_pub);
	Esys_FlushContext(e, h);
	t = tink_ldevid_template(1);
	h = tev_primary(e, ESYS_TR_RH_OWNER, &t, &G.ldevid1_pub);
	Esys_FlushContext(e, h);
	/* swtpm serves one client at a time: the client opens its own. */
	Esys_Finalize(&G.t.esys);
	if (G.t.tcti_ctx)
		Tss2_TctiLdr_Finalize(&G.t.tcti_ctx);

	G.base = make_temp_dir("tpm-reattest");
	snprintf(G.sysfs, sizeof(G.sysfs), "%s/sys", G.base);
	snprintf(G.lldp, sizeof(G.lldp), "%s/lldp.json", G.base);
	snprintf(G.log, sizeof(G.log), "%s/binary_bios_measurements", G.base);
	snprintf(path, sizeof(path), "%s/class/dmi/id", G.sysfs);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/class/dmi/id/product_serial", G.sysfs);
	write_file(path, SERIAL "\n", strlen(SERIAL) + 1);
	snprintf(path, sizeof(path), "%s/class/dmi/id/bios_version", G.sysfs);
	write_file(path, BIOS "\n", strlen(BIOS) + 1);
	snprintf(path, sizeof(path), "%s/class/net", G.sysfs);
	mkdirs(path);
	write_file(G.lldp, lldp_json, strlen(lldp_json));
	write_file(G.log, log.data, log.len);
	fb_free(&log);

	snprintf(path, sizeof(path), "%s/ca", G.base);
	if (fleet_ca_init(path, "Test Identity CA", 3650, &ec) != FLEET_OK ||
	    fleet_ca_load(path, &G.ca, &ec) != FLEET_OK)
		return -1;
	snprintf(path, sizeof(path), "%s/tests/fwsim/worker.profile.yaml", FLEET_SOURCE_DIR);
	fb_init(&pb);
	read_file_or_fail(path, &pb);
	assert_true(pb.len < sizeof(G.profile_yaml));
	memcpy(G.profile_yaml, pb.data, pb.len);
	G.profile_yaml[pb.len] = '\0';
	fb_free(&pb);
	load_profile_text(G.profile_yaml, &G.profile);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	swtpm_stop(&G.t);
	fleet_ca_free(G.ca);
	fleet_profile_free(G.profile);
	rm_rf(G.base);
	free(G.base);
	return 0;
}

/* A store holding worker-1 and its LAK certificate for the TPM's AK; the
 * client's files pointing at it. */
static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fleet_errctx ec = {0};
	struct fleet_wire_bytes der = {0};
	char sha1[41];
	assert_non_null(f);
	f->dir = make_temp_dir("tpm-reattest-store");
	assert_int_equal(fleet_store_open(f->dir, FLEET_STORE_RW, &f->st, &ec), FLEET_OK);
	assert_int_equal(fleet_store_device_record_admission(f->st, DEVICE, SERIAL, 0, EK_HASH, "",
							     time(NULL) - 86400),
			 FLEET_OK);
	snprintf(f->lak_path, sizeof(f->lak_path), "%s/lak.pem", f->dir);
	issue_lak(&G.ak_pub, f->lak_path, &der);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, der.data,
						 der.len, time(NULL) - 86400, sha1),
			 FLEET_OK);
	free(der.data);
	assert_int_equal(fleet_reattest_nonces_new(0, &f->nonces), FLEET_OK);
	f->env.ca = G.ca;
	f->env.store = f->st;
	f->env.nonces = f->nonces;
	f->profile = G.profile;
	f->cfg.tcti = G.t.tcti;
	f->cfg.lak_cert = f->lak_path;
	f->cfg.eventlog = G.log;
	f->cfg.sysfs_root = G.sysfs;
	f->cfg.lldp_file = G.lldp;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fleet_reattest_nonces_free(f->nonces);
	fleet_store_close(f->st);
	rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* ---- the in-process fleetd side ------------------------------------------ */

static enum tink_tx_result srv_post(void *ctx, const char *path, const struct fleet_buf *body,
				    size_t max_reply, struct fleet_buf *reply, long *http_status,
				    struct fleet_errctx *ec)
{
	struct fx *f = ctx;
	struct fleet_errctx dec = {0};
	(void)max_reply;
	(void)ec;
	f->posts++;
	if (strcmp(path, "/v1/reattest/nonce") == 0) {
		struct fleet_reattest_nonce_req req;
		struct fleet_reattest_nonce_reply rep;
		assert_int_equal(fleet_reattest_nonce_req_decode(body->data, body->len, &req, &dec),
				 FLEET_OK);
		memset(&rep, 0, sizeof(rep));
		f->last = fleet_reattest_nonce(&f->env, &req, &rep);
		fleet_reattest_nonce_req_free(&req);
		if (f->last.outcome != FLEET_PASSED) {
			*http_status = 403;
			return TINK_TX_OK;
		}
		assert_int_equal(fleet_profile_selection(f->profile, rep.pcr_selection,
							 sizeof(rep.pcr_selection)),
				 FLEET_OK);
		assert_int_equal(fleet_reattest_nonce_reply_encode(&rep, reply), FLEET_OK);
		*http_status = 200;
		return TINK_TX_OK;
	}
	bool renewal = strcmp(path, "/v1/reattest/renew") == 0;
	if (!renewal)
		assert_string_equal(path, "/v1/reattest/check");
	f->renew_posts += renewal;
	struct fleet_reattest_check m;
	assert_int_equal(fleet_reattest_check_decode(body->data, body->len, &m, &dec), FLEET_OK);
	assert_int_equal(m.has_renew, renewal); /* the daemon's R-6 rule */
	struct fleet_reattest_input in = {
		.msg = &m, .profile = f->profile, .inventory_status = "active", .renewal = renewal};
	f->last = fleet_reattest_check(&f->env, &in, &f->res);
	printf("  server: outcome %d reason %s authenticated %d\n", f->last.outcome,
	       f->last.reason ? f->last.reason : "-", f->res.authenticated);
	struct fleet_reattest_check_reply r = {
		.status = f->last.outcome == FLEET_PASSED ? FLEET_REATTEST_PASS
							 : FLEET_REATTEST_REFUSED};
	struct fleet_reattest_renewed out;
	memset(&out, 0, sizeof(out));
	if (renewal && f->last.outcome == FLEET_PASSED) {
		f->renew = fleet_reattest_renew(&f->env, &in, &f->res, &out);
		printf("  server: renewal outcome %d reason %s\n", f->renew.outcome,
		       f->renew.reason ? f->renew.reason : "-");
		if (f->renew.outcome == FLEET_PASSED) {
			r.status = FLEET_REATTEST_RENEWED;
			r.lak_cert = out.lak_cert;
			r.ldevid_cert = out.ldevid_cert;
			if (f->wrong_ldevid.data) /* an answer for a key the node did not ask for */
				r.ldevid_cert = f->wrong_ldevid;
		}
	}
	assert_int_equal(fleet_reattest_check_reply_encode(&r, reply), FLEET_OK);
	fleet_reattest_renewed_free(&out);
	fleet_reattest_check_free(&m);
	*http_status = 200;
	return TINK_TX_OK;
}

static enum tink_tx_result no_post(void *ctx, const char *path, const struct fleet_buf *body,
				   size_t max_reply, struct fleet_buf *reply, long *http_status,
				   struct fleet_errctx *ec)
{
	(void)ctx;
	(void)body;
	(void)max_reply;
	(void)reply;
	(void)http_status;
	(void)ec;
	fail_msg("the client sent %s after a local refusal", path);
	return TINK_TX_FATAL;
}

static enum tink_tx_result down_post(void *ctx, const char *path, const struct fleet_buf *body,
				     size_t max_reply, struct fleet_buf *reply, long *http_status,
				     struct fleet_errctx *ec)
{
	struct fx *f = ctx;
	(void)path;
	(void)body;
	(void)max_reply;
	(void)reply;
	(void)http_status;
	f->posts++;
	fleet_errctx_set(ec, FLEET_E_IO, 0, "Couldn't connect to server");
	return TINK_TX_UNREACHABLE;
}

static bool clock_recorded(struct fx *f)
{
	struct fleet_store_reattest_clock c;
	return fleet_store_reattest_clock_get(f->st, DEVICE, &c) == FLEET_STORE_OK;
}

static int run(struct fx *f, enum tink_tx_result (*post)(void *, const char *,
							 const struct fleet_buf *, size_t,
							 struct fleet_buf *, long *,
							 struct fleet_errctx *),
	       struct tpm_reattest_result *res)
{
	struct tink_transport tx = {.post = post, .ctx = f};
	int rc = tpm_reattest_run(&f->cfg, &tx, res);
	printf("  client: exit %d (%s): %s\n", rc, tpm_reattest_exit_name(rc), res->message);
	assert_int_equal(rc, res->exit_code);
	return rc;
}

/* ---- tests --------------------------------------------------------------- */

/* The hourly check: nonce, quote, signed report, check: fleetd passes it,
 * authenticated, and records the TPM's clock; the next hour's passes too. */
static void test_run_pass(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
	assert_int_equal(res.posts, 2);
	assert_int_equal(f->posts, 2);
	assert_int_equal(f->last.outcome, FLEET_PASSED);
	assert_true(f->res.authenticated);
	assert_true(f->res.verdict.pass);
	assert_string_equal(f->res.device, DEVICE);
	assert_string_equal(f->res.report.port_id, "Ethernet12");
	assert_string_equal(f->res.report.system_name, "leaf-07.folly");
	assert_true(clock_recorded(f));
	f->env.now = time(NULL) + 3600;
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
}

/* The pieces a run is made of, called directly: the AK is the
 * certificate's, and the check message built by the client passes fleetd's
 * check as is. */
static void test_build_check_pass(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_evidence ev;
	struct tink_tpm tpm;
	struct fleet_reattest_nonce_reply nr;
	struct fleet_reattest_check chk;
	struct fleet_reattest_result res;
	char msg[512] = "";

	tpm_reattest_evidence_init(&ev);
	assert_int_equal(tpm_reattest_load_evidence(&f->cfg, &ev, msg, sizeof(msg)), 0);
	assert_string_equal(ev.bios_version, BIOS);
	memset(&tpm, 0, sizeof(tpm));
	assert_int_equal(tink_tpm_open(&tpm, G.t.tcti), 0);
	assert_int_equal(tpm_reattest_check_ak(&tpm, &ev.lak_der, msg, sizeof(msg)), 0);

	struct fleet_reattest_nonce_req req = {
		.lak_cert = {.data = ev.lak_der.data, .len = ev.lak_der.len}};
	memset(&nr, 0, sizeof(nr));
	assert_int_equal(fleet_reattest_nonce(&f->env, &req, &nr).outcome, FLEET_PASSED);
	assert_int_equal(fleet_profile_selection(G.profile, nr.pcr_selection,
						 sizeof(nr.pcr_selection)),
			 FLEET_OK);
	assert_int_equal(tpm_reattest_build_check(&tpm, &ev, &nr, &chk, msg, sizeof(msg)), 0);
	tink_tpm_close(&tpm);
	assert_memory_equal(chk.nonce, nr.nonce, sizeof(nr.nonce));
	assert_int_equal(chk.report.len, ev.report.len);

	struct fleet_reattest_input in = {.msg = &chk, .profile = G.profile};
	struct fleet_decision d = fleet_reattest_check(&f->env, &in, &res);
	assert_int_equal(d.outcome, FLEET_PASSED);
	assert_true(res.authenticated);
	assert_true(clock_recorded(f));

	/* The same message again: the nonce is spent (fleetd's RA2), and the
	 * refusal is unauthenticated. */
	d = fleet_reattest_check(&f->env, &in, &res);
	assert_int_equal(d.outcome, FLEET_REFUSED);
	assert_string_equal(d.reason, "nonce-replayed");
	assert_false(res.authenticated);
	fleet_reattest_check_free(&chk);
	tpm_reattest_evidence_free(&ev);
}

/* A report over TPM2_Hash's 1024 bytes goes through a hash sequence; the
 * signature is the AK's over SHA-256 of all of it. */
static void test_sign_long(void **state)
{
	struct tink_tpm tpm;
	struct fleet_buf sig;
	TPMT_SIGNATURE s;
	uint8_t msg[3000];
	size_t off = 0;
	const char *reason = NULL;
	(void)state;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7);
	memset(&tpm, 0, sizeof(tpm));
	fb_init(&sig);
	assert_int_equal(tink_tpm_open(&tpm, G.t.tcti), 0);
	assert_int_equal(tpm_reattest_sign_ak(&tpm, msg, sizeof(msg), &sig), 0);
	tink_tpm_close(&tpm);
	assert_int_equal(Tss2_MU_TPMT_SIGNATURE_Unmarshal(sig.data, sig.len, &off, &s),
			 TSS2_RC_SUCCESS);
	assert_int_equal(fleet_tpm_signature_verify(&G.ak_pub.publicArea, msg, sizeof(msg), &s,
						    &reason),
			 FLEET_OK);
	msg[2999] ^= 1;
	assert_int_not_equal(fleet_tpm_signature_verify(&G.ak_pub.publicArea, msg, sizeof(msg),
							&s, &reason),
			     FLEET_OK);
	fb_free(&sig);
}

/* A certificate for another key: another TPM, or this one after its
 * endorsement seed was reset. Refused here, exit 13, nothing sent. */
static void test_ak_mismatch(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	issue_lak(&G.other_pub, f->lak_path, NULL);
	assert_int_equal(run(f, no_post, &res), TPM_REATTEST_EXIT_AK_MISMATCH);
	assert_int_equal(res.posts, 0);
	assert_non_null(strstr(res.message, "the TPM's AK is not the one the certificate names"));
	assert_false(clock_recorded(f));
}

/* No TPM: exit 12, nothing sent. */
static void test_no_tpm(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	f->cfg.tcti = "device:/nonexistent/tpmrm0";
	assert_int_equal(run(f, no_post, &res), TPM_REATTEST_EXIT_NO_TPM);
	assert_int_equal(res.posts, 0);
}

/* Local files: no LAK certificate, a file that is no certificate, no
 * event log: exit 14, nothing sent. */
static void test_local(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	char p[800];
	snprintf(p, sizeof(p), "%s/none.pem", f->dir);
	f->cfg.lak_cert = p;
	assert_int_equal(run(f, no_post, &res), TPM_REATTEST_EXIT_LOCAL);
	write_file(p, "not a certificate\n", 18);
	assert_int_equal(run(f, no_post, &res), TPM_REATTEST_EXIT_LOCAL);
	f->cfg.lak_cert = f->lak_path;
	snprintf(p, sizeof(p), "%s/no-log", f->dir);
	f->cfg.eventlog = p;
	assert_int_equal(run(f, no_post, &res), TPM_REATTEST_EXIT_LOCAL);
}

/* fleetd unreachable: exit 11 after the nonce request; no check sent. */
static void test_unreachable(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	assert_int_equal(run(f, down_post, &res), TPM_REATTEST_EXIT_UNREACHABLE);
	assert_int_equal(res.posts, 1);
	assert_false(clock_recorded(f));
}

/* A boot application the class profile does not allow: fleetd refuses,
 * authenticated; the client says refused (10). */
static void test_refused(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	char y[8192];
	const char *from = "1a8efbe3a5cf66bee3e538abfe89135d38b7510b1b8a6f2b5e105fe83d6c7d82";
	const char *at = strstr(G.profile_yaml, from);
	struct fleet_profile *p = NULL;
	assert_non_null(at);
	snprintf(y, sizeof(y), "%.*s%s%s", (int)(at - G.profile_yaml), G.profile_yaml,
		 "0000000000000000000000000000000000000000000000000000000000000000",
		 at + strlen(from));
	load_profile_text(y, &p);
	f->profile = p;
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_REFUSED);
	assert_int_equal(res.posts, 2);
	assert_int_equal(f->last.outcome, FLEET_REFUSED);
	assert_string_equal(f->last.reason, "boot-application-not-allowed");
	assert_true(f->res.authenticated);
	fleet_profile_free(p);
}

/* A LAK certificate of fleetd's CA that its store never recorded: the
 * nonce is issued (RA1 checks the CA), the check is refused
 * unauthenticated (lak-unknown) and nothing is written; the client says
 * refused. */
static void test_unknown_lak(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	issue_lak(&G.ak_pub, f->lak_path, NULL); /* same key, a new certificate */
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_REFUSED);
	assert_int_equal(res.posts, 2);
	assert_int_equal(f->last.outcome, FLEET_REFUSED);
	assert_string_equal(f->last.reason, "lak-unknown");
	assert_false(f->res.authenticated);
	assert_false(clock_recorded(f));
}

/* A LAK certificate of another CA: fleetd refuses the nonce (HTTP 403
 * here), the client says refused and sends no check. */
static void test_foreign_lak(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct fleet_errctx ec = {0};
	struct fleet_ca *other = NULL;
	char p[800];
	snprintf(p, sizeof(p), "%s/ca2", f->dir);
	assert_int_equal(fleet_ca_init(p, "Another CA", 3650, &ec), FLEET_OK);
	assert_int_equal(fleet_ca_load(p, &other, &ec), FLEET_OK);
	issue_lak_by(other, &G.ak_pub, f->lak_path, NULL);
	fleet_ca_free(other);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_REFUSED);
	assert_int_equal(res.posts, 1);
	assert_int_equal(f->last.outcome, FLEET_REFUSED);
	printf("  server (nonce): reason %s\n", f->last.reason);
	assert_false(clock_recorded(f));
}


/* ---- renewal --------------------------------------------------------------- */

/* The node 29 days before its certificates end: a LAK and a LDevID
 * certificate (for the admission's key, generation 0) in the store and in
 * the node's files. */
static void renew_setup(struct fx *f)
{
	struct fleet_wire_bytes der = {0};
	time_t nb = time(NULL) + 29 * 86400 - 365 * 86400;
	issue_cert(G.ca, FLEET_CERT_LAK, &G.ak_pub, nb, f->lak_path, &der);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LAK, der.data,
						 der.len, nb, NULL),
			 FLEET_OK);
	free(der.data);
	snprintf(f->ldevid_path, sizeof(f->ldevid_path), "%s/ldevid.pem", f->dir);
	issue_cert(G.ca, FLEET_CERT_LDEVID, &G.ldevid0_pub, nb, f->ldevid_path, &der);
	assert_int_equal(fleet_store_cert_insert(f->st, DEVICE, FLEET_STORE_CERT_LDEVID, der.data,
						 der.len, nb, NULL),
			 FLEET_OK);
	free(der.data);
	f->cfg.ldevid_cert = f->ldevid_path;
	f->cfg.renew_backoff_ms = 5;
	f->env.cert_validity_days = 90;
}

/* The PEM file's certificate key equals pub's; its notAfter into *end. */
static bool file_key_is(const char *path, const TPM2B_PUBLIC *pub, time_t *end)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	X509 *x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	assert_non_null(x);
	EVP_PKEY *k = NULL;
	assert_int_equal(fleet_tpm_public_to_pkey(&pub->publicArea, &k), FLEET_OK);
	bool same = EVP_PKEY_eq(X509_get0_pubkey(x), k) == 1;
	if (end) {
		struct tm tm;
		assert_int_equal(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm), 1);
		*end = timegm(&tm);
	}
	EVP_PKEY_free(k);
	X509_free(x);
	return same;
}

/* 29 days before the end: the run proves LDevID key 1 with the AK, fleetd
 * renews, and the node's two files now hold the new certificates (the LAK
 * for the same AK, the LDevID for key 1, 90 days). The next run is an
 * hourly check again (nothing due), with the new LAK. */
static void test_renew_due(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	time_t end = 0;
	renew_setup(f);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
	assert_true(res.renewal_due);
	assert_true(res.renewed);
	assert_int_equal(f->renew_posts, 1);
	assert_int_equal(f->renew.outcome, FLEET_PASSED);
	assert_true(file_key_is(f->ldevid_path, &G.ldevid1_pub, &end));
	assert_true(end > time(NULL) + 89 * 86400);
	assert_true(file_key_is(f->lak_path, &G.ak_pub, &end));
	assert_true(end > time(NULL) + 89 * 86400);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_PASS);
	assert_false(res.renewal_due);
	assert_false(res.renewed);
	assert_int_equal(f->renew_posts, 1);
}

static void snapshot(const char *path, struct fleet_buf *out)
{
	fb_init(out);
	read_file_or_fail(path, out);
}

static bool same_file(const char *path, const struct fleet_buf *was)
{
	struct fleet_buf now;
	snapshot(path, &now);
	bool same = now.len == was->len && memcmp(now.data, was->data, now.len) == 0;
	fb_free(&now);
	return same;
}

/* The node's two certificate files as they were, to prove a run left them. */
struct kept {
	struct fleet_buf lak, ld;
};
static void keep_files(struct fx *f, struct kept *k)
{
	snapshot(f->lak_path, &k->lak);
	snapshot(f->ldevid_path, &k->ld);
}
static void assert_files_kept(struct fx *f, struct kept *k)
{
	assert_true(same_file(f->lak_path, &k->lak));
	assert_true(same_file(f->ldevid_path, &k->ld));
	fb_free(&k->lak);
	fb_free(&k->ld);
}

/* A quarantined worker: fleetd passes the check and refuses the renewal;
 * the client says so (15) and keeps its files. */
static void test_renew_refused(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct kept k;
	renew_setup(f);
	keep_files(f, &k);
	assert_int_equal(fleet_store_device_set_quarantine(f->st, DEVICE, true, "reattest: test",
							   time(NULL)),
			 FLEET_OK);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_RENEWAL);
	assert_int_equal(f->renew.outcome, FLEET_REFUSED);
	assert_string_equal(f->renew.reason, "renew-quarantined");
	assert_false(res.renewed);
	assert_non_null(strstr(res.message, "refused the renewal"));
	assert_files_kept(f, &k);
}

static int owner_auth(const char *arg)
{
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "TPM2TOOLS_TCTI='%s' tpm2_changeauth -c owner %s >/dev/null 2>&1",
		 G.t.tcti, arg);
	return system(cmd);
}

/* A TPM that cannot make the next key (its owner hierarchy now has a
 * password the client does not know): the renewal fails after its
 * retries, no key file is ever written, nothing is sent to /renew, and the
 * hourly check still runs and passes (15: the renewal was not done). */
static void test_renew_tpm_cannot(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct kept k;
	renew_setup(f);
	keep_files(f, &k);
	if (owner_auth("fleet-test-owner") != 0) {
		fb_free(&k.lak);
		fb_free(&k.ld);
		skip(); /* tpm2_changeauth missing */
	}
	int rc = run(f, srv_post, &res);
	assert_int_equal(owner_auth("-p fleet-test-owner"), 0);
	assert_int_equal(rc, TPM_REATTEST_EXIT_RENEWAL);
	assert_true(res.renewal_due);
	assert_false(res.renewed);
	assert_int_equal(f->renew_posts, 0);
	assert_int_equal(f->last.outcome, FLEET_PASSED); /* the hourly check ran */
	assert_non_null(strstr(res.message, "renewal was not sent"));
	assert_non_null(strstr(res.message, "time left: 2")); /* 28 or 29 days */
	assert_non_null(strstr(res.message, " days "));
	assert_files_kept(f, &k);
	/* Only the two certificates and the store: no key file, no .new. */
	char cmd[900];
	snprintf(cmd, sizeof(cmd), "test \"$(ls '%s' | grep -v -e '^fleetd.db' -e '^lak.pem$' "
				   "-e '^ldevid.pem$' | wc -l)\" = 0", f->dir);
	assert_int_equal(system(cmd), 0);
}

/* fleetd (or whoever holds the pin's key) answers a renewal with a LDevID
 * certificate for another key: the client writes nothing (14), and its
 * old certificates stay as they were. */
static void test_renew_wrong_certs(void **state)
{
	struct fx *f = *state;
	struct tpm_reattest_result res;
	struct kept k;
	char other[800];
	renew_setup(f);
	keep_files(f, &k);
	snprintf(other, sizeof(other), "%s/other.pem", f->dir);
	issue_cert(G.ca, FLEET_CERT_LDEVID, &G.ldevid0_pub, time(NULL), other, &f->wrong_ldevid);
	assert_int_equal(run(f, srv_post, &res), TPM_REATTEST_EXIT_LOCAL);
	assert_false(res.renewed);
	assert_non_null(strstr(res.message, "not for this TPM's keys"));
	assert_files_kept(f, &k);
	free(f->wrong_ldevid.data);
}

int main(void)
{
	swtpm_require_or_skip();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_check_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sign_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ak_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_tpm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_lak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_lak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_tpm_cannot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_wrong_certs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
