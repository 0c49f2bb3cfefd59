/*
 * verdict_log.c: verdicts.jsonl (see verdict_log.h).
 */
#include "fleetd/store/verdict_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

struct fleet_vlog {
	pthread_mutex_t mu;
	int dfd;
	int fd;
	uint64_t size;
	uint64_t max_bytes;
	unsigned max_files;
	char dir[PATH_MAX];
};

/* A capped, ASCII-only copy of s as a JSON string (jansson escapes the
 * control characters). NULL or "" becomes JSON null when null_ok. */
static json_t *capped(const char *s, bool null_ok)
{
	if (!s || (!s[0] && null_ok))
		return null_ok ? json_null() : json_string("");
	char buf[FLEET_VLOG_STR_MAX + 1];
	size_t i;
	for (i = 0; s[i] && i < FLEET_VLOG_STR_MAX; i++)
		buf[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	if (s[i])
		memcpy(buf + FLEET_VLOG_STR_MAX - 3, "...", 3);
	buf[i] = '\0';
	return json_string(buf);
}

static void rfc3339(time_t t, char out[32])
{
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "1970-01-01T00:00:00Z");
}

char *fleet_vlog_format(const struct fleet_vlog_record *r)
{
	char when[32];
	rfc3339(r->time, when);
	json_t *reasons = json_array();
	size_t shown = r->n_reasons;
	if (shown > FLEET_VLOG_MAX_REASONS)
		shown = FLEET_VLOG_MAX_REASONS - 1;
	for (size_t i = 0; reasons && r->reasons && i < shown; i++)
		json_array_append_new(reasons, capped(r->reasons[i], false));
	if (reasons && shown < r->n_reasons) {
		char more[40];
		snprintf(more, sizeof(more), "+%zu more", r->n_reasons - shown);
		json_array_append_new(reasons, json_string(more));
	}
	json_t *o = json_object();
	if (!o || !reasons) {
		json_decref(o);
		json_decref(reasons);
		return NULL;
	}
	if (r->id > 0)
		json_object_set_new(o, "id", json_integer((json_int_t)r->id));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "device", capped(r->device, true));
	json_object_set_new(o, "serial", capped(r->serial, false));
	json_object_set_new(o, "session", capped(r->session, false));
	json_object_set_new(o, "result", json_string(r->pass ? "pass" : "fail"));
	json_object_set_new(o, "reasons", reasons);
	json_object_set_new(o, "ek_hash", capped(r->ek_hash, true));
	json_object_set_new(o, "ek_hash_ecc", capped(r->ek_hash_ecc, true));
	char *body = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!body)
		return NULL;
	size_t len = strlen(body);
	char *line = realloc(body, len + 2);
	if (!line) {
		free(body);
		return NULL;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	return line;
}

