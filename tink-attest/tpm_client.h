/*
 * tpm_client.h: every TPM operation tink-attest makes, through tpm2-tss ESYS.
 *
 * Keys (docs/tink-attest.md, "Keys and persistence"):
 *   EKs     made from the TCG EK Credential Profile template that matches
 *           the certificate's NV index (RSA-2048 L-1 for 0x01C00002, ECC
 *           P-256 L-2 for 0x01C0000A, ECC P-384 high range H-3 for 0x01C00016)
 *           and refused unless their public key is the certificate's;
 *   AK      a primary in the endorsement hierarchy from a fixed template:
 *           restricted ECDSA P-256 / SHA-256 signing key;
 *   LDevID  a primary in the owner hierarchy from a fixed template:
 *           unrestricted ECDSA P-256 / SHA-256 signing key (fixedTPM,
 *           fixedParent, sensitiveDataOrigin, userWithAuth, sign).
 *   node    fleet-join's node key (tpm_join.h): the same shape with noDA,
 *           one template per generation (tink_nodekey_template).
 * A primary made again from the same template in the same hierarchy is the
 * same key, so the AK and LDevID come back on every boot without writing
 * anything to the TPM. Keys are loaded only while a command needs them (a
 * TPM without a resource manager holds three transient objects).
 *
 * Every function returns 0, or -1 with a sentence in t->err naming the
 * operation and the TPM's response code.
 */
#ifndef TINK_TPM_CLIENT_H
#define TINK_TPM_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tss2/tss2_esys.h>

#include "lib/buf.h"
#include "lib/tpm.h"

#define TINK_NV_EK_RSA 0x01C00002
#define TINK_NV_EK_ECC_P256 0x01C0000A
#define TINK_NV_EK_ECC_P384 0x01C00016

enum tink_key {
	TINK_KEY_EK_RSA,      /* TCG L-1 */
	TINK_KEY_EK_ECC_P256, /* TCG L-2 */
	TINK_KEY_EK_ECC_P384, /* TCG H-3 (high range) */
	TINK_KEY_AK,
	TINK_KEY_LDEVID,
	TINK_KEY_NODE, /* fleet-join's node key of generation t->node_gen */
};

struct tink_tpm {
	TSS2_TCTI_CONTEXT *tcti;
	ESYS_CONTEXT *esys;
	/* Which LDevID key TINK_KEY_LDEVID means: 0 (tink_tpm_open's) is the
	 * admission's; a renewal moves to the next (tink_ldevid_template). */
	unsigned ldevid_gen;
	/* Which node key TINK_KEY_NODE means (tink_nodekey_template). */
	unsigned node_gen;
	char err[300];
};

/* The most LDevID generations a TPM is searched for (tpm-reattest). */
#define TINK_LDEVID_MAX_GEN 64

/* An EK as read from the TPM: its certificate and public area, checked
 * against each other. */
struct tink_ek {
	bool present;
	enum tink_key key;
	TPM2B_PUBLIC pub;
	struct fleet_buf cert; /* as read from NV */
};

int tink_tpm_open(struct tink_tpm *t, const char *tcti);
void tink_tpm_close(struct tink_tpm *t);

/* The template of a key (exposed for the tests' expectations). */
TPM2B_PUBLIC tink_key_template(enum tink_key k);
/* The LDevID of generation gen: the same template with its own unique
 * field ("fleetd tink-attest LDevID v1" for 0, "fleetd LDevID gen N" after), so
 * each generation is another key, made again from its template on every
 * boot like the others, and a renewal's next key is never a stored file
 * (tpm-reattest/README.md, "Renewal"). */
TPM2B_PUBLIC tink_ldevid_template(unsigned gen);

/* fleet-join's node key of generation gen (tink-attest/tpm_join.h): an
 * unrestricted ECDSA P-256 / SHA-256 signing primary of the owner hierarchy
 * (fixedTPM, fixedParent, sensitiveDataOrigin, userWithAuth, sign, noDA)
 * whose unique is "fleetd node key gen N": a family of its own, never an
 * LDevID's. */
