/*
 * test_install.c: fleetd/install/install.h's reconciliation and CSR rules
 * against a real store and the Kubernetes API contract fake
 * (tests/fakes/kube_apiserver_fake.py, v1.32, with bootstrap-token
 * authentication: each CSR below is created by the kubelet's own token, so
 * spec.username is what the API server sets).
 *
 *   csrs_approved_only_for_this_node_once    A1-A3: another node name, SANs,
 *       another signer, a CSR before delivery, a second CSR of the token:
 *       none approved; this node's first: approved, once
 *   certificate_deletes_the_token            A4: the certificate issued, the
 *       next pass deletes the token Secret; the provision is done
 *   kill9_between_approval_and_deletion      A3/A4: a fleetd killed after
 *       its approval; the next process's pass deletes the token
 *   the_watch_approves                       the CSR watch, not the pass
 *   expiry_and_workflows_drop_and_burn       W1-W3: expired, Workflow
 *       deleted, FAILED / STATE_TIMEOUT: dropped, the code burned, the
 *       token Secret deleted; a running Workflow left as it is
 *   start_refused_render_starts_nothing      S4: validate fails -> no row,
 *       no Secret, no Workflow
 *   start_failing_late_takes_everything_back S6/S8: the wrap fails after the
 *       Workflow was created -> the row dropped (burned), the Workflow and
 *       the Secret deleted; the worker's expiry 2 h, a control plane's 30 min
 *   start_controlplane_needs_its_owner       S1/P3: auto-provision never
 *       starts a control plane; not-wanted makes nothing
 *   csr_made_before_delivery_never_approved  A2: a CSR made with a token read
 *       before the GET stays refused once the run is delivered
 *   approval_by_someone_else_is_the_use      A5: recorded, token deleted,
 *       no second CSR approved
 *   secret_of_a_start_killed_midway_deleted  W1/W3: a rendered run left by a
 *       crash after its Secret was made: dropped at expiry, Secret deleted
 *   oversized_csr_does_not_stall_the_watch   K13: one CSR of 1.1 MiB, then
 *       a good one the watch still approves
 * (The whole start with a real TPM, through tink-attest, is the demo's:
 * tests/e2e/demo_fleet.sh.)
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/rand.h>

#include "fleetd/install/install.h"
#include "fleetd/inventory/nodes_file.h"
#include "fleetd/provision/bootstrap_token.h"
#include "fleetd/store/store.h"
#include "tests/e2e/kube_fixture.h"
#include "tests/testutil.h"

#define CSRS "/apis/certificates.k8s.io/v1/certificatesigningrequests"
#define SECRETS "/api/v1/namespaces/kube-system/secrets"
#define WORKFLOWS "/apis/tinkerbell.org/v1alpha1/namespaces/tinkerbell/workflows"

static struct fleet_config g_cfg;
static struct fleet_install_classes g_classes;
static struct fleet_store *g_st;
static struct fleet_kube *g_admin;
static struct fleet_ca *g_ca;
static char g_state[800];
static struct fleet_inventory *g_inv; /* the nodes file: every device below, planned */
static const char *const g_devices[] = {"worker-a", "worker-e", "worker-c", "worker-k",
					"worker-w", "worker-x", "worker-g", "worker-f",
					"worker-t", "worker-r", "worker-p", "worker-q", "worker-z",
					"worker-b", "worker-i"};

static struct fleet_kube *kube_as(const char *token)
{
	char text[2048], path[900];
	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
		 "    server: https://127.0.0.1:%d\n    certificate-authority: ca.pem\n"
		 "users:\n- name: u\n  user:\n    token: %s\n"
		 "contexts:\n- name: fake\n  context: {cluster: fake, user: u}\n"
		 "current-context: fake\n",
		 g_port, token);
	snprintf(path, sizeof(path), "%s/kubeconfig-%.6s", g_dir, token);
	write_text(path, text);
	struct fleet_kube_config cfg = {.kubeconfig = path};
	struct fleet_kube *k = NULL;
	struct fleet_errctx ec = {0};
	if (fleet_kube_open(&cfg, &k, &ec) != FLEET_OK)
		fail_msg("kube: %s", ec.detail);
	return k;
}

static struct fleet_install *installer(struct fleet_store *st, struct fleet_kube *k)
{
	struct fleet_install_deps d = {
		.config = &g_cfg,
		.classes = &g_classes,
		.store = st,
		.inventory = g_inv,
		.kube = k,
		.ca = g_ca,
	};
	struct fleet_install *in = NULL;
	struct fleet_errctx ec = {0};
	if (fleet_install_new(&d, &in, &ec) != FLEET_OK)
		fail_msg("install: %s", ec.detail);
	return in;
}

