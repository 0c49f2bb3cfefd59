/*
 * test_config.c: fleetd.yaml. Defaults are the documented ones; every key
 * reads into its field; each kind of mistake is refused with its line; the
 * rules across keys hold (the inventory's section, binding_author); the
 * NetBox token file must be 0600, and what is read is what was checked.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleetd/config/config.h"

#define BASE                                                                                  \
	"tls:\n  cert: /etc/fleetd/tls.crt\n  key: /etc/fleetd/tls.key\n"                     \
	"classes:\n  worker: worker.yaml\n"
#define FILE_INV BASE "inventory:\n  kind: file\n  file:\n    path: /etc/fleetd/nodes.yaml\n"

static fleet_err parse(const char *y, struct fleet_config *c, struct fleet_errctx *err)
{
	return fleet_config_parse((const uint8_t *)y, strlen(y), c, err);
}

static void refused_at(const char *y, unsigned line, const char *msg_part)
{
	struct fleet_config c;
	struct fleet_errctx err;
	fleet_err e = parse(y, &c, &err);
	if (e == FLEET_OK || err.line != line || !strstr(err.detail, msg_part))
		fail_msg("want refusal at line %u containing '%s', got %s at %u: %s", line,
			 msg_part, fleet_err_str(e), err.line, err.detail);
}

static void test_minimal_file_inventory_defaults(void **state)
{
	(void)state;
	struct fleet_config c;
	struct fleet_errctx err;
	if (parse(FILE_INV, &c, &err))
		fail_msg("line %u: %s", err.line, err.detail);
	assert_int_equal(c.inventory, FLEET_INVENTORY_FILE);
	assert_string_equal(c.nodes_file, "/etc/fleetd/nodes.yaml");
	assert_string_equal(c.binding_author, "nodes-file");
	assert_string_equal(c.store, ""); /* SQLite in state_dir */
	assert_int_equal(parse(FILE_INV "store: postgresql://fleetd@db/fleetd\n", &c, &err), FLEET_OK);
	assert_string_equal(c.store, "postgresql://fleetd@db/fleetd");
	/* The defaults docs/configuration.md lists. */
	assert_string_equal(c.listen_address, "::");
	assert_int_equal(c.listen_port, 8443);
	assert_int_equal(c.listen_request_deadline_seconds, 10);
	assert_int_equal(c.listen_body_memory_bytes, 16u * 1024 * 1024);
	assert_int_equal(c.listen_rate_per_second, 5);
	assert_int_equal(c.listen_rate_burst, 20);
	assert_string_equal(c.state_dir, "/var/lib/fleetd");
	assert_string_equal(c.roots_dir, "/etc/fleetd/roots");
	assert_string_equal(c.ca_dir, "/var/lib/fleetd/ca");
	assert_string_equal(c.profiles_dir, "/etc/fleetd/profiles");
	assert_int_equal(c.session_ttl_seconds, 600);
	assert_int_equal(c.max_open_sessions, 1024);
	assert_int_equal(c.cert_validity_days, 90);
	assert_int_equal(c.verdict_log_max_bytes, 16u * 1024 * 1024);
	assert_int_equal(c.verdict_log_max_files, 5);
	assert_int_equal(c.pass_interval_seconds, 3600);
	assert_true(c.metrics);
	assert_int_equal(c.max_body_bytes, 2 * 1024 * 1024); /* FLEET_WIRE_MAX_BODY */
	assert_string_equal(fleet_config_profile_for(&c, "worker"), "worker.yaml");
	assert_null(fleet_config_profile_for(&c, "control-plane"));
}

