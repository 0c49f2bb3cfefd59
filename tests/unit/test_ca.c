/*
 * test_ca.c: the identity CA. Its files (modes, no overwrite), and what the
 * LAK and LDevID certificates it issues contain, checked field by field;
 * the SHA-1 fingerprint against the openssl command line.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <tss2/tss2_mu.h>

#include "lib/ca.h"
#include "lib/tpm.h"
#include "tests/unit/x509_mint.h"

#define AK_ATTRS                                                                       \
	(TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM |     \
	 TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH)
#define DEVID_ATTRS                                                                    \
	(TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |    \
	 TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH)

static char *new_ca(const char *tag)
{
	struct fleet_errctx ec = {0};
	char *base = make_temp_dir(tag);
	char dir[512];
	assert_non_null(base);
	snprintf(dir, sizeof(dir), "%s/ca", base);
	/* A wide-open umask: the key must come out 0600 regardless. */
	mode_t old = umask(0);
	fleet_err e = fleet_ca_init(dir, "Test Identity CA", 3650, &ec);
	umask(old);
	if (e != FLEET_OK)
		fail_msg("ca init: %s", ec.detail);
	return base;
}

static void ca_path(char *out, size_t cap, const char *base, const char *file)
{
	snprintf(out, cap, "%s/ca/%s", base, file);
}

static void test_init_files(void **state)
{
	(void)state;
	char *base = new_ca("cainit");
	char key[600], crt[600], dir[600];
	struct stat st;
	struct fleet_errctx ec = {0};

	ca_path(key, sizeof(key), base, "ca.key");
	ca_path(crt, sizeof(crt), base, "ca.crt");
	ca_path(dir, sizeof(dir), base, "");
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0077, 0);

	/* A second init refuses and leaves the key as it was. */
	struct fleet_buf before, after;
	read_file_or_fail(key, &before);
	snprintf(dir, sizeof(dir), "%s/ca", base);
	assert_int_equal(fleet_ca_init(dir, "Another CA", 10, &ec), FLEET_E_INVALID_ARG);
	assert_non_null(strstr(ec.detail, "refusing to overwrite"));
	read_file_or_fail(key, &after);
	assert_int_equal(before.len, after.len);
	assert_memory_equal(before.data, after.data, before.len);
	fb_free_secret(&before);
	fb_free_secret(&after);

	/* The CA certificate: P-256, self-signed, CA:TRUE critical,
	 * keyCertSign|cRLSign, key identifiers. */
	struct fleet_ca *ca = NULL;
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_OK);
	X509 *c = fleet_ca_cert(ca);
	EVP_PKEY *pk = X509_get0_pubkey(c);
	assert_true(EVP_PKEY_is_a(pk, "EC"));
	char group[32];
	assert_int_equal(EVP_PKEY_get_utf8_string_param(pk, "group", group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_equal(X509_verify(c, pk), 1);
	int crit = -1;
	BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(c, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_true(bc->ca);
	assert_int_equal(crit, 1);
	BASIC_CONSTRAINTS_free(bc);
	assert_int_equal(X509_get_key_usage(c), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(c));
	assert_non_null(X509_get0_authority_key_id(c));
	fleet_ca_free(ca);

	/* A key others can read is refused on load. */
	assert_int_equal(chmod(key, 0640), 0);
	ca = NULL;
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_E_UNSAFE);
	assert_null(ca);
	assert_non_null(strstr(ec.detail, "group or others"));
	rm_rf(base);
	free(base);
}

/* Both files through the one reader (lib/file_read.h): a symlinked key or
 * certificate, a key another user owns and a certificate others may write
 * are refused; the key is read into a buffer that is wiped. */
static void test_load_file_rules(void **state)
{
	(void)state;
	char *base = new_ca("cafiles");
	char key[600], crt[600], dir[600], moved[700];
	struct fleet_errctx ec = {0};
	struct fleet_ca *ca = NULL;
	ca_path(key, sizeof(key), base, "ca.key");
	ca_path(crt, sizeof(crt), base, "ca.crt");
	ca_path(dir, sizeof(dir), base, "");
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_OK);
	fleet_ca_free(ca);
	ca = NULL;
	/* A symlinked key: refused, even to the key itself. */
	snprintf(moved, sizeof(moved), "%s/real.key", base);
	assert_int_equal(rename(key, moved), 0);
	assert_int_equal(symlink(moved, key), 0);
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_E_UNSAFE);
	assert_null(ca);
	assert_non_null(strstr(ec.detail, "symlink"));
	unlink(key);
	assert_int_equal(rename(moved, key), 0);
	/* A symlinked certificate. */
	snprintf(moved, sizeof(moved), "%s/real.crt", base);
	assert_int_equal(rename(crt, moved), 0);
	assert_int_equal(symlink(moved, crt), 0);
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "symlink"));
	unlink(crt);
	assert_int_equal(rename(moved, crt), 0);
	/* A certificate anyone may write. */
	assert_int_equal(chmod(crt, 0666), 0);
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_E_UNSAFE);
	assert_non_null(strstr(ec.detail, "world-writable"));
	assert_int_equal(chmod(crt, 0644), 0);
	/* A key owned by another user, though 0600. */
	if (geteuid() == 0) {
		assert_int_equal(chown(key, 65534, 65534), 0);
		assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_E_UNSAFE);
		assert_non_null(strstr(ec.detail, "owner"));
		assert_int_equal(chown(key, 0, 0), 0);
	}
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_OK);
	fleet_ca_free(ca);
	/* No directory: not-found, errno recorded beside the sentence. */
	ca = NULL;
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_ca_load("/nonexistent/fleet-ca", &ca, &ec), FLEET_E_NOT_FOUND);
	assert_null(ca);
	assert_int_equal(ec.sys_errno, ENOENT);
	assert_string_equal(ec.detail, "cannot open the CA directory");
	rm_rf(base);
	free(base);
}