static int setup(void **state)
{
	start(state);
	fleet_config_defaults(&g_cfg);
	snprintf(g_state, sizeof(g_state), "%s/state", g_dir);
	assert_int_equal(mkdir(g_state, 0700), 0);
	snprintf(g_cfg.state_dir, sizeof(g_cfg.state_dir), "%.200s", g_state);
	struct fleet_errctx ec = {0};
	char cadir[900];
	snprintf(cadir, sizeof(cadir), "%s/ca", g_state);
	assert_int_equal(fleet_ca_init(cadir, "install test CA", 30, &ec), FLEET_OK);
	assert_int_equal(fleet_ca_load(cadir, &g_ca, &ec), FLEET_OK);
	assert_int_equal(fleet_store_open(g_state, FLEET_STORE_RW, &g_st, &ec), FLEET_OK);
	struct fleet_kube_config kc = {.kubeconfig = g_kubeconfig};
	assert_int_equal(fleet_kube_open(&kc, &g_admin, &ec), FLEET_OK);
	char nodes[900], entry[1024];
	snprintf(nodes, sizeof(nodes), "%s/nodes.yaml", g_dir);
	FILE *f = fopen(nodes, "w");
	assert_non_null(f);
	fputs("version: 1\nnodes:\n", f);
	for (size_t i = 0; i < sizeof(g_devices) / sizeof(g_devices[0]); i++) {
		snprintf(entry, sizeof(entry),
			 "  - name: %s\n    serial: %s\n    status: planned\n"
			 "    primary_ip4: 10.0.0.%zu\n    class: worker\n"
			 "    install_disk: /dev/nvme0n1\n    install_disk_serial: S%zu\n"
			 "    bmc_type: ipmi\n    tpm_version: \"2.0\"\n    amt: false\n"
			 "    secure_boot_expected: true\n    expected_port: Ethernet%zu\n",
			 g_devices[i], g_devices[i], i + 10, i, i);
		fputs(entry, f);
	}
	fclose(f);
	chmod(nodes, 0644);
	assert_int_equal(fleet_nodes_file_open(nodes, &g_inv, &ec), FLEET_OK);
	json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			       "metadata", "name", "tinkerbell");
	fleet_err e = fleet_kube_create(g_admin, "/api/v1/namespaces", ns, NULL, &ec);
	assert_true(e == FLEET_OK || e == FLEET_KUBE_E_EXISTS);
	json_decref(ns);
	return 0;
}

static int teardown(void **state)
{
	fleet_kube_close(g_admin);
	g_inv->ops->close(g_inv);
	fleet_install_classes_free(&g_classes);
	fleet_store_close(g_st);
	fleet_ca_free(g_ca);
	return stop_fake(state);
}

/* ---- provisions as the start (S5, S6) and the delivery leave them -------- */

struct prov {
	int64_t id;
	struct fleet_bootstrap_token tok;
	uint8_t code_hash[32];
};

enum upto { UPTO_STARTED, UPTO_DELIVERED };

static void make_provision(struct prov *p, const char *device, const char *workflow,
			   time_t created, time_t expires, enum upto upto)
{
	memset(p, 0, sizeof(*p));
	/* the admission's row, as the confirm leaves it */
	static int64_t inventory_id = 100;
	char ek[65];
	snprintf(ek, sizeof(ek), "%064lld", (long long)++inventory_id);
	assert_int_equal(fleet_store_device_record_admission(g_st, device, device, inventory_id, ek,
							     "", created),
			 FLEET_OK);
	assert_int_equal(fleet_bootstrap_token_new(&p->tok), FLEET_OK);
	assert_int_equal(RAND_bytes(p->code_hash, 32), 1);
	struct fleet_store_provision_in in = {
		.device = device,
		.serial = device,
		.role = "worker",
		.workflow = workflow,
		.token_id = p->tok.id,
		.code_hash = p->code_hash,
		.config = "version: v1alpha1\n",
		.config_len = 18,
		.now = created,
		.expires_at = expires,
	};
	assert_int_equal(fleet_store_provision_create(g_st, &in, &p->id), FLEET_OK);
	json_t *sec = fleet_bootstrap_secret(&p->tok, expires);
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_kube_create(g_admin, SECRETS, sec, NULL, &ec), FLEET_OK);
	json_decref(sec);
	assert_int_equal(fleet_store_provision_token_set(g_st, p->id, FLEET_TOKEN_CREATED), FLEET_OK);
	assert_int_equal(fleet_store_provision_advance(g_st, p->id, FLEET_PROV_RENDERED,
						       FLEET_PROV_STARTED, created),
			 FLEET_OK);
	if (upto == UPTO_DELIVERED)
		assert_int_equal(fleet_store_provision_consume(g_st, p->id, created + 1), FLEET_OK);
}

static bool secret_exists(const struct prov *p)
{
	char path[256];
	json_t *o = NULL;
	struct fleet_errctx ec = {0};
	snprintf(path, sizeof(path), SECRETS "/bootstrap-token-%s", p->tok.id);
	fleet_err e = fleet_kube_get(g_admin, path, &o, &ec);
	json_decref(o);
	assert_true(e == FLEET_OK || e == FLEET_KUBE_E_NOT_FOUND);
	return e == FLEET_OK;
}

