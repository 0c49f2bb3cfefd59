/*
 * verdict_log.h: verdicts.jsonl, one JSON line per verdict, for operators
 * and log shippers. The store's verdicts table is the source of truth; the
 * daemon inserts the row first and appends the line second, so a failed
 * append loses a copy, never the verdict, and is reported to the caller
 * (which journals it and counts it).
 *
 * A line:
 *   {"id":42,"time":"2026-11-30T06:30:00Z","device":"w1","serial":"ABC","session":"0a1b..",
 *    "result":"fail","reasons":["pcr7-authority"],"ek_hash":"..","ek_hash_ecc":null}
 *
 * Every string is capped (FLEET_VLOG_STR_MAX bytes, truncated ones end in
 * "..."), bytes outside ASCII become '?', and control characters are
 * escaped by jansson (\n, \u001b, ...), so one verdict is always exactly one
 * line. At most FLEET_VLOG_MAX_REASONS reasons are written; a longer list
 * ends in "+N more".
 *
 * Durability: each line is written with one write(2) on an O_APPEND
 * descriptor and then fdatasync'ed. Verdicts come at the rate machines
 * attest (about one per node per hour), so the sync costs nothing that
 * matters, and a line the caller was told is written survives a power cut.
 * A write that fails part-way is cut back off the file (ftruncate), so the
 * file never holds half a line.
 *
 * Reconciliation: "id" is the store's verdict id. A crash between the
 * store's commit and the append loses the line, never the verdict: on
 * start the daemon appends every store verdict whose id is above the
 * newest line's (fleet_vlog_reconcile), so the two hold the same verdicts
 * before fleetd serves anything.
 *
 * Rotation: before a line would take the file past max_bytes, the file is
 * renamed to .1 (.1 to .2, and so on up to .max_files; the oldest is
 * removed), each step a rename(2), and a new file started; the directory is
 * then fsync'ed. Every line is in exactly one file at every moment.
 */
#ifndef FLEETD_VERDICT_LOG_H
#define FLEETD_VERDICT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/fleet_err.h"

#define FLEET_VLOG_STR_MAX 128
#define FLEET_VLOG_MAX_REASONS 32
#define FLEET_VLOG_MIN_BYTES 4096         /* smallest max_bytes accepted */
#define FLEET_VLOG_MAX_FILES 100          /* most old files kept */
#define FLEET_VLOG_FILE "verdicts.jsonl"

struct fleet_vlog;

struct fleet_vlog_record {
	int64_t id; /* the store's verdict id; 0: written without one */
	time_t time;
	const char *device;  /* NULL: no device (written as null) */
	const char *serial;
	const char *session;
	bool pass;
	const char *const *reasons;
	size_t n_reasons;
	const char *ek_hash;     /* NULL or "": null */
	const char *ek_hash_ecc; /* NULL or "": null */
};

/*
 * Failures go in ec (may be NULL; lib/fleet_err.h): a sentence naming the
 * file, and the errno of the system call that failed (fleet_errctx_text
 * says it after the sentence: "cannot open /var/lib/fleetd/verdicts.jsonl:
 * Permission denied"). The codes: FLEET_E_IO (reconcile's too, when the
 * store could not be read: the store's sentence after "the store's
 * verdicts: "), FLEET_E_NOMEM, FLEET_E_INVALID_ARG (open's arguments).
 */

/* Open (creating, mode 0640) dir/verdicts.jsonl. max_bytes >=
 * FLEET_VLOG_MIN_BYTES; max_files 1..FLEET_VLOG_MAX_FILES old files kept.
 * A last line left unfinished by a crash is cut off. */
fleet_err fleet_vlog_open(const char *dir, uint64_t max_bytes, unsigned max_files,
			  struct fleet_vlog **out, struct fleet_errctx *ec);
/* Append one line (rotating first when due). Thread-safe. */
fleet_err fleet_vlog_append(struct fleet_vlog *log, const struct fleet_vlog_record *r,
			    struct fleet_errctx *ec);
void fleet_vlog_close(struct fleet_vlog *log);

/* The id of the newest line (the current file's last line, or, when it is
 * empty, the newest old file's): *id 0 and *found false when every file is
 * empty; *found true and *id 0 for a line written before lines had ids. */
fleet_err fleet_vlog_last_id(struct fleet_vlog *log, int64_t *id, bool *found,
			     struct fleet_errctx *ec);

struct fleet_store;
/* Append every verdict of st whose id is above the newest line's, oldest
 * first (*appended counts them). A log whose newest line predates ids is
 * taken as complete up to the store's newest verdict. *ahead is set when
 * the log's newest id is above the store's (a store restored from an older
 * copy): nothing is appended, and the caller says so. */
fleet_err fleet_vlog_reconcile(struct fleet_vlog *log, struct fleet_store *st, size_t *appended,
			       bool *ahead, struct fleet_errctx *ec);

/* The line for r, without writing it (malloc'd, ends in '\n'). */
char *fleet_vlog_format(const struct fleet_vlog_record *r);

#endif
