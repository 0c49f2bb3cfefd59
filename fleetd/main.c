/*
 * main.c: the fleetd daemon.
 *
 *   fleetd [--config PATH] [--check-config] [--log-target journal|stderr]
 *
 * --check-config loads the configuration, checks the token file, the EK
 * roots, the identity CA and every class profile, and exits; it creates no
 * state and asks NetBox nothing.
 * Loads /etc/fleetd/fleetd.yaml (or PATH), opens everything admission needs
 * (the store, verdicts.jsonl, the inventory, the EK roots, the identity
 * CA, the class profiles) and refuses to start, with one sentence saying
 * what and why, if any of it fails. Then it serves the attestation rounds
 * over HTTPS, runs the pass on its own thread (at start, then every pass
 * interval), tells systemd READY=1, pings the watchdog from its main loop
 * (which never waits on NetBox), ends expired sessions every second, and on
 * SIGTERM or SIGINT says STOPPING=1, ends the pass, stops the listener
 * (waiting for running handlers) and closes everything.
 *
 * Exit status: 0 after a clean stop or a valid --check-config; 1 when the
 * configuration or anything it names cannot be used; 2 on a bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "fleetd/admission/admission.h"
#include "fleetd/config/config.h"
#include "fleetd/http/server.h"
#include "fleetd/install/install.h"
#include "fleetd/inventory/netbox.h"
#include "fleetd/kube/kube.h"
#include "fleetd/inventory/nodes_file.h"
#include "fleetd/obs/journal.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/pass/pass.h"
#include "fleetd/pass/pass_runner.h"
#include "fleetd/provision/deliver.h"
#include "fleetd/provision/install_classes.h"
#include "fleetd/obs/sdnotify.h"
#include "fleetd/store/store.h"
#include "fleetd/store/verdict_log.h"
#include "fleetd/join/join.h"
#include "lib/ca.h"
#include "lib/file_read.h"
#include "lib/token_seal.h"
#include "lib/x509_ek.h"
#include "policy/attestors/cloud_iid.h"
#include "policy/profile.h"

static volatile sig_atomic_t stop_signal;
static int wake_fd = -1; /* the self-pipe's write end */

static void on_signal(int sig)
{
	int saved = errno;
	stop_signal = sig;
	if (wake_fd >= 0) {
		char c = 0;
		(void)!write(wake_fd, &c, 1);
	}
	errno = saved;
}

/* A refusal to start: to the log (structured) and, when the log is the
 * journal, to stderr as well, so a terminal sees it too. */
static void startup_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void startup_failed(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fleet_log(LOG_ERR, "startup-failed", NULL, 0, "fleetd does not start: %s", msg);
	if (fleet_log_get_target() == FLEET_LOG_JOURNAL)
		fprintf(stderr, "fleetd: %s\n", msg);
}

/* How many prune batches one pass runs at most (reap_sessions). */
#define JOIN_PRUNE_BATCHES 20

struct daemon {
	struct fleet_config cfg;
	/* What each class installs (provision.classes_file); n = 0 when
	 * provisioning is off. */
	struct fleet_install_classes classes;
	struct fleet_store *store;
	/* The pass's own read-only handle. Either handle is safe from any
	 * thread (store.h, "Threads"), but calls on one handle wait for each
	 * other: on its own connection (WAL) the pass sees committed state
	 * only, never waits for an admission's transaction, and never makes
	 * one wait. */
	struct fleet_store *pass_store;
	struct fleet_vlog *vlog;
	struct fleet_inventory *inv;
	struct fleet_ek_roots *roots;
	struct fleet_ca *ca;
	struct fleet_metrics *metrics;
	struct fleet_admission *adm;
	struct fleet_kube *kube;       /* provisioning on: the cluster's API */
	struct fleet_install *install; /* provisioning on: runs in flight */
	struct fleet_deliver *deliver; /* provisioning on: GET /config */
	struct fleet_seal_key *seal; /* join on: opens sealed tokens */
	struct fleet_join *join;     /* join on: POST /v1/join, /v1/renew */
	/* join.tpm on: what the tpm attestor borrows for the daemon's life */
	struct fleet_tpm_attestor_config tpm;
	struct fleet_profile *tpm_profile;
	struct fleet_tpm_resolve tpm_resolve;
	struct fleet_cloud_iid_config *cloud_iid; /* join.cloud_iid_file */
	struct fleet_pass *pass;
	atomic_bool pass_cancel; /* set at stop: the running pass ends early */
	struct fleet_http *http;
};

/* The pass's part of session upkeep: the main loop ends sessions every
 * second (fleet_admission_reap), so the pass reaps what is left and
 * forgets revoked provisional certificates past their notAfter. */
static size_t reap_sessions(void *ctx)
{
	struct daemon *d = ctx;
	size_t n = fleet_admission_reap(d->adm);
	fleet_admission_prune(d->adm);
	/* The join service's single-use evidence past its expiry, a batch
	 * at a time (store.h J5), at most JOIN_PRUNE_BATCHES a pass: a long
	 * backlog is a few short transactions each pass, never one long one
	 * that holds the writers back. */
	if (d->join) {
		size_t del = 0, total = 0;
		for (int i = 0; i < JOIN_PRUNE_BATCHES; i++) {
			if (fleet_store_attestation_uses_prune(d->store, time(NULL),
							       FLEET_STORE_PRUNE_BATCH,
							       &del) != FLEET_STORE_OK)
				break;
			total += del;
			if (del < FLEET_STORE_PRUNE_BATCH)
				break;
		}
		if (total)
			fleet_log(LOG_INFO, "attestation-uses-pruned", NULL, 0,
				  "pruned %zu expired attestation uses", total);
	}
	return n;
}

/* The pass's binding author records (pass.h, B1..B6): its store handle is
 * read-only, so the admission writes them, on its own handle. */
static fleet_err record_author(void *ctx, const struct fleet_store_binding_author *r,
			       struct fleet_errctx *ec)
{
	return fleet_admission_record_binding_author(ctx, r, ec);
}

