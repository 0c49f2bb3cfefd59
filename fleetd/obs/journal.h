/*
 * journal.h: fleetd's structured log.
 *
 * Each entry goes to journald through sd_journal_sendv with MESSAGE,
 * PRIORITY, SYSLOG_IDENTIFIER=fleetd, FLEET_EVENT (a stable, lowercase,
 * hyphenated event name operators filter on: journalctl FLEET_EVENT=...)
 * and any FLEET_* fields the caller adds (FLEET_DEVICE, FLEET_SERIAL,
 * FLEET_SESSION, FLEET_REASON, FLEET_EK_HASH, ...). With log_target=stderr,
 * or when journald does not take the entry, the same entry is written to
 * stderr as one logfmt-like line in a single write(2):
 *
 *   2026-11-30T06:30:00Z fleetd[812] warning event=intake-refused
 *     FLEET_SERIAL="SN 1" FLEET_REASON=ek-mismatch msg="refused intake"
 *
 * Claimed values: anything a machine sent (serial, UUID, BIOS version, LLDP
 * fields, ...) goes through fleet_log_claimed() before it reaches a field or
 * a message. The logger escapes control characters in every value and in
 * the message once more, so a value that slipped past cannot forge a line,
 * but it does not cap to FLEET_LOG_CLAIMED_MAX: that is the caller's job at
 * the point where it knows a value is claimed.
 */
#ifndef FLEET_OBS_JOURNAL_H
#define FLEET_OBS_JOURNAL_H

#include <stddef.h>
#include <syslog.h>

#include "lib/fleet_err.h"

enum fleet_log_target {
	FLEET_LOG_JOURNAL = 0, /* journald; stderr for an entry it does not take */
	FLEET_LOG_STDERR,
};

/* "journal" or "stderr" (the config's log_target); FLEET_E_INVALID_ARG else. */
fleet_err fleet_log_target_parse(const char *s, enum fleet_log_target *out);
/* Where entries go from now on; the default is FLEET_LOG_JOURNAL. */
void fleet_log_set_target(enum fleet_log_target t);
enum fleet_log_target fleet_log_get_target(void);

/* SYSLOG_IDENTIFIER, and the name on a stderr line: "fleetd" unless set
 * (fleetctl sets "fleetctl"). s must outlive the program's logging; at most
 * 31 bytes of [a-z0-9-] are taken, anything else is ignored. */
void fleet_log_set_identifier(const char *s);

/* Entries below this priority (numerically greater) are dropped; default
 * LOG_INFO. */
void fleet_log_set_max_priority(int priority);

struct fleet_log_field {
	const char *name;  /* FLEET_[A-Z0-9_]+, at most 64 bytes */
	const char *value; /* NULL: the field is left out */
};

/*
 * Log one entry. priority is a syslog priority (LOG_ERR, LOG_WARNING, ...);
 * event the stable event name ([a-z0-9.-]+); fields n name/value pairs; fmt
 * the human message. A field whose name is not FLEET_[A-Z0-9_]+ is dropped
 * (and said so in the message) rather than sent under a name journald
 * would reject. Never fails: logging must not stop the daemon.
 */
void fleet_log_at(const char *file, int line, const char *func, int priority, const char *event,
		  const struct fleet_log_field *fields, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

/* fleet_log(priority, event, fields, n, fmt, ...): the rest is passed on
 * whole so FLEET_LOG_FIELDS can stand for the two arguments fields, n. */
#define fleet_log(priority, event, ...) \
	fleet_log_at(__FILE__, __LINE__, __func__, priority, event, __VA_ARGS__)

/* fleet_log(LOG_WARNING, "intake-refused",
 *           FLEET_LOG_FIELDS({"FLEET_SERIAL", serial}, {"FLEET_REASON", reason}),
 *           "refused intake"); */
#define FLEET_LOG_FIELDS(...)                                \
	(const struct fleet_log_field[]){__VA_ARGS__},       \
		(sizeof((const struct fleet_log_field[]){__VA_ARGS__}) / \
		 sizeof(struct fleet_log_field))

/* ---- claimed values ------------------------------------------------------ */

/* A claimed value shows at most this many characters (an escaped byte is
 * one character). */
#define FLEET_LOG_CLAIMED_MAX 64
/* An out buffer this large always holds the capped value, escaped, with its
 * truncation mark: 64 * 4 bytes + "[+<20 digits>]" + NUL. */
#define FLEET_LOG_CLAIMED_BUF 288

/*
 * Make a machine-supplied value safe to log: valid, printable UTF-8 passes
 * as is; a backslash becomes "\\"; every other byte that is a control
 * character (C0, DEL, the C1 range U+0080..U+009F), part of invalid UTF-8
 * (stray continuation, overlong, surrogate, beyond U+10FFFF, truncated
 * sequence), or a character that breaks a line or acts unseen when
 * displayed (U+2028, U+2029, and every format character, general category
 * Cf: the bidi controls, zero-width characters, U+00AD, U+FEFF, the tag
 * characters, ...; lib/sanitize.c lists them) becomes "\xNN" per byte. At
 * most FLEET_LOG_CLAIMED_MAX characters are shown; if more of the value is
 * left (or out is too small to hold more), "[+N]" follows, N the number of
 * input bytes not shown. The output never ends in half an escape or half a
 * UTF-8 sequence. This is lib/sanitize.h's fleet_sanitize with the cap.
 *
 * out is always NUL-terminated when cap > 0; s NULL reads as "(null)".
 * Returns out, so the call can sit inside a field list.
 */
const char *fleet_log_claimed(const char *s, char out[], size_t cap);
/* The same for len bytes that may hold NULs (escaped as \x00). */
const char *fleet_log_claimed_n(const void *p, size_t len, char out[], size_t cap);

/* The escaping of fleet_log_claimed_n without its 64-character cap, for
 * values that are fleetd's own but may still hold anything (a library's
 * error text): at most cap - 1 bytes, "[+N]" when cut. */
const char *fleet_log_escape_n(const void *p, size_t len, char out[], size_t cap);

#endif
