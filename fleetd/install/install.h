/*
 * install.h: installing an admitted machine, from the confirm round to its
 * kubelet's first certificate (spec 004 "Authorize installation", "Join
 * Kubernetes", "Deliver the configuration"; docs/provision.md).
 *
 * This is where the pieces of fleetd/provision (what a class installs, when,
 * the render and its checks, the token, the CSR rules), fleetd's store (the
 * provisions table, schema v4), the Kubernetes API (fleetd/kube) and the
 * inventory meet. The rules, in the order they apply; each has a test in
 * tests/e2e/test_install.c:
 *
 * Start (fleet_install_start, in the confirm round, after the admission
 * committed; the machine waits in HookOS for the answer)
 *  S1  Whether: the class's role, the owner's desired_action and
 *      auto_provision (authorize.h P1-P4); "the worker has never run a
 *      Workflow" is the store's (fleet_store_provision_ever_started),
 *      never the inventory's. Not wanted: nothing is made, the confirm
 *      answers without a provision.
 *  S2  An open provision of the device (it booted HookOS again: the run it
 *      had cannot be running) is dropped first, "superseded": its code
 *      burned, its Workflow deleted; its token is deleted by the pass.
 *  S3  The device's name must be a DNS-1123 label ("device-name": it names
 *      the node, its Workflow, its Hardware, and goes into API paths);
 *      a 32-byte code (the CSPRNG), a bootstrap token for a worker
 *      (bootstrap_token.h T1), nojoin.0000000000000000 for a control plane;
 *      the Hardware object of the device (hardwareRef) must exist and name
 *      an interface MAC for the Workflow's device_1.
 *  S4  The render and every check of it (render.h R1-R6) before anything
 *      is created: a refused render starts no run ("render-refused").
 *  S5  ONE transaction records the provision (stage rendered, the code's
 *      SHA-256 only, the configuration, the token id, the Workflow's name,
 *      the expiry: worker 2 h, control plane 30 min).
 *  S6  The token Secret (worker; recorded as made before it is made, so
 *      a crash or a lost answer leaves one the pass deletes), then the
 *      Workflow (no boot options: the machine waits in HookOS; its name is
 *      the row's, so a drop deletes it whatever its create answered), then
 *      the stage "started". Any failure:
 *      the provision is dropped ("start-failed"), its code burned, what
 *      was created deleted (a Secret that cannot be deleted now is the
 *      pass's: token_state says it exists); the confirm still confirms.
 *  S7  desired_action is cleared in the inventory once the run started,
 *      journaled ("desired-action-cleared"); a failure to clear is
 *      journaled and the pass does not retry it (the owner sees it).
 *  S8  The code is wrapped to the TPM (MakeCredential to the EK, bound to
 *      the AK name) and goes in the confirm answer with the fleetd-signed
 *      proof of the passing check; the plain code is wiped.
 *  S9  The whole start has a budget (FLEET_INSTALL_START_BUDGET_MS, under
 *      tink-attest's 30 s per request): past it after the render, or
 *      before the Workflow, the start is taken back ("late"), since the
 *      machine may have stopped waiting for the answer that carries its
 *      code. (The render's own deadline is provision.render_timeout_seconds,
 *      15 s; each Kubernetes request's 5 s.)
 *
 * Reconcile (fleet_install_reconcile, each pass)
 *  W1  A started provision past its expiry is dropped ("expired"), its
 *      Workflow deleted.
 *  W2  A started provision whose Workflow is gone is dropped
 *      ("workflow-deleted"); one whose Workflow ended without success
 *      (FAILED, TIMEOUT, STATE_FAILED, STATE_TIMEOUT) is dropped
 *      ("workflow-failed"), unless its install-talos action succeeded
 *      (then Talos is installed and about to fetch the configuration: a
 *      reboot that never reports success must not burn it). The
 *      Kubernetes API not answering changes nothing.
 *  W0  A delivered provision's device is set active in the inventory (the
 *      store's row was set active by the consume itself): at once when the
 *      GET consumed the code (fleet_install_delivered), and again by each
 *      pass while the inventory says otherwise.
 *  W3  A token Secret is deleted once its provision is dropped, once its
 *      CSR has its certificate, or once the token itself has expired
 *      (config expiry + 4 h); a delivered worker whose token expired
 *      without a CSR is done ("no-csr").
 *
 * CSRs (fleet_install_csr, from the watch and from each pass's list)
 *  A1  Only CSRs of signer kubernetes.io/kube-apiserver-client-kubelet by
 *      system:bootstrap:<id> of a token fleetd holds are looked at; others
 *      are not fleetd's (counted, not journaled).
 *  A2  The token's provision must be delivered (the token exists only in
 *      the configuration, which only its GET hands out), the CSR made
 *      after that (creationTimestamp no earlier than the delivery, less
 *      FLEET_INSTALL_CSR_SKEW for the clocks: a CSR made with a token read
 *      elsewhere before the GET never becomes approvable by waiting), and
 *      it must pass kubelet_csr.h C1-C7 for that device's name; else
 *      refused, journaled once per CSR, never approved.
 *  A3  Once per token: the store records the CSR's name and uid as the
 *      token's one approval BEFORE the API call (a crash between leaves
 *      the intent, and the next pass re-approves that same CSR only); a
 *      second CSR of the token is refused ("csr-second").
 *  A4  A CSR with its certificate: the token Secret is deleted, the
 *      provision is done. A kill -9 between the approval and the deletion
 *      leaves the pass to finish it. The re-approval of a recorded intent
 *      happens only while the run is delivered and its token unexpired.
 *  A5  A CSR of the token approved by someone else is the token's one use
 *      all the same: recorded (no other CSR of it is ever approved),
 *      journaled as an error (the admission policy should have stopped
 *      it), its token deleted once the certificate is there.
 */
