/*
 * nodes_file_parse.c: the nodes file's schema (docs/nodes-file.md).
 *
 *   version: 1
 *   nodes:
 *     - name: w1
 *       serial: ABC123
 *       status: planned
 *       class: worker
 *       ...
 *
 * Every field is checked here, with its line, so a typo is a refusal at
 * load and never a device that quietly lacks a declaration.
 */
#include "fleetd/inventory/nodes_file.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/hex.h"

enum {
	N_NAME, N_SERIAL, N_STATUS, N_IP4, N_CLASS, N_DISK, N_DISK_SERIAL, N_BMC, N_TPM, N_AMT,
	N_SB, N_PORT, N_EK, N_EK_ECC, N_ACTION, N__N
};
static const char *const node_keys[N__N] = {
	"name",          "serial",   "status",      "primary_ip4",
	"class",         "install_disk", "install_disk_serial", "bmc_type",
	"tpm_version",   "amt",      "secure_boot_expected", "expected_port",
	"approved_ek_hash", "approved_ek_hash_ecc", "desired_action",
};

/* NetBox v4's device status values, and the quarantine status fleetd sets. */
static const char *const statuses[] = {"offline", "active",          "planned", "staged",
				       "failed",  "inventory", "decommissioning", "quarantined"};

long fleet_nodes_file_id(const char *serial)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
	for (const unsigned char *p = (const unsigned char *)serial; *p; p++) {
		h ^= (uint64_t)tolower(*p);
		h *= 0x100000001b3ull;
	}
	h &= 0x3fffffffffffffffull;
	return h ? (long)h : 1;
}

