/*
 * render.h: a machine's Talos configuration, rendered by talosctl and
 * checked before anything runs.
 *
 * fleetd never writes a Talos configuration itself: talosctl does, from
 * the class's inputs (install_classes.h), the worker secrets bundle
 * (`talosctl gen secrets`) and a patch of this node's own values. fleetd
 * then checks what came out, all before a Workflow can start:
 *
 *   R1  `talosctl validate --config F --mode metal --strict` passes.
 *   R2  machine.install.image is exactly the class's image@digest.
 *   R3  machine.install.diskSelector.serial is the declared
 *       install_disk_serial, and machine.install.disk is not set (the
 *       serial alone says which disk: a device name moves between boots).
 *   R4  cluster.token is this machine's bootstrap token (a control plane's:
 *       FLEET_RENDER_NOJOIN_TOKEN, which matches no Secret).
 *   R5  machine.type is the class's role, and the HostnameConfig document
 *       names the device (hostname = device name, auto off: Talos 1.13
 *       writes a HostnameConfig with auto: stable, which a hostname
 *       cannot be set beside).
 *   R5b cluster.controlPlane.endpoint is the class's endpoint.
 *   R7  the output is read as Talos reads it (its configloader decoder,
 *       siderolabs/talos pkg/machinery/config/configloader/internal/
 *       decoder/decoder.go): a document whose top level has machine,
 *       cluster, debug or persist, or apiVersion v1alpha1, and no kind, is
 *       the v1alpha1 document (exactly one, with version: v1alpha1); any
 *       other document needs both apiVersion and kind (either missing is
 *       refused, as Talos refuses it). YAML that libyaml and Go's yaml.v3
 *       read differently is refused outright: a merge key (<<: Go merges
 *       it, libyaml does not), a duplicate key in any mapping (Go refuses
 *       it, libyaml keeps both and fleetd would read the first), a key
 *       that is not a scalar, an alias, nesting deeper than 64.
 *   R6  talosctl runs with execve and an argument array (lib/runner.h), an
 *       environment of PATH only, a deadline and capped output; the
 *       patch holding the token is a file of mode 0600 in a private
 *       directory, never an argument (argv is readable by every user).
 *
 * Tests: tests/unit/test_render.c (the checks on crafted output),
 * tests/talos/test_render_talosctl.sh-driven test_render_fake (the whole
 * render through the talosctl contract fake).
 */
#ifndef FLEETD_PROVISION_RENDER_H
#define FLEETD_PROVISION_RENDER_H

#include <stddef.h>

#include "fleetd/provision/install_classes.h"
#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FLEET_RENDER_NOJOIN_TOKEN "nojoin.0000000000000000"
/* A rendered configuration is a few KiB (a control plane's with its CAs
 * about 20); anything past this is not one. */
#define FLEET_RENDER_OUTPUT_MAX (256u * 1024)
#define FLEET_RENDER_TIMEOUT_SECONDS 60
/* timeout_seconds above this is clamped to it. */
#define FLEET_RENDER_TIMEOUT_MAX 600

/* What this node puts in its configuration. */
struct fleet_render_node {
	const char *device_name;         /* hostname; [a-z0-9.-], 1..63 */
	const char *install_disk_serial; /* the declared serial */
	const char *bootstrap_token;     /* "[a-z0-9]{6}.[a-z0-9]{16}" */
};

struct fleet_render_env {
	const char *talosctl;     /* an absolute path (fleet_runner_resolve) */
	const char *secrets_file; /* the worker secrets bundle */
	const char *work_dir;     /* a private directory of this render (0700, ours) */
	unsigned timeout_seconds; /* per talosctl run; 0: FLEET_RENDER_TIMEOUT_SECONDS;
				     at most FLEET_RENDER_TIMEOUT_MAX */
};

/* What R2-R5 expect of a rendered configuration. */
struct fleet_render_expect {
	enum fleet_install_role role;
	char image_ref[FLEET_INSTALL_IMAGE_MAX + 80]; /* image@digest */
	const char *disk_serial;
	const char *token;
	const char *hostname;
	const char *endpoint; /* R5b: the class's https endpoint */
};

/*
 * Render n's configuration for class k into out (a secret buffer: the
 * configuration holds the machine token and the cluster's CA material)
 * and check it (R1-R5). FLEET_OK, or a refusal: ec->reason is
 * "talosctl-failed" (gen config did not succeed; ec->detail holds its
 * stderr, sanitised), "validate-failed" (R1), "image-not-pinned" (R2),
 * "disk-selector" (R3), "token" (R4), "role" / "hostname" (R5),
 * "endpoint" (R5b), "yaml-ambiguous" (R7: merge key, duplicate key),
 * "render-invalid" (a value of n or k that cannot be put in a patch) or
 * "output-malformed".
 */
fleet_err fleet_render(const struct fleet_render_env *env, const struct fleet_install_class *k,
		       const struct fleet_render_node *n, struct fleet_buf *out,
		       struct fleet_errctx *ec);

/* R2-R5 on a rendered configuration's bytes (all of its YAML documents):
 * FLEET_OK, or FLEET_E_VERIFY with the reason above, or FLEET_E_MALFORMED
 * "output-malformed", "yaml-ambiguous" (FLEET_E_MALFORMED). Untrusted
 * bytes: parsed by libyaml, at most FLEET_RENDER_OUTPUT_MAX, aliases
 * refused, R7. */
fleet_err fleet_render_check(const void *buf, size_t len, const struct fleet_render_expect *x,
			     struct fleet_errctx *ec);

/* Whether s is a bootstrap token, [a-z0-9]{6}.[a-z0-9]{16} (Kubernetes'
 * bootstrap token format), or the control plane's no-join token. */
int fleet_render_token_ok(const char *s);

#endif
