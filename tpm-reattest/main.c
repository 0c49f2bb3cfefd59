/*
 * tpm-reattest: the running node's hourly re-check (README.md). The command
 * line only; the run is run.c (libtpmreattest).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tink-attest/transport_curl.h"
#include "tink-attest/config.h"
#include "tpm-reattest/reattest_client.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tpm-reattest --url URL --ca FILE [--lak-cert FILE] [--ldevid-cert FILE]\n"
		"                    [--tcti TCTI] [--eventlog PATH] [--sysfs-root DIR]\n"
		"                    [--lldp-file FILE] [--timeout S] [--attempts N]\n"
		"\n"
		"Prove to fleetd, with this machine's TPM, that it still boots what its class\n"
		"allows: a fresh nonce, a quote by the LAK over the class's PCRs, the event log\n"
		"and the LAK-signed LLDP report, sent with the LAK certificate. Within 30 days\n"
		"of either certificate's end, the same run renews both: the next LDevID key is\n"
		"made in the TPM and certified by the LAK (never a key file).\n"
		"\n"
		"  --url URL          fleetd, https://HOST[:PORT] (paths /v1/reattest/* are added)\n"
		"  --ca FILE          fleetd's CA certificate (PEM): the only trust anchor\n"
		"  --lak-cert FILE    the LAK certificate (PEM; default " TPM_REATTEST_DEFAULT_LAK
		",\n"
		"                     tink-attest --out-dir's lak.pem kept on the node)\n"
		"  --ldevid-cert FILE the LDevID certificate (PEM; default\n"
		"                     " TPM_REATTEST_DEFAULT_LDEVID "); a renewal rewrites both\n"
		"  --tcti TCTI        TPM access, tpm2-tools syntax; default $TPM2TOOLS_TCTI,\n"
		"                     then $TCTI, then " TPM_REATTEST_DEFAULT_TCTI "\n"
		"  --eventlog PATH    firmware event log (default\n"
		"                     " TPM_REATTEST_DEFAULT_EVENTLOG ")\n"
		"  --sysfs-root DIR   where sysfs is (default /sys; the BIOS version)\n"
		"  --lldp-file FILE   saved `lldpcli -f json show neighbors` output instead of\n"
		"                     running lldpcli\n"
		"  --timeout S        seconds per HTTPS attempt (default 20)\n"
		"  --attempts N       attempts per request, with backoff (default 4)\n"
		"\n"
		"Exit status (nothing but a complete check is ever sent):\n"
		"   0  fleetd's check passed\n"
		"   2  usage error, or the CA file cannot be read\n"
		"  10  refused by fleetd (its journal says why)\n"
		"  11  fleetd unreachable: transport error, timeout, 5xx after every attempt,\n"
		"      or its certificate not the pin's\n"
		"  12  no usable TPM, or a TPM command failed\n"
		"  13  the TPM's AK is not the one the LAK certificate names (another TPM, or\n"
		"      a reset endorsement seed); checked before anything is sent\n"
		"  14  local error: the LAK certificate, event log, identity or LLDP files, or\n"
		"      fleetd's answer malformed (protocol)\n"
		"  15  the check passed but a due renewal was not done: fleetd refused it, or\n"
		"      the TPM could not make or certify the next key (retried with backoff;\n"
		"      the journal says how much time is left)\n");
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || !end || *end || end == s || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"url", required_argument, NULL, 'u'},
		{"ca", required_argument, NULL, 'c'},
		{"lak-cert", required_argument, NULL, 'k'},
		{"ldevid-cert", required_argument, NULL, 'L'},
		{"tcti", required_argument, NULL, 't'},
		{"eventlog", required_argument, NULL, 'e'},
		{"sysfs-root", required_argument, NULL, 's'},
		{"lldp-file", required_argument, NULL, 'l'},
		{"timeout", required_argument, NULL, 'T'},
		{"attempts", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tpm_reattest_config cfg = {
		.lak_cert = TPM_REATTEST_DEFAULT_LAK,
		.ldevid_cert = TPM_REATTEST_DEFAULT_LDEVID,
		.eventlog = TPM_REATTEST_DEFAULT_EVENTLOG,
		.sysfs_root = "/sys",
	};
	struct tink_curl curl;
	const char *url = NULL;
	int ch;

	/* ESYS logs every TPM error code itself; this says what failed in one
	 * line. TSS2_LOG in the environment still wins. */
	setenv("TSS2_LOG", "all+NONE", 0);
	memset(&curl, 0, sizeof(curl));
	curl.timeout_s = 20;
	curl.connect_timeout_s = 10;
	curl.attempts = 4;
	curl.backoff_base_s = 0.5;
	curl.backoff_cap_s = 30;
	fb_init(&curl.ca_pem);
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			url = optarg;
			break;
		case 'c':
			curl.ca_file = optarg;
			break;
		case 'k':
			cfg.lak_cert = optarg;
			break;
		case 'L':
			cfg.ldevid_cert = optarg;
			break;
		case 't':
			cfg.tcti = optarg;
			break;
		case 'e':
			cfg.eventlog = optarg;
			break;
		case 's':
			cfg.sysfs_root = optarg;
			break;
		case 'l':
			cfg.lldp_file = optarg;
			break;
		case 'T':
			if (parse_uint(optarg, 1, 3600, &curl.timeout_s) != 0) {
				tpm_reattest_log("--timeout takes 1 to 3600 seconds");
				return TPM_REATTEST_EXIT_USAGE;
			}
			if (curl.connect_timeout_s > curl.timeout_s)
				curl.connect_timeout_s = curl.timeout_s;
			break;
		case 'a':
			if (parse_uint(optarg, 1, 100, &curl.attempts) != 0) {
				tpm_reattest_log("--attempts takes 1 to 100");
				return TPM_REATTEST_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return TPM_REATTEST_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		tpm_reattest_log("unexpected argument: %s", argv[optind]);
		return TPM_REATTEST_EXIT_USAGE;
	}
	if (!url || strncmp(url, "https://", 8) != 0 || url[8] == '\0' ||
	    strlen(url) >= sizeof(curl.base_url)) {
		tpm_reattest_log("--url https://HOST[:PORT] is required");
		usage(stderr);
		return TPM_REATTEST_EXIT_USAGE;
	}
	if (!curl.ca_file) {
		tpm_reattest_log("--ca FILE is required (fleetd's CA, the only trust anchor)");
		usage(stderr);
		return TPM_REATTEST_EXIT_USAGE;
	}
	snprintf(curl.base_url, sizeof(curl.base_url), "%s", url);
	size_t n = strlen(curl.base_url);
	while (n > 8 && curl.base_url[n - 1] == '/')
		curl.base_url[--n] = '\0';
	if (!cfg.tcti)
		cfg.tcti = getenv("TPM2TOOLS_TCTI");
	if (!cfg.tcti || !*cfg.tcti)
		cfg.tcti = getenv("TCTI");
	if (!cfg.tcti || !*cfg.tcti)
		cfg.tcti = TPM_REATTEST_DEFAULT_TCTI;

	struct fleet_errctx ec = {0};
	if (tink_ca_from_file(curl.ca_file, &curl.ca_pem, &ec) != FLEET_OK) {
		char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
		tpm_reattest_log("%s", fleet_errctx_text(&ec, text, sizeof(text)));
		fb_free(&curl.ca_pem);
		return TPM_REATTEST_EXIT_USAGE;
	}
	curl.ca_file = NULL; /* read: libcurl takes the bytes */
	if (tink_curl_global_init() != 0) {
		tpm_reattest_log("libcurl failed to initialise");
		fb_free(&curl.ca_pem);
		return TPM_REATTEST_EXIT_LOCAL;
	}
	struct tink_transport tx = tink_curl_transport(&curl);
	struct tpm_reattest_result res;
	int rc = tpm_reattest_run(&cfg, &tx, &res);
	tpm_reattest_log("%s (exit %d, %s)", res.message, rc, tpm_reattest_exit_name(rc));
	tink_curl_close(&curl);
	fb_free(&curl.ca_pem);
	return rc;
}
