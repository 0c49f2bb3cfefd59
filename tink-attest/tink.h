/*
 * tink.h: tink-attest as a library (libtinkattest), so the program and the
 * in-process tests run the same code. main.c is only the command line.
 *
 * One run: read the machine's identity, do every TPM operation of the
 * intake, send it; activate both credentials, quote, send the answer; check
 * and store the certificates, sign the confirmation, send it; store the
 * provision when there is one. Evidence for a round is sent only after every
 * TPM operation of that round succeeded. docs/tink-attest.md is the
 * operator's description.
 */
#ifndef TINK_H
#define TINK_H

#include <stdbool.h>
#include <stddef.h>

#include "tink-attest/transport.h"

/* Exit codes: stable, documented in --help and docs/tink-attest.md. */
enum tink_exit {
	TINK_EXIT_CONFIRMED = 0,   /* admitted, certificates stored, confirmed */
	TINK_EXIT_USAGE = 2,       /* bad command line */
	TINK_EXIT_TPM = 3,         /* no TPM, a TPM error, or a TPM whose EKs lie */
	TINK_EXIT_UNREACHABLE = 4, /* fleetd did not answer (after retries) */
	TINK_EXIT_PROTOCOL = 5,    /* fleetd answered something this client refuses */
	TINK_EXIT_LOCAL = 6,       /* this machine: identity, event log, output files */
	TINK_EXIT_PENDING = 10,    /* fleetd has not decided (unknown serial, no binding) */
	TINK_EXIT_REFUSED = 11,    /* fleetd refused */
};

struct tink_config {
	const char *tcti;        /* resolved: --tcti, $TPM2TOOLS_TCTI, $TCTI, default */
	const char *sysfs_root;  /* "/sys" */
	const char *lldp_file;   /* NULL: run lldpcli */
	const char *eventlog;    /* the firmware log */
	const char *out_dir;     /* NULL: store nothing */
};

/* What a run did, for the caller's message and the tests. */
struct tink_result {
	int exit_code;
	char message[512];     /* one line: why the run ended (empty on success) */
	unsigned posts;        /* requests handed to the transport */
	bool has_ecc_ek;
	bool has_provision;
};

/* Run the three rounds over tx. Always fills *res; returns res->exit_code. */
int tink_run(const struct tink_config *cfg, const struct tink_transport *tx,
	     struct tink_result *res);

/* The exit code's name for messages: "tpm-error", "fleetd-unreachable", ... */
const char *tink_exit_name(int code);

#endif