static bool token_ok(const char *s, bool lower_only)
{
	if (!isalnum((unsigned char)s[0]))
		return false;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (!(isdigit(c) || islower(c) || (!lower_only && isupper(c)) || c == '-' ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

static bool ip4_ok(const char *s)
{
	char addr[20];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof(addr))
		return false;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	struct in_addr a;
	if (inet_pton(AF_INET, addr, &a) != 1)
		return false;
	if (!slash)
		return true;
	const char *p = slash + 1;
	size_t plen = strlen(p);
	if (plen < 1 || plen > 2 || (plen == 2 && p[0] == '0') || !isdigit((unsigned char)p[0]) ||
	    (plen == 2 && !isdigit((unsigned char)p[1])))
		return false;
	int v = atoi(p);
	return v >= 1 && v <= 32;
}

struct field_ctx {
	struct fleet_yaml *y;
	const yaml_node_t *v;
	const char *key;
};

#define BAD(fc, ...) fleet_yaml_fail((fc)->y, FLEET_E_MALFORMED, &(fc)->v->start_mark, __VA_ARGS__)

/* One field's value into d; each rule names the field. */
static fleet_err get_field(struct field_ctx *fc, int k, struct fleet_inv_device *d)
{
	struct fleet_yaml *y = fc->y;
	const yaml_node_t *v = fc->v;
	const char *key = node_keys[k];
	fleet_err e;
	bool b;
	char tmp[FLEET_INV_STR];
	switch (k) {
	case N_AMT:
	case N_SB:
		if ((e = fleet_yaml_bool(y, v, key, &b)))
			return e;
		*(k == N_AMT ? &d->amt : &d->secure_boot_expected) = b ? 1 : 0;
		return FLEET_OK;
	case N_TPM:
		/* Unquoted 2.0 is the number 2 to Terraform's yamldecode. */
		if (v->type == YAML_SCALAR_NODE && fleet_yaml_is_plain(v))
			return BAD(fc, "tpm_version must be quoted (\"2.0\"): unquoted it is a "
				       "number to other YAML readers");
		if ((e = fleet_yaml_str(y, v, key, d->tpm_version, sizeof(d->tpm_version))))
			return e;
		if (!d->tpm_version[0] || strspn(d->tpm_version, "0123456789.") !=
						  strlen(d->tpm_version))
			return BAD(fc, "tpm_version must be a version such as \"2.0\"");
		return FLEET_OK;
	default:
		break;
	}
	if ((e = fleet_yaml_str(y, v, key, tmp, sizeof(tmp))))
		return e;
	size_t len = strlen(tmp);
	switch (k) {
	case N_NAME:
		if (len == 0 || len > 63 || !token_ok(tmp, false))
			return BAD(fc, "name must be 1 to 63 letters, digits, '.', '-' or '_', "
				       "starting with a letter or digit");
		memcpy(d->name, tmp, len + 1);
		break;
	case N_SERIAL:
		if (len == 0 || tmp[0] == ' ' || tmp[len - 1] == ' ')
			return BAD(fc, "serial must be non-empty, without leading or trailing "
				       "spaces");
		memcpy(d->serial, tmp, len + 1);
		break;
	case N_STATUS: {
		size_t i;
		for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
			if (!strcmp(tmp, statuses[i]))
				break;
		if (i == sizeof(statuses) / sizeof(statuses[0]))
			return BAD(fc, "status must be one of offline, active, planned, staged, "
				       "failed, inventory, decommissioning, quarantined");
		memcpy(d->status, tmp, len + 1);
		break;
	}
	case N_IP4:
		if (len && (len >= sizeof(d->primary_ip4) || !ip4_ok(tmp)))
			return BAD(fc, "primary_ip4 must be an IPv4 address with an optional "
				       "/prefix, such as 10.0.0.11/24");
		memcpy(d->primary_ip4, tmp, len + 1);
		break;
	case N_CLASS:
		if (len == 0 || len > 63 || !token_ok(tmp, false))
			return BAD(fc, "class must be 1 to 63 letters, digits, '.', '-' or '_'");
		memcpy(d->class_name, tmp, len + 1);
		break;
	case N_DISK:
		if (len && (strncmp(tmp, "/dev/", 5) != 0 || len == 5 || strchr(tmp, ' ')))
			return BAD(fc, "install_disk must be a device path under /dev/, without "
				       "spaces");
		memcpy(d->install_disk, tmp, len + 1);
		break;
	case N_BMC:
		if (len && !token_ok(tmp, false))
			return BAD(fc, "bmc_type must be letters, digits, '.', '-' or '_'");
		memcpy(d->bmc_type, tmp, len + 1);
		break;
	case N_DISK_SERIAL:
		memcpy(d->install_disk_serial, tmp, len + 1);
		break;
	case N_PORT:
		memcpy(d->expected_port, tmp, len + 1);
		break;
	case N_EK:
	case N_EK_ECC:
		if (len && (len != 64 || !fleet_hex_is_lower(tmp, 64)))
			return BAD(fc, "%s must be 64 lowercase hex digits (SHA-256 of the EK's "
				       "SubjectPublicKeyInfo), this one has %zu characters",
				       key, len);
		memcpy(k == N_EK ? d->approved_ek_hash : d->approved_ek_hash_ecc, tmp, len + 1);
		break;
	case N_ACTION:
		if (len && strcmp(tmp, "none") != 0 && strcmp(tmp, "provision") != 0)
			return BAD(fc, "desired_action must be none or provision");
		memcpy(d->desired_action, tmp, len + 1);
		break;
	}
	return FLEET_OK;
}

static fleet_err get_node(struct fleet_yaml *y, int idx, const yaml_mark_t *from,
			  struct fleet_inv_device *d, yaml_mark_t *serial_mark,
			  yaml_mark_t *name_mark)
{
	yaml_node_t *n;
	int vals[N__N];
	yaml_mark_t marks[N__N];
	fleet_err e;
	if ((e = fleet_yaml_reach(y, idx, from, &n)) ||
	    (e = fleet_yaml_want(y, n, YAML_MAPPING_NODE, "a node")) ||
	    (e = fleet_yaml_keys(y, n, node_keys, N__N, vals, marks)))
		return e;
	memset(d, 0, sizeof(*d));
	d->amt = -1;
	d->secure_boot_expected = -1;
	static const int required[] = {N_NAME, N_SERIAL, N_STATUS, N_CLASS};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!vals[required[i]])
			return fleet_yaml_fail(y, FLEET_E_MALFORMED, &n->start_mark,
					       "node is missing key '%s'", node_keys[required[i]]);
	for (int k = 0; k < N__N; k++) {
		if (!vals[k])
			continue;
		struct field_ctx fc = {.y = y, .key = node_keys[k]};
		yaml_node_t *v;
		if ((e = fleet_yaml_reach(y, vals[k], &marks[k], &v)))
			return e;
		fc.v = v;
		if ((e = get_field(&fc, k, d)))
			return e;
	}
	*serial_mark = marks[N_SERIAL];
	*name_mark = marks[N_NAME];
	d->id = fleet_nodes_file_id(d->serial);
	return FLEET_OK;
}

static fleet_err get_nodes(struct fleet_yaml *y, int idx, const yaml_mark_t *from,
			   struct fleet_inv_device **out, size_t *n_out)
{
	yaml_node_t *list;
	fleet_err e;
	if ((e = fleet_yaml_reach(y, idx, from, &list)) ||
	    (e = fleet_yaml_want(y, list, YAML_SEQUENCE_NODE, "nodes")))
		return e;
	size_t count = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (count > FLEET_NODES_FILE_MAX_NODES)
		return fleet_yaml_fail(y, FLEET_E_TOO_LARGE, &list->start_mark,
				       "nodes has %zu entries, at most %d", count,
				       FLEET_NODES_FILE_MAX_NODES);
	struct fleet_inv_device *d = calloc(count ? count : 1, sizeof(*d));
	if (!d)
		return fleet_yaml_fail(y, FLEET_E_NOMEM, NULL, "out of memory");
	size_t n = 0;
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++, n++) {
		yaml_mark_t sm, nm;
		if ((e = get_node(y, *it, &list->start_mark, &d[n], &sm, &nm)))
			goto fail;
		/* Serials are compared as SMBIOS reports them, case aside:
		 * two entries one case apart would make a lookup a guess. */
		for (size_t j = 0; j < n; j++) {
			if (!strcasecmp(d[j].serial, d[n].serial)) {
				e = fleet_yaml_fail(y, FLEET_E_MALFORMED, &sm,
						    "serial '%s' is also node %zu's (serials are "
						    "compared ignoring case)", d[n].serial, j + 1);
				goto fail;
			}
			if (!strcasecmp(d[j].name, d[n].name)) {
				e = fleet_yaml_fail(y, FLEET_E_MALFORMED, &nm,
						    "name '%s' is also node %zu's", d[n].name,
						    j + 1);
				goto fail;
			}
			if (d[j].id == d[n].id) {
				e = fleet_yaml_fail(y, FLEET_E_MALFORMED, &sm,
						    "serial '%s' and node %zu's serial hash to "
						    "the same id; refusing rather than guessing", d[n].serial, j + 1);
				goto fail;
			}
		}
	}
	*out = d;
	*n_out = n;
	return FLEET_OK;
fail:
	free(d);
	return e;
}

