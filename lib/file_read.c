/*
 * file_read.c: one descriptor, checked, then read (file_read.h).
 */
#include "lib/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define CHUNK 16384

/* ec's sentence is "WHAT PATH: REASON: what was wrong"; errnum (0: none)
 * the errno of the call that failed, said after it by fleet_errctx_text. */
__attribute__((format(printf, 7, 8))) static fleet_err
refuse(struct fleet_errctx *ec, fleet_err e, int errnum, const struct fleet_file_policy *p,
       const char *path, const char *reason, const char *fmt, ...)
{
	if (!ec)
		return e;
	char why[sizeof(ec->detail)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fleet_errctx_errno(ec, e, errnum, "%s %s: %s: %s", p && p->what ? p->what : "the file",
			   path ? path : "(no path)", reason, why);
	ec->reason = reason;
	return e;
}

static bool owner_ok(unsigned owners, uid_t uid)
{
	if (!owners)
		return true;
	return ((owners & FLEET_FILE_OWNER_ROOT) && uid == 0) ||
	       ((owners & FLEET_FILE_OWNER_EUID) && uid == geteuid());
}

static const char *owners_text(unsigned owners, char *out, size_t len)
{
	if ((owners & FLEET_FILE_OWNER_ROOT) && (owners & FLEET_FILE_OWNER_EUID) &&
	    geteuid() != 0)
		snprintf(out, len, "root or uid %u", (unsigned)geteuid());
	else if (owners & FLEET_FILE_OWNER_ROOT)
		snprintf(out, len, "root");
	else
		snprintf(out, len, "uid %u", (unsigned)geteuid());
	return out;
}

/* The policy's rules on what fstat said: a refusal by one is UNSAFE. */
static fleet_err check(const struct fleet_file *f, struct fleet_errctx *ec)
{
	const struct fleet_file_policy *p = f->policy;
	const struct stat *st = &f->st;
	if (!S_ISREG(st->st_mode))
		return refuse(ec, FLEET_E_UNSAFE, 0, p, f->path, "not-regular",
			      "is not a regular file");
	if (!owner_ok(p->owners, st->st_uid)) {
		char who[64];
		return refuse(ec, FLEET_E_UNSAFE, 0, p, f->path, "owner",
			      "is not owned by %s (its owner is uid %u)",
			      owners_text(p->owners, who, sizeof(who)), (unsigned)st->st_uid);
	}
	mode_t bad = st->st_mode & p->forbid & 0777;
	unsigned mode = (unsigned)(st->st_mode & 07777);
	if (bad & (S_IWOTH | S_IWGRP))
		return refuse(ec, FLEET_E_UNSAFE, 0, p, f->path,
			      bad & S_IWOTH ? "world-writable" : "group-writable",
			      "is writable by group or others (mode %04o)", mode);
	if (bad)
		return refuse(ec, FLEET_E_UNSAFE, 0, p, f->path,
			      bad & 0007 ? "world-readable" : "group-readable",
			      "mode %04o gives group or others access; it must be mode %04o or "
			      "stricter",
			      mode, (unsigned)(0666 & ~p->forbid));
	if (!p->size_by_read &&
	    (st->st_size < 0 || (unsigned long long)st->st_size > p->max_size))
		return refuse(ec, FLEET_E_TOO_LARGE, 0, p, f->path, "too-large",
			      "has %lld bytes, more than the %zu allowed", (long long)st->st_size,
			      p->max_size);
	return FLEET_OK;
}

fleet_err fleet_file_open(int dirfd, const char *path, const struct fleet_file_policy *policy,
			  struct fleet_file *f, struct fleet_errctx *ec)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->policy = policy;
	f->path = path;
	if (ec)
		memset(ec, 0, sizeof(*ec));
	if (!path || !*path || !policy || !policy->max_size)
		return refuse(ec, FLEET_E_INVALID_ARG, 0, policy, path, "invalid",
			      "no path, or no policy with a size cap");
	/* O_NONBLOCK: opening a FIFO planted here must not wait for a writer;
	 * it is refused as not-regular right after. O_NOCTTY: a terminal never
	 * becomes ours. */
	int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int err = errno;
		if (err == ELOOP)
			return refuse(ec, FLEET_E_UNSAFE, 0, policy, path, "symlink",
				      "is a symbolic link, which is not followed");
		if (err == ENOENT)
			return refuse(ec, FLEET_E_NOT_FOUND, err, policy, path, "not-found",
				      "cannot open it");
		return refuse(ec, FLEET_E_IO, err, policy, path, "open-failed", "cannot open it");
	}
	f->fd = fd;
	if (fstat(fd, &f->st) != 0) {
		int err = errno;
		fleet_file_close(f);
		return refuse(ec, FLEET_E_IO, err, policy, path, "read-failed", "cannot fstat it");
	}
	fleet_err e = check(f, ec);
	if (e != FLEET_OK)
		fleet_file_close(f);
	return e;
}

