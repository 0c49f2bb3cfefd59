/* inproc_server.c: fleetd's admission in-process (inproc_server.h). */
#include "tests/tpm/inproc_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "fleetd/obs/journal.h"
#include "lib/tpm.h"
#include "lib/tpm_credential.h"
#include "tests/testutil.h"

#define AUTHOR "terraform" /* the binding's author, as configured */
#define CHANGE_ID 4242     /* the change that set the binding */

/* ---- the inventory: one planned device, as NetBox would hold it ---------- */

static struct inproc_inventory *INV(struct fleet_inventory *inv)
{
	return (struct inproc_inventory *)inv;
}

static void device_of(const struct inproc_inventory *iv, struct fleet_inv_device *d)
{
	memset(d, 0, sizeof(*d));
	d->id = 1;
	snprintf(d->name, sizeof(d->name), "%s", INPROC_DEVICE);
	snprintf(d->serial, sizeof(d->serial), "%s", iv->binding->serial);
	snprintf(d->status, sizeof(d->status), "planned");
	snprintf(d->primary_ip4, sizeof(d->primary_ip4), "10.0.7.21/24");
	snprintf(d->class_name, sizeof(d->class_name), "worker");
	snprintf(d->install_disk, sizeof(d->install_disk), "/dev/nvme0n1");
	snprintf(d->install_disk_serial, sizeof(d->install_disk_serial), "S5GXNF0R1");
	snprintf(d->bmc_type, sizeof(d->bmc_type), "ipmi");
	snprintf(d->tpm_version, sizeof(d->tpm_version), "2.0");
	d->amt = 0;
	d->secure_boot_expected = 1;
	snprintf(d->expected_port, sizeof(d->expected_port), "%s", INPROC_PORT);
	memcpy(d->approved_ek_hash, iv->binding->ek_hash, sizeof(d->approved_ek_hash));
	memcpy(d->approved_ek_hash_ecc, iv->binding->ek_hash_ecc, sizeof(d->approved_ek_hash_ecc));
}

static fleet_err inv_find(struct fleet_inventory *inv, const char *serial,
			  struct fleet_inv_device *out, struct fleet_errctx *ec)
{
	if (strcmp(serial, INV(inv)->binding->serial) != 0)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no device with that serial");
	device_of(INV(inv), out);
	return FLEET_INV_OK;
}

static fleet_err inv_get(struct fleet_inventory *inv, long id, struct fleet_inv_device *out,
			 struct fleet_errctx *ec)
{
	if (INV(inv)->fail_get)
		return fleet_errctx_msg(ec, INV(inv)->fail_get, "the test's inventory failed");
	if (id != 1)
		return fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no device %ld", id);
	device_of(INV(inv), out);
	return FLEET_INV_OK;
}

static fleet_err inv_binding_change(struct fleet_inventory *inv, long id,
				    struct fleet_inv_binding_change *out, struct fleet_errctx *ec)
{
	(void)ec;
	memset(out, 0, sizeof(*out));
	out->found = id == 1 && INV(inv)->binding->ek_hash[0];
	snprintf(out->user, sizeof(out->user), "%s", AUTHOR);
	out->when = 1764480000;
	out->change_id = CHANGE_ID;
	return FLEET_INV_OK;
}

static fleet_err inv_write_ek_hashes(struct fleet_inventory *inv, long id, const char *ek_hash,
				     const char *ek_hash_ecc, struct fleet_errctx *ec)
{
	(void)inv;
	(void)id;
	(void)ek_hash;
	(void)ek_hash_ecc;
	(void)ec;
	return FLEET_INV_OK; /* what fleetd proved: the tests read the store */
}

static void inv_close(struct fleet_inventory *inv)
{
	(void)inv;
}

static const struct fleet_inventory_ops inv_ops = {
	.find_by_serial = inv_find,
	.get = inv_get,
	.binding_change = inv_binding_change,
	.write_ek_hashes = inv_write_ek_hashes,
	.close = inv_close,
};

/* ---- the daemon's parts -------------------------------------------------- */

