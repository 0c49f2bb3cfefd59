/*
 * cloud_iid.h: the cloud-iid attestor (spec 001 "cloud-iid", "Single-use
 * evidence"; issue 14): a cloud VM proves it is one by the identity
 * document its cloud signed. The operator's reference, every reason and
 * the config file: docs/attestor-cloud-iid.md.
 *
 * The evidence (the request's attestation bytes, strict JSON, one object,
 * no unknown or repeated keys):
 *     {"v":1,"provider":"<id>","document":"<JWT compact>"}           gcp, oidc
 *     {"v":1,"provider":"<id>","document":"<identity document JSON>",
 *      "pkcs7":"<base64 DER PKCS#7 SignedData as AWS serves it>"}     aws
 *
 * Not included by attestor.h: the join service includes it to register
 * the attestor (verify and prepare) with its reasons.
 */
#ifndef FLEET_POLICY_CLOUD_IID_H
#define FLEET_POLICY_CLOUD_IID_H

#include "policy/attestors/attestor.h"

struct fleet_cloud_iid_config; /* opaque; the JWKS caches inside are guarded by a mutex */

/* Load the YAML config at path (a trusted config file: owned by root or
 * us, writable by nobody else; lib/yaml_strict.h, unknown keys refused).
 * Reads every certificate and JWKS file it names now (a JWKS URL is
 * fetched by the first prepare). */
fleet_err fleet_cloud_iid_config_load(const char *path, struct fleet_cloud_iid_config **out,
				      struct fleet_errctx *ec);
/* The same from bytes (relative paths in it are taken as given). */
fleet_err fleet_cloud_iid_config_parse(const uint8_t *buf, size_t len,
				       struct fleet_cloud_iid_config **out, struct fleet_errctx *ec);
void fleet_cloud_iid_config_free(struct fleet_cloud_iid_config *c);

/* A1-A5; a->cfg is the struct fleet_cloud_iid_config *. Reads the time
 * from the transaction; never does I/O (the JWKS comes from the cache
 * prepare filled). Thread-safe. */
fleet_err fleet_attestor_cloud_iid_verify(const struct fleet_attestor *a,
					  struct fleet_store_tx *tx,
					  const struct fleet_join_input *in,
					  struct fleet_attest_result *out);
/* A7: refresh the JWKS of the provider the evidence names (a file whose
 * mtime changed; a URL cached over an hour, or whose cache lacks the
 * token's kid, at most once per 5 minutes). Malformed evidence is not an
 * error here (verify refuses it). An error: the join is answered 503. */
fleet_err fleet_attestor_cloud_iid_prepare(const struct fleet_attestor *a,
					   const struct fleet_join_input *in);

/* Every reason verify can refuse with, NULL-terminated. */
extern const char *const fleet_attestor_cloud_iid_reasons[];

#endif
