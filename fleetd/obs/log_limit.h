/*
 * log_limit.h: a journal limiter for events that prove nothing.
 *
 * A request that proves nothing (a refused intake, a bad signature, a port
 * that does not match) is counted, not journaled each time: anyone who can
 * reach the port can send a thousand of them a second, and a thousand
 * journal lines would bury the ones that matter and cost journald's rate
 * limit for the whole unit. The first occurrence of each kind is still
 * journaled in full, for forensics; the rest are counted, and one summary
 * line per kind says how many there were.
 *
 * Rules:
 *  - An event has a key naming its kind, e.g. "intake-refused/ek-chain-
 *    untrusted" or "intake-refused/port-mismatch/w12". The first
 *    fleet_log_limit_admit for a key opens a window of window_s seconds and
 *    returns true: the caller journals that occurrence in full. Every other
 *    admit for the key inside the window returns false: the caller only
 *    counts it (its metric, if any).
 *  - When the window has ended, the key's summary is written, if anything
 *    was suppressed: LOG_NOTICE, event "log-suppressed", FLEET_KEY=<key>
 *    FLEET_SUPPRESSED=<count>. The next admit for the key opens a new
 *    window and returns true again. A window also ends when the caller's
 *    clock has gone back by window_s or more since it opened.
 *  - Keys are made of stable reason strings and inventory names only. A
 *    value an attacker sends (a claimed serial, UUID, address, LLDP field)
 *    must never be put in a key: it would let them open a window, and a
 *    journal line, per request. The summary's FLEET_KEY still goes through
 *    fleet_log_escape_n (defence in depth).
 *  - Keys are copied, at most FLEET_LOG_LIMIT_KEY_MAX bytes: longer keys
 *    are cut there (two keys alike in their first 128 bytes are one key).
 *  - Memory is fixed at creation: max_keys keys are tracked at once, plus
 *    one overflow key "other" that every further key shares until an
 *    expired key is forgotten. A caller's own key "other" is that key too.
 *  - Thread safe: one mutex per limiter, never held while writing to the
 *    journal.
 *
 * Time is the caller's, in seconds (a monotonic clock suits best), so tests
 * control it. The daemon calls fleet_log_limit_flush about once a second;
 * fleet_log_limit_admit flushes too when some window has ended, so a
 * caller that forgets loses nothing.
 */
#ifndef FLEET_OBS_LOG_LIMIT_H
#define FLEET_OBS_LOG_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Bytes of a key that count; the rest is ignored. */
#define FLEET_LOG_LIMIT_KEY_MAX 128
/* The key every key past max_keys shares. */
#define FLEET_LOG_LIMIT_OTHER "other"

struct fleet_log_limit; /* opaque, thread safe (its own mutex) */

/*
 * window_s: the window in seconds (e.g. 60; 0 is taken as 1); max_keys:
 * keys tracked at once (e.g. 1024; 0 sends every key to "other"). NULL when
 * out of memory or max_keys is absurdly large.
 */
struct fleet_log_limit *fleet_log_limit_new(unsigned window_s, size_t max_keys);
/* Writes the summary of every key with suppressed occurrences whose window
 * is still open (a shutdown loses no count), then frees l. NULL is a
 * no-op. */
void fleet_log_limit_free(struct fleet_log_limit *l);

/*
 * Called once per event with its key (NULL reads as "(null)"). Returns true
 * when the caller should journal this occurrence in full (the first for
 * this key in the current window), false when it should only count it.
 * Writes the summaries of ended windows first when it sees one (see
 * fleet_log_limit_flush). l NULL: true (no limiter, journal everything).
 */
bool fleet_log_limit_admit(struct fleet_log_limit *l, const char *key, time_t now);

/*
 * Write one summary line (fleet_log, LOG_NOTICE, event "log-suppressed",
 * FLEET_KEY, FLEET_SUPPRESSED=<count>) per key whose window has ended with
 * suppressed occurrences, then forget every key whose window has ended.
 * Returns the number of lines written.
 */
size_t fleet_log_limit_flush(struct fleet_log_limit *l, time_t now);

/* Occurrences suppressed since creation (tests, metrics). */
uint64_t fleet_log_limit_suppressed(const struct fleet_log_limit *l);

#endif