static void test_every_key(void **state)
{
	(void)state;
	const char *y = "listen:\n  address: 10.0.0.1\n  port: 9443\n"
			"  request_deadline_seconds: 7\n  body_memory_bytes: 33554432\n"
			"  rate_per_second: 3\n  rate_burst: 9\n"
			"tls:\n  cert: /a/c.pem\n  key: /a/k.pem\n"
			"state_dir: /srv/fleetd\nroots_dir: /srv/roots\nca_dir: /srv/ca\n"
			"profiles_dir: /srv/profiles\n"
			"classes:\n  worker: worker.yaml\n  control-plane: cp.yaml\n"
			"inventory:\n  kind: netbox\n  netbox:\n    url: https://netbox.lan/\n"
			"    token_file: /etc/fleetd/netbox.token\n    ca_file: /etc/fleetd/nb-ca.pem\n"
			"    timeout_ms: 5000\n    page_size: 250\n"
			"binding_author: terraform\n"
			"sessions:\n  ttl_seconds: 120\n  max_open: 64\n"
			"certificates:\n  validity_days: 365\n"
			"verdict_log:\n  max_bytes: 1048576\n  max_files: 9\n"
			"pass:\n  interval_seconds: 600\n"
			"metrics:\n  enabled: false\n"
			"http:\n  max_body_bytes: 2097152\n";
	struct fleet_config c;
	struct fleet_errctx err;
	if (parse(y, &c, &err))
		fail_msg("line %u: %s", err.line, err.detail);
	assert_string_equal(c.listen_address, "10.0.0.1");
	assert_int_equal(c.listen_port, 9443);
	assert_int_equal(c.listen_request_deadline_seconds, 7);
	assert_int_equal(c.listen_body_memory_bytes, 33554432);
	assert_int_equal(c.listen_rate_per_second, 3);
	assert_int_equal(c.listen_rate_burst, 9);
	assert_string_equal(c.tls_cert, "/a/c.pem");
	assert_string_equal(c.tls_key, "/a/k.pem");
	assert_string_equal(c.state_dir, "/srv/fleetd");
	assert_string_equal(c.roots_dir, "/srv/roots");
	assert_string_equal(c.ca_dir, "/srv/ca");
	assert_string_equal(c.profiles_dir, "/srv/profiles");
	assert_int_equal(c.n_classes, 2);
	assert_string_equal(fleet_config_profile_for(&c, "control-plane"), "cp.yaml");
	assert_int_equal(c.inventory, FLEET_INVENTORY_NETBOX);
	assert_string_equal(c.netbox_url, "https://netbox.lan/");
	assert_string_equal(c.netbox_token_file, "/etc/fleetd/netbox.token");
	assert_string_equal(c.netbox_ca_file, "/etc/fleetd/nb-ca.pem");
	assert_int_equal(c.netbox_timeout_ms, 5000);
	assert_int_equal(c.netbox_page_size, 250);
	assert_string_equal(c.binding_author, "terraform");
	assert_int_equal(c.session_ttl_seconds, 120);
	assert_int_equal(c.max_open_sessions, 64);
	assert_int_equal(c.cert_validity_days, 365);
	assert_int_equal(c.verdict_log_max_bytes, 1048576);
	assert_int_equal(c.verdict_log_max_files, 9);
	assert_int_equal(c.pass_interval_seconds, 600);
	assert_false(c.metrics);
	assert_int_equal(c.max_body_bytes, 2097152);
}

static void test_spire_trust_domain(void **state)
{
	(void)state;
	struct fleet_config c;
	struct fleet_errctx err;
	assert_int_equal(parse(FILE_INV, &c, &err), FLEET_OK);
	assert_string_equal(c.spire_trust_domain, ""); /* unset: no spire-nodes.json */
	assert_int_equal(parse(FILE_INV "spire:\n  trust_domain: fleet.example\n", &c, &err),
			 FLEET_OK);
	assert_string_equal(c.spire_trust_domain, "fleet.example");
}

/* The provision section: what a render and a Workflow need, each refused
 * when missing or unsafe, with the section's line. */
#define PROV_OK                                                                               \
	"provision:\n  classes_file: /etc/fleetd/classes.json\n"                              \
	"  class_inputs_file: /etc/fleetd/class-inputs.json\n"                                 \
	"  talosctl: /usr/bin/talosctl\n  secrets_file: /etc/fleetd/talos-secrets.yaml\n"     \
	"  config_host: fleetd.folly.lan:8443\n"
