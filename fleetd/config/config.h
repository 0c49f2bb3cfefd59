/*
 * config.h: /etc/fleetd/fleetd.yaml, the daemon's one configuration file.
 * docs/configuration.md documents every key with its default.
 *
 * Loaded strictly (yaml_strict.h): unknown keys, duplicates, aliases, tags,
 * wrong types and values out of range are refused with their line. Paths
 * must be absolute. Secrets are never inline: the NetBox token is read from
 * token_file, which must be owned by this user with mode 0600 or stricter
 * (fleet_config_read_token). Both files go through lib/file_read.h.
 */
#ifndef FLEETD_CONFIG_H
#define FLEETD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/yaml_strict.h"
#include "lib/fleet_err.h"

#define FLEET_CONFIG_DEFAULT_PATH "/etc/fleetd/fleetd.yaml"
#define FLEET_CONFIG_MAX_SIZE (64u * 1024)
#define FLEET_CONFIG_PATH_MAX 256
#define FLEET_CONFIG_MAX_CLASSES 64

enum fleet_inventory_kind { FLEET_INVENTORY_NETBOX = 1, FLEET_INVENTORY_FILE };

struct fleet_config_class {
	char name[64];                       /* the class (a profile's `class`) */
	char profile[FLEET_CONFIG_PATH_MAX]; /* file under profiles_dir */
};

struct fleet_config {
	char listen_address[64];
	uint16_t listen_port;
	uint32_t listen_request_deadline_seconds; /* headers and body of one request */
	uint64_t listen_body_memory_bytes;        /* request bodies in flight, all told */
	uint32_t listen_rate_per_second;          /* POSTs per source, sustained */
	uint32_t listen_rate_burst;               /* and in a burst */
	char tls_cert[FLEET_CONFIG_PATH_MAX];
	char tls_key[FLEET_CONFIG_PATH_MAX];

	char state_dir[FLEET_CONFIG_PATH_MAX];
	/* "": the SQLite store in state_dir; postgres://… or postgresql://…
	 * (a libpq URI): the PostgreSQL store several replicas share
	 * (docs/store.md, "Several replicas"). state_dir still holds the
	 * verdict log and the keys. */
	char store[512];
	char roots_dir[FLEET_CONFIG_PATH_MAX];
	char ca_dir[FLEET_CONFIG_PATH_MAX];
	char profiles_dir[FLEET_CONFIG_PATH_MAX];
	size_t n_classes;
	struct fleet_config_class classes[FLEET_CONFIG_MAX_CLASSES];

	enum fleet_inventory_kind inventory;
	char netbox_url[FLEET_CONFIG_PATH_MAX];
	char netbox_token_file[FLEET_CONFIG_PATH_MAX];
	char netbox_ca_file[FLEET_CONFIG_PATH_MAX]; /* "": the system's roots */
	uint32_t netbox_timeout_ms;
	uint32_t netbox_page_size;
	char nodes_file[FLEET_CONFIG_PATH_MAX];
	char binding_author[128];

	uint32_t session_ttl_seconds;
	uint32_t max_open_sessions;
	/* An unproven session (challenged, not yet answered) ends this long
	 * after its intake: a TPM answers in seconds, a forgery never. */
	uint32_t session_answer_seconds;
	/* One admission round's own deadline: past it, fleetd issues and
	 * records nothing, keeps the session and answers 503 (the machine
	 * retries). Shorter than the client's per-request timeout
	 * (tink-attest --timeout, 30 s), so fleetd never finishes a round
	 * the machine has already given up on. */
	uint32_t session_round_seconds;
	/* Intake's inventory lookups, fleet-wide (a token bucket with a burst
	 * of twice this): what a flood of intakes can cost NetBox. */
	uint32_t inventory_lookups_per_second;
	/* How long intake may reuse a device lookup (0: never); the answer's
	 * and confirm's re-reads are never cached. */
	uint32_t inventory_lookup_cache_ms;
	uint32_t cert_validity_days;
	uint64_t verdict_log_max_bytes;
	uint32_t verdict_log_max_files;
	uint32_t pass_interval_seconds;
	/* A pass stops its remaining inventory work this long after it began
	 * (at most the interval): what it could not do, the next pass does. */
	uint32_t pass_deadline_seconds;
	/* SPIFFE trust domain of spire-nodes.json; "": the pass writes no file. */
	char spire_trust_domain[256];
	bool metrics;

	/* provision: installing admitted machines (docs/provision.md). Off
	 * (provision_enabled false) without the section: fleetd admits, and
	 * installs nothing. */
	bool provision_enabled;
	char provision_classes_file[FLEET_CONFIG_PATH_MAX];       /* classes.json */
	char provision_class_inputs_file[FLEET_CONFIG_PATH_MAX];  /* class-inputs.json */
	bool provision_auto;                                      /* auto_provision */
	char provision_talosctl[FLEET_CONFIG_PATH_MAX];     /* talosctl, an absolute path */
	char provision_secrets_file[FLEET_CONFIG_PATH_MAX]; /* `talosctl gen secrets` bundle */
	char provision_kubeconfig[FLEET_CONFIG_PATH_MAX];   /* "": in-cluster service account */
	char provision_namespace[64];     /* the Tinkerbell namespace (Workflows) */
	char provision_template[64];      /* the Template each Workflow names */
	char provision_tools_image[256];  /* the Template's fleet tools image, by digest */
	char provision_config_host[256];  /* host[:port] Talos fetches /config from */
	uint32_t provision_delivery_deadline_seconds; /* a GET /config's whole write + ack */
	uint32_t provision_render_timeout_seconds;    /* each talosctl run */
	uint64_t max_body_bytes;

