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

/* ---- node certificates (lib/ca_node.c) -----------------------------------
 *
 * The join service's node CA: a certificate for a key the machine holds,
 * requested by a PKCS#10 CSR the machine sent (untrusted) and issued by the
 * same CA key as the LAK and LDevID. The CSR contributes its key and nothing
 * else: fleetd decides every field. A node's certificate lasts at most 24
 * hours; its URI SANs are exactly one SPIFFE ID followed only by urn:bc:
 * statements, at most four URIs in all (spec 000, "renewing a TPM-held key").
 *
 * The rules, each with its stable reason in ec->reason (fleet_errctx_refuse)
 * and the test in tests/unit/test_ca_node.c that produces it:
 *
 * The CSR (the machine's bytes: its refusals blame the input):
 *   NC1  exactly one PKCS#10 CertificationRequest, version 1 (0), in DER:
 *        at most FLEET_CSR_MAX bytes, nothing after it, and the bytes
 *        OpenSSL re-encodes from what it parsed are the bytes sent (no BER
 *        length forms, no unsorted SET, no second encoding of one request,
 *        so the SHA-256 of the CSR and of its SPKI are of canonical bytes).
 *        "csr-malformed" (FLEET_E_MALFORMED; FLEET_E_TOO_LARGE past the cap).
 *        test_csr_malformed
 *   NC2  its key is id-ecPublicKey on the named curve P-256 or P-384 (the
 *        parameters an OID, not explicit), a point on the curve: RSA,
 *        Ed25519, P-521, secp256k1 ... are refused. "csr-key-type"
 *        (FLEET_E_UNSUPPORTED). test_csr_key_type
 *   NC3  its self-signature is ecdsa-with-SHA256, -SHA384 or -SHA512 and
 *        verifies under that key (proof the sender holds it; SHA-1 is
 *        refused). "csr-signature" (FLEET_E_VERIFY). test_csr_signature
 *   NC4  what the CSR asks for is ignored: its subject, its attributes and
 *        its requested extensions (a SAN, CA:TRUE, a key usage, other EKUs)
 *        reach no field of the certificate. test_csr_requests_ignored
 *
 * The request (the join service's values: its refusals are
 * FLEET_E_INVALID_ARG, the caller's mistake):
 *   NC5  trust_domain: 1..255 characters of a-z 0-9 . - _  "trust-domain"
 *   NC6  node_id: 1..63 characters of a-z 0-9 _ -  "node-id"
 *   NC7  role: "node", "site" or "ramdisk" (the SPIFFE path is
 *        /<role>/<node_id>).  "role"   (NC5-NC7: test_request_names)
 *   NC8  statements: up to 3, NULL-terminated (no non-NULL after a NULL);
 *        each "urn:bc:" and at least one more character, at most
 *        FLEET_NODE_STATEMENT_MAX bytes of RFC 3986 URI characters
 *        (A-Z a-z 0-9 - . _ ~ : / ? # [ ] @ ! $ & ' ( ) * + , ; = %), no
 *        two the same. "statement". test_request_statements
 *   NC9  validity_seconds: 60..86400 (24 h), and at most 7200 (2 h) for a
 *        ramdisk; not_before 0 (now) or a time from 1970 on whose notAfter
 *        fits in a GeneralizedTime. "validity". test_request_validity
 *   NC10 the certificate does not outlive the CA's: notAfter is before the
 *        CA certificate's. "ca-expires". test_request_outlives_ca
 *
 * The certificate (test_issue_fields, test_issue_p384, test_issue_statements):
 *   NC11 X.509 v3; a random positive 128-bit serial; subject exactly
 *        CN=<node_id> (UTF8String); issuer the CA's subject; notBefore =
 *        not_before (or now), notAfter = notBefore + validity_seconds; the
 *        CSR's key; extensions exactly: subjectAltName (non-critical) =
 *        URI spiffe://<trust_domain>/<role>/<node_id> first, then the
 *        statements in order; basicConstraints critical CA:FALSE; keyUsage
 *        critical digitalSignature; extendedKeyUsage clientAuth,
 *        serverAuth; subjectKeyIdentifier; authorityKeyIdentifier (the CA's
 *        key id). Signed by the CA key, ECDSA with SHA-256, as fleet_ca_issue.
 *
 * Every refusal sets ec (detail and reason) and leaves *out NULL; OpenSSL's
 * error queue is left empty.
 */
