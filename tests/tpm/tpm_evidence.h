/*
 * tpm_evidence.h: attestation evidence from a real TPM (swtpm) through
 * ESYS, for tests of both sides of the protocol (lib/attest_wire.h).
 *
 * Keys are primaries, so re-creating one from the same template gives the
 * same key: the AK (restricted ECDSA P-256, endorsement hierarchy, so the
 * TPM does not obfuscate the quote's clock fields) and the LDevID key
 * (unrestricted ECDSA P-256 signing key, owner hierarchy). swtpm holds
 * three transient objects; a persistent EK takes a slot while a command
 * uses it, so at most two of these should be loaded during an activation.
 *
 * Failures are cmocka assertion failures: these are test helpers.
 */
#ifndef FLEET_TPM_EVIDENCE_H
#define FLEET_TPM_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include <tss2/tss2_esys.h>

#include "lib/attest_wire.h"
#include "lib/eventlog.h"
#include "lib/buf.h"

#define TEV_EK_RSA_HANDLE 0x81010001
#define TEV_EK_ECC_HANDLE 0x81010016 /* P-384, TCG high-range template */
#define TEV_NV_EK_CERT_RSA 0x01C00002
#define TEV_NV_EK_CERT_ECC 0x01C00016

#define TEV_AK_ATTRS                                                                     \
	(TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM |      \
	 TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH)
#define TEV_LDEVID_ATTRS                                                                 \
	(TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |     \
	 TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH)

/* An ECC P-256 template with these attributes; scheme TPM2_ALG_NULL is
 * required when DECRYPT is among them. tag makes a distinct key. */
TPM2B_PUBLIC tev_ecc_template(TPMA_OBJECT attrs, TPMI_ALG_ECC_SCHEME scheme, uint8_t tag);
/* CreatePrimary in hierarchy; the TPM's public area into *out. */
ESYS_TR tev_primary(ESYS_CONTEXT *e, ESYS_TR hierarchy, const TPM2B_PUBLIC *tmpl,
		    TPM2B_PUBLIC *out);

/* Marshaled TPM2B_PUBLIC into malloc'd bytes. */
void tev_public_bytes(const TPM2B_PUBLIC *pub, struct fleet_wire_bytes *out);
/* An NV index (EK certificates) into malloc'd bytes. */
void tev_nv_bytes(ESYS_CONTEXT *e, TPM2_HANDLE index, struct fleet_wire_bytes *out);
/* A persistent key's public area. */
void tev_read_public(ESYS_CONTEXT *e, TPM2_HANDLE handle, TPM2B_PUBLIC *out);

/* TPM2_Certify(obj by ak) / TPM2_Quote(ak) with qualifying data; the
 * TPMS_ATTEST bytes and the marshaled TPMT_SIGNATURE, malloc'd. */
void tev_certify(ESYS_CONTEXT *e, ESYS_TR ak, ESYS_TR obj, const uint8_t *qual, size_t qlen,
		 struct fleet_wire_bytes *attest, struct fleet_wire_bytes *sig);
void tev_quote(ESYS_CONTEXT *e, ESYS_TR ak, const uint8_t *qual, size_t qlen,
	       const TPML_PCR_SELECTION *sel, struct fleet_wire_bytes *attest,
	       struct fleet_wire_bytes *sig);
/* The selected PCRs in selection order; returns how many. */
size_t tev_read_pcrs(ESYS_CONTEXT *e, const TPML_PCR_SELECTION *sel, struct fleet_pcr_value *v,
		     size_t cap);
/* Extend pcr with each digest (one per bank). */
void tev_extend(ESYS_CONTEXT *e, uint32_t pcr, const struct fleet_evlog_digest *d, size_t n);

/* TPM2_ActivateCredential(ak, persistent EK) with the EK's policy
 * (PolicySecret(endorsement), plus PolicyOR with policy C for the
 * high-range templates). Returns the TPM's response code; on success the
 * secret (32 bytes) is in secret. */
TSS2_RC tev_activate(ESYS_CONTEXT *e, ESYS_TR ak, TPM2_HANDLE ek_handle,
		     const struct fleet_wire_credential *c, uint8_t secret[32]);

/* TPM2_Sign of SHA-256(msg) by key with its own scheme; marshaled
 * TPMT_SIGNATURE into malloc'd bytes. */
void tev_sign(ESYS_CONTEXT *e, ESYS_TR key, const uint8_t *msg, size_t len,
	      struct fleet_wire_bytes *sig);

#endif
