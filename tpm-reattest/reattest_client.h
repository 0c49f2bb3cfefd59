/*
 * reattest_client.h: tpm-reattest, the running node's hourly re-check
 * (lib/reattest_wire.h, docs/reattest.md), as a library (libtpmreattest) so
 * the program and the tests run the same code. main.c is only the command
 * line. The TPM, the transport and the machine's identity and LLDP readers
 * are tink-attest's (libtinkattest).
 *
 * One run: read the LAK certificate, the event log, the BIOS version and the
 * LLDP neighbour; open the TPM and re-make the AK (a primary from
 * tink-attest's fixed template) and require it to be the certificate's key;
 * only then ask fleetd for a nonce; quote the selection fleetd named with
 * the AK over fleet_wire_quote_qualifier(nonce, report), sign the report
 * with the AK (TPM2_Hash's ticket, then TPM2_Sign); send the check. Nothing
 * is sent after a local or TPM failure: fleetd sees a complete check or no
 * evidence at all.
 */
#ifndef TPM_REATTEST_CLIENT_H
#define TPM_REATTEST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/buf.h"
#include "lib/reattest_wire.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/transport.h"

#define TPM_REATTEST_DEFAULT_LAK "/var/lib/fleet/lak.pem"
#define TPM_REATTEST_DEFAULT_EVENTLOG "/sys/kernel/security/tpm0/binary_bios_measurements"
#define TPM_REATTEST_DEFAULT_TCTI "device:/dev/tpmrm0"

/* Exit codes: stable, documented in --help and tpm-reattest/README.md. */
enum tpm_reattest_exit {
	TPM_REATTEST_EXIT_PASS = 0,        /* fleetd's check passed */
	TPM_REATTEST_EXIT_USAGE = 2,       /* command line or configuration (the CA) */
	TPM_REATTEST_EXIT_REFUSED = 10,    /* fleetd refused (its journal says why) */
	TPM_REATTEST_EXIT_UNREACHABLE = 11, /* transport, timeout, 5xx after every attempt */
	TPM_REATTEST_EXIT_NO_TPM = 12,      /* no usable TPM, or a TPM command failed */
	TPM_REATTEST_EXIT_AK_MISMATCH = 13, /* the TPM's AK is not the certificate's key */
	TPM_REATTEST_EXIT_LOCAL = 14,      /* files, identity, or fleetd's answer malformed */
};

struct tpm_reattest_config {
	const char *tcti;       /* resolved: --tcti, $TPM2TOOLS_TCTI, $TCTI, default */
	const char *lak_cert;   /* PEM */
	const char *eventlog;
	const char *sysfs_root; /* "/sys" */
	const char *lldp_file;  /* NULL: run lldpcli */
};

/* What this machine sends besides the TPM's work. */
struct tpm_reattest_evidence {
	struct fleet_buf lak_der;  /* the LAK certificate, DER */
	struct fleet_buf eventlog;
	struct fleet_buf report;   /* fleet_network_report_encode of the LLDP neighbour */
	char bios_version[FLEET_WIRE_MAX_BIOS + 1];
};

struct tpm_reattest_result {
	int exit_code;
	char message[512]; /* one line: the outcome */
	unsigned posts;    /* requests handed to the transport */
};

void tpm_reattest_evidence_init(struct tpm_reattest_evidence *ev);
void tpm_reattest_evidence_free(struct tpm_reattest_evidence *ev);

/* Read the LAK certificate (one PEM certificate; as configuration: not a
 * symlink, owned by root or us, writable by nobody else), the event log,
 * sysfs' BIOS version and the LLDP neighbour. 0, or TPM_REATTEST_EXIT_LOCAL
 * with msg saying which file and why. */
int tpm_reattest_load_evidence(const struct tpm_reattest_config *cfg,
			       struct tpm_reattest_evidence *ev, char *msg, size_t msglen);

/* Re-make the AK and compare its public key with the certificate's. 0;
 * TPM_REATTEST_EXIT_AK_MISMATCH; TPM_REATTEST_EXIT_NO_TPM (a TPM error);
 * TPM_REATTEST_EXIT_LOCAL (a certificate that does not parse). */
int tpm_reattest_check_ak(struct tink_tpm *t, const struct fleet_buf *lak_der, char *msg,
			  size_t msglen);

/* The check message for nonce: the quote of nonce->pcr_selection by the AK
 * over fleet_wire_quote_qualifier(nonce, report), the report signed by the
 * AK, and copies of the evidence. *out owns its bytes
 * (fleet_reattest_check_free); on failure it is freed and zeroed. 0,
 * TPM_REATTEST_EXIT_NO_TPM or TPM_REATTEST_EXIT_LOCAL, msg set. */
int tpm_reattest_build_check(struct tink_tpm *t, const struct tpm_reattest_evidence *ev,
			     const struct fleet_reattest_nonce_reply *nonce,
			     struct fleet_reattest_check *out, char *msg, size_t msglen);

/* The AK's signature over SHA-256(msg): TPM2_Hash (a hash sequence over
 * 1024 bytes) for the ticket a restricted key needs, then TPM2_Sign; sig
 * gets the marshaled TPMT_SIGNATURE. 0, or -1 with t->err set. */
int tpm_reattest_sign_ak(struct tink_tpm *t, const uint8_t *msg, size_t len,
			 struct fleet_buf *sig);

/* One run over tx. Always fills *res; returns res->exit_code. */
int tpm_reattest_run(const struct tpm_reattest_config *cfg, const struct tink_transport *tx,
		     struct tpm_reattest_result *res);

/* The exit code's name for messages: "pass", "refused", ... */
const char *tpm_reattest_exit_name(int code);

/* One line on stderr, "tpm-reattest: ..." */
void tpm_reattest_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
