/*
 * nodes_file.c: the nodes-file inventory (see nodes_file.h).
 *
 * Ownership is checked the way OpenSSH's StrictModes does, but on file
 * descriptors: the directory is opened, fstat'ed and checked; the file is
 * opened relative to that descriptor with O_NOFOLLOW, fstat'ed and checked,
 * and the same descriptor is read. No path is looked up twice, so nothing
 * can be swapped between the check and the read.
 */
#include "fleetd/inventory/nodes_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/hex.h"

/* What fleetd was told this run: never written to the file. */
struct overlay {
	long id;
	bool has_status;
	char status[32];
	char declared[32]; /* the file's status when status was set */
	bool has_eks;
	char ek_hash[65];
	char ek_hash_ecc[65];
	bool action_cleared;
	char action_declared[32]; /* the file's desired_action when cleared */
};

struct nodes_inv {
	struct fleet_inventory base;
	pthread_mutex_t mu;
	char path[PATH_MAX];
	struct fleet_inv_device *dev;
	size_t n;
	bool loaded;
	fleet_err cause; /* why the last refresh could not read the file (FLEET_OK: it did) */
	dev_t st_dev;
	ino_t st_ino;
	off_t st_size;
	struct timespec st_mtim;
	struct overlay *ov;
	size_t n_ov;
};

/* Writable by someone other than root: owner not root, or group/other w. */
static const char *unsafe(const struct stat *st, bool sticky_ok)
{
	if (st->st_uid != 0)
		return "is not owned by root";
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && (st->st_mode & S_ISVTX)))
		return "is writable by group or others";
	return NULL;
}

/* Check dfd's directory and every ancestor up to /. The directory holding
 * the file must not be group- or world-writable at all; an ancestor may be
 * when it is sticky (as /tmp is): there nobody can rename what root owns.
 * FLEET_E_UNSAFE when one breaks the rule, FLEET_E_IO when one cannot be
 * checked. */
static fleet_err check_dirs(int dfd, const char *path, struct fleet_errctx *ec)
{
	int cur = dup(dfd);
	if (cur < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "%s", path);
	for (int depth = 0; depth < 64; depth++) {
		struct stat st, pst;
		if (fstat(cur, &st) != 0)
			goto io;
		const char *why = unsafe(&st, depth > 0);
		if (why) {
			close(cur);
			return fleet_errctx_msg(
				ec, FLEET_E_UNSAFE,
				"the nodes file's %s %s; it must be writable by root alone: %s",
				depth ? "ancestor directory" : "directory", why, path);
		}
		int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0)
			goto io;
		if (fstat(parent, &pst) != 0) {
			close(parent);
			goto io;
		}
		close(cur);
		cur = parent;
		if (pst.st_dev == st.st_dev && pst.st_ino == st.st_ino) {
			close(cur);
			return FLEET_OK; /* reached / */
		}
	}
	close(cur);
	return fleet_errctx_msg(ec, FLEET_E_IO,
				"the nodes file is more than 64 directories deep: %s", path);
io:;
	int errnum = errno;
	close(cur);
	return fleet_errctx_errno(ec, FLEET_E_IO, errnum, "cannot check the directories above %s",
				  path);
}

/* Root's configuration: owned by root, writable by nobody else
 * (docs/files.md); the directories above are checked by check_dirs. */
static const struct fleet_file_policy nodes_policy = {
	.what = "the nodes file",
	.max_size = FLEET_NODES_FILE_MAX_SIZE,
	.owners = FLEET_FILE_OWNER_ROOT,
	.forbid = S_IWGRP | S_IWOTH,
};

/* Open path's directory and the file in it and check both. FLEET_OK with
 * the file open in f; else ec says why and the result is the reader's
 * (lib/file_read.h: FLEET_E_UNSAFE when a rule refuses the file, a link
 * included, FLEET_E_NOT_FOUND, FLEET_E_IO ...), or check_dirs's. */
