/*
 * tpm.h: TPM 2.0 structures fleetd receives from machines, and the checks
 * on them: public areas, names, quotes, certifications, attribute rules.
 *
 * Wire bytes are unmarshaled with libtss2-mu (Tss2_MU_*), which bounds-checks
 * every field; fleetd then requires that the whole buffer was consumed, so a
 * structure with trailing bytes is malformed rather than silently accepted.
 *
 * Refusals come back as FLEET_E_VERIFY with a stable reason string (static
 * storage; never NULL on failure). The reasons:
 *   "ak-not-restricted", "ak-not-sign", "ak-decrypt-set", "ak-not-fixedtpm",
 *   "ak-not-fixedparent", "ak-not-sensitivedataorigin",
 *   "attest-magic", "attest-type", "attest-extradata", "quote-selection",
 *   "quote-pcr-digest", "signature-invalid", "signature-scheme",
 *   "certify-name", "key-not-fixedtpm", "key-not-fixedparent",
 *   "key-not-sensitivedataorigin", "key-not-sign", "key-decrypt-set"
 * and, for evidence that is not even well formed (the error code is then
 * FLEET_E_MALFORMED or FLEET_E_UNSUPPORTED, not FLEET_E_VERIFY):
 *   "ak-unsupported", "attest-malformed", "signature-malformed",
 *   "quote-pcr-values", "key-unsupported"
 * (fleetctl adds "ak-malformed" and "key-malformed" for public-area files
 * that fleet_tpm_public_parse refuses.)
 * docs/attestation-checks.md says what each one enforces.
 */
#ifndef FLEET_TPM_H
#define FLEET_TPM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <tss2/tss2_tpm2_types.h>

#include "lib/fleet_err.h"
#include "lib/tpm_alg.h"

/* A marshaled TPM2B_PUBLIC (the 2-byte size included), whole buffer. */
fleet_err fleet_tpm_public_parse(const uint8_t *buf, size_t len, TPM2B_PUBLIC *out,
				 struct fleet_errctx *ec);
/* Name = nameAlg (2 bytes, big-endian) || H_nameAlg(marshaled TPMT_PUBLIC). */
fleet_err fleet_tpm_name(const TPMT_PUBLIC *pub, uint8_t *name, size_t cap, size_t *name_len);
/* RSA (2048 to 4096 bits; smaller keys are FLEET_E_UNSUPPORTED) or ECC
 * P-256/P-384 to an OpenSSL key. A modulus that disagrees with keyBits, an
 * even modulus or exponent, or a point off the curve is FLEET_E_MALFORMED.
 * *out is a reference of the caller's own (EVP_PKEY_free it), but the key
 * may be shared with other callers and threads (a bounded in-process cache,
 * lib/tpm_public.c; tests/unit/test_tpm_public.c test_key_cache): use it,
 * never modify it. */
fleet_err fleet_tpm_public_to_pkey(const TPMT_PUBLIC *pub, EVP_PKEY **out);
/* SHA-256 of the key's SubjectPublicKeyInfo DER: for an EK this is ek_hash;
 * for a certified key, what a CSR's public key must hash to. */
fleet_err fleet_tpm_public_spki_sha256(const TPMT_PUBLIC *pub, uint8_t out[32]);
/* The SubjectPublicKeyInfo DER itself (RFC 3279 / 5480 encoding, as
 * OpenSSL's i2d_PUBKEY writes it), appended to out. */
struct fleet_buf;
fleet_err fleet_tpm_public_spki_der(const TPMT_PUBLIC *pub, struct fleet_buf *out);

/* The attestation key rules: restricted, sign, fixedTPM, fixedParent,
 * sensitiveDataOrigin, and no decrypt. */
fleet_err fleet_tpm_ak_check(const TPMT_PUBLIC *ak, const char **reason);

/* One PCR value as the machine reports it. */
struct fleet_pcr_value {
	uint16_t alg;
	uint8_t index;
	uint8_t size;
	uint8_t digest[FLEET_DIGEST_MAX];
};

/* The clock fields of a TPMS_ATTEST, for callers that track resets. */
struct fleet_tpm_clock {
	uint64_t clock;
	uint32_t reset_count;
	uint32_t restart_count;
	bool safe;
	uint64_t firmware_version;
};

