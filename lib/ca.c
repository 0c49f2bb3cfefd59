/*
 * ca.c: fleetd's identity CA (see docs/identity-ca.md).
 *
 * Two files in one directory: ca.key (ECDSA P-256, PKCS#8 PEM, mode 0600)
 * and ca.crt. Both are created with O_EXCL, so an existing CA is never
 * overwritten by a second `ca init`, and the key's mode is set with fchmod
 * so a permissive umask cannot widen it. Loading reads both through the
 * one reader (file_read.h): the key as a secret (owned by root or us, no
 * access for group or others, as OpenSSH wants of private keys, into a
 * buffer that is wiped), the certificate as configuration.
 */
#include "lib/ca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "lib/buf.h"
#include "lib/ca_int.h"
#include "lib/file_read.h"
#include "lib/hex.h"
#include "lib/tpm.h"

#define CA_KEY_FILE "ca.key"
#define CA_CRT_FILE "ca.crt"
#define CA_FILE_MAX (64u * 1024)
#define CA_DAYS_MAX 7300u   /* 20 years: a CA outlives its machines */
#define LEAF_DAYS_MAX 3650u /* renewal is hourly-checked; 10 years is plenty */
#define NAME_MAX_LEN 64u    /* X.520 ub-common-name and ub-serial-number
			       (characters; RFC 5280 Appendix A.1) */

/* TCG OIDs (TCG OID registry; "TPM 2.0 Keys for Device Identity and
 * Attestation"). */
#define OID_TCG_KP_AIK_CERTIFICATE "2.23.133.8.3"
#define OID_TCG_CAP_TPM_RESIDENCY "2.23.133.11.1.1"
#define OID_TCG_CAP_TPM_FIXED "2.23.133.11.1.2"
#define OID_TCG_CAP_TPM_RESTRICTED "2.23.133.11.1.3"

void fleet_ca_free(struct fleet_ca *ca)
{
	if (!ca)
		return;
	EVP_PKEY_free(ca->key);
	X509_free(ca->cert);
	free(ca);
}

X509 *fleet_ca_cert(const struct fleet_ca *ca)
{
	return ca ? ca->cert : NULL;
}

/*
 * The subject rule (lib/ca.h). Names end up in logs, in SPIRE selectors and
 * in an X.509 subject: a control character in any of them is trouble, and
 * bytes that are not UTF-8 are not a UTF8String.
 *
 * Decode one UTF-8 sequence at s (RFC 3629 section 4's syntax: shortest
 * form only, no surrogates, at most U+10FFFF). Returns its length in bytes
 * and the code point in *cp, or 0 when the bytes are not UTF-8.
 */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	size_t n;
	uint32_t c = s[0], min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* A commonName: 1..ub-common-name characters of UTF-8, no C0, DEL or C1. */
static int cn_ok(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t chars = 0;

	if (!p || !*p)
		return 0;
	while (*p) {
		uint32_t cp;
		size_t n = utf8_next(p, &cp);
		if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || ++chars > NAME_MAX_LEN)
			return 0;
		p += n;
	}
	return 1;
}

/* X.680 41.4's PrintableString set. */
static int printable_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr(" '()+,-./:=?", c) != NULL);
}

/* A serialNumber: PrintableString (SIZE (1..ub-serial-number)). */
static int serial_ok(const char *serial)
{
	size_t n = strlen(serial);
	if (n == 0 || n > NAME_MAX_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!printable_char((unsigned char)serial[i]))
			return 0;
	return 1;
}

int fleet_ca_subject_ok(const char *name, const char *serial, const char **reason)
{
	const char *why = NULL;

	if (!cn_ok(name))
		why = FLEET_CA_REASON_NAME;
	else if (serial && !serial_ok(serial))
		why = FLEET_CA_REASON_SERIAL;
	if (reason)
		*reason = why;
	return why == NULL;
}

static fleet_err path_join(char *out, size_t cap, const char *dir, const char *file)
{
	int n = snprintf(out, cap, "%s/%s", dir, file);
	return (n < 0 || (size_t)n >= cap) ? FLEET_E_TOO_LARGE : FLEET_OK;
}

