/*
 * test_applier_plan.c: the applier's reading and planning, over parsed
 * inputs: spire-nodes.json (fleet_spire_nodes_decode), the CLI's JSON (sp_parse_*), the
 * configuration (ac_parse) and the plan (plan_build). Each test names the
 * rule it holds.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spire-server-fleet-entries/applier_config.h"
#include "spire-server-fleet-entries/plan.h"
#include "lib/runner.h"
#include "lib/spire_nodes_format.h"
#include "spire-server-fleet-entries/spire_output.h"

#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B64 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define C64 "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define D64 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define E64 "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
#define L40 "1111111111111111111111111111111111111111"
#define M40 "2222222222222222222222222222222222222222"

#define HEAD "{\"version\":1,\"serial\":42,\"generated_at\":\"2026-11-30T05:00:00Z\"," \
	     "\"trust_domain\":\"fleet.example\","
/* w1: RSA A, ECC B; w2: RSA C. */
#define W1 "{\"name\":\"w1\",\"ek_hash\":\"" A64 "\",\"ek_hash_ecc\":\"" B64 "\",\"ldevid_sha1\":[\"" L40 "\"]}"
#define W2 "{\"name\":\"w2\",\"ek_hash\":\"" C64 "\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[]}"
#define W9 "{\"name\":\"w9\",\"ek_hash\":\"" E64 "\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[\"" M40 "\"]," \
	   "\"not_after\":\"2027-01-01T00:00:00Z\"}"

static void parse_file(const char *text, struct fleet_spire_nodes *f)
{
	struct fleet_errctx ec;
	fleet_err e = fleet_spire_nodes_decode((const uint8_t *)text, strlen(text), f, &ec);
	if (e)
		fail_msg("the decoder refused a good file: %s", ec.detail);
}

static fleet_err parse_bad(const char *text, struct fleet_errctx *ec)
{
	struct fleet_spire_nodes f;
	fleet_err e = fleet_spire_nodes_decode((const uint8_t *)text, strlen(text), &f, ec);
	assert_int_equal(f.eligible, NULL);
	return e;
}

/* An Entry as the CLI prints it. */
#define ENTRY(id, path, parent, sel) \
	"{\"id\":\"" id "\",\"spiffe_id\":{\"trust_domain\":\"fleet.example\",\"path\":\"" path "\"}," \
	"\"parent_id\":{\"trust_domain\":\"fleet.example\",\"path\":\"" parent "\"}," \
	"\"selectors\":[" sel "],\"admin\":false,\"downstream\":false,\"revision_number\":\"0\"}"
#define SEL(t, v) "{\"type\":\"" t "\",\"value\":\"" v "\"}"
#define NODE(id, name, ek) ENTRY(id, "/node/" name, "/spire/server", SEL("tpm", "pub_hash:" ek))
#define FOREIGN ENTRY("9c1e-foreign", "/workload/db", "/node/w1", SEL("unix", "uid:0"))

static void parse_server(const char *entries, struct sp_entries *l)
{
	char buf[16384];
	struct fleet_errctx ec;
	snprintf(buf, sizeof(buf), "{\"entries\":[%s],\"next_page_token\":\"\"}\n", entries);
	if (sp_parse_entries((const uint8_t *)buf, strlen(buf), l, &ec))
		fail_msg("sp_parse_entries refused: %s", ec.detail);
}

static void make_plan(const char *file, const char *entries, struct plan *p)
{
	struct fleet_spire_nodes f;
	struct sp_entries l;
	struct applier_config c;
	struct fleet_errctx ec;
	ac_defaults(&c);
	parse_file(file, &f);
	parse_server(entries, &l);
	struct sp_agents none = {0};
	if (plan_build(&f, &c, &l, &none, p, &ec))
		fail_msg("plan_build: %s", ec.detail);
	sp_entries_free(&l);
	fleet_spire_nodes_free(&f);
}

