/*
 * cmd_quote.c: fleetctl quote verify, the operator's view of the check
 * fleetd makes on a machine's TPM2_Quote.
 *
 * Files are the ones tpm2-tools 5.4 writes:
 *   --ak          tpm2_createak -u: a marshaled TPM2B_PUBLIC
 *   --attest      tpm2_quote -m: a marshaled TPMS_ATTEST
 *   --sig         tpm2_quote -s: a marshaled TPMT_SIGNATURE ("tss" format)
 *   --pcr-values  tpm2_pcrread -o: the digests back to back, selection order
 *   --pcrs        JSON {"pcrs":{"sha256":{"0":"<hex>",...}}}, the shape
 *                 `fleetctl eventlog replay --json` prints, so a quote can
 *                 be checked against a replayed log; PCRs the selection does
 *                 not name are ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/tpm.h"

#define MAX_FILE (64 * 1024) /* every structure here is a few hundred bytes */
/* The replay JSON may carry more than PCRs (events, digests per bank). */
#define MAX_JSON (1024 * 1024)
#define MAX_VALUES (TPM2_NUM_PCR_BANKS * FLEET_PCR_COUNT)

static const char usage_text[] =
	"usage: fleetctl quote verify --ak AK.pub --attest QUOTE.msg --sig QUOTE.sig\n"
	"         --nonce HEX --selection SEL (--pcrs FILE.json | --pcr-values FILE.bin)\n"
	"         [--json]\n"
	"  SEL is tpm2-tools syntax: sha256:0,1,2,3,4,7[+sha1:0]\n";

struct quote_args {
	const char *ak, *attest, *sig, *nonce, *selection, *pcrs, *pcr_values;
	int json;
};


static int refuse(const struct quote_args *a, const char *reason, const char *detail)
{
	return fleetctl_refuse("quote", a->json, reason, detail);
}

/* Values from the replay JSON: for each selected PCR, its hex digest.
 * 0 on success, -1 when the file refuses (detail says why), -2 when it
 * cannot be read at all. */
static int values_from_json(const struct quote_args *a, const TPML_PCR_SELECTION *sel,
			    struct fleet_pcr_value *v, size_t *n, char *detail, size_t dlen)
{
	json_error_t jerr;
	struct fleet_buf text;
	json_t *root = NULL, *pcrs;
	int rc = -1;

