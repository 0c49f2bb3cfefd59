/*
 * spire_nodes_file.c: writing spire-nodes.json so that a reader never sees
 * part of it, and only when its content changed.
 *
 * Everything happens relative to one descriptor of the directory: its
 * ownership and mode are checked on that descriptor, writers are serialised
 * by flock(2) on it (released by the kernel when a writer dies, so a killed
 * pass never leaves it held), and every name is opened O_NOFOLLOW under it.
 * Because of the lock, each file has one fixed temp name: a temp left by a
 * writer killed mid-write is removed by the next one, so at most one per
 * file ever exists.
 */
#include "fleetd/spire/spire_nodes.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/file_read.h"

#define TMP_NODES "." FLEET_SPIRE_NODES_FILE ".tmp"
#define TMP_SERIAL "." FLEET_SPIRE_SERIAL_FILE ".tmp"
#define SERIAL_FILE_MAX 32

struct wctx {
	const char *dir; /* for messages */
	int dfd;
	struct fleet_errctx *ec;
};

/* A system call on dir/name failed: errno says why (ENOMEM: this process
 * is out of memory, not the file system failing). */
static fleet_err io_fail(struct wctx *w, const char *what, const char *name)
{
	int errnum = errno;
	return fleet_errctx_errno(w->ec, errnum == ENOMEM ? FLEET_SPIRE_E_NOMEM : FLEET_SPIRE_E_IO,
				  errnum, "%s %s/%s", what, w->dir, name);
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

/* A temp file left by a writer that died: ours to remove, under the lock. */
static fleet_err remove_stale(struct wctx *w, const char *tmp)
{
	if (unlinkat(w->dfd, tmp, 0) != 0 && errno != ENOENT)
		return io_fail(w, "removing the stale", tmp);
	return FLEET_SPIRE_OK;
}

/* tmp: create, write, fchmod, fsync, close; rename over name; fsync dir. */
static fleet_err atomic_write(struct wctx *w, const char *name, const char *tmp,
					 const char *data, size_t len, mode_t mode)
{
	fleet_err e = remove_stale(w, tmp);
	if (e)
		return e;
	int fd = openat(w->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return io_fail(w, "creating", tmp);
	const char *what = NULL;
	if (!write_all(fd, data, len))
		what = "writing";
	else if (fchmod(fd, mode) != 0)
		what = "setting the mode of";
	else if (fsync(fd) != 0)
		what = "syncing";
	if (close(fd) != 0 && !what)
		what = "closing";
	if (!what && renameat(w->dfd, tmp, w->dfd, name) != 0)
		what = "renaming into place";
	if (what) {
		e = io_fail(w, what, tmp);
		unlinkat(w->dfd, tmp, 0);
		return e;
	}
	if (fsync(w->dfd) != 0)
		return io_fail(w, "syncing the directory of", name);
	return FLEET_SPIRE_OK;
}

/* Read a whole regular file under the directory. 1: read, 0: absent,
 * -1: errno says why (ELOOP: a symlink; EFBIG: over max; EINVAL: not a
 * regular file). fleetd's own output, in the directory whose owner and mode
 * were checked on w->dfd: through the one reader (lib/file_read.h) with no
 * owner or mode rule of its own, since a file that is not ours is replaced,
 * never trusted (docs/files.md). */
static int read_small(struct wctx *w, const char *name, size_t max, char **out, size_t *len)
{
	const struct fleet_file_policy policy = {.what = "fleetd's own", .max_size = max};
	struct fleet_errctx fe;
	struct fleet_buf b;
	*out = NULL;
	*len = 0;
	fb_init(&b);
	fleet_err e = fleet_file_read(w->dfd, name, &policy, &b, &fe);
	if (e == FLEET_OK && fb_put_u8(&b, 0) != FLEET_OK)
		e = FLEET_E_NOMEM;
	if (e != FLEET_OK) {
		fb_free(&b);
		if (e == FLEET_E_NOT_FOUND)
			return 0;
		errno = fleet_file_errno(e, &fe, ENOMEM);
		return -1;
	}
	*out = (char *)b.data; /* malloc'd, NUL-terminated */
	*len = b.len - 1;
	return 1;
}

/* How many times a writer decoded the whole previous file (the tests'
 * witness that an unchanged or ordinary pass never does: a decode holds the
 * file as a jansson document, about 1.2 KB an entry, 60 MB at 50,000). */
static atomic_ulong prev_decodes;

unsigned long fleet_spire_nodes_prev_decodes(void)
{
	return atomic_load(&prev_decodes);
}

/* The reader's policy for the previous file (read_small's, at the file's
 * cap): it must outlive the struct fleet_file opened with it. */
static const struct fleet_file_policy prev_policy = {.what = "fleetd's own",
						     .max_size = FLEET_SPIRE_NODES_MAX_BYTES};

/* The previous file, opened and checked by the one reader
 * (lib/file_read.h) but not read: 1 open, 0 none that may be ours (absent;
 * a symlink, a non-file or an oversized file is not ours: it is replaced,
 * rename replaces the name, never follows it), -1 *e says why. */
static int open_prev(struct wctx *w, struct fleet_file *pf, fleet_err *e)
{
	struct fleet_errctx fe;
	fleet_err r = fleet_file_open(w->dfd, FLEET_SPIRE_NODES_FILE, &prev_policy, pf, &fe);
	if (r == FLEET_OK)
		return 1;
	if (r == FLEET_E_NOT_FOUND)
		return 0;
	errno = fleet_file_errno(r, &fe, ENOMEM);
	if (errno == ELOOP || errno == EINVAL || errno == EFBIG)
		return 0;
	*e = io_fail(w, "reading", FLEET_SPIRE_NODES_FILE);
	return -1;
}

/* Up to n bytes at off; fewer only at the end of the file; -1: errno. */
static ssize_t pread_full(int fd, char *p, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, p + got, n - got, off + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/* The file's bytes from off to its end are exactly want[0..n): read and
 * compared a chunk at a time, so the old file is never held whole beside
 * the new encoding (12 MB at 50,000 devices). 1 equal, 0 not, -1 errno. */
#define COMPARE_CHUNK (64 * 1024)
static int same_bytes(int fd, off_t off, const char *want, size_t n)
{
	char *chunk = malloc(COMPARE_CHUNK);
	if (!chunk) {
		errno = ENOMEM;
		return -1;
	}
	int rc = 1;
	size_t done = 0;
	while (rc == 1) {
		size_t ask = n - done < COMPARE_CHUNK ? n - done : COMPARE_CHUNK;
		/* The last read asks one byte past n: the file must end there. */
		ssize_t k = pread_full(fd, chunk, ask ? ask : 1, off + (off_t)done);
		if (k < 0)
			rc = -1;
		else if (!ask)
			rc = k == 0 ? 1 : 0;
		else if ((size_t)k != ask || memcmp(chunk, want + done, ask) != 0)
			rc = 0;
		if (!ask)
			break;
		done += ask;
	}
	free(chunk);
	return rc;
}

/* The previous file judged whole, as the applier reads it: *serial its
 * serial (0 when the format refuses it: a file the applier would refuse is
 * no previous content, it is replaced) and *same whether its content is
 * f's. */
static fleet_err judge_prev(struct wctx *w, struct fleet_file *pf,
			    const struct fleet_spire_nodes *f, int64_t *serial, bool *same)
{
	struct fleet_spire_nodes old;
	struct fleet_buf b;
	struct fleet_errctx fe;
	*serial = 0;
	*same = false;
	atomic_fetch_add(&prev_decodes, 1);
	fb_init(&b);
	fleet_err r = fleet_file_read_open(pf, &b, &fe);
	if (r != FLEET_OK) {
		errno = fleet_file_errno(r, &fe, ENOMEM);
		if (errno == EFBIG)
			return FLEET_SPIRE_OK; /* grew past the cap: not ours, replaced */
		return io_fail(w, "reading", FLEET_SPIRE_NODES_FILE);
	}
	fleet_err e = fleet_spire_nodes_decode(b.data, b.len, &old, NULL);
	fb_free(&b);
	if (e == FLEET_E_NOMEM)
		return fleet_errctx_msg(w->ec, FLEET_SPIRE_E_NOMEM, "reading %s/%s: out of memory",
					w->dir, FLEET_SPIRE_NODES_FILE);
	if (e == FLEET_OK && old.serial >= 1) {
		*serial = old.serial;
		*same = fleet_spire_nodes_same_content(&old, f);
	}
	fleet_spire_nodes_free(&old);
	return FLEET_SPIRE_OK;
}

static fleet_err read_serial_file(struct wctx *w, int64_t *out)
{
	*out = 0;
	char *buf;
	size_t len;
	int rc = read_small(w, FLEET_SPIRE_SERIAL_FILE, SERIAL_FILE_MAX, &buf, &len);
	if (rc == 0)
		return FLEET_SPIRE_OK;
	if (rc < 0 && errno != ELOOP && errno != EINVAL && errno != EFBIG)
		return io_fail(w, "reading", FLEET_SPIRE_SERIAL_FILE);
	/* Exactly 1..16 digits, no leading zero, then a newline. */
	int64_t v = 0;
	size_t i = 0;
	bool ok = rc == 1 && len >= 2 && buf[len - 1] == '\n' && len - 1 <= 16 && buf[0] != '0';
	for (; ok && i < len - 1; i++) {
		ok = buf[i] >= '0' && buf[i] <= '9';
		v = v * 10 + (buf[i] - '0');
	}
	free(buf);
	if (!ok || v > FLEET_SPIRE_SERIAL_MAX)
		return fleet_errctx_msg(w->ec, FLEET_SPIRE_E_STATE,
					"%s/%s is not a serial fleetd wrote; refusing to guess one "
					"(restore it, or remove it to continue from %s)",
					w->dir, FLEET_SPIRE_SERIAL_FILE, FLEET_SPIRE_NODES_FILE);
	*out = v;
	return FLEET_SPIRE_OK;
}

static fleet_err write_serial_file(struct wctx *w, int64_t v)
{
	char s[32];
	int n = snprintf(s, sizeof(s), "%lld\n", (long long)v);
	return atomic_write(w, FLEET_SPIRE_SERIAL_FILE, TMP_SERIAL, s, (size_t)n, 0644);
}

/* Open, check and lock the directory. */
static fleet_err open_dir(struct wctx *w)
{
	w->dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->dfd < 0)
		return fleet_errctx_errno(w->ec, FLEET_SPIRE_E_IO, errno, "opening %s", w->dir);
	struct stat sb;
	if (fstat(w->dfd, &sb) != 0)
		return fleet_errctx_errno(w->ec, FLEET_SPIRE_E_IO, errno, "stat %s", w->dir);
	if ((sb.st_uid != geteuid() && sb.st_uid != 0) || (sb.st_mode & 022))
		return fleet_errctx_msg(
			w->ec, FLEET_SPIRE_E_UNSAFE,
			"%s must be owned by this user (or root) and not writable by "
			"group or others (mode %04o, owner %u)",
			w->dir, (unsigned)(sb.st_mode & 07777), (unsigned)sb.st_uid);
	while (flock(w->dfd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return fleet_errctx_msg(w->ec, FLEET_SPIRE_E_BUSY,
						"another writer holds the lock on %s", w->dir);
		return fleet_errctx_errno(w->ec, FLEET_SPIRE_E_IO, errno, "locking %s", w->dir);
	}
	return FLEET_SPIRE_OK;
}

/* The file doc's content makes, with this serial and time. The lists are
 * the build's own (not copied): a view, never freed. */
static struct fleet_spire_nodes file_of(const struct fleet_spire_doc *doc, int64_t serial,
					time_t now)
{
	struct fleet_spire_nodes f = {.version = FLEET_SPIRE_NODES_VERSION,
				      .serial = serial,
				      .generated_at = (int64_t)now,
				      .eligible = doc->eligible,
				      .n_eligible = doc->n_eligible,
				      .revoked = doc->revoked,
				      .n_revoked = doc->n_revoked};
	memcpy(f.trust_domain, doc->trust_domain, sizeof(f.trust_domain));
	return f;
}

/*
 * Whether the file there already holds f's content, and its serial, mostly
 * without decoding it. The writer writes only the canonical form, in which
 * equal content is equal bytes, so a file it wrote holds f's content exactly
 * when its bytes after the canonical head (serial and generated_at) are
 * those of f's encoding (text, tlen: f encoded with any serial). Otherwise
 * the old file is decoded whole (judge_prev) only when the answer could
 * depend on it: when its head is not the canonical one (a file another
 * writer made, which may hold the same content in another order or layout,
 * or be damaged), or when its serial is past the serial file's (which is
 * written first, so that is a lost or stale serial file, and the file's
 * serial counts only if the format reads the file). A canonical head with
 * a serial the serial file already covers is replaced without a decode: its
 * serial cannot raise the next one, and different bytes under a canonical
 * head are different content, or at worst the same content in a layout
 * fleetd never writes, rewritten canonically under the next serial.
 * *same: unchanged; *serial: the old serial that counts (0: none).
 */
static fleet_err compare_prev(struct wctx *w, struct fleet_file *pf, const char *text,
			      size_t tlen, const struct fleet_spire_nodes *f, int64_t kept,
			      bool *same, int64_t *serial)
{
	int64_t os = 0, ot = 0, ns, nt;
	size_t ob = 0, nb = 0;
	char head[FLEET_SPIRE_HEAD_SCAN];
	*same = false;
	*serial = 0;
	if (!fleet_spire_nodes_head(text, tlen, &ns, &nt, &nb))
		return fleet_errctx_msg(w->ec, FLEET_SPIRE_E_INVALID,
					"the encoder's head is not the canonical one");
	ssize_t hn = pread_full(pf->fd, head, sizeof(head), 0);
	if (hn < 0)
		return io_fail(w, "reading", FLEET_SPIRE_NODES_FILE);
	bool canon = fleet_spire_nodes_head(head, (size_t)hn, &os, &ot, &ob);
	if (canon && os >= 1 && pf->st.st_size >= 0 && (size_t)pf->st.st_size - ob == tlen - nb) {
		int eq = same_bytes(pf->fd, (off_t)ob, text + nb, tlen - nb);
		if (eq < 0)
			return io_fail(w, "reading", FLEET_SPIRE_NODES_FILE);
		if (eq) {
			*same = true;
			*serial = os;
			return FLEET_SPIRE_OK;
		}
	}
	if (canon && os <= kept)
		return FLEET_SPIRE_OK;
	return judge_prev(w, pf, f, serial, same);
}

static fleet_err encode_file(struct wctx *w, const struct fleet_spire_nodes *f, char **text,
			     size_t *tlen)
{
	fleet_err fe = fleet_spire_nodes_encode(f, text, tlen, w->ec);
	if (!fe)
		return FLEET_SPIRE_OK;
	return fleet_errctx_wrap(w->ec,
				 fe == FLEET_E_NOMEM ? FLEET_SPIRE_E_NOMEM : FLEET_SPIRE_E_INVALID,
				 "the document could not be written: ", NULL);
}

static fleet_err write_locked(struct wctx *w, const struct fleet_spire_doc *doc,
					 time_t now, bool *changed, int64_t *serial)
{
	struct fleet_file pf = {.fd = -1};
	char *text = NULL;
	size_t tlen = 0;
	int64_t kept = 0, prev = 0;
	bool same = false;
	fleet_err e = FLEET_SPIRE_OK;
	if ((e = remove_stale(w, TMP_NODES)) || (e = remove_stale(w, TMP_SERIAL)))
		return e;
	int have = open_prev(w, &pf, &e);
	if (have < 0)
		return e;
	if ((e = read_serial_file(w, &kept)))
		goto out;
	struct fleet_spire_nodes f = file_of(doc, 0, now);
	if (have) {
		if ((e = encode_file(w, &f, &text, &tlen)) ||
		    (e = compare_prev(w, &pf, text, tlen, &f, kept, &same, &prev)))
			goto out;
		fleet_file_close(&pf);
	}
	if (same) {
		/* Unchanged: the file stays as it is. The serial file is put
		 * back in step if it was lost or fell behind. */
		if (kept < prev && (e = write_serial_file(w, prev)))
			goto out;
		*changed = false;
		*serial = prev;
		goto out;
	}
	int64_t next = (prev > kept ? prev : kept) + 1;
	if (next > FLEET_SPIRE_SERIAL_MAX) {
		e = fleet_errctx_msg(w->ec, FLEET_SPIRE_E_STATE, "the serial is spent");
		goto out;
	}
	/* Encoded again with its serial (the comparison's encoding had 0):
	 * once more the encoder's whole output, never bytes patched in place. */
	free(text);
	text = NULL;
	f.serial = next;
	if ((e = encode_file(w, &f, &text, &tlen)))
		goto out;
	/* The serial file first: it never falls behind the file. */
	if ((e = write_serial_file(w, next)))
		goto out;
	e = atomic_write(w, FLEET_SPIRE_NODES_FILE, TMP_NODES, text, tlen, 0644);
	if (!e) {
		*changed = true;
		*serial = next;
	}
out:
	if (pf.fd >= 0)
		fleet_file_close(&pf);
	free(text);
	return e;
}

fleet_err fleet_spire_nodes_write(const char *dir, const struct fleet_spire_doc *doc, time_t now,
				  bool *changed, int64_t *serial, struct fleet_errctx *ec)
{
	bool ch = false;
	int64_t sv = 0;
	if (ec)
		memset(ec, 0, sizeof(*ec));
	if (changed)
		*changed = false;
	if (serial)
		*serial = 0;
	if (!dir || !*dir || !doc)
		return fleet_errctx_msg(ec, FLEET_SPIRE_E_INVALID,
					"a directory and a document are required");
	/* The format's own rules and limits, the ones the applier reads by:
	 * a document it would refuse is never put in place. */
	struct fleet_spire_nodes f = file_of(doc, 0, now);
	fleet_err fe = fleet_spire_nodes_check(&f, ec);
	if (fe)
		return fleet_errctx_wrap(
			ec, fe == FLEET_E_NOMEM ? FLEET_SPIRE_E_NOMEM : FLEET_SPIRE_E_INVALID,
			"refusing to write a document the format cannot carry: ", NULL);
	struct wctx w = {.dir = dir, .dfd = -1, .ec = ec};
	fleet_err e = open_dir(&w);
	if (!e)
		e = write_locked(&w, doc, now, &ch, &sv);
	if (w.dfd >= 0)
		close(w.dfd); /* releases the lock */
	if (!e) {
		if (changed)
			*changed = ch;
		if (serial)
			*serial = sv;
	}
	return e;
}

fleet_err fleet_spire_nodes_pass(struct fleet_inventory *inv, struct fleet_store *st,
				 const char *trust_domain, const char *dir, time_t now,
				 struct fleet_spire_doc *doc, bool *changed, int64_t *serial,
				 struct fleet_errctx *ec)
{
	if (changed)
		*changed = false;
	if (serial)
		*serial = 0;
	fleet_err e = fleet_spire_nodes_build(inv, st, trust_domain, now, doc, ec);
	if (e)
		return e; /* nothing is written: the previous file stays */
	return fleet_spire_nodes_write(dir, doc, now, changed, serial, ec);
}