/* Shared with ca_node.c (lib/ca_int.h). */
fleet_err fleet_ca_int_random_serial(X509 *x)
{
	unsigned char rnd[16];
	BIGNUM *bn = NULL;
	fleet_err e = FLEET_E_CRYPTO;

	do {
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return FLEET_E_CRYPTO;
		BN_free(bn);
		bn = BN_bin2bn(rnd, sizeof(rnd), NULL);
		if (!bn)
			return FLEET_E_NOMEM;
	} while (BN_is_zero(bn));
	if (BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		e = FLEET_OK;
	BN_free(bn);
	return e;
}

fleet_err fleet_ca_int_add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
	if (!ext)
		return FLEET_E_CRYPTO;
	int ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? FLEET_OK : FLEET_E_CRYPTO;
}

/* certificatePolicies holding bare policy OIDs (no qualifiers). Built by
 * hand: OpenSSL's string form needs a config database for this one. */
static fleet_err add_policies(X509 *x, const char *oid1, const char *oid2)
{
	const char *oids[] = {oid1, oid2};
	CERTIFICATEPOLICIES *pols = sk_POLICYINFO_new_null();
	fleet_err e = FLEET_E_CRYPTO;

	if (!pols)
		return FLEET_E_NOMEM;
	for (size_t i = 0; i < 2; i++) {
		POLICYINFO *pi = POLICYINFO_new();
		if (!pi)
			goto out;
		ASN1_OBJECT_free(pi->policyid);
		pi->policyid = OBJ_txt2obj(oids[i], 1);
		if (!pi->policyid || !sk_POLICYINFO_push(pols, pi)) {
			POLICYINFO_free(pi);
			goto out;
		}
	}
	if (X509_add1_ext_i2d(x, NID_certificate_policies, pols, 0, X509V3_ADD_DEFAULT) == 1)
		e = FLEET_OK;
out:
	CERTIFICATEPOLICIES_free(pols);
	return e;
}

fleet_err fleet_ca_int_set_validity(X509 *x, time_t not_before, time_t seconds)
{
	time_t nb = not_before ? not_before : time(NULL);
	time_t na = nb + seconds;
	if (!ASN1_TIME_set(X509_getm_notBefore(x), nb) || !ASN1_TIME_set(X509_getm_notAfter(x), na))
		return FLEET_E_CRYPTO;
	return FLEET_OK;
}

static fleet_err set_validity(X509 *x, time_t not_before, unsigned days)
{
	return fleet_ca_int_set_validity(x, not_before, (time_t)days * 86400);
}

/* Write all of buf to a file that must not exist yet, with exactly `mode`. */
static fleet_err write_new_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return errno == EEXIST ? FLEET_E_INVALID_ARG : FLEET_E_IO;
	/* open's mode passes through the umask; fchmod does not, so a umask
	 * of 0 cannot leave the key world-readable and 0277 cannot leave it
	 * unwritable for us. */
	fleet_err e = fchmod(fd, mode) == 0 ? FLEET_OK : FLEET_E_IO;
	const unsigned char *p = buf;
	while (e == FLEET_OK && len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = FLEET_E_IO;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (e == FLEET_OK && fsync(fd) != 0)
		e = FLEET_E_IO;
	if (close(fd) != 0 && e == FLEET_OK)
		e = FLEET_E_IO;
	if (e != FLEET_OK)
		unlink(path);
	return e;
}

static fleet_err write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert)
{
	/* secmem: the key's PEM is wiped when the BIO is freed. */
	BIO *bio = BIO_new(key ? BIO_s_secmem() : BIO_s_mem());
	char *data;
	long len;
	fleet_err e;

	if (!bio)
		return FLEET_E_NOMEM;
	if (key ? !PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
		: !PEM_write_bio_X509(bio, cert)) {
		BIO_free(bio);
		return FLEET_E_CRYPTO;
	}
	len = BIO_get_mem_data(bio, &data);
	e = len > 0 ? write_new_file(path, data, (size_t)len, mode) : FLEET_E_CRYPTO;
	BIO_free(bio);
	return e;
}

static fleet_err make_ca_cert(EVP_PKEY *key, const char *cn, unsigned days, X509 **out)
{
	X509 *x = X509_new();
	X509_NAME *name;
	X509V3_CTX v3;
	fleet_err e = FLEET_E_CRYPTO;

	if (!x)
		return FLEET_E_NOMEM;
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || fleet_ca_int_random_serial(x) != FLEET_OK ||
	    !X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
					(const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || set_validity(x, 0, days) != FLEET_OK ||
	    !X509_set_pubkey(x, key))
		goto out;
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if (fleet_ca_int_add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign") !=
		    FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_subject_key_identifier, "hash") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") != FLEET_OK)
		goto out;
	if (X509_sign(x, key, EVP_sha256()) <= 0)
		goto out;
	*out = x;
	x = NULL;
	e = FLEET_OK;
out:
	X509_free(x);
	return e;
}