/* A kubelet's CSR, created with the machine's own bootstrap token. */
static void kubelet_csr(const struct prov *p, const char *csr_name, const char *cn,
			const char *extra_openssl, const char *signer)
{
	sh("cd %s && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
	   " -keyout %s.key -out %s.csr -subj '/O=system:nodes/CN=%s' %s 2>/dev/null"
	   " && base64 -w0 %s.csr > %s.b64",
	   g_dir, csr_name, csr_name, cn, extra_openssl, csr_name, csr_name);
	char path[900], b64[8192];
	snprintf(path, sizeof(path), "%s/%s.b64", g_dir, csr_name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(b64, 1, sizeof(b64) - 1, f);
	fclose(f);
	b64[n] = '\0';
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:[s, s]}}", "apiVersion",
			      "certificates.k8s.io/v1", "kind", "CertificateSigningRequest",
			      "metadata", "name", csr_name, "spec", "request", b64, "signerName",
			      signer ? signer : "kubernetes.io/kube-apiserver-client-kubelet",
			      "usages", "digital signature", "client auth");
	struct fleet_kube *k = kube_as(p->tok.token);
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_kube_create(k, CSRS, o, NULL, &ec);
	if (e != FLEET_OK)
		fail_msg("CSR %s: %s", csr_name, ec.detail);
	json_decref(o);
	fleet_kube_close(k);
}

static bool approved(const char *csr_name)
{
	char path[512];
	json_t *o = NULL;
	struct fleet_errctx ec = {0};
	snprintf(path, sizeof(path), CSRS "/%s", csr_name);
	assert_int_equal(fleet_kube_get(g_admin, path, &o, &ec), FLEET_OK);
	json_t *conds = json_object_get(json_object_get(o, "status"), "conditions"), *c;
	size_t i;
	bool yes = false;
	json_array_foreach(conds, i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		yes |= t && !strcmp(t, "Approved");
	}
	json_decref(o);
	return yes;
}