static int has_policy(X509 *x, const char *oid)
{
	CERTIFICATEPOLICIES *pol = X509_get_ext_d2i(x, NID_certificate_policies, NULL, NULL);
	char buf[64];
	int found = 0;
	for (int i = 0; pol && i < sk_POLICYINFO_num(pol); i++) {
		OBJ_obj2txt(buf, sizeof(buf), sk_POLICYINFO_value(pol, i)->policyid, 1);
		found |= !strcmp(buf, oid);
	}
	CERTIFICATEPOLICIES_free(pol);
	return found;
}

static int eku_oids(X509 *x, char *out, size_t cap)
{
	EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(x, NID_ext_key_usage, NULL, NULL);
	int n = eku ? sk_ASN1_OBJECT_num(eku) : 0;
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		OBJ_obj2txt(out, (int)cap, sk_ASN1_OBJECT_value(eku, i), 1);
	EXTENDED_KEY_USAGE_free(eku);
	return n;
}

static void name_entry(X509 *x, int nid, char *out, size_t cap)
{
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), nid, out, (int)cap) > 0);
}

/* Fields every issued certificate has, whatever its kind. */
static void check_common(struct fleet_ca *ca, X509 *x, EVP_PKEY *k, time_t nb, unsigned days)
{
	char buf[128];
	EVP_PKEY *tk = NULL;
	TPMT_PUBLIC pub;

	name_entry(x, NID_commonName, buf, sizeof(buf));
	assert_string_equal(buf, "node-17.folly");
	name_entry(x, NID_serialNumber, buf, sizeof(buf));
	assert_string_equal(buf, "SN-4411-X");
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(x),
				       X509_get_subject_name(fleet_ca_cert(ca))), 0);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(fleet_ca_cert(ca))), 1);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notBefore(x), nb), 0);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(x), nb + (time_t)days * 86400), 0);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	int crit = -1;
	ASN1_BIT_STRING *ku = X509_get_ext_d2i(x, NID_key_usage, &crit, NULL);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_check_ca(x), 0);
	/* 128 random bits: at least 15 bytes of serial (leading zero byte
	 * dropped at most once in a while), never more than 17. */
	const ASN1_INTEGER *sn = X509_get0_serialNumber(x);
	assert_true(ASN1_STRING_length(sn) >= 15 && ASN1_STRING_length(sn) <= 17);
	assert_memory_equal(X509_get0_authority_key_id(x)->data,
			    X509_get0_subject_key_id(fleet_ca_cert(ca))->data,
			    X509_get0_subject_key_id(fleet_ca_cert(ca))->length);
	assert_non_null(X509_get0_subject_key_id(x));
	/* The certified key is the TPM key: read back from the certificate's
	 * bytes (the issued X509 carries no cached key, lib/ca.c set_spki), and
	 * its subjectPublicKeyInfo byte for byte what OpenSSL encodes. */
	mint_tpm_public(k, 0, &pub);
	assert_int_equal(fleet_tpm_public_to_pkey(&pub, &tk), FLEET_OK);
	unsigned char *der = NULL, *want = NULL, *got = NULL;
	int n = i2d_X509(x, &der);
	assert_true(n > 0);
	const unsigned char *q = der;
	X509 *back = d2i_X509(NULL, &q, n);
	assert_non_null(back);
	assert_non_null(X509_get0_pubkey(back));
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(back), tk), 1);
	int wn = i2d_PUBKEY(tk, &want);
	int gn = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &got);
	assert_true(wn > 0);
	assert_int_equal(gn, wn);
	assert_memory_equal(got, want, (size_t)wn);
	OPENSSL_free(want);
	OPENSSL_free(got);
	OPENSSL_free(der);
	X509_free(back);
	EVP_PKEY_free(tk);
}

