/* output.c: atomic writes into --out-dir. */
#include "tink-attest/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>

fleet_err tink_write_file(const char *dir, const char *name, const void *data, size_t len,
			  mode_t mode, struct fleet_errctx *ec)
{
	char tmp[4096], dst[4096];
	if (snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp))
		return fleet_errctx_msg(ec, FLEET_E_TOO_LARGE, "output path too long");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot create a file in %s", dir);
	const unsigned char *p = data;
	size_t left = len;
	int ok = fchmod(fd, mode) == 0;
	while (ok && left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ok = 0;
			break;
		}
		p += w;
		left -= (size_t)w;
	}
	ok = ok && fsync(fd) == 0;
	int saved = errno;
	if (close(fd) != 0 && ok) {
		ok = 0;
		saved = errno;
	}
	if (ok && rename(tmp, dst) != 0) {
		ok = 0;
		saved = errno;
	}
	if (!ok) {
		unlink(tmp);
		return fleet_errctx_errno(ec, FLEET_E_IO, saved, "cannot write %s", dst);
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return FLEET_OK;
}

fleet_err tink_write_cert(const char *dir, const char *name, X509 *cert,
			  struct fleet_errctx *ec)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem = NULL;
	if (!b || !PEM_write_bio_X509(b, cert)) {
		BIO_free(b);
		/* the sentence alone, as tink-attest has always printed it */
		return fleet_errctx_msg(ec, FLEET_E_CRYPTO, "cannot encode %s as PEM", name);
	}
	long n = BIO_get_mem_data(b, &pem);
	fleet_err e = tink_write_file(dir, name, pem, (size_t)n, 0644, ec);
	BIO_free(b);
	return e;
}
