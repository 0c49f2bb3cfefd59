/*
 * install.c: the installer's state, the drops and token deletions every
 * path shares, and the pass's reconciliation (install.h W1-W3).
 */
#include "fleetd/install/install_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fleetd/obs/journal.h"
#include "fleetd/provision/bootstrap_token.h"

time_t inst_now(const struct fleet_install *in)
{
	return in->d.now ? in->d.now(in->d.now_ctx) : time(NULL);
}

void inst_count(struct fleet_metric *m, const char *label)
{
	if (m)
		(void)fleet_metric_inc_label(m, label);
}

void inst_workflows_path(const struct fleet_install *in, char *out, size_t n)
{
	snprintf(out, n, "/apis/tinkerbell.org/v1alpha1/namespaces/%s/workflows",
		 in->d.config->provision_namespace);
}

void inst_workflow_path(const struct fleet_install *in, const char *name, char *out, size_t n)
{
	snprintf(out, n, "/apis/tinkerbell.org/v1alpha1/namespaces/%s/workflows/%s",
		 in->d.config->provision_namespace, name);
}

void inst_secret_path(const char *token_id, char *out, size_t n)
{
	snprintf(out, n, "/api/v1/namespaces/kube-system/secrets/bootstrap-token-%s", token_id);
}

static const char *const start_results[] = {"started", "not-wanted", "failed", NULL};
static const char *const drop_reasons[] = {"expired",     "workflow-deleted", "workflow-failed",
					   "start-failed", "superseded",      NULL};
static const char *const csr_results[] = {"approved", "refused", "not-ours", "issued",
					  "error",    NULL};

fleet_err fleet_install_new(const struct fleet_install_deps *d, struct fleet_install **out,
			    struct fleet_errctx *ec)
{
	*out = NULL;
	if (!d || !d->config || !d->classes || !d->store || !d->inventory || !d->kube || !d->ca)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "install: a dependency is missing");
	struct fleet_install *in = calloc(1, sizeof(*in));
	if (!in)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "install: out of memory");
	in->d = *d;
	pthread_mutex_init(&in->csr_mu, NULL);
	fleet_err e = FLEET_OK;
	if (d->metrics &&
	    ((e = fleet_metrics_register(d->metrics, FLEET_METRIC_COUNTER,
					 "fleetd_provision_start_total",
					 "Provisions after a confirm, by result.", "result",
					 start_results, &in->m_start, ec)) ||
	     (e = fleet_metrics_register(d->metrics, FLEET_METRIC_COUNTER,
					 "fleetd_provision_dropped_total",
					 "Provisions dropped and their code burned, by reason.",
					 "reason", drop_reasons, &in->m_drop, ec)) ||
	     (e = fleet_metrics_register(d->metrics, FLEET_METRIC_COUNTER,
					 "fleetd_kubelet_csr_total",
					 "Kubelet bootstrap CSRs looked at, by result.", "result",
					 csr_results, &in->m_csr, ec)))) {
		fleet_install_free(in);
		return e;
	}
	*out = in;
	return FLEET_OK;
}

void fleet_install_free(struct fleet_install *in)
{
	if (!in)
		return;
	if (in->watching) {
		in->stop = 1;
		pthread_join(in->watch, NULL);
	}
	pthread_mutex_destroy(&in->csr_mu);
	free(in);
}

void inst_drop(struct fleet_install *in, const struct fleet_store_provision *p,
	       const char *reason, bool delete_workflow)
{
	char id[24];
	snprintf(id, sizeof(id), "%lld", (long long)p->id);
	fleet_err e = fleet_store_provision_drop(in->d.store, p->id, reason, inst_now(in));
	if (e != FLEET_OK && e != FLEET_STORE_E_CONFLICT) {
		fleet_log(LOG_ERR, "provision-drop-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_PROVISION", id},
					   {"FLEET_REASON", reason}),
			  "the provision could not be dropped (%s: %s); the next pass tries again",
			  fleet_err_str(e), fleet_store_errmsg(in->d.store));
		return;
	}
	if (e == FLEET_OK) {
		inst_count(in->m_drop, reason);
		fleet_log(LOG_NOTICE, "provision-dropped",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_PROVISION", id},
					   {"FLEET_REASON", reason}),
			  "provision dropped (%s): its configuration deleted, its code burned",
			  reason);
	}
	if (!delete_workflow || !p->workflow[0])
		return;
	char path[512];
	struct fleet_errctx ec = {0};
	inst_workflow_path(in, p->workflow, path, sizeof(path));
	e = fleet_kube_delete(in->d.kube, path, &ec);
	if (e != FLEET_OK && e != FLEET_KUBE_E_NOT_FOUND) {
		char text[sizeof(ec.detail) + 80];
		fleet_log(LOG_WARNING, "workflow-delete-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_WORKFLOW", p->workflow}),
			  "the dropped provision's Workflow could not be deleted: %s",
			  fleet_errctx_text(&ec, text, sizeof(text)));
	}
}