static void issue_certificate(const char *csr_name)
{
	sh("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
	   " -keyout %s.crt.key -out %s.crt -days 1 -subj '/O=system:nodes/CN=issued' 2>/dev/null",
	   g_dir, csr_name, csr_name);
	char path[900], pem[8192];
	snprintf(path, sizeof(path), "%s/%s.crt", g_dir, csr_name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(pem, 1, sizeof(pem) - 1, f);
	fclose(f);
	pem[n] = '\0';
	json_t *body = json_pack("{s:s, s:s}", "name", csr_name, "certificate", pem);
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(fake("POST", "/_fake/certificate", text));
	free(text);
	json_decref(body);
}

static struct fleet_store_provision row(int64_t id)
{
	struct fleet_store_provision p;
	assert_int_equal(fleet_store_provision_get(g_st, id, &p), FLEET_OK);
	return p;
}

/* ---- the tests ------------------------------------------------------------ */

static void csrs_approved_only_for_this_node_once(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov a, early;
	make_provision(&a, "worker-a", "wf-a", now - 60, now + 3600, UPTO_DELIVERED);
	make_provision(&early, "worker-e", "wf-e", now - 60, now + 3600, UPTO_STARTED);
	struct fleet_install *in = installer(g_st, g_admin);

	kubelet_csr(&a, "a-other-node", "system:node:worker-b", "", NULL);
	kubelet_csr(&a, "a-sans", "system:node:worker-a",
		    "-addext subjectAltName=DNS:worker-a.folly.lan", NULL);
	kubelet_csr(&a, "a-other-signer", "system:node:worker-a", "",
		    "kubernetes.io/kube-apiserver-client");
	kubelet_csr(&early, "e-before-delivery", "system:node:worker-e", "", NULL);
	fleet_install_reconcile(in, now);
	assert_false(approved("a-other-node"));
	assert_false(approved("a-sans"));
	assert_false(approved("a-other-signer"));
	assert_false(approved("e-before-delivery"));
	assert_string_equal(row(a.id).csr_uid, ""); /* nothing spent the token */

	kubelet_csr(&a, "a-good", "system:node:worker-a", "", NULL);
	fleet_install_reconcile(in, now);
	assert_true(approved("a-good"));
	assert_string_equal(row(a.id).csr_name, "a-good");

	/* a second CSR of the same token, as good as the first: refused */
	kubelet_csr(&a, "a-second", "system:node:worker-a", "", NULL);
	fleet_install_reconcile(in, now);
	assert_false(approved("a-second"));
	assert_string_equal(row(a.id).csr_name, "a-good");
	fleet_install_free(in);
}

static void certificate_deletes_the_token(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov b;
	make_provision(&b, "worker-c", "wf-c", now - 60, now + 3600, UPTO_DELIVERED);
	struct fleet_install *in = installer(g_st, g_admin);
	kubelet_csr(&b, "c-good", "system:node:worker-c", "", NULL);
	fleet_install_reconcile(in, now);
	assert_true(approved("c-good"));
	/* W0: delivered, so active in the inventory too */
	struct fleet_inv_device d;
	struct fleet_errctx ec = {0};
	assert_int_equal(g_inv->ops->find_by_serial(g_inv, "worker-c", &d, &ec), FLEET_OK);
	assert_string_equal(d.status, "active");
	assert_int_equal(g_inv->ops->find_by_serial(g_inv, "worker-r", &d, &ec), FLEET_OK);
	assert_string_equal(d.status, "planned");
	assert_true(secret_exists(&b)); /* not before the certificate */
	issue_certificate("c-good");
	fleet_install_reconcile(in, now);
	assert_false(secret_exists(&b));
	struct fleet_store_provision r = row(b.id);
	assert_int_equal(r.stage, FLEET_PROV_DONE);
	assert_int_equal(r.token_state, FLEET_TOKEN_DELETED);
	assert_true(r.csr_issued);
	fleet_install_free(in);
}

static void kill9_between_approval_and_deletion(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov p;
	make_provision(&p, "worker-k", "wf-k", now - 60, now + 3600, UPTO_DELIVERED);
	kubelet_csr(&p, "k-good", "system:node:worker-k", "", NULL);
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* Another fleetd: its own store handle and client. It approves,
		 * says so, and is killed before anything deletes the token. */
		struct fleet_store *st = NULL;
		struct fleet_kube *k = NULL;
		struct fleet_errctx ec = {0};
		struct fleet_kube_config kc = {.kubeconfig = g_kubeconfig};
		if (fleet_store_open(g_state, FLEET_STORE_RW, &st, &ec) != FLEET_OK ||
		    fleet_kube_open(&kc, &k, &ec) != FLEET_OK)
			_exit(2);
		struct fleet_install *in = installer(st, k);
		fleet_install_reconcile(in, now);
		if (write(ready[1], "x", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(ready[1]);
	char x;
	assert_int_equal(read(ready[0], &x, 1), 1);
	close(ready[0]);
	kill(child, SIGKILL);
	int status;
	waitpid(child, &status, 0);
	assert_true(WIFSIGNALED(status));
	assert_true(approved("k-good"));
	assert_true(secret_exists(&p));
	assert_string_equal(row(p.id).csr_name, "k-good");
	/* the signer issues while no fleetd runs; the next one's pass finishes */
	issue_certificate("k-good");
	struct fleet_install *in = installer(g_st, g_admin);
	fleet_install_reconcile(in, now);
	assert_false(secret_exists(&p));
	assert_int_equal(row(p.id).stage, FLEET_PROV_DONE);
	fleet_install_free(in);
}

static void the_watch_approves(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov p;
	make_provision(&p, "worker-w", "wf-w", now - 60, now + 3600, UPTO_DELIVERED);
	struct fleet_install *in = installer(g_st, g_admin);
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_install_watch_start(in, &ec), FLEET_OK);
	kubelet_csr(&p, "w-good", "system:node:worker-w", "", NULL);
	bool ok = false;
	for (int i = 0; i < 100 && !ok; i++) {
		ok = approved("w-good");
		if (!ok)
			usleep(100000);
	}
	assert_true(ok);
	issue_certificate("w-good");
	ok = false;
	for (int i = 0; i < 100 && !ok; i++) {
		ok = !secret_exists(&p);
		if (!ok)
			usleep(100000);
	}
	assert_true(ok); /* A4 from the MODIFIED event, no pass */
	fleet_install_free(in); /* joins the watch */
}

static void make_workflow_ex(const char *name, const char *state, const char *install_state);
static void make_workflow(const char *name, const char *state)
{
	make_workflow_ex(name, state, NULL);
}

static void make_workflow_ex(const char *name, const char *state, const char *install_state)
{
	json_t *wf = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "apiVersion",
			       "tinkerbell.org/v1alpha1", "kind", "Workflow", "metadata", "name",
			       name, "namespace", "tinkerbell", "spec", "templateRef",
			       "fleet-install", "hardwareRef", name);
	json_t *created = NULL;
	struct fleet_errctx ec = {0};
	if (fleet_kube_create(g_admin, WORKFLOWS, wf, &created, &ec) != FLEET_OK)
		fail_msg("workflow: %s", ec.detail);
	json_decref(wf);
	if (state) {
		json_t *st = json_pack("{s:s}", "state", state);
		if (install_state)
			json_object_set_new(
				st, "tasks",
				json_pack("[{s:s, s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}]",
					  "id", "t1", "agentID", "52:54:00:aa:bb:cc", "name", "install",
					  "actions", "id", "a3", "name", "install-talos", "state",
					  install_state, "id", "a4", "name", "reboot", "state",
					  "STATE_TIMEOUT"));
		json_object_set_new(created, "status", st);
		char path[512];
		snprintf(path, sizeof(path), WORKFLOWS "/%s/status", name);
		char *text = json_dumps(created, JSON_COMPACT);
		long status = 0;
		struct fleet_buf resp;
		fb_init(&resp);
		assert_int_equal(fleet_kube_request(g_admin, "PUT", path, "application/json", text,
						    strlen(text), &status, &resp, &ec),
				 FLEET_OK);
		assert_int_equal(status, 200);
		fb_free(&resp);
		free(text);
	}
	json_decref(created);
}

static void expect_dropped(const struct prov *p, const char *reason, time_t now)
{
	struct fleet_store_provision r = row(p->id);
	assert_int_equal(r.stage, FLEET_PROV_DROPPED);
	assert_string_equal(r.stop_reason, reason);
	int64_t id = 0;
	struct fleet_buf cfg;
	fb_init(&cfg);
	assert_int_equal(fleet_store_provision_config_for_code(g_st, p->code_hash, now, &id, &cfg),
			 FLEET_STORE_E_STATE); /* burned */
	fb_free(&cfg);
	assert_false(secret_exists(p)); /* W3 */
}

static void expiry_and_workflows_drop_and_burn(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov expired, gone, failed, timeout, running;
	make_workflow("wf-expired", "STATE_RUNNING");
	make_provision(&expired, "worker-x", "wf-expired", now - 7300, now - 100, UPTO_STARTED);
	make_provision(&gone, "worker-g", "wf-gone", now - 60, now + 3600, UPTO_STARTED);
	make_workflow("wf-failed", "FAILED");
	make_provision(&failed, "worker-f", "wf-failed", now - 60, now + 3600, UPTO_STARTED);
	make_workflow("wf-timeout", "STATE_TIMEOUT");
	make_provision(&timeout, "worker-t", "wf-timeout", now - 60, now + 3600, UPTO_STARTED);
	make_workflow("wf-running", "STATE_RUNNING");
	make_provision(&running, "worker-r", "wf-running", now - 60, now + 3600, UPTO_STARTED);
	/* timed out in its reboot, after Talos was installed: kept */
	struct prov rebooted;
	make_workflow_ex("wf-rebooted", "STATE_TIMEOUT", "STATE_SUCCESS");
	make_provision(&rebooted, "worker-i", "wf-rebooted", now - 60, now + 3600, UPTO_STARTED);

	struct fleet_install *in = installer(g_st, g_admin);
	fleet_install_reconcile(in, now);
	expect_dropped(&expired, "expired", now);
	expect_dropped(&gone, "workflow-deleted", now);
	expect_dropped(&failed, "workflow-failed", now);
	expect_dropped(&timeout, "workflow-failed", now);
	/* W1 deleted the expired one's Workflow */
	json_t *o = NULL;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_kube_get(g_admin, WORKFLOWS "/wf-expired", &o, &ec),
			 FLEET_KUBE_E_NOT_FOUND);
	/* the running one is left as it is, its code still serving */
	assert_int_equal(row(running.id).stage, FLEET_PROV_STARTED);
	assert_int_equal(row(rebooted.id).stage, FLEET_PROV_STARTED);
	assert_true(secret_exists(&running));
	int64_t id = 0;
	struct fleet_buf cfg;
	fb_init(&cfg);
	assert_int_equal(fleet_store_provision_config_for_code(g_st, running.code_hash, now, &id, &cfg),
			 FLEET_OK);
	assert_int_equal(id, running.id);
	fb_free_secret(&cfg);
	fleet_install_free(in);
}

