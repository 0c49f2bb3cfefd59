/*
 * inproc_server.h: fleetd-lite, in-process, for tink-attest's tests.
 *
 * A test double of the daemon, not of the TPM: it implements tink-attest's
 * transport interface by decoding each request with lib/attest_wire.h and
 * calling fleetd's round functions (fleetd/attest/attest_server.h) the way the daemon
 * does, with the swtpm's manufacturer roots, a temporary identity CA
 * (fleet_ca_init), a boot-policy profile, and a binding table in place of
 * NetBox: serial -> approved ek_hash / ek_hash_ecc. An unknown serial gets
 * "pending"; an EK that is not the approved one, "refused". What it saw is
 * kept for the tests to assert on.
 */
#ifndef FLEET_INPROC_SERVER_H
#define FLEET_INPROC_SERVER_H

#include <stdbool.h>

#include "fleetd/attest/attest_server.h"
#include "tink-attest/transport.h"

struct inproc_binding {
	char serial[FLEET_WIRE_MAX_SERIAL + 1];
	char ek_hash[65];
	char ek_hash_ecc[65]; /* "": the machine is approved without an ECC EK */
};

struct inproc_server {
	/* set up by inproc_server_init */
	struct fleet_ek_roots *roots;
	struct fleet_profile *profile;
	struct fleet_ca *ca;
	char ca_dir[512];
	struct fleet_attest_env env;
	struct inproc_binding binding; /* one machine */
	bool provision;                /* the confirm reply carries a provision */

	/* called after each request is answered (e.g. to kill the TPM) */
	void (*after)(void *arg, const char *path);
	void *after_arg;

	/* what happened */
	unsigned n_intake, n_answer, n_confirm, n_malformed;
	bool intake_had_ecc;
	const char *reason;            /* the last refusal's reason */
	struct fleet_attest_session session;
	struct fleet_verdict verdict;
	uint8_t code[FLEET_WIRE_ID_LEN]; /* the provisioned code */
};

/* 0, or -1 with the reason on stderr. */
int inproc_server_init(struct inproc_server *s, const char *roots_dir, const char *profile);
void inproc_server_free(struct inproc_server *s);
struct tink_transport inproc_transport(struct inproc_server *s);

#endif