/* An Agent as `agent list` prints it. */
#define AGENT(path, type, banned, sel) \
	"{\"agent_version\":\"\",\"attestation_type\":\"" type "\",\"banned\":" banned "," \
	"\"can_reattest\":true,\"id\":{\"path\":\"" path "\",\"trust_domain\":\"fleet.example\"}," \
	"\"selectors\":[" sel "],\"x509svid_expires_at\":\"1764482400\"," \
	"\"x509svid_serial_number\":\"77\"}"
#define TPM_AGENT(ek) AGENT("/spire/agent/tpm/" ek, "tpm", "false", SEL("tpm", "pub_hash:" ek))
#define DEVID_AGENT(sha1, cn, banned) \
	AGENT("/spire/agent/tpm_devid/" sha1, "tpm_devid", banned, \
	      SEL("tpm_devid", "subject:cn:" cn) "," SEL("tpm_devid", "issuer:cn:fleetd identity CA") \
	      "," SEL("tpm_devid", "ca:fingerprint:" M40))
#define X40 "3333333333333333333333333333333333333333"
#define Y40 "4444444444444444444444444444444444444444"

static fleet_err parse_agents(const char *agents, struct sp_agents *l, struct fleet_errctx *ec)
{
	char buf[16384];
	snprintf(buf, sizeof(buf), "{\"agents\":[%s],\"next_page_token\":\"\"}\n", agents);
	return sp_parse_agents((const uint8_t *)buf, strlen(buf), l, ec);
}

static void make_plan_agents(const char *file, const char *entries, const char *agents,
			     struct plan *p)
{
	struct fleet_spire_nodes f;
	struct sp_entries l;
	struct sp_agents ag;
	struct applier_config c;
	struct fleet_errctx ec;
	ac_defaults(&c);
	parse_file(file, &f);
	parse_server(entries, &l);
	if (parse_agents(agents, &ag, &ec))
		fail_msg("sp_parse_agents refused: %s", ec.detail);
	if (plan_build(&f, &c, &l, &ag, p, &ec))
		fail_msg("plan_build: %s", ec.detail);
	sp_agents_free(&ag);
	sp_entries_free(&l);
	fleet_spire_nodes_free(&f);
}

static const struct plan_action *find(const struct plan *p, enum plan_kind k, const char *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->a[i].kind == k &&
		    !strcmp(k == PK_BAN ? p->a[i].spiffe_id : p->a[i].entry_id, s))
			return &p->a[i];
	return NULL;
}

/* A fresh server: one node entry per eligible device and EK. */
static void test_fresh_server_gets_one_entry_per_ek(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[" W1 "," W2 "],\"revoked\":[]}", "", &p);
	assert_int_equal(p.n, 3);
	assert_int_equal(plan_count(&p, PK_CREATE), 3);
	const struct plan_action *a = find(&p, PK_CREATE, "fleet-w1-ecc");
	assert_non_null(a);
	assert_string_equal(a->spiffe_id, "spiffe://fleet.example/node/w1");
	assert_string_equal(a->parent_id, "spiffe://fleet.example/spire/server");
	assert_int_equal(a->n_selectors, 1);
	assert_string_equal(a->selectors[0], "tpm:pub_hash:" B64);
	assert_non_null(find(&p, PK_CREATE, "fleet-w1"));
	assert_non_null(find(&p, PK_CREATE, "fleet-w2"));
	assert_null(find(&p, PK_CREATE, "fleet-w2-ecc"));
	assert_int_equal(p.removed_nodes, 0);
	plan_free(&p);
}

/* Entries that match exactly, and foreign ones, plan nothing. */
static void test_matching_server_plans_nothing(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[" W1 "," W2 "],\"revoked\":[]}",
		  FOREIGN "," NODE("fleet-w1", "w1", A64) "," NODE("fleet-w1-ecc", "w1", B64) ","
			  NODE("fleet-w2", "w2", C64),
		  &p);
	assert_int_equal(p.n, 0);
	plan_free(&p);
}

