/*
 * cmd_join_requests.c: the discovery and provisioned attestors from the
 * operator's side (issue 13; store.h D1-D8): fleetctl join-requests
 * list|approve|deny, site lease, node list|show|retire|revoke.
 *
 * As in cmd_join.c, every command that writes is root's, on the store's
 * operator handle (the daemon's file, never created or migrated); the
 * listings are read-only handles. A decision on a join request and a boot
 * lease grant are journaled at notice (FLEET_EVENT=join-request-approved,
 * join-request-denied, site-lease-granted) with who (FLEET_OPERATOR,
 * FLEET_UID), as cmd_quarantine.c journals a lift: the store keeps who
 * decided a request (decided_by), the journal keeps every grant.
 */
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "fleetd/obs/journal.h"
#include "fleetd/store/store.h"
#include "lib/sanitize.h"

#define DEFAULT_STATE_DIR "/var/lib/fleetd"

static const char *const usage_text =
	"usage: fleetctl join-requests list [--state-dir DIR] [--json]\n"
	"       fleetctl join-requests approve ID [--state-dir DIR] [--json]\n"
	"       fleetctl join-requests deny ID [--state-dir DIR] [--json]\n"
	"       fleetctl site lease SITE NODE [--state-dir DIR] [--json]\n"
	"       fleetctl node list [--state-dir DIR] [--json]\n"
	"       fleetctl node show ID [--state-dir DIR] [--json]\n"
	"       fleetctl node retire ID | node revoke ID [--state-dir DIR] [--json]\n"
	"\n"
	"A join request is a machine the discovery attestor deferred for a person's\n"
	"decision; approve admits its next join, once; deny refuses it (the machine may\n"
	"ask again). Only a pending request before its expiry is decided. site lease\n"
	"gives SITE's boot lease (who may vouch for a PXE-booted machine) to NODE, a\n"
	"site node of SITE, and raises its epoch: whatever the former holder signed is\n"
	"no longer accepted. approve, deny and site lease are root only and journaled.\n"
	"Exit codes: 0 done; 2 usage or the store failed; 3 not root; 4 no such request\n"
	"or node; 5 the request is not pending (decided, used or expired), or the node\n"
	"may not hold the lease.\n";



static int usage_exit(int argc, char **argv)
{
	bool help = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
	fputs(usage_text, help ? stdout : stderr);
	return help ? FLEETCTL_EXIT_OK : FLEETCTL_EXIT_USAGE;
}




static void when(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "-");
}

static json_t *jtime(int64_t t)
{
	char w[32];
	when(t, w);
	return t > 0 ? json_string(w) : json_null();
}

static json_t *jstr(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

/* `fleetctl GROUP VERB ARG... [--state-dir DIR] [--json]` with nargs
 * positional arguments after the verb: 0, or the exit code. */
static int positional(const char *group, int argc, char **argv, int nargs, const char **dir,
		      int *json)
{
	for (int i = 2; i < 2 + nargs; i++)
		if (i >= argc || argv[i][0] == '-') {
			fputs(usage_text, stderr);
			return FLEETCTL_EXIT_USAGE;
		}
	const struct fleetctl_opt opts[] = {{"--state-dir", dir}};
	if (fleetctl_parse_opts(group, argc, argv, 2 + nargs, opts, 1, json))
		return FLEETCTL_EXIT_USAGE;
	return 0;
}

/* ---- join requests --------------------------------------------------------- */

static json_t *request_json(const struct fleet_store_join_request *r)
{
	return json_pack("{s:s, s:s, s:o, s:s, s:o, s:o, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "id",
			 r->id, "attestor", r->attestor, "site", jstr(r->site), "hw_key", r->hw_key,
			 "mac", jstr(r->mac), "product_uuid", jstr(r->product_uuid), "csr_sha256",
			 r->csr_sha256, "status", r->status, "created_at", jtime(r->created_at),
			 "expires_at", jtime(r->expires_at), "decided_at", jtime(r->decided_at),
			 "decided_by", jstr(r->decided_by), "used_at", jtime(r->used_at));
}

static int requests_list(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	int rc = positional("join-requests", argc, argv, 0, &dir, &json);
	if (rc)
		return rc;
	struct fleet_store *st =
		fleetctl_open_store("join-requests", fleetctl_state_dir(dir), FLEET_STORE_READONLY);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_join_request *r = NULL;
	size_t n = 0;
	fleet_err e = fleet_store_join_requests_list(st, &r, &n);
	if (e) {
		rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "join-requests list: %s", fleet_store_errmsg(st));
		fleet_store_close(st);
		return rc;
	}
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-29s %-10s %-12s %-17s %-8s %-20s %s\n", "ID", "ATTESTOR", "SITE", "MAC",
		       "STATUS", "CREATED", "EXPIRES");
	for (size_t i = 0; i < n; i++) {
		char c[32], x[32];
		when(r[i].created_at, c);
		when(r[i].expires_at, x);
		if (json)
			json_array_append_new(arr, request_json(&r[i]));
		else
			printf("%-29s %-10s %-12s %-17s %-8s %-20s %s\n", r[i].id, r[i].attestor,
			       r[i].site[0] ? r[i].site : "-", r[i].mac[0] ? r[i].mac : "-",
			       r[i].status, c, x);
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "join_requests", arr));
	free(r);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

