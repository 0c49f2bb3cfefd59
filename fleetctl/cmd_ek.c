/*
 * cmd_ek.c: fleetctl ek, an operator's view of an EK certificate.
 *
 *   ek hash CERT                      the ek_hash NetBox wants approved
 *   ek verify --roots DIR [--at T] CERT   chain check, as fleetd makes it
 *                                     (T: RFC 3339 or UNIX seconds)
 *   ek show CERT                      who made the TPM, and its ek_hash
 *
 * CERT is DER or PEM, as read from NV or downloaded: the TCG NV header and
 * padding are tolerated by fleet_ek_cert_load, the one loader fleetd uses.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/objects.h>
#include <openssl/x509v3.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "lib/attest_wire_json.h"
#include "lib/buf.h"
#include "lib/sanitize.h"
#include "lib/x509_ek.h"

/* The loader caps its input lower; this only bounds the read. */
#define MAX_FILE (64 * 1024)

static const char usage_text[] =
	"usage: fleetctl ek hash CERT\n"
	"       fleetctl ek verify --roots DIR [--at TIME] CERT\n"
	"         TIME: RFC 3339 (2030-01-01T00:00:00Z) or UNIX seconds\n"
	"       fleetctl ek show CERT\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return FLEETCTL_EXIT_USAGE;
}

/* Load CERT; on failure say why and return the exit code, else 0. */
static int load_cert(const char *path, X509 **out)
{
	struct fleet_buf b;
	struct fleet_errctx ec = {0};
	char msg[300];
	fleet_err e;

	fb_init(&b);
	struct fleet_errctx fe;
	e = fleet_file_read_data(path, MAX_FILE, &b, &fe);
	if (e != FLEET_OK) {
		fprintf(stderr, "fleetctl: ek: cannot read %s: %s\n", path,
			fleet_errctx_text(&fe, msg, sizeof(msg)));
		fb_free(&b);
		return FLEETCTL_EXIT_USAGE;
	}
	e = fleet_ek_cert_load(b.data, b.len, out, &ec);
	fb_free(&b);
	if (e != FLEET_OK) {
		fleet_errctx_format(&ec, e, msg, sizeof(msg));
		fprintf(stderr, "fleetctl: ek: %s: %s\n", path, msg);
		return FLEETCTL_EXIT_REFUSED;
	}
	return 0;
}

static int do_hash(int argc, char **argv)
{
	X509 *x = NULL;
	char hash[65];
	int rc;

	if (argc != 2)
		return usage();
	if ((rc = load_cert(argv[1], &x)) != 0)
		return rc;
	if (fleet_ek_hash(x, hash) != FLEET_OK) {
		X509_free(x);
		fprintf(stderr, "fleetctl: ek: %s: no RSA or EC public key to hash\n", argv[1]);
		return FLEETCTL_EXIT_REFUSED;
	}
	X509_free(x);
	printf("%s\n", hash);
	return FLEETCTL_EXIT_OK;
}

/*
 * --at: RFC 3339 as fleetd prints times (2030-01-01T00:00:00Z), also with a
 * numeric offset (2030-01-01T02:00:00+02:00), or decimal UNIX seconds.
 */
static int parse_time(const char *s, time_t *out)
{
	char utc[21];
	time_t t;
	size_t n;

	if (!s || !*s)
		return -1;
	if (strspn(s, "0123456789") == strlen(s)) {
		char *end;
		unsigned long long v;
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || *end || v == 0 || v > (unsigned long long)INT64_MAX)
			return -1;
		*out = (time_t)v;
		return 0;
	}
	n = strlen(s);
	if (n < 20)
		return -1;
	memcpy(utc, s, 19);
	utc[19] = 'Z';
	utc[20] = '\0';
	if (wj_time_parse(utc, &t) != FLEET_OK)
		return -1;
	if (n == 20 && (s[19] == 'Z' || s[19] == 'z')) {
		*out = t;
		return 0;
	}
	/* +hh:mm or -hh:mm: local time at that offset from UTC. */
	if (n != 25 || (s[19] != '+' && s[19] != '-') || s[22] != ':')
		return -1;
	for (size_t i = 20; i < 25; i++)
		if (i != 22 && (s[i] < '0' || s[i] > '9'))
			return -1;
	int hh = (s[20] - '0') * 10 + (s[21] - '0');
	int mm = (s[23] - '0') * 10 + (s[24] - '0');
	if (hh > 23 || mm > 59)
		return -1;
	long off = (hh * 60L + mm) * 60L;
	t = s[19] == '+' ? t - off : t + off;
	if (t <= 0)
		return -1;
	*out = t;
	return 0;
}