/* Only fleet- entries are kept from the listing; the rest are counted. */
static void test_foreign_entries_are_not_kept(void **state)
{
	(void)state;
	struct sp_entries l;
	parse_server(FOREIGN "," NODE("fleet-w2", "w2", C64) ","
			     ENTRY("fleetx", "/node/w9", "/spire/server", SEL("tpm", "x")),
		     &l);
	assert_int_equal(l.n_total, 3);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.e[0].id, "fleet-w2");
	assert_string_equal(l.e[0].selectors[0], "tpm:pub_hash:" C64);
	sp_entries_free(&l);
}

/* A listing with a next_page_token is one page, not the list. */
static void test_partial_listing_refused(void **state)
{
	(void)state;
	const char *t = "{\"entries\":[],\"next_page_token\":\"500\"}";
	struct sp_entries l;
	struct fleet_errctx ec;
	assert_int_equal(sp_parse_entries((const uint8_t *)t, strlen(t), &l, &ec),
			 FLEET_E_MALFORMED);
	assert_non_null(strstr(ec.detail, "next_page_token"));
	const char *u = "{\"next_page_token\":\"\"}";
	assert_int_equal(sp_parse_entries((const uint8_t *)u, strlen(u), &l, &ec),
			 FLEET_E_MALFORMED);
}

/* A fleet- entry whose selectors, parent or admin flag differ is updated. */
static void test_differing_entry_is_updated(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}",
		  NODE("fleet-w2", "w2", A64), &p);
	assert_int_equal(p.n, 1);
	const struct plan_action *a = find(&p, PK_UPDATE, "fleet-w2");
	assert_non_null(a);
	assert_string_equal(a->selectors[0], "tpm:pub_hash:" C64);
	assert_string_equal(a->parent_id, "spiffe://fleet.example/spire/server");
	plan_free(&p);
	make_plan(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}",
		  ENTRY("fleet-w2", "/node/w2", "/spire/agent/x", SEL("tpm", "pub_hash:" C64)), &p);
	assert_non_null(find(&p, PK_UPDATE, "fleet-w2"));
	plan_free(&p);
}

/* A device that left: its entries deleted, its agents banned (EK from the
 * entry's selector), bans before deletes, one node removed. */
static void test_departed_device_banned_then_deleted(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}",
		  NODE("fleet-w1", "w1", A64) "," NODE("fleet-w1-ecc", "w1", B64) ","
			  NODE("fleet-w2", "w2", C64),
		  &p);
	assert_int_equal(p.removed_nodes, 1);
	assert_int_equal(plan_count(&p, PK_DELETE), 2);
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" A64));
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" B64));
	assert_int_equal(plan_count(&p, PK_BAN), 2);
	assert_int_equal(p.n_notes, 1); /* no LDevID known for w1: said */
	assert_non_null(strstr(p.notes[0], "w1"));
	for (size_t i = 1; i < p.n; i++)
		assert_true(p.a[i - 1].kind <= p.a[i].kind);
	plan_free(&p);
}

/* A device that left for a failed verdict or a quarantine (no revoked
 * record, so the file holds no LDevID of it): both its agents are banned,
 * the tpm one (EK hash from its entry) and the tpm_devid one found in the
 * agent list by the subject CN=<name> of fleetd's LDevIDs; another node's
 * agents and a foreign agent are not; bans before deletes; one removal;
 * nothing goes unsaid. */
