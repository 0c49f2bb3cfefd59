/*
 * config.h: tink-attest's command line and the environment it reads.
 */
#ifndef TINK_CONFIG_H
#define TINK_CONFIG_H

#include "lib/buf.h"
#include "lib/fleet_err.h"
#include "tink-attest/tink.h"
#include "tink-attest/transport_curl.h"

#define TINK_DEFAULT_TCTI "device:/dev/tpmrm0"
#define TINK_DEFAULT_EVENTLOG "/sys/kernel/security/tpm0/binary_bios_measurements"
#define TINK_DEFAULT_CMDLINE "/proc/cmdline"
#define TINK_CMDLINE_CA_PARAM "fleet_ca"

struct tink_options {
	struct tink_config run;
	struct tink_curl curl;
	const char *url;
	const char *cmdline; /* NULL unless --ca-cmdline */
	int help;
};

/*
 * Parse argv. 0 on success; TINK_EXIT_USAGE with msg set otherwise. The
 * TCTI is --tcti, else $TPM2TOOLS_TCTI, else $TCTI, else device:/dev/tpmrm0.
 */
int tink_options_parse(int argc, char **argv, struct tink_options *o, char *msg, size_t msglen);
void tink_options_free(struct tink_options *o);

/*
 * The pinned CA from a kernel command line: the parameter fleet_ca=<DER in
 * base64 or base64url, padding optional> (the HookOS entrypoint's form),
 * turned into PEM for libcurl. FLEET_OK, or the failure in ec: the file
 * reader's own (its code, reason and errno), FLEET_E_MALFORMED for a
 * missing or unreadable parameter.
 */
fleet_err tink_ca_from_cmdline(const char *cmdline_path, struct fleet_buf *pem,
			       struct fleet_errctx *ec);

/*
 * --ca FILE: fleetd's CA in PEM, read once here (lib/file_read.h, as
 * configuration: not a symlink, owned by root or us, writable by nobody
 * else) into pem, which libcurl then takes as a blob, so the file is not
 * opened again by path for every connection. FLEET_OK, or the failure in
 * ec (the file reader's own, passed on; FLEET_E_MALFORMED when empty).
 */
fleet_err tink_ca_from_file(const char *path, struct fleet_buf *pem, struct fleet_errctx *ec);

void tink_usage(FILE *f);

#endif