TPM2B_PUBLIC tink_nodekey_template(unsigned gen);

/* Read an EK certificate, create the EK from its template, and require the
 * two to carry the same key. *present false (and 0) when the certificate's
 * NV index is not defined. For ECC the P-256 index is tried first. */
int tink_tpm_read_ek_rsa(struct tink_tpm *t, struct tink_ek *ek);
int tink_tpm_read_ek_ecc(struct tink_tpm *t, struct tink_ek *ek);
void tink_ek_free(struct tink_ek *ek);

/* The AK's and LDevID's public areas (creating and flushing each). */
int tink_tpm_public(struct tink_tpm *t, enum tink_key k, TPM2B_PUBLIC *pub);

/* TPM2_Certify of key k (TINK_KEY_LDEVID, TINK_KEY_NODE) by the AK with
 * qualifying data q. attest gets the TPMS_ATTEST bytes, sig the marshaled
 * TPMT_SIGNATURE. */
int tink_tpm_certify(struct tink_tpm *t, enum tink_key k, const uint8_t *q, size_t qlen,
		     struct fleet_buf *attest, struct fleet_buf *sig);
/* TPM2_Certify of the LDevID by the AK with qualifying data q. attest gets
 * the TPMS_ATTEST bytes, sig the marshaled TPMT_SIGNATURE. */
int tink_tpm_certify_ldevid(struct tink_tpm *t, const uint8_t *q, size_t qlen,
			    struct fleet_buf *attest, struct fleet_buf *sig);

/* The LDevID key of t->ldevid_gen proven by the AK, as fleetd checks it at
 * intake and at renewal: its public area into pub, the request document
 * {"v":1,"serial":serial,"spki_sha256":..} into request, and TPM2_Certify
 * of the key by the AK over SHA-256(request) into attest and sig.
 * 0, or -1 with t->err set. */
int tink_tpm_prove_ldevid(struct tink_tpm *t, const char *serial, TPM2B_PUBLIC *pub,
			  struct fleet_buf *request, struct fleet_buf *attest,
			  struct fleet_buf *sig);

/* TPM2_ActivateCredential(AK, EK) with the EK's policy session; the blob is
 * the two marshaled structures fleetd sent. secret receives the plaintext
 * (cap bytes at most; *secret_len set). */
int tink_tpm_activate(struct tink_tpm *t, const struct tink_ek *ek, const uint8_t *id_object,
		      size_t id_len, const uint8_t *enc_secret, size_t es_len, uint8_t *secret,
		      size_t cap, size_t *secret_len);

/* TPM2_Quote by the AK over sel with qualifying data q, then the selected
 * PCR values in selection order (banks as listed, PCRs ascending). */
int tink_tpm_quote(struct tink_tpm *t, const TPML_PCR_SELECTION *sel, const uint8_t *q,
		   size_t qlen, struct fleet_buf *attest, struct fleet_buf *sig,
		   struct fleet_pcr_value *values, size_t max_values, size_t *n_values);

/* TPM2_Sign by key k (TINK_KEY_LDEVID, TINK_KEY_NODE) of SHA-256(msg)
 * (ECDSA, SHA-256; a null ticket, as an unrestricted key allows). */
int tink_tpm_sign(struct tink_tpm *t, enum tink_key k, const uint8_t *msg, size_t len,
		  TPMT_SIGNATURE *sig);
/* TPM2_Sign by the LDevID of SHA-256(msg) (ECDSA, SHA-256; a null ticket, as
 * an unrestricted key allows); sig gets the marshaled TPMT_SIGNATURE. */
int tink_tpm_sign_ldevid(struct tink_tpm *t, const uint8_t *msg, size_t len,
			 struct fleet_buf *sig);

#endif
