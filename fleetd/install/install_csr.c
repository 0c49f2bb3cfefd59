/*
 * install_csr.c: which kubelet bootstrap CSR fleetd approves, once per
 * token, and the watch that brings them (install.h A1-A4).
 */
#include "fleetd/install/install_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "fleetd/obs/journal.h"
#include "fleetd/provision/bootstrap_token.h"
#include "fleetd/provision/kubelet_csr.h"
#include "lib/attest_wire.h"
#include "lib/sanitize.h"

#define CSR_PATH "/apis/certificates.k8s.io/v1/certificatesigningrequests"
#define BOOTSTRAP_USER "system:bootstrap:"

static const char *str_at(json_t *o, const char *a, const char *b)
{
	json_t *x = json_object_get(o, a);
	return json_string_value(b ? json_object_get(x, b) : x);
}

/* Approved or Denied among status.conditions (type, status "True"). */
static bool csr_condition(json_t *csr, const char *type)
{
	json_t *conds = json_object_get(json_object_get(csr, "status"), "conditions");
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && !strcmp(t, type) && (!s || !strcmp(s, "True")))
			return true;
	}
	return false;
}

/* metadata.creationTimestamp, RFC 3339 in UTC as the API server writes it
 * ("2026-12-01T19:41:17Z"). */
static bool csr_created(json_t *csr, time_t *out)
{
	const char *t = str_at(csr, "metadata", "creationTimestamp");
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!t || strlen(t) != 20)
		return false;
	const char *end = strptime(t, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return false;
	*out = timegm(&tm);
	return *out > 0;
}

static bool csr_has_certificate(json_t *csr)
{
	const char *c = str_at(csr, "status", "certificate");
	return c && c[0];
}

/* A refusal is journaled once per CSR uid (a watch replays the same
 * object on every relist and every MODIFIED event). */
static bool first_refusal(struct fleet_install *in, const char *uid)
{
	for (unsigned i = 0; i < INSTALL_REFUSED_MEMORY; i++)
		if (!strcmp(in->refused[i], uid))
			return false;
	snprintf(in->refused[in->refused_next], sizeof(in->refused[0]), "%s", uid);
	in->refused_next = (in->refused_next + 1) % INSTALL_REFUSED_MEMORY;
	return true;
}

static void refuse(struct fleet_install *in, const struct fleet_store_provision *p,
		   const char *name, const char *uid, const char *reason)
{
	if (!first_refusal(in, uid))
		return;
	inst_count(in->m_csr, "refused");
	char shown[FLEET_SANITIZE_BUF(64)];
	fleet_sanitize(name, strlen(name), shown, sizeof(shown), 64);
	fleet_log(LOG_WARNING, "csr-refused",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_TOKEN_ID", p->token_id},
				   {"FLEET_REASON", reason}, {"FLEET_CSR", shown}),
		  "kubelet CSR %s with this machine's bootstrap token is not approved (%s)",
		  shown, reason);
}

/* A4: the CSR fleetd approved has its certificate: the token goes. */
static void issued(struct fleet_install *in, const struct fleet_store_provision *p)
{
	if (!p->csr_issued && fleet_store_provision_csr_issued(in->d.store, p->id) != FLEET_OK)
		return; /* the next pass sees it again */
	if (!p->csr_issued)
		inst_count(in->m_csr, "issued");
	if (p->token_state == FLEET_TOKEN_CREATED && !inst_token_delete(in, p, "certificate-issued"))
		return;
	(void)fleet_store_provision_advance(in->d.store, p->id, FLEET_PROV_DELIVERED,
					    FLEET_PROV_DONE, inst_now(in));
}