fleet_err fleet_file_read_open(struct fleet_file *f, struct fleet_buf *out,
			       struct fleet_errctx *ec)
{
	const struct fleet_file_policy *p = f->policy;
	if (ec)
		memset(ec, 0, sizeof(*ec));
	if (f->fd < 0 || !p || out->data || out->len)
		return refuse(ec, FLEET_E_INVALID_ARG, 0, p, f->path, "invalid",
			      "no open file, or the buffer is not empty");
	/* The cap leaves a byte for a terminating NUL. */
	if (p->secret)
		fb_init_secret(out, p->max_size + 1);
	else
		fb_init_capped(out, p->max_size + 1);
	/* The size fstat gave, in one allocation: a secret is then never
	 * copied while read. /proc and /sys say 0 and are read in chunks. */
	if (!p->size_by_read && f->st.st_size > 0 &&
	    fb_reserve(out, (size_t)f->st.st_size + 1) != FLEET_OK) {
		fb_free(out);
		return refuse(ec, FLEET_E_NOMEM, 0, p, f->path, "out-of-memory",
			      "no memory for it");
	}
	fleet_err e = FLEET_OK;
	for (;;) {
		/* One byte past the cap at most, to see a file that grew. */
		size_t want = p->max_size + 1 - out->len;
		if (want > CHUNK)
			want = CHUNK;
		/* Room already there is used first: a file read in the one
		 * block sized from fstat never grows (never copies) it. */
		if (out->cap == out->len && fb_reserve(out, want) != FLEET_OK) {
			e = refuse(ec, FLEET_E_NOMEM, 0, p, f->path, "out-of-memory",
				   "no memory for it");
			break;
		}
		if (want > out->cap - out->len)
			want = out->cap - out->len;
		ssize_t r = read(f->fd, out->data + out->len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = refuse(ec, FLEET_E_IO, errno, p, f->path, "read-failed",
				   "cannot read it");
			break;
		}
		if (r == 0)
			break;
		out->len += (size_t)r;
		if (out->len > p->max_size) {
			e = refuse(ec, FLEET_E_TOO_LARGE, 0, p, f->path, "too-large",
				   "grew past the %zu bytes allowed while it was read", p->max_size);
			break;
		}
	}
	if (e != FLEET_OK)
		fb_free(out);
	return e;
}

void fleet_file_close(struct fleet_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

fleet_err fleet_file_read(int dirfd, const char *path, const struct fleet_file_policy *policy,
			  struct fleet_buf *out, struct fleet_errctx *ec)
{
	struct fleet_file f;
	fleet_err e = fleet_file_open(dirfd, path, policy, &f, ec);
	if (e != FLEET_OK)
		return e;
	e = fleet_file_read_open(&f, out, ec);
	fleet_file_close(&f);
	return e;
}

fleet_err fleet_file_read_data(const char *path, size_t max_size, struct fleet_buf *out,
			       struct fleet_errctx *ec)
{
	const struct fleet_file_policy policy = FLEET_FILE_POLICY_DATA("the file", max_size);
	return fleet_file_read(AT_FDCWD, path, &policy, out, ec);
}

int fleet_file_errno(fleet_err e, const struct fleet_errctx *ec, int fallback)
{
	if (e == FLEET_E_TOO_LARGE)
		return EFBIG;
	if (ec && ec->reason && !strcmp(ec->reason, "symlink"))
		return ELOOP;
	if (ec && ec->reason && !strcmp(ec->reason, "not-regular"))
		return EINVAL;
	return ec && ec->sys_errno ? ec->sys_errno : fallback;
}