fleet_err fleet_ca_init(const char *dir, const char *common_name, unsigned validity_days,
			struct fleet_errctx *ec)
{
	char key_path[4096], crt_path[4096];
	struct stat st;
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	fleet_err e;

	if (!dir || !*dir || !cn_ok(common_name))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"CA needs a directory and a common name of 1-%u UTF-8 "
					"characters, none a control character",
					NAME_MAX_LEN);
	if (validity_days == 0 || validity_days > CA_DAYS_MAX)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"CA validity must be 1-%u days", CA_DAYS_MAX);
	if (path_join(key_path, sizeof(key_path), dir, CA_KEY_FILE) != FLEET_OK ||
	    path_join(crt_path, sizeof(crt_path), dir, CA_CRT_FILE) != FLEET_OK)
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "CA directory path too long");
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot create CA directory");
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return fleet_errctx_msg(ec, FLEET_E_IO, "CA path is not a directory");
	/* Checked first so a half-made CA is never left behind; O_EXCL below
	 * still closes the race with a concurrent init. */
	if (lstat(key_path, &st) == 0 || lstat(crt_path, &st) == 0)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"a CA already exists in this directory; refusing to "
					"overwrite it");

	key = EVP_EC_gen("P-256");
	if (!key) {
		ERR_clear_error();
		return fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "cannot generate the P-256 CA key");
	}
	e = make_ca_cert(key, common_name, validity_days, &cert);
	if (e != FLEET_OK) {
		fleet_errctx_msg(ec, e, "cannot build the CA certificate");
		goto out;
	}
	e = write_pem(key_path, 0600, key, NULL);
	if (e != FLEET_OK) {
		fleet_errctx_msg(ec, e, "cannot write %s (it may already exist)", CA_KEY_FILE);
		goto out;
	}
	e = write_pem(crt_path, 0644, NULL, cert);
	if (e != FLEET_OK) {
		unlink(key_path); /* ours: created with O_EXCL just above */
		fleet_errctx_msg(ec, e, "cannot write %s (it may already exist)", CA_CRT_FILE);
	}
out:
	ERR_clear_error();
	EVP_PKEY_free(key);
	X509_free(cert);
	return e;
}

/* A refusal by the reader, passed on as it said it (a missing file is
 * NOT_FOUND, a file others could read or write, owned by someone else, or a
 * link is UNSAFE, lib/file_read.h), with what fleet_ca_load does about it. */
static fleet_err read_fail(fleet_err e, struct fleet_errctx *ec)
{
	return fleet_errctx_wrap(ec, e, NULL, "; refusing to use it");
}

/* Read the key file, refusing one others could have read (as OpenSSH does
 * with private keys), a link, or one another user owns. */
static fleet_err read_key(int dfd, EVP_PKEY **out, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_SECRET("the CA key", CA_FILE_MAX);
	struct fleet_buf b;
	fb_init(&b);
	fleet_err e = fleet_file_read(dfd, CA_KEY_FILE, &policy, &b, ec);
	if (e != FLEET_OK)
		return read_fail(e, ec);
	BIO *bio = BIO_new_mem_buf(b.data, (int)b.len);
	*out = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!*out)
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s holds no private key", CA_KEY_FILE);
	fb_free(&b); /* a secret buffer: wiped */
	return e;
}

