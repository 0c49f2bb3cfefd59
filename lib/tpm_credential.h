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
 * secret: 1..64 bytes (at most the nameAlg digest size). obj_name: the AK's
 * TPM name. Appends to id_object a marshaled TPM2B_ID_OBJECT and to
 * enc_secret a marshaled TPM2B_ENCRYPTED_SECRET, the two inputs of
 * TPM2_ActivateCredential.
 */
fleet_err fleet_make_credential(const TPMT_PUBLIC *ek, const uint8_t *secret, size_t secret_len,
				const uint8_t *obj_name, size_t obj_name_len,
				struct fleet_buf *id_object, struct fleet_buf *enc_secret);

/* KDFa (SP 800-108 counter mode HMAC, TPM 2.0 Part 1, 11.4.10.2). */
fleet_err fleet_kdfa(uint16_t hash_alg, const uint8_t *key, size_t key_len, const char *label,
		     const uint8_t *ctx_u, size_t ctx_u_len, const uint8_t *ctx_v,
		     size_t ctx_v_len, uint32_t bits, uint8_t *out);
/* KDFe (SP 800-56A concatenation KDF, TPM 2.0 Part 1, 11.4.10.3). */
fleet_err fleet_kdfe(uint16_t hash_alg, const uint8_t *z, size_t z_len, const char *label,
		     const uint8_t *party_u, size_t party_u_len, const uint8_t *party_v,
		     size_t party_v_len, uint32_t bits, uint8_t *out);

#endif
