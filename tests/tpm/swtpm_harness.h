/*
 * swtpm_harness.h: a real TPM 2.0 (swtpm / libtpms) per test.
 *
 * Each harness gets a private directory holding the TPM state, a private
 * swtpm_setup config and a private "manufacturer" CA (swtpm_localca), so no
 * test touches /var/lib or another test's TPM. The TPM is manufactured with
 * an RSA-2048 EK (persistent 0x81010001, certificate in NV 0x01C00002) and an
 * ECC P-384 EK (0x81010016, certificate in NV 0x01C00016), both certificates
 * issued by that CA, then served on a free loopback TCP port.
 *
 * The TPM is real; only the manufacturer is a test one. Tests that cannot find
 * swtpm exit 77 (skipped) and say so.
 */
#ifndef FLEET_SWTPM_HARNESS_H
#define FLEET_SWTPM_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#include <tss2/tss2_esys.h>

struct swtpm_opts {
	const char *pcr_banks; /* e.g. "sha1,sha256"; NULL: "sha256" */
	bool no_ek_certs;      /* manufacture without EKs and certificates */
};

struct swtpm {
	char dir[256];     /* private directory: state/, ca/, roots/ */
	char roots[300];   /* the manufacturer CA certificates (root + issuer), PEM */
	char tcti[128];    /* "swtpm:host=127.0.0.1,port=N" */
	int port;          /* server port; control port is port + 1 */
	pid_t pid;
	TSS2_TCTI_CONTEXT *tcti_ctx;
	ESYS_CONTEXT *esys; /* opened by swtpm_esys() */
};

/* True when swtpm and swtpm_setup are on PATH. */
bool swtpm_available(void);
/* Exit 77 with a message when they are not. */
void swtpm_require_or_skip(void);

/* Manufacture and start. 0 on success; -1 with the reason on stderr. */
int swtpm_start(struct swtpm *t, const struct swtpm_opts *opts);
/* Stop the process (SIGTERM, then SIGKILL), close contexts, remove the dir. */
void swtpm_stop(struct swtpm *t);
/* Kill the TPM process abruptly (for "TPM dies mid-session" tests). */
void swtpm_kill(struct swtpm *t);
/* An ESYS context on this TPM (opened once, owned by the harness). */
ESYS_CONTEXT *swtpm_esys(struct swtpm *t);

/* Read an NV index fully into a malloc'd buffer (EK certificates). */
int swtpm_nv_read(struct swtpm *t, TPM2_HANDLE index, unsigned char **out, size_t *len);
/* The public area of a persistent key (EKs); free with Esys_Free. */
int swtpm_read_public(struct swtpm *t, TPM2_HANDLE handle, TPM2B_PUBLIC **out);

#endif
