/*
 * journal.c: structured entries to journald, or one logfmt-like line on
 * stderr (journal.h).
 *
 * Every entry is assembled on the stack in one arena, "NAME=value" strings
 * the journal takes as iovecs; the stderr line is built from the same
 * escaped values and written with a single write(2), so lines from
 * concurrent threads never interleave.
 */
#include "fleetd/obs/journal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "fleetd/obs/journal_impl.h"

#define MAX_FIELDS 24   /* caller's fields per entry; more are dropped */
#define MAX_VALUE 1024  /* bytes of one escaped value */
#define MAX_MESSAGE 2048
#define ARENA 16384
#define LINE 4096
#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static _Atomic int g_target = FLEET_LOG_JOURNAL;
static _Atomic int g_max_priority = LOG_INFO;
static atomic_flag g_fallback_noted = ATOMIC_FLAG_INIT;
static const char *_Atomic g_identifier = "fleetd";

fleet_err fleet_log_target_parse(const char *s, enum fleet_log_target *out)
{
	if (!s || !out)
		return FLEET_E_INVALID_ARG;
	if (strcmp(s, "journal") == 0)
		*out = FLEET_LOG_JOURNAL;
	else if (strcmp(s, "stderr") == 0)
		*out = FLEET_LOG_STDERR;
	else
		return FLEET_E_INVALID_ARG;
	return FLEET_OK;
}

void fleet_log_set_target(enum fleet_log_target t)
{
	atomic_store(&g_target, t == FLEET_LOG_STDERR ? FLEET_LOG_STDERR : FLEET_LOG_JOURNAL);
}

enum fleet_log_target fleet_log_get_target(void)
{
	return (enum fleet_log_target)atomic_load(&g_target);
}

void fleet_log_set_identifier(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 31)
		return;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
	      s[i] == '.'))
			return;
	atomic_store(&g_identifier, s);
}

void fleet_log_set_max_priority(int priority)
{
	if (priority >= LOG_EMERG && priority <= LOG_DEBUG)
		atomic_store(&g_max_priority, priority);
}

/* FLEET_[A-Z0-9_]+, at most 64 bytes: what journald accepts, in our space. */
static bool field_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n <= 6 || n > 64 || strncmp(s, "FLEET_", 6) != 0)
		return false;
	for (size_t i = 6; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* [a-z0-9.-]+, at most 64 bytes: the dot for the spec's dotted audit events
 * (security.join.refused). */
static bool event_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
	      s[i] == '.'))
			return false;
	return true;
}

struct entry {
	char arena[ARENA];
	size_t used;
	struct iovec iov[MAX_FIELDS + 8];
	const char *value[MAX_FIELDS + 8]; /* each iov's value, inside arena */
	size_t n;
};

/* Append "NAME=value" (value escaped, at most cap bytes) as one iovec. */
static void entry_add(struct entry *e, const char *name, const char *value, size_t cap)
{
	size_t nl = strlen(name);
	size_t room = ARENA - e->used;
	if (e->n == sizeof(e->iov) / sizeof(e->iov[0]) || room < nl + 2)
		return;
	char *p = e->arena + e->used;
	memcpy(p, name, nl);
	p[nl] = '=';
	if (cap > room - nl - 1)
		cap = room - nl - 1;
	fleet_log_defang(value, p + nl + 1, cap);
	size_t len = nl + 1 + strlen(p + nl + 1);
	e->iov[e->n] = (struct iovec){.iov_base = p, .iov_len = len};
	e->value[e->n] = p + nl + 1;
	e->n++;
	e->used += len + 1;
}

static const char *priority_name(int p)
{
	static const char *const names[] = {"emerg",   "alert",  "crit", "err",
					    "warning", "notice", "info", "debug"};
	return names[p];
}

/* Append s to line, quoted (with \ and " escaped) when it is empty or holds
 * a space, a quote, an equals sign or a backslash. */
static void line_put_value(char *line, size_t *o, const char *s)
{
	bool quote = !*s || strpbrk(s, " \"=\\") != NULL;
	if (quote && *o < LINE)
		line[(*o)++] = '"';
	for (; *s && *o < LINE - 2; s++) {
		if (quote && (*s == '"' || *s == '\\'))
			line[(*o)++] = '\\';
		line[(*o)++] = *s;
	}
	if (quote && *o < LINE)
		line[(*o)++] = '"';
}