static fleet_err forget_author(void *ctx, int64_t device_id, bool *forgot,
			       struct fleet_errctx *ec)
{
	return fleet_admission_forget_binding_author(ctx, device_id, forgot, ec);
}

/* The re-check's role of a class (admission.h R-4): classes.json says,
 * when provisioning is on; else it is not known. */
static bool is_controlplane(void *ctx, const char *class_name, bool *known)
{
	const struct daemon *d = ctx;
	const struct fleet_install_class *k =
		d->classes.n ? fleet_install_class_find(&d->classes, class_name) : NULL;
	*known = k && k->role != FLEET_ROLE_NONE;
	return k && k->role == FLEET_ROLE_CONTROLPLANE;
}

/* A quarantined worker's cordon (spec; the RBAC of
 * clusters/folly/tinkerbell-access/fleet-controller-cordon.yaml):
 * spec.unschedulable set on its Node, as kubectl cordon does. */
static void cordon(void *ctx, const char *device)
{
	struct daemon *d = ctx;
	struct fleet_errctx ec = {0};
	char path[320], err[sizeof(ec.detail) + 80];
	if (!d->kube) {
		fleet_log(LOG_WARNING, "cordon-unavailable", FLEET_LOG_FIELDS({"FLEET_DEVICE", device}),
			  "no Kubernetes API configured (provision.kubeconfig): %s is not cordoned",
			  device);
		return;
	}
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", device);
	static const char patch[] = "{\"spec\":{\"unschedulable\":true}}";
	long status = 0;
	struct fleet_buf resp;
	fb_init(&resp);
	fleet_err e = fleet_kube_request(d->kube, "PATCH", path,
					 "application/strategic-merge-patch+json", patch,
					 sizeof(patch) - 1, &status, &resp, &ec);
	fb_free(&resp);
	if (e == FLEET_OK && status / 100 == 2)
		fleet_log(LOG_NOTICE, "cordon-requested", FLEET_LOG_FIELDS({"FLEET_DEVICE", device}),
			  "node %s cordoned (spec.unschedulable)", device);
	else
		fleet_log(LOG_ERR, "cordon-failed", FLEET_LOG_FIELDS({"FLEET_DEVICE", device}),
			  "the cordon of node %s was not taken (%s, HTTP %ld): the quarantine "
			  "stands; cordon it by hand",
			  device, e ? fleet_errctx_text(&ec, err, sizeof(err)) : "refused", status);
}

/* The confirm round's installation step (admission.h C2, install.h S1-S8). */
static void provision_hook(void *ctx, const struct fleet_inv_device *dev,
			   const struct fleet_attest_session *s, struct fleet_wire_confirm_reply *cr)
{
	struct fleet_install_machine m = {.dev = dev, .session = s};
	const char *why = NULL;
	(void)fleet_install_start(ctx, &m, cr, &why, NULL, 0);
}

static void reconcile_installs(void *ctx, time_t now)
{
	fleet_install_reconcile(ctx, now);
}

/* What the delivery did, journaled here (fleetd/provision may not include
 * the journal): a known code only, never the code itself. */
static void deliver_event(void *ctx, const struct fleet_deliver_event *ev)
{
	char id[24], bytes[24], wait[24];
	snprintf(id, sizeof(id), "%lld", (long long)ev->provision_id);
	snprintf(bytes, sizeof(bytes), "%zu", ev->bytes);
	snprintf(wait, sizeof(wait), "%lld", ev->wait_ms);
	const char *dev = ev->device ? ev->device : "";
	switch (ev->kind) {
	case FLEET_DELIVER_REFUSED:
		/* A burned or expired code is no secret any more (it sits in the
		 * installed disk's META): counted by the server, not journaled,
		 * so replaying it costs no journal line. */
		if (ev->reason && (!strcmp(ev->reason, "code-burned") || !strcmp(ev->reason, "expired")))
			break;
		fleet_log(LOG_WARNING, "config-refused",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev}, {"FLEET_PROVISION", id},
					   {"FLEET_REASON", ev->reason}, {"FLEET_PEER", ev->peer}),
			  "a GET of %s's configuration was refused (%s)", dev, ev->reason);
		break;
	case FLEET_DELIVER_SERVING:
		fleet_log(LOG_INFO, "config-serving",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev}, {"FLEET_PROVISION", id},
					   {"FLEET_PEER", ev->peer}),
			  "serving %s's configuration (%s bytes)", dev, bytes);
		break;
	case FLEET_DELIVER_DELIVERED:
		fleet_log(LOG_NOTICE, "config-delivered",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev}, {"FLEET_PROVISION", id},
					   {"FLEET_PEER", ev->peer}),
			  "%s's configuration delivered whole and acknowledged in %s ms: its code "
			  "is burned",
			  dev, wait);
		if (ctx)
			fleet_install_delivered(ctx, ev->provision_id);
		break;
	case FLEET_DELIVER_INCOMPLETE:
	default:
		fleet_log(LOG_WARNING, "config-incomplete",
			  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev}, {"FLEET_PROVISION", id},
					   {"FLEET_REASON", ev->reason}, {"FLEET_PEER", ev->peer}),
			  "%s's configuration was not consumed (%s): it stays for a retry", dev,
			  ev->reason ? ev->reason : "?");
		break;
	}
}

static int route_config(void *ctx, const struct fleet_http_request *req,
			struct fleet_http_reply *reply)
{
	struct fleet_deliver_arg a[FLEET_HTTP_MAX_ARGS];
	for (size_t i = 0; i < req->n_args; i++)
		a[i] = (struct fleet_deliver_arg){req->args[i].key, req->args[i].value};
	struct fleet_deliver_result r;
	int status = fleet_deliver_get(ctx, a, req->n_args, req->args_over, req->started_ms,
				       req->peer, &reply->body, &r);
	reply->reason = r.reason;
	reply->content_type = r.content_type;
	reply->close = r.close;
	reply->done = r.lease ? fleet_deliver_done : NULL;
	reply->done_arg = r.lease;
	reply->write_deadline_ms = r.write_deadline_ms;
	return status;
}