static int open_current(struct fleet_vlog *log)
{
	return openat(log->dfd, FLEET_VLOG_FILE,
		      O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
}

/* Cut an unfinished last line (a crash between write and its end). */
static fleet_err trim_partial(struct fleet_vlog *log, struct fleet_errctx *ec)
{
	int rfd = openat(log->dfd, FLEET_VLOG_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot read %s/%s", log->dir,
					  FLEET_VLOG_FILE);
	char buf[4096];
	off_t end = (off_t)log->size, keep = 0;
	/* Walk back a block at a time to the last newline. */
	while (end > 0) {
		off_t start = end > (off_t)sizeof(buf) ? end - (off_t)sizeof(buf) : 0;
		ssize_t r = pread(rfd, buf, (size_t)(end - start), start);
		if (r != end - start) {
			close(rfd);
			return fleet_errctx_msg(ec, FLEET_E_IO, "cannot read %s/%s", log->dir,
						FLEET_VLOG_FILE);
		}
		ssize_t i = r - 1;
		while (i >= 0 && buf[i] != '\n')
			i--;
		if (i >= 0) {
			keep = start + i + 1;
			break;
		}
		end = start;
	}
	close(rfd);
	if (keep == (off_t)log->size)
		return FLEET_OK;
	if (ftruncate(log->fd, keep) != 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno,
					  "cannot cut the unfinished line of %s/%s", log->dir,
					  FLEET_VLOG_FILE);
	log->size = (uint64_t)keep;
	return FLEET_OK;
}

/* Open the current file, learn its size, cut an unfinished last line. */
static fleet_err reopen(struct fleet_vlog *log, struct fleet_errctx *ec)
{
	struct stat sb;
	if ((log->fd = open_current(log)) < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot open %s/%s", log->dir,
					  FLEET_VLOG_FILE);
	fleet_err e = FLEET_OK;
	if (fstat(log->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
		e = fleet_errctx_msg(ec, FLEET_E_IO, "%s/%s is not a regular file", log->dir,
				     FLEET_VLOG_FILE);
	else {
		log->size = (uint64_t)sb.st_size;
		e = trim_partial(log, ec);
	}
	if (e) {
		close(log->fd);
		log->fd = -1;
	}
	return e;
}

fleet_err fleet_vlog_open(const char *dir, uint64_t max_bytes, unsigned max_files,
			  struct fleet_vlog **out, struct fleet_errctx *ec)
{
	*out = NULL;
	if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"the verdict log directory must be an absolute path");
	if (max_bytes < FLEET_VLOG_MIN_BYTES || max_files < 1 || max_files > FLEET_VLOG_MAX_FILES)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG,
					"max_bytes must be at least %u and max_files 1 to %u",
					FLEET_VLOG_MIN_BYTES, FLEET_VLOG_MAX_FILES);
	struct fleet_vlog *log = calloc(1, sizeof(*log));
	if (!log)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
	log->fd = -1;
	log->dfd = -1;
	log->max_bytes = max_bytes;
	log->max_files = max_files;
	memcpy(log->dir, dir, strlen(dir) + 1);
	pthread_mutex_init(&log->mu, NULL);
	fleet_err e = FLEET_OK;
	log->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (log->dfd < 0) {
		e = fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot open %s", dir);
		goto fail;
	}
	if ((e = reopen(log, ec)))
		goto fail;
	*out = log;
	return FLEET_OK;
fail:
	fleet_vlog_close(log);
	return e;
}

static fleet_err rotate(struct fleet_vlog *log, struct fleet_errctx *ec)
{
	char from[64], to[64];
	snprintf(to, sizeof(to), "%s.%u", FLEET_VLOG_FILE, log->max_files);
	if (unlinkat(log->dfd, to, 0) != 0 && errno != ENOENT)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot remove %s/%s", log->dir, to);
	for (unsigned i = log->max_files; i > 1; i--) {
		snprintf(from, sizeof(from), "%s.%u", FLEET_VLOG_FILE, i - 1);
		snprintf(to, sizeof(to), "%s.%u", FLEET_VLOG_FILE, i);
		/* A gap (a crash mid-rotation) is skipped, not an error. */
		if (renameat(log->dfd, from, log->dfd, to) != 0 && errno != ENOENT)
			return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot rename %s/%s",
						  log->dir, from);
	}
	snprintf(to, sizeof(to), "%s.1", FLEET_VLOG_FILE);
	if (renameat(log->dfd, FLEET_VLOG_FILE, log->dfd, to) != 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot rename %s/%s", log->dir,
					  FLEET_VLOG_FILE);
	int fd = open_current(log);
	if (fd < 0)
		return fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot start a new %s/%s",
					  log->dir, FLEET_VLOG_FILE);
	close(log->fd);
	log->fd = fd;
	log->size = 0;
	fsync(log->dfd);
	return FLEET_OK;
}