#ifndef FLEETD_INSTALL_H
#define FLEETD_INSTALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "fleetd/attest/attest_server.h"
#include "fleetd/config/config.h"
#include "fleetd/inventory/inventory.h"
#include "fleetd/kube/kube.h"
#include "fleetd/obs/metrics.h"
#include "fleetd/provision/install_classes.h"
#include "fleetd/store/store.h"
#include "lib/attest_wire.h"
#include "lib/ca.h"
#include "lib/fleet_err.h"

#define FLEET_INSTALL_WORKER_TTL (2 * 3600)
#define FLEET_INSTALL_CONTROLPLANE_TTL (30 * 60)
#define FLEET_INSTALL_CSR_SKEW 30 /* seconds between the API server's clock and fleetd's */
#define FLEET_INSTALL_START_BUDGET_MS 20000 /* S9: within tink-attest's 30 s */

struct fleet_install;

struct fleet_install_deps {
	const struct fleet_config *config;
	const struct fleet_install_classes *classes;
	struct fleet_store *store; /* read-write: the admission's handle */
	struct fleet_inventory *inventory;
	struct fleet_kube *kube;
	const struct fleet_ca *ca;
	struct fleet_metrics *metrics; /* NULL: not counted */
	time_t (*now)(void *ctx);      /* NULL: time(NULL) */
	void *now_ctx;
};

fleet_err fleet_install_new(const struct fleet_install_deps *d, struct fleet_install **out,
			    struct fleet_errctx *ec);
void fleet_install_free(struct fleet_install *in);

/* The machine the confirm round just admitted. */
struct fleet_install_machine {
	const struct fleet_inv_device *dev;          /* the confirm's fresh read */
	const struct fleet_attest_session *session; /* its EK, AK, LDevID */
};

enum fleet_install_outcome {
	FLEET_INSTALL_NONE = 1, /* not wanted (S1): *why says which rule */
	FLEET_INSTALL_STARTED,  /* cr->has_provision: the code and the proof */
	FLEET_INSTALL_FAILED,   /* S3-S8 failed: *why is the stable reason, detail the sentence */
};

/* S1-S8. why (never NULL after the call) is a stable word for the journal;
 * detail (may be NULL) gets the sentence. Journals what it did itself. */
enum fleet_install_outcome fleet_install_start(struct fleet_install *in,
					       const struct fleet_install_machine *m,
					       struct fleet_wire_confirm_reply *cr, const char **why,
					       char *detail, size_t detail_len);

/* W1-W3 and A1-A4 over a fresh CSR list: one pass. */
void fleet_install_reconcile(struct fleet_install *in, time_t now);

/* W0 for provision id, just consumed by its GET. */
void fleet_install_delivered(struct fleet_install *in, int64_t id);

/* A1-A4 for one CSR object (the watch's events, the pass's list). */
void fleet_install_csr(struct fleet_install *in, json_t *csr);

/* The CSR watch on its own thread (list, watch, resume, relist on 410,
 * back off), stopped and joined by fleet_install_free. */
fleet_err fleet_install_watch_start(struct fleet_install *in, struct fleet_errctx *ec);

#endif