#define TOOLS "  tools_image: ghcr.io/folly/fleet-tools@sha256:" \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"

static void test_provision_section(void **state)
{
	(void)state;
	struct fleet_config c;
	struct fleet_errctx err;
	assert_int_equal(parse(FILE_INV PROV_OK TOOLS, &c, &err), FLEET_OK);
	assert_true(c.provision_enabled);
	assert_string_equal(c.provision_talosctl, "/usr/bin/talosctl");
	assert_string_equal(c.provision_namespace, "tinkerbell");
	assert_string_equal(c.provision_template, "folly-talos-install");
	assert_int_equal(c.provision_delivery_deadline_seconds, 30);
	assert_int_equal(c.provision_render_timeout_seconds, 15);
	assert_string_equal(c.provision_kubeconfig, ""); /* in-cluster */
	/* without the section, nothing installs */
	assert_int_equal(parse(FILE_INV, &c, &err), FLEET_OK);
	assert_false(c.provision_enabled);
	unsigned line = 10; /* the provision section's mapping, after FILE_INV */
	refused_at(FILE_INV "provision:\n  classes_file: /etc/fleetd/classes.json\n"
			    "  class_inputs_file: /etc/fleetd/class-inputs.json\n",
		   line, "talosctl and secrets_file are required");
	refused_at(FILE_INV PROV_OK, line, "tools_image and config_host are required");
	refused_at(FILE_INV PROV_OK "  tools_image: ghcr.io/folly/fleet-tools:latest\n", line,
		   "pinned by digest");
	refused_at(FILE_INV PROV_OK TOOLS "  talosctl_x: 1\n", 17, "talosctl_x");
	refused_at(FILE_INV
		   "provision:\n  classes_file: /etc/fleetd/classes.json\n"
		   "  class_inputs_file: /etc/fleetd/class-inputs.json\n"
		   "  talosctl: talosctl\n  secrets_file: /etc/fleetd/s.yaml\n"
		   "  config_host: h\n" TOOLS,
		   13, "absolute path"); /* execve, never PATH */
	refused_at(FILE_INV PROV_OK TOOLS "  tinkerbell_namespace: Tink_System\n", line,
		   "DNS labels");
	refused_at(FILE_INV
		   "provision:\n  classes_file: /etc/fleetd/classes.json\n"
		   "  class_inputs_file: /etc/fleetd/class-inputs.json\n"
		   "  talosctl: /usr/bin/talosctl\n  secrets_file: /etc/fleetd/s.yaml\n"
		   "  config_host: \"h/x?y\"\n" TOOLS,
		   line, "config_host must be a host");
	refused_at(FILE_INV PROV_OK TOOLS "  delivery_deadline_seconds: 1\n", 17, "delivery_deadline");
}

/* The join section: off without it; trust_domain required; the approval's
 * three words; each number's range. */