static int requests_decide(int argc, char **argv, bool approve)
{
	const char *verb = approve ? "join-requests approve" : "join-requests deny";
	const char *dir = NULL;
	int json = 0;
	int rc = positional("join-requests", argc, argv, 1, &dir, &json);
	if (rc || (rc = fleetctl_need_root(verb)))
		return rc;
	const char *id = argv[2];
	if (!fleet_ascii_printable(id, strlen(id), 0) || strlen(id) > 63)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "%s: ID is a join request's id (jr_...)", verb);
	char who[FLEETCTL_OPERATOR_MAX];
	fleetctl_operator_name(who);
	struct fleet_store *st =
		fleetctl_open_store("join-requests", fleetctl_state_dir(dir), FLEET_STORE_OPERATOR);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_join_request r;
	fleet_err e = fleet_store_join_request_decide(st, id, approve, who, time(NULL));
	if (!e)
		e = fleet_store_join_request_get(st, id, &r);
	if (e) {
		rc = fleetctl_fail(fleetctl_store_code(e), "%s: %s: %s", verb, id, fleet_store_errmsg(st));
		fleet_store_close(st);
		return rc;
	}
	fleet_store_close(st);
	char uid[24];
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	fleet_log_set_identifier("fleetctl");
	fleet_log(LOG_NOTICE, approve ? "join-request-approved" : "join-request-denied",
		  FLEET_LOG_FIELDS({"FLEET_JOIN_REQUEST", r.id}, {"FLEET_OPERATOR", who},
				   {"FLEET_UID", uid}, {"FLEET_ATTESTOR", r.attestor},
				   {"FLEET_SITE", r.site[0] ? r.site : NULL},
				   {"FLEET_MAC", r.mac[0] ? r.mac : NULL},
				   {"FLEET_PRODUCT_UUID", r.product_uuid[0] ? r.product_uuid : NULL},
				   {"FLEET_HW_KEY", r.hw_key}),
		  "join request %s (%s, site %s, mac %s) %s by %s", r.id, r.attestor,
		  r.site[0] ? r.site : "-", r.mac[0] ? r.mac : "-",
		  approve ? "approved" : "denied", who);
	if (json)
		fleetctl_print_json(request_json(&r));
	else if (approve)
		printf("%s: %s approved: the machine's next join is admitted, once\n", verb, r.id);
	else
		printf("%s: %s denied: the machine is refused (it may ask again)\n", verb, r.id);
	return FLEETCTL_EXIT_OK;
}

int cmd_join_requests(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return requests_list(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "approve"))
		return requests_decide(argc, argv, true);
	if (argc >= 2 && !strcmp(argv[1], "deny"))
		return requests_decide(argc, argv, false);
	return usage_exit(argc, argv);
}

/* ---- site lease ------------------------------------------------------------ */