static fleet_err open_checked(const char *path, struct fleet_file *f, struct fleet_errctx *ec)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	const char *slash = strrchr(path, '/');
	if (path[0] != '/' || !slash || !slash[1])
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"the nodes file path must be absolute and name a file: %s",
					path);
	char dir[PATH_MAX];
	size_t dlen = slash == path ? 1 : (size_t)(slash - path);
	if (dlen >= sizeof(dir))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "the nodes file path is too long");
	memcpy(dir, path, dlen);
	dir[dlen] = '\0';
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fleet_errctx_errno(ec, errno == ENOENT ? FLEET_E_NOT_FOUND : FLEET_E_IO,
					  errno, "cannot open the nodes file's directory %s", dir);
	fleet_err e = check_dirs(dfd, path, ec);
	if (e != FLEET_OK) {
		close(dfd);
		return e;
	}
	/* The file itself through the one reader (lib/file_read.h): opened
	 * under the directory just checked, O_NOFOLLOW and O_NONBLOCK (a FIFO
	 * planted here cannot hang the daemon), checked on that descriptor. */
	e = fleet_file_open(dfd, slash + 1, &nodes_policy, f, ec);
	close(dfd);
	if (e != FLEET_OK && ec) {
		bool mode_rule = e == FLEET_E_UNSAFE && strcmp(ec->reason, "symlink") &&
				 strcmp(ec->reason, "not-regular");
		/* The reader names the file by its name in the directory; say
		 * the path. Its code, reason and errno stay. */
		char *why = strchr(ec->detail, ':');
		char head[PATH_MAX + 32];
		memmove(ec->detail, why ? why : "", why ? strlen(why) + 1 : 1);
		snprintf(head, sizeof(head), "the nodes file %s", path);
		fleet_errctx_wrap(ec, e, head,
				  mode_rule ? "; it must be writable by root alone" : NULL);
	}
	return e;
}

static fleet_err read_fd(struct fleet_file *f, struct fleet_buf *b, const char *path,
			 struct fleet_errctx *ec)
{
	struct fleet_errctx fe;
	fleet_err e = fleet_file_read_open(f, b, &fe);
	if (e == FLEET_E_TOO_LARGE)
		return fleet_errctx_msg(ec, e, "the nodes file %s is over %u bytes", path,
					FLEET_NODES_FILE_MAX_SIZE);
	if (e == FLEET_E_NOMEM)
		return fleet_errctx_msg(ec, e, "out of memory");
	if (e != FLEET_OK)
		return fleet_errctx_errno(ec, e, fe.sys_errno, "cannot read the nodes file %s",
					  path);
	return FLEET_OK;
}

static struct fleet_inv_device *find_id(struct nodes_inv *ni, long id)
{
	for (size_t i = 0; i < ni->n; i++)
		if (ni->dev[i].id == id)
			return &ni->dev[i];
	return NULL;
}

/* After a reload: forget what no longer applies. A node gone from the file
 * loses its overlay; a status the operator has since changed in the file
 * wins over the one fleetd set. */
static void prune_overlay(struct nodes_inv *ni)
{
	size_t w = 0;
	for (size_t i = 0; i < ni->n_ov; i++) {
		struct overlay *o = &ni->ov[i];
		const struct fleet_inv_device *d = find_id(ni, o->id);
		if (!d)
			continue;
		if (o->has_status && strcmp(d->status, o->declared) != 0)
			o->has_status = false;
		if (o->action_cleared && strcmp(d->desired_action, o->action_declared) != 0)
			o->action_cleared = false;
		if (o->has_status || o->has_eks || o->action_cleared)
			ni->ov[w++] = *o;
	}
	ni->n_ov = w;
}

/* The inventory's answer when the file could not be read (ni->cause says
 * why): this process out of memory is said as that, anything else is the
 * inventory not answering. */