static void test_join_section(void **state)
{
	(void)state;
	struct fleet_config c;
	struct fleet_errctx err;
	assert_int_equal(parse(FILE_INV, &c, &err), FLEET_OK);
	assert_false(c.join_enabled);
	assert_int_equal(parse(FILE_INV "join:\n  trust_domain: folly.example\n", &c, &err),
			 FLEET_OK);
	assert_true(c.join_enabled);
	assert_string_equal(c.join_trust_domain, "folly.example");
	assert_int_equal(c.join_cert_ttl_seconds, 86400);
	assert_int_equal(c.join_x509pop_grace_seconds, 7 * 86400);
	assert_int_equal(c.join_x509pop_window_seconds, 60);
	assert_string_equal(c.join_discovery_approval, "never");
	assert_int_equal(c.join_discovery_cert_ttl_seconds, 7200);
	assert_string_equal(c.join_seal_key, ""); /* <state_dir>/join/seal.key */
	assert_int_equal(parse(FILE_INV "join:\n  trust_domain: t\n  discovery_approval: always\n"
					"  on_refusal: /usr/libexec/refused\n",
			       &c, &err),
			 FLEET_OK);
	assert_string_equal(c.join_discovery_approval, "always");
	assert_string_equal(c.join_on_refusal, "/usr/libexec/refused");
	unsigned line = 10; /* the join section's mapping, after FILE_INV */
	refused_at(FILE_INV "join:\n  cert_ttl_seconds: 3600\n", line, "join.trust_domain is required");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  discovery_approval: sometimes\n", line,
		   "never, unknown-machines or always");
	refused_at(FILE_INV "join:\n  trust_domain: Folly.Example\n", 11, "join.trust_domain may hold");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  cert_ttl_seconds: 90000\n", 12,
		   "cert_ttl_seconds");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  discovery_cert_ttl_seconds: 7201\n", 12,
		   "discovery_cert_ttl_seconds");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  on_refusal: refused\n", 12,
		   "absolute path");
}

/* join.tpm: off without it; its defaults; each word's and number's rule,
 * refused at the section's line. */
static void test_join_tpm_section(void **state)
{
	(void)state;
	struct fleet_config c;
	struct fleet_errctx err;
	assert_int_equal(parse(FILE_INV "join:\n  trust_domain: t\n", &c, &err), FLEET_OK);
	assert_false(c.join_tpm_enabled);
	assert_int_equal(parse(FILE_INV "join:\n  trust_domain: t\n  tpm:\n"
					"    enrollment_pool: pool-a\n",
			       &c, &err),
			 FLEET_OK);
	assert_true(c.join_tpm_enabled);
	assert_string_equal(c.join_tpm_node_key, "certified");
	assert_string_equal(c.join_tpm_role, "node");
	assert_string_equal(c.join_tpm_pcr_selection, "sha256:0,1,2,3,4,5,6,7");
	assert_int_equal(c.join_tpm_challenge_ttl_seconds, 300);
	assert_false(c.join_tpm_allow_uncertified_ek);
	assert_string_equal(c.join_tpm_challenge_key, ""); /* <state_dir>/join/tpm-challenge.key */
	assert_int_equal(parse(FILE_INV "join:\n  trust_domain: t\n"
					"  cloud_iid_file: /etc/fleetd/cloud-iid.yaml\n  tpm:\n"
					"    node_key: any\n    pcr_selection: sha256:0,7\n"
					"    allow_uncertified_ek: true\n",
			       &c, &err),
			 FLEET_OK);
	assert_string_equal(c.join_tpm_node_key, "any");
	assert_true(c.join_tpm_allow_uncertified_ek);
	assert_string_equal(c.join_cloud_iid_file, "/etc/fleetd/cloud-iid.yaml");
	unsigned line = 12; /* join.tpm's mapping */
	refused_at(FILE_INV "join:\n  trust_domain: t\n  tpm:\n    node_key: file\n", line,
		   "certified or any");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  tpm:\n    role: ramdisk\n", line,
		   "node or site");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  tpm:\n    pcr_selection: pcr0\n", line,
		   "PCR selection");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  tpm:\n    enrollment_site: s1\n", line,
		   "enrollment_site needs enrollment_pool");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  tpm:\n    challenge_ttl_seconds: 301\n",
		   13, "challenge_ttl_seconds");
	refused_at(FILE_INV "join:\n  trust_domain: t\n  tpm:\n    colour: blue\n", 13,
		   "unknown key 'colour'");
}