bool inst_token_delete(struct fleet_install *in, const struct fleet_store_provision *p,
		       const char *why)
{
	char path[256];
	struct fleet_errctx ec = {0};
	inst_secret_path(p->token_id, path, sizeof(path));
	fleet_err e = fleet_kube_delete(in->d.kube, path, &ec);
	if (e != FLEET_OK && e != FLEET_KUBE_E_NOT_FOUND) {
		char text[sizeof(ec.detail) + 80];
		fleet_log(LOG_WARNING, "token-delete-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_TOKEN_ID", p->token_id}),
			  "the bootstrap token Secret could not be deleted (%s); the next pass "
			  "tries again",
			  fleet_errctx_text(&ec, text, sizeof(text)));
		return false;
	}
	e = fleet_store_provision_token_set(in->d.store, p->id, FLEET_TOKEN_DELETED);
	if (e != FLEET_OK) {
		fleet_log(LOG_ERR, "token-record-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_TOKEN_ID", p->token_id}),
			  "the token Secret is deleted but the store could not record it (%s); "
			  "the next pass deletes it again",
			  fleet_store_errmsg(in->d.store));
		return false;
	}
	fleet_log(LOG_NOTICE, "token-deleted",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_TOKEN_ID", p->token_id},
				   {"FLEET_REASON", why}),
		  "bootstrap token Secret bootstrap-token-%s deleted (%s)", p->token_id, why);
	return true;
}

void inst_workflow_state(json_t *wf, char *out, size_t n)
{
	json_t *st = json_object_get(wf, "status");
	const char *s = json_string_value(json_object_get(st, "state"));
	snprintf(out, n, "%s", s ? s : "");
}

/* Tinkerbell has spelt the states both ways: v1alpha1's WorkflowState is
 * "STATE_SUCCESS" etc. in older releases and "SUCCESS" in newer ones. */
bool inst_workflow_failed(const char *state, const char **reason)
{
	static const char *const bad[] = {"FAILED", "TIMEOUT", "STATE_FAILED", "STATE_TIMEOUT"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!strcmp(state, bad[i])) {
			*reason = "workflow-failed";
			return true;
		}
	return false;
}

/* Whether the Template's install action ran to success
 * (status.tasks[].actions[] named INSTALL_ACTION, state SUCCESS or
 * STATE_SUCCESS). */
#define INSTALL_ACTION "install-talos"
bool inst_workflow_installed(json_t *wf)
{
	json_t *tasks = json_object_get(json_object_get(wf, "status"), "tasks"), *t, *a;
	size_t i, j;
	json_array_foreach(tasks, i, t)
	{
		json_array_foreach(json_object_get(t, "actions"), j, a)
		{
			const char *n = json_string_value(json_object_get(a, "name"));
			const char *st = json_string_value(json_object_get(a, "state"));
			if (n && st && !strcmp(n, INSTALL_ACTION) &&
			    (!strcmp(st, "SUCCESS") || !strcmp(st, "STATE_SUCCESS")))
				return true;
		}
	}
	return false;
}

/* W1, W2 for one started provision. */
static void reconcile_started(struct fleet_install *in, const struct fleet_store_provision *p,
			      time_t now)
{
	if (now >= p->expires_at) {
		inst_drop(in, p, "expired", true);
		return;
	}
	char path[512], state[32];
	struct fleet_errctx ec = {0};
	json_t *wf = NULL;
	inst_workflow_path(in, p->workflow, path, sizeof(path));
	fleet_err e = fleet_kube_get(in->d.kube, path, &wf, &ec);
	if (e == FLEET_KUBE_E_NOT_FOUND) {
		inst_drop(in, p, "workflow-deleted", false);
		return;
	}
	if (e != FLEET_OK) /* the API not answering proves nothing: W2 */
		return;
	const char *reason = NULL;
	inst_workflow_state(wf, state, sizeof(state));
	bool installed = inst_workflow_installed(wf);
	json_decref(wf);
	/* A run that installed Talos and then failed or timed out (its
	 * reboot never reports success) still needs its configuration: the
	 * machine is about to fetch it. */
	if (inst_workflow_failed(state, &reason) && !installed)
		inst_drop(in, p, reason, false);
}