static int do_verify(int argc, char **argv)
{
	const char *roots_dir = NULL, *cert = NULL, *reason = NULL;
	struct fleet_ek_roots *roots = NULL;
	struct fleet_errctx ec = {0};
	time_t at = 0;
	X509 *x = NULL;
	char msg[300];
	fleet_err e;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--roots") && i + 1 < argc) {
			roots_dir = argv[++i];
		} else if (!strcmp(argv[i], "--at") && i + 1 < argc) {
			if (parse_time(argv[++i], &at) != 0) {
				fprintf(stderr,
					"fleetctl: ek: --at '%s' is not an RFC 3339 time "
					"(2030-01-01T00:00:00Z) nor UNIX seconds\n",
					argv[i]);
				return FLEETCTL_EXIT_USAGE;
			}
		} else if (argv[i][0] == '-' || cert) {
			return usage();
		} else {
			cert = argv[i];
		}
	}
	if (!roots_dir || !cert)
		return usage();
	e = fleet_ek_roots_load(roots_dir, &roots, &ec);
	if (e != FLEET_OK) {
		fleet_errctx_format(&ec, e, msg, sizeof(msg));
		fprintf(stderr, "fleetctl: ek: roots %s: %s\n", roots_dir, msg);
		return FLEETCTL_EXIT_USAGE;
	}
	if ((rc = load_cert(cert, &x)) != 0) {
		fleet_ek_roots_free(roots);
		if (rc == FLEETCTL_EXIT_REFUSED)
			printf("refused: ek-cert-unparseable\n");
		return rc;
	}
	e = fleet_ek_chain_verify(roots, x, at, &reason);
	X509_free(x);
	fleet_ek_roots_free(roots);
	if (e == FLEET_OK) {
		printf("ok\n");
		return FLEETCTL_EXIT_OK;
	}
	printf("refused: %s\n", reason ? reason : fleet_err_str(e));
	return FLEETCTL_EXIT_REFUSED;
}

/* Certificate strings come from the TPM's maker, not from us: print them
 * sanitised (lib/sanitize.h), whole, so a name cannot forge output. */
static void print_safe(const unsigned char *p, int n)
{
	size_t len = n > 0 ? (size_t)n : 0, cap = FLEET_SANITIZE_BUF(len);
	char *out = malloc(cap);
	if (!out) {
		printf("(out of memory)");
		return;
	}
	fputs(fleet_sanitize(p, len, out, cap, SIZE_MAX), stdout);
	free(out);
}

static void print_name(const char *label, const X509_NAME *name)
{
	/* RFC 2253 form with control and high bytes escaped by OpenSSL. */
	BIO *bio = BIO_new(BIO_s_mem());
	char *data = NULL;
	long len;

	printf("%s: ", label);
	if (bio && X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) >= 0 &&
	    (len = BIO_get_mem_data(bio, &data)) > 0)
		print_safe((const unsigned char *)data, (int)len);
	else
		printf("(empty)");
	putchar('\n');
	BIO_free(bio);
}

/* The TCG EK Credential Profile names the TPM in a critical SAN holding a
 * directoryName with these three attributes. */
static void print_tcg_attrs(X509 *x)
{
	static const struct {
		const char *oid, *label;
	} attrs[] = {
		{"2.23.133.2.1", "tpm-manufacturer"},
		{"2.23.133.2.2", "tpm-model"},
		{"2.23.133.2.3", "tpm-version"},
	};
	GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);

	for (size_t a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++) {
		ASN1_OBJECT *obj = OBJ_txt2obj(attrs[a].oid, 1);
		const ASN1_STRING *val = NULL;
		for (int i = 0; obj && san && !val && i < sk_GENERAL_NAME_num(san); i++) {
			GENERAL_NAME *gn = sk_GENERAL_NAME_value(san, i);
			if (gn->type != GEN_DIRNAME)
				continue;
			int idx = X509_NAME_get_index_by_OBJ(gn->d.directoryName, obj, -1);
			if (idx >= 0)
				val = X509_NAME_ENTRY_get_data(
					X509_NAME_get_entry(gn->d.directoryName, idx));
		}
		printf("%s: ", attrs[a].label);
		if (val)
			print_safe(ASN1_STRING_get0_data(val), ASN1_STRING_length(val));
		else
			printf("(none)");
		putchar('\n');
		ASN1_OBJECT_free(obj);
	}
	GENERAL_NAMES_free(san);
}

static int do_show(int argc, char **argv)
{
	X509 *x = NULL;
	char hash[65];
	int rc;

	if (argc != 2)
		return usage();
	if ((rc = load_cert(argv[1], &x)) != 0)
		return rc;
	print_name("subject", X509_get_subject_name(x));
	print_name("issuer", X509_get_issuer_name(x));
	print_tcg_attrs(x);
	if (fleet_ek_hash(x, hash) == FLEET_OK)
		printf("ek_hash: %s\n", hash);
	else
		printf("ek_hash: (no RSA or EC public key)\n");
	X509_free(x);
	return FLEETCTL_EXIT_OK;
}

int cmd_ek(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "hash"))
		return do_hash(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return do_verify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return do_show(argc - 1, argv + 1);
	return usage();
}
