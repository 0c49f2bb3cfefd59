/*
 * x509_ek.h: EK certificates as real TPMs carry them, and their chains.
 *
 * Real EK certificates are rarely tidy (see ../shared/data/ek-certs/README.md):
 * a 7-byte TCG stored-certificate header (tag 0x1001, type 0x00, size,
 * tag 0x1002) before the DER, 0x00 or 0xFF padding or other fill after it
 * from a fixed-size NV read, PEM or DER, an empty
 * subject with a critical SAN, a SubjectPublicKeyInfo labelled
 * id-RSAES-OAEP instead of rsaEncryption, SHA-1 signatures, critical EKU or
 * policies. The loader takes all of these; the chain check decides trust.
 *
 * Chain reasons (stable): "ek-cert-unparseable", "ek-chain-untrusted",
 * "ek-chain-signature", "ek-chain-not-yet-valid", "ek-chain-ca-constraint",
 * "ek-roots-empty", "ek-key-mismatch".
 */
#ifndef FLEET_X509_EK_H
#define FLEET_X509_EK_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>
#include <tss2/tss2_tpm2_types.h>

#include "lib/fleet_err.h"

#define FLEET_EK_CERT_MAX 8192 /* larger than any NV EK certificate index */

/* DER or PEM, with the TCG header and any bytes after the DER tolerated
 * (the signature covers the DER alone); binary input is at most
 * FLEET_EK_CERT_MAX bytes, an NV read's bound. */
fleet_err fleet_ek_cert_load(const uint8_t *buf, size_t len, X509 **out, struct fleet_errctx *ec);

/* fleetd's ek_hash, and SPIRE's tpm:pub_hash: SHA-256 of the certificate's
 * public key re-encoded canonically, as Go's x509.MarshalPKIXPublicKey does
 * (RSA: rsaEncryption with NULL parameters and PKCS#1 RSAPublicKey; EC:
 * id-ecPublicKey with the named curve and the uncompressed point), never
 * the certificate's SPKI bytes as they are. So a key labelled id-RSAES-OAEP
 * hashes as the same key labelled rsaEncryption, and as
 * fleet_tpm_public_spki_sha256 of its TPM public area. 64 lowercase hex
 * digits and a NUL; FLEET_E_UNSUPPORTED for a key no EK has. */
fleet_err fleet_ek_hash(X509 *cert, char out[65]);

/* The certificate's public key equals the TPM public area's key (an EK read
 * from the TPM must match the certificate from NV). Compares the key
 * parameters, not the SPKI encoding, so the OAEP label does not matter.
 * FLEET_E_VERIFY with "ek-key-mismatch" when they differ. */
fleet_err fleet_ek_cert_matches_public(X509 *cert, const TPMT_PUBLIC *pub, const char **reason);

/* A directory of manufacturer CA certificates (PEM or DER, any file name);
 * self-signed ones are roots, the others intermediates. */
struct fleet_ek_roots;
fleet_err fleet_ek_roots_load(const char *dir, struct fleet_ek_roots **out,
			      struct fleet_errctx *ec);
void fleet_ek_roots_free(struct fleet_ek_roots *roots);
size_t fleet_ek_roots_count(const struct fleet_ek_roots *roots);

/*
 * Verify leaf up to a root in roots, taking intermediates from roots too.
 * Validity time: see docs/ek-validity.md for the rule and why. `now` is the
 * time to check against (0: the current time).
 */
fleet_err fleet_ek_chain_verify(const struct fleet_ek_roots *roots, X509 *leaf, time_t now,
				const char **reason);

#endif
