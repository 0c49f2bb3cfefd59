/*
 * cmd_policy.c: fleetctl policy check -- judge an event log by a profile,
 * offline, exactly as fleetd does at admission.
 *
 *   fleetctl policy check --profile P --log FILE [--pcrs JSON] [--bios VERSION]
 *                         [--renewal] [--json]
 *
 * --pcrs names a file in the shape `fleetctl eventlog replay --json` prints,
 * {"pcrs": {"sha256": {"0": "<hex>", ...}}}, standing in for the quoted
 * values. Without it the log is judged against its own replay, and the
 * verdict says quote_checked: false.
 *
 * policy create and policy explain are in cmd_policy_create.c; the readers
 * they share with check are here (policy_io.h).
 *
 * Exit 0: pass. 1: fail (verdict "fail" on stdout, each reason on stderr; or
 * all of it as JSON on stdout with --json), or the log is malformed. 2: usage,
 * an unreadable file, a bad profile (with its line) or a bad --pcrs file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/policy_io.h"
#include "fleetctl/util.h"
#include "lib/buf.h"
#include "lib/eventlog.h"
#include "lib/hex.h"
#include "lib/tpm.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

#define PCRS_MAX_SIZE (256u * 1024)

struct check_args {
	const char *profile, *log, *pcrs, *bios;
	int json, renewal;
};

static int usage(void)
{
	fprintf(stderr, "usage: fleetctl policy check --profile P --log FILE [--pcrs JSON] "
			"[--bios VERSION] [--renewal] [--json]\n"
			"       fleetctl policy create --from-log LOG --class C [--bios VERSION] "
			"[--bank B] [--out FILE]\n"
			"       fleetctl policy explain --profile P --log LOG [--pcrs JSON] "
			"[--bios VERSION] [--json]\n");
	return FLEETCTL_EXIT_USAGE;
}

static int parse_index(const char *s, unsigned *out)
{
	size_t len = strlen(s);
	if (len < 1 || len > 2 || (len == 2 && s[0] == '0'))
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v >= FLEET_PCR_COUNT)
		return -1;
	*out = v;
	return 0;
}

int fleetctl_policy_pcrs(const char *path, struct fleet_pcr_value *vals, size_t *n)
{
	struct fleet_buf b;
	fb_init(&b);
	struct fleet_errctx fe;
	char text[sizeof(fe.detail) + 80];
	if (fleet_file_read_data(path, PCRS_MAX_SIZE, &b, &fe) != FLEET_OK) {
		fprintf(stderr, "fleetctl: policy: cannot read %s: %s\n", path,
			fleet_errctx_text(&fe, text, sizeof(text)));
		fb_free(&b);
		return -1;
	}
	json_error_t jerr;
	json_t *root = json_loadb(b.data ? (const char *)b.data : "", b.len, JSON_REJECT_DUPLICATES, &jerr);
	fb_free(&b);
	if (!root) {
		fprintf(stderr, "fleetctl: policy: %s:%d: bad JSON: %s\n", path,
			jerr.line > 0 ? jerr.line : 1, jerr.text);
		return -1;
	}
	int rc = -1;
	json_t *pcrs = json_object_get(root, "pcrs"), *bank_obj;
	const char *bank_name, *idx;
	*n = 0;
	if (!json_is_object(pcrs)) {
		fprintf(stderr, "fleetctl: policy: %s: no \"pcrs\" object\n", path);
		goto out;
	}
	json_object_foreach(pcrs, bank_name, bank_obj) {
		uint16_t alg = fleet_hash_alg_from_name(bank_name);
		size_t size = fleet_hash_alg_size(alg);
		if (!alg || !size || !json_is_object(bank_obj)) {
			fprintf(stderr, "fleetctl: policy: %s: unknown bank \"%.20s\"\n", path,
				bank_name);
			goto out;
		}
		json_t *hex;
		json_object_foreach(bank_obj, idx, hex) {
			unsigned i;
			const char *h = json_string_value(hex);
			if (parse_index(idx, &i) || !h || *n >= FLEETCTL_POLICY_MAX_QUOTED) {
				fprintf(stderr, "fleetctl: policy: %s: %s PCR \"%.8s\" is not a PCR "
						"index with a hex string\n", path, bank_name, idx);
				goto out;
			}
			struct fleet_pcr_value *v = &vals[*n];
			v->alg = alg;
			v->index = (uint8_t)i;
			v->size = (uint8_t)size;
			if (fleet_hex_decode(h, strlen(h), v->digest, size)) {
				fprintf(stderr, "fleetctl: policy: %s: %s PCR %u is not %zu hex "
						"bytes\n", path, bank_name, i, size);
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

static int print_verdict(const struct check_args *a, const struct fleet_profile *p,
			 const struct fleet_verdict *v)
{
	if (a->json) {
		json_t *o = fleet_verdict_json(p, v);
		char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
		json_decref(o);
		if (!s) {
			fprintf(stderr, "fleetctl: policy: out of memory\n");
			return FLEETCTL_EXIT_USAGE;
		}
		printf("%s\n", s);
		free(s);
	} else {
		printf("%s\n", v->pass ? "pass" : "fail");
		if (!v->quote_checked)
			fprintf(stderr, "fleetctl: policy: note: no --pcrs given; the log was "
					"checked against its own replay only\n");
		for (size_t i = 0; i < v->n_reasons; i++)
			fprintf(stderr, "fleetctl: policy: %s: %s\n", v->reasons[i].reason,
				v->reasons[i].detail);
		if (v->n_dropped)
			fprintf(stderr, "fleetctl: policy: ... and %zu more failures\n",
				v->n_dropped);
	}
	return v->pass ? FLEETCTL_EXIT_OK : FLEETCTL_EXIT_REFUSED;
}

int fleetctl_policy_profile(const char *path, struct fleet_profile **out)
{
	struct fleet_errctx perr = {0};
	if (fleet_profile_load(path, out, &perr) == FLEET_OK)
		return 0;
	char text[sizeof(perr.detail) + sizeof(perr.ossl) + 80];
	fleet_errctx_text(&perr, text, sizeof(text));
	if (perr.line)
		fprintf(stderr, "fleetctl: policy: %s:%u:%u: %s\n", path, perr.line, perr.column,
			text);
	else
		fprintf(stderr, "fleetctl: policy: %s: %s\n", path, text);
	return -1;
}

int fleetctl_policy_log(const char *path, struct fleet_evlog **log,
			struct fleet_pcr_replay *replay)
{
	struct fleet_buf b;
	struct fleet_errctx ec = {0};
	char msg[300];
	int rc = FLEETCTL_EXIT_REFUSED;
	fleet_err e;

	*log = NULL;
	fb_init(&b);
	if (fleet_file_read_data(path, FLEET_EVLOG_MAX_SIZE, &b, &ec) != FLEET_OK) {
		fprintf(stderr, "fleetctl: policy: cannot read %s: %s\n", path,
			fleet_errctx_text(&ec, msg, sizeof(msg)));
		rc = FLEETCTL_EXIT_USAGE;
	} else if ((e = fleet_evlog_parse(b.data, b.len, log, &ec)) ||
		   (e = fleet_evlog_replay(*log, replay, &ec))) {
		fleet_errctx_format(&ec, e, msg, sizeof(msg));
		fprintf(stderr, "fleetctl: policy: %s is not an event log fleetd can read: %s\n",
			path, msg);
	} else {
		rc = FLEETCTL_EXIT_OK;
	}
	fb_free(&b);
	return rc;
}

int fleetctl_policy_judge(const char *profile, const char *log, const char *pcrs,
			  const char *bios, bool renewal, struct fleetctl_policy_run *r)
{
	int rc;
	memset(r, 0, sizeof(*r));
	if (fleetctl_policy_profile(profile, &r->p) ||
	    (pcrs && fleetctl_policy_pcrs(pcrs, r->quoted, &r->n_quoted)))
		return FLEETCTL_EXIT_USAGE;
	if ((rc = fleetctl_policy_log(log, &r->log, &r->replay)) != FLEETCTL_EXIT_OK)
		return rc;
	struct fleet_policy_input in = {
		.log = r->log,
		.replay = &r->replay,
		.quoted = pcrs ? r->quoted : NULL,
		.n_quoted = r->n_quoted,
		.bios_version = bios,
		.renewal = renewal,
	};
	if (fleet_policy_evaluate(r->p, &in, &r->v) != FLEET_OK) {
		fprintf(stderr, "fleetctl: policy: evaluation failed\n");
		return FLEETCTL_EXIT_USAGE;
	}
	return FLEETCTL_EXIT_OK;
}

void fleetctl_policy_run_free(struct fleetctl_policy_run *r)
{
	fleet_evlog_free(r->log);
	fleet_profile_free(r->p);
	r->log = NULL;
	r->p = NULL;
}

static int run_check(const struct check_args *a)
{
	static struct fleetctl_policy_run r;
	int rc = fleetctl_policy_judge(a->profile, a->log, a->pcrs, a->bios, a->renewal, &r);
	if (rc == FLEETCTL_EXIT_OK)
		rc = print_verdict(a, r.p, &r.v);
	fleetctl_policy_run_free(&r);
	return rc;
}

int cmd_policy(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "create"))
		return fleetctl_policy_create(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "explain"))
		return fleetctl_policy_explain(argc, argv);
	if (argc < 2 || strcmp(argv[1], "check"))
		return usage();
	struct check_args a = {0};
	for (int i = 2; i < argc; i++) {
		const char **slot = !strcmp(argv[i], "--profile") ? &a.profile
				    : !strcmp(argv[i], "--log")   ? &a.log
				    : !strcmp(argv[i], "--pcrs")  ? &a.pcrs
				    : !strcmp(argv[i], "--bios")  ? &a.bios
								  : NULL;
		if (slot) {
			if (i + 1 >= argc || *slot)
				return usage();
			*slot = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			a.json = 1;
		} else if (!strcmp(argv[i], "--renewal")) {
			a.renewal = 1;
		} else {
			fprintf(stderr, "fleetctl: policy: unknown option '%.40s'\n", argv[i]);
			return usage();
		}
	}
	if (!a.profile || !a.log)
		return usage();
	return run_check(&a);
}