static void test_departed_device_all_agents_banned(void **state)
{
	(void)state;
	struct plan p;
	make_plan_agents(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}",
			 NODE("fleet-w1", "w1", A64) "," NODE("fleet-w1-ecc", "w1", B64) ","
				 NODE("fleet-w2", "w2", C64),
			 TPM_AGENT(A64) "," DEVID_AGENT(X40, "w1", "false") "," TPM_AGENT(C64) ","
				 DEVID_AGENT(Y40, "w2", "false") ","
				 AGENT("/spire/agent/join_token/7f3c", "join_token", "false", ""),
			 &p);
	assert_int_equal(p.removed_nodes, 1);
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" A64));
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" B64));
	const struct plan_action *d = find(&p, PK_BAN,
					   "spiffe://fleet.example/spire/agent/tpm_devid/" X40);
	assert_non_null(d);
	assert_string_equal(d->device, "w1");
	assert_string_equal(d->why, "left the eligible list");
	assert_int_equal(plan_count(&p, PK_BAN), 3);
	assert_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" C64));
	assert_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm_devid/" Y40));
	assert_int_equal(plan_count(&p, PK_DELETE), 2);
	assert_int_equal(p.n_notes, 0);
	for (size_t i = 1; i < p.n; i++)
		assert_true(p.a[i - 1].kind <= p.a[i].kind);
	plan_free(&p);

	/* With another attestor's selectors configured, an agent holding a
	 * departing entry's selector that names the device is that device's;
	 * a shared selector that names none (the issuer) bans nothing. */
	struct fleet_spire_nodes f;
	struct sp_entries l;
	struct sp_agents ag;
	struct applier_config c;
	struct fleet_errctx ec;
	const char *conf = "selector = x509pop:subject:cn:{name}\n"
			   "selector = x509pop:ca:fingerprint:" M40 "\n";
	ac_defaults(&c);
	assert_int_equal(ac_parse(conf, strlen(conf), &c, &ec), FLEET_OK);
	parse_file(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}", &f);
	parse_server(ENTRY("fleet-w1", "/node/w1", "/spire/server",
			   SEL("x509pop", "ca:fingerprint:" M40) "," SEL("x509pop", "subject:cn:w1")) ","
		     ENTRY("fleet-w2", "/node/w2", "/spire/server",
			   SEL("x509pop", "ca:fingerprint:" M40) "," SEL("x509pop", "subject:cn:w2")),
		     &l);
	assert_int_equal(
		parse_agents(
			AGENT("/spire/agent/x509pop/" X40, "x509pop", "false",
			      SEL("x509pop", "subject:cn:w1") "," SEL(
				      "x509pop",
				      "ca:fingerprint:" M40)) "," AGENT("/spire/agent/x509pop/" Y40,
									"x509pop", "false",
									SEL("x509pop", "subject:cn:"
										       "w2") "," SEL(
										"x509pop",
										"ca:"
										"fingerprint"
										":" M40)),
			&ag, &ec),
		FLEET_OK);
	assert_int_equal(plan_build(&f, &c, &l, &ag, &p, &ec), FLEET_OK);
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/x509pop/" X40));
	assert_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/x509pop/" Y40));
	plan_free(&p);
	sp_agents_free(&ag);
	sp_entries_free(&l);
	fleet_spire_nodes_free(&f);
}

/* An agent the list shows banned is not banned again; one that also
 * attests as an eligible device is never banned, and that is said. */
static void test_agent_ban_guards(void **state)
{
	(void)state;
	struct plan p;
	make_plan_agents(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}",
			 NODE("fleet-w1", "w1", A64) "," NODE("fleet-w2", "w2", C64),
			 AGENT("/spire/agent/tpm/" A64, "tpm", "true", SEL("tpm", "pub_hash:" A64)) ","
				 AGENT("/spire/agent/tpm_devid/" X40, "tpm_devid", "false",
				       SEL("tpm_devid", "subject:cn:w1") ","
				       SEL("tpm", "pub_hash:" C64)),
			 &p);
	assert_int_equal(plan_count(&p, PK_BAN), 0);
	assert_int_equal(p.n_notes, 1);
	assert_non_null(strstr(p.notes[0], "eligible w2"));
	plan_free(&p);
}

/* A revoked device's tpm_devid agent with an LDevID the record no longer
 * lists is found by its subject CN. */
static void test_revoked_device_agents_from_list(void **state)
{
	(void)state;
	struct plan p;
	make_plan_agents(HEAD "\"eligible\":[],\"revoked\":[" W9 "]}", "",
			 DEVID_AGENT(X40, "w9", "false") "," DEVID_AGENT(Y40, "w2", "false"), &p);
	assert_int_equal(p.removed_nodes, 0);
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm_devid/" M40));
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" E64));
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm_devid/" X40));
	assert_int_equal(plan_count(&p, PK_BAN), 3);
	plan_free(&p);
}

