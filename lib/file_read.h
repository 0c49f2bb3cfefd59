/*
 * file_read.h: the one way a trusted file or a secret is read.
 *
 * One descriptor, checked and then read: the name is opened once, relative
 * to a directory descriptor or AT_FDCWD, with
 * O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY|O_NONBLOCK (a symbolic link in the
 * last component is refused, not followed; a FIFO planted there cannot hang
 * the caller); fstat on that same descriptor says whether it is a regular
 * file, who owns it, its mode and its size; then that descriptor is read to
 * end of file, never more than the cap (a file that grows past the cap while
 * it is read is refused, as is one whose size lies, as /proc's do). Nothing
 * is looked up by name twice, so nothing can be swapped in between.
 *
 * What a caller requires is a struct fleet_file_policy: the largest size it
 * takes, who may own the file, which mode bits refuse it, and whether the
 * bytes are a secret (then they are read into a secret buffer, buf.h, and
 * every intermediate copy is wiped). docs/files.md lists which caller uses
 * which policy and why.
 *
 * A refusal fills the one error context, a struct fleet_errctx
 * (lib/fleet_err.h): ec->reason a stable reason string, ec->detail a
 * sentence naming the file, its path and what was wrong, ec->sys_errno the
 * errno of an open or a read that failed:
 *     "the NetBox token file /etc/fleetd/netbox.token: group-readable: mode
 *      0640 gives group or others access; it must be mode 0600 or stricter"
 * fleet_errctx_text gives the sentence with the system's reason after it
 * ("...: not-found: cannot open it: No such file or directory").
 */
#ifndef FLEET_FILE_READ_H
#define FLEET_FILE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

/* Who may own the file: a set of these bits, 0 for anyone. */
#define FLEET_FILE_OWNER_ROOT 1u /* uid 0 */
#define FLEET_FILE_OWNER_EUID 2u /* the process's effective uid */

struct fleet_file_policy {
	const char *what;  /* what the file is, for messages: "the NetBox token file" */
	size_t max_size;   /* the largest file taken, in bytes (> 0) */
	unsigned owners;   /* FLEET_FILE_OWNER_* bits; 0: any owner */
	mode_t forbid;     /* permission bits that refuse it (077: private, 022: nobody else writes) */
	bool secret;       /* the bytes are a secret: read into a secret buffer, copies wiped */
	bool size_by_read; /* st_size says nothing (sysfs gives every attribute the page
			      size): only what the read returns is held to max_size */
};

/*
 * The policies, by what the file holds (docs/files.md):
 *
 *   SECRET         a private key or a token: owned by root or us, no access
 *                  at all for group or others (mode 0600 or stricter).
 *   SECRET_SHARED  a private key a service reads through its group (the TLS
 *                  key, root:fleetd 0640): owned by root or us, group may
 *                  read but not write, others nothing.
 *   CONFIG         trusted configuration (fleetd.yaml, profiles, roots,
 *                  CA certificates): owned by root or us, writable by nobody
 *                  else. Anyone may read it.
 *   DATA           data whose content is checked by its parser or by
 *                  cryptography (event logs, TPM structures, evidence an
 *                  operator hands fleetctl): any owner, any mode. Still one
 *                  descriptor, no symlink, a regular file, capped.
 */
#define FLEET_FILE_POLICY_SECRET(what_, max_)                                              \
	{ .what = (what_), .max_size = (max_),                                             \
	  .owners = FLEET_FILE_OWNER_ROOT | FLEET_FILE_OWNER_EUID, .forbid = 077,           \
	  .secret = true }
#define FLEET_FILE_POLICY_SECRET_SHARED(what_, max_)                                       \
	{ .what = (what_), .max_size = (max_),                                             \
	  .owners = FLEET_FILE_OWNER_ROOT | FLEET_FILE_OWNER_EUID, .forbid = 027,           \
	  .secret = true }
#define FLEET_FILE_POLICY_CONFIG(what_, max_)                                              \
	{ .what = (what_), .max_size = (max_),                                             \
	  .owners = FLEET_FILE_OWNER_ROOT | FLEET_FILE_OWNER_EUID, .forbid = 022,           \
	  .secret = false }