static void test_issue_lak_and_ldevid(void **state)
{
	(void)state;
	char *base = new_ca("caissue");
	char dir[600], eku[64];
	struct fleet_ca *ca = NULL;
	struct fleet_errctx ec = {0};
	EVP_PKEY *ak = mint_key_ec(), *devid = mint_key_rsa();
	TPMT_PUBLIC ak_pub, devid_pub;
	X509 *x = NULL;
	time_t nb = 1767225600; /* 2026-01-01 */

	snprintf(dir, sizeof(dir), "%s/ca", base);
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_OK);
	mint_tpm_public(ak, AK_ATTRS, &ak_pub);
	mint_tpm_public(devid, DEVID_ATTRS, &devid_pub);

	struct fleet_issue_request req = {.kind = FLEET_CERT_LAK, .key = &ak_pub,
					  .device_name = "node-17.folly", .serial = "SN-4411-X",
					  .not_before = nb, .validity_days = 90};
	if (fleet_ca_issue(ca, &req, &x, &ec) != FLEET_OK)
		fail_msg("issue LAK: %s", ec.detail);
	check_common(ca, x, ak, nb, 90);
	assert_int_equal(eku_oids(x, eku, sizeof(eku)), 1);
	assert_string_equal(eku, "2.23.133.8.3"); /* tcg-kp-AIKCertificate */
	assert_true(has_policy(x, "2.23.133.11.1.1"));
	assert_true(has_policy(x, "2.23.133.11.1.3"));
	assert_false(has_policy(x, "2.23.133.11.1.2"));
	X509_free(x);
	x = NULL;

	req.kind = FLEET_CERT_LDEVID;
	req.key = &devid_pub;
	req.validity_days = 365;
	if (fleet_ca_issue(ca, &req, &x, &ec) != FLEET_OK)
		fail_msg("issue LDevID: %s", ec.detail);
	check_common(ca, x, devid, nb, 365);
	assert_int_equal(eku_oids(x, eku, sizeof(eku)), 0);
	assert_true(has_policy(x, "2.23.133.11.1.1"));
	assert_true(has_policy(x, "2.23.133.11.1.2")); /* tcg-cap-verifiedTPMFixed */
	X509_free(x);
	x = NULL;

	/* A P-384 key: its own curve OID in the certificate (lib/ca.c set_spki). */
	EVP_PKEY *p384 = EVP_EC_gen("P-384");
	TPMT_PUBLIC p384_pub;
	assert_non_null(p384);
	mint_tpm_public(p384, DEVID_ATTRS, &p384_pub);
	req.key = &p384_pub;
	if (fleet_ca_issue(ca, &req, &x, &ec) != FLEET_OK)
		fail_msg("issue a P-384 LDevID: %s", ec.detail);
	check_common(ca, x, p384, nb, 365);
	X509_free(x);
	x = NULL;
	EVP_PKEY_free(p384);

	/* Keys that do not fit the kind are refused. */
	req.key = &ak_pub; /* restricted: an AK is not a DevID */
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_VERIFY);
	assert_non_null(strstr(ec.detail, "key-restricted"));
	req.kind = FLEET_CERT_LAK;
	req.key = &devid_pub; /* unrestricted: not an attestation key */
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_VERIFY);
	assert_non_null(strstr(ec.detail, "ak-not-restricted"));
	devid_pub.objectAttributes |= TPMA_OBJECT_DECRYPT;
	req.kind = FLEET_CERT_LDEVID;
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_VERIFY);
	assert_non_null(strstr(ec.detail, "key-decrypt-set"));
	/* Names that would not survive a subject or a log line. */
	req.key = &ak_pub;
	req.kind = FLEET_CERT_LAK;
	req.device_name = "node\n17";
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_INVALID_ARG);
	req.device_name = "";
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_INVALID_ARG);
	req.device_name = "node-17";
	req.validity_days = 0;
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_INVALID_ARG);
	assert_null(x);

	fleet_ca_free(ca);
	EVP_PKEY_free(ak);
	EVP_PKEY_free(devid);
	rm_rf(base);
	free(base);
}

