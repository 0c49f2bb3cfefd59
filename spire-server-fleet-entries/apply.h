/*
 * apply.h: one run of spire-server-fleet-entries: read the file and the
 * configuration, list the server's entries, plan, check the plan against
 * the removal limit, then carry it out step by step, stopping at the first
 * step the server refuses.
 */
#ifndef FLEETD_APPLIER_APPLY_H
#define FLEETD_APPLIER_APPLY_H

#include "spire-server-fleet-entries/plan.h"

#define APPLIER_DEFAULT_FILE "/var/lib/fleetd/spire-nodes.json"
#define APPLIER_DEFAULT_CLI "spire-server"
#define APPLIER_MAX_REMOVALS 1 /* nodes one run may remove unless approved */

struct applier_opts {
	const char *file;
	const char *cli;
	const char *socket; /* NULL: the CLI's default */
	const char *config; /* NULL: the defaults */
	int dry_run;
	long allow_removals; /* -1: not given */
};

/* Exit status: 0 done (or nothing to do, or a dry run), 1 refused or
 * failed (stderr says why, and what was done before the failure). */
int applier_run(const struct applier_opts *o);

#endif
