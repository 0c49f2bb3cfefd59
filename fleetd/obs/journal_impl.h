/* journal_impl.h: what journal.c takes from sanitize.c; not for callers. */
#ifndef FLEET_OBS_JOURNAL_IMPL_H
#define FLEET_OBS_JOURNAL_IMPL_H

#include <stddef.h>

/* Escape control characters and invalid UTF-8 in s (backslashes left
 * alone), at most cap - 1 bytes, "[+N]" when cut. Returns out. */
const char *fleet_log_defang(const char *s, char out[], size_t cap);

#endif
