/*
 * fuzz_ek_cert.c: an EK certificate as a machine sends it (NV header,
 * padding, PEM or DER) through everything fleetd does with one before it
 * knows whether to trust it: load, ek_hash, the fields `fleetctl ek show`
 * prints, and a key comparison against a fixed TPM public area.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "lib/hex.h"
#include "lib/x509_ek.h"

/* The TCG attributes in the SAN directoryName, read as `ek show` does. */
static void tcg_attrs(X509 *x)
{
	static const char *const oids[] = {"2.23.133.2.1", "2.23.133.2.2", "2.23.133.2.3"};
	GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (size_t a = 0; a < 3; a++) {
		ASN1_OBJECT *obj = OBJ_txt2obj(oids[a], 1);
		for (int i = 0; obj && san && i < sk_GENERAL_NAME_num(san); i++) {
			GENERAL_NAME *gn = sk_GENERAL_NAME_value(san, i);
			if (gn->type != GEN_DIRNAME)
				continue;
			int idx = X509_NAME_get_index_by_OBJ(gn->d.directoryName, obj, -1);
			if (idx >= 0) {
				const ASN1_STRING *v = X509_NAME_ENTRY_get_data(
					X509_NAME_get_entry(gn->d.directoryName, idx));
				volatile int n = ASN1_STRING_length(v);
				(void)n;
			}
		}
		ASN1_OBJECT_free(obj);
	}
	GENERAL_NAMES_free(san);
}

static void names(X509 *x)
{
	BIO *bio = BIO_new(BIO_s_mem());
	if (!bio)
		return;
	X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
	X509_NAME_print_ex(bio, X509_get_issuer_name(x), 0, XN_FLAG_RFC2253);
	BIO_free(bio);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fleet_errctx ec;
	X509 *x = NULL;
	char hash[65];

	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_ek_cert_load(data, size, &x, &ec);
	if (e != FLEET_OK) {
		/* A refusal always says where and why. */
		if (x != NULL || ec.detail[0] == '\0' || (ec.has_offset && ec.offset > size))
			__builtin_trap();
		ERR_clear_error();
		return 0;
	}
	if (fleet_ek_hash(x, hash) == FLEET_OK && !fleet_hex_is_lower(hash, 64))
		__builtin_trap();
	names(x);
	tcg_attrs(x);

	/* Compare with a fixed RSA and a fixed ECC public area: the parser of
	 * the RSAPublicKey bits sees whatever the certificate holds. */
	TPMT_PUBLIC pub;
	const char *reason = NULL;
	memset(&pub, 0, sizeof(pub));
	pub.type = TPM2_ALG_RSA;
	pub.unique.rsa.size = 256;
	memset(pub.unique.rsa.buffer, 0xC5, 256);
	(void)fleet_ek_cert_matches_public(x, &pub, &reason);
	memset(&pub, 0, sizeof(pub));
	pub.type = TPM2_ALG_ECC;
	pub.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
	pub.unique.ecc.x.size = 32;
	pub.unique.ecc.y.size = 32;
	(void)fleet_ek_cert_matches_public(x, &pub, &reason);

	X509_free(x);
	ERR_clear_error();
	return 0;
}
