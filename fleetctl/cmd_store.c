/*
 * cmd_store.c: fleetctl claims | devices | verdicts | device show |
 * provisional, over
 * fleetd's store opened read-only.
 *
 * fleetctl reads the SQLite file itself rather than asking the daemon over
 * a socket: WAL lets readers run beside the daemon's writes, the handle is
 * SQLITE_OPEN_READONLY with query_only set, and there is no extra listening
 * surface to defend. It needs read access to the state directory, so it
 * runs as root or as fleetd's user (docs/store.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/util.h"
#include "fleetd/store/store.h"

#define DEFAULT_STATE_DIR "/var/lib/fleetd"

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

static json_t *jstr_or_null(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

static struct fleet_store *open_store(const char *group, const char *dir)
{
	struct fleet_store *st;
	struct fleet_errctx ec = {0};
	char err[sizeof(ec.detail) + 80];
	fleet_err e = fleet_store_open(dir ? dir : DEFAULT_STATE_DIR, FLEET_STORE_READONLY, &st, &ec);
	if (e) {
		fprintf(stderr, "fleetctl: %s: cannot open the store: %s (%s)\n", group,
			fleet_errctx_text(&ec, err, sizeof(err)), fleet_err_str(e));
		return NULL;
	}
	return st;
}

static int store_failed(const char *group, struct fleet_store *st, fleet_err e)
{
	fprintf(stderr, "fleetctl: %s: %s (%s)\n", group, fleet_store_errmsg(st),
		fleet_err_str(e));
	fleet_store_close(st);
	return e == FLEET_STORE_E_NOT_FOUND ? FLEETCTL_EXIT_REFUSED : FLEETCTL_EXIT_USAGE;
}

int cmd_claims(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("claims", argc, argv, 1, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = open_store("claims", dir);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_claim *c;
	size_t n;
	fleet_err e = fleet_store_claims_list(st, &c, &n);
	if (e)
		return store_failed("claims", st, e);
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-24s %-15s %6s %-20s %-20s %s\n", "SERIAL", "REASON", "COUNT",
		       "FIRST_SEEN", "LAST_SEEN", "EK_HASH / EK_HASH_ECC");
	for (size_t i = 0; i < n; i++) {
		char f[32], l[32];
		when(c[i].first_seen, f);
		when(c[i].last_seen, l);
		if (!json) {
			printf("%-24s %-15s %6lld %-20s %-20s", c[i].serial, c[i].reason,
			       (long long)c[i].count, f, l);
			for (size_t k = 0; k < c[i].n_eks; k++)
				printf("%s%s/%s", k ? ", " : " ",
				       c[i].eks[k].ek_hash[0] ? c[i].eks[k].ek_hash : "-",
				       c[i].eks[k].ek_hash_ecc[0] ? c[i].eks[k].ek_hash_ecc : "-");
			printf("%s\n", c[i].eks_dropped ? " (more EKs seen than kept)" : "");
			continue;
		}
		json_t *eks = json_array();
		for (size_t k = 0; k < c[i].n_eks; k++)
			json_array_append_new(
				eks, json_pack("{s:o, s:o, s:o, s:o, s:I}", "ek_hash",
					       jstr_or_null(c[i].eks[k].ek_hash), "ek_hash_ecc",
					       jstr_or_null(c[i].eks[k].ek_hash_ecc), "first_seen",
					       jtime(c[i].eks[k].first_seen), "last_seen",
					       jtime(c[i].eks[k].last_seen), "count",
					       (json_int_t)c[i].eks[k].count));
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:b}", "serial", c[i].serial,
				       "reason", c[i].reason, "first_seen", f, "last_seen", l, "count",
				       (json_int_t)c[i].count, "eks", eks, "eks_dropped",
				       c[i].eks_dropped));
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "claims", arr));
	free(c);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

static json_t *device_json(const struct fleet_store_device *d)
{
	return json_pack("{s:s, s:s, s:o, s:s, s:o, s:o, s:o, s:o, s:b, s:o, s:o}", "name",
			 d->name, "serial", d->serial, "inventory_id",
			 d->inventory_id ? json_integer(d->inventory_id) : json_null(), "state",
			 d->state, "ek_hash", jstr_or_null(d->ek_hash), "ek_hash_ecc",
			 jstr_or_null(d->ek_hash_ecc), "first_admitted", jtime(d->first_admitted),
			 "last_seen", jtime(d->last_seen), "quarantined", d->quarantined,
			 "quarantine_reason", jstr_or_null(d->quarantine_reason), "quarantined_at",
			 jtime(d->quarantined_at));
}

int cmd_devices(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("devices", argc, argv, 1, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = open_store("devices", dir);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_device *d;
	size_t n;
	fleet_err e = fleet_store_devices_list(st, &d, &n);
	if (e)
		return store_failed("devices", st, e);
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-20s %-24s %-13s %-11s %-20s\n", "NAME", "SERIAL", "STATE", "QUARANTINED",
		       "LAST_SEEN");
	for (size_t i = 0; i < n; i++) {
		char l[32];
		when(d[i].last_seen, l);
		if (json)
			json_array_append_new(arr, device_json(&d[i]));
		else
			printf("%-20s %-24s %-13s %-11s %-20s\n", d[i].name, d[i].serial, d[i].state,
			       d[i].quarantined ? "yes" : "no", l);
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "devices", arr));
	free(d);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

/* Certificates issued at an answer that no confirmation completed
 * (store.h, "One admission"): they belong to no device; once the session
 * ends without an admission they are revoked. */