fleet_err fleet_ca_load(const char *dir, struct fleet_ca **out, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy crt_policy =
		FLEET_FILE_POLICY_CONFIG("the CA certificate", CA_FILE_MAX);
	struct fleet_buf b;
	struct fleet_ca *ca;
	fleet_err e;

	if (!dir || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no directory or output");
	*out = NULL;
	/* Both files from the one directory opened here. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int err = errno;
		return fleet_errctx_errno(ec, err == ENOENT ? FLEET_E_NOT_FOUND : FLEET_E_IO, err,
					  "cannot open the CA directory");
	}
	ca = calloc(1, sizeof(*ca));
	if (!ca) {
		close(dfd);
		return FLEET_E_NOMEM;
	}
	e = read_key(dfd, &ca->key, ec);
	if (e != FLEET_OK)
		goto fail;
	if (!EVP_PKEY_is_a(ca->key, "EC")) {
		e = fleet_errctx_msg(ec, FLEET_E_UNSUPPORTED, "%s is not an EC key", CA_KEY_FILE);
		goto fail;
	}
	fb_init(&b);
	e = fleet_file_read(dfd, CA_CRT_FILE, &crt_policy, &b, ec);
	if (e != FLEET_OK) {
		e = read_fail(e, ec);
		goto fail;
	}
	BIO *bio = BIO_new_mem_buf(b.data, (int)b.len);
	ca->cert = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	fb_free(&b);
	if (!ca->cert) {
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "cannot read a certificate from %s",
				     CA_CRT_FILE);
		goto fail;
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		e = fleet_errctx_msg(ec, FLEET_E_VERIFY, "%s does not belong to %s", CA_KEY_FILE,
				     CA_CRT_FILE);
		goto fail;
	}
	ERR_clear_error();
	close(dfd);
	*out = ca;
	return FLEET_OK;
fail:
	ERR_clear_error();
	close(dfd);
	fleet_ca_free(ca);
	return e;
}

/*
 * What the CA is willing to vouch for. An LAK must be an attestation key
 * (restricted signing, fixed to the TPM); an LDevID must be an unrestricted
 * signing key that never decrypts and cannot leave the TPM.
 */
static fleet_err key_fits_kind(enum fleet_cert_kind kind, const TPMT_PUBLIC *k,
			       struct fleet_errctx *ec)
{
	const char *reason = NULL;
	TPMA_OBJECT a = k->objectAttributes;

	if (kind == FLEET_CERT_LAK) {
		if (fleet_tpm_ak_check(k, &reason) != FLEET_OK)
			return fleet_errctx_msg(ec, FLEET_E_VERIFY, "LAK key refused: %s",
						reason ? reason : "ak-check");
		return FLEET_OK;
	}
	if (!(a & TPMA_OBJECT_FIXEDTPM))
		reason = "key-not-fixedtpm";
	else if (!(a & TPMA_OBJECT_FIXEDPARENT))
		reason = "key-not-fixedparent";
	else if (!(a & TPMA_OBJECT_SENSITIVEDATAORIGIN))
		reason = "key-not-sensitivedataorigin";
	else if (!(a & TPMA_OBJECT_SIGN_ENCRYPT))
		reason = "key-not-sign";
	else if (a & TPMA_OBJECT_DECRYPT)
		reason = "key-decrypt-set";
	else if (a & TPMA_OBJECT_RESTRICTED)
		reason = "key-restricted";
	if (reason)
		return fleet_errctx_msg(ec, FLEET_E_VERIFY, "LDevID key refused: %s", reason);
	return FLEET_OK;
}

/* One DER length at *p (short form, 0x81 or 0x82, as lib/tpm_spki.c writes
 * them), within end; 0 on anything else. */
static int der_len_at(const uint8_t **p, const uint8_t *end, size_t *len)
{
	if (*p >= end)
		return 0;
	uint8_t b = *(*p)++;
	if (b < 0x80) {
		*len = b;
	} else if (b == 0x81 && end - *p >= 1) {
		*len = *(*p)++;
	} else if (b == 0x82 && end - *p >= 2) {
		*len = ((size_t)(*p)[0] << 8) | (*p)[1];
		*p += 2;
	} else {
		return 0;
	}
	return *len <= (size_t)(end - *p);
}

/*
 * The certificate's subjectPublicKeyInfo set from the TPM key's own DER
 * (lib/tpm_spki.c, proven equal to i2d_PUBKEY by tests/unit/test_tpm_public.c):
 * its algorithm by OID and its BIT STRING's bytes. X509_set_pubkey would
 * encode an EVP_PKEY with OSSL_ENCODER and decode the result back, ~380 us a
 * call on OpenSSL 3.0 against ~35 us for the certificate's signature, twice
 * per admission. The X509 built here holds no cached EVP_PKEY
 * (X509_get0_pubkey on it is NULL): its callers encode it (i2d_X509) and
 * whoever reads it back parses the key from those bytes.
 */
static fleet_err set_spki(X509 *x, const TPMT_PUBLIC *pub, const uint8_t *der, size_t n)
{
	const uint8_t *p = der, *end = der + n;
	size_t len;
	ASN1_OBJECT *alg, *param = NULL;

	/* SEQ { AlgorithmIdentifier (skipped: the OIDs follow from pub), BIT STRING { 00, key } } */
	if (p >= end || *p++ != 0x30 || !der_len_at(&p, end, &len) || len != (size_t)(end - p) ||
	    p >= end || *p++ != 0x30 || !der_len_at(&p, end, &len))
		return FLEET_E_CRYPTO;
	p += len;
	if (p >= end || *p++ != 0x03 || !der_len_at(&p, end, &len) || len < 2 ||
	    len != (size_t)(end - p) || *p++ != 0x00)
		return FLEET_E_CRYPTO;
	len--;
	if (pub->type == TPM2_ALG_RSA) {
		alg = OBJ_nid2obj(NID_rsaEncryption);
	} else if (pub->type == TPM2_ALG_ECC) {
		alg = OBJ_nid2obj(NID_X9_62_id_ecPublicKey);
		param = OBJ_nid2obj(pub->parameters.eccDetail.curveID == TPM2_ECC_NIST_P256
					    ? NID_X9_62_prime256v1
					    : NID_secp384r1);
	} else {
		return FLEET_E_UNSUPPORTED;
	}
	unsigned char *bits = OPENSSL_memdup(p, len);
	if (!bits)
		return FLEET_E_NOMEM;
	/* Built-in OIDs from OBJ_nid2obj are static: the X509 may own them. */
	if (!alg || (pub->type == TPM2_ALG_ECC && !param) ||
	    !X509_PUBKEY_set0_param(X509_get_X509_PUBKEY(x), alg,
				    param ? V_ASN1_OBJECT : V_ASN1_NULL, param, bits, (int)len)) {
		OPENSSL_free(bits);
		return FLEET_E_CRYPTO;
	}
	return FLEET_OK;
}

fleet_err fleet_ca_issue(const struct fleet_ca *ca, const struct fleet_issue_request *req,
			 X509 **out, struct fleet_errctx *ec)
{
	struct fleet_buf spki;
	X509 *x = NULL;
	X509_NAME *name;
	X509V3_CTX v3;
	fleet_err e;

	if (!ca || !req || !out || !req->key)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no CA, request, key or output");
	*out = NULL;
	if (req->kind != FLEET_CERT_LAK && req->kind != FLEET_CERT_LDEVID)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "unknown certificate kind %d",
					(int)req->kind);
	const char *why = NULL;
	if (!fleet_ca_subject_ok(req->device_name, req->serial, &why))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"the certificate subject cannot carry this %s: %s",
					strcmp(why, FLEET_CA_REASON_NAME) == 0 ? "device name"
										: "serial",
					why);
	if (req->validity_days == 0 || req->validity_days > LEAF_DAYS_MAX)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"validity must be 1-%u days", LEAF_DAYS_MAX);
	e = key_fits_kind(req->kind, req->key, ec);
	if (e != FLEET_OK)
		return e;
	fb_init(&spki);
	/* The same validation as every other use of the key (lib/tpm_public.c:
	 * the modulus, the exponent, the point on its curve), then the DER. */
	e = fleet_tpm_public_spki_der(req->key, &spki);
	if (e != FLEET_OK) {
		fb_free(&spki);
		return fleet_errctx_msg(ec, e, "the TPM public key is not usable: %s",
					fleet_err_str(e));
	}

	e = FLEET_E_CRYPTO;
	x = X509_new();
	if (!x) {
		e = FLEET_E_NOMEM;
		goto out;
	}
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || fleet_ca_int_random_serial(x) != FLEET_OK ||
	    /* The string types are set here, not picked by OpenSSL from its
	     * process-wide mask: the bytes were checked against exactly these
	     * types by fleet_ca_subject_ok above. */
	    !X509_NAME_add_entry_by_NID(name, NID_commonName, V_ASN1_UTF8STRING,
					(const unsigned char *)req->device_name, -1, -1, 0) ||
	    (req->serial &&
	     !X509_NAME_add_entry_by_NID(name, NID_serialNumber, V_ASN1_PRINTABLESTRING,
					 (const unsigned char *)req->serial, -1, -1, 0)) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
	    set_validity(x, req->not_before, req->validity_days) != FLEET_OK ||
	    set_spki(x, req->key, spki.data, spki.len) != FLEET_OK)
		goto out;
	X509V3_set_ctx(&v3, ca->cert, x, NULL, NULL, 0);
	if (fleet_ca_int_add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_subject_key_identifier, "hash") != FLEET_OK ||
	    fleet_ca_int_add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") != FLEET_OK)
		goto out;
	if (req->kind == FLEET_CERT_LAK) {
		/* tcg-kp-AIKCertificate: this key signs TPM attestations; the
		 * policies say its residency and restriction were verified (by
		 * credential activation and the attribute check above). */
		if (fleet_ca_int_add_ext(x, &v3, NID_ext_key_usage, OID_TCG_KP_AIK_CERTIFICATE) !=
			    FLEET_OK ||
		    add_policies(x, OID_TCG_CAP_TPM_RESIDENCY, OID_TCG_CAP_TPM_RESTRICTED) != FLEET_OK)
			goto out;
	} else {
		/* A DevID has no TCG EKU; the policies say the key was proven
		 * resident in the TPM (certified by the AK) and fixedTPM. */
		if (add_policies(x, OID_TCG_CAP_TPM_RESIDENCY, OID_TCG_CAP_TPM_FIXED) != FLEET_OK)
			goto out;
	}
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		goto out;
	*out = x;
	x = NULL;
	e = FLEET_OK;