static void test_refusals(void **state)
{
	(void)state;
	refused_at(FILE_INV "colour: blue\n", 10, "unknown key 'colour'");
	refused_at(FILE_INV "listen:\n  port: 1\n  port: 2\n", 12, "duplicate key 'port'");
	refused_at(FILE_INV "listen:\n  port: 70000\n", 11, "from 1 to 65535");
	refused_at(FILE_INV "listen:\n  port: \"8443\"\n", 11, "unquoted number");
	refused_at(FILE_INV "listen:\n  port: 0100\n", 11, "whole number");
	refused_at(FILE_INV "listen:\n  address: localhost\n", 11, "IPv4 or IPv6");
	refused_at(FILE_INV "listen:\n  request_deadline_seconds: 0\n", 11, "from 1 to 3600");
	refused_at(FILE_INV "listen:\n  body_memory_bytes: 1024\n", 11,
		   "from 65536 to 4294967296");
	refused_at(FILE_INV "listen:\n  rate_per_second: 0\n", 11, "from 1 to 100000");
	refused_at(FILE_INV "listen:\n  rate_burst: 100001\n", 11, "from 1 to 100000");
	/* The budget must hold one body at the cap. */
	refused_at(FILE_INV "listen:\n  body_memory_bytes: 1048576\n", 10,
		   "must be at least http.max_body_bytes");
	refused_at(FILE_INV "http:\n  max_body_bytes: 33554432\n", 10,
		   "listen.body_memory_bytes (16777216) must be at least");
	refused_at(FILE_INV "state_dir: var/lib/fleetd\n", 10, "absolute path");
	refused_at(FILE_INV "state_dir: /var/lib/../etc\n", 10, "absolute path");
	/* store: only a PostgreSQL URI (the SQLite store is state_dir's) */
	refused_at(FILE_INV "store: /var/lib/fleetd/fleetd.db\n", 10, "postgres:// or postgresql://");
	refused_at(FILE_INV "store: mysql://db/fleetd\n", 10, "postgres:// or postgresql://");
	refused_at(FILE_INV "metrics:\n  enabled: yes\n", 11, "true or false");
	refused_at(FILE_INV "certificates:\n  validity_days: 30\n", 11, "from 31 to 3650");
	refused_at(FILE_INV "verdict_log:\n  max_files: 0\n", 11, "from 1 to 100");
	refused_at(FILE_INV "binding_author: terraform\n", 10, "must be 'nodes-file'");
	refused_at(FILE_INV "spire:\n  trust_domain: Fleet/Example\n", 11, "a-z, 0-9");
	refused_at(FILE_INV "spire:\n  domain: fleet.example\n", 11, "unknown key 'domain'");
	refused_at(FILE_INV "sessions: &s\n  ttl_seconds: 60\npass: *s\n", 12, "aliases");
	refused_at(BASE "inventory:\n  kind: ldap\n", 7, "netbox or file");
	refused_at(BASE "inventory:\n  kind: file\n", 7, "inventory.file.path is required");
	refused_at(FILE_INV "  netbox:\n    url: https://nb/\n", 10, "kind is file");
	refused_at(BASE "inventory:\n  kind: netbox\n  netbox:\n    url: https://nb/\n"
		   "    token_file: /t\n", 1, "binding_author");
	refused_at(BASE "inventory:\n  kind: netbox\n  netbox:\n    url: http://nb/\n"
		   "    token_file: /t\nbinding_author: tf\n", 9, "https://");
	refused_at(BASE "inventory:\n  kind: netbox\n  netbox:\n    url: https://u:p@nb/\n"
		   "    token_file: /t\nbinding_author: tf\n", 9, "without credentials");
	refused_at(BASE "inventory:\n  kind: netbox\n  netbox:\n    url: https://nb/\n"
		   "    token: abc\nbinding_author: tf\n", 10, "unknown key 'token'");
	refused_at("classes:\n  worker: w.yaml\ninventory:\n  kind: file\n  file:\n"
		   "    path: /n.yaml\n", 1, "tls.cert and tls.key are required");
	refused_at("tls:\n  cert: /c\n  key: /k\ninventory:\n  kind: file\n  file:\n"
		   "    path: /n.yaml\n", 1, "classes is required");
	refused_at(FILE_INV "classes:\n  x: y.yaml\n", 10, "duplicate key 'classes'");
	refused_at("tls:\n  cert: /c\n  key: /k\nclasses:\n  worker: ../../etc/shadow\n", 5,
		   "file name in profiles_dir");
	refused_at("tls:\n  cert: /c\n  key: /k\nclasses:\n  worker: a.yaml\n  worker: b.yaml\n",
		   6, "duplicate key 'worker'");
	refused_at("tls:\n  cert: /c\n  key: /k\nclasses: {}\n", 4, "1 to 64 classes");
	refused_at("- a\n- b\n", 1, "must be a mapping");
	refused_at("", 0, "empty");
}