fleet_err fleet_vlog_append(struct fleet_vlog *log, const struct fleet_vlog_record *r,
			    struct fleet_errctx *ec)
{
	char *line = fleet_vlog_format(r);
	if (!line)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory formatting a verdict line");
	size_t len = strlen(line);
	fleet_err e = FLEET_OK;
	pthread_mutex_lock(&log->mu);
	if (log->fd < 0 && (e = reopen(log, ec)))
		goto out;
	if (log->size > 0 && log->size + len > log->max_bytes && (e = rotate(log, ec)))
		goto out;
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(log->fd, line + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int saved = errno;
			/* Never leave half a line: the next line would join it. */
			if (done && ftruncate(log->fd, (off_t)log->size) != 0) {
				close(log->fd);
				log->fd = -1; /* reopened (and trimmed) next time */
			}
			e = w < 0 ? fleet_errctx_errno(ec, FLEET_E_IO, saved, "cannot write %s/%s",
						       log->dir, FLEET_VLOG_FILE)
				  : fleet_errctx_msg(ec, FLEET_E_IO, "cannot write %s/%s: no progress",
						     log->dir, FLEET_VLOG_FILE);
			goto out;
		}
		done += (size_t)w;
	}
	log->size += len;
	if (fdatasync(log->fd) != 0)
		e = fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot sync %s/%s", log->dir,
				       FLEET_VLOG_FILE);
out:
	pthread_mutex_unlock(&log->mu);
	free(line);
	return e;
}

void fleet_vlog_close(struct fleet_vlog *log)
{
	if (!log)
		return;
	if (log->fd >= 0)
		close(log->fd);
	if (log->dfd >= 0)
		close(log->dfd);
	pthread_mutex_destroy(&log->mu);
	free(log);
}

/* A line is at most a few KiB (every string capped, at most
 * FLEET_VLOG_MAX_REASONS reasons): the tail read covers the longest. */
#define LAST_LINE_MAX 16384

/* The id of the last line of dir/name. *found false for an empty or
 * missing file. */
static fleet_err file_last_id(struct fleet_vlog *log, const char *name, int64_t *id, bool *found,
			      struct fleet_errctx *ec)
{
	*found = false;
	*id = 0;
	int fd = openat(log->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? FLEET_OK
				       : fleet_errctx_errno(ec, FLEET_E_IO, errno, "cannot read %s/%s",
							    log->dir, name);
	struct stat sb;
	char *buf = malloc(LAST_LINE_MAX);
	fleet_err e = FLEET_OK;
	if (!buf) {
		e = fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory");
		goto out;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		e = fleet_errctx_msg(ec, FLEET_E_IO, "%s/%s is not a regular file", log->dir, name);
		goto out;
	}
	off_t start = sb.st_size > LAST_LINE_MAX ? sb.st_size - LAST_LINE_MAX : 0;
	ssize_t r = pread(fd, buf, (size_t)(sb.st_size - start), start);
	if (r != sb.st_size - start) {
		e = fleet_errctx_msg(ec, FLEET_E_IO, "cannot read %s/%s", log->dir, name);
		goto out;
	}
	/* the last complete line: from after the newline before the final one */
	ssize_t end = r;
	while (end > 0 && buf[end - 1] != '\n')
		end--; /* an unfinished tail (trimmed on open) is not a line */
	if (end == 0)
		goto out;
	ssize_t b = end - 1;
	while (b > 0 && buf[b - 1] != '\n')
		b--;
	if (b == 0 && start > 0) {
		e = fleet_errctx_msg(ec, FLEET_E_IO, "%s/%s: the last line is longer than %d bytes",
				     log->dir, name, LAST_LINE_MAX);
		goto out;
	}
	json_error_t je;
	json_t *o = json_loadb(buf + b, (size_t)(end - 1 - b), 0, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		e = fleet_errctx_msg(ec, FLEET_E_IO, "%s/%s: the last line is not a verdict: %s",
				     log->dir, name, je.text);
		goto out;
	}
	json_t *v = json_object_get(o, "id");
	*found = true;
	if (json_is_integer(v) && json_integer_value(v) > 0)
		*id = (int64_t)json_integer_value(v);
	json_decref(o);
out:
	free(buf);
	close(fd);
	return e;
}

fleet_err fleet_vlog_last_id(struct fleet_vlog *log, int64_t *id, bool *found,
			     struct fleet_errctx *ec)
{
	fleet_err e;
	pthread_mutex_lock(&log->mu);
	e = file_last_id(log, FLEET_VLOG_FILE, id, found, ec);
	for (unsigned i = 1; !e && !*found && i <= log->max_files; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s.%u", FLEET_VLOG_FILE, i);
		e = file_last_id(log, name, id, found, ec);
	}
	pthread_mutex_unlock(&log->mu);
	return e;
}