static fleet_err approve(struct fleet_install *in, const struct fleet_store_provision *p,
			 json_t *csr, const char *name)
{
	struct fleet_errctx ec = {0};
	char text[sizeof(ec.detail) + 80];
	fleet_err e = fleet_kube_csr_approve(in->d.kube, csr, "FleetdApproved",
					     "fleetd: the bootstrap token of the machine this node "
					     "name was installed on, used once",
					     &ec);
	if (e != FLEET_OK) {
		inst_count(in->m_csr, "error");
		fleet_log(LOG_WARNING, "csr-approve-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_TOKEN_ID", p->token_id}),
			  "the approval of CSR %s is recorded but the API did not take it (%s); "
			  "the next pass approves it again",
			  name, fleet_errctx_text(&ec, text, sizeof(text)));
		return e;
	}
	inst_count(in->m_csr, "approved");
	fleet_log(LOG_NOTICE, "csr-approved",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", p->device}, {"FLEET_TOKEN_ID", p->token_id}),
		  "kubelet CSR %s approved for node %s: the token's one approval", name, p->device);
	return FLEET_OK;
}

static void csr_locked(struct fleet_install *in, json_t *csr)
{
	/* A1 */
	const char *signer = str_at(csr, "spec", "signerName");
	const char *user = str_at(csr, "spec", "username");
	const char *name = str_at(csr, "metadata", "name");
	const char *uid = str_at(csr, "metadata", "uid");
	if (!signer || strcmp(signer, FLEET_KUBELET_SIGNER) || !user ||
	    strncmp(user, BOOTSTRAP_USER, strlen(BOOTSTRAP_USER)) || !name || !uid || !uid[0] ||
	    strlen(uid) >= 64 || strlen(name) >= 254)
		return;
	const char *id = user + strlen(BOOTSTRAP_USER);
	if (strlen(id) != 6)
		return;
	struct fleet_store_provision p;
	if (fleet_store_provision_by_token(in->d.store, id, &p) != FLEET_OK) {
		inst_count(in->m_csr, "not-ours");
		return;
	}
	bool approved = csr_condition(csr, "Approved");
	bool denied = csr_condition(csr, "Denied") || csr_condition(csr, "Failed");

	/* A3: the token's one approval is this CSR, or no other. */
	if (p.csr_uid[0]) {
		if (strcmp(p.csr_uid, uid) != 0) {
			if (!approved)
				refuse(in, &p, name, uid, "csr-second");
			return;
		}
		if (approved && csr_has_certificate(csr))
			issued(in, &p);
		else if (!approved && !denied && p.stage == FLEET_PROV_DELIVERED &&
			 inst_now(in) < p.expires_at + FLEET_BOOTSTRAP_TOKEN_GRACE)
			(void)approve(in, &p, csr, name); /* the intent survived a crash */
		return;
	}
	if (denied)
		return;
	if (approved) {
		/* A5: approved by someone else (the admission policy missing, an
		 * administrator): that is the token's one use all the same. It
		 * is recorded as such, so no second CSR of the token is ever
		 * approved, and the token goes once the certificate is there. */
		if (fleet_store_provision_csr_approve(in->d.store, p.id, name, uid,
						      inst_now(in)) == FLEET_OK) {
			fleet_log(LOG_ERR, "csr-approved-elsewhere",
				  FLEET_LOG_FIELDS({"FLEET_DEVICE", p.device},
						   {"FLEET_TOKEN_ID", p.token_id}),
				  "kubelet CSR %s of this machine's bootstrap token was approved by "
				  "someone other than fleetd: recorded as the token's one use; "
				  "check clusters/folly/tinkerbell-access/node-client-approval.yaml",
				  name);
			if (csr_has_certificate(csr) &&
			    fleet_store_provision_get(in->d.store, p.id, &p) == FLEET_OK)
				issued(in, &p);
		}
		return;
	}

	/* A2: after the delivery, and made after it: a CSR the token could
	 * only have made before the configuration was fetched (the token
	 * read from somewhere else) never becomes approvable by waiting. */
	if (p.stage != FLEET_PROV_DELIVERED) {
		refuse(in, &p, name, uid, "csr-before-delivery");
		return;
	}
	time_t made = 0;
	if (!csr_created(csr, &made)) {
		refuse(in, &p, name, uid, "csr-malformed");
		return;
	}
	if (made < p.delivered_at - FLEET_INSTALL_CSR_SKEW) {
		refuse(in, &p, name, uid, "csr-before-delivery");
		return;
	}
	const char *req64 = str_at(csr, "spec", "request");
	json_t *usages = json_object_get(json_object_get(csr, "spec"), "usages");
	const char *u[8];
	size_t nu = 0;
	if (json_array_size(usages) > sizeof(u) / sizeof(u[0])) {
		refuse(in, &p, name, uid, "csr-usages");
		return;
	}
	size_t i;
	json_t *x;
	json_array_foreach(usages, i, x)
	{
		if (!json_is_string(x)) {
			refuse(in, &p, name, uid, "csr-usages");
			return;
		}
		u[nu++] = json_string_value(x);
	}
	struct fleet_wire_bytes req = {0};
	fleet_err e = req64 ? fleet_b64std_decode(req64, strlen(req64), FLEET_KUBELET_CSR_MAX, &req)
			    : FLEET_E_MALFORMED;
	if (e != FLEET_OK) {
		refuse(in, &p, name, uid, "csr-malformed");
		return;
	}
	struct fleet_kubelet_csr c = {
		.signer_name = signer,
		.username = user,
		.usages = u,
		.n_usages = nu,
		.request = req.data,
		.request_len = req.len,
	};
	struct fleet_decision d = fleet_kubelet_csr_judge(&c, p.token_id, p.device);
	free(req.data);
	if (d.outcome != FLEET_PASSED) {
		if (d.outcome == FLEET_REFUSED)
			refuse(in, &p, name, uid, d.reason);
		else
			inst_count(in->m_csr, "error");
		return;
	}
	/* A3: the intent first, in the store, then the API. */
	e = fleet_store_provision_csr_approve(in->d.store, p.id, name, uid, inst_now(in));
	if (e == FLEET_STORE_E_CONFLICT) {
		refuse(in, &p, name, uid, "csr-second");
		return;
	}
	if (e != FLEET_OK) {
		inst_count(in->m_csr, "error");
		fleet_log(LOG_ERR, "csr-record-failed",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", p.device}, {"FLEET_TOKEN_ID", p.token_id}),
			  "the approval could not be recorded (%s); CSR %s is not approved",
			  fleet_store_errmsg(in->d.store), name);
		return;
	}
	(void)approve(in, &p, csr, name);
}

