/*
 * tpm_credential.h: TPM2_MakeCredential in software (TPM 2.0 Part 1, 24).
 *
 * fleetd proves that a machine holds an EK, and that the AK lives in the same
 * TPM, by wrapping a secret to the EK bound to the AK's name: only
 * TPM2_ActivateCredential inside that TPM, with that AK loaded, recovers it.
 *
 *   seed:   RSA EK: random, encrypted with RSA-OAEP(SHA-nameAlg, label
 *           "IDENTITY\0"). ECC EK: ephemeral ECDH on the EK's curve,
 *           seed = KDFe(nameAlg, Z, "IDENTITY", ephemeral.x, ek.x).
 *   symKey  = KDFa(nameAlg, seed, "STORAGE", objName, "", AES key bits)
 *   encIdentity = AES-CFB(symKey, IV=0, TPM2B_DIGEST(secret))
 *   HMACkey = KDFa(nameAlg, seed, "INTEGRITY", "", "", digest bits)
 *   outerHMAC = HMAC(HMACkey, encIdentity || objName)
 *   credentialBlob = TPM2B(outerHMAC) || encIdentity
 *
 * The symmetric algorithm and nameAlg come from the EK's public area.
 */
#ifndef FLEET_TPM_CREDENTIAL_H
#define FLEET_TPM_CREDENTIAL_H

#include <stddef.h>
#include <stdint.h>

#include <tss2/tss2_tpm2_types.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

/*
 * Whether fleet_make_credential can wrap a credential to this EK: the one
 * rule both it and fleetd's intake (fleetd/attest/attest_server_intake.c) apply, so an
 * EK intake accepts never fails at the challenge. It is what the code can
 * do, derived from the TCG EK Credential Profile templates (L-1 RSA 2048 /
 * SHA-256 / AES-128-CFB, L-2 ECC P-256, the high range H-1..H-7 with
 * SHA-384/512, AES-256, RSA 3072/4096, P-384). On refusal *reason (may be
 * NULL) the first failing rule's:
 *   "ek-not-restricted", "ek-not-decrypt", "ek-sign-set"
 *                               not a storage key (FLEET_E_UNSUPPORTED)
 *   "ek-name-alg-unsupported"   nameAlg not SHA-256/384/512 (SHA-1, SM3-256)
 *   "ek-scheme-unsupported"     a scheme set (OAEP, RSAES, ECDH, ...): a
 *                               storage key has none
 *   "ek-kdf-unsupported"        ECC: a KDF set (the seed's KDF is KDFe)
 *   "ek-key-unsupported"        not RSA 2048/3072/4096 with exponent 65537
 *                               nor ECC NIST P-256/P-384
 *   "ek-symmetric-unsupported"  symmetric not AES-128/256 in CFB (NULL,
 *                               CTR, CBC, SM4, AES-192, ...)
 *   "ek-public-malformed"       modulus or coordinates that contradict the
 *                               declared size, a point off the curve, an
 *                               even modulus (FLEET_E_MALFORMED)
 * Another error (FLEET_E_NOMEM, FLEET_E_CRYPTO) leaves *reason NULL: it
 * says nothing about the EK. FLEET_E_INVALID_ARG for a NULL ek.
 */
fleet_err fleet_credential_ek_supported(const TPMT_PUBLIC *ek, const char **reason);

/*
 * secret: 1..64 bytes (at most the nameAlg digest size). obj_name: the AK's
 * TPM name. Appends to id_object a marshaled TPM2B_ID_OBJECT and to
 * enc_secret a marshaled TPM2B_ENCRYPTED_SECRET, the two inputs of
 * TPM2_ActivateCredential. The EK is judged by
 * fleet_credential_ek_supported's rule, and a refused one gets its reason
 * in *reason (may be NULL); other refusals (arguments, secret, name) leave
 * it NULL.
 */
fleet_err fleet_make_credential(const TPMT_PUBLIC *ek, const uint8_t *secret, size_t secret_len,
				const uint8_t *obj_name, size_t obj_name_len,
				struct fleet_buf *id_object, struct fleet_buf *enc_secret,
				const char **reason);

/* KDFa (SP 800-108 counter mode HMAC, TPM 2.0 Part 1, 11.4.10.2). */
fleet_err fleet_kdfa(uint16_t hash_alg, const uint8_t *key, size_t key_len, const char *label,
		     const uint8_t *ctx_u, size_t ctx_u_len, const uint8_t *ctx_v,
		     size_t ctx_v_len, uint32_t bits, uint8_t *out);
/* KDFe (SP 800-56A concatenation KDF, TPM 2.0 Part 1, 11.4.10.3). */
fleet_err fleet_kdfe(uint16_t hash_alg, const uint8_t *z, size_t z_len, const char *label,
		     const uint8_t *party_u, size_t party_u_len, const uint8_t *party_v,
		     size_t party_v_len, uint32_t bits, uint8_t *out);

#endif