/* The subject rule intake and issuing share (lib/ca.h). */
static void test_subject_rule(void **state)
{
	(void)state;
	const char *why = "unset";
	char big[4 * 65 + 1];

	assert_true(fleet_ca_subject_ok("node-17.folly", "SN-4411-X", &why));
	assert_null(why);
	/* NetBox allows non-ASCII names; a CN is a UTF8String. */
	assert_true(fleet_ca_subject_ok("n\xc5\x93ud-17.f\xc3\xb6lly \xe2\x80\x94 \xf0\x9f\x90\xa7",
					"SN 1", &why));
	/* A serialNumber is optional; what is set must be PrintableString. */
	assert_true(fleet_ca_subject_ok("node-1", NULL, &why));
	assert_true(fleet_ca_subject_ok("node-1", "AZaz09 '()+,-./:=?", &why));
	assert_true(fleet_ca_subject_ok("node-1", NULL, NULL));

	/* Each character PrintableString cannot hold. */
	for (const char *c = "_@*#&%"; *c; c++) {
		char serial[16];
		snprintf(serial, sizeof(serial), "SN%c4411", *c);
		why = NULL;
		assert_false(fleet_ca_subject_ok("node-1", serial, &why));
		assert_string_equal(why, "serial-unusable");
	}
	why = NULL;
	assert_false(fleet_ca_subject_ok("node-1", "", &why));
	assert_string_equal(why, "serial-unusable");
	assert_false(fleet_ca_subject_ok("node-1", "SN-\xc3\xa9", &why));
	assert_string_equal(why, "serial-unusable");
	memset(big, 'S', 65);
	big[65] = '\0';
	assert_false(fleet_ca_subject_ok("node-1", big, &why));
	big[64] = '\0';
	assert_true(fleet_ca_subject_ok("node-1", big, &why));

	/* Names: NULL (NetBox allows a null name), empty, controls, not UTF-8. */
	const char *bad_names[] = {
		NULL, "", "node\n17", "node\x7f", "node\xc2\x85", /* C1 NEL */
		"node\xc3", "node\xc3\x28", "\xc0\xaf", /* overlong '/' */
		"\xed\xa0\x80",                     /* a surrogate */
		"\xf4\x90\x80\x80",                 /* above U+10FFFF */
		"\xff",
	};
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		why = NULL;
		assert_false(fleet_ca_subject_ok(bad_names[i], "SN-1", &why));
		assert_string_equal(why, "device-name-unusable");
	}
	/* The name is checked first: both bad names the name. */
	assert_false(fleet_ca_subject_ok(NULL, "SN_1", &why));
	assert_string_equal(why, "device-name-unusable");
	/* 64 characters (ub-common-name), not bytes: 64 four-byte ones fit. */
	big[0] = '\0';
	for (int i = 0; i < 64; i++)
		strcat(big, "\xf0\x9f\x90\xa7");
	assert_true(fleet_ca_subject_ok(big, NULL, &why));
	strcat(big, "x");
	assert_false(fleet_ca_subject_ok(big, NULL, &why));
	assert_string_equal(why, "device-name-unusable");
}