/* Provisioning's parts: the Kubernetes API and the installer (install.h),
 * whose CSR watch starts with it. */
/* The join service's sealing key (fleetctl join init wrote it): one PKCS#8
 * P-256 key, read as a secret (files.md: owned by fleetd or root, mode
 * 0600), its PEM wiped after parsing. */
static fleet_err load_seal_key(const struct fleet_config *c, struct fleet_seal_key **out,
			       char *path, size_t cap, struct fleet_errctx *ec)
{
	const struct fleet_file_policy policy = {
		.what = "the join service's sealing key",
		.max_size = FLEET_SEAL_MAX_PEM,
		.owners = 0,
		.forbid = 077,
		.secret = true,
	};
	struct fleet_buf pem;
	fleet_err e;
	if (c->join_seal_key[0])
		snprintf(path, cap, "%s", c->join_seal_key);
	else
		snprintf(path, cap, "%s/join/seal.key", c->state_dir);
	fb_init_secret(&pem, FLEET_SEAL_MAX_PEM);
	e = fleet_file_read(AT_FDCWD, path, &policy, &pem, ec);
	if (!e)
		e = fleet_seal_key_load_pem(pem.data, pem.len, out, ec);
	fb_free(&pem);
	return e;
}

/* join.tpm's files into t (the roots are the daemon's own EK roots: the
 * same chain code and the same rules as HookOS admission). */
static fleet_err load_tpm(const struct fleet_config *c, const struct fleet_ek_roots *roots,
			  struct fleet_tpm_attestor_config *t, struct fleet_profile **profile,
			  struct fleet_tpm_resolve *resolve, char *what, size_t cap,
			  struct fleet_errctx *ec)
{
	fleet_err e;
	memset(t, 0, sizeof(*t));
	if (c->join_tpm_challenge_key[0])
		snprintf(what, cap, "%s", c->join_tpm_challenge_key);
	else
		snprintf(what, cap, "%s/join/tpm-challenge.key", c->state_dir);
	if ((e = fleet_join_challenge_key_load(what, t->challenge_key, ec)))
		return e;
	if (c->join_tpm_pcr_profile[0]) {
		snprintf(what, cap, "pcr_profile %s", c->join_tpm_pcr_profile);
		if ((e = fleet_profile_load(c->join_tpm_pcr_profile, profile, ec)))
			return e;
	}
	if (c->join_tpm_resolve_file[0]) {
		snprintf(what, cap, "resolve_file %s", c->join_tpm_resolve_file);
		if ((e = fleet_join_tpm_resolve_load(c->join_tpm_resolve_file, resolve, ec)))
			return e;
	}
	t->ek_roots = roots;
	t->allow_uncertified_ek = c->join_tpm_allow_uncertified_ek;
	snprintf(t->pcr_selection, sizeof(t->pcr_selection), "%s", c->join_tpm_pcr_selection);
	t->pcr_profile = *profile;
	t->node_key = strcmp(c->join_tpm_node_key, "any") ? FLEET_TPM_NODE_KEY_CERTIFIED
							    : FLEET_TPM_NODE_KEY_ANY;
	t->challenge_ttl_seconds = c->join_tpm_challenge_ttl_seconds;
	snprintf(t->role, sizeof(t->role), "%s", c->join_tpm_role);
	t->resolve = resolve->n ? resolve : NULL;
	snprintf(t->enrollment_pool, sizeof(t->enrollment_pool), "%s",
		 c->join_tpm_enrollment_pool);
	snprintf(t->enrollment_site, sizeof(t->enrollment_site), "%s",
		 c->join_tpm_enrollment_site);
	t->pending_ttl_seconds = c->join_tpm_pending_ttl_seconds;
	t->retry_after_seconds = c->join_tpm_retry_after_seconds;
	return FLEET_OK;
}

