/*
 * admission_fixture.h: what tests/e2e/test_admission.c works with: two
 * machines (each a swtpm booted by the firmware simulator), running them
 * through tink-attest (the binary, or its library with hooks between the
 * rounds), and reading what fleetd did (its store, verdicts.jsonl, its
 * log, /metrics, the NetBox fake).
 */
#ifndef FLEET_ADMISSION_FIXTURE_H
#define FLEET_ADMISSION_FIXTURE_H

#include "tests/testutil.h"

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "fleetd/store/store.h"
#include "tests/e2e/admission_harness.h"
#include "tests/tpm/swtpm_harness.h"
#include "tink-attest/tink.h"
#include "tink-attest/transport_curl.h"

#define TOKEN "0123456789abcdef0123456789abcdef01234567" /* the fake's user "fleetd" */
#define PORT_OK "leaf-07.folly/Ethernet12"

struct machine {
	struct swtpm t;
	char ek[65], ek_ecc[65];
};

extern struct machine MA, MB; /* two TPMs: A is approved, B is not */
extern char *D;               /* the test's directory */
extern char STATE[700], LOG[700], LLDP[700], EVLOG[700], BADLOG[700];
extern struct fleetd_proc FD;
extern const char lldp_json[]; /* one LLDP neighbour: leaf-07.folly, Ethernet12 */

/* Everything a test of the fleetd binary stands on, in a new directory D
 * (named after what): STATE, LOG, LLDP, EVLOG, BADLOG set and the LLDP and
 * bad event log files written; machines MA and MB manufactured and booted;
 * the NetBox fake started with write_seed's devices; fleetd's files (both
 * manufacturers' roots, an identity CA, the class profile, a TLS
 * certificate, the NetBox token 0600) and FD.port. The test writes its
 * configuration and starts fleetd. */
void adm_fixture_up(const char *what, void (*write_seed)(const char *path));
/* fleetd.yaml at path for FD.port, D's files and the NetBox fake: every
 * client is on loopback, so the listener's per-source rate limit is lifted
 * (test_http_server.c tests it); netbox_extra (lines indented four spaces
 * under inventory.netbox) and sessions (the lines under sessions:) are the
 * test's own. */
void adm_write_config(const char *path, const char *netbox_extra, const char *sessions);
/* The same with listen_extra (lines indented two spaces under listen:) in
 * place of the lifted rate limit: "" runs the listener's defaults. */
void adm_write_config_listen(const char *path, const char *listen_extra,
			     const char *netbox_extra, const char *sessions);
/* Stop the fake and the TPMs, remove D (kept with FLEET_KEEP_TEST_DIR). */
void adm_fixture_down(void);

void put(const char *path, const char *data);
void shf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Manufacture, boot the simulated firmware (its log to log_out when not
 * NULL), read both EK hashes, and let go of the TPM. */
void machine_up(struct machine *m, const char *log_out);

/* The tink-attest binary as `serial`; out gets the output directory.
 * eventlog NULL: the simulated boot's. Returns the exit code. */
int run_tink(struct machine *m, const char *serial, const char *eventlog, char *out,
	     size_t outcap);

/* tink-attest's library over its libcurl transport, with hooks: before
 * (may send something first) and after each request. */
struct hooked {
	struct tink_curl curl;
	struct tink_transport inner;
	void (*before)(struct hooked *h, const char *path, const struct fleet_buf *body);
	void (*after)(struct hooked *h, const char *path, const struct fleet_buf *body,
		      long status, const struct fleet_buf *reply);
	int seen; /* whatever the hooks count */
};

int run_hooked(struct machine *m, const char *serial, struct hooked *h, unsigned attempts,
	       char *out, size_t outcap);

bool exists_in(const char *dir, const char *name);
struct fleet_store *store_ro(void);
bool store_device(const char *serial, struct fleet_store_device *d);
/* Verdicts for device: passing, and failing (with reasons[0] == reason
 * when reason is not NULL). */
void store_verdicts(const char *device, size_t *pass, size_t *fail, const char *reason);
size_t store_certs(const char *device, size_t *revoked);
/* Provisional certificates carrying device's name (store.h), and how many
 * of them are revoked. */
size_t store_provisional(const char *device, size_t *revoked);
/* device's provisional certificates are two, both revoked, and fleetd
 * journaled exactly one provisional-revoked line for device with reason
 * whose FLEET_DETAIL names exactly those two SHA-1s. */
void assert_revoked_named(const char *device, const char *reason);
/* Lines of verdicts.jsonl holding both needles. */
size_t vlog_count(const char *a, const char *b);
/* One series' value from GET /metrics (fails the test when absent). */
long long metric(const char *series);
/* fleetd_unproven_total's series for one reason (admission_int.h). */
#define UNPROVEN(reason) "fleetd_unproven_total{reason=\"" reason "\"}"
/* The fake's view of one device (a new reference); its non-GET requests. */
json_t *nb_device(long id);
size_t nb_writes(void);
/* fleetd's log holds an intake-refused entry for serial with reason. */
void assert_refused_with(const char *serial, const char *reason);
/* POST body to fleetd; the status must be want_status and the reply hold
 * want_in_body (when not NULL). */
void post_raw(const char *path, const void *body, size_t len, long want_status,
	      const char *want_in_body);
/* The same from another loopback source address (e.g. "127.0.0.2"): a
 * client other than the machine, as fleetd sees it. */
void post_raw_from(const char *source, const char *path, const void *body, size_t len,
		   long want_status, const char *want_in_body);

#endif