#define FLEET_FILE_POLICY_DATA(what_, max_)                                                \
	{ .what = (what_), .max_size = (max_), .owners = 0, .forbid = 0, .secret = false }

/*
 * Why a file was refused: the result, and ec->reason, one of these stable
 * strings:
 *   FLEET_E_NOT_FOUND    "not-found"       it does not exist (sys_errno ENOENT)
 *   FLEET_E_IO           "open-failed"     it cannot be opened (sys_errno says why)
 *   FLEET_E_UNSAFE       "symlink"         the last component is a symbolic link
 *                        "not-regular"     a directory, a FIFO, a device, a socket
 *                        "owner"           its owner is not one the policy allows
 *                        "world-writable", "group-writable"
 *                                          others or the group may write it
 *                        "world-readable", "group-readable"
 *                                          others or the group have some access to
 *                                          a private file
 *   FLEET_E_TOO_LARGE    "too-large"       over max_size (by fstat, or by what a
 *                                          read returned)
 *   FLEET_E_IO           "read-failed"     fstat or a read failed (sys_errno)
 *   FLEET_E_NOMEM        "out-of-memory"
 *   FLEET_E_INVALID_ARG  "invalid"         the caller's mistake (no policy, a secret
 *                                          into a buffer that is not a secret one, a
 *                                          buffer not empty)
 * FLEET_E_UNSAFE is exactly the refusals by a rule of the policy. detail is
 * "WHAT PATH: REASON: what was wrong", safe to log (the path is the
 * caller's, never the file's bytes). ec may be NULL.
 */

/* An opened, checked file. */
struct fleet_file {
	int fd;
	struct stat st; /* fstat of fd, as checked */
	const struct fleet_file_policy *policy;
	const char *path; /* the caller's, for messages */
};

/*
 * Open path (relative to dirfd, or AT_FDCWD) and check it against policy.
 * FLEET_OK: f->fd is open and f->st says what it is; read it with
 * fleet_file_read_open and close it with fleet_file_close. Otherwise f->fd
 * is -1, ec (if not NULL) says why, and the result is one of the above:
 * FLEET_E_NOT_FOUND, FLEET_E_IO, FLEET_E_UNSAFE, FLEET_E_TOO_LARGE or
 * FLEET_E_INVALID_ARG. policy must outlive f.
 */
fleet_err fleet_file_open(int dirfd, const char *path, const struct fleet_file_policy *policy,
			  struct fleet_file *f, struct fleet_errctx *ec);

/* Read f's descriptor to end of file into out, which must be empty (as
 * fb_init or fb_free leave it): it is made a capped buffer of
 * max_size + 1 bytes (room for a terminating NUL), a secret one when the
 * policy says so. FLEET_OK, or FLEET_E_TOO_LARGE (the file grew past the
 * cap while read), FLEET_E_IO (with errno), FLEET_E_NOMEM,
 * FLEET_E_INVALID_ARG; on failure out is freed (wiped when secret). */
fleet_err fleet_file_read_open(struct fleet_file *f, struct fleet_buf *out,
			       struct fleet_errctx *ec);

void fleet_file_close(struct fleet_file *f);

/* Open, check, read and close: what nearly every caller wants. */
fleet_err fleet_file_read(int dirfd, const char *path, const struct fleet_file_policy *policy,
			  struct fleet_buf *out, struct fleet_errctx *ec);

/* The errno a caller that speaks errno says for a refusal of this reader:
 * EFBIG for too-large, ELOOP for a symlink, EINVAL for not-regular, the
 * system call's errno when one failed, else fallback. */
int fleet_file_errno(fleet_err e, const struct fleet_errctx *ec, int fallback);

/* The same with FLEET_FILE_POLICY_DATA: a file whose content its reader
 * checks (evidence, test inputs), named "the file" in messages. */
fleet_err fleet_file_read_data(const char *path, size_t max_size, struct fleet_buf *out,
			       struct fleet_errctx *ec);

#endif