fleet_err fleet_nodes_file_parse(const uint8_t *buf, size_t len, struct fleet_inv_device **out,
				 size_t *n, struct fleet_errctx *ec)
{
	*out = NULL;
	*n = 0;
	struct fleet_yaml y;
	fleet_err e = fleet_yaml_load(&y, buf, len, FLEET_NODES_FILE_MAX_SIZE, "the nodes file",
				      ec);
	if (e)
		return e;
	static const char *const top[] = {"version", "nodes"};
	int vals[2];
	yaml_mark_t marks[2];
	yaml_node_t *v;
	if ((e = fleet_yaml_want(&y, y.root, YAML_MAPPING_NODE, "the nodes file")) ||
	    (e = fleet_yaml_keys(&y, y.root, top, 2, vals, marks)))
		goto out;
	for (int k = 0; k < 2; k++)
		if (!vals[k]) {
			e = fleet_yaml_fail(&y, FLEET_E_MALFORMED, &y.root->start_mark,
					    "missing key '%s'", top[k]);
			goto out;
		}
	if ((e = fleet_yaml_reach(&y, vals[0], &marks[0], &v)))
		goto out;
	if (!(fleet_yaml_is_plain(v) && fleet_yaml_is(v, "1"))) {
		e = fleet_yaml_fail(&y, FLEET_E_MALFORMED, &v->start_mark,
				    "version must be %d (the only nodes-file version this fleetd "
				    "reads)", FLEET_NODES_FILE_VERSION);
		goto out;
	}
	e = get_nodes(&y, vals[1], &marks[1], out, n);
out:
	fleet_yaml_free(&y);
	return e;
}
