/* spire_nodes_int.h: what the pieces of fleetd/spire/ share, nothing more. */
#ifndef FLEETD_SPIRE_NODES_INT_H
#define FLEETD_SPIRE_NODES_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fleetd/spire/spire_nodes.h"

/* err gets the sentence (when not NULL); returns e. */
enum fleet_spire_err spire_fail(char *err, size_t errlen, enum fleet_spire_err e,
				const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* "2026-11-30T05:00:00Z"; false for a time outside years 1970..9999. */
bool spire_rfc3339(int64_t t, char out[21]);

/*
 * The document as JSON, keys in the order docs/spire-nodes.md gives them.
 * With generated_at NULL the result is the content alone (version,
 * trust_domain, eligible, revoked): what decides whether the file changed.
 * NULL when out of memory or a time cannot be written.
 */
json_t *spire_nodes_json(const struct fleet_spire_doc *doc, int64_t serial,
			 const char *generated_at);

/* The document keeps the rules of the format (docs/spire-nodes.md) that
 * hold entry by entry, and each list is sorted by name without repeats;
 * why gets the first broken one. The writer checks before it writes, so a
 * file the applier would refuse whole is never put in place. */
bool spire_doc_ok(const struct fleet_spire_doc *doc, char *why, size_t whylen);

#endif
