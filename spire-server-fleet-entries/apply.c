/*
 * apply.c: one run (apply.h). Everything is read and decided before the
 * first change; the first refusal ends the run, and what was already done
 * is said, so the operator sees exactly where it stopped.
 */
#include "spire-server-fleet-entries/apply.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/runner.h"
#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/sanitize.h"

#define PROG "spire-server-fleet-entries"
#define ONE_RESULT_CAP (1u << 20)

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Read one of the run's two files (lib/file_read.h, docs/files.md): not a
 * symlink, a regular file, at most max bytes, checked and read on one
 * descriptor. fleetd writes spire-nodes.json 0640 at most (UMask=0077) as
 * its own user, which is not root here, so its owner is not checked; one
 * that group or others could have written is not fleetd's word. The
 * configuration is root's: owned by root (or whoever runs this), writable
 * by nobody else. */
static int read_input(const char *path, size_t max, struct fleet_buf *b, const char *what,
		      bool config)
{
	const struct fleet_file_policy policy = {
		.what = what,
		.max_size = max,
		.owners = config ? FLEET_FILE_OWNER_ROOT | FLEET_FILE_OWNER_EUID : 0,
		.forbid = S_IWGRP | S_IWOTH,
	};
	struct fleet_errctx fe;
	char text[sizeof(fe.detail) + 80];
	fleet_err e = fleet_file_read(AT_FDCWD, path, &policy, b, &fe);
	if (e == FLEET_OK)
		return 0;
	say("cannot use %s%s", fleet_errctx_text(&fe, text, sizeof(text)),
	    e == FLEET_E_UNSAFE ? ": refused" : "");
	return -1;
}

struct cli {
	char path[4096];
	const char *socket;
	int timeout;
};

/* argv for the CLI: sub-command words, then "-output json", then the
 * socket, then the step's own flags. */
#define ARGV_MAX (8 + 4 * AC_MAX_TEMPLATES + 16)

static int run_cli(const struct cli *c, const char *const *words, size_t nwords,
		   const char *const *flags, size_t nflags, size_t cap, struct fleet_buf *out,
		   struct fleet_buf *err, const char *step)
{
	char *argv[ARGV_MAX];
	size_t k = 0;
	argv[k++] = (char *)"spire-server";
	for (size_t i = 0; i < nwords; i++)
		argv[k++] = (char *)words[i];
	argv[k++] = (char *)"-output";
	argv[k++] = (char *)"json";
	if (c->socket) {
		argv[k++] = (char *)"-socketPath";
		argv[k++] = (char *)c->socket;
	}
	for (size_t i = 0; i < nflags && k + 1 < ARGV_MAX; i++)
		argv[k++] = (char *)flags[i];
	argv[k] = NULL;
	struct fleet_run_result r;
	if (fleet_runner_run(c->path, argv, NULL, c->timeout, cap, out, err, &r)) {
		say("%s: cannot run %s", step, c->path);
		return -1;
	}
	if (r.timed_out || r.overflow || !r.exited) {
		say("%s: %s %s", step, c->path,
		    r.timed_out ? "did not finish in time and was killed"
		    : r.overflow ? "printed more than allowed and was killed"
				 : "was killed by a signal");
		return -1;
	}
	return r.exit_code;
}

/* The CLI's stderr, first line, sanitised (lib/sanitize.h) and capped
 * ("[+N]" when cut), for a message. */
static void first_line(const struct fleet_buf *b, char *out, size_t outlen)
{
	const uint8_t *nl = b->len ? memchr(b->data, '\n', b->len) : NULL;
	fleet_sanitize(b->data, nl ? (size_t)(nl - b->data) : b->len, out, outlen, SIZE_MAX);
}

/* Run a read-only listing ("entry show", "agent list") and parse its
 * output with parse into l: 0, or -1 (said why; nothing is changed). */
typedef fleet_err (*list_parser)(const uint8_t *buf, size_t len, void *l, struct fleet_errctx *ec);