/* ---- what an adversarial review found ---------------------------------- */

static void csr_made_before_delivery_never_approved(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov p;
	make_workflow("wf-p", "STATE_RUNNING");
	make_provision(&p, "worker-p", "wf-p", now - 60, now + 3600, UPTO_STARTED);
	struct fleet_install *in = installer(g_st, g_admin);
	kubelet_csr(&p, "p-early", "system:node:worker-p", "", NULL);
	fleet_install_reconcile(in, now);
	assert_false(approved("p-early"));
	/* the GET two minutes later; the CSR made before it is still refused */
	assert_int_equal(fleet_store_provision_consume(g_st, p.id, now + 120), FLEET_OK);
	fleet_install_reconcile(in, now + 120);
	assert_false(approved("p-early"));
	assert_string_equal(row(p.id).csr_name, "");
	fleet_install_free(in);
}

static void approval_by_someone_else_is_the_use(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov p;
	make_provision(&p, "worker-q", "wf-q", now - 60, now + 3600, UPTO_DELIVERED);
	struct fleet_install *in = installer(g_st, g_admin);
	kubelet_csr(&p, "q-first", "system:node:worker-q", "", NULL);
	json_t *o = NULL;
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_kube_get(g_admin, CSRS "/q-first", &o, &ec), FLEET_OK);
	assert_int_equal(fleet_kube_csr_approve(g_admin, o, "Other", "someone else", &ec), FLEET_OK);
	json_decref(o);
	issue_certificate("q-first");
	/* a second CSR of the token, while it still authenticates */
	kubelet_csr(&p, "q-second", "system:node:worker-q", "", NULL);
	fleet_install_reconcile(in, now);
	assert_string_equal(row(p.id).csr_name, "q-first");
	assert_false(approved("q-second"));
	assert_false(secret_exists(&p));
	assert_int_equal(row(p.id).stage, FLEET_PROV_DONE);
	fleet_install_reconcile(in, now);
	assert_false(approved("q-second"));
	fleet_install_free(in);
}