static void line_put(char *line, size_t *o, const char *s)
{
	size_t n = strlen(s);
	if (n > LINE - *o)
		n = LINE - *o;
	memcpy(line + *o, s, n);
	*o += n;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w, n -= (size_t)w;
	}
}

/* iov[0] MESSAGE, [1] PRIORITY, [2] SYSLOG_IDENTIFIER, [3] FLEET_EVENT,
 * [4..6] CODE_*, then the caller's fields. */
static void write_stderr_line(const struct entry *e, int priority)
{
	char line[LINE + 1];
	size_t o = 0;
	char ts[32] = "";
	struct timespec now;
	struct tm tm;
	if (clock_gettime(CLOCK_REALTIME, &now) == 0 && gmtime_r(&now.tv_sec, &tm))
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	char head[96];
	snprintf(head, sizeof(head), "%s %s[%ld] %s event=", ts, atomic_load(&g_identifier),
		 (long)getpid(),
		 priority_name(priority));
	line_put(line, &o, head);
	line_put(line, &o, e->value[3]);
	for (size_t i = 7; i < e->n; i++) {
		line_put(line, &o, " ");
		size_t nl = (size_t)((const char *)e->value[i] - (const char *)e->iov[i].iov_base) - 1;
		if (o + nl < LINE) {
			memcpy(line + o, e->iov[i].iov_base, nl);
			o += nl;
		}
		line_put(line, &o, "=");
		line_put_value(line, &o, e->value[i]);
	}
	line_put(line, &o, " msg=");
	line_put_value(line, &o, e->value[0]);
	if (o > LINE - 1)
		o = LINE - 1;
	line[o++] = '\n';
	write_all(STDERR_FILENO, line, o);
}

void fleet_log_at(const char *file, int line, const char *func, int priority, const char *event,
		  const struct fleet_log_field *fields, size_t n, const char *fmt, ...)
{
	if (priority < LOG_EMERG || priority > LOG_DEBUG)
		priority = LOG_ERR;
	if (priority > atomic_load(&g_max_priority))
		return;

	char msg[MAX_MESSAGE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	size_t dropped = 0;
	for (size_t i = 0; i < n; i++)
		if (fields[i].value && !field_name_ok(fields[i].name))
			dropped++;
	if (n > MAX_FIELDS)
		dropped += n - MAX_FIELDS;
	if (dropped) {
		size_t ml = strlen(msg);
		snprintf(msg + ml, sizeof(msg) - ml, " (%zu field(s) dropped: bad name or too many)",
			 dropped);
	}

	static _Thread_local struct entry e; /* 20 KiB: off the handler's stack */
	e.used = 0, e.n = 0;
	char num[24];
	entry_add(&e, "MESSAGE", msg, MAX_MESSAGE);
	snprintf(num, sizeof(num), "%d", priority);
	entry_add(&e, "PRIORITY", num, sizeof(num));
	entry_add(&e, "SYSLOG_IDENTIFIER", atomic_load(&g_identifier), 32);
	entry_add(&e, "FLEET_EVENT", event_ok(event) ? event : "invalid-event-name", 80);
	entry_add(&e, "CODE_FILE", file ? file : "", 256);
	snprintf(num, sizeof(num), "%d", line);
	entry_add(&e, "CODE_LINE", num, sizeof(num));
	entry_add(&e, "CODE_FUNC", func ? func : "", 128);
	for (size_t i = 0; i < n && i < MAX_FIELDS; i++)
		if (fields[i].value && field_name_ok(fields[i].name))
			entry_add(&e, fields[i].name, fields[i].value, MAX_VALUE);

	if (atomic_load(&g_target) == FLEET_LOG_JOURNAL) {
		/* sd_journal_sendv reports success when journald's socket is
		 * missing (it drops the entry on purpose), so look first. */
		struct stat st;
		int r = stat(JOURNAL_SOCKET, &st) == 0 && S_ISSOCK(st.st_mode) ? 0 : -ENOENT;
		if (r == 0)
			r = sd_journal_sendv(e.iov, (int)e.n);
		if (r >= 0)
			return;
		if (!atomic_flag_test_and_set(&g_fallback_noted)) {
			char note[160];
			int k = snprintf(note, sizeof(note),
					 "%s: journald did not take an entry (%s); "
					 "writing entries to stderr\n",
					 atomic_load(&g_identifier), strerror(-r));
			if (k > 0)
				write_all(STDERR_FILENO, note,
					  (size_t)k < sizeof(note) ? (size_t)k : sizeof(note) - 1);
		}
	}
	write_stderr_line(&e, priority);
}