/* A UTF-8 name is issued as a UTF8String CN and reads back byte-equal;
 * what the rule refuses, issuing refuses with the same reason. */
static void test_issue_subject(void **state)
{
	(void)state;
	char *base = new_ca("casubj");
	char dir[600];
	struct fleet_ca *ca = NULL;
	struct fleet_errctx ec = {0};
	EVP_PKEY *ak = mint_key_ec();
	TPMT_PUBLIC ak_pub;
	X509 *x = NULL;
	const char *utf8 = "n\xc5\x93ud-17.f\xc3\xb6lly \xe2\x80\x94 \xf0\x9f\x90\xa7";

	snprintf(dir, sizeof(dir), "%s/ca", base);
	assert_int_equal(fleet_ca_load(dir, &ca, &ec), FLEET_OK);
	mint_tpm_public(ak, AK_ATTRS, &ak_pub);
	struct fleet_issue_request req = {.kind = FLEET_CERT_LAK, .key = &ak_pub,
					  .device_name = utf8, .serial = "SN-4411-X",
					  .not_before = 1767225600, .validity_days = 90};
	if (fleet_ca_issue(ca, &req, &x, &ec) != FLEET_OK)
		fail_msg("issue with a UTF-8 name: %s", ec.detail);

	/* Through DER and back, as a relying party reads it. */
	unsigned char *der = NULL;
	int n = i2d_X509(x, &der);
	assert_true(n > 0);
	const unsigned char *p = der;
	X509 *back = d2i_X509(NULL, &p, n);
	assert_non_null(back);
	const X509_NAME *subj = X509_get_subject_name(back);
	int i = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
	assert_true(i >= 0);
	const ASN1_STRING *cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
	assert_int_equal(ASN1_STRING_type(cn), V_ASN1_UTF8STRING);
	assert_int_equal((size_t)ASN1_STRING_length(cn), strlen(utf8));
	assert_memory_equal(ASN1_STRING_get0_data(cn), utf8, strlen(utf8));
	i = X509_NAME_get_index_by_NID(subj, NID_serialNumber, -1);
	assert_true(i >= 0);
	const ASN1_STRING *sn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
	assert_int_equal(ASN1_STRING_type(sn), V_ASN1_PRINTABLESTRING);
	assert_int_equal(ASN1_STRING_length(sn), 9);
	assert_memory_equal(ASN1_STRING_get0_data(sn), "SN-4411-X", 9);
	assert_int_equal(X509_verify(back, X509_get0_pubkey(fleet_ca_cert(ca))), 1);
	X509_free(back);
	OPENSSL_free(der);
	X509_free(x);
	x = NULL;

	/* Refused by issuing with the rule's own reason. */
	const char *why = NULL;
	req.serial = "SN_4411@*#&%";
	assert_false(fleet_ca_subject_ok(req.device_name, req.serial, &why));
	assert_string_equal(why, "serial-unusable");
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_INVALID_ARG);
	assert_non_null(strstr(ec.detail, "serial-unusable"));
	assert_null(x);
	req.serial = "SN-4411-X";
	req.device_name = NULL;
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_INVALID_ARG);
	assert_non_null(strstr(ec.detail, "device-name-unusable"));
	req.device_name = "";
	memset(&ec, 0, sizeof(ec));
	assert_int_equal(fleet_ca_issue(ca, &req, &x, &ec), FLEET_E_INVALID_ARG);
	assert_non_null(strstr(ec.detail, "device-name-unusable"));
	assert_null(x);

	fleet_ca_free(ca);
	EVP_PKEY_free(ak);
	rm_rf(base);
	free(base);
}