int cmd_provisional(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("provisional", argc, argv, 1, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = open_store("provisional", dir);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_cert *c;
	size_t n;
	fleet_err e = fleet_store_provisional_list(st, &c, &n);
	if (e)
		return store_failed("provisional", st, e);
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-20s %-6s %-40s %-20s %-20s\n", "NAME", "KIND", "SHA1", "ISSUED",
		       "REVOKED");
	for (size_t i = 0; i < n; i++) {
		char is[32], rv[32];
		when(c[i].issued_at, is);
		when(c[i].revoked ? c[i].revoked_at : 0, rv);
		if (json)
			json_array_append_new(
				arr, json_pack("{s:s, s:s, s:s, s:o, s:o, s:b, s:o}", "name",
					       c[i].device, "kind", c[i].kind, "sha1", c[i].sha1,
					       "issued_at", jtime(c[i].issued_at), "not_after",
					       jtime(c[i].not_after), "revoked", c[i].revoked,
					       "revoked_at", c[i].revoked ? jtime(c[i].revoked_at)
								      : json_null()));
		else
			printf("%-20s %-6s %-40s %-20s %-20s\n", c[i].device, c[i].kind, c[i].sha1,
			       is, c[i].revoked ? rv : "no (a session is open)");
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "provisional", arr));
	fleet_store_certs_free(c, n);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

static json_t *verdict_json(const struct fleet_store_verdict *v)
{
	json_t *reasons = json_array();
	for (size_t k = 0; k < v->n_reasons; k++)
		json_array_append_new(reasons, json_string(v->reasons[k]));
	return json_pack("{s:o, s:o, s:s, s:s, s:s, s:o, s:o, s:o}", "time", jtime(v->time),
			 "device", jstr_or_null(v->device), "serial", v->serial, "session",
			 v->session, "result", v->pass ? "pass" : "fail", "reasons", reasons,
			 "ek_hash", jstr_or_null(v->ek_hash), "ek_hash_ecc",
			 jstr_or_null(v->ek_hash_ecc));
}

static void verdict_line(const struct fleet_store_verdict *v)
{
	char t[32];
	when(v->time, t);
	printf("%-20s %-20s %-24s %-4s ", t, v->device[0] ? v->device : "-", v->serial,
	       v->pass ? "pass" : "fail");
	for (size_t k = 0; k < v->n_reasons; k++)
		printf("%s%s", k ? "," : "", v->reasons[k]);
	printf("%s\n", v->n_reasons ? "" : "-");
}

