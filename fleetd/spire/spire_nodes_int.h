/* spire_nodes_int.h: what the pieces of fleetd/spire/ share, nothing more. */
#ifndef FLEETD_SPIRE_NODES_INT_H
#define FLEETD_SPIRE_NODES_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fleetd/spire/spire_nodes.h"

/* err gets the sentence (when not NULL); returns e. */
fleet_err spire_fail(char *err, size_t errlen, fleet_err e,
				const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