static int open_join(struct daemon *d)
{
	struct fleet_errctx ec;
	char err[sizeof(ec.detail) + sizeof(ec.ossl) + 80], path[FLEET_CONFIG_PATH_MAX + 32];
	if (!d->cfg.join_enabled)
		return 0;
	memset(&ec, 0, sizeof(ec));
	if (load_seal_key(&d->cfg, &d->seal, path, sizeof(path), &ec) != FLEET_OK) {
		startup_failed("join: sealing key %s (fleetctl join init makes it): %s", path,
			       fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	const struct fleet_discovery_approval_name {
		const char *n;
		enum fleet_discovery_approval v;
	} approvals[] = {{"never", FLEET_DISCOVERY_APPROVE_NEVER},
			 {"unknown-machines", FLEET_DISCOVERY_APPROVE_UNKNOWN},
			 {"always", FLEET_DISCOVERY_APPROVE_ALWAYS}};
	enum fleet_discovery_approval ap = FLEET_DISCOVERY_APPROVE_NEVER;
	for (size_t i = 0; i < sizeof(approvals) / sizeof(approvals[0]); i++)
		if (!strcmp(d->cfg.join_discovery_approval, approvals[i].n))
			ap = approvals[i].v;
	if (d->cfg.join_tpm_enabled) {
		memset(&ec, 0, sizeof(ec));
		if (load_tpm(&d->cfg, d->roots, &d->tpm, &d->tpm_profile, &d->tpm_resolve, path,
			     sizeof(path), &ec) != FLEET_OK) {
			startup_failed("join.tpm: %s: %s", path,
				       fleet_errctx_text(&ec, err, sizeof(err)));
			return -1;
		}
		if (d->tpm.allow_uncertified_ek)
			fleet_log(LOG_WARNING, "join-tpm-uncertified",
				  FLEET_LOG_FIELDS({"FLEET_ATTESTOR", "tpm"}),
				  "join.tpm.allow_uncertified_ek is on: a TPM with no manufacturer "
				  "certificate can join; never in production");
	}
	if (d->cfg.join_cloud_iid_file[0]) {
		memset(&ec, 0, sizeof(ec));
		if (fleet_cloud_iid_config_load(d->cfg.join_cloud_iid_file, &d->cloud_iid, &ec)) {
			startup_failed("join.cloud_iid_file %s: %s", d->cfg.join_cloud_iid_file,
				       fleet_errctx_text(&ec, err, sizeof(err)));
			return -1;
		}
	}
	struct fleet_join_config jc = {
		.tpm = d->cfg.join_tpm_enabled ? &d->tpm : NULL,
		.cloud_iid = d->cloud_iid,
		.store = d->store,
		.ca = d->ca,
		.seal = d->seal,
		.trust_domain = d->cfg.join_trust_domain,
		.cert_ttl_seconds = d->cfg.join_cert_ttl_seconds,
		.on_refusal = d->cfg.join_on_refusal,
		.metrics = d->metrics,
		.x509pop = {.grace_seconds = d->cfg.join_x509pop_grace_seconds,
			    .window_seconds = d->cfg.join_x509pop_window_seconds,
			    .min_interval_seconds = d->cfg.join_x509pop_min_interval_seconds},
		.discovery = {.approval = ap,
			      .max_age_seconds = 900,
			      .cert_ttl_seconds = d->cfg.join_discovery_cert_ttl_seconds,
			      .pending_ttl_seconds = d->cfg.join_discovery_pending_ttl_seconds,
			      .retry_after_seconds = d->cfg.join_discovery_retry_after_seconds},
	};
	memset(&ec, 0, sizeof(ec));
	if (!(d->join = fleet_join_new(&jc, &ec))) {
		startup_failed("join: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	return 0;
}

static int open_install(struct daemon *d)
{
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	if (!d->cfg.provision_enabled)
		return 0;
	/* A CSR may be as large as the API server stores (about 2 MiB of
	 * JSON): pages of 16 within a 48 MiB answer, so a few large ones
	 * cannot make the whole list fail (install.h A1). */
	struct fleet_kube_config kc = {
		.kubeconfig = d->cfg.provision_kubeconfig[0] ? d->cfg.provision_kubeconfig : NULL,
		.max_response = (size_t)48 << 20,
		.timeout_seconds = 5, /* inside the confirm round's budget (install.h S9) */
	};
	if (fleet_kube_open(&kc, &d->kube, &ec) != FLEET_OK) {
		startup_failed("provision: the Kubernetes API: %s",
			       fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	fleet_kube_set_list_page(d->kube, 16);
	struct fleet_install_deps id = {
		.config = &d->cfg,
		.classes = &d->classes,
		.store = d->store,
		.inventory = d->inv,
		.kube = d->kube,
		.ca = d->ca,
		.metrics = d->metrics,
	};
	if (fleet_install_new(&id, &d->install, &ec) != FLEET_OK) {
		startup_failed("provision: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	struct fleet_deliver_config dc = {
		.store = d->store,
		.write_deadline_seconds = d->cfg.provision_delivery_deadline_seconds,
		.event = deliver_event,
		.event_ctx = d->install,
	};
	if (!(d->deliver = fleet_deliver_new(&dc))) {
		startup_failed("provision: out of memory");
		return -1;
	}
	return 0;
}

/* A render killed midway (kill -9 during talosctl) leaves its private
 * directory, render.XXXXXX under state_dir, with the node patch (the
 * bootstrap token) and the configuration in it: nothing else removes them.
 * Only what a render writes is there, so only files are unlinked. */
static void remove_render_leftovers(const char *state_dir)
{
	DIR *sd = opendir(state_dir);
	if (!sd)
		return;
	struct dirent *e;
	while ((e = readdir(sd))) {
		if (strncmp(e->d_name, "render.", 7) != 0 || strlen(e->d_name) != 13)
			continue;
		int dfd = openat(dirfd(sd), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		DIR *rd = fdopendir(dfd);
		if (!rd) {
			close(dfd);
			continue;
		}
		struct dirent *f;
		size_t n = 0;
		while ((f = readdir(rd)))
			if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..") &&
			    unlinkat(dfd, f->d_name, 0) == 0)
				n++;
		closedir(rd);
		if (unlinkat(dirfd(sd), e->d_name, AT_REMOVEDIR) == 0)
			fleet_log(LOG_NOTICE, "render-leftovers-removed",
				  FLEET_LOG_FIELDS({"FLEET_PATH", e->d_name}),
				  "a render interrupted at the last stop left %s (%zu file%s): "
				  "removed", e->d_name, n, n == 1 ? "" : "s");
	}
	closedir(sd);
}

/* Start-up, before anything is served: sessions live in memory, so every
 * certificate a lost session was issued provisionally is revoked; on a
 * shared store, those of sessions no replica holds. */
static int recover_state(struct daemon *d)
{
	char sha1s[FLEET_STORE_REVOKE_SHA1S][41];
	size_t n = 0;
	fleet_err se;
	/* Another writer (a second fleetd on the same state, an operator's
	 * tool) can hold the lock for a moment: a few tries before giving up. */
	for (int i = 0;; i++) {
		/* Shared (PostgreSQL): the other replicas' sessions live on in
		 * the store, so only the orphans of sessions no replica holds
		 * any more are revoked (store.h SS4). */
		se = fleet_store_is_shared(d->store)
			     ? fleet_store_provisional_revoke_orphans(d->store, "fleetd-restart",
								      time(NULL), sha1s, &n)
			     : fleet_store_provisional_revoke(d->store, NULL, "fleetd-restart",
							      time(NULL), sha1s, &n);
		if (se != FLEET_STORE_E_BUSY || i == 4)
			break;
		sleep(1);
	}
	if (se != FLEET_STORE_OK) {
		startup_failed("store: revoking the certificates of sessions lost at the last "
			       "stop: %s", fleet_store_errmsg(d->store));
		return -1;
	}
	if (n)
		fleet_log(LOG_NOTICE, "provisional-revoked", FLEET_LOG_FIELDS({"FLEET_REASON",
									       "fleetd-restart"}),
			  "%zu provisional certificate%s of sessions lost at the last stop revoked",
			  n, n == 1 ? "" : "s");
	/* verdicts.jsonl is caught up with the store by the admission, as it
	 * is made (fleet_admission_new), before anything is served. */
	remove_render_leftovers(d->cfg.state_dir);
	return 0;
}

static int open_inventory(struct daemon *d)
{
	char err[512] = "";
	if (d->cfg.inventory == FLEET_INVENTORY_NETBOX) {
		/* Read again here, checked on the descriptor it is read from:
		 * what fleet_config_check_files saw at start may have changed. */
		char token[FLEET_CONFIG_TOKEN_MAX + 1];
		struct fleet_errctx tec = {0};
		if (fleet_config_read_token(&d->cfg, token, sizeof(token), &tec) != FLEET_OK) {
			OPENSSL_cleanse(token, sizeof(token));
			startup_failed("%s", fleet_errctx_text(&tec, err, sizeof(err)));
			return -1;
		}
		struct fleet_netbox_config nc = {
			.base_url = d->cfg.netbox_url,
			.token = token,
			.ca_file = d->cfg.netbox_ca_file[0] ? d->cfg.netbox_ca_file : NULL,
			.timeout_ms = (long)d->cfg.netbox_timeout_ms,
			.page_size = d->cfg.netbox_page_size,
		};
		struct fleet_errctx ec = {0};
		d->inv = fleet_netbox_open(&nc, &ec);
		OPENSSL_cleanse(token, sizeof(token));
		if (!d->inv) {
			startup_failed("NetBox inventory: %s", fleet_errctx_text(&ec, err, sizeof(err)));
			return -1;
		}
		return 0;
	}
	struct fleet_errctx ec = {0};
	if (fleet_nodes_file_open(d->cfg.nodes_file, &d->inv, &ec) != FLEET_OK) {
		startup_failed("nodes file: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	return 0;
}

static int open_all(struct daemon *d)
{
	struct fleet_errctx ec;
	char err[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	memset(&ec, 0, sizeof(ec));

	/* The PostgreSQL store when the configuration names one; its URI
	 * may hold a password, so it is never logged: "the PostgreSQL store". */
	const char *loc = d->cfg.store[0] ? d->cfg.store : d->cfg.state_dir;
	const char *where = d->cfg.store[0] ? "the PostgreSQL store" : d->cfg.state_dir;
	fleet_err se = fleet_store_open(loc, FLEET_STORE_RW, &d->store, &ec);
	if (se != FLEET_STORE_OK) {
		startup_failed("store in %s: %s (%s)", where,
			       fleet_errctx_text(&ec, err, sizeof(err)), fleet_err_str(se));
		return -1;
	}
	if (fleet_vlog_open(d->cfg.state_dir, d->cfg.verdict_log_max_bytes,
			    d->cfg.verdict_log_max_files, &d->vlog, &ec) != FLEET_OK) {
		startup_failed("verdict log in %s: %s", d->cfg.state_dir,
			       fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	if (recover_state(d) != 0)
		return -1;
	se = fleet_store_open(loc, FLEET_STORE_READONLY, &d->pass_store, &ec);
	if (se != FLEET_STORE_OK) {
		startup_failed("store in %s, read-only for the pass: %s (%s)", where,
			       fleet_errctx_text(&ec, err, sizeof(err)), fleet_err_str(se));
		return -1;
	}
	if (open_inventory(d) != 0)
		return -1;
	memset(&ec, 0, sizeof(ec));
	if (fleet_ek_roots_load(d->cfg.roots_dir, &d->roots, &ec) != FLEET_OK) {
		startup_failed("EK roots in %s: %s", d->cfg.roots_dir,
			       fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	if (fleet_ek_roots_count(d->roots) == 0) {
		startup_failed("EK roots: %s holds no certificate; no EK could ever chain",
			       d->cfg.roots_dir);
		return -1;
	}
	memset(&ec, 0, sizeof(ec));
	if (fleet_ca_load(d->cfg.ca_dir, &d->ca, &ec) != FLEET_OK) {
		startup_failed("identity CA in %s: %s", d->cfg.ca_dir,
			       fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	d->metrics = fleet_metrics_new();
	if (!d->metrics) {
		startup_failed("out of memory");
		return -1;
	}
	if (open_install(d) != 0)
		return -1;
	struct fleet_admission_deps deps = {
		.config = &d->cfg,
		.inventory = d->inv,
		.store = d->store,
		.verdicts = d->vlog,
		.metrics = d->metrics,
		.roots = d->roots,
		.ca = d->ca,
		.provision = d->install ? provision_hook : NULL,
		.provision_ctx = d->install,
		.is_controlplane = is_controlplane,
		.cordon = cordon,
		.reattest_ctx = d,
	};
	memset(&ec, 0, sizeof(ec));
	if (fleet_admission_new(&deps, &d->adm, &ec) != FLEET_OK) {
		startup_failed("admission: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	struct fleet_pass_deps pd = {
		.config = &d->cfg,
		.inventory = d->inv,
		.store = d->pass_store,
		.metrics = d->metrics,
		.reap_sessions = reap_sessions,
		.reap_ctx = d,
		.cancel = &d->pass_cancel,
		.record_author = record_author,
		.forget_author = forget_author,
		.author_ctx = d->adm,
		.reconcile_installs = d->install ? reconcile_installs : NULL,
		.installs_ctx = d->install,
	};
	if (open_join(d) != 0)
		return -1;
	if (fleet_pass_new(&pd, &d->pass) != FLEET_OK) {
		startup_failed("pass: out of memory or bad metrics");
		return -1;
	}
	if (!d->cfg.spire_trust_domain[0])
		fleet_log(LOG_NOTICE, "spire-disabled", NULL, 0,
			  "spire.trust_domain is not set: no spire-nodes.json will be written");
	return 0;
}

static void close_all(struct daemon *d)
{
	fleet_http_free(d->http); /* stops first: no handler runs past here */
	fleet_pass_free(d->pass);
	fleet_join_free(d->join); /* runs what the hook has queued */
	fleet_seal_key_free(d->seal);
	OPENSSL_cleanse(d->tpm.challenge_key, sizeof(d->tpm.challenge_key));
	fleet_profile_free(d->tpm_profile);
	fleet_tpm_resolve_free(&d->tpm_resolve);
	fleet_cloud_iid_config_free(d->cloud_iid);
	fleet_admission_free(d->adm);
	fleet_deliver_free(d->deliver); /* after the server: no lease is left */
	fleet_install_free(d->install); /* joins the CSR watch */
	fleet_kube_close(d->kube);
	if (d->inv)
		d->inv->ops->close(d->inv);
	fleet_ca_free(d->ca);
	fleet_ek_roots_free(d->roots);
	fleet_vlog_close(d->vlog);
	fleet_store_close(d->pass_store);
	fleet_store_close(d->store);
	fleet_metrics_free(d->metrics);
}

/* The routes: the admission's rounds, the reject reason passed on for
 * fleetd_http_rejected_total. */
static int route_intake(void *ctx, const struct fleet_http_request *req,
			struct fleet_http_reply *reply)
{
	return fleet_admission_intake(ctx, req->peer, req->body, req->body_len, &reply->body,
				      &reply->reason);
}

static int route_answer(void *ctx, const struct fleet_http_request *req,
			struct fleet_http_reply *reply)
{
	return fleet_admission_answer(ctx, req->body, req->body_len, &reply->body, &reply->reason);
}

static int route_reattest_nonce(void *ctx, const struct fleet_http_request *req,
				struct fleet_http_reply *reply)
{
	return fleet_admission_reattest_nonce(ctx, req->body, req->body_len, &reply->body,
					      &reply->reason);
}

static int route_reattest_check(void *ctx, const struct fleet_http_request *req,
				struct fleet_http_reply *reply)
{
	return fleet_admission_reattest_check(ctx, req->body, req->body_len, &reply->body,
					      &reply->reason);
}

static int route_reattest_renew(void *ctx, const struct fleet_http_request *req,
				struct fleet_http_reply *reply)
{
	return fleet_admission_reattest_renew(ctx, req->body, req->body_len, &reply->body,
					      &reply->reason);
}

static int route_confirm(void *ctx, const struct fleet_http_request *req,
			 struct fleet_http_reply *reply)
{
	return fleet_admission_confirm(ctx, req->body, req->body_len, &reply->body,
				       &reply->reason);
}

static int route_join(void *ctx, const struct fleet_http_request *req,
		      struct fleet_http_reply *reply)
{
	return fleet_join_handle(ctx, req->peer, req->body, req->body_len, &reply->body,
				 &reply->reason);
}

static int route_join_renew(void *ctx, const struct fleet_http_request *req,
			    struct fleet_http_reply *reply)
{
	return fleet_join_renew(ctx, req->peer, req->body, req->body_len, &reply->body,
				&reply->reason);
}

static bool healthy(void *ctx)
{
	(void)ctx;
	return stop_signal == 0;
}

static int start_http(struct daemon *d)
{
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	struct fleet_http_config hc = {
		.bind_address = d->cfg.listen_address,
		.port = d->cfg.listen_port,
		.tls_cert_file = d->cfg.tls_cert,
		.tls_key_file = d->cfg.tls_key,
		.max_body = (size_t)d->cfg.max_body_bytes,
		.request_deadline_seconds = d->cfg.listen_request_deadline_seconds,
		.body_memory = (size_t)d->cfg.listen_body_memory_bytes,
		.rate_per_second = d->cfg.listen_rate_per_second,
		.rate_burst = d->cfg.listen_rate_burst,
		.no_metrics = !d->cfg.metrics,
	};
	char err[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	d->http = fleet_http_new(&hc, d->metrics, &ec);
	if (!d->http) {
		startup_failed("HTTPS listener: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	if (fleet_http_route(d->http, "POST", "/v1/attest/intake", route_intake, d->adm) ||
	    fleet_http_route(d->http, "POST", "/v1/attest/answer", route_answer, d->adm) ||
	    fleet_http_route(d->http, "POST", "/v1/attest/confirm", route_confirm, d->adm) ||
	    fleet_http_route(d->http, "POST", "/v1/reattest/nonce", route_reattest_nonce, d->adm) ||
	    fleet_http_route(d->http, "POST", "/v1/reattest/check", route_reattest_check, d->adm) ||
	    fleet_http_route(d->http, "POST", "/v1/reattest/renew", route_reattest_renew, d->adm)) {
		startup_failed("HTTPS listener: the attestation routes could not be registered");
		return -1;
	}
	/* GET /config reads the store for any code it is sent: it costs a
	 * token of the source's bucket, as a POST does. */
	if (d->join && (fleet_http_route(d->http, "POST", "/v1/join", route_join, d->join) ||
			fleet_http_route(d->http, "POST", "/v1/renew", route_join_renew, d->join))) {
		startup_failed("HTTPS listener: the join routes could not be registered");
		return -1;
	}
	if (d->deliver && (fleet_http_route(d->http, "GET", "/config", route_config, d->deliver) ||
			   fleet_http_route_rate_limit(d->http, "GET", "/config"))) {
		startup_failed("HTTPS listener: the /config route could not be registered");
		return -1;
	}
	fleet_http_set_health(d->http, healthy, NULL);
	if (fleet_http_start(d->http, &ec) != FLEET_OK) {
		startup_failed("HTTPS listener on [%s]:%u: %s", d->cfg.listen_address,
			       (unsigned)d->cfg.listen_port, fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	if (d->install && fleet_install_watch_start(d->install, &ec) != FLEET_OK) {
		startup_failed("provision: %s", fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	return 0;
}

static int setup_signals(int pipefd[2])
{
	struct sigaction sa;
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	wake_fd = pipefd[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return -1;
	return 0;
}

/* The effective pass deadline (pass.h): the configured one, at most the
 * interval. */
static uint64_t pass_deadline_ms(const struct fleet_config *c)
{
	uint32_t s = c->pass_deadline_seconds;
	if (!s || s > c->pass_interval_seconds)
		s = c->pass_interval_seconds;
	return (uint64_t)s * 1000u;
}

/* Until a stop signal: the watchdog and sessions ended as they expire
 * (every second). The pass runs on its own thread (pass_runner.h): this
 * loop never waits on NetBox, so its watchdog pings keep their interval
 * however slow a pass is; it only journals a pass past its deadline. */
static void serve(struct daemon *d, struct fleet_pass_runner *runner, int wake_read)
{
	struct fleet_sdnotify sd;
	fleet_sd_init(&sd);
	uint64_t next_reap = fleet_sd_now_usec();
	uint64_t slow_warned = UINT64_MAX; /* passes finished when last warned */
	while (!stop_signal) {
		uint64_t now = fleet_sd_now_usec();
		uint64_t wait = fleet_sd_watchdog_tick(&sd, now, true);
		if (now >= next_reap) {
			fleet_admission_reap(d->adm);
			next_reap = now + 1000000u;
			uint64_t busy = fleet_pass_runner_busy_ms(runner);
			uint64_t done = fleet_pass_runner_passes(runner);
			if (busy > pass_deadline_ms(&d->cfg) && slow_warned != done) {
				slow_warned = done;
				fleet_log(LOG_WARNING, "pass-slow", NULL, 0,
					  "the pass has run %llu s, past pass.deadline_seconds: "
					  "it ends at its next check; the watchdog is unaffected",
					  (unsigned long long)(busy / 1000u));
			}
		}
		if (next_reap > now && next_reap - now < wait)
			wait = next_reap - now;
		int timeout_ms = wait / 1000 > 60000 ? 60000 : (int)(wait / 1000) + 1;
		struct pollfd p = {.fd = wake_read, .events = POLLIN};
		if (poll(&p, 1, timeout_ms) > 0) {
			char buf[16];
			while (read(wake_read, buf, sizeof(buf)) > 0)
				;
		}
	}
}

/* --check-config: what can be checked without creating state or asking
 * NetBox: the EK roots, the identity CA and every class's profile. */
static int check_local_files(const struct fleet_config *c)
{
	struct fleet_errctx ec;
	struct fleet_ek_roots *roots = NULL;
	struct fleet_ca *ca = NULL;
	char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	int rc = 0;
	memset(&ec, 0, sizeof(ec));
	if (fleet_ek_roots_load(c->roots_dir, &roots, &ec) != FLEET_OK) {
		startup_failed("EK roots in %s: %s", c->roots_dir,
			       fleet_errctx_text(&ec, text, sizeof(text)));
		rc = -1;
	} else if (fleet_ek_roots_count(roots) == 0) {
		startup_failed("EK roots: %s holds no certificate", c->roots_dir);
		rc = -1;
	}
	fleet_ek_roots_free(roots);
	memset(&ec, 0, sizeof(ec));
	if (fleet_ca_load(c->ca_dir, &ca, &ec) != FLEET_OK) {
		startup_failed("identity CA in %s: %s", c->ca_dir,
			       fleet_errctx_text(&ec, text, sizeof(text)));
		rc = -1;
	}
	fleet_ca_free(ca);
	if (c->join_enabled) {
		struct fleet_seal_key *k = NULL;
		char path[FLEET_CONFIG_PATH_MAX + 32];
		memset(&ec, 0, sizeof(ec));
		if (load_seal_key(c, &k, path, sizeof(path), &ec) != FLEET_OK) {
			startup_failed("join: sealing key %s: %s", path,
				       fleet_errctx_text(&ec, text, sizeof(text)));
			rc = -1;
		}
		fleet_seal_key_free(k);
		if (c->join_on_refusal[0] && access(c->join_on_refusal, X_OK) != 0) {
			startup_failed("join.on_refusal %s is not an executable file",
				       c->join_on_refusal);
			rc = -1;
		}
		if (c->join_tpm_enabled) {
			struct fleet_tpm_attestor_config t;
			struct fleet_profile *tp = NULL;
			struct fleet_tpm_resolve tr = {0};
			memset(&ec, 0, sizeof(ec));
			if (load_tpm(c, NULL, &t, &tp, &tr, path, sizeof(path), &ec) != FLEET_OK) {
				startup_failed("join.tpm: %s: %s", path,
					       fleet_errctx_text(&ec, text, sizeof(text)));
				rc = -1;
			}
			OPENSSL_cleanse(&t, sizeof(t));
			fleet_profile_free(tp);
			fleet_tpm_resolve_free(&tr);
		}
		if (c->join_cloud_iid_file[0]) {
			struct fleet_cloud_iid_config *ci = NULL;
			memset(&ec, 0, sizeof(ec));
			if (fleet_cloud_iid_config_load(c->join_cloud_iid_file, &ci, &ec)) {
				startup_failed("join.cloud_iid_file %s: %s", c->join_cloud_iid_file,
					       fleet_errctx_text(&ec, text, sizeof(text)));
				rc = -1;
			}
			fleet_cloud_iid_config_free(ci);
		}
	}
	for (size_t i = 0; i < c->n_classes; i++) {
		char path[2 * FLEET_CONFIG_PATH_MAX + 2];
		struct fleet_profile *p = NULL;
		memset(&ec, 0, sizeof(ec));
		snprintf(path, sizeof(path), "%s/%s", c->profiles_dir, c->classes[i].profile);
		if (fleet_profile_load(path, &p, &ec) != FLEET_OK) {
			startup_failed("class %s: profile %s:%u: %s", c->classes[i].name, path,
				       ec.line, fleet_errctx_text(&ec, text, sizeof(text)));
			rc = -1;
		} else if (strcmp(p->class_name, c->classes[i].name) != 0) {
			startup_failed("class %s: profile %s is for class \"%s\"",
				       c->classes[i].name, path, p->class_name);
			rc = -1;
		}
		fleet_profile_free(p);
	}
	return rc;
}

/* The spec's "fleetd refuses to start while an installing class has no
 * digest": with provisioning on, classes.json and class-inputs.json must
 * hold (K1-K5) and name every class fleetd.yaml maps to a profile (K6). */
static int check_provision(const struct fleet_config *c, struct fleet_install_classes *out)
{
	struct fleet_errctx ec;
	char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	const char *names[FLEET_CONFIG_MAX_CLASSES];
	memset(&ec, 0, sizeof(ec));
	if (!c->provision_enabled)
		return 0;
	if (fleet_install_classes_load(c->provision_classes_file,
				       c->provision_class_inputs_file, out, &ec) != FLEET_OK) {
		startup_failed("provision: %s%s%s", fleet_errctx_text(&ec, text, sizeof(text)),
			       ec.reason ? "; reason " : "", ec.reason ? ec.reason : "");
		return -1;
	}
	for (size_t i = 0; i < c->n_classes; i++)
		names[i] = c->classes[i].name;
	if (fleet_install_classes_check_profiles(out, names, c->n_classes, &ec) != FLEET_OK) {
		startup_failed("provision: %s", fleet_errctx_text(&ec, text, sizeof(text)));
		return -1;
	}
	/* What a render needs, checked now rather than at the first machine:
	 * talosctl runs by its absolute path (execve, no PATH), and the
	 * secrets bundle holds the cluster's CA keys, so it must be private. */
	if (access(c->provision_talosctl, X_OK) != 0) {
		startup_failed("provision.talosctl %s is not an executable file: %s",
			       c->provision_talosctl, strerror(errno));
		return -1;
	}
	static const struct fleet_file_policy secrets =
		FLEET_FILE_POLICY_SECRET("the Talos secrets bundle", 1u << 20);
	struct fleet_buf b;
	fb_init(&b);
	fleet_err fe = fleet_file_read(AT_FDCWD, c->provision_secrets_file, &secrets, &b, &ec);
	fb_free(&b);
	if (fe != FLEET_OK) {
		startup_failed("provision.secrets_file: %s", fleet_errctx_text(&ec, text, sizeof(text)));
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fleetd [--config PATH] [--check-config] "
		   "[--log-target journal|stderr]\n"
		   "  --config PATH     the configuration (default " FLEET_CONFIG_DEFAULT_PATH ")\n"
		   "  --check-config    check the configuration, roots, CA and profiles; exit\n"
		   "  --log-target T    where the log goes: journal (default) or stderr\n");
}

int main(int argc, char **argv)
{
	const char *path = FLEET_CONFIG_DEFAULT_PATH;
	bool check_only = false;
	int pipefd[2] = {-1, -1};
	static struct daemon d;

	/* The pass's allocator policy, before any thread (pass.h). */
	fleet_pass_malloc_setup();
	/* tpm2-tss libraries print every response code themselves otherwise. */
	setenv("TSS2_LOG", "all+NONE", 0);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (strcmp(argv[i], "--check-config") == 0) {
			check_only = true;
		} else if (strcmp(argv[i], "--log-target") == 0 && i + 1 < argc) {
			enum fleet_log_target t;
			if (fleet_log_target_parse(argv[++i], &t) != FLEET_OK) {
				fprintf(stderr, "fleetd: --log-target is journal or stderr\n");
				return 2;
			}
			fleet_log_set_target(t);
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}

	struct fleet_errctx ec;
	char err[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	memset(&ec, 0, sizeof(ec));
	if (fleet_config_load(path, &d.cfg, &ec) != FLEET_OK) {
		startup_failed("%s:%u:%u: %s", path, ec.line, ec.column,
			       fleet_errctx_text(&ec, err, sizeof(err)));
		return 1;
	}
	if (fleet_config_check_files(&d.cfg, &ec) != FLEET_OK) {
		startup_failed("%s: %s", path, fleet_errctx_text(&ec, err, sizeof(err)));
		return 1;
	}
	if (check_provision(&d.cfg, &d.classes) != 0) {
		fleet_install_classes_free(&d.classes);
		return 1;
	}
	if (check_only) {
		int bad = check_local_files(&d.cfg);
		fleet_install_classes_free(&d.classes);
		if (bad != 0)
			return 1;
		printf("%s: configuration OK\n", path);
		return 0;
	}
	if (setup_signals(pipefd) != 0) {
		startup_failed("signal handling: %s", strerror(errno));
		return 1;
	}
	int rc = 1;
	if (open_all(&d) != 0 || start_http(&d) != 0)
		goto out;

	char status[128];
	snprintf(status, sizeof(status), "serving attestation on port %u",
		 (unsigned)fleet_http_port(d.http));
	fleet_log(LOG_NOTICE, "started", NULL, 0, "fleetd %s", status);
	struct fleet_pass_runner *runner = NULL;
	if (fleet_pass_runner_start(d.pass, &d.pass_cancel, d.cfg.pass_interval_seconds,
				    &runner) != 0) {
		startup_failed("the pass's thread: %s", strerror(errno));
		goto out;
	}
	fleet_sd_ready(status);
	serve(&d, runner, pipefd[0]);
	fleet_sd_stopping("stopping");
	fleet_log(LOG_NOTICE, "stopping", NULL, 0, "signal %d: stopping", (int)stop_signal);
	fleet_pass_runner_stop(runner); /* before anything the pass uses is freed */
	rc = 0;
out:
	close_all(&d);
	fleet_install_classes_free(&d.classes);
	close(pipefd[0]);
	close(pipefd[1]);
	return rc;
}
