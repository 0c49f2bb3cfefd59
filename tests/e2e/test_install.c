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
					"worker-t", "worker-r"};

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

static void make_workflow(const char *name, const char *state)
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
		json_object_set_new(created, "status", json_pack("{s:s}", "state", state));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(csrs_approved_only_for_this_node_once),
		cmocka_unit_test(certificate_deletes_the_token),
		cmocka_unit_test(kill9_between_approval_and_deletion),
		cmocka_unit_test(the_watch_approves),
		cmocka_unit_test(expiry_and_workflows_drop_and_burn),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