static int site_lease(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	int rc = positional("site", argc, argv, 2, &dir, &json);
	if (rc || (rc = fleetctl_need_root("site lease")))
		return rc;
	const char *site = argv[2], *node = argv[3];
	if (!fleet_ascii_printable(site, strlen(site), 0) || strlen(site) > 63 ||
	    !fleet_ascii_printable(node, strlen(node), 0) || strlen(node) > FLEET_STORE_NODE_ID_MAX)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "site lease: SITE and NODE are ids");
	char who[FLEETCTL_OPERATOR_MAX];
	fleetctl_operator_name(who);
	struct fleet_store *st = fleetctl_open_store("site", fleetctl_state_dir(dir), FLEET_STORE_OPERATOR);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	int64_t epoch = 0;
	fleet_err e = fleet_store_site_lease_grant(st, site, node, time(NULL), &epoch);
	if (e) {
		rc = fleetctl_fail(fleetctl_store_code(e), "site lease: %s", fleet_store_errmsg(st));
		fleet_store_close(st);
		return rc;
	}
	fleet_store_close(st);
	char uid[24], ep[24];
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	snprintf(ep, sizeof(ep), "%lld", (long long)epoch);
	fleet_log_set_identifier("fleetctl");
	fleet_log(LOG_NOTICE, "site-lease-granted",
		  FLEET_LOG_FIELDS({"FLEET_SITE", site}, {"FLEET_NODE", node}, {"FLEET_EPOCH", ep},
				   {"FLEET_OPERATOR", who}, {"FLEET_UID", uid}),
		  "the boot lease of site %s granted to %s by %s, epoch %s", site, node, who, ep);
	if (json)
		fleetctl_print_json(json_pack("{s:s, s:s, s:s, s:I}", "site", site, "lease",
					      FLEET_STORE_LEASE_BOOT, "holder", node, "epoch",
					      (json_int_t)epoch));
	else
		printf("site lease: %s::%s held by %s, epoch %lld (anything signed at an earlier "
		       "epoch is refused)\n",
		       site, FLEET_STORE_LEASE_BOOT, node, (long long)epoch);
	return FLEETCTL_EXIT_OK;
}

int cmd_site(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "lease"))
		return site_lease(argc, argv);
	return usage_exit(argc, argv);
}

/* ---- nodes ----------------------------------------------------------------- */

static json_t *node_json(const struct fleet_store_node *n)
{
	return json_pack("{s:s, s:s, s:o, s:s, s:I, s:o, s:s, s:o, s:o, s:o}", "id", n->id, "pool",
			 n->pool, "site", jstr(n->site), "role", n->role, "generation",
			 (json_int_t)n->generation, "joined_at", jtime(n->joined_at), "joined_by",
			 n->joined_by, "token", jstr(n->token), "product_uuid",
			 jstr(n->product_uuid), "retired_at", jtime(n->retired_at));
}

static int node_list(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	int rc = positional("node", argc, argv, 0, &dir, &json);
	if (rc)
		return rc;
	struct fleet_store *st = fleetctl_open_store("node", fleetctl_state_dir(dir), FLEET_STORE_READONLY);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_node *n = NULL;
	size_t cnt = 0;
	fleet_err e = fleet_store_nodes_list(st, &n, &cnt);
	if (e) {
		rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "node list: %s", fleet_store_errmsg(st));
		fleet_store_close(st);
		return rc;
	}
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-24s %-16s %-12s %-8s %-4s %-20s %s\n", "ID", "POOL", "SITE", "ROLE", "GEN",
		       "JOINED", "STATE");
	for (size_t i = 0; i < cnt; i++) {
		char j[32];
		when(n[i].joined_at, j);
		if (json)
			json_array_append_new(arr, node_json(&n[i]));
		else
			printf("%-24s %-16s %-12s %-8s %-4lld %-20s %s\n", n[i].id, n[i].pool,
			       n[i].site[0] ? n[i].site : "-", n[i].role, (long long)n[i].generation,
			       j, n[i].retired_at ? "retired" : "joined");
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "nodes", arr));
	free(n);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

