/*
 * ca_derive.c: a symmetric key derived from the CA key (ca.h
 * fleet_ca_derive_key). Every fleetd replica of one fleet holds the same
 * CA key (they issue the same CA's certificates), so a key derived from it
 * is shared by the replicas without a second secret to distribute, and is
 * worth no more to whoever holds the CA key than the CA key already is.
 */
#include "lib/ca.h"
#include "lib/ca_int.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/x509.h>

fleet_err fleet_ca_derive_key(const struct fleet_ca *ca, const char *purpose, uint8_t out[32])
{
	unsigned char *der = NULL;
	fleet_err e = FLEET_E_CRYPTO;
	memset(out, 0, 32);
	if (!ca || !ca->key || !purpose || !*purpose)
		return FLEET_E_INVALID_ARG;
	int len = i2d_PrivateKey(ca->key, &der);
	if (len <= 0)
		return FLEET_E_CRYPTO;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	char info[128];
	int il = snprintf(info, sizeof(info), "fleetd derived key v1%c%s", 0, purpose);
	if (kc && il > 0 && (size_t)il < sizeof(info)) {
		OSSL_PARAM p[] = {
			OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
			OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, der, (size_t)len),
			OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, (size_t)il),
			OSSL_PARAM_construct_end(),
		};
		if (EVP_KDF_derive(kc, out, 32, p) == 1)
			e = FLEET_OK;
	}
	EVP_KDF_CTX_free(kc);
	EVP_KDF_free(kdf);
	OPENSSL_clear_free(der, (size_t)len);
	if (e)
		OPENSSL_cleanse(out, 32);
	return e;
}