/* The agent list reader: the real shape accepted; a page, a missing or
 * malformed field, or an ID listed twice refused. */
static void test_agent_list(void **state)
{
	(void)state;
	struct sp_agents l;
	struct fleet_errctx ec;
	assert_int_equal(parse_agents(DEVID_AGENT(X40, "w1", "true") "," TPM_AGENT(A64), &l, &ec),
			 FLEET_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.a[0].id, "spiffe://fleet.example/spire/agent/tpm/" A64);
	assert_string_equal(l.a[0].attestation_type, "tpm");
	assert_int_equal(l.a[0].banned, 0);
	assert_int_equal(l.a[1].banned, 1);
	assert_int_equal(l.a[1].n_selectors, 3);
	assert_true(sp_agent_has_selector(&l.a[1], "tpm_devid:subject:cn:w1"));
	assert_false(sp_agent_has_selector(&l.a[1], "tpm_devid:subject:cn:w"));
	sp_agents_free(&l);
	const char *bad_raw[] = {
		"", "[]", "{\"agents\":{}}", "{\"next_page_token\":\"\"}",
		"{\"agents\":[],\"next_page_token\":\"1000\"}",
		"{\"agents\":[],\"agents\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad_raw) / sizeof(bad_raw[0]); i++) {
		if (sp_parse_agents((const uint8_t *)bad_raw[i], strlen(bad_raw[i]), &l, &ec) !=
		    FLEET_E_MALFORMED)
			fail_msg("agent list %zu accepted", i);
		assert_null(l.a);
	}
	const char *bad[] = {
		AGENT("/node/w1", "tpm", "false", ""),
		AGENT("/spire/agent/", "tpm", "false", ""),
		AGENT("/spire/agent/tpm/x", "tpm", "\"no\"", ""),
		AGENT("/spire/agent/tpm/x", "tpm", "false", "{\"type\":\"tpm\"}"),
		"{\"id\":{\"trust_domain\":\"fleet.example\",\"path\":\"/spire/agent/x\"},"
		"\"banned\":false,\"selectors\":[]}",
		"{\"attestation_type\":\"x\",\"banned\":false,\"selectors\":[]}",
		"{\"id\":{\"trust_domain\":\"fleet.example\",\"path\":\"/spire/agent/x\"},"
		"\"attestation_type\":\"x\",\"banned\":false}",
		TPM_AGENT(A64) "," TPM_AGENT(A64),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_agents(bad[i], &l, &ec) != FLEET_E_MALFORMED)
			fail_msg("agent %zu accepted", i);
		assert_null(l.a);
		assert_true(ec.detail[0] != '\0');
	}
}

/* Revoked: the record's EKs and LDevIDs are all banned; no removal. */
static void test_revoked_device_banned(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[],\"revoked\":[" W9 "]}", "", &p);
	assert_int_equal(p.removed_nodes, 0);
	assert_int_equal(p.n, 2);
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm_devid/" M40));
	assert_non_null(find(&p, PK_BAN, "spiffe://fleet.example/spire/agent/tpm/" E64));
	plan_free(&p);
}

/* Two devices leaving count as two removals (devices, not entries). */
static void test_removals_counted_by_device(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[],\"revoked\":[]}",
		  NODE("fleet-w1", "w1", A64) "," NODE("fleet-w1-ecc", "w1", B64) ","
			  NODE("fleet-w2", "w2", C64),
		  &p);
	assert_int_equal(p.removed_nodes, 2);
	plan_free(&p);
	/* An unknown fleet- entry counts as its own node: the count errs high. */
	make_plan(HEAD "\"eligible\":[],\"revoked\":[]}",
		  ENTRY("fleet-odd", "/elsewhere", "/spire/server", SEL("tpm", "x")), &p);
	assert_int_equal(p.removed_nodes, 1);
	plan_free(&p);
}