static void secret_of_a_start_killed_midway_deleted(void **state)
{
	(void)state;
	time_t now = time(NULL);
	char ek[65];
	snprintf(ek, sizeof(ek), "%064d", 4242);
	assert_int_equal(fleet_store_device_record_admission(g_st, "worker-z", "worker-z", 4242, ek,
							     "", now - 7300),
			 FLEET_OK);
	struct prov p;
	memset(&p, 0, sizeof(p));
	assert_int_equal(fleet_bootstrap_token_new(&p.tok), FLEET_OK);
	assert_int_equal(RAND_bytes(p.code_hash, 32), 1);
	struct fleet_store_provision_in pin = {
		.device = "worker-z", .serial = "worker-z", .role = "worker", .workflow = "wf-z",
		.token_id = p.tok.id, .code_hash = p.code_hash, .config = "version: v1alpha1\n",
		.config_len = 18, .now = now - 7300, .expires_at = now - 100,
	};
	/* S5 and S6 as the start does them: the Secret recorded, then made,
	 * then fleetd killed before the Workflow */
	assert_int_equal(fleet_store_provision_create(g_st, &pin, &p.id), FLEET_OK);
	assert_int_equal(fleet_store_provision_token_set(g_st, p.id, FLEET_TOKEN_CREATED), FLEET_OK);
	json_t *sec = fleet_bootstrap_secret(&p.tok, now + 3600);
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_kube_create(g_admin, SECRETS, sec, NULL, &ec), FLEET_OK);
	json_decref(sec);
	struct fleet_install *in = installer(g_st, g_admin);
	fleet_install_reconcile(in, now);
	struct fleet_store_provision r = row(p.id);
	assert_int_equal(r.stage, FLEET_PROV_DROPPED);
	assert_string_equal(r.stop_reason, "expired");
	assert_false(secret_exists(&p));
	assert_int_equal(r.token_state, FLEET_TOKEN_DELETED);
	fleet_install_free(in);
}

static void oversized_csr_does_not_stall_the_watch(void **state)
{
	(void)state;
	time_t now = time(NULL);
	struct prov p;
	make_provision(&p, "worker-b", "wf-b", now - 60, now + 3600, UPTO_DELIVERED);
	struct fleet_install *in = installer(g_st, g_admin);
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_install_watch_start(in, &ec), FLEET_OK);
	usleep(1500000); /* the watch has listed */
	/* a valid request and 1.1 MiB after it (Go's pem.Decode reads the
	 * first block, so the API server takes it) */
	sh("cd %s && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
	   " -keyout big.key -out big.csr -subj '/O=system:nodes/CN=system:node:x' 2>/dev/null"
	   " && head -c 1150000 /dev/zero | tr '\\0' 'A' >> big.csr && base64 -w0 big.csr > big.b64",
	   g_dir);
	char path[900];
	snprintf(path, sizeof(path), "%s/big.b64", g_dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *b64 = malloc(2000000);
	assert_non_null(b64);
	size_t n = fread(b64, 1, 2000000 - 1, f);
	fclose(f);
	b64[n] = '\0';
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:[s, s]}}", "apiVersion",
			      "certificates.k8s.io/v1", "kind", "CertificateSigningRequest",
			      "metadata", "name", "aaa-big", "spec", "request", b64, "signerName",
			      "kubernetes.io/kube-apiserver-client-kubelet", "usages",
			      "digital signature", "client auth");
	free(b64);
	assert_int_equal(fleet_kube_create(g_admin, CSRS, o, NULL, &ec), FLEET_OK);
	json_decref(o);
	kubelet_csr(&p, "b-good", "system:node:worker-b", "", NULL);
	bool ok = false;
	for (int i = 0; i < 150 && !ok; i++) {
		ok = approved("b-good");
		if (!ok)
			usleep(100000);
	}
	assert_true(ok);
	fleet_install_free(in);
}

/* ---- the start (S1-S8) with the talosctl contract fake ------------------- */

