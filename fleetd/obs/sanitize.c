/*
 * sanitize.c: fleet_log_claimed and its escaping (journal.h), libfleet's
 * one sanitiser (lib/sanitize.h) with the journal's cap and its reading of
 * NULL as "(null)".
 */
#include "fleetd/obs/journal.h"
#include "fleetd/obs/journal_impl.h"

#include <stdint.h>
#include <string.h>

#include "lib/sanitize.h"

_Static_assert(FLEET_LOG_CLAIMED_BUF >= FLEET_SANITIZE_BUF(FLEET_LOG_CLAIMED_MAX),
	       "FLEET_LOG_CLAIMED_BUF holds a capped value, escaped, with its mark");

const char *fleet_log_claimed_n(const void *p, size_t len, char out[], size_t cap)
{
	if (!p)
		return fleet_sanitize("(null)", 6, out, cap, FLEET_LOG_CLAIMED_MAX);
	return fleet_sanitize(p, len, out, cap, FLEET_LOG_CLAIMED_MAX);
}

const char *fleet_log_claimed(const char *s, char out[], size_t cap)
{
	return fleet_log_claimed_n(s, s ? strlen(s) : 0, out, cap);
}

const char *fleet_log_escape_n(const void *p, size_t len, char out[], size_t cap)
{
	if (!p)
		return fleet_sanitize("(null)", 6, out, cap, SIZE_MAX);
	return fleet_sanitize(p, len, out, cap, SIZE_MAX);
}

/* journal.c's last pass over every value and message: controls and invalid
 * UTF-8 escaped, backslashes left alone (a claimed value arrives already
 * sanitised, and doubling its escapes would only garble it). */
const char *fleet_log_defang(const char *s, char out[], size_t cap)
{
	return fleet_sanitize_keep_backslash(s, strlen(s), out, cap, SIZE_MAX);
}