int cmd_verdicts(int argc, char **argv)
{
	const char *dir = NULL, *device = NULL, *limit_s = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {
		{"--state-dir", &dir}, {"--device", &device}, {"--limit", &limit_s}};
	if (fleetctl_parse_opts("verdicts", argc, argv, 1, opts, 3, &json))
		return FLEETCTL_EXIT_USAGE;
	size_t limit = 50;
	if (limit_s) {
		char *end;
		unsigned long long v = strtoull(limit_s, &end, 10);
		if (!limit_s[0] || *end || limit_s[0] == '-' || v < 1 || v > FLEET_STORE_LIST_MAX) {
			fprintf(stderr, "fleetctl: verdicts: --limit must be 1 to %d\n",
				FLEET_STORE_LIST_MAX);
			return FLEETCTL_EXIT_USAGE;
		}
		limit = (size_t)v;
	}
	struct fleet_store *st = open_store("verdicts", dir);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_verdict *v;
	size_t n;
	fleet_err e = fleet_store_verdicts_list(st, device, limit, &v, &n);
	if (e)
		return store_failed("verdicts", st, e);
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-20s %-20s %-24s %-4s %s\n", "TIME", "DEVICE", "SERIAL", "RESULT",
		       "REASONS");
	for (size_t i = 0; i < n; i++) {
		if (json)
			json_array_append_new(arr, verdict_json(&v[i]));
		else
			verdict_line(&v[i]);
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "verdicts", arr));
	free(v);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

static int device_show(const char *name, const char *dir, int json)
{
	struct fleet_store *st = open_store("device", dir);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_device d;
	struct fleet_store_cert *c = NULL;
	struct fleet_store_verdict *v = NULL;
	size_t nc = 0, nv = 0;
	fleet_err e;
	/* One snapshot: the row, its certificates and its last verdict as of
	 * one moment, while fleetd goes on admitting. */
	if ((e = fleet_store_snapshot_begin(st)))
		return store_failed("device", st, e);
	if ((e = fleet_store_device_get_by_name(st, name, &d)) ||
	    (e = fleet_store_certs_for_device(st, name, &c, &nc)) ||
	    (e = fleet_store_verdicts_list(st, name, 1, &v, &nv))) {
		fleet_store_snapshot_end(st);
		fleet_store_certs_free(c, nc);
		return store_failed("device", st, e);
	}
	fleet_store_snapshot_end(st);
	if (json) {
		json_t *certs = json_array();
		for (size_t i = 0; i < nc; i++)
			json_array_append_new(
				certs, json_pack("{s:s, s:s, s:o, s:o, s:b, s:o}", "kind", c[i].kind,
						 "sha1", c[i].sha1, "issued_at", jtime(c[i].issued_at),
						 "not_after", jtime(c[i].not_after), "revoked",
						 c[i].revoked, "revoked_at", jtime(c[i].revoked_at)));
		fleetctl_print_json(json_pack("{s:o, s:o, s:o}", "device", device_json(&d),
					      "certificates", certs, "last_verdict",
					      nv ? verdict_json(&v[0]) : json_null()));
	} else {
		char a[32], l[32], q[32];
		when(d.first_admitted, a);
		when(d.last_seen, l);
		when(d.quarantined_at, q);
		printf("name:            %s\nserial:          %s\nstate:           %s\n", d.name,
		       d.serial, d.state);
		if (d.inventory_id)
			printf("inventory id:    %lld\n", (long long)d.inventory_id);
		printf("ek_hash:         %s\nek_hash_ecc:     %s\n", d.ek_hash[0] ? d.ek_hash : "-",
		       d.ek_hash_ecc[0] ? d.ek_hash_ecc : "-");
		printf("first admitted:  %s\nlast seen:       %s\n", a, l);
		if (d.quarantined)
			printf("quarantined:     since %s: %s\n", q, d.quarantine_reason);
		else
			printf("quarantined:     no\n");
		printf("certificates:\n");
		for (size_t i = 0; i < nc; i++) {
			char is[32], na[32];
			when(c[i].issued_at, is);
			when(c[i].not_after, na);
			printf("  %-6s sha1 %s issued %s not after %s%s\n", c[i].kind, c[i].sha1, is,
			       na, c[i].revoked ? " REVOKED" : "");
		}
		if (!nc)
			printf("  -\n");
		printf("last verdict:\n  ");
		if (nv)
			verdict_line(&v[0]);
		else
			printf("-\n");
	}
	fleet_store_certs_free(c, nc);
	free(v);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}