/* A stale entry of a still-eligible device (its ECC EK withdrawn) is
 * deleted, is no removal, and bans nothing. */
static void test_stale_entry_of_eligible_device(void **state)
{
	(void)state;
	struct plan p;
	make_plan(HEAD "\"eligible\":[" W2 "],\"revoked\":[]}",
		  NODE("fleet-w2", "w2", C64) "," NODE("fleet-w2-ecc", "w2", D64), &p);
	assert_int_equal(p.removed_nodes, 0);
	assert_int_equal(p.n, 1);
	assert_non_null(find(&p, PK_DELETE, "fleet-w2-ecc"));
	plan_free(&p);
}

/* The file's rules: each malformed kind is refused with a reason. */
static void test_file_rules(void **state)
{
	(void)state;
	struct fleet_errctx ec;
	struct {
		const char *text, *needle;
	} bad[] = {
		{"{\"version\":1", "not JSON"},
		{"{\"version\":2,\"serial\":1,\"generated_at\":\"2026-11-30T05:00:00Z\","
		 "\"trust_domain\":\"t\",\"eligible\":[],\"revoked\":[]}", "version"},
		{HEAD "\"eligible\":[" W2 "," W2 "],\"revoked\":[]}", "repeats"},
		{HEAD "\"eligible\":[" W2 "],\"revoked\":[" W9 "],\"x\":1}", "does not know"},
		{HEAD "\"eligible\":[{\"name\":\"w1\",\"ek_hash\":\"" A64 "0\",\"ek_hash_ecc\":null,"
		      "\"ldevid_sha1\":[]}],\"revoked\":[]}", "64 lowercase hex"},
		{HEAD "\"eligible\":[{\"name\":\"w1\",\"ek_hash\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[]}],"
		      "\"revoked\":[]}", "lowercase"},
		{HEAD "\"eligible\":[{\"name\":\"w1\",\"ek_hash\":\"" A64 "\",\"ek_hash_ecc\":null,"
		      "\"ldevid_sha1\":[],\"not_after\":\"2027-01-01T00:00:00Z\"}],\"revoked\":[]}",
		 "does not know"},
		{HEAD "\"eligible\":[{\"name\":\"w1\",\"ek_hash\":\"" A64 "\",\"ek_hash_ecc\":null,"
		      "\"ldevid_sha1\":[]}],\"revoked\":[{\"name\":\"w1-ecc\",\"ek_hash\":\"" C64
		      "\",\"ek_hash_ecc\":null,\"ldevid_sha1\":[],\"not_after\":"
		      "\"2027-01-01T00:00:00Z\"}]}", "collide"},
		{HEAD "\"eligible\":[" W1 ",{\"name\":\"w3\",\"ek_hash\":\"" B64 "\",\"ek_hash_ecc\":"
		      "null,\"ldevid_sha1\":[]}],\"revoked\":[]}", "share an EK"},
		{HEAD "\"eligible\":[{\"name\":\"../w\",\"ek_hash\":\"" A64 "\",\"ek_hash_ecc\":null,"
		      "\"ldevid_sha1\":[]}],\"revoked\":[]}", "name"},
		{HEAD "\"eligible\":[],\"revoked\":[{\"name\":\"w9\",\"ek_hash\":\"" E64 "\","
		      "\"ek_hash_ecc\":null,\"ldevid_sha1\":[],\"not_after\":\"2027-13-01T00:00:00Z\"}]}",
		 "not_after"},
		{"{\"version\":1,\"serial\":1,\"serial\":2}", "not JSON"},
		{HEAD "\"eligible\":[],\"revoked\":[],\"serial\":1}", "not JSON"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ec.detail[0] = '\0';
		assert_int_equal(parse_bad(bad[i].text, &ec), FLEET_E_MALFORMED);
		if (!strstr(ec.detail, bad[i].needle))
			fail_msg("case %zu: \"%s\" does not say %s", i, ec.detail, bad[i].needle);
	}
	struct fleet_spire_nodes f;
	parse_file(HEAD "\"eligible\":[" W1 "," W2 "],\"revoked\":[" W9 "]}", &f);
	assert_int_equal(f.n_eligible, 2);
	assert_int_equal(f.n_revoked, 1);
	assert_int_equal(f.serial, 42);
	assert_string_equal(f.eligible[1].ek_hash_ecc, "");
	assert_string_equal(f.revoked[0].ldevid_sha1[0], M40);
	fleet_spire_nodes_free(&f);
}

/* The configuration: templates replace the defaults; bad lines refused. */
static void test_config(void **state)
{
	(void)state;
	struct applier_config c;
	struct fleet_errctx ec;
	const char *good = "# site\nselector = tpm_devid:subject:cn:{name}\n"
			   "selector = tpm_devid:issuer:cn:fleet\ntimeout_seconds = 5\n";
	ac_defaults(&c);
	assert_int_equal(ac_parse(good, strlen(good), &c, &ec), FLEET_OK);
	assert_int_equal(c.n_selector, 2);
	assert_int_equal(c.per_ek, 0);
	assert_int_equal(c.n_agent_id, 2); /* untouched defaults */
	assert_int_equal(c.timeout_seconds, 5);
	const char *bad[] = {"selector = tpm:pub_hash:{ek}\n", "colour = blue\n",
			     "selector = tpm:x\n", "agent_id = spiffe://other/spire/agent/x\n",
			     "selector = tpm:{ek_hash}{ek_hash}\n", "timeout_seconds = 0\n",
			     "selector\n", "agent_id = spiffe://{trust_domain}/spire/agent/{ek_hash}/{ldevid_sha1}\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ac_defaults(&c);
		if (ac_parse(bad[i], strlen(bad[i]), &c, &ec) != FLEET_E_MALFORMED)
			fail_msg("config %zu accepted", i);
	}
	/* One entry per device when no selector names the EK. */
	struct fleet_spire_nodes f;
	struct sp_entries l = {0};
	struct plan p;
	ac_defaults(&c);
	assert_int_equal(ac_parse(good, strlen(good), &c, &ec), FLEET_OK);
	parse_file(HEAD "\"eligible\":[" W1 "],\"revoked\":[]}", &f);
	struct sp_agents no_agents = {0};
	assert_int_equal(plan_build(&f, &c, &l, &no_agents, &p, &ec), FLEET_OK);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.a[0].entry_id, "fleet-w1");
	assert_string_equal(p.a[0].selectors[0], "tpm_devid:issuer:cn:fleet");
	assert_string_equal(p.a[0].selectors[1], "tpm_devid:subject:cn:w1");
	plan_free(&p);
	fleet_spire_nodes_free(&f);
}