static fleet_err unread(const struct nodes_inv *ni)
{
	return ni->cause == FLEET_E_NOMEM ? FLEET_INV_NOMEM : FLEET_INV_UNAVAILABLE;
}

/* Make the in-memory copy match the file, reading it again when it changed. */
static fleet_err refresh(struct nodes_inv *ni, struct fleet_errctx *ec)
{
	struct fleet_file f;
	ni->cause = open_checked(ni->path, &f, ec);
	if (ni->cause != FLEET_OK) {
		ni->loaded = false;
		return unread(ni);
	}
	const struct stat st = f.st;
	if (ni->loaded && st.st_dev == ni->st_dev && st.st_ino == ni->st_ino &&
	    st.st_size == ni->st_size && st.st_mtim.tv_sec == ni->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == ni->st_mtim.tv_nsec) {
		fleet_file_close(&f);
		return FLEET_INV_OK;
	}
	ni->loaded = false;
	struct fleet_buf b;
	fb_init(&b);
	ni->cause = read_fd(&f, &b, ni->path, ec);
	fleet_file_close(&f);
	if (ni->cause != FLEET_OK) {
		fb_free(&b);
		return unread(ni);
	}
	struct fleet_inv_device *dev;
	size_t n;
	struct fleet_errctx yerr;
	fleet_err e = fleet_nodes_file_parse(b.data, b.len, &dev, &n, &yerr);
	fb_free(&b);
	if (e == FLEET_E_NOMEM) {
		ni->cause = e;
		return fleet_errctx_msg(ec, FLEET_INV_NOMEM, "%s: out of memory", ni->path);
	}
	if (e) {
		char where[300];
		fleet_yaml_error_format(&yerr, where, sizeof(where));
		return fleet_errctx_msg(ec, FLEET_INV_INVALID, "%s: %s", ni->path, where);
	}
	free(ni->dev);
	ni->dev = dev;
	ni->n = n;
	ni->st_dev = st.st_dev;
	ni->st_ino = st.st_ino;
	ni->st_size = st.st_size;
	ni->st_mtim = st.st_mtim;
	ni->loaded = true;
	prune_overlay(ni);
	return FLEET_INV_OK;
}

static struct overlay *overlay_for(struct nodes_inv *ni, long id, bool create)
{
	for (size_t i = 0; i < ni->n_ov; i++)
		if (ni->ov[i].id == id)
			return &ni->ov[i];
	if (!create)
		return NULL;
	/* At most one overlay per node in the file, so this is bounded. */
	struct overlay *nov = realloc(ni->ov, (ni->n_ov + 1) * sizeof(*nov));
	if (!nov)
		return NULL;
	ni->ov = nov;
	memset(&nov[ni->n_ov], 0, sizeof(*nov));
	nov[ni->n_ov].id = id;
	return &nov[ni->n_ov++];
}

static void copy_out(struct nodes_inv *ni, const struct fleet_inv_device *d,
		     struct fleet_inv_device *out)
{
	*out = *d;
	const struct overlay *o = overlay_for(ni, d->id, false);
	if (o && o->has_status)
		memcpy(out->status, o->status, sizeof(out->status));
	if (o && o->action_cleared)
		out->desired_action[0] = '\0';
	if (o && o->has_eks) {
		memcpy(out->ek_hash, o->ek_hash, sizeof(out->ek_hash));
		memcpy(out->ek_hash_ecc, o->ek_hash_ecc, sizeof(out->ek_hash_ecc));
	}
}

#define NI(inv) ((struct nodes_inv *)(inv))

