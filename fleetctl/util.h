/* util.h: what every fleetctl command does the same way. */
#ifndef FLEETCTL_UTIL_H
#define FLEETCTL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"
#include "lib/file_read.h"

/* Read an operator's input file (evidence, PCR values, a TPM public area)
 * into b, emptied first: data whose content the command checks, so any
 * owner and mode, but through the one reader (lib/file_read.h,
 * fleet_file_read_data: no symlink, a regular file, at most max bytes, one
 * descriptor). On failure says "fleetctl: GROUP: cannot read WHAT PATH:
 * REASON" and returns -1. */
int fleetctl_read(const char *group, const char *what, const char *path, size_t max,
		  struct fleet_buf *b);

/* Print o as one compact JSON line on stdout; takes the reference. */
void fleetctl_print_json(json_t *o);

/* A refused check: with json, {"result":"refused","reason":..,"detail":..}
 * on stdout; else "GROUP: refused: REASON" on stdout and the detail on
 * stderr. Returns FLEETCTL_EXIT_REFUSED. */
int fleetctl_refuse(const char *group, int json, const char *reason, const char *detail);

/* --nonce HEX: 1..cap bytes. An empty nonce would accept a replayed
 * quote, so there is none. Says what is wrong and returns -1. */
int fleetctl_nonce(const char *group, const char *hex, uint8_t *out, size_t cap, size_t *len);

/* The detail line for a refused quote or certification: for a malformed
 * structure, parse it again only to say at which byte it went wrong. */
void fleetctl_attest_detail(const char *reason, fleet_err e, const struct fleet_buf *attest,
			    const struct fleet_buf *sig, char *detail, size_t len);

/* Options of the form --name VALUE, each at most once, and --json. */
struct fleetctl_opt {
	const char *name; /* "--ak" */
	const char **slot;
};
/* Parse argv[first..]; 0 on success, -1 (after saying which argument) on an
 * unknown, repeated or valueless option. */
int fleetctl_parse_opts(const char *group, int argc, char **argv, int first,
			const struct fleetctl_opt *opts, size_t n_opts, int *json);

/* Open the store at dir in mode; on failure says "fleetctl: GROUP: cannot
 * open the store: WHY" and returns NULL. */
struct fleet_store;
enum fleet_store_mode;
struct fleet_store *fleetctl_open_store(const char *group, const char *dir, int mode);

/* The operator commands' shared pieces (cmd_join.c, cmd_join_requests.c,
 * cmd_quarantine.c). */
#define FLEETCTL_OPERATOR_MAX 64
/* "fleetctl: " and the message on stderr; returns code. */
int fleetctl_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* dir, or the default state directory (/var/lib/fleetd) when NULL. */
const char *fleetctl_state_dir(const char *dir);
/* 0 as root, else FLEETCTL_EXIT_PERMISSION with the reason on stderr. */
int fleetctl_need_root(const char *what);
/* A store error as fleetctl's exit code: 4 not found, 5 conflict or state,
 * 2 anything else. */
int fleetctl_store_code(fleet_err e);
/* Who did it: the user sudo ran us for (only as root, only a name the
 * password database knows), else the real uid's name, else "uid N". */
void fleetctl_operator_name(char out[FLEETCTL_OPERATOR_MAX]);

#endif