	/* join: the join service and its attestors (docs/attestors.md). Off
	 * (join_enabled false) without the section: POST /v1/join and
	 * /v1/renew are not served. */
	bool join_enabled;
	char join_trust_domain[256];                 /* node certificates' SPIFFE trust domain */
	char join_seal_key[FLEET_CONFIG_PATH_MAX];   /* "": <state_dir>/join/seal.key */
	char join_on_refusal[FLEET_CONFIG_PATH_MAX]; /* "": none; an absolute path, run with execve */
	uint32_t join_cert_ttl_seconds;              /* node certificates, 60..86400 */
	uint32_t join_x509pop_grace_seconds;         /* how long expired may re-join */
	uint32_t join_x509pop_window_seconds;        /* clientTime against the store's clock */
	uint32_t join_x509pop_min_interval_seconds;  /* between two re-joins of one node */
	char join_discovery_approval[24];            /* never | unknown-machines | always */
	uint32_t join_discovery_cert_ttl_seconds;    /* ramdisk certificates, 60..7200 */
	uint32_t join_discovery_pending_ttl_seconds;
	uint32_t join_discovery_retry_after_seconds;
	char join_cloud_iid_file[FLEET_CONFIG_PATH_MAX]; /* "": cloud-iid off */
	/* join.tpm: the tpm attestor, on (join_tpm_enabled) when present. */
	bool join_tpm_enabled;
	char join_tpm_challenge_key[FLEET_CONFIG_PATH_MAX]; /* "": <state_dir>/join/tpm-challenge.key */
	bool join_tpm_allow_uncertified_ek;
	char join_tpm_pcr_selection[128];
	char join_tpm_pcr_profile[FLEET_CONFIG_PATH_MAX]; /* "": no boot policy */
	char join_tpm_node_key[16];                        /* certified | any */
	uint32_t join_tpm_challenge_ttl_seconds;
	char join_tpm_role[16];                            /* node | site */
	char join_tpm_resolve_file[FLEET_CONFIG_PATH_MAX]; /* "": none */
	char join_tpm_enrollment_pool[64];                 /* "": no enrollment */
	char join_tpm_enrollment_site[64];
	uint32_t join_tpm_pending_ttl_seconds;
	uint32_t join_tpm_retry_after_seconds;
};

/* Set every default (the values docs/configuration.md lists). */
void fleet_config_defaults(struct fleet_config *c);

/* Parse and validate YAML bytes into c (defaults first). A refusal goes in
 * ec (may be NULL) with its line and column (lib/yaml_strict.h). */
fleet_err fleet_config_parse(const uint8_t *buf, size_t len, struct fleet_config *c,
			     struct fleet_errctx *ec);
/* Read path as configuration (lib/file_read.h: not a symlink, a regular
 * file owned by root or this user and writable by nobody else, at most
 * FLEET_CONFIG_MAX_SIZE bytes) and parse it. A file the reader refuses is
 * the reader's code, reason and errno, the sentence after "cannot read "
 * (line and column 0); else fleet_config_parse's. */
fleet_err fleet_config_load(const char *path, struct fleet_config *c,
			    struct fleet_errctx *ec);

/* The NetBox token file's largest size. */
#define FLEET_CONFIG_TOKEN_MAX 4096

/*
 * The NetBox token: token_file's one line, white space around it removed,
 * into out (cap bytes with the NUL). The file is opened once, checked on
 * that descriptor (a regular file, not a symlink, owned by this user, mode
 * 0600 or stricter, at most FLEET_CONFIG_TOKEN_MAX bytes) and that same
 * descriptor is read into a secret buffer, wiped after. The reader's code
 * when it refuses the file (lib/file_read.h: FLEET_E_NOT_FOUND, FLEET_E_IO,
 * FLEET_E_UNSAFE when a rule refuses it, FLEET_E_TOO_LARGE: the reader's
 * context, its reason and errno with it), FLEET_E_MALFORMED when it holds
 * no single token; ec (may be NULL) gets a sentence naming the file.
 */
fleet_err fleet_config_read_token(const struct fleet_config *c, char *out, size_t cap,
				  struct fleet_errctx *ec);

/* The checks that need the file system, run once at startup: with the
 * NetBox inventory, the token is read (fleet_config_read_token) and wiped.
 * ec gets what refused it. */
fleet_err fleet_config_check_files(const struct fleet_config *c, struct fleet_errctx *ec);

/* The profile file for a class (under profiles_dir), or NULL. */
const char *fleet_config_profile_for(const struct fleet_config *c, const char *class_name);

#endif