out:
	if (e != FLEET_OK)
		fleet_errctx_msg(ec, e, "cannot build the certificate");
	ERR_clear_error();
	fb_free(&spki);
	X509_free(x);
	return e;
}

fleet_err fleet_cert_sha1_fingerprint(X509 *cert, char out[41])
{
	unsigned char *der = NULL;
	unsigned char md[20];
	unsigned int md_len = 0;
	fleet_err e = FLEET_OK;

	if (!cert || !out)
		return FLEET_E_INVALID_ARG;
	int n = i2d_X509(cert, &der);
	if (n <= 0)
		return FLEET_E_CRYPTO;
	if (EVP_Digest(der, (size_t)n, md, &md_len, EVP_sha1(), NULL) != 1 || md_len != 20)
		e = FLEET_E_CRYPTO;
	else
		fleet_hex_encode(md, sizeof(md), out);
	OPENSSL_free(der);
	return e;
}

fleet_err fleet_ca_sign(const struct fleet_ca *ca, const void *data, size_t len,
			struct fleet_buf *sig, struct fleet_errctx *ec)
{
	EVP_MD_CTX *md;
	size_t n = 0;
	fleet_err e;

	if (!ca || !ca->key || (!data && len) || !sig)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no CA, data or output");
	if (!(md = EVP_MD_CTX_new()))
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "EVP_MD_CTX_new");
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, ca->key) != 1 ||
	    EVP_DigestSign(md, NULL, &n, data, len) != 1) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "EVP_DigestSign");
		goto out;
	}
	if ((e = fb_reserve(sig, n)) != FLEET_OK) {
		e = fleet_errctx_msg(ec, e, "no room for the signature");
		goto out;
	}
	if (EVP_DigestSign(md, sig->data + sig->len, &n, data, len) != 1) {
		e = fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "EVP_DigestSign");
		goto out;
	}
	sig->len += n;
	e = FLEET_OK;