static fleet_err nf_find_by_serial(struct fleet_inventory *inv, const char *serial,
				   struct fleet_inv_device *out, struct fleet_errctx *ec)
{
	struct nodes_inv *ni = NI(inv);
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	if (r == FLEET_INV_OK) {
		r = FLEET_INV_NOT_FOUND;
		for (size_t i = 0; serial && i < ni->n; i++)
			if (!strcasecmp(ni->dev[i].serial, serial)) {
				copy_out(ni, &ni->dev[i], out);
				r = FLEET_INV_OK;
				break;
			}
		if (r == FLEET_INV_NOT_FOUND)
			fleet_errctx_msg(ec, r, "no node with that serial in %s", ni->path);
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

static fleet_err nf_get(struct fleet_inventory *inv, long id, struct fleet_inv_device *out,
			struct fleet_errctx *ec)
{
	struct nodes_inv *ni = NI(inv);
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	if (r == FLEET_INV_OK) {
		const struct fleet_inv_device *d = find_id(ni, id);
		if (d)
			copy_out(ni, d, out);
		else {
			r = fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no node with id %ld in %s",
					     id, ni->path);
		}
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

static fleet_err nf_binding_change(struct fleet_inventory *inv, long id,
				   struct fleet_inv_binding_change *out, struct fleet_errctx *ec)
{
	struct nodes_inv *ni = NI(inv);
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	if (r == FLEET_INV_OK) {
		const struct fleet_inv_device *d = find_id(ni, id);
		if (!d) {
			r = fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no node with id %ld in %s",
					     id, ni->path);
		} else {
			memset(out, 0, sizeof(*out));
			/* The file is the binding's only author; it changed
			 * when the file did. */
			out->found = d->approved_ek_hash[0] || d->approved_ek_hash_ecc[0];
			snprintf(out->user, sizeof(out->user), "%s", FLEET_NODES_FILE_AUTHOR);
			out->when = ni->st_mtim.tv_sec;
			out->change_id = (long)ni->st_mtim.tv_sec;
		}
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

static bool hash_ok(const char *h)
{
	return h && (!h[0] || (strlen(h) == 64 && fleet_hex_is_lower(h, 64)));
}

static fleet_err nf_write_ek_hashes(struct fleet_inventory *inv, long id, const char *ek_hash,
				    const char *ek_hash_ecc, struct fleet_errctx *ec)
{
	struct nodes_inv *ni = NI(inv);
	if (!hash_ok(ek_hash) || !hash_ok(ek_hash_ecc))
		return fleet_errctx_msg(ec, FLEET_INV_INVALID,
					"an EK hash must be 64 lowercase hex digits or empty");
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	if (r == FLEET_INV_OK && !find_id(ni, id)) {
		r = fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no node with id %ld in %s", id,
				     ni->path);
	}
	struct overlay *o = r == FLEET_INV_OK ? overlay_for(ni, id, true) : NULL;
	if (r == FLEET_INV_OK && !o) {
		r = fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	}
	if (o) {
		o->has_eks = true;
		snprintf(o->ek_hash, sizeof(o->ek_hash), "%s", ek_hash);
		snprintf(o->ek_hash_ecc, sizeof(o->ek_hash_ecc), "%s", ek_hash_ecc);
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

static fleet_err nf_set_status(struct fleet_inventory *inv, long id, const char *status,
			       struct fleet_errctx *ec)
{
	static const char *const ok[] = {"offline", "active",          "planned", "staged",
					 "failed",  "inventory", "decommissioning", "quarantined"};
	size_t i;
	for (i = 0; status && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(status, ok[i]))
			break;
	if (!status || i == sizeof(ok) / sizeof(ok[0]))
		return fleet_errctx_msg(ec, FLEET_INV_INVALID, "not a device status");
	struct nodes_inv *ni = NI(inv);
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	const struct fleet_inv_device *d = r == FLEET_INV_OK ? find_id(ni, id) : NULL;
	if (r == FLEET_INV_OK && !d) {
		r = fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no node with id %ld in %s", id,
				     ni->path);
	}
	struct overlay *o = d ? overlay_for(ni, id, true) : NULL;
	if (d && !o) {
		r = fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	}
	if (o) {
		d = find_id(ni, id);
		o->has_status = true;
		snprintf(o->status, sizeof(o->status), "%s", status);
		memcpy(o->declared, d->status, sizeof(o->declared));
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

static fleet_err nf_clear_desired_action(struct fleet_inventory *inv, long id,
					 struct fleet_errctx *ec)
{
	struct nodes_inv *ni = NI(inv);
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	const struct fleet_inv_device *d = r == FLEET_INV_OK ? find_id(ni, id) : NULL;
	if (r == FLEET_INV_OK && !d)
		r = fleet_errctx_msg(ec, FLEET_INV_NOT_FOUND, "no node with id %ld in %s", id,
				     ni->path);
	struct overlay *o = d ? overlay_for(ni, id, true) : NULL;
	if (d && !o)
		r = fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
	if (o) {
		d = find_id(ni, id);
		o->action_cleared = true;
		memcpy(o->action_declared, d->desired_action, sizeof(o->action_declared));
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

/* The nodes file is the operator's one document, checked whole on every
 * load (entry by entry, with the line named): an entry that does not pass
 * makes the file unreadable, so a listing never has malformed devices. */
static fleet_err nf_list(struct fleet_inventory *inv, struct fleet_inv_device **out, size_t *n,
			 struct fleet_inv_malformed **bad, size_t *n_bad, struct fleet_errctx *ec)
{
	struct nodes_inv *ni = NI(inv);
	*out = NULL;
	*n = 0;
	*bad = NULL;
	*n_bad = 0;
	pthread_mutex_lock(&ni->mu);
	fleet_err r = refresh(ni, ec);
	if (r == FLEET_INV_OK) {
		struct fleet_inv_device *all = calloc(ni->n ? ni->n : 1, sizeof(*all));
		if (!all) {
			r = fleet_errctx_msg(ec, FLEET_INV_NOMEM, "out of memory");
		} else {
			for (size_t i = 0; i < ni->n; i++)
				copy_out(ni, &ni->dev[i], &all[i]);
			*out = all;
			*n = ni->n;
		}
	}
	pthread_mutex_unlock(&ni->mu);
	return r;
}

static void nf_close(struct fleet_inventory *inv)
{
	struct nodes_inv *ni = NI(inv);
	if (!ni)
		return;
	pthread_mutex_destroy(&ni->mu);
	free(ni->dev);
	free(ni->ov);
	free(ni);
}

static const struct fleet_inventory_ops nodes_file_ops = {
	.find_by_serial = nf_find_by_serial,
	.get = nf_get,
	.binding_change = nf_binding_change,
	.write_ek_hashes = nf_write_ek_hashes,
	.set_status = nf_set_status,
	.clear_desired_action = nf_clear_desired_action,
	.list = nf_list,
	.close = nf_close,
};

fleet_err fleet_nodes_file_open(const char *path, struct fleet_inventory **out,
				struct fleet_errctx *ec)
{
	*out = NULL;
	if (!path || strlen(path) >= PATH_MAX)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"no nodes file path, or one too long");
	struct nodes_inv *ni = calloc(1, sizeof(*ni));
	if (!ni)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	ni->base.ops = &nodes_file_ops;
	int rc = pthread_mutex_init(&ni->mu, NULL);
	if (rc != 0) {
		free(ni);
		return fleet_errctx_errno(ec, FLEET_E_IO, rc, "cannot make a mutex");
	}
	memcpy(ni->path, path, strlen(path) + 1);
	fleet_err r = refresh(ni, ec);
	if (r != FLEET_INV_OK) {
		/* What the file or a directory above it is, as the reader
		 * or the directory check said it (UNSAFE for a rule). */
		fleet_err e = r == FLEET_INV_INVALID ? FLEET_E_MALFORMED : ni->cause;
		nf_close(&ni->base);
		return fleet_errctx_wrap(ec, e, NULL, NULL);
	}
	*out = &ni->base;
	return FLEET_OK;
}