static int node_show(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	int rc = positional("node", argc, argv, 1, &dir, &json);
	if (rc)
		return rc;
	const char *id = argv[2];
	struct fleet_store *st = fleetctl_open_store("node", fleetctl_state_dir(dir), FLEET_STORE_READONLY);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_node n;
	struct fleet_store_node_cert *c = NULL;
	size_t nc = 0;
	/* One state of the store: the node and its certificates as of one
	 * moment (a reclaim between the two reads would show a mix). */
	fleet_err e = fleet_store_snapshot_begin(st);
	if (!e) {
		if (!(e = fleet_store_node_get(st, id, &n)))
			e = fleet_store_node_certs(st, id, &c, &nc);
		if (e)
			rc = fleetctl_fail(fleetctl_store_code(e), "node show: %s", fleet_store_errmsg(st));
		fleet_store_snapshot_end(st);
	} else {
		rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "node show: %s", fleet_store_errmsg(st));
	}
	fleet_store_close(st);
	if (e)
		return rc;
	if (json) {
		json_t *o = node_json(&n), *certs = json_array();
		for (size_t i = 0; i < nc; i++)
			json_array_append_new(
				certs, json_pack("{s:s, s:I, s:o, s:o, s:b, s:o}", "sha256", c[i].sha256,
						 "generation", (json_int_t)c[i].generation, "not_after",
						 jtime(c[i].not_after), "issued_at", jtime(c[i].issued_at),
						 "revoked", c[i].revoked_at != 0, "revoked_at",
						 jtime(c[i].revoked_at)));
		json_object_set_new(o, "certificates", certs);
		fleetctl_print_json(o);
	} else {
		char j[32], r[32];
		when(n.joined_at, j);
		when(n.retired_at, r);
		printf("node %s\n  pool %s, site %s, role %s\n  generation %lld\n  joined %s by %s "
		       "(token %s)\n  product uuid %s\n  retired %s\n  certificates:\n",
		       n.id, n.pool, n.site[0] ? n.site : "-", n.role, (long long)n.generation, j,
		       n.joined_by, n.token[0] ? n.token : "-",
		       n.product_uuid[0] ? n.product_uuid : "-", r);
		for (size_t i = 0; i < nc; i++) {
			char na[32], ia[32];
			when(c[i].not_after, na);
			when(c[i].issued_at, ia);
			printf("    %s gen %lld issued %s not_after %s%s\n", c[i].sha256,
			       (long long)c[i].generation, ia, na, c[i].revoked_at ? " revoked" : "");
		}
		if (!nc)
			printf("    (none)\n");
	}
	free(c);
	return FLEETCTL_EXIT_OK;
}

/* node retire ID | node revoke ID: the owner's end of a node (store.h N5,
 * N6), root's, journaled as the other operator writes are. */
static int node_end(int argc, char **argv, bool retire)
{
	const char *dir = NULL, *what = retire ? "node retire" : "node revoke";
	int json = 0;
	int rc = positional("node", argc, argv, 1, &dir, &json);
	if (rc || (rc = fleetctl_need_root(what)))
		return rc;
	const char *node = argv[2];
	if (!fleet_ascii_printable(node, strlen(node), 0) || strlen(node) > FLEET_STORE_NODE_ID_MAX)
		return fleetctl_fail(FLEETCTL_EXIT_USAGE, "%s: NODE is a node id", what);
	char who[FLEETCTL_OPERATOR_MAX], uid[24], count[24];
	fleetctl_operator_name(who);
	struct fleet_store *st = fleetctl_open_store("node", fleetctl_state_dir(dir), FLEET_STORE_OPERATOR);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	size_t revoked = 0;
	fleet_err e = retire ? fleet_store_node_retire(st, node, time(NULL))
			     : fleet_store_node_revoke(st, node, time(NULL), &revoked);
	if (e) {
		rc = fleetctl_fail(fleetctl_store_code(e), "%s: %s", what, fleet_store_errmsg(st));
		fleet_store_close(st);
		return rc;
	}
	fleet_store_close(st);
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	snprintf(count, sizeof(count), "%zu", revoked);
	fleet_log_set_identifier("fleetctl");
	fleet_log(LOG_NOTICE, retire ? "node-retired" : "node-revoked",
		  FLEET_LOG_FIELDS({"FLEET_NODE", node}, {"FLEET_OPERATOR", who}, {"FLEET_UID", uid},
				   {"FLEET_REVOKED", retire ? NULL : count}),
		  retire ? "node %s retired by %s" : "node %s: its certificates revoked by %s", node,
		  who);
	if (json)
		fleetctl_print_json(json_pack("{s:s, s:b, s:I}", "node", node, "retired", retire,
					      "revoked", (json_int_t)revoked));
	else if (retire)
		printf("node retire: %s is retired: it never re-joins and never renews\n", node);
	else
		printf("node revoke: %zu certificate(s) of %s revoked\n", revoked, node);
	return FLEETCTL_EXIT_OK;
}

int cmd_node(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return node_list(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return node_show(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "retire"))
		return node_end(argc, argv, true);
	if (argc >= 2 && !strcmp(argv[1], "revoke"))
		return node_end(argc, argv, false);
	return usage_exit(argc, argv);
}
