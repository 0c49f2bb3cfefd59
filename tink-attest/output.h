/* output.h: files tink-attest leaves for the HookOS entrypoint. */
#ifndef TINK_OUTPUT_H
#define TINK_OUTPUT_H

#include <stddef.h>
#include <sys/types.h>

#include <openssl/x509.h>

/* Write dir/name atomically: a temporary file in dir (mode set with fchmod,
 * so the umask does not widen it), fsync, rename over name, fsync dir.
 * 0, or -1 with err set; nothing is left behind on failure. */
int tink_write_file(const char *dir, const char *name, const void *data, size_t len,
		    mode_t mode, char *err, size_t errlen);
/* The certificate as PEM, mode 0644. */
int tink_write_cert(const char *dir, const char *name, X509 *cert, char *err, size_t errlen);

#endif