int cmd_device(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], "show") != 0 || argv[2][0] == '-') {
		fprintf(stderr, "usage: fleetctl device show NAME [--state-dir DIR] [--json]\n");
		return FLEETCTL_EXIT_USAGE;
	}
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	if (fleetctl_parse_opts("device", argc, argv, 3, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	return device_show(argv[2], dir, json);
}

/* What an operator asks of the installs (docs/provision.md): each
 * provision, its stage, its expiry, its token and CSR, and why one
 * stopped. --all adds the finished ones. */
int cmd_provisions(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0;
	const struct fleetctl_opt opts[] = {{"--state-dir", &dir}};
	bool all = false;
	/* --all is a flag: taken out before the option parser sees it */
	int w = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--all"))
			all = true;
		else
			argv[w++] = argv[i];
	}
	argc = w;
	if (fleetctl_parse_opts("provisions", argc, argv, 1, opts, 1, &json))
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store *st = open_store("provisions", dir);
	if (!st)
		return FLEETCTL_EXIT_USAGE;
	struct fleet_store_provision *p;
	size_t n;
	fleet_err e = fleet_store_provisions_list(st, !all, &p, &n);
	if (e)
		return store_failed("provisions", st, e);
	json_t *arr = json ? json_array() : NULL;
	if (!json)
		printf("%-5s %-20s %-12s %-10s %-20s %-8s %-8s %-24s %s\n", "ID", "DEVICE", "ROLE",
		       "STAGE", "EXPIRES", "TOKEN", "TOKEN_ST", "CSR", "STOPPED");
	for (size_t i = 0; i < n; i++) {
		char exp[32];
		when(p[i].expires_at, exp);
		const char *stage = fleet_store_provision_stage_str(p[i].stage);
		const char *tst = fleet_store_token_state_str(p[i].token_state);
		if (!json) {
			printf("%-5lld %-20s %-12s %-10s %-20s %-8s %-8s %-24s %s\n",
			       (long long)p[i].id, p[i].device, p[i].role, stage, exp,
			       p[i].token_id[0] ? p[i].token_id : "-", tst,
			       p[i].csr_name[0] ? p[i].csr_name : "-",
			       p[i].stop_reason[0] ? p[i].stop_reason : "-");
			continue;
		}
		json_array_append_new(
			arr, json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:b, s:o, s:o, "
				       "s:o}",
				       "id", (json_int_t)p[i].id, "device", p[i].device, "role",
				       p[i].role, "stage", stage, "workflow", p[i].workflow,
				       "expires_at", exp, "token_id", jstr_or_null(p[i].token_id),
				       "token_state", tst, "csr", jstr_or_null(p[i].csr_name),
				       "csr_issued", p[i].csr_issued, "delivered_at",
				       p[i].delivered_at ? jtime(p[i].delivered_at) : json_null(),
				       "ended_at", p[i].ended_at ? jtime(p[i].ended_at) : json_null(),
				       "stop_reason", jstr_or_null(p[i].stop_reason)));
	}
	if (json)
		fleetctl_print_json(json_pack("{s:o}", "provisions", arr));
	fleet_store_provisions_free(p, n);
	fleet_store_close(st);
	return FLEETCTL_EXIT_OK;
}
