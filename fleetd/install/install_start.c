/*
 * install_start.c: a provision started in the confirm round (install.h
 * S1-S8).
 */
#include "fleetd/install/install_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "fleetd/obs/journal.h"
#include "fleetd/provision/authorize.h"
#include "fleetd/provision/bootstrap_token.h"
#include "fleetd/provision/code.h"
#include "fleetd/provision/render.h"
#include "lib/hex.h"
#include "lib/sanitize.h"

struct start {
	struct fleet_install *in;
	const struct fleet_inv_device *dev;
	const struct fleet_install_class *k;
	const char **why;
	char *detail;
	size_t detail_len;
};

static enum fleet_install_outcome failed(struct start *s, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum fleet_install_outcome failed(struct start *s, const char *reason, const char *fmt, ...)
{
	char text[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	*s->why = reason;
	if (s->detail && s->detail_len)
		snprintf(s->detail, s->detail_len, "%s", text);
	inst_count(s->in->m_start, "failed");
	fleet_log(LOG_ERR, "provision-failed",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", s->dev->name}, {"FLEET_REASON", reason}),
		  "no installation started: %s", text);
	return FLEET_INSTALL_FAILED;
}


static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* S9: the machine waits for the confirm's answer (tink-attest gives up
 * after 30 s); a start past its budget is taken back rather than finished
 * for a machine that may no longer listen. */
static bool past_budget(uint64_t t0)
{
	return mono_ms() - t0 > FLEET_INSTALL_START_BUDGET_MS;
}

/* S2: an open provision of this device cannot be running: the machine is
 * in HookOS, confirming. */
static void supersede(struct fleet_install *in, const char *device)
{
	struct fleet_store_provision *v = NULL;
	size_t n = 0;
	if (fleet_store_provisions_list(in->d.store, true, &v, &n) != FLEET_OK)
		return; /* create's CONFLICT says it then */
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].device, device) &&
		    (v[i].stage == FLEET_PROV_RENDERED || v[i].stage == FLEET_PROV_STARTED ||
		     v[i].stage == FLEET_PROV_DELIVERED))
			inst_drop(in, &v[i], "superseded", true);
	fleet_store_provisions_free(v, n);
}

/* S3: the MAC of the device's Hardware object, for the Workflow's
 * device_1 (the tink-agent that runs it). */
static fleet_err hardware_mac(struct fleet_install *in, const char *device, char *mac, size_t n,
			      struct fleet_errctx *ec)
{
	char path[512];
	json_t *hw = NULL;
	snprintf(path, sizeof(path), "/apis/tinkerbell.org/v1alpha1/namespaces/%s/hardware/%s",
		 in->d.config->provision_namespace, device);
	fleet_err e = fleet_kube_get(in->d.kube, path, &hw, ec);
	if (e != FLEET_OK)
		return e;
	json_t *ifs = json_object_get(json_object_get(hw, "spec"), "interfaces");
	const char *m = NULL;
	size_t i;
	json_t *it;
	json_array_foreach(ifs, i, it)
	{
		m = json_string_value(json_object_get(json_object_get(it, "dhcp"), "mac"));
		if (m)
			break;
	}
	/* The MAC goes into an object fleetd creates: it is held to its
	 * spelling (six hex pairs), never passed on as whatever it was. */
	bool ok = m && strlen(m) == 17;
	for (size_t j = 0; ok && j < 17; j++)
		ok = (j % 3 == 2) ? m[j] == ':'
				  : ((m[j] >= '0' && m[j] <= '9') || (m[j] >= 'a' && m[j] <= 'f') ||
				     (m[j] >= 'A' && m[j] <= 'F'));
	if (ok)
		snprintf(mac, n, "%s", m);
	json_decref(hw);
	if (!ok)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED,
					"Hardware %s names no interface with a MAC address "
					"(spec.interfaces[].dhcp.mac)",
					device);
	return FLEET_OK;
}

static json_t *workflow_object(struct fleet_install *in, const char *name, const char *device,
			       const char *mac, const char *image_ref, const char *serial,
			       int64_t id)
{
	char pid[24];
	snprintf(pid, sizeof(pid), "%lld", (long long)id);
	/* No bootOptions: the machine already waits in HookOS (spec). */
	/* hardwareMap: the variables of the Template
	 * (clusters/folly/tinkerbell/talos-install-template.yaml). */
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:s, s:{s:s, s:s, s:s, "
			 "s:s, s:s}}}",
			 "apiVersion", "tinkerbell.org/v1alpha1", "kind", "Workflow", "metadata",
			 "name", name, "namespace", in->d.config->provision_namespace, "labels",
			 "fleetd.folly/device", device, "fleetd.folly/provision", pid, "spec",
			 "templateRef", in->d.config->provision_template, "hardwareRef", device,
			 "hardwareMap", "device_1", mac, "installer_image", image_ref,
			 "install_disk_serial", serial, "fleet_tools_image",
			 in->d.config->provision_tools_image, "fleetd_host",
			 in->d.config->provision_config_host);
}

