/* config.c: options, the TCTI choice, the pinned CA from the command line. */
#include <stdio.h>

#include "tink-attest/config.h"

#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/attest_wire.h"
#include "lib/file_read.h"

void tink_usage(FILE *f)
{
	fprintf(f,
		"usage: tink-attest --url URL (--ca FILE | --ca-cmdline[=FILE]) [--tcti TCTI]\n"
		"                   [--sysfs-root DIR] [--lldp-file FILE] [--eventlog PATH]\n"
		"                   [--out-dir DIR] [--timeout S] [--attempts N]\n"
		"\n"
		"Prove this machine's identity and boot to fleetd with its TPM (three rounds:\n"
		"intake, answer, confirm) and store the certificates fleetd issues.\n"
		"\n"
		"  --url URL          fleetd, https://HOST[:PORT] (paths /v1/attest/* are added)\n"
		"  --ca FILE          fleetd's CA certificate (PEM): the only trust anchor\n"
		"  --ca-cmdline[=F]   the CA from the kernel command line, fleet_ca=<base64url\n"
		"                     DER> (default F: /proc/cmdline)\n"
		"  --tcti TCTI        TPM access, tpm2-tools syntax; default $TPM2TOOLS_TCTI,\n"
		"                     then $TCTI, then device:/dev/tpmrm0\n"
		"  --sysfs-root DIR   where sysfs is (default /sys)\n"
		"  --lldp-file FILE   saved `lldpcli -f json show neighbors` output instead of\n"
		"                     running lldpcli\n"
		"  --eventlog PATH    firmware event log (default\n"
		"                     /sys/kernel/security/tpm0/binary_bios_measurements)\n"
		"  --out-dir DIR      write lak.pem, ldevid.pem, ca.pem and, when fleetd\n"
		"                     provisions, code and proof (mode 0600)\n"
		"  --timeout S        seconds per HTTPS attempt (default 30)\n"
		"  --attempts N       attempts per request, with backoff (default 8)\n"
		"\n"
		"Exit status:\n"
		"   0  admitted and confirmed\n"
		"   2  usage error\n"
		"   3  TPM missing or failing, or an EK that does not match its certificate\n"
		"      (nothing is sent for a round whose TPM work failed)\n"
		"   4  fleetd unreachable (after all attempts) or its certificate not the pin's\n"
		"   5  protocol error: fleetd's answer is malformed or not for this TPM\n"
		"   6  local error: identity, LLDP file, event log or output files\n"
		"  10  pending: fleetd has not decided (unknown serial, no approved binding)\n"
		"  11  refused by fleetd\n");
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int tink_options_parse(int argc, char **argv, struct tink_options *o, char *msg, size_t msglen)
{
	static const struct option longopts[] = {
		{"url", required_argument, NULL, 'u'},
		{"ca", required_argument, NULL, 'c'},
		{"ca-cmdline", optional_argument, NULL, 'C'},
		{"tcti", required_argument, NULL, 't'},
		{"sysfs-root", required_argument, NULL, 's'},
		{"lldp-file", required_argument, NULL, 'l'},
		{"eventlog", required_argument, NULL, 'e'},
		{"out-dir", required_argument, NULL, 'o'},
		{"timeout", required_argument, NULL, 'T'},
		{"attempts", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	memset(o, 0, sizeof(*o));
	fb_init(&o->curl.ca_pem);
	o->run.sysfs_root = "/sys";
	o->run.eventlog = TINK_DEFAULT_EVENTLOG;
	o->curl.timeout_s = 30;
	o->curl.connect_timeout_s = 10;
	o->curl.attempts = 8;
	o->curl.backoff_base_s = 0.5;
	o->curl.backoff_cap_s = 30;
	o->curl.keep_alive = 1; /* intake, answer, confirm: one TLS handshake */
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			o->url = optarg;
			break;
		case 'c':
			o->curl.ca_file = optarg;
			break;
		case 'C':
			o->cmdline = optarg ? optarg : TINK_DEFAULT_CMDLINE;
			break;
		case 't':
			o->run.tcti = optarg;
			break;
		case 's':
			o->run.sysfs_root = optarg;
			break;
		case 'l':
			o->run.lldp_file = optarg;
			break;
		case 'e':
			o->run.eventlog = optarg;
			break;
		case 'o':
			o->run.out_dir = optarg;
			break;
		case 'T':
			if (parse_uint(optarg, 1, 3600, &o->curl.timeout_s) != 0) {
				snprintf(msg, msglen, "--timeout takes 1 to 3600 seconds");
				return TINK_EXIT_USAGE;
			}
			if (o->curl.connect_timeout_s > o->curl.timeout_s)
				o->curl.connect_timeout_s = o->curl.timeout_s;
			break;
		case 'a':
			if (parse_uint(optarg, 1, 100, &o->curl.attempts) != 0) {
				snprintf(msg, msglen, "--attempts takes 1 to 100");
				return TINK_EXIT_USAGE;
			}
			break;
		case 'h':
			o->help = 1;
			return 0;
		default:
			snprintf(msg, msglen, "unknown option or missing argument: %s",
				 argv[optind - 1]);
			return TINK_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		snprintf(msg, msglen, "unexpected argument: %s", argv[optind]);
		return TINK_EXIT_USAGE;
	}
	if (!o->url || strncmp(o->url, "https://", 8) != 0 || !o->url[8]) {
		snprintf(msg, msglen, "--url https://HOST[:PORT] is required (HTTPS only)");
		return TINK_EXIT_USAGE;
	}
	size_t n = strlen(o->url);
	while (n > 8 && o->url[n - 1] == '/')
		n--;
	if (n >= sizeof(o->curl.base_url)) {
		snprintf(msg, msglen, "--url is too long");
		return TINK_EXIT_USAGE;
	}
	memcpy(o->curl.base_url, o->url, n);
	o->curl.base_url[n] = '\0';
	if (!!o->curl.ca_file == !!o->cmdline) {
		snprintf(msg, msglen, "fleetd's CA is required: exactly one of --ca FILE or "
				      "--ca-cmdline");
		return TINK_EXIT_USAGE;
	}
	if (!o->run.tcti || !*o->run.tcti) {
		const char *e = getenv("TPM2TOOLS_TCTI");
		if (!e || !*e)
			e = getenv("TCTI");
		o->run.tcti = e && *e ? e : TINK_DEFAULT_TCTI;
	}
	return 0;
}

void tink_options_free(struct tink_options *o)
{
	tink_curl_close(&o->curl);
	fb_free(&o->curl.ca_pem);
}

fleet_err tink_ca_from_file(const char *path, struct fleet_buf *pem, struct fleet_errctx *ec)
{
	static const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("fleetd's CA file", 1024 * 1024);
	fleet_err e;
	fb_free(pem);
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, pem, ec)) != FLEET_OK)
		return fleet_errctx_wrap(ec, e, "cannot read ", NULL);
	if (pem->len == 0)
		return fleet_errctx_msg(ec, FLEET_E_MALFORMED, "fleetd's CA file %s is empty", path);
	return FLEET_OK;
}

