/*
 * cmd_certify.c: fleetctl certify verify, the check fleetd makes on the AK's
 * TPM2_Certify of a machine's LDevID key.
 *
 * Files are the ones tpm2-tools 5.4 writes: --ak and --key are marshaled
 * TPM2B_PUBLICs (tpm2_createak -u, tpm2_create -u), --attest is the
 * TPMS_ATTEST of tpm2_certify -o and --sig its TPMT_SIGNATURE (-s, "tss"
 * format). tpm2_certify offers no qualifying-data option and always sends
 * the four bytes 00ff55aa, so that is the --nonce for its output.
 *
 * On success it prints the SHA-256 of the key's SubjectPublicKeyInfo, the
 * value a CSR's public key must hash to.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/tpm.h"

#define MAX_FILE (64 * 1024)

static const char usage_text[] =
	"usage: fleetctl certify verify --ak AK.pub --key KEY.pub --attest CERTIFY.msg\n"
	"         --sig CERTIFY.sig --nonce HEX [--json]\n"
	"  (tpm2_certify always qualifies with 00ff55aa)\n";

struct certify_args {
	const char *ak, *key, *attest, *sig, *nonce;
	int json;
};


static int refuse(const struct certify_args *a, const char *reason, const char *detail)
{
	return fleetctl_refuse("certify", a->json, reason, detail);
}

static int parse_args(int argc, char **argv, struct certify_args *a)
{
	memset(a, 0, sizeof(*a));
	if (argc < 2 || strcmp(argv[1], "verify") != 0)
		return -1;
	const struct fleetctl_opt opts[] = {
		{"--ak", &a->ak},   {"--key", &a->key},	    {"--attest", &a->attest},
		{"--sig", &a->sig}, {"--nonce", &a->nonce},
	};
	if (fleetctl_parse_opts("certify", argc, argv, 2, opts, sizeof(opts) / sizeof(opts[0]),
				&a->json))
		return -1;
	return a->ak && a->key && a->attest && a->sig && a->nonce ? 0 : -1;
}

/* A public-area file, refused with a reason naming which one it was. */
static int load_public(const struct certify_args *a, const struct fleet_buf *b,
		       TPM2B_PUBLIC *out, const char *reason)
{
	struct fleet_errctx ec = {0};
	char detail[300];
	fleet_err e = fleet_tpm_public_parse(b->data, b->len, out, &ec);
	if (e == FLEET_OK)
		return 0;
	fleet_errctx_format(&ec, e, detail, sizeof(detail));
	return refuse(a, reason, detail);
}

int cmd_certify(int argc, char **argv)
{
	struct certify_args a;
	struct fleet_buf ak_buf, key_buf, attest, sig;
	TPM2B_PUBLIC ak, key;
	uint8_t nonce[sizeof(((TPM2B_DATA *)0)->buffer)];
	uint8_t spki[32];
	char spki_hex[65], detail[300] = "";
	size_t nonce_len;
	const char *reason = NULL;
	fleet_err e;
	int rc = FLEETCTL_EXIT_USAGE;

	if (parse_args(argc, argv, &a) != 0) {
		fputs(usage_text, stderr);
		return FLEETCTL_EXIT_USAGE;
	}
	if (fleetctl_nonce("certify", a.nonce, nonce, sizeof(nonce), &nonce_len))
		return FLEETCTL_EXIT_USAGE;

	fb_init(&ak_buf);
	fb_init(&key_buf);
	fb_init(&attest);
	fb_init(&sig);
	if (fleetctl_read("certify", "AK public", a.ak, MAX_FILE, &ak_buf) ||
	    fleetctl_read("certify", "key public", a.key, MAX_FILE, &key_buf) ||
	    fleetctl_read("certify", "certification", a.attest, MAX_FILE, &attest) ||
	    fleetctl_read("certify", "signature", a.sig, MAX_FILE, &sig))
		goto out;
	if ((rc = load_public(&a, &ak_buf, &ak, "ak-malformed")) != 0 ||
	    (rc = load_public(&a, &key_buf, &key, "key-malformed")) != 0)
		goto out;

	struct fleet_certify_check c = {
		.ak = &ak.publicArea,
		.attest = attest.data,
		.attest_len = attest.len,
		.sig = sig.data,
		.sig_len = sig.len,
		.extra_data = nonce,
		.extra_data_len = nonce_len,
		.object = &key.publicArea,
	};
	e = fleet_certify_verify(&c, spki, &reason);
	if (e != FLEET_OK) {
		fleetctl_attest_detail(reason, e, &attest, &sig, detail, sizeof(detail));
		rc = refuse(&a, reason ? reason : fleet_err_str(e), detail);
		goto out;
	}
	fleet_hex_encode(spki, sizeof(spki), spki_hex);
	if (a.json) {
		json_t *o = json_pack("{s:s, s:s}", "result", "ok", "spki_sha256", spki_hex);
		if (!o) {
			rc = FLEETCTL_EXIT_USAGE;
			goto out;
		}
		fleetctl_print_json(o);
	} else {
		printf("certify: ok\nspki_sha256: %s\n", spki_hex);
	}
	rc = FLEETCTL_EXIT_OK;
out:
	fb_free(&ak_buf);
	fb_free(&key_buf);
	fb_free(&attest);
	fb_free(&sig);
	return rc;
}