/*
 * A quote to check. attest is the marshaled TPMS_ATTEST (the bytes inside the
 * TPM2B_ATTEST, which is what the TPM signs); sig is a marshaled
 * TPMT_SIGNATURE (RSASSA, RSAPSS or ECDSA). values are the PCR values the
 * machine claims, in selection order (banks as listed in the selection, PCRs
 * ascending within each bank); their count must match the selection.
 */
struct fleet_quote_check {
	const TPMT_PUBLIC *ak;
	const uint8_t *attest;
	size_t attest_len;
	const uint8_t *sig;
	size_t sig_len;
	const uint8_t *extra_data; /* the expected qualifying data */
	size_t extra_data_len;
	const TPML_PCR_SELECTION *selection; /* the selection fleetd asked for */
	const struct fleet_pcr_value *values;
	size_t n_values;
};

/* Magic, type TPM_ST_ATTEST_QUOTE, extraData, selection, pcrDigest (hash of
 * the values in selection order with the AK's signing hash), signature.
 * The signature binds the AK's key, not its attributes: the caller must
 * already have bound this AK public area to the TPM by its name (credential
 * activation). clock is filled on success only; resetCount, restartCount and
 * firmwareVersion are obfuscated by the TPM unless the AK is in the
 * endorsement (or platform) hierarchy, as AKs made under the EK are. */
fleet_err fleet_quote_verify(const struct fleet_quote_check *q, struct fleet_tpm_clock *clock,
			     const char **reason);
/* The part of fleet_quote_verify that says who made the quote and for
 * which challenge: the AK rules, the signature over the attest bytes, magic,
 * type TPM_ST_ATTEST_QUOTE and extraData, with the same reasons; selection,
 * values and pcrDigest are not looked at (q->selection and q->values may be
 * NULL). For a verifier that derives the PCR values from the event log only
 * once it knows the quote is the TPM's answer to its nonce
 * (fleetd/reattest/reattest.h). clock is filled on success only. */
fleet_err fleet_quote_authenticate(const struct fleet_quote_check *q,
				   struct fleet_tpm_clock *clock, const char **reason);

/*
 * A TPM2_Certify to check: the AK signed that the TPM holds object. The
 * object must be a signing key bound to the TPM: fixedTPM, fixedParent,
 * sensitiveDataOrigin, sign, and decrypt clear. A restricted key passes here
 * (an AK may certify another AK); the LDevID's "not restricted" rule is
 * enforced where it matters, at intake and when its certificate is issued.
 */
struct fleet_certify_check {
	const TPMT_PUBLIC *ak;
	const uint8_t *attest;
	size_t attest_len;
	const uint8_t *sig;
	size_t sig_len;
	const uint8_t *extra_data;
	size_t extra_data_len;
	const TPMT_PUBLIC *object;
};

/* On success spki_sha256 (if not NULL) gets the SHA-256 of the object's
 * SubjectPublicKeyInfo, for matching against a CSR. */
fleet_err fleet_certify_verify(const struct fleet_certify_check *c, uint8_t spki_sha256[32],
			       const char **reason);

/* A marshaled TPMS_ATTEST (the TPM2B_ATTEST's contents, what tpm2_quote -m
 * and tpm2_certify -o write), whole buffer; the magic is not checked here. */
fleet_err fleet_tpm_attest_parse(const uint8_t *buf, size_t len, TPMS_ATTEST *out,
				 struct fleet_errctx *ec);
/* A marshaled TPMT_SIGNATURE (tpm2-tools' default "tss" format), whole
 * buffer; only RSASSA, RSAPSS and ECDSA are accepted. */
fleet_err fleet_tpm_signature_parse(const uint8_t *buf, size_t len, TPMT_SIGNATURE *out,
				    struct fleet_errctx *ec);
/* Check that key signed msg with sig: the scheme must suit the key's type
 * and equal the key's own scheme when it has one; the hash must be SHA-256,
 * SHA-384 or SHA-512. Reasons: "signature-scheme", "signature-invalid",
 * "ak-unsupported" (the key cannot be used at all). */
fleet_err fleet_tpm_signature_verify(const TPMT_PUBLIC *key, const uint8_t *msg, size_t msg_len,
				     const TPMT_SIGNATURE *sig, const char **reason);

/* Parse a selection string like "sha256:0,1,2,7+sha1:0" (tpm2-tools syntax)
 * into a TPML_PCR_SELECTION (sizeofSelect 3). */
fleet_err fleet_pcr_selection_parse(const char *s, TPML_PCR_SELECTION *out);

#endif
