/* output.h: files tink-attest leaves for the HookOS entrypoint. */
#ifndef TINK_OUTPUT_H
#define TINK_OUTPUT_H

#include <stddef.h>
#include <sys/types.h>

#include <openssl/x509.h>

#include "lib/fleet_err.h"

/* Write dir/name atomically: a temporary file in dir (mode set with fchmod,
 * so the umask does not widen it), fsync, rename over name, fsync dir.
 * FLEET_OK, or the failure in ec (lib/fleet_err.h: a sentence naming the
 * file and the errno of the call that failed; FLEET_E_IO, or
 * FLEET_E_TOO_LARGE for a path too long); nothing is left behind on
 * failure. */
fleet_err tink_write_file(const char *dir, const char *name, const void *data, size_t len,
			  mode_t mode, struct fleet_errctx *ec);
/* The certificate as PEM, mode 0644 (FLEET_E_CRYPTO when it cannot be
 * encoded). */
fleet_err tink_write_cert(const char *dir, const char *name, X509 *cert,
			  struct fleet_errctx *ec);

#endif