fleet_err tink_ca_from_cmdline(const char *path, struct fleet_buf *pem, struct fleet_errctx *ec)
{
	struct fleet_buf line;
	struct fleet_wire_bytes der = {0};
	static const char key[] = TINK_CMDLINE_CA_PARAM "=";
	fleet_err rc = FLEET_E_MALFORMED;
	/* The kernel's command line carries fleetd's CA, the trust anchor of
	 * every exchange: configuration (docs/files.md), owned by root (or
	 * us) and writable by nobody else. /proc says its size is 0: only the
	 * read bounds it. */
	static const struct fleet_file_policy policy = {
		.what = "the kernel command line",
		.max_size = 64 * 1024,
		.owners = FLEET_FILE_OWNER_ROOT | FLEET_FILE_OWNER_EUID,
		.forbid = 022,
		.size_by_read = true,
	};
	fleet_err e;
	fb_init(&line);
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, &line, ec)) != FLEET_OK) {
		rc = fleet_errctx_wrap(ec, e, "cannot read ", NULL);
		goto out;
	}
	if (fb_put_u8(&line, 0) != FLEET_OK) {
		rc = fleet_errctx_msg(ec, FLEET_E_NOMEM, "cannot read %s: out of memory", path);
		goto out;
	}
	/* Parameters are separated by spaces; the value is one word. */
	const char *s = (const char *)line.data, *v = NULL;
	for (const char *p = s; *p;) {
		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		if (strncmp(p, key, sizeof(key) - 1) == 0)
			v = p + sizeof(key) - 1; /* the last one wins, as in the kernel */
		while (*p && *p != ' ' && *p != '\n' && *p != '\t')
			p++;
	}
	if (!v) {
		rc = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s has no %s= parameter", path, TINK_CMDLINE_CA_PARAM);
		goto out;
	}
	/* base64 or base64url, padded or not (as the HookOS entrypoint takes
	 * it): normalised to base64url without padding. */
	size_t vlen = strcspn(v, " \n\t");
	char *norm = malloc(vlen + 1);
	if (!norm) {
		rc = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < vlen; i++)
		norm[i] = v[i] == '+' ? '-' : v[i] == '/' ? '_' : v[i];
	while (vlen > 0 && norm[vlen - 1] == '=')
		vlen--;
	fleet_err de = fleet_b64url_decode(norm, vlen, FLEET_WIRE_MAX_CERT, &der);
	free(norm);
	if (de != FLEET_OK) {
		rc = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s= in %s is not base64 DER", TINK_CMDLINE_CA_PARAM,
			 path);
		goto out;
	}
	const unsigned char *p = der.data;
	X509 *cert = d2i_X509(NULL, &p, (long)der.len);
	if (!cert || p != der.data + der.len) {
		X509_free(cert);
		rc = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "%s= in %s is not a DER certificate", TINK_CMDLINE_CA_PARAM,
			 path);
		goto out;
	}
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	if (b && PEM_write_bio_X509(b, cert)) {
		long n = BIO_get_mem_data(b, &data);
		if (fb_put(pem, data, (size_t)n) == FLEET_OK)
			rc = FLEET_OK;
	}
	BIO_free(b);
	X509_free(cert);
	if (rc != 0)
		rc = fleet_errctx_msg(ec, FLEET_E_MALFORMED, "cannot convert the command line's CA to PEM");
out:
	free(der.data);
	fb_free(&line);
	return rc;
}