#define FLEET_CSR_MAX (16u * 1024)
#define FLEET_NODE_TRUST_DOMAIN_MAX 255u
#define FLEET_NODE_ID_MAX 63u
#define FLEET_NODE_STATEMENTS_MAX 3u
#define FLEET_NODE_STATEMENT_MAX 256u
#define FLEET_NODE_VALIDITY_MIN 60u
#define FLEET_NODE_VALIDITY_MAX 86400u         /* 24 h */
#define FLEET_NODE_RAMDISK_VALIDITY_MAX 7200u /* 2 h (spec 000, discovery) */
/* "spiffe://" + trust domain + "/ramdisk/" + node id */
#define FLEET_NODE_SPIFFE_ID_MAX (9u + FLEET_NODE_TRUST_DOMAIN_MAX + 9u + FLEET_NODE_ID_MAX)

#define FLEET_CA_REASON_CSR_MALFORMED "csr-malformed"
#define FLEET_CA_REASON_CSR_KEY_TYPE "csr-key-type"
#define FLEET_CA_REASON_CSR_SIGNATURE "csr-signature"
#define FLEET_CA_REASON_TRUST_DOMAIN "trust-domain"
#define FLEET_CA_REASON_NODE_ID "node-id"
#define FLEET_CA_REASON_ROLE "role"
#define FLEET_CA_REASON_STATEMENT "statement"
#define FLEET_CA_REASON_VALIDITY "validity"
#define FLEET_CA_REASON_CA_EXPIRES "ca-expires"

struct fleet_node_cert_request {
	const uint8_t *csr_der; /* PKCS#10 DER, untrusted */
	size_t csr_len;
	const char *trust_domain; /* NC5 */
	const char *node_id;      /* NC6 */
	const char *role;         /* NC7: "node" | "site" | "ramdisk" */
	const char *statements[FLEET_NODE_STATEMENTS_MAX]; /* NC8: urn:bc:... after the SPIFFE ID */
	time_t not_before;         /* 0: now */
	unsigned validity_seconds; /* NC9: 60..86400 (ramdisk: ..7200) */
};

/* Verify the CSR (NC1-NC3), check the request (NC5-NC10) and issue (NC11);
 * *out is owned by the caller. */
fleet_err fleet_ca_issue_node(const struct fleet_ca *ca, const struct fleet_node_cert_request *req,
			      X509 **out, struct fleet_errctx *ec);

/* SHA-256 of the CSR's SubjectPublicKeyInfo DER: what a join binds. The
 * CSR must pass NC1-NC3 first (a hash is only ever of a key whose holder
 * signed the request), with the same reasons. */
fleet_err fleet_csr_spki_sha256(const uint8_t *csr_der, size_t len, uint8_t out[32],
				struct fleet_errctx *ec);

/*
 * The identity reader for clients: a node certificate's node id comes from
 * its one SPIFFE ID, never from a statement (spec 000). Refused
 * (FLEET_E_VERIFY, with the reason), unless:
 *   NR1  the certificate has exactly one subjectAltName extension and it
 *        decodes. "san-missing" (none or two), "san-malformed"
 *   NR2  every name in it is a URI. "san-not-uri"
 *   NR3  there are 1..4 of them. "san-too-many" (an empty SAN: "spiffe-missing")
 *   NR4  exactly one is a spiffe:// URI, and it is the first. "spiffe-missing",
 *        "spiffe-twice", "spiffe-not-first"
 *   NR5  every other one is a urn:bc: statement as NC8 has it. "san-not-statement"
 *   NR6  the SPIFFE ID is spiffe://<trust domain>/<role>/<node id> under
 *        NC5-NC7 exactly (no port, user, query, fragment, further segment,
 *        empty segment or trailing slash). "spiffe-malformed"
 * test_reader_issued, test_reader_refusals.
 */
struct fleet_node_identity {
	char spiffe_id[FLEET_NODE_SPIFFE_ID_MAX + 1];
	char trust_domain[FLEET_NODE_TRUST_DOMAIN_MAX + 1];
	char role[8];
	char node_id[FLEET_NODE_ID_MAX + 1];
};
fleet_err fleet_node_cert_spiffe_id(X509 *x, struct fleet_node_identity *out,
				    struct fleet_errctx *ec);

/* A 32-byte key for purpose (1..100 bytes), HKDF-SHA256 over the CA
 * private key's DER with info "fleetd derived key v1" 0x00 purpose: the
 * same on every replica holding this CA key, different per purpose
 * (ca_derive.c; test_ca_derive). */
fleet_err fleet_ca_derive_key(const struct fleet_ca *ca, const char *purpose, uint8_t out[32]);

#endif