static int list_run(const struct cli *c, const char *w1, const char *w2, list_parser parse,
		    void *l)
{
	struct fleet_buf out, err;
	fb_init_capped(&out, SP_MAX_OUTPUT);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	const char *words[] = {w1, w2};
	char what[32], line[200];
	struct fleet_errctx ec = {0};
	snprintf(what, sizeof(what), "%s %s", w1, w2);
	int rc = run_cli(c, words, 2, NULL, 0, SP_MAX_OUTPUT, &out, &err, what);
	int ok = -1;
	if (rc > 0) {
		first_line(&err, line, sizeof(line));
		say("%s failed (exit %d: %s); nothing changed", what, rc, line);
	} else if (rc == 0) {
		if (parse(out.data ? out.data : (const uint8_t *)"", out.len, l, &ec))
			say("%s: %s; nothing changed", what, ec.detail);
		else
			ok = 0;
	} else {
		say("nothing changed");
	}
	fb_free(&out);
	fb_free(&err);
	return ok;
}

static fleet_err parse_entries(const uint8_t *buf, size_t len, void *l, struct fleet_errctx *ec)
{
	return sp_parse_entries(buf, len, l, ec);
}

static fleet_err parse_agents(const uint8_t *buf, size_t len, void *l, struct fleet_errctx *ec)
{
	return sp_parse_agents(buf, len, l, ec);
}

static int list_entries(const struct cli *c, struct sp_entries *l)
{
	return list_run(c, "entry", "show", parse_entries, l);
}

static int list_agents(const struct cli *c, struct sp_agents *l)
{
	return list_run(c, "agent", "list", parse_agents, l);
}

static int do_step(const struct cli *c, const struct plan_action *a)
{
	const char *flags[4 + 2 * AC_MAX_TEMPLATES + 2];
	size_t nf = 0;
	const char *words[2];
	char step[SP_ID_MAX + PLAN_STR + 2 * FLEET_SPIRE_NAME_MAX + 64];
	if (a->kind == PK_BAN) {
		words[0] = "agent", words[1] = "ban";
		flags[nf++] = "-spiffeID", flags[nf++] = a->spiffe_id;
		snprintf(step, sizeof(step), "ban %s (%s)", a->spiffe_id, a->device);
	} else {
		words[0] = "entry", words[1] = plan_kind_name(a->kind);
		flags[nf++] = "-entryID", flags[nf++] = a->entry_id;
		if (a->kind == PK_CREATE)
			flags[nf++] = "-node";
		if (a->kind == PK_UPDATE) /* update has no -node: name the parent it sets */
			flags[nf++] = "-parentID", flags[nf++] = a->parent_id;
		if (a->kind != PK_DELETE) {
			flags[nf++] = "-spiffeID", flags[nf++] = a->spiffe_id;
			for (size_t i = 0; i < a->n_selectors; i++)
				flags[nf++] = "-selector", flags[nf++] = a->selectors[i];
		}
		snprintf(step, sizeof(step), "%s %s (%s)", plan_kind_name(a->kind), a->entry_id,
			 a->device);
	}
	struct fleet_buf out, err;
	fb_init_capped(&out, ONE_RESULT_CAP);
	fb_init_capped(&err, FLEET_RUNNER_ERR_CAP);
	int rc = run_cli(c, words, 2, flags, nf, ONE_RESULT_CAP, &out, &err, step);
	int ok = -1;
	char line[200], msg[200];
	struct fleet_errctx ec = {0};
	first_line(&err, line, sizeof(line));
	if (rc < 0) {
		/* said by run_cli */
	} else if (a->kind == PK_BAN) {
		if (rc == 0) {
			say("%s: banned", step);
			ok = 0;
		} else if (sp_ban_said_not_found(err.data, err.len)) {
			say("%s: the server has no such agent (it never attested with this ID)",
			    step);
			ok = 0;
		} else {
			say("%s failed (exit %d: %s)", step, rc, line);
		}
	} else if (rc != 0) {
		say("%s failed (exit %d: %s)", step, rc, line);
	} else {
		int code;
		if (sp_parse_batch_result(out.data ? out.data : (const uint8_t *)"", out.len, &code,
					  msg, sizeof(msg), &ec)) {
			say("%s: %s", step, ec.detail);
		} else if (code == 0) {
			say("%s: done", step);
			ok = 0;
		} else if (a->kind == PK_DELETE && code == 5) {
			say("%s: already gone (NotFound)", step);
			ok = 0;
		} else {
			say("%s refused by the server: %s (%d): %s", step, sp_code_name(code), code,
			    msg);
		}
	}
	fb_free(&out);
	fb_free(&err);
	return ok;
}