out:
	EVP_MD_CTX_free(md);
	return e;
}

fleet_err fleet_ca_verify(X509 *ca_cert, const void *data, size_t len, const uint8_t *sig,
			  size_t sig_len, struct fleet_errctx *ec)
{
	EVP_PKEY *pk;
	EVP_MD_CTX *md;
	int r;

	if (!ca_cert || (!data && len) || !sig)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no certificate, data or signature");
	if (!(pk = X509_get0_pubkey(ca_cert))) {
		fleet_openssl_drain(NULL, 0);
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "the CA certificate has no key");
	}
	if (EVP_PKEY_get_base_id(pk) != EVP_PKEY_EC)
		return fleet_errctx_msg(ec, FLEET_E_UNSUPPORTED, "the CA key is not an EC key");
	if (!(md = EVP_MD_CTX_new()))
		return fleet_errctx_openssl(ec, FLEET_E_NOMEM, "EVP_MD_CTX_new");
	if (EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pk) != 1) {
		EVP_MD_CTX_free(md);
		return fleet_errctx_openssl(ec, FLEET_E_CRYPTO, "EVP_DigestVerifyInit");
	}
	r = EVP_DigestVerify(md, sig, sig_len, data, len);
	EVP_MD_CTX_free(md);
	if (r != 1) {
		fleet_openssl_drain(NULL, 0);
		return fleet_errctx_msg(ec, FLEET_E_VERIFY, "the signature is not the CA's");
	}
	return FLEET_OK;
}