int inproc_server_init(struct inproc_server *s, const char *roots_dir, const char *profile)
{
	struct fleet_errctx ec;
	char err[512] = "", ca_dir[600];
	memset(s, 0, sizeof(*s));
	memset(&ec, 0, sizeof(ec));
	char *tmp = make_temp_dir("inproc");
	if (!tmp)
		return -1;
	int len = snprintf(s->dir, sizeof(s->dir), "%s", tmp);
	free(tmp);
	if (len < 0 || (size_t)len >= sizeof(s->dir)) {
		fprintf(stderr, "inproc server: the temporary directory's path is too long\n");
		return -1;
	}

	struct fleet_config *c = &s->config;
	fleet_config_defaults(c);
	const char *slash = strrchr(profile, '/');
	if (!slash || (size_t)(slash - profile) >= sizeof(c->profiles_dir)) {
		fprintf(stderr, "inproc server: the profile %s is not a path\n", profile);
		return -1;
	}
	snprintf(c->profiles_dir, sizeof(c->profiles_dir), "%.*s", (int)(slash - profile),
		 profile);
	c->n_classes = 1;
	snprintf(c->classes[0].name, sizeof(c->classes[0].name), "worker");
	snprintf(c->classes[0].profile, sizeof(c->classes[0].profile), "%s", slash + 1);
	snprintf(c->state_dir, sizeof(c->state_dir), "%s/state", s->dir);
	snprintf(c->binding_author, sizeof(c->binding_author), "%s", AUTHOR);
	c->inventory = FLEET_INVENTORY_NETBOX;
	snprintf(ca_dir, sizeof(ca_dir), "%s/ca", s->dir);

	if (fleet_ek_roots_load(roots_dir, &s->roots, &ec) != FLEET_OK ||
	    fleet_ca_init(ca_dir, "fleetd in-process test CA", 30, &ec) != FLEET_OK ||
	    fleet_ca_load(ca_dir, &s->ca, &ec) != FLEET_OK) {
		fprintf(stderr, "inproc server: roots or CA: %s\n",
			fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	if (fleet_store_open(c->state_dir, FLEET_STORE_RW, &s->store, &ec) ||
	    fleet_vlog_open(c->state_dir, c->verdict_log_max_bytes, c->verdict_log_max_files,
			    &s->vlog, &ec) ||
	    !(s->metrics = fleet_metrics_new())) {
		fprintf(stderr, "inproc server: store, verdicts.jsonl or metrics: %s\n",
			fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	s->inv.base.ops = &inv_ops;
	s->inv.binding = &s->binding;
	struct fleet_admission_deps deps = {
		.config = c,
		.inventory = &s->inv.base,
		.store = s->store,
		.verdicts = s->vlog,
		.metrics = s->metrics,
		.roots = s->roots,
		.ca = s->ca,
	};
	if (fleet_admission_new(&deps, &s->adm, &ec) != FLEET_OK) {
		fprintf(stderr, "inproc server: admission: %s\n",
			fleet_errctx_text(&ec, err, sizeof(err)));
		return -1;
	}
	return 0;
}

void inproc_server_free(struct inproc_server *s)
{
	fleet_admission_free(s->adm);
	fleet_metrics_free(s->metrics);
	fleet_vlog_close(s->vlog);
	fleet_store_close(s->store);
	fleet_ek_roots_free(s->roots);
	fleet_ca_free(s->ca);
	if (s->dir[0])
		rm_rf(s->dir);
}

/* ---- what crossed the wire ----------------------------------------------- */

static void saw_intake(struct inproc_server *s, const struct fleet_buf *body)
{
	struct fleet_wire_intake in;
	if (fleet_wire_intake_decode(body->data, body->len, &in, NULL) != FLEET_OK) {
		fleet_wire_intake_free(&in);
		return; /* the admission says it is malformed */
	}
	s->intake_had_ecc = in.ek_ecc.present;
	snprintf(s->serial, sizeof(s->serial), "%s", in.serial);
	memset(&s->report, 0, sizeof(s->report));
	(void)fleet_network_report_parse(&in.network_report, &s->report, NULL);
	memset(&s->ek_rsa, 0, sizeof(s->ek_rsa));
	memset(&s->ak, 0, sizeof(s->ak));
	memset(&s->ldevid, 0, sizeof(s->ldevid));
	(void)fleet_tpm_public_parse(in.ek_rsa.pub.data, in.ek_rsa.pub.len, &s->ek_rsa, NULL);
	(void)fleet_tpm_public_parse(in.ak_public.data, in.ak_public.len, &s->ak, NULL);
	(void)fleet_tpm_public_parse(in.ldevid_public.data, in.ldevid_public.len, &s->ldevid,
				     NULL);
	fleet_wire_intake_free(&in);
}

/* A round's journal: the last FLEET_REASON it wrote, for a refusal. */
static void last_reason(const char *journal, char out[64])
{
	const char *p = journal, *hit = NULL;
	while ((p = strstr(p, " FLEET_REASON=")) != NULL)
		hit = p++ + strlen(" FLEET_REASON=");
	out[0] = '\0';
	if (hit)
		snprintf(out, 64, "%.*s", (int)strcspn(hit, " \n"), hit);
}

/* The reply's status is this one ("refused", "admitted", "confirmed"). */
static bool says(const struct fleet_buf *reply, const char *status)
{
	char want[48];
	int n = snprintf(want, sizeof(want), "\"status\":\"%s\"", status);
	return memmem(reply->data, reply->len, want, (size_t)n) != NULL;
}

/* The provision fleetd does not send yet (inproc_server.h): a fresh
 * 32-byte code wrapped to the RSA EK and bound to the AK's name, added to
 * the admission's confirmed reply. */
static int add_provision(struct inproc_server *s, struct fleet_buf *reply)
{
	struct fleet_wire_confirm_reply got, r;
	struct fleet_buf id, es;
	uint8_t name[2 + 64];
	size_t name_len = 0;
	static const char proof[] = "fleetd in-process proof of a passing check";
	int rc = -1;
	fb_init(&id);
	fb_init(&es);
	bool plain = fleet_wire_confirm_reply_decode(reply->data, reply->len, &got, NULL) ==
			     FLEET_OK &&
		     got.status == FLEET_WIRE_CONFIRMED && !got.has_provision;
	fleet_wire_confirm_reply_free(&got);
	if (!plain)
		goto out;
	memset(&r, 0, sizeof(r));
	r.status = FLEET_WIRE_CONFIRMED;
	if (RAND_bytes(s->code, sizeof(s->code)) != 1 ||
	    fleet_tpm_name(&s->ak.publicArea, name, sizeof(name), &name_len) != FLEET_OK ||
	    fleet_make_credential(&s->ek_rsa.publicArea, s->code, sizeof(s->code), name,
				  name_len, &id, &es, NULL) != FLEET_OK)
		goto out;
	r.has_provision = true;
	r.code.present = true;
	r.code.id_object.data = id.data;
	r.code.id_object.len = id.len;
	r.code.enc_secret.data = es.data;
	r.code.enc_secret.len = es.len;
	r.proof.data = (uint8_t *)proof;
	r.proof.len = sizeof(proof) - 1;
	fb_reset(reply);
	rc = fleet_wire_confirm_reply_encode(&r, reply) == FLEET_OK ? 0 : -1;
out:
	fb_free(&id);
	fb_free(&es);
	return rc;
}

/* ---- the transport: each request to the shipped admission ---------------- */

static enum tink_tx_result post(void *ctx, const char *path, const struct fleet_buf *body,
				size_t max_reply, struct fleet_buf *reply, long *http_status,
				struct fleet_errctx *ec)
{
	struct inproc_server *s = ctx;
	struct stderr_capture cap;
	const char *reject = NULL;
	int status = 404;
	fb_reset(reply);
	/* The admission journals to stderr (the daemon's --log-target
	 * stderr): kept, to read the refusal's reason, and passed on. */
	fleet_log_set_target(FLEET_LOG_STDERR);
	stderr_capture_start(&cap);
	unsigned *count = NULL;
	if (strcmp(path, "/v1/attest/intake") == 0) {
		count = &s->n_intake;
		saw_intake(s, body);
		status = fleet_admission_intake(s->adm, "127.0.0.1", body->data, body->len, reply,
						&reject);
		struct fleet_wire_intake_reply ir;
		memset(&ir, 0, sizeof(ir));
		s->challenged = status == 200 &&
				fleet_wire_intake_reply_decode(reply->data, reply->len, &ir,
							       NULL) == FLEET_OK &&
				ir.status == FLEET_WIRE_CHALLENGE;
		s->challenged_ecc = s->challenged && ir.cred_ecc.present;
		fleet_wire_intake_reply_free(&ir);
	} else if (strcmp(path, "/v1/attest/answer") == 0) {
		count = &s->n_answer;
		status = fleet_admission_answer(s->adm, body->data, body->len, reply, &reject);
		s->issued = status == 200 && says(reply, "admitted");
	} else if (strcmp(path, "/v1/attest/confirm") == 0) {
		count = &s->n_confirm;
		status = fleet_admission_confirm(s->adm, body->data, body->len, reply, &reject);
		s->confirmed = status == 200 && says(reply, "confirmed");
		if (s->confirmed && s->provision && add_provision(s, reply) != 0)
			status = 500;
	}
	char *journal = stderr_capture_end(&cap);
	fputs(journal, stderr);
	snprintf(s->journal, sizeof(s->journal), "%s", journal ? journal : "");
	if (status == 200 && says(reply, "refused"))
		last_reason(journal, s->reason);
	free(journal);
	if (reject)
		s->n_malformed++; /* the round's body did not decode: 4xx */
	else if (count)
		(*count)++;
	*http_status = status;
	if (s->after)
		s->after(s->after_arg, path);
	if (reply->len > max_reply) {
		fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "reply over %zu bytes", max_reply);
		return TINK_TX_FATAL;
	}
	return TINK_TX_OK;
}

struct tink_transport inproc_transport(struct inproc_server *s)
{
	struct tink_transport t = {.post = post, .ctx = s};
	return t;
}
