/*
 * fleetctl.h: the operator's tool. Each command group lives in cmd_<group>.c.
 *
 * Exit codes, the same for every command:
 *   0  success (for a check: it passed)
 *   1  the input was refused or malformed (the reason is on stderr, or in
 *      the JSON on stdout with --json)
 *   2  usage error, or a file could not be read
 *
 * Only `quarantine lift` tells its refusals apart further:
 *   3  not root (only root lifts a quarantine)
 *   4  no device by that name in the store
 *   5  the device is not quarantined (nothing was written)
 */
#ifndef FLEETCTL_H
#define FLEETCTL_H

#define FLEETCTL_EXIT_OK 0
#define FLEETCTL_EXIT_REFUSED 1
#define FLEETCTL_EXIT_USAGE 2
#define FLEETCTL_EXIT_PERMISSION 3
#define FLEETCTL_EXIT_NOT_FOUND 4
#define FLEETCTL_EXIT_STATE 5

/* Each gets argv with argv[0] = the group name ("eventlog"). */
int cmd_eventlog(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_ek(int argc, char **argv);
int cmd_ca(int argc, char **argv);
int cmd_quote(int argc, char **argv);
int cmd_certify(int argc, char **argv);
/* Over fleetd's store, read-only (cmd_store.c). */
int cmd_claims(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_provisional(int argc, char **argv);
int cmd_verdicts(int argc, char **argv);
int cmd_device(int argc, char **argv);
int cmd_provisions(int argc, char **argv);
/* quarantine list (read-only) | quarantine lift (root; cmd_quarantine.c). */
int cmd_quarantine(int argc, char **argv);
int cmd_join(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_token(int argc, char **argv);
/* join-requests list|approve|deny, site lease, node list|show
 * (cmd_join_requests.c; the writes root's, journaled). */
int cmd_join_requests(int argc, char **argv);
int cmd_site(int argc, char **argv);
int cmd_node(int argc, char **argv);

#endif
