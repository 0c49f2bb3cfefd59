/*
 * ca_int.h: what lib/ca.c (the TPM-key certificates) and lib/ca_node.c (the
 * node certificates issued from a CSR) share, so the two issuers cannot
 * drift apart in how a CA is held, a serial is drawn, an extension is
 * written or a validity is set. Internal to lib/: no program includes it.
 */
#ifndef FLEET_CA_INT_H
#define FLEET_CA_INT_H

#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/fleet_err.h"

/* A loaded CA (fleet_ca_load): its key (EC, checked to match the
 * certificate) and its certificate. */
struct fleet_ca {
	EVP_PKEY *key;
	X509 *cert;
};

/* A 128-bit random serial, as a positive, non-zero INTEGER (RFC 5280
 * 4.1.2.2). FLEET_E_CRYPTO or FLEET_E_NOMEM on failure. */
fleet_err fleet_ca_int_random_serial(X509 *x);

/* Add the extension OpenSSL's string form `value` makes for nid (e.g.
 * NID_basic_constraints, "critical,CA:FALSE"). FLEET_E_CRYPTO on failure. */
fleet_err fleet_ca_int_add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value);

/* notBefore = not_before (0: now), notAfter = notBefore + seconds. */
fleet_err fleet_ca_int_set_validity(X509 *x, time_t not_before, time_t seconds);

#endif