	*n = 0;
	/* Read with a cap like every other file, then parse the bytes. */
	fb_init(&text);
	if (fleet_file_read_data(a->pcrs, MAX_JSON, &text, NULL) != FLEET_OK) {
		fprintf(stderr, "fleetctl: quote: cannot read PCR values %s (or over %d bytes)\n",
			a->pcrs, MAX_JSON);
		fb_free(&text);
		return -2; /* a file we cannot read is a usage error, exit 2 */
	}
	root = json_loadb((const char *)text.data, text.len, JSON_REJECT_DUPLICATES, &jerr);
	fb_free(&text);
	if (!root) {
		snprintf(detail, dlen, "%s: line %d: %s", a->pcrs, jerr.line, jerr.text);
		return -1;
	}
	pcrs = json_object_get(root, "pcrs");
	if (!json_is_object(pcrs)) {
		snprintf(detail, dlen, "%s: no \"pcrs\" object", a->pcrs);
		goto out;
	}
	for (uint32_t b = 0; b < sel->count; b++) {
		const TPMS_PCR_SELECTION *s = &sel->pcrSelections[b];
		const char *alg = fleet_hash_alg_name(s->hash);
		json_t *bank = json_object_get(pcrs, alg);
		for (unsigned p = 0; p < FLEET_PCR_COUNT; p++) {
			char key[4];
			const char *hex;
			if (!(s->pcrSelect[p / 8] & (1u << (p % 8))))
				continue;
			snprintf(key, sizeof(key), "%u", p);
			hex = json_string_value(json_object_get(bank, key));
			if (!hex) {
				snprintf(detail, dlen, "%s: no %s PCR %u", a->pcrs, alg, p);
				goto out;
			}
			v[*n].alg = s->hash;
			v[*n].index = (uint8_t)p;
			v[*n].size = (uint8_t)fleet_hash_alg_size(s->hash);
			if (fleet_hex_decode(hex, strlen(hex), v[*n].digest, v[*n].size) != FLEET_OK) {
				snprintf(detail, dlen, "%s: %s PCR %u is not %u bytes of hex",
					 a->pcrs, alg, p, (unsigned)v[*n].size);
				goto out;
			}
			(*n)++;
		}
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* Values from tpm2_pcrread -o: exactly the selected digests, nothing more. */
static int values_from_raw(const struct fleet_buf *raw, const TPML_PCR_SELECTION *sel,
			   struct fleet_pcr_value *v, size_t *n, char *detail, size_t dlen)
{
	size_t off = 0;

	*n = 0;
	for (uint32_t b = 0; b < sel->count; b++) {
		const TPMS_PCR_SELECTION *s = &sel->pcrSelections[b];
		size_t dsz = fleet_hash_alg_size(s->hash);
		for (unsigned p = 0; p < FLEET_PCR_COUNT; p++) {
			if (!(s->pcrSelect[p / 8] & (1u << (p % 8))))
				continue;
			if (raw->len - off < dsz) {
				snprintf(detail, dlen, "PCR values file holds %zu bytes; "
					 "the selection needs more", raw->len);
				return -1;
			}
			v[*n].alg = s->hash;
			v[*n].index = (uint8_t)p;
			v[*n].size = (uint8_t)dsz;
			memcpy(v[*n].digest, raw->data + off, dsz);
			off += dsz;
			(*n)++;
		}
	}
	if (off != raw->len) {
		snprintf(detail, dlen, "PCR values file holds %zu bytes; the selection needs %zu",
			 raw->len, off);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct quote_args *a)
{
	memset(a, 0, sizeof(*a));
	if (argc < 2 || strcmp(argv[1], "verify") != 0)
		return -1;
	const struct fleetctl_opt opts[] = {
		{"--ak", &a->ak},
		{"--attest", &a->attest},
		{"--sig", &a->sig},
		{"--nonce", &a->nonce},
		{"--selection", &a->selection},
		{"--pcrs", &a->pcrs},
		{"--pcr-values", &a->pcr_values},
	};
	if (fleetctl_parse_opts("quote", argc, argv, 2, opts, sizeof(opts) / sizeof(opts[0]),
				&a->json))
		return -1;
	/* Exactly one source of PCR values. */
	if (!a->ak || !a->attest || !a->sig || !a->nonce || !a->selection ||
	    !a->pcrs == !a->pcr_values)
		return -1;
	return 0;
}

int cmd_quote(int argc, char **argv)
{
	struct quote_args a;
	struct fleet_buf ak_buf, attest, sig, raw;
	struct fleet_errctx ec = {0};
	TPM2B_PUBLIC ak;
	TPML_PCR_SELECTION sel;
	struct fleet_pcr_value *values = NULL;
	struct fleet_tpm_clock clock;
	uint8_t nonce[sizeof(((TPM2B_DATA *)0)->buffer)];
	size_t nonce_len, n_values = 0;
	char detail[300] = "";
	const char *reason = NULL;
	fleet_err e;
	int rc = FLEETCTL_EXIT_USAGE;

	if (parse_args(argc, argv, &a) != 0) {
		fputs(usage_text, stderr);
		return FLEETCTL_EXIT_USAGE;
	}
	if (fleetctl_nonce("quote", a.nonce, nonce, sizeof(nonce), &nonce_len))
		return FLEETCTL_EXIT_USAGE;
	if (fleet_pcr_selection_parse(a.selection, &sel) != FLEET_OK) {
		fprintf(stderr, "fleetctl: quote: --selection '%s' is not alg:N,N[+alg:N]\n",
			a.selection);
		return FLEETCTL_EXIT_USAGE;
	}

	fb_init(&ak_buf);
	fb_init(&attest);
	fb_init(&sig);
	fb_init(&raw);
	values = calloc(MAX_VALUES, sizeof(*values));
	if (!values)
		goto out;
	if (fleetctl_read("quote", "AK public", a.ak, MAX_FILE, &ak_buf) ||
	    fleetctl_read("quote", "quote", a.attest, MAX_FILE, &attest) ||
	    fleetctl_read("quote", "signature", a.sig, MAX_FILE, &sig) ||
	    (a.pcr_values && fleetctl_read("quote", "PCR values", a.pcr_values, MAX_FILE, &raw)))
		goto out;

	e = fleet_tpm_public_parse(ak_buf.data, ak_buf.len, &ak, &ec);
	if (e != FLEET_OK) {
		fleet_errctx_format(&ec, e, detail, sizeof(detail));
		rc = refuse(&a, "ak-malformed", detail);
		goto out;
	}
	int vr = a.pcrs ? values_from_json(&a, &sel, values, &n_values, detail, sizeof(detail))
			: values_from_raw(&raw, &sel, values, &n_values, detail, sizeof(detail));
	if (vr == -2)
		goto out;
	if (vr != 0) {
		rc = refuse(&a, "quote-pcr-values", detail);
		goto out;
	}

	struct fleet_quote_check q = {
		.ak = &ak.publicArea,
		.attest = attest.data,
		.attest_len = attest.len,
		.sig = sig.data,
		.sig_len = sig.len,
		.extra_data = nonce,
		.extra_data_len = nonce_len,
		.selection = &sel,
		.values = values,
		.n_values = n_values,
	};
	e = fleet_quote_verify(&q, &clock, &reason);
	if (e != FLEET_OK) {
		fleetctl_attest_detail(reason, e, &attest, &sig, detail, sizeof(detail));
		rc = refuse(&a, reason ? reason : fleet_err_str(e), detail);
		goto out;
	}

	if (a.json) {
		/* firmwareVersion is vendor-defined 64 bits; as hex it survives
		 * JSON readers that hold numbers in doubles. */
		char fw[17];
		snprintf(fw, sizeof(fw), "%016llx", (unsigned long long)clock.firmware_version);
		json_t *o = json_pack("{s:s, s:{s:I, s:I, s:I, s:b, s:s}}", "result", "ok", "clock",
				      "clock", (json_int_t)clock.clock, "resetCount",
				      (json_int_t)clock.reset_count, "restartCount",
				      (json_int_t)clock.restart_count, "safe", clock.safe,
				      "firmwareVersion", fw);
		if (!o)
			goto out;
		fleetctl_print_json(o);
	} else {
		printf("quote: ok\nclock: %llu\nresetCount: %u\nrestartCount: %u\nsafe: %s\n",
		       (unsigned long long)clock.clock, clock.reset_count, clock.restart_count,
		       clock.safe ? "yes" : "no");
	}
	rc = FLEETCTL_EXIT_OK;
out:
	free(values);
	fb_free(&ak_buf);
	fb_free(&attest);
	fb_free(&sig);
	fb_free(&raw);
	return rc;
}