/* fleetctl ca init / issue end to end; the printed fingerprint is what
 * `openssl x509 -fingerprint -sha1` says, in fleetd's lowercase hex. */
static void test_cli_fingerprint(void **state)
{
	(void)state;
	char *base = make_temp_dir("cacli");
	char cmd[2048], pubpath[600];
	struct fleet_buf out, ossl;
	EVP_PKEY *devid = mint_key_ec();
	TPM2B_PUBLIC pub = {0};
	uint8_t wire[sizeof(TPM2B_PUBLIC)];
	size_t off = 0;

	mint_tpm_public(devid, DEVID_ATTRS, &pub.publicArea);
	assert_int_equal(Tss2_MU_TPM2B_PUBLIC_Marshal(&pub, wire, sizeof(wire), &off), 0);
	snprintf(pubpath, sizeof(pubpath), "%s/devid.pub", base);
	FILE *f = fopen(pubpath, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(wire, 1, off, f), off);
	fclose(f);

	snprintf(cmd, sizeof(cmd), "'%s' ca init '%s/ca' --cn 'CLI CA' --days 30 >/dev/null",
		 fleetctl_path(), base);
	assert_int_equal(run_capture(cmd, NULL), 0);
	/* Twice is refused, with the usage/IO exit code. */
	assert_int_equal(run_capture(cmd, NULL), 2);
	snprintf(cmd, sizeof(cmd),
		 "'%s' ca issue '%s/ca' --kind ldevid --key '%s' --name node-1 --serial S1 "
		 "--out '%s/devid.pem'",
		 fleetctl_path(), base, pubpath, base);
	fb_init(&out);
	assert_int_equal(run_capture(cmd, &out), 0);
	assert_int_equal(out.len, 41);
	/* --out is never overwritten. */
	assert_int_equal(run_capture(cmd, NULL), 2);

	snprintf(cmd, sizeof(cmd),
		 "openssl x509 -in '%s/devid.pem' -noout -fingerprint -sha1 | sed 's/.*=//; s/://g' "
		 "| tr A-F a-f",
		 base);
	fb_init(&ossl);
	assert_int_equal(run_capture(cmd, &ossl), 0);
	assert_int_equal(ossl.len, 41);
	assert_memory_equal(out.data, ossl.data, 40);

	/* And the library agrees with both. */
	char fpr[41];
	snprintf(cmd, sizeof(cmd), "%s/devid.pem", base);
	f = fopen(cmd, "r");
	assert_non_null(f);
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(x);
	assert_int_equal(fleet_cert_sha1_fingerprint(x, fpr), FLEET_OK);
	assert_memory_equal(fpr, out.data, 40);
	X509_free(x);
	fb_free(&out);
	fb_free(&ossl);
	EVP_PKEY_free(devid);
	rm_rf(base);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_files),
		cmocka_unit_test(test_load_file_rules),
		cmocka_unit_test(test_issue_lak_and_ldevid),
		cmocka_unit_test(test_subject_rule),
		cmocka_unit_test(test_issue_subject),
		cmocka_unit_test(test_cli_fingerprint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
