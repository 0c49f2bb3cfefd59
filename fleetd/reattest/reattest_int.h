/* reattest_int.h: what reattest.c and renew.c share, not the interface. */
#ifndef FLEET_REATTEST_INT_H
#define FLEET_REATTEST_INT_H

#include <openssl/x509.h>

#include "fleetd/reattest/reattest.h"

time_t ra_env_now(const struct fleet_reattest_env *env);
/* RA1/RA4: signed by the CA, an LAK (the AIK EKU), valid at now. On FLEET_OK
 * *out is the parsed certificate and lak_hash its DER's SHA-256. */
fleet_err ra_lak_verify(const struct fleet_reattest_env *env, const struct fleet_wire_bytes *der,
			X509 **out, uint8_t lak_hash[32], const char **reason);
/* The subject CN, 1..FLEET_STORE_NAME_MAX printable ASCII characters. */
bool ra_lak_cn(X509 *x, char device[FLEET_STORE_NAME_MAX + 1]);
/* RA8: the AK's public area from the certificate's key (ECDSA P-256). */
fleet_err ra_ak_from_cert(X509 *x, TPMT_PUBLIC *ak);

#endif
