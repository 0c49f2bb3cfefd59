/*
 * ca.h: fleetd's identity CA. It signs two certificates per admitted machine:
 *   LAK    for the attestation key (proven by credential activation);
 *   LDevID for a non-restricted TPM signing key certified by that AK
 *          (SPIRE's tpm_devid attestor; agent IDs end in its SHA-1).
 * The CA key is ECDSA P-256, written mode 0600; the directory holds
 * ca.key and ca.crt.
 */
#ifndef FLEET_CA_H
#define FLEET_CA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/x509.h>
#include <tss2/tss2_tpm2_types.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

struct fleet_ca;

/* Create DIR (0700) with a fresh key (0600) and a self-signed CA
 * certificate. Refuses to overwrite an existing key. */
fleet_err fleet_ca_init(const char *dir, const char *common_name, unsigned validity_days,
			struct fleet_errctx *ec);
fleet_err fleet_ca_load(const char *dir, struct fleet_ca **out, struct fleet_errctx *ec);
void fleet_ca_free(struct fleet_ca *ca);
X509 *fleet_ca_cert(const struct fleet_ca *ca); /* borrowed */

enum fleet_cert_kind {
	FLEET_CERT_LAK = 1,
	FLEET_CERT_LDEVID = 2,
};

struct fleet_issue_request {
	enum fleet_cert_kind kind;
	const TPMT_PUBLIC *key;  /* the TPM-held key being certified */
	const char *device_name; /* subject CN (UTF8String) */
	const char *serial;      /* SMBIOS serial, in the subject serialNumber
				    (PrintableString); NULL: none */
	time_t not_before;       /* 0: now */
	unsigned validity_days;
};

/*
 * What a certificate subject can carry; the one rule intake and issuing
 * share (fleet_ca_issue enforces it, so the two cannot disagree):
 *   name   (subject commonName, a UTF8String, RFC 5280 4.1.2.6 / 4.2.1.6
 *           and X.520 DirectoryString): 1..64 Unicode characters
 *           (ub-common-name) of well-formed UTF-8 (RFC 3629: no overlong
 *           form, no surrogate, nothing above U+10FFFF), none of them a
 *           C0 control, DEL or C1 control. NULL or empty is refused.
 *   serial (subject serialNumber, which RFC 5280 Appendix A.1 and X.520
 *           restrict to PrintableString SIZE (1..ub-serial-number = 64)):
 *           1..64 characters of X.680's PrintableString set
 *           A-Z a-z 0-9 space ' ( ) + , - . / : = ?  Nothing is dropped
 *           or rewritten: a serial outside the set is refused. NULL means
 *           "no serialNumber attribute" and is allowed; "" is refused.
 * Returns 1 when both fit. Otherwise 0, and *reason (if reason is not
 * NULL) is a stable string: FLEET_CA_REASON_NAME or FLEET_CA_REASON_SERIAL
 * (the name is checked first).
 */
#define FLEET_CA_REASON_NAME "device-name-unusable"
#define FLEET_CA_REASON_SERIAL "serial-unusable"
int fleet_ca_subject_ok(const char *name, const char *serial, const char **reason);

/* Issue; *out is owned by the caller. A subject fleet_ca_subject_ok
 * refuses is FLEET_E_INVALID_ARG, and ec's detail holds the reason. */
fleet_err fleet_ca_issue(const struct fleet_ca *ca, const struct fleet_issue_request *req,
			 X509 **out, struct fleet_errctx *ec);

/*
 * Sign bytes that are not a certificate with the CA key: ECDSA P-256 over
 * SHA-256(data), the signature DER (X9.62 Ecdsa-Sig-Value) appended to sig.
 * The caller makes what it signs unmistakable for a certificate (a
 * certificate's TBS is DER, a SEQUENCE: its first byte is 0x30) and names
 * its own purpose inside it (fleetd/provision/code.h's statement starts
 * with '{' and carries "kind"). Verify with fleet_ca_verify against the CA
 * certificate: FLEET_OK, FLEET_E_VERIFY when the signature is not the
 * key's over these bytes (OpenSSL's queue drained), FLEET_E_UNSUPPORTED
 * when the certificate's key is not an EC key.
 */
fleet_err fleet_ca_sign(const struct fleet_ca *ca, const void *data, size_t len,
			struct fleet_buf *sig, struct fleet_errctx *ec);
fleet_err fleet_ca_verify(X509 *ca_cert, const void *data, size_t len, const uint8_t *sig,
			  size_t sig_len, struct fleet_errctx *ec);

/* 40 lowercase hex digits of SHA-1 over the DER certificate (SPIRE's
 * tpm_devid agent ID suffix). */
fleet_err fleet_cert_sha1_fingerprint(X509 *cert, char out[41]);

#endif