/* W3 for one provision that holds a token Secret. */
static void reconcile_token(struct fleet_install *in, const struct fleet_store_provision *p,
			    time_t now)
{
	if (p->token_state != FLEET_TOKEN_CREATED)
		return;
	bool expired = now >= p->expires_at + FLEET_BOOTSTRAP_TOKEN_GRACE;
	if (p->stage == FLEET_PROV_DROPPED) {
		inst_token_delete(in, p, "provision-dropped");
	} else if (p->stage == FLEET_PROV_DELIVERED && p->csr_issued) {
		if (inst_token_delete(in, p, "certificate-issued"))
			(void)fleet_store_provision_advance(in->d.store, p->id, FLEET_PROV_DELIVERED,
							    FLEET_PROV_DONE, now);
	} else if (expired) {
		if (inst_token_delete(in, p, "token-expired") && p->stage == FLEET_PROV_DELIVERED &&
		    fleet_store_provision_advance(in->d.store, p->id, FLEET_PROV_DELIVERED,
						  FLEET_PROV_DONE, now) == FLEET_OK) {
			char id[24];
			snprintf(id, sizeof(id), "%lld", (long long)p->id);
			if (p->csr_name[0])
				fleet_log(LOG_WARNING, "provision-no-certificate",
					  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device},
							   {"FLEET_PROVISION", id}),
					  "the configuration was delivered and CSR %s approved, but "
					  "no certificate was issued before the token expired",
					  p->csr_name);
			else
				fleet_log(LOG_WARNING, "provision-no-csr",
					  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device},
							   {"FLEET_PROVISION", id}),
					  "the configuration was delivered but no kubelet asked for "
					  "a certificate before the token expired");
		}
	}
}

/* W0: the inventory's status of p's device set active, unless it is. */
static void set_active(struct fleet_install *in, const struct fleet_store_provision *p)
{
	struct fleet_inventory *inv = in->d.inventory;
	struct fleet_inv_device d;
	struct fleet_errctx ec = {0};
	char text[sizeof(ec.detail) + 80];
	fleet_err e = inv->ops->find_by_serial(inv, p->serial, &d, &ec);
	if (e == FLEET_INV_OK && !strcmp(d.status, "active"))
		return;
	if (e == FLEET_INV_OK && strcmp(d.name, p->device) != 0)
		e = fleet_errctx_msg(&ec, FLEET_INV_INVALID,
				     "the inventory's device of serial %s is now %s", p->serial, d.name);
	if (e == FLEET_INV_OK)
		e = inv->ops->set_status(inv, d.id, "active", &ec);
	if (e != FLEET_INV_OK) {
		fleet_log(LOG_WARNING, "device-active-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}),
			  "the configuration was delivered but the inventory could not be set "
			  "active (%s); the next pass tries again",
			  fleet_errctx_text(&ec, text, sizeof(text)));
		return;
	}
	fleet_log(LOG_NOTICE, "device-active", FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}),
		  "configuration delivered: %s is active in the inventory", p->device);
}

void fleet_install_delivered(struct fleet_install *in, int64_t id)
{
	struct fleet_store_provision p;
	if (fleet_store_provision_get(in->d.store, id, &p) != FLEET_OK)
		return; /* the pass finds it */
	set_active(in, &p);
}

static void reconcile_csrs(struct fleet_install *in)
{
	char rv[64];
	struct fleet_errctx ec = {0};
	json_t *list = NULL;
	/* Only the kubelet signer's: nothing else is fleetd's to judge (A1). */
	fleet_err e = fleet_kube_list(in->d.kube,
				      "/apis/certificates.k8s.io/v1/certificatesigningrequests"
				      "?fieldSelector=spec.signerName%3Dkubernetes.io%2Fkube-apiserver-"
				      "client-kubelet",
				      &list, rv, sizeof(rv), &ec);
	if (e != FLEET_OK)
		return;
	json_t *items = json_is_array(list) ? list : json_object_get(list, "items");
	size_t i;
	json_t *c;
	json_array_foreach(items, i, c) fleet_install_csr(in, c);
	json_decref(list);
}

void fleet_install_reconcile(struct fleet_install *in, time_t now)
{
	struct fleet_store_provision *v = NULL;
	size_t n = 0;
	if (fleet_store_provisions_list(in->d.store, true, &v, &n) != FLEET_OK) {
		fleet_log(LOG_ERR, "provision-list-failed", NULL, 0,
			  "the open provisions could not be read: %s",
			  fleet_store_errmsg(in->d.store));
		return;
	}
	bool delivered = false;
	for (size_t i = 0; i < n; i++) {
		if (v[i].stage == FLEET_PROV_STARTED)
			reconcile_started(in, &v[i], now);
		else if (v[i].stage == FLEET_PROV_RENDERED && now >= v[i].expires_at)
			inst_drop(in, &v[i], "expired", true); /* a start that died midway */
		if (v[i].stage == FLEET_PROV_DELIVERED) {
			delivered = true;
			set_active(in, &v[i]);
		}
	}
	/* A4's second chance: approvals whose certificate came while nobody
	 * watched, approvals a crash interrupted. */
	if (delivered)
		reconcile_csrs(in);
	fleet_store_provisions_free(v, n);
	/* Read again: the steps above moved stages. */
	if (fleet_store_provisions_list(in->d.store, true, &v, &n) != FLEET_OK)
		return;
	for (size_t i = 0; i < n; i++)
		reconcile_token(in, &v[i], now);
	fleet_store_provisions_free(v, n);
}
