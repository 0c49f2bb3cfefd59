/*
 * store_seed.c: writes a small, known store through the store's own API for
 * tests/store_cli.sh (fleetctl's read-only commands). Usage: store_seed DIR
 *
 *   w1 (SER-1): admitted, both EKs, an LDevID certificate, two verdicts
 *               (fail then pass)
 *   w2 (SER-2): ECC EK only, quarantined "pcr7-authority"
 *   claims:     NEW-1 (unknown-serial, seen twice), NEW-2 (no-binding)
 *   a verdict with no device (serial ORPHAN)
 */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "fleetd/store/store.h"
#include "tests/unit/x509_mint.h"

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

#define CHECK(call)                                                                           \
	do {                                                                                  \
		fleet_err e_ = (call);                                             \
		if (e_) {                                                                     \
			fprintf(stderr, "store_seed: %s: %s: %s\n", #call,                    \
				fleet_err_str(e_), fleet_store_errmsg(st));             \
			return 1;                                                             \
		}                                                                             \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: store_seed DIR\n");
		return 2;
	}
	struct fleet_store *st = NULL;
	struct fleet_errctx sec = {0};
	char err[sizeof(sec.detail) + 80];
	if (fleet_store_open(argv[1], FLEET_STORE_RW, &st, &sec)) {
		fprintf(stderr, "store_seed: %s\n", fleet_errctx_text(&sec, err, sizeof(err)));
		return 1;
	}
	CHECK(fleet_store_device_record_admission(st, "w1", "SER-1", 11, HA, HB, 1764480000));
	CHECK(fleet_store_device_record_admission(st, "w2", "SER-2", 12, NULL, HC, 1764480000));
	CHECK(fleet_store_device_set_quarantine(st, "w2", true, "pcr7-authority", 1764483600));
	EVP_PKEY *k = mint_key_ec();
	struct mint m = {.key = k, .cn = "w1", .not_before = 1764480000, .not_after = 1772256000};
	X509 *x = mint_cert(&m);
	size_t len;
	unsigned char *der = mint_der(x, &len);
	char sha1[41];
	CHECK(fleet_store_cert_insert(st, "w1", "ldevid", der, len, 1764480000, sha1));
	printf("%s\n", sha1);
	const char *reasons[] = {"pcr4-app"};
	struct fleet_store_verdict_in v = {.time = 1764480000, .device = "w1", .serial = "SER-1",
					   .session = "01", .pass = false, .reasons = reasons,
					   .n_reasons = 1, .ek_hash = HA, .ek_hash_ecc = HB};
	CHECK(fleet_store_verdict_insert(st, &v, NULL));
	v.time = 1764483600;
	v.session = "02";
	v.pass = true;
	v.n_reasons = 0;
	CHECK(fleet_store_verdict_insert(st, &v, NULL));
	struct fleet_store_verdict_in o = {.time = 1764484000, .serial = "ORPHAN", .session = "03",
					   .pass = false, .reasons = reasons, .n_reasons = 1};
	CHECK(fleet_store_verdict_insert(st, &o, NULL));
	/* an answer's certificates for w3, never confirmed, and then revoked */
	struct fleet_store_issue_in pi = {
		.session = "3333333333333333333333333333333333333333333333333333333333333333",
		.serial = "SER-3", .device = "w3", .now = 1764485000};
	struct mint m2 = {.key = k, .cn = "w3", .not_before = 1764480000, .not_after = 1772256000};
	X509 *x2 = mint_cert(&m2);
	size_t len2;
	unsigned char *der2 = mint_der(x2, &len2);
	char lak[41], ldevid[41], revoked[FLEET_STORE_REVOKE_SHA1S][41];
	size_t nrev;
	pi.lak_der = der2;
	pi.lak_len = len2;
	struct mint m3 = {.key = k, .cn = "w3b", .not_before = 1764480000, .not_after = 1772256000};
	X509 *x3 = mint_cert(&m3);
	size_t len3;
	unsigned char *der3 = mint_der(x3, &len3);
	pi.ldevid_der = der3;
	pi.ldevid_len = len3;
	CHECK(fleet_store_provisional_issue(st, &pi, lak, ldevid));
	CHECK(fleet_store_provisional_revoke(st, pi.session, "session-expired", 1764486000, revoked,
					     &nrev));
	free(der2);
	free(der3);
	X509_free(x2);
	X509_free(x3);
	CHECK(fleet_store_claim_upsert(st, "NEW-1", "unknown-serial", HC, NULL, 1764480000));
	CHECK(fleet_store_claim_upsert(st, "NEW-1", "unknown-serial", HC, NULL, 1764481000));
	CHECK(fleet_store_claim_upsert(st, "NEW-2", "no-binding", NULL, NULL, 1764482000));
	free(der);
	X509_free(x);
	EVP_PKEY_free(k);
	fleet_store_close(st);
	return 0;
}
