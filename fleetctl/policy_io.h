/*
 * policy_io.h: what `policy check`, `policy create` and `policy explain`
 * read the same way (cmd_policy.c): the profile, the log and its replay,
 * and a --pcrs file standing in for the quoted values. Each prints its own
 * sentence on stderr ("fleetctl: policy: ...") when it refuses.
 */
#ifndef FLEETCTL_POLICY_IO_H
#define FLEETCTL_POLICY_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/buf.h"
#include "lib/eventlog.h"
#include "lib/tpm.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

/* Every bank times every PCR: a JSON file cannot name more distinct ones. */
#define FLEETCTL_POLICY_MAX_QUOTED (FLEET_EVLOG_MAX_BANKS * FLEET_PCR_COUNT)

/* Load a profile; on failure says which file, line and column. 0 or -1. */
int fleetctl_policy_profile(const char *path, struct fleet_profile **out);

/* Read (any owner: the machine's evidence), parse and replay a log.
 * FLEETCTL_EXIT_OK; FLEETCTL_EXIT_USAGE when the file cannot be read;
 * FLEETCTL_EXIT_REFUSED when it is no event log (the offset named).
 * *log is the caller's to free either way. */
int fleetctl_policy_log(const char *path, struct fleet_evlog **log,
			struct fleet_pcr_replay *replay);

/* Read {"pcrs": {bank: {index: hex}}} into vals (FLEETCTL_POLICY_MAX_QUOTED
 * entries). 0 or -1. */
int fleetctl_policy_pcrs(const char *path, struct fleet_pcr_value *vals, size_t *n);

/* A verdict on a log, as check and explain reach it: the profile, the
 * --pcrs values (if any), the log and its replay, and the verdict. */
struct fleetctl_policy_run {
	struct fleet_profile *p;
	struct fleet_evlog *log;
	struct fleet_pcr_replay replay;
	struct fleet_pcr_value quoted[FLEETCTL_POLICY_MAX_QUOTED];
	size_t n_quoted;
	struct fleet_verdict v;
};
/* Load and judge; FLEETCTL_EXIT_OK when a verdict was reached (pass or
 * fail), else the exit code after saying why. Free r with
 * fleetctl_policy_run_free either way. */
int fleetctl_policy_judge(const char *profile, const char *log, const char *pcrs,
			  const char *bios, bool renewal, struct fleetctl_policy_run *r);
void fleetctl_policy_run_free(struct fleetctl_policy_run *r);

/* policy create / policy explain (cmd_policy_create.c). */
int fleetctl_policy_create(int argc, char **argv);
int fleetctl_policy_explain(int argc, char **argv);

#endif