/* The batch result: the per-entry status code is the answer. */
static void test_batch_result(void **state)
{
	(void)state;
	int code = -1;
	char msg[100];
	struct fleet_errctx ec;
	const char *ok = "{\"results\":[{\"entry\":{},\"status\":{\"code\":0,\"message\":\"OK\"}}]}\n";
	const char *no = "{\"results\":[{\"id\":\"fleet-w1\",\"status\":{\"code\":6,"
			 "\"message\":\"similar entry already exists\"}}]}";
	assert_int_equal(sp_parse_batch_result((const uint8_t *)ok, strlen(ok), &code, msg,
					       sizeof(msg), &ec),
			 FLEET_OK);
	assert_int_equal(code, 0);
	assert_int_equal(sp_parse_batch_result((const uint8_t *)no, strlen(no), &code, msg,
					       sizeof(msg), &ec),
			 FLEET_OK);
	assert_int_equal(code, 6);
	assert_string_equal(msg, "similar entry already exists");
	const char *two = "{\"results\":[{\"status\":{\"code\":0}},{\"status\":{\"code\":0}}]}";
	const char *none = "{\"results\":[{\"id\":\"x\"}]}";
	assert_int_equal(sp_parse_batch_result((const uint8_t *)two, strlen(two), &code, msg,
					       sizeof(msg), &ec),
			 FLEET_E_MALFORMED);
	assert_int_equal(sp_parse_batch_result((const uint8_t *)none, strlen(none), &code, msg,
					       sizeof(msg), &ec),
			 FLEET_E_MALFORMED);
	const char *nf = "Error: rpc error: code = NotFound desc = agent not found\n";
	const char *other = "Error: rpc error: code = Internal desc = failed to ban agent\n";
	assert_true(sp_ban_said_not_found((const uint8_t *)nf, strlen(nf)));
	assert_false(sp_ban_said_not_found((const uint8_t *)other, strlen(other)));
}