/* S4: the render in a private directory of its own. */
static fleet_err render(struct fleet_install *in, const struct fleet_install_class *k,
			const char *device, const char *serial, const char *token,
			struct fleet_buf *out, struct fleet_errctx *ec)
{
	char dir[FLEET_CONFIG_PATH_MAX + 32];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/render.XXXXXX", in->d.config->state_dir) >=
	    sizeof(dir))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "state_dir is too long");
	if (!mkdtemp(dir))
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot make a render directory");
	struct fleet_render_env env = {
		.talosctl = in->d.config->provision_talosctl,
		.secrets_file = in->d.config->provision_secrets_file,
		.work_dir = dir,
		.timeout_seconds = in->d.config->provision_render_timeout_seconds,
	};
	struct fleet_render_node n = {
		.device_name = device, .install_disk_serial = serial, .bootstrap_token = token};
	fb_init(out);
	fleet_err e = fleet_render(&env, k, &n, out, ec);
	rmdir(dir); /* the render removed its files; a failure here leaves an empty 0700 dir */
	return e;
}

enum fleet_install_outcome fleet_install_start(struct fleet_install *in,
					       const struct fleet_install_machine *m,
					       struct fleet_wire_confirm_reply *cr, const char **why,
					       char *detail, size_t detail_len)
{
	const struct fleet_inv_device *dev = m->dev;
	struct start s = {.in = in, .dev = dev, .why = why, .detail = detail, .detail_len = detail_len};
	struct fleet_errctx ec = {0};
	char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
	if (detail && detail_len)
		detail[0] = '\0';

	/* S1 */
	const struct fleet_install_class *k = fleet_install_class_find(in->d.classes, dev->class_name);
	if (!k) {
		*why = "class-installs-nothing";
		inst_count(in->m_start, "not-wanted");
		return FLEET_INSTALL_NONE;
	}
	s.k = k;
	bool ran = false;
	fleet_err e = fleet_store_provision_ever_started(in->d.store, dev->name, &ran);
	if (e != FLEET_OK)
		return failed(&s, "store-error", "the store cannot say whether %s ran a Workflow: %s",
			      dev->name, fleet_store_errmsg(in->d.store));
	if (!fleet_provision_wanted(k->role, dev->desired_action, in->d.config->provision_auto, ran,
				    why)) {
		inst_count(in->m_start, "not-wanted");
		return FLEET_INSTALL_NONE;
	}
	const char *wanted_why = *why;

	/* S2 */
	supersede(in, dev->name);

	/* S3 */
	uint8_t code[FLEET_CODE_LEN], code_hash[32];
	char code_hex[2 * FLEET_CODE_LEN + 1];
	struct fleet_bootstrap_token tok;
	memset(&tok, 0, sizeof(tok));
	bool worker = k->role == FLEET_ROLE_WORKER;
	char mac[18], image_ref[FLEET_INSTALL_IMAGE_MAX + 80];
	if (fleet_code_new(code, code_hex, code_hash) != FLEET_OK ||
	    (worker && fleet_bootstrap_token_new(&tok) != FLEET_OK)) {
		OPENSSL_cleanse(code, sizeof(code));
		OPENSSL_cleanse(code_hex, sizeof(code_hex));
		return failed(&s, "crypto-error", "the CSPRNG failed");
	}
	OPENSSL_cleanse(code_hex, sizeof(code_hex)); /* only the wrap needs the code */
	enum fleet_install_outcome out = FLEET_INSTALL_FAILED;
	struct fleet_buf config;
	fb_init(&config);
	int64_t id = 0;
	char wfname[64], path[512];
	bool secret_made = false, row_made = false, workflow_tried = false;
	time_t now = inst_now(in);
	uint64_t t0 = mono_ms();
	time_t expires = now + (worker ? FLEET_INSTALL_WORKER_TTL : FLEET_INSTALL_CONTROLPLANE_TTL);

	/* The device's name goes into object names and API paths: a DNS-1123
	 * label, or nothing is made (the owner's to fix in the inventory). */
	if (!fleet_dns_label(dev->name)) {
		out = failed(&s, "device-name",
			     "the device name is not a DNS-1123 label ([a-z0-9-], 1..63): it names "
			     "the node, its Workflow and its Hardware");
		goto done;
	}
	if ((e = fleet_install_class_image_ref(k, image_ref, sizeof(image_ref))) != FLEET_OK) {
		out = failed(&s, "render-refused", "class %s has no pinned image", k->name);
		goto done;
	}
	if ((e = hardware_mac(in, dev->name, mac, sizeof(mac), &ec)) != FLEET_OK) {
		out = failed(&s, e == FLEET_KUBE_E_NOT_FOUND ? "hardware-missing" : "kube-error",
			     "Hardware %s: %s", dev->name, fleet_errctx_text(&ec, text, sizeof(text)));
		goto done;
	}

	/* S4 */
	memset(&ec, 0, sizeof(ec));
	if ((e = render(in, k, dev->name, dev->install_disk_serial,
			worker ? tok.token : FLEET_RENDER_NOJOIN_TOKEN, &config, &ec)) != FLEET_OK) {
		out = failed(&s, "render-refused", "%s%s%s", fleet_errctx_text(&ec, text, sizeof(text)),
			     ec.reason ? "; reason " : "", ec.reason ? ec.reason : "");
		goto done;
	}

	if (past_budget(t0)) {
		out = failed(&s, "late", "the render took past the start's budget of %u ms: "
					 "nothing was started",
			     (unsigned)FLEET_INSTALL_START_BUDGET_MS);
		goto done;
	}

	/* S5. The Workflow's name must be known before the row: it is
	 * recorded with it. Random bytes keep names apart across reprovisions
	 * and between devices of one long prefix. */
	uint8_t salt[4];
	char salt_hex[9];
	if (RAND_bytes(salt, sizeof(salt)) != 1) {
		out = failed(&s, "crypto-error", "the CSPRNG failed");
		goto done;
	}
	fleet_hex_encode(salt, sizeof(salt), salt_hex);
	snprintf(wfname, sizeof(wfname), "fleet-%.40s-%s", dev->name, salt_hex);
	struct fleet_store_provision_in pin = {
		.device = dev->name,
		.serial = dev->serial,
		.role = worker ? "worker" : "controlplane",
		.workflow = wfname,
		.token_id = worker ? tok.id : "",
		.code_hash = code_hash,
		.config = config.data,
		.config_len = config.len,
		.now = now,
		.expires_at = expires,
	};
	if ((e = fleet_store_provision_create(in->d.store, &pin, &id)) != FLEET_OK) {
		out = failed(&s, "store-error", "the provision could not be recorded: %s",
			     fleet_store_errmsg(in->d.store));
		goto done;
	}
	row_made = true;
	fb_free_secret(&config); /* the store holds it now */

	/* S6 */
	if (worker) {
		/* Recorded as made BEFORE it is made: a kill -9, or a create the
		 * API committed while its answer was lost, must leave a Secret
		 * the pass deletes (W3), never one nobody knows of. Deleting
		 * one that was never made is a 404, which is done. */
		if (fleet_store_provision_token_set(in->d.store, id, FLEET_TOKEN_CREATED) != FLEET_OK) {
			out = failed(&s, "store-error", "the token Secret could not be recorded: %s",
				     fleet_store_errmsg(in->d.store));
			goto done;
		}
		secret_made = true;
		json_t *sec = fleet_bootstrap_secret(&tok, expires);
		memset(&ec, 0, sizeof(ec));
		e = sec ? fleet_kube_create(in->d.kube, "/api/v1/namespaces/kube-system/secrets", sec,
					    NULL, &ec)
			: fleet_errctx_msg(&ec, FLEET_E_NOMEM, "out of memory");
		json_decref(sec);
		if (e != FLEET_OK) {
			out = failed(&s, "start-failed", "the token Secret was not created: %s",
				     fleet_errctx_text(&ec, text, sizeof(text)));
			goto done;
		}
	}
	if (past_budget(t0)) {
		out = failed(&s, "late", "past the start's budget of %u ms before the Workflow: "
					 "taken back",
			     (unsigned)FLEET_INSTALL_START_BUDGET_MS);
		goto done;
	}
	/* The Workflow's name is the row's since S5: whatever its create
	 * answers, a drop deletes it (404 when it was never made). */
	workflow_tried = true;
	json_t *wf = workflow_object(in, wfname, dev->name, mac, image_ref,
				     dev->install_disk_serial, id);
	memset(&ec, 0, sizeof(ec));
	char wfs[256];
	inst_workflows_path(in, wfs, sizeof(wfs));
	e = wf ? fleet_kube_create(in->d.kube, wfs, wf, NULL, &ec)
	       : fleet_errctx_msg(&ec, FLEET_E_NOMEM, "out of memory");
	json_decref(wf);
	if (e != FLEET_OK) {
		out = failed(&s, "start-failed", "the Workflow was not created: %s",
			     fleet_errctx_text(&ec, text, sizeof(text)));
		goto done;
	}
	if ((e = fleet_store_provision_advance(in->d.store, id, FLEET_PROV_RENDERED,
					       FLEET_PROV_STARTED, inst_now(in))) != FLEET_OK) {
		inst_workflow_path(in, wfname, path, sizeof(path));
		(void)fleet_kube_delete(in->d.kube, path, NULL);
		out = failed(&s, "store-error", "the started run could not be recorded: %s",
			     fleet_store_errmsg(in->d.store));
		goto done;
	}

	/* S8 first: a wrap that fails must not leave a run the machine can
	 * never fetch the configuration of. */
	struct fleet_code_proof_in proof = {
		.device = dev->name,
		.serial = dev->serial,
		.ldevid_sha256 = m->session->ldevid_cert_hash,
		.code_hash = code_hash,
		.issued_at = now,
		.expires_at = expires,
	};
	memset(&ec, 0, sizeof(ec));
	struct fleet_buf pb;
	fb_init(&pb);
	if ((e = fleet_code_wrap(m->session, code, &cr->code, &ec)) != FLEET_OK ||
	    (e = fleet_code_proof_make(in->d.ca, &proof, &pb, &ec)) != FLEET_OK ||
	    !(cr->proof.data = malloc(pb.len ? pb.len : 1))) {
		fb_free(&pb);
		fleet_wire_confirm_reply_free(cr);
		cr->status = FLEET_WIRE_CONFIRMED;
		struct fleet_store_provision p = {.id = id};
		snprintf(p.device, sizeof(p.device), "%.63s", dev->name);
		snprintf(p.workflow, sizeof(p.workflow), "%s", wfname);
		inst_drop(in, &p, "start-failed", true);
		row_made = false; /* dropped, its Workflow deleted; the Secret below */
		out = failed(&s, "wrap-failed", "the code could not be wrapped to the TPM: %s",
			     e ? fleet_errctx_text(&ec, text, sizeof(text)) : "out of memory");
		goto done;
	}
	memcpy(cr->proof.data, pb.data, pb.len);
	cr->proof.len = pb.len;
	fb_free(&pb);
	cr->has_provision = true;

	/* S7 */
	char pid[24];
	snprintf(pid, sizeof(pid), "%lld", (long long)id);
	if (!strcmp(wanted_why, "owner-requested")) {
		memset(&ec, 0, sizeof(ec));
		e = in->d.inventory->ops->clear_desired_action(in->d.inventory, dev->id, &ec);
		if (e == FLEET_OK)
			fleet_log(LOG_NOTICE, "desired-action-cleared",
				  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev->name}, {"FLEET_PROVISION", pid}),
				  "desired_action cleared: the run it asked for has started");
		else
			fleet_log(LOG_WARNING, "desired-action-clear-failed",
				  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev->name}, {"FLEET_PROVISION", pid}),
				  "the run started but desired_action could not be cleared: %s",
				  fleet_errctx_text(&ec, text, sizeof(text)));
	}
	inst_count(in->m_start, "started");
	fleet_log(LOG_NOTICE, "provision-started",
		  FLEET_LOG_FIELDS({"FLEET_DEVICE", dev->name}, {"FLEET_PROVISION", pid},
				   {"FLEET_WORKFLOW", wfname}, {"FLEET_REASON", wanted_why}),
		  "configuration rendered and checked, %s, Workflow %s created; the "
		  "configuration waits for its one GET until the code expires",
		  worker ? "bootstrap token created" : "no join token (control plane)", wfname);
	*why = wanted_why;
	out = FLEET_INSTALL_STARTED;
	row_made = secret_made = false;
done:
	/* A start that failed midway takes back what it made: the row first
	 * (the code burned), then the Secret; what cannot be deleted now is
	 * recorded CREATED, and the pass deletes it (W3). */
	if (row_made) {
		struct fleet_store_provision p = {.id = id};
		snprintf(p.device, sizeof(p.device), "%.63s", dev->name);
		snprintf(p.workflow, sizeof(p.workflow), "%s", wfname);
		inst_drop(in, &p, "start-failed", workflow_tried);
	}
	if (secret_made) {
		struct fleet_store_provision p = {.id = id};
		snprintf(p.device, sizeof(p.device), "%.63s", dev->name);
		snprintf(p.token_id, sizeof(p.token_id), "%s", tok.id);
		(void)inst_token_delete(in, &p, "start-failed");
	}
	fb_free_secret(&config);
	OPENSSL_cleanse(code, sizeof(code));
	fleet_bootstrap_token_wipe(&tok);
	return out;
}