/* A NetBox configuration whose token file is dir/netbox.token (tok). */
static void netbox_text(const char *dir, char *tok, size_t toklen, char *text, size_t textlen)
{
	snprintf(tok, toklen, "%s/netbox.token", dir);
	snprintf(text, textlen,
		 BASE "inventory:\n  kind: netbox\n  netbox:\n    url: https://nb/\n"
		      "    token_file: %s\nbinding_author: tf\n", tok);
}

/* path holds text, with mode. */
static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_load_and_token_file(void **state)
{
	(void)state;
	char *dir = make_temp_dir("config");
	char cfg[512], tok[512], text[2048];
	snprintf(cfg, sizeof(cfg), "%s/fleetd.yaml", dir);
	netbox_text(dir, tok, sizeof(tok), text, sizeof(text));
	FILE *fp = fopen(cfg, "w");
	fputs(text, fp);
	fclose(fp);
	struct fleet_config c;
	struct fleet_errctx err;
	if (fleet_config_load(cfg, &c, &err))
		fail_msg("line %u: %s", err.line, err.detail);
	struct fleet_errctx tec;
	assert_int_equal(fleet_config_check_files(&c, &tec), FLEET_E_NOT_FOUND);
	fp = fopen(tok, "w");
	fputs("0123456789abcdef\n", fp);
	fclose(fp);
	assert_int_equal(chmod(tok, 0640), 0);
	assert_int_equal(fleet_config_check_files(&c, &tec), FLEET_E_UNSAFE);
	assert_non_null(strstr(tec.detail, "mode 0600"));
	assert_string_equal(tec.reason, "group-readable"); /* the reader's, passed on */
	assert_int_equal(chmod(tok, 0600), 0);
	assert_int_equal(fleet_config_check_files(&c, &tec), FLEET_OK);
	assert_int_equal(chmod(tok, 0400), 0);
	assert_int_equal(fleet_config_check_files(&c, &tec), FLEET_OK);
	snprintf(cfg, sizeof(cfg), "%s/missing.yaml", dir);
	assert_int_not_equal(fleet_config_load(cfg, &c, &err), FLEET_OK);
	assert_non_null(strstr(err.detail, "cannot read"));
	/* The reader's code, reason and errno passed on (lib/file_read.h),
	 * words around its sentence; no place in the file. */
	assert_int_equal(err.err, FLEET_E_NOT_FOUND);
	assert_string_equal(err.reason, "not-found");
	assert_int_equal(err.sys_errno, ENOENT);
	assert_int_equal(err.line, 0);
	assert_true(strncmp(err.detail, "cannot read the configuration ", 30) == 0);
	rm_rf(dir);
	free(dir);
}

/*
 * The token file swapped between fleetd's start-up check and its read.
 * fleetd checks the token (fleet_config_check_files) when it starts, then
 * opens the store and the rest, then reads the token to open NetBox. It
 * used to read it again by path (fb_read_file), unchecked: a file renamed
 * over the token in between, world-readable and not the operator's, was
 * what it sent to NetBox. Now the read checks the descriptor it reads, so
 * the swapped file is refused, and a symlink put there too.
 */