void fleet_install_csr(struct fleet_install *in, json_t *csr)
{
	if (!json_is_object(csr))
		return;
	pthread_mutex_lock(&in->csr_mu);
	csr_locked(in, csr);
	pthread_mutex_unlock(&in->csr_mu);
}

/* ---- the watch ------------------------------------------------------------ */

static void on_relist(void *ctx, json_t *items)
{
	size_t i;
	json_t *c;
	json_array_foreach(items, i, c) fleet_install_csr(ctx, c);
}

static void on_event(void *ctx, const char *type, json_t *obj)
{
	if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED"))
		fleet_install_csr(ctx, obj);
}

static void on_error(void *ctx, fleet_err e, const struct fleet_errctx *ec, unsigned backoff_ms)
{
	(void)ctx;
	char text[sizeof(ec->detail) + 80];
	fleet_log(LOG_WARNING, "csr-watch-error", NULL, 0,
		  "the kubelet CSR watch failed (%s: %s); again in %u ms", fleet_err_str(e),
		  fleet_errctx_text(ec, text, sizeof(text)), backoff_ms);
}

static void *watch_main(void *arg)
{
	struct fleet_install *in = arg;
	struct fleet_kube_watch_ops ops = {
		.on_relist = on_relist, .on_event = on_event, .on_error = on_error, .ctx = in};
	struct fleet_errctx ec = {0};
	(void)fleet_kube_watch(in->d.kube, CSR_PATH,
			       "fieldSelector=spec.signerName%3Dkubernetes.io%2Fkube-apiserver-"
			       "client-kubelet",
			       &ops, &in->stop, &ec);
	return NULL;
}

fleet_err fleet_install_watch_start(struct fleet_install *in, struct fleet_errctx *ec)
{
	if (in->watching)
		return FLEET_OK;
	in->stop = 0;
	if (pthread_create(&in->watch, NULL, watch_main, in) != 0)
		return fleet_errctx_msg(ec, FLEET_E_IO, "cannot start the CSR watch thread");
	in->watching = true;
	return FLEET_OK;
}