static char g_talosctl[900];
#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static bool start_setup(void)
{
	static int ready = -1;
	if (ready >= 0)
		return ready;
	ready = 0;
	char schema[900];
	snprintf(schema, sizeof(schema), "%s/../shared/contracts/talos/config.schema.json",
		 FLEET_SOURCE_DIR);
	if (access(schema, R_OK) != 0) {
		printf("(no Talos schema at %s: the start tests are skipped)\n", schema);
		return false;
	}
	snprintf(g_talosctl, sizeof(g_talosctl), "%s/talosctl", g_dir);
	char text[2048];
	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "if [ \"$1\" = validate ] && [ -f '%s/fail-validate' ]; then\n"
		 "  echo '1 error occurred: machine.install.disk: invalid' >&2; exit 1\n"
		 "fi\n"
		 "exec /usr/bin/python3 '%s/tests/fakes/talosctl_fake.py' \"$@\"\n",
		 g_dir, FLEET_SOURCE_DIR);
	write_text(g_talosctl, text);
	chmod(g_talosctl, 0755);
	snprintf(g_cfg.provision_talosctl, sizeof(g_cfg.provision_talosctl), "%.200s", g_talosctl);
	snprintf(g_cfg.provision_secrets_file, sizeof(g_cfg.provision_secrets_file),
		 "%.200s/secrets.yaml", g_dir);
	sh("'%s' gen secrets -o '%s' >/dev/null", g_talosctl, g_cfg.provision_secrets_file);
	snprintf(g_cfg.provision_tools_image, sizeof(g_cfg.provision_tools_image),
		 "ghcr.io/folly/fleet-tools@%s", DIGEST);
	snprintf(g_cfg.provision_config_host, sizeof(g_cfg.provision_config_host), "fleetd:8443");
	static const char cls[] =
		"{\"version\": 1, \"classes\": {"
		" \"worker\": {\"role\": \"worker\", \"talos_version\": \"v1.13.9\","
		"  \"image\": \"ghcr.io/folly/installer\", \"digest\": \"" DIGEST "\"},"
		" \"cp\": {\"role\": \"controlplane\", \"talos_version\": \"v1.13.9\","
		"  \"image\": \"ghcr.io/folly/installer\", \"digest\": \"" DIGEST "\"}}}";
	static const char inputs[] =
		"{\"version\": 1, \"classes\": {"
		" \"worker\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan:6443\","
		"  \"kubernetes_version\": \"1.32.4\"},"
		" \"cp\": {\"cluster_name\": \"folly\", \"endpoint\": \"https://folly.lan:6443\","
		"  \"kubernetes_version\": \"1.32.4\"}}}";
	struct fleet_errctx ec = {0};
	fleet_install_classes_free(&g_classes);
	if (fleet_install_classes_parse(cls, strlen(cls), inputs, strlen(inputs), &g_classes, &ec))
		fail_msg("classes: %s", ec.detail);
	ready = 1;
	return true;
}

static void hardware(const char *name)
{
	json_t *hw = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:{s:s}}]}}", "apiVersion",
			       "tinkerbell.org/v1alpha1", "kind", "Hardware", "metadata", "name",
			       name, "namespace", "tinkerbell", "spec", "interfaces", "dhcp", "mac",
			       "52:54:00:aa:bb:cc");
	struct fleet_errctx ec = {0};
	if (fleet_kube_create(g_admin,
			      "/apis/tinkerbell.org/v1alpha1/namespaces/tinkerbell/hardware", hw,
			      NULL, &ec) != FLEET_OK)
		fail_msg("hardware: %s", ec.detail);
	json_decref(hw);
}

static struct fleet_inv_device machine(const char *name, const char *cls, const char *action)
{
	struct fleet_inv_device d;
	memset(&d, 0, sizeof(d));
	d.id = 1;
	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.serial, sizeof(d.serial), "%s", name);
	snprintf(d.status, sizeof(d.status), "planned");
	snprintf(d.class_name, sizeof(d.class_name), "%s", cls);
	snprintf(d.install_disk_serial, sizeof(d.install_disk_serial), "S4EVNF0M123456");
	snprintf(d.desired_action, sizeof(d.desired_action), "%s", action);
	char ek[65];
	snprintf(ek, sizeof(ek), "%064d", (int)strlen(name) * 7 + name[strlen(name) - 1]);
	assert_int_equal(fleet_store_device_record_admission(g_st, name, name, 900 + name[7], ek, "",
							     time(NULL)),
			 FLEET_OK);
	return d;
}

/* What the API holds: count of Workflows (hardwareRef name) and Secrets. */
static size_t objects(const char *path, const char *field, const char *value)
{
	json_t *list = NULL;
	char rv[64];
	struct fleet_errctx ec = {0};
	assert_int_equal(fleet_kube_list(g_admin, path, &list, rv, sizeof(rv), &ec), FLEET_OK);
	size_t i, n = 0;
	json_t *o;
	json_array_foreach(list, i, o)
	{
		const char *v = json_string_value(json_object_get(json_object_get(o, "spec"), field));
		if (!field || (v && !strcmp(v, value)))
			n++;
	}
	json_decref(list);
	return n;
}

static size_t provisions_of(const char *device, struct fleet_store_provision *last)
{
	struct fleet_store_provision *v = NULL;
	size_t n = 0, k = 0;
	assert_int_equal(fleet_store_provisions_list(g_st, false, &v, &n), FLEET_OK);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].device, device)) {
			k++;
			if (last)
				*last = v[i];
		}
	fleet_store_provisions_free(v, n);
	return k;
}

