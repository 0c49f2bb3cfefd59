/*
 * cmd_ca.c: fleetctl ca, the identity CA's files (docs/identity-ca.md).
 *
 *   ca init DIR [--cn NAME] [--days N]
 *   ca issue DIR --kind lak|ldevid --key PUB.tpm2b --name DEVICE
 *            [--serial S] [--days N] --out CERT.pem
 *
 * issue prints the new certificate's SHA-1 fingerprint, the suffix of the
 * SPIRE agent ID for an LDevID. --out is never overwritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "lib/buf.h"
#include "lib/ca.h"
#include "lib/tpm.h"

#define MAX_PUB_FILE 4096 /* a TPM2B_PUBLIC is at most a few hundred bytes */
#define DEFAULT_CA_CN "fleetd identity CA"
#define DEFAULT_CA_DAYS 3650u
#define DEFAULT_LEAF_DAYS 365u

static const char usage_text[] =
	"usage: fleetctl ca init DIR [--cn NAME] [--days N]\n"
	"       fleetctl ca issue DIR --kind lak|ldevid --key PUB.tpm2b --name DEVICE\n"
	"                [--serial S] [--days N] --out CERT.pem\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return FLEETCTL_EXIT_USAGE;
}

/* A count of days: decimal digits only, 1..100000 (the library caps lower). */
static int parse_days(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 100000)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int complain(const char *what, fleet_err e, const struct fleet_errctx *ec)
{
	char msg[300];
	fleet_errctx_format(ec, e, msg, sizeof(msg));
	fprintf(stderr, "fleetctl: ca: %s: %s\n", what, msg);
	return e == FLEET_E_IO || e == FLEET_E_INVALID_ARG || e == FLEET_E_NOT_FOUND
		       ? FLEETCTL_EXIT_USAGE
		       : FLEETCTL_EXIT_REFUSED;
}

static int do_init(int argc, char **argv)
{
	const char *dir = NULL, *cn = DEFAULT_CA_CN;
	unsigned days = DEFAULT_CA_DAYS;
	struct fleet_errctx ec = {0};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cn") && i + 1 < argc)
			cn = argv[++i];
		else if (!strcmp(argv[i], "--days") && i + 1 < argc) {
			if (parse_days(argv[++i], &days) != 0)
				return usage();
		} else if (argv[i][0] == '-' || dir)
			return usage();
		else
			dir = argv[i];
	}
	if (!dir)
		return usage();
	fleet_err e = fleet_ca_init(dir, cn, days, &ec);
	if (e != FLEET_OK)
		return complain("init", e, &ec);
	printf("ca: created %s/ca.key and %s/ca.crt\n", dir, dir);
	return FLEETCTL_EXIT_OK;
}

static int write_cert(const char *path, X509 *x)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "fleetctl: ca: cannot create %s: %s%s\n", path, strerror(errno),
			errno == EEXIST ? " (refusing to overwrite)" : "");
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return -1;
	}
	int ok = PEM_write_X509(f, x);
	if (fclose(f) != 0 || !ok) {
		unlink(path);
		fprintf(stderr, "fleetctl: ca: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

static int do_issue(int argc, char **argv)
{
	const char *dir = NULL, *kind = NULL, *key = NULL, *out = NULL;
	struct fleet_issue_request req = {0};
	struct fleet_errctx ec = {0};
	struct fleet_ca *ca = NULL;
	struct fleet_buf b;
	TPM2B_PUBLIC pub;
	X509 *cert = NULL;
	char fpr[41];
	fleet_err e;
	int rc = FLEETCTL_EXIT_REFUSED;

	req.validity_days = DEFAULT_LEAF_DAYS;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has = i + 1 < argc;
		if (!strcmp(a, "--kind") && has)
			kind = argv[++i];
		else if (!strcmp(a, "--key") && has)
			key = argv[++i];
		else if (!strcmp(a, "--name") && has)
			req.device_name = argv[++i];
		else if (!strcmp(a, "--serial") && has)
			req.serial = argv[++i];
		else if (!strcmp(a, "--out") && has)
			out = argv[++i];
		else if (!strcmp(a, "--days") && has) {
			if (parse_days(argv[++i], &req.validity_days) != 0)
				return usage();
		} else if (a[0] == '-' || dir)
			return usage();
		else
			dir = a;
	}
	if (!dir || !kind || !key || !req.device_name || !out)
		return usage();
	if (!strcmp(kind, "lak"))
		req.kind = FLEET_CERT_LAK;
	else if (!strcmp(kind, "ldevid"))
		req.kind = FLEET_CERT_LDEVID;
	else
		return usage();

	fb_init(&b);
	struct fleet_errctx fe;
	char text[sizeof(fe.detail) + 80];
	e = fleet_file_read_data(key, MAX_PUB_FILE, &b, &fe);
	if (e != FLEET_OK) {
		fprintf(stderr, "fleetctl: ca: cannot read %s: %s\n", key,
			fleet_errctx_text(&fe, text, sizeof(text)));
		fb_free(&b);
		return FLEETCTL_EXIT_USAGE;
	}
	e = fleet_tpm_public_parse(b.data, b.len, &pub, &ec);
	fb_free(&b);
	if (e != FLEET_OK)
		return complain(key, e, &ec);
	req.key = &pub.publicArea;

	e = fleet_ca_load(dir, &ca, &ec);
	if (e != FLEET_OK)
		return complain(dir, e, &ec);
	e = fleet_ca_issue(ca, &req, &cert, &ec);
	if (e != FLEET_OK) {
		rc = complain("issue", e, &ec);
		goto out;
	}
	if (fleet_cert_sha1_fingerprint(cert, fpr) != FLEET_OK || write_cert(out, cert) != 0) {
		rc = FLEETCTL_EXIT_USAGE;
		goto out;
	}
	printf("%s\n", fpr);
	rc = FLEETCTL_EXIT_OK;
out:
	X509_free(cert);
	fleet_ca_free(ca);
	return rc;
}

int cmd_ca(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "init"))
		return do_init(argc - 1, argv + 1);
	if (!strcmp(argv[1], "issue"))
		return do_issue(argc - 1, argv + 1);
	return usage();
}
