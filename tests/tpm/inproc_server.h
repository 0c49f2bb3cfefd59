/*
 * inproc_server.h: fleetd's admission, in-process, for tink-attest's tests.
 *
 * Not a copy of the daemon's orchestration: tink-attest's transport hands
 * each request to the shipped admission (fleetd/admission/admission.h:
 * fleet_admission_intake, _answer, _confirm), built as the daemon builds it
 * (fleetd/main.c) with a real store and verdicts.jsonl in a temporary state
 * directory, the swtpm's manufacturer roots, a temporary identity CA and
 * the class profile. Only the inventory is the test's: one planned device
 * whose serial and binding (approved ek_hash / ek_hash_ecc, written by the
 * configured binding_author) the test sets, with every declaration the
 * admission requires and the LLDP port the tests' machine reports.
 *
 * What it keeps for the tests is what crossed the wire (the requests
 * decoded as fleetd decodes them, each reply's status) and what the
 * admission journaled and stored; the test reads the store through
 * s->store.
 *
 * One thing the admission cannot give: a provision. fleetd does not yet
 * deliver configuration (its confirm reply carries "provision": null, which
 * v1 clients accept), so with `provision` set the transport adds one to
 * the admission's "confirmed" reply (a fresh code wrapped to the RSA EK and
 * bound to the AK, as the spec's delivery will), to keep tink-attest's
 * unwrapping and writing of it under test.
 */
#ifndef FLEET_INPROC_SERVER_H
#define FLEET_INPROC_SERVER_H

#include <stdbool.h>

#include "fleetd/admission/admission.h"
#include "tink-attest/transport.h"

#define INPROC_DEVICE "worker-1"                 /* the inventory's name for it */
#define INPROC_PORT "leaf-07.folly/Ethernet12"  /* its expected_port */

struct inproc_binding {
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	char ek_hash[65];
	char ek_hash_ecc[65]; /* "": the machine is approved without an ECC EK */
};

struct inproc_inventory {
	struct fleet_inventory base; /* first: the admission's handle on it */
	struct inproc_binding *binding;
	/* The device read by id (the re-reads of rules A4 and C2) fails with
	 * this (0: it answers). */
	fleet_err fail_get;
};

struct inproc_server {
	/* the daemon's parts, made by inproc_server_init */
	char dir[200]; /* state/ and ca/ */
	struct fleet_config config;
	struct fleet_ek_roots *roots;
	struct fleet_ca *ca;
	struct fleet_store *store;
	struct fleet_vlog *vlog;
	struct fleet_metrics *metrics;
	struct inproc_inventory inv;
	struct fleet_admission *adm;

	/* the test's: the inventory's one device, read at every lookup */
	struct inproc_binding binding;
	bool provision; /* add a provision to a confirmed reply (above) */

	/* called after each request is answered (e.g. to kill the TPM) */
	void (*after)(void *arg, const char *path);
	void *after_arg;

	/* what happened */
	unsigned n_intake, n_answer, n_confirm, n_malformed;
	bool intake_had_ecc;  /* the last intake carried an ECC EK */
	bool challenged;      /* the last intake's reply was a challenge... */
	bool challenged_ecc;  /* ...with a credential for the ECC EK too */
	bool issued;          /* the last answer's reply carried certificates */
	bool confirmed;       /* the last confirm's reply said confirmed */
	char reason[64];      /* the journal's FLEET_REASON of the last refusal */
	char journal[8192];   /* what the last request journaled (its start) */
	/* the last intake, as fleetd decoded it */
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	struct fleet_network_report report;
	TPM2B_PUBLIC ek_rsa, ak, ldevid;
	uint8_t code[FLEET_WIRE_ID_LEN]; /* the provisioned code */
};

/* 0, or -1 with the reason on stderr. profile: the class profile's path. */
int inproc_server_init(struct inproc_server *s, const char *roots_dir, const char *profile);
void inproc_server_free(struct inproc_server *s);
struct tink_transport inproc_transport(struct inproc_server *s);

#endif
