/*
 * evaluate.h: judge a machine's event log and quoted PCRs by its class's
 * boot-policy profile.
 *
 * The quote is what the TPM signed; the log is what the machine says
 * happened. The log is believed only as far as its replay reproduces the
 * quoted values, and only for PCRs the quote covers. Every check runs and
 * every failure is collected, so an operator sees the whole story at once.
 *
 * The rule over every check: a field the quoted digest does not bind is
 * never read. What an event's digest binds in the profile's bank comes from
 * lib/eventlog.h (fleet_evlog_event_bound: all of the data, only an
 * EV_EFI_VARIABLE_BOOT's VariableData, or nothing); the event type is never
 * bound and may only narrow what a record is. So a separator is an
 * EV_SEPARATOR whose data is bound; a PCR 7 configuration variable
 * (SecureBoot, PK, KEK, db, dbx) is an EV_EFI_VARIABLE_DRIVER_CONFIG whose
 * whole record, GUID and name included, is bound, and SecureBoot is matched
 * by that type and that bound GUID and name. A record whose name is not
 * bound is no variable: it counts only as an event extended into its PCR
 * (replay, "the log has events on this PCR"), is refused as unreadable
 * before PCR 7's separator and judged by digest alone after it
 * (docs/policy.md, "What a digest binds").
 *
 * Reasons are stable strings (docs/policy.md lists them with one line each):
 *   "bank-not-replayable", "pcr-not-quoted", "log-quote-mismatch",
 *   "pcr-unlogged-nonzero", "bios-version-missing", "pcr0-unknown-bios",
 *   "pcr0-mismatch", "pcr-pinned-mismatch", "separator-malformed",
 *   "separator-error", "event-data-mismatch", "secure-boot-unmeasured",
 *   "secure-boot-mismatch", "secure-boot-ambiguous", "separator-missing",
 *   "authority-not-allowed",
 *   "renew-authority-missing", "boot-application-not-allowed",
 *   "no-boot-application"
 */
#ifndef FLEET_POLICY_EVALUATE_H
#define FLEET_POLICY_EVALUATE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/eventlog.h"
#include "lib/fleet_err.h"
#include "lib/tpm.h"
#include "policy/profile.h"

/* A log can fail the same rule thousands of times; the verdict keeps the
 * first ones and counts the rest, so its size is bounded. */
#define FLEET_VERDICT_MAX_REASONS 32

struct fleet_policy_input {
	const struct fleet_evlog *log;        /* parsed */
	const struct fleet_pcr_replay *replay; /* fleet_evlog_replay of log */
	/* The quoted values (already verified against the quote's signature
	 * and selection), or NULL: then the log is judged against its own
	 * replay only and the verdict says quote_checked = false. */
	const struct fleet_pcr_value *quoted;
	size_t n_quoted;
	const char *bios_version; /* SMBIOS BIOS version claimed, or NULL */
	bool renewal;             /* check renew_required_authorities too */
};

struct fleet_policy_reason {
	const char *reason; /* static, stable */
	char detail[300];   /* which PCR, which digest; claims through lib/sanitize.h */
};

struct fleet_verdict {
	bool pass;
	bool quote_checked;
	size_t n_reasons;
	size_t n_dropped; /* failures beyond FLEET_VERDICT_MAX_REASONS */
	struct fleet_policy_reason reasons[FLEET_VERDICT_MAX_REASONS];
};

/* Fill v. FLEET_OK whenever a verdict was reached (pass or fail); an error
 * only for a caller's mistake (NULL log, replay or profile). */
fleet_err fleet_policy_evaluate(const struct fleet_profile *p, const struct fleet_policy_input *in,
				struct fleet_verdict *v);

/* True when v holds reason (for tests and callers that branch on one). */
bool fleet_verdict_has(const struct fleet_verdict *v, const char *reason);

/*
 * The verdict as JSON (jansson), for fleetctl --json and the daemon:
 *   {"verdict": "pass"|"fail", "class": "...", "quote_checked": true,
 *    "reasons": [{"reason": "...", "detail": "..."}], "reasons_dropped": 0}
 * Returns a new reference, or NULL when out of memory.
 */
struct json_t;
struct json_t *fleet_verdict_json(const struct fleet_profile *p, const struct fleet_verdict *v);

#endif