static void start_refused_render_starts_nothing(void **state)
{
	(void)state;
	if (!start_setup())
		return;
	hardware("worker-s");
	struct fleet_inv_device d = machine("worker-s", "worker", "provision");
	struct fleet_attest_session s;
	memset(&s, 0, sizeof(s));
	struct fleet_install_machine m = {.dev = &d, .session = &s};
	struct fleet_wire_confirm_reply cr;
	memset(&cr, 0, sizeof(cr));
	char path[900];
	snprintf(path, sizeof(path), "%s/fail-validate", g_dir);
	write_text(path, "");
	size_t secrets_before = objects(SECRETS, NULL, NULL);
	struct fleet_install *in = installer(g_st, g_admin);
	const char *why = NULL;
	char detail[512];
	assert_int_equal(fleet_install_start(in, &m, &cr, &why, detail, sizeof(detail)),
			 FLEET_INSTALL_FAILED);
	unlink(path);
	assert_string_equal(why, "render-refused");
	assert_non_null(strstr(detail, "validate-failed"));
	assert_false(cr.has_provision);
	assert_int_equal(provisions_of("worker-s", NULL), 0);
	assert_int_equal(objects(WORKFLOWS, "hardwareRef", "worker-s"), 0);
	assert_int_equal(objects(SECRETS, NULL, NULL), secrets_before);
	fleet_install_free(in);
}

static void start_failing_late_takes_everything_back(void **state)
{
	(void)state;
	if (!start_setup())
		return;
	static const struct {
		const char *name, *cls;
		int64_t ttl;
	} v[] = {{"worker-l", "worker", 7200}, {"cp-l0001", "cp", 1800}};
	for (size_t i = 0; i < 2; i++) {
		hardware(v[i].name);
		struct fleet_inv_device d = machine(v[i].name, v[i].cls, "provision");
		/* a session that never confirmed: the wrap (S8) refuses it, after
		 * the Secret and the Workflow were made */
		struct fleet_attest_session s;
		memset(&s, 0, sizeof(s));
		struct fleet_install_machine m = {.dev = &d, .session = &s};
		struct fleet_wire_confirm_reply cr;
		memset(&cr, 0, sizeof(cr));
		size_t secrets_before = objects(SECRETS, NULL, NULL);
		struct fleet_install *in = installer(g_st, g_admin);
		const char *why = NULL;
		assert_int_equal(fleet_install_start(in, &m, &cr, &why, NULL, 0),
				 FLEET_INSTALL_FAILED);
		assert_string_equal(why, "wrap-failed");
		assert_false(cr.has_provision);
		struct fleet_store_provision p;
		assert_int_equal(provisions_of(v[i].name, &p), 1);
		assert_int_equal(p.stage, FLEET_PROV_DROPPED);
		assert_string_equal(p.stop_reason, "start-failed");
		assert_int_equal(p.expires_at - p.created_at, v[i].ttl); /* 2 h / 30 min */
		assert_int_equal(objects(WORKFLOWS, "hardwareRef", v[i].name), 0);
		assert_int_equal(objects(SECRETS, NULL, NULL), secrets_before);
		/* the run had started: a worker with auto-provision is not
		 * installed again by it */
		bool ran = false;
		assert_int_equal(fleet_store_provision_ever_started(g_st, v[i].name, &ran), FLEET_OK);
		assert_true(ran);
		fleet_install_free(in);
	}
}

static void start_controlplane_needs_its_owner(void **state)
{
	(void)state;
	if (!start_setup())
		return;
	hardware("cp-n0001");
	struct fleet_inv_device d = machine("cp-n0001", "cp", "");
	struct fleet_attest_session s;
	memset(&s, 0, sizeof(s));
	struct fleet_install_machine m = {.dev = &d, .session = &s};
	struct fleet_wire_confirm_reply cr;
	memset(&cr, 0, sizeof(cr));
	g_cfg.provision_auto = true;
	struct fleet_install *in = installer(g_st, g_admin);
	const char *why = NULL;
	assert_int_equal(fleet_install_start(in, &m, &cr, &why, NULL, 0), FLEET_INSTALL_NONE);
	assert_string_equal(why, "controlplane-needs-owner");
	assert_int_equal(provisions_of("cp-n0001", NULL), 0);
	assert_int_equal(objects(WORKFLOWS, "hardwareRef", "cp-n0001"), 0);
	g_cfg.provision_auto = false;
	fleet_install_free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(csrs_approved_only_for_this_node_once),
		cmocka_unit_test(certificate_deletes_the_token),
		cmocka_unit_test(kill9_between_approval_and_deletion),
		cmocka_unit_test(the_watch_approves),
		cmocka_unit_test(expiry_and_workflows_drop_and_burn),
		cmocka_unit_test(csr_made_before_delivery_never_approved),
		cmocka_unit_test(approval_by_someone_else_is_the_use),
		cmocka_unit_test(secret_of_a_start_killed_midway_deleted),
		cmocka_unit_test(oversized_csr_does_not_stall_the_watch),
		cmocka_unit_test(start_refused_render_starts_nothing),
		cmocka_unit_test(start_failing_late_takes_everything_back),
		cmocka_unit_test(start_controlplane_needs_its_owner),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