static void test_token_swapped_after_check(void **state)
{
	(void)state;
	char *dir = make_temp_dir("config-token");
	char tok[512], evil[512], real[512], text[2048];
	netbox_text(dir, tok, sizeof(tok), text, sizeof(text));
	snprintf(evil, sizeof(evil), "%s/evil", dir);
	snprintf(real, sizeof(real), "%s/real.token", dir);
	struct fleet_config c;
	struct fleet_errctx yerr;
	if (parse(text, &c, &yerr))
		fail_msg("line %u: %s", yerr.line, yerr.detail);
	write_file(tok, "  0123456789abcdef0123456789abcdef01234567\n", 0600);
	struct fleet_errctx tec;
	char token[FLEET_CONFIG_TOKEN_MAX + 1];
	assert_int_equal(fleet_config_check_files(&c, &tec), FLEET_OK);
	assert_int_equal(fleet_config_read_token(&c, token, sizeof(token), &tec),
			 FLEET_OK);
	assert_string_equal(token, "0123456789abcdef0123456789abcdef01234567");

	/* The swap: another file, readable by all, renamed over the token. */
	write_file(evil, "ffffffffffffffffffffffffffffffffffffffff\n", 0644);
	assert_int_equal(rename(evil, tok), 0);
	memset(token, 0, sizeof(token));
	assert_int_equal(fleet_config_read_token(&c, token, sizeof(token), &tec),
			 FLEET_E_UNSAFE);
	assert_non_null(strstr(tec.detail, "world-readable"));
	assert_non_null(strstr(tec.detail, tok));
	assert_string_equal(token, ""); /* nothing of it was handed out */

	/* A symlink to a good token: refused, not followed. */
	write_file(real, "0123456789abcdef0123456789abcdef01234567\n", 0600);
	unlink(tok);
	assert_int_equal(symlink(real, tok), 0);
	assert_int_equal(fleet_config_check_files(&c, &tec), FLEET_E_UNSAFE);
	assert_non_null(strstr(tec.detail, "symlink"));
	assert_int_equal(fleet_config_read_token(&c, token, sizeof(token), &tec),
			 FLEET_E_UNSAFE);

	/* What is inside: one token, nothing else. */
	static const struct {
		const char *text, *says;
	} bad[] = {{"one two\n", "more than one token"}, {" \n\t\n", "empty"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unlink(tok);
		write_file(tok, bad[i].text, 0600);
		assert_int_equal(fleet_config_read_token(&c, token, sizeof(token), &tec),
				 FLEET_E_MALFORMED);
		assert_non_null(strstr(tec.detail, bad[i].says));
	}
	rm_rf(dir);
	free(dir);
}

/* fleetd.yaml is configuration: a link or a file others may write is not
 * read. */
static void test_config_file_rules(void **state)
{
	(void)state;
	char *dir = make_temp_dir("config-rules");
	char cfg[512], link[512];
	snprintf(cfg, sizeof(cfg), "%s/fleetd.yaml", dir);
	snprintf(link, sizeof(link), "%s/link.yaml", dir);
	write_file(cfg, FILE_INV, 0644);
	struct fleet_config c;
	struct fleet_errctx err;
	if (fleet_config_load(cfg, &c, &err))
		fail_msg("line %u: %s", err.line, err.detail);
	assert_int_equal(chmod(cfg, 0666), 0);
	assert_int_equal(fleet_config_load(cfg, &c, &err), FLEET_E_UNSAFE);
	assert_non_null(strstr(err.detail, "world-writable"));
	assert_string_equal(err.reason, "world-writable");
	assert_int_equal(chmod(cfg, 0644), 0);
	assert_int_equal(symlink(cfg, link), 0);
	assert_int_equal(fleet_config_load(link, &c, &err), FLEET_E_UNSAFE);
	assert_non_null(strstr(err.detail, "symlink"));
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_file_inventory_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_spire_trust_domain),
		cmocka_unit_test(test_provision_section),
		cmocka_unit_test(test_join_section),
		cmocka_unit_test(test_join_tpm_section),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_load_and_token_file),
		cmocka_unit_test(test_token_swapped_after_check),
		cmocka_unit_test(test_config_file_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