int applier_run(const struct applier_opts *o)
{
	struct fleet_errctx ec = {0};
	struct applier_config cfg;
	ac_defaults(&cfg);
	if (o->config) {
		struct fleet_buf b;
		fb_init(&b);
		if (read_input(o->config, AC_MAX_CONFIG, &b, "the configuration", true)) {
			fb_free(&b);
			return 1;
		}
		fleet_err e = ac_parse(b.data ? (const char *)b.data : "", b.len, &cfg, &ec);
		fb_free(&b);
		if (e) {
			say("configuration %s: %s; nothing changed", o->config, ec.detail);
			return 1;
		}
	}
	struct fleet_spire_nodes f;
	{
		struct fleet_buf b;
		fb_init(&b);
		if (read_input(o->file, FLEET_SPIRE_NODES_MAX_BYTES, &b, "the file", false)) {
			fb_free(&b);
			say("nothing changed");
			return 1;
		}
		fleet_err e = fleet_spire_nodes_decode(b.data ? b.data : (const uint8_t *)"", b.len,
						       &f, &ec);
		fb_free(&b);
		if (e) {
			say("%s is malformed: %s; nothing changed", o->file, ec.detail);
			return 1;
		}
	}
	struct cli c = {.socket = o->socket, .timeout = cfg.timeout_seconds};
	if (fleet_runner_resolve(o->cli, c.path, sizeof(c.path))) {
		say("cannot find the SPIRE server CLI \"%s\" (an executable file, or a name on "
		    "PATH); nothing changed", o->cli);
		fleet_spire_nodes_free(&f);
		return 1;
	}
	struct sp_entries server;
	if (list_entries(&c, &server)) {
		fleet_spire_nodes_free(&f);
		return 1;
	}
	/* Every agent, to find those that attested as a departing device: the
	 * file names a device that left by nothing but its entries. */
	struct sp_agents agents;
	if (list_agents(&c, &agents)) {
		sp_entries_free(&server);
		fleet_spire_nodes_free(&f);
		return 1;
	}
	struct plan p;
	if (plan_build(&f, &cfg, &server, &agents, &p, &ec)) {
		say("cannot plan: %s; nothing changed", ec.detail);
		sp_agents_free(&agents);
		sp_entries_free(&server);
		fleet_spire_nodes_free(&f);
		return 1;
	}
	char generated[21];
	fleet_spire_time_format(f.generated_at, generated); /* the decoder checked it */
	say("file serial %lld (%s): %zu eligible, %zu revoked; the server lists %zu entries, "
	    "%zu of them fleet-, and %zu agents", (long long)f.serial, generated, f.n_eligible,
	    f.n_revoked, server.n_total, server.n, agents.n);
	plan_print(&p, stdout);
	fflush(stdout);
	long limit = o->allow_removals >= 0 ? o->allow_removals : APPLIER_MAX_REMOVALS;
	int rc = 0;
	if (p.removed_nodes > (size_t)limit) {
		say("the plan removes %zu nodes at once, more than %ld: refused, nothing changed. "
		    "If this is intended, run once with --allow-removals %zu", p.removed_nodes,
		    limit, p.removed_nodes);
		rc = 1;
	} else if (o->dry_run) {
		say("dry run: nothing changed");
	} else {
		for (size_t i = 0; i < p.n; i++) {
			if (do_step(&c, &p.a[i])) {
				say("stopped after %zu of %zu steps; the rest of the plan is untouched",
				    i, p.n);
				rc = 1;
				break;
			}
		}
		if (!rc)
			say("applied %zu steps", p.n);
	}
	plan_free(&p);
	sp_agents_free(&agents);
	sp_entries_free(&server);
	fleet_spire_nodes_free(&f);
	return rc;
}
