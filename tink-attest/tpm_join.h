/*
 * tpm_join.h: the TPM's part of fleet-join's tpm attestor (issue 14; the
 * wire contract is lib/tpm_join_evidence.h, spec 001 "tpm" and "Renewing a
 * TPM-held key"). join_client.c puts these on the wire; everything here
 * talks to the TPM through tpm_client.h and knows nothing of JSON.
 *
 * The node key is made in the TPM (tink_nodekey_template): a primary of the
 * owner hierarchy, so the same generation number derives the same key again
 * on every run and nothing is stored in the TPM or leaves it. A renewal
 * moves to the next generation. KEY then holds only the generation (the
 * "FLEET TPM NODE KEY" record of join_client.h).
 *
 * Every function returns 0, or -1 with a sentence in t->err naming the
 * operation (and the TPM's response code where the TPM refused).
 */
#ifndef TINK_TPM_JOIN_H
#define TINK_TPM_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "lib/buf.h"
#include "lib/tpm.h"
#include "lib/tpm_join_evidence.h"
#include "tink-attest/tpm_client.h"

/* The last node key generation (the record's and the template's range). */
#define TINK_NODE_MAX_GEN 1000000u
/* A TPM name: nameAlg (2) || digest (at most SHA-512's 64). */
#define TINK_NAME_MAX (2 + 64)

/* The EK round 1 sends: the RSA EK with its certificate (NV 0x01C00002),
 * else an ECC EK with its own, else (a TPM with no manufacturer
 * certificate) the RSA EK made from the TCG template, with ek->cert empty.
 * Each certified EK is checked against its certificate (tpm_client.h). */
int tink_join_ek(struct tink_tpm *t, struct tink_ek *ek);

/* pub marshaled as a TPM2B_PUBLIC, appended to out. */
int tink_public_marshal(struct tink_tpm *t, const TPM2B_PUBLIC *pub, struct fleet_buf *out);

/* The AK's public area and its TPM name (nameAlg || digest). */
int tink_ak_name(struct tink_tpm *t, TPM2B_PUBLIC *pub, uint8_t name[TINK_NAME_MAX],
		 size_t *name_len);

/* Node key generation gen: its public area (may be NULL) and its public key
 * as OpenSSL's (may be NULL; the caller frees it). */
int tink_node_public(struct tink_tpm *t, unsigned gen, TPM2B_PUBLIC *pub, EVP_PKEY **pkey);

/* The CSR of node key gen in join_client.h FJ1's shape (PKCS#10, subject
 * CN=fleet-join, ecdsa-with-SHA256): built with OpenSSL from the key's
 * public area, signed by the TPM (TPM2_Sign over SHA-256 of the
 * CertificationRequestInfo, the ECDSA signature DER-encoded) and checked
 * with X509_REQ_verify before it is given out. DER appended to csr; *pkey
 * (may be NULL) the key's public half. */
int tink_node_csr(struct tink_tpm *t, unsigned gen, struct fleet_buf *csr, EVP_PKEY **pkey);

/* ES256 by node key gen over msg (TPM2_Sign of SHA-256(msg)): r || s, 32
 * bytes each, as lib/join_evidence.h JE5 carries it. */
int tink_node_es256(struct tink_tpm *t, unsigned gen, const uint8_t *msg, size_t len,
		    uint8_t sig[64]);

/* The AK's certification of node key gen (TPM2_Certify, extraData q): the
 * key's marshaled TPM2B_PUBLIC into key_public, the TPMS_ATTEST into
 * attest, the marshaled TPMT_SIGNATURE into sig. */
int tink_node_certify(struct tink_tpm *t, unsigned gen, const uint8_t *q, size_t qlen,
		      struct fleet_buf *key_public, struct fleet_buf *attest,
		      struct fleet_buf *sig);

/* The TPM's part of a challenge's answer (round 2). secret is a wiping
 * buffer (tink_answer_init); the rest is public. */
struct tink_answer {
	struct fleet_buf secret;
	struct fleet_buf quote, quote_sig;
	size_t n_values;
	struct fleet_pcr_value values[FLEET_TPM_MAX_PCRS];
	struct fleet_buf node_public, certify_info, certify_sig;
};
void tink_answer_init(struct tink_answer *a);
void tink_answer_free(struct tink_answer *a);

/* Answer a challenge for the CSR whose SHA-256 is csr_sha256, made with
 * node key gen: TPM2_ActivateCredential(AK, ek) of id_object/enc_secret;
 * TPM2_Quote of pcrs (tpm2-tools syntax) by the AK with extraData
 * SHA-256(secret || csr_sha256) and the selected PCR values in selection
 * order; TPM2_Certify of node key gen by the AK with extraData
 * csr_sha256. */
int tink_answer_challenge(struct tink_tpm *t, const struct tink_ek *ek, unsigned gen,
			  const uint8_t *id_object, size_t id_len, const uint8_t *enc_secret,
			  size_t es_len, const char *pcrs, const uint8_t csr_sha256[32],
			  struct tink_answer *out);

#endif
