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
#include <time.h>

#include "lib/buf.h"
#include "lib/reattest_wire.h"
#include "tink-attest/tpm_client.h"
#include "tink-attest/transport.h"

#define TPM_REATTEST_DEFAULT_LAK "/var/lib/fleet/lak.pem"
#define TPM_REATTEST_DEFAULT_LDEVID "/var/lib/fleet/ldevid.pem"
/* Renewal starts this long before the first of the two certificates ends
 * (spec: 30 days; fleetd's RN5 agrees). */
#define TPM_REATTEST_RENEW_BEFORE (30 * 86400)
#define TPM_REATTEST_RENEW_ATTEMPTS 3     /* TPM attempts at the next key, per run */
#define TPM_REATTEST_RENEW_BACKOFF_MS 2000 /* the first retry's delay; doubled, capped */
#define TPM_REATTEST_RENEW_BACKOFF_CAP_MS 30000
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
	TPM_REATTEST_EXIT_RENEWAL = 15,    /* the check passed; the due renewal was not done */
};

struct tpm_reattest_config {
	const char *tcti;       /* resolved: --tcti, $TPM2TOOLS_TCTI, $TCTI, default */
	const char *lak_cert;   /* PEM */
	const char *eventlog;
	const char *sysfs_root; /* "/sys" */
	const char *lldp_file;  /* NULL: run lldpcli */
	const char *ldevid_cert; /* PEM; renewal rewrites it and lak_cert (NULL: no renewal) */
	unsigned renew_backoff_ms; /* 0: TPM_REATTEST_RENEW_BACKOFF_MS (tests shorten it) */
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
	bool renewal_due;  /* a certificate ends within TPM_REATTEST_RENEW_BEFORE */
	bool renewed;      /* both new certificates are in place */
};

void tpm_reattest_evidence_init(struct tpm_reattest_evidence *ev);
void tpm_reattest_evidence_free(struct tpm_reattest_evidence *ev);

/* Read the LAK certificate (one PEM certificate; as configuration: not a
 * symlink, owned by root or us, writable by nobody else), the event log,
 * sysfs' BIOS version and the LLDP neighbour. 0, or TPM_REATTEST_EXIT_LOCAL
 * with msg saying which file and why. */
int tpm_reattest_load_evidence(const struct tpm_reattest_config *cfg,
			       struct tpm_reattest_evidence *ev, char *msg, size_t msglen);

/* One PEM certificate as configuration (what: "LAK" or "LDevID"), into der
 * as DER. 0, or TPM_REATTEST_EXIT_LOCAL with msg saying which and why. */
int tpm_reattest_read_cert(const char *path, const char *what, struct fleet_buf *der,
			   char *msg, size_t msglen);

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

/*
 * Renewal (renew.c; README.md "Renewal"): when the LAK or the LDevID
 * certificate ends within TPM_REATTEST_RENEW_BEFORE, the run proves the next
 * LDevID key (tink_ldevid_template of the current generation + 1, found by
 * matching the LDevID certificate's key) with TPM2_Certify by the AK, and
 * sends its check to /v1/reattest/renew. There is no file-key fallback: a
 * TPM that cannot make or certify the key fails the renewal (retried
 * TPM_REATTEST_RENEW_ATTEMPTS times with capped, jittered backoff, each
 * failure logged with the time left), and the run still makes its hourly
 * check, ending with TPM_REATTEST_EXIT_RENEWAL when that passed.
 */
struct tpm_reattest_renewal {
	unsigned gen;               /* the next key's generation */
	TPM2B_PUBLIC key;           /* its public area */
	struct fleet_buf public_m;  /* marshaled TPM2B_PUBLIC */
	struct fleet_buf request;   /* the request document */
	struct fleet_buf attest, sig; /* TPM2_Certify by the AK */
	struct fleet_buf ldevid_der;  /* the current LDevID certificate */
	long seconds_left;            /* until the first certificate ends */
};
void tpm_reattest_renewal_init(struct tpm_reattest_renewal *rn);
void tpm_reattest_renewal_free(struct tpm_reattest_renewal *rn);
/* 1 when the first of the two certificates (DER) ends within
 * TPM_REATTEST_RENEW_BEFORE of now (*seconds_left set), 0 when not, -1
 * when one does not parse. */
int tpm_reattest_renewal_due(const struct fleet_buf *lak_der, const struct fleet_buf *ldevid_der,
			     time_t now, long *seconds_left);
/* Find the current generation (the one whose key is rn->ldevid_der's) and
 * prove the next with the AK, for the LAK certificate's serialNumber. 0;
 * TPM_REATTEST_EXIT_NO_TPM (a TPM command failed: retry);
 * TPM_REATTEST_EXIT_LOCAL (no generation holds the certificate's key, or
 * the certificates cannot be read: retrying cannot help). msg set. */
int tpm_reattest_prove_next(struct tink_tpm *t, const struct fleet_buf *lak_der,
			    struct tpm_reattest_renewal *rn, char *msg, size_t msglen);
/* Attach the proof to a built check (copies). 0 or -1 (memory). */
int tpm_reattest_attach_renewal(const struct tpm_reattest_renewal *rn,
				struct fleet_reattest_check *chk);
/* Check what fleetd issued (the LAK certificate for the same AK key as the
 * old one, the LDevID certificate for rn->key, both for the old subject,
 * from the old one's CA by issuer name and key identifier, valid now and
 * ending after the old ones) and write both PEM files, each through a
 * temporary file, fsync and rename, the replaced one kept as FILE.prev (the
 * LAK first: a crash between leaves the old LDevID, and the next run's
 * renewal of the same key gets the same answer again, fleetd RN6).
 * 0, or TPM_REATTEST_EXIT_LOCAL with msg set. */
int tpm_reattest_store_renewal(const struct tpm_reattest_config *cfg,
			       const struct fleet_buf *old_lak_der,
			       const struct tpm_reattest_renewal *rn,
			       const struct fleet_reattest_check_reply *reply, char *msg,
			       size_t msglen);

/* One run over tx. Always fills *res; returns res->exit_code. */
int tpm_reattest_run(const struct tpm_reattest_config *cfg, const struct tink_transport *tx,
		     struct tpm_reattest_result *res);

/* The exit code's name for messages: "pass", "refused", ... */
const char *tpm_reattest_exit_name(int code);

/* One line on stderr, "tpm-reattest: ..." */
void tpm_reattest_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