/* The runner: argv reaches the program as given (no shell), output past
 * its cap and a program past its deadline are killed, PATH lookups skip
 * relative elements. */
static void test_runner_bounds(void **state)
{
	(void)state;
	char path[4096];
	struct fleet_buf out, err;
	struct fleet_run_result r;
	assert_int_equal(fleet_runner_resolve("sh", path, sizeof(path)), FLEET_OK);
	char *echo[] = {"sh", "-c", "printf '%s|' \"$0\" \"$1\"", "a b;c", "$(x)", NULL};
	fb_init(&out);
	fb_init(&err);
	assert_int_equal(fleet_runner_run(path, echo, NULL, 10, 1024, &out, &err, &r), FLEET_OK);
	assert_true(r.exited);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(out.len, strlen("a b;c|$(x)|"));
	assert_memory_equal(out.data, "a b;c|$(x)|", out.len);
	fb_free(&out);

	char *loud[] = {"sh", "-c", "while :; do echo yyyyyyyyyyyyyyyy; done", NULL};
	fb_init(&out);
	assert_int_equal(fleet_runner_run(path, loud, NULL, 10, 4096, &out, &err, &r), FLEET_OK);
	assert_true(r.overflow);
	assert_false(r.exited);
	assert_true(out.len <= 4096);
	fb_free(&out);

	char *slow[] = {"sh", "-c", "exec sleep 30", NULL};
	fb_init(&out);
	assert_int_equal(fleet_runner_run(path, slow, NULL, 1, 4096, &out, &err, &r), FLEET_OK);
	assert_true(r.timed_out);
	assert_false(r.exited);
	fb_free(&out);

	char *quiet[] = {"sh", "-c", "exec >&- 2>&-; sleep 30", NULL};
	fb_init(&out);
	assert_int_equal(fleet_runner_run(path, quiet, NULL, 1, 4096, &out, &err, &r), FLEET_OK);
	assert_true(r.timed_out);
	fb_free(&out);
	fb_free(&err);

	const char *saved = getenv("PATH");
	char *keep = saved ? strdup(saved) : NULL;
	setenv("PATH", ".:bin", 1);
	assert_int_equal(fleet_runner_resolve("sh", path, sizeof(path)), FLEET_E_NOT_FOUND);
	if (keep) {
		setenv("PATH", keep, 1);
		free(keep);
	}
	assert_int_equal(fleet_runner_resolve("/nonexistent/spire-server", path, sizeof(path)),
			 FLEET_E_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_server_gets_one_entry_per_ek),
		cmocka_unit_test(test_matching_server_plans_nothing),
		cmocka_unit_test(test_foreign_entries_are_not_kept),
		cmocka_unit_test(test_partial_listing_refused),
		cmocka_unit_test(test_differing_entry_is_updated),
		cmocka_unit_test(test_departed_device_banned_then_deleted),
		cmocka_unit_test(test_departed_device_all_agents_banned),
		cmocka_unit_test(test_agent_ban_guards),
		cmocka_unit_test(test_revoked_device_agents_from_list),
		cmocka_unit_test(test_agent_list),
		cmocka_unit_test(test_revoked_device_banned),
		cmocka_unit_test(test_removals_counted_by_device),
		cmocka_unit_test(test_stale_entry_of_eligible_device),
		cmocka_unit_test(test_file_rules),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_batch_result),
		cmocka_unit_test(test_runner_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
