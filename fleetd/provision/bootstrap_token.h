/*
 * bootstrap_token.h: a worker's own Kubernetes bootstrap token and the
 * Secret that makes the API server accept it (spec "Join Kubernetes";
 * Kubernetes' bootstrap token format, k8s.io/cluster-bootstrap/token/api):
 *
 *   T1  id [a-z0-9]{6} and secret [a-z0-9]{16}, from the CSPRNG
 *       (OpenSSL's RAND_bytes), each character chosen without bias
 *       (rejection sampling: 36 does not divide 256).
 *   T2  the Secret is bootstrap-token-<id> in kube-system, type
 *       bootstrap.kubernetes.io/token, with token-id, token-secret,
 *       expiration (RFC 3339, UTC), usage-bootstrap-authentication "true"
 *       and auth-extra-groups system:bootstrappers:fleetd: the group the
 *       admission policy of clusters/folly/tinkerbell-access lets only
 *       fleetd approve for.
 *   T3  it expires FLEET_BOOTSTRAP_TOKEN_GRACE after the configuration's
 *       own time to live.
 */
#ifndef FLEETD_PROVISION_BOOTSTRAP_TOKEN_H
#define FLEETD_PROVISION_BOOTSTRAP_TOKEN_H

#include <jansson.h>
#include <time.h>

#include "lib/fleet_err.h"

#define FLEET_BOOTSTRAP_GROUP "system:bootstrappers:fleetd"
#define FLEET_BOOTSTRAP_TOKEN_GRACE (4 * 3600) /* seconds past the configuration's TTL */

struct fleet_bootstrap_token {
	char id[7];      /* [a-z0-9]{6} */
	char secret[17]; /* [a-z0-9]{16} */
	char token[24];  /* id "." secret, what cluster.token holds */
};

/* T1. FLEET_E_CRYPTO when the CSPRNG fails (nothing is made then). */
fleet_err fleet_bootstrap_token_new(struct fleet_bootstrap_token *t);

/* T2, T3: the Secret (a new JSON object; the caller json_decref's it, and
 * wipes its dump: it holds the secret), expiring at
 * config_expires + FLEET_BOOTSTRAP_TOKEN_GRACE. NULL when out of memory. */
json_t *fleet_bootstrap_secret(const struct fleet_bootstrap_token *t, time_t config_expires);

/* "bootstrap-token-<id>" into out[32]. */
void fleet_bootstrap_secret_name(const struct fleet_bootstrap_token *t, char out[32]);

void fleet_bootstrap_token_wipe(struct fleet_bootstrap_token *t);

#endif
