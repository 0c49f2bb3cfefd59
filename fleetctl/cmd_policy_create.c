/*
 * cmd_policy_create.c: write a boot-policy profile from a real machine's
 * log, and explain a verdict event by event.
 *
 *   fleetctl policy create --from-log LOG --class C [--bios VERSION] [--bank B]
 *                          [--out FILE]
 *   fleetctl policy explain --profile P --log LOG [--pcrs JSON] [--bios VERSION]
 *                           [--json]
 *
 * create pins what the log replays to (PCRs 0-7 of one bank, as keylime-policy
 * does for measured boot), and takes the SecureBoot state, the authorities and
 * the boot applications from the log. It decides none of them itself: each is
 * what fleet_policy_evaluate (policy/evaluate.h) finds in the log when asked
 * with a probe profile, so the created profile reads only what the quoted
 * digest binds, by the one rule every verdict uses. The YAML it writes is
 * parsed back with fleet_profile_parse and must admit the log before a byte
 * is written.
 *
 * Comments name the events behind each value. Under each pin the "#   PCR n
 * event ..." lines record every event on that PCR with its digest; explain
 * reads them back (advisory only: fleetd never reads comments) to name the
 * first event of another log that differs from the recorded boot. An
 * event's description is decoded from its data; when the digest does not
 * bind that data (a boot application's device path, a boot variable's name)
 * the line says "[binds: none]" or "[binds: variable-data]": the log's word.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fleetctl/fleetctl.h"
#include "fleetctl/policy_io.h"
#include "fleetctl/util.h"
#include "lib/buf.h"
#include "lib/eventlog.h"
#include "lib/hex.h"
#include "lib/sanitize.h"
#include "lib/tpm_alg.h"
#include "policy/evaluate.h"
#include "policy/profile.h"

#define HEX_MAX (2 * FLEET_DIGEST_MAX + 1)
/* The firmware's PCRs (PC Client PFP): what a boot-policy profile pins. */
#define CREATE_QUOTE_MASK 0xFFu
#define DESC_CHARS 96

/* ---- events, as both commands print them ---- */

/* The event at byte offset off, or NULL. */
static const struct fleet_evlog_event *event_at(const struct fleet_evlog *log, size_t off,
						size_t *index)
{
	for (size_t k = 0; k < log->n_events; k++)
		if (log->events[k].offset == off) {
			*index = k;
			return &log->events[k];
		}
	return NULL;
}

/* The event a verdict reason is about: its detail names it "at byte N". */
static const struct fleet_evlog_event *reason_event(const struct fleet_evlog *log,
						    const struct fleet_policy_reason *r,
						    size_t *index)
{
	/* Only the reasons about one event (policy/evaluate.c names it by
	 * offset); others may quote a claim, which names nothing. */
	static const char *const about_event[] = {
		"boot-application-not-allowed", "authority-not-allowed", "separator-malformed",
		"separator-error", "event-data-mismatch",
	};
	bool known = false;
	for (size_t i = 0; i < sizeof(about_event) / sizeof(about_event[0]); i++)
		known = known || !strcmp(r->reason, about_event[i]);
	const char *at = known ? strstr(r->detail, " at byte ") : NULL;
	if (!at)
		return NULL;
	char *end;
	errno = 0;
	unsigned long long off = strtoull(at + 9, &end, 10);
	if (errno || end == at + 9)
		return NULL;
	return event_at(log, (size_t)off, index);
}

/* The digest in bank as hex, or "-" when the event has none there. */
static const char *event_hex(const struct fleet_evlog_event *ev, uint16_t bank, char out[HEX_MAX])
{
	const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, bank);
	if (!d)
		return strcpy(out, "-");
	fleet_hex_encode(d->bytes, d->size, out);
	return out;
}

/* One line of description, sanitised and capped, with what the digest
 * binds when it is not the whole data: the log's word is marked as such. */
static void event_desc(const struct fleet_evlog_event *ev, uint16_t bank, char *out, size_t cap)
{
	char raw[512], safe[FLEET_SANITIZE_BUF(DESC_CHARS)];
	fleet_evlog_describe(ev, raw, sizeof(raw));
	fleet_sanitize_keep_backslash(raw, strlen(raw), safe, sizeof(safe), DESC_CHARS);
	enum fleet_evlog_bound b = fleet_evlog_event_bound(ev, bank);
	if (!*safe)
		snprintf(out, cap, "%s", b == FLEET_EVLOG_BOUND_ALL ? "" : "[binds: none]");
	else if (b == FLEET_EVLOG_BOUND_ALL)
		snprintf(out, cap, "%s", safe);
	else
		snprintf(out, cap, "%s [binds: %s]", safe, fleet_evlog_bound_name(b));
}

/* "PCR 4 event 52 @1234 EV_EFI_BOOT_SERVICES_APPLICATION <hex>: <desc>" */
static void event_line(const struct fleet_evlog *log, size_t k, uint16_t bank, char *out,
		       size_t cap)
{
	const struct fleet_evlog_event *ev = &log->events[k];
	char hex[HEX_MAX], desc[FLEET_SANITIZE_BUF(DESC_CHARS) + 40];
	event_desc(ev, bank, desc, sizeof(desc));
	snprintf(out, cap, "PCR %u event %zu @%zu %s %s%s%s", ev->pcr, k, ev->offset,
		 fleet_evlog_type_name(ev->type), event_hex(ev, bank, hex), *desc ? ": " : "",
		 desc);
}

static json_t *event_json(const struct fleet_evlog *log, size_t k, uint16_t bank)
{
	const struct fleet_evlog_event *ev = &log->events[k];
	char hex[HEX_MAX], desc[FLEET_SANITIZE_BUF(DESC_CHARS) + 40];
	event_desc(ev, bank, desc, sizeof(desc));
	return json_pack("{s:I,s:I,s:I,s:s,s:s,s:s,s:s}", "index", (json_int_t)k, "offset",
			 (json_int_t)ev->offset, "pcr", (json_int_t)ev->pcr, "type",
			 fleet_evlog_type_name(ev->type), "digest", event_hex(ev, bank, hex),
			 "description", desc, "binds",
			 fleet_evlog_bound_name(fleet_evlog_event_bound(ev, bank)));
}

static bool counted(const struct fleet_evlog_event *ev, uint32_t mask)
{
	return ev->type != FLEET_EV_NO_ACTION && ev->pcr < FLEET_PCR_COUNT &&
	       (mask & (1u << ev->pcr));
}

/* ---- policy create ---- */

struct create_args {
	const char *log, *class_name, *bios, *bank, *out;
};

/* The bank to pin: --bank, else the first the log replays of sha256,
 * sha384, sha512, sha1, sm3_256. */
static const struct fleet_pcr_bank *choose_bank(const struct fleet_pcr_replay *r, const char *want)
{
	static const char *const order[] = {"sha256", "sha384", "sha512", "sha1", "sm3_256"};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const char *name = want ? want : order[i];
		const struct fleet_pcr_bank *b = fleet_pcr_replay_bank(r, fleet_hash_alg_from_name(name));
		if (b && b->replayable && b->size <= FLEET_DIGEST_MAX)
			return b;
		if (want)
			return NULL;
	}
	return NULL;
}

static bool evaluate_own(const struct fleet_profile *p, const struct fleet_evlog *log,
			 const struct fleet_pcr_replay *replay, const char *bios,
			 struct fleet_verdict *v)
{
	struct fleet_policy_input in = {.log = log, .replay = replay, .bios_version = bios};
	return fleet_policy_evaluate(p, &in, v) == FLEET_OK && v->pass;
}

static void print_reasons(const struct fleet_verdict *v)
{
	for (size_t i = 0; i < v->n_reasons; i++)
		fprintf(stderr, "fleetctl: policy:   %s: %s\n", v->reasons[i].reason,
			v->reasons[i].detail);
}

/*
 * Fill list with the digests of the events the profile refuses for reason,
 * asking the evaluator again until it refuses none (a verdict keeps 32
 * reasons). The events are the evaluator's: what it judges code on PCR 4,
 * or an authority on PCR 7, by the digest the quote binds. true when the
 * profile then admits the log; false (list left out) when something else
 * about the log fails that check, or the list would pass its cap.
 */
static bool learn_list(struct fleet_profile *p, struct fleet_digest_list *list, const char *reason,
		       const struct fleet_evlog *log, const struct fleet_pcr_replay *replay,
		       const char *bios)
{
	struct fleet_verdict v;
	list->present = true;
	list->n = 0;
	if (!list->d && !(list->d = calloc(FLEET_PROFILE_MAX_DIGESTS, sizeof(*list->d))))
		goto drop;
	for (;;) {
		if (evaluate_own(p, log, replay, bios, &v))
			return true;
		size_t learned = 0;
		for (size_t i = 0; i < v.n_reasons; i++) {
			size_t k;
			const struct fleet_evlog_event *ev;
			const struct fleet_evlog_digest *d;
			if (strcmp(v.reasons[i].reason, reason) ||
			    !(ev = reason_event(log, &v.reasons[i], &k)) ||
			    !(d = fleet_evlog_event_digest(ev, p->bank)) || d->size != p->size)
				continue;
			if (fleet_digest_list_has(p, list, d->bytes))
				continue;
			if (list->n >= FLEET_PROFILE_MAX_DIGESTS)
				goto drop;
			memcpy(list->d[list->n++], d->bytes, p->size);
			learned++;
		}
		if (!learned)
			goto drop;
	}
drop:
	list->present = false;
	list->n = 0;
	return false;
}

/* learn_list, and the comment above the list: how many, or why it is
 * left out. */
static void learn_noted(struct fleet_profile *p, struct fleet_digest_list *list,
			const char *reason, const char *what, const struct fleet_evlog *log,
			const struct fleet_pcr_replay *replay, const char *bios,
			const char *left_out, char *note, size_t cap)
{
	if (learn_list(p, list, reason, log, replay, bios))
		snprintf(note, cap, "%s: %zu (every such event, by digest, whatever its type)",
			 what, list->n);
	else
		snprintf(note, cap, "%s", left_out);
}

/* The YAML being written, with a printf that remembers running out. */
struct out {
	struct fleet_buf b;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		fb_put(&o->b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* A double-quoted YAML scalar of printable ASCII (checked by the caller). */
static const char *yq(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	out[n++] = '"';
	for (; *s && n + 4 < cap; s++) {
		if (*s == '"' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n++] = '"';
	out[n] = '\0';
	return out;
}

/* "# PCR 4 event 52 @1234 TYPE: desc" for every event on pcr whose digest
 * is d, for the entries of a digest list. */
static void comment_events_with(struct out *o, const struct fleet_evlog *log,
				const struct fleet_profile *p, unsigned pcr, const uint8_t *d)
{
	for (size_t k = 0; k < log->n_events; k++) {
		const struct fleet_evlog_event *ev = &log->events[k];
		const struct fleet_evlog_digest *ed = fleet_evlog_event_digest(ev, p->bank);
		if (!counted(ev, 1u << pcr) || !ed || memcmp(ed->bytes, d, p->size))
			continue;
		char desc[FLEET_SANITIZE_BUF(DESC_CHARS) + 40];
		event_desc(ev, p->bank, desc, sizeof(desc));
		put(o, "  # PCR %u event %zu @%zu %s%s%s\n", pcr, k, ev->offset,
		    fleet_evlog_type_name(ev->type), *desc ? ": " : "", desc);
	}
}

static void emit_list(struct out *o, const struct fleet_evlog *log, const struct fleet_profile *p,
		      unsigned pcr, const char *key, const struct fleet_digest_list *l)
{
	char hex[HEX_MAX];
	put(o, "%s:%s\n", key, l->n ? "" : " []");
	for (size_t i = 0; i < l->n; i++) {
		comment_events_with(o, log, p, pcr, l->d[i]);
		fleet_hex_encode(l->d[i], p->size, hex);
		put(o, "  - \"%s\"\n", hex);
	}
}

/* The recorded boot under one pin: every event on the PCR, digest and all
 * ("#   PCR n event ..."; explain reads these lines back). */
static void emit_record(struct out *o, const struct fleet_evlog *log, const struct fleet_profile *p,
			unsigned pcr)
{
	size_t n = 0;
	char line[1024];
	for (size_t k = 0; k < log->n_events; k++)
		n += counted(&log->events[k], 1u << pcr);
	if (!n)
		put(o, "  # PCR %u: no event; the value nothing was measured into\n", pcr);
	else
		put(o, "  # PCR %u: %zu event%s\n", pcr, n, n == 1 ? "" : "s");
	for (size_t k = 0; k < log->n_events; k++)
		if (counted(&log->events[k], 1u << pcr)) {
			event_line(log, k, p->bank, line, sizeof(line));
			put(o, "  #   %s\n", line);
		}
}

static void emit(struct out *o, const struct create_args *a, const struct fleet_evlog *log,
		 const struct fleet_profile *p, const char *sb_note, const char *auth_note,
		 const char *apps_note)
{
	char q[FLEET_PROFILE_MAX_NAME * 2 + 3], hex[HEX_MAX], safe[FLEET_SANITIZE_BUF(80)];
	const char *slash = strrchr(a->log, '/');
	const char *base = slash ? slash + 1 : a->log;

	put(o, "# Written by fleetctl policy create from %s\n",
	    fleet_sanitize(base, strlen(base), safe, sizeof(safe), 80));
	put(o, "# (%s log, %zu events): it admits exactly that boot. Each value names the\n",
	    fleet_evlog_format_name(log->format), log->n_events);
	put(o, "# events behind it; \"[binds: none]\" marks a description the digest does not\n"
	       "# bind (the log's word). fleetd never reads comments; `fleetctl policy\n"
	       "# explain` reads the \"#   PCR n event\" lines to name what another log changed.\n");
	put(o, "version: 1\nclass: %s\n", yq(p->class_name, q, sizeof(q)));
	put(o, "quote:\n  bank: %s\n  pcrs: [0, 1, 2, 3, 4, 5, 6, 7]\n",
	    fleet_hash_alg_name(p->bank));
	if (p->has_pcr0_by_bios) {
		put(o, "# PCR 0 for this BIOS version: what the firmware measured\n");
		put(o, "pcr0_by_bios:\n");
		emit_record(o, log, p, 0);
		fleet_hex_encode(p->bios[0].pcr0, p->size, hex);
		put(o, "  %s: \"%s\"\n", yq(p->bios[0].version, q, sizeof(q)), hex);
	}
	put(o, "# %s\n", sb_note);
	put(o, "secure_boot: %s\n", p->secure_boot == FLEET_SECURE_BOOT_ON    ? "true"
				    : p->secure_boot == FLEET_SECURE_BOOT_OFF ? "false"
									      : "any");
	put(o, "# %s\n", auth_note);
	if (p->allowed_authorities.present)
		emit_list(o, log, p, 7, "allowed_authorities", &p->allowed_authorities);
	put(o, "# %s\n", apps_note);
	if (p->boot_applications.present)
		emit_list(o, log, p, 4, "boot_applications", &p->boot_applications);
	put(o, "# The replayed PCR values, pinned.\npcrs:\n");
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
		if (!(p->pinned_mask & (1u << i)))
			continue;
		emit_record(o, log, p, i);
		fleet_hex_encode(p->pinned[i], p->size, hex);
		put(o, "  \"%u\": \"%s\"\n", i, hex);
	}
}

static int write_out(const char *path, const struct fleet_buf *b)
{
	if (!path)
		return fwrite(b->data, 1, b->len, stdout) == b->len && fflush(stdout) == 0 ? 0 : -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	/* A profile is configuration: writable by its owner only, or fleetd
	 * will not read it (an existing file keeps its mode otherwise). */
	if (fd < 0 || fchmod(fd, 0644)) {
		fprintf(stderr, "fleetctl: policy: cannot write %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t done = 0;
	while (done < b->len) {
		ssize_t n = write(fd, b->data + done, b->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "fleetctl: policy: cannot write %s: %s\n", path,
				strerror(n < 0 ? errno : EIO));
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	if (close(fd)) {
		fprintf(stderr, "fleetctl: policy: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The profile the options and the log say, before the lists are learned. */
static int base_profile(const struct create_args *a, const struct fleet_pcr_bank *bank,
			struct fleet_profile *p)
{
	snprintf(p->class_name, sizeof(p->class_name), "%s", a->class_name);
	p->bank = bank->alg;
	p->size = bank->size;
	p->quote_mask = CREATE_QUOTE_MASK;
	p->secure_boot = FLEET_SECURE_BOOT_ANY;
	/* Every quoted PCR pinned, the unlogged ones to their initial value
	 * (the replay holds it): a log that measures more is another boot. */
	p->pinned_mask = CREATE_QUOTE_MASK;
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++)
		memcpy(p->pinned[i], bank->pcr[i], bank->size);
	if (a->bios) {
		if (!(p->bios = calloc(1, sizeof(*p->bios))))
			return -1;
		p->has_pcr0_by_bios = true;
		p->n_bios = 1;
		snprintf(p->bios[0].version, sizeof(p->bios[0].version), "%s", a->bios);
		memcpy(p->bios[0].pcr0, bank->pcr[0], bank->size);
		p->pinned_mask &= ~1u;
	}
	return 0;
}

/* The SecureBoot state the evaluator reads from the log: the state whose
 * profile it admits, else any. *note says which event measured it. */
static void learn_secure_boot(struct fleet_profile *p, const struct fleet_evlog *log,
			      const struct fleet_pcr_replay *replay, const char *bios, char *note,
			      size_t cap)
{
	struct fleet_verdict v;
	static const enum fleet_secure_boot states[] = {FLEET_SECURE_BOOT_ON,
							FLEET_SECURE_BOOT_OFF};
	for (size_t i = 0; i < 2; i++) {
		p->secure_boot = states[i];
		if (!evaluate_own(p, log, replay, bios, &v))
			continue;
		/* Name the measurement the evaluator read: the bound SecureBoot
		 * configuration variable on PCR 7. */
		for (size_t k = 0; k < log->n_events; k++) {
			const struct fleet_evlog_event *ev = &log->events[k];
			struct fleet_efi_var var;
			enum fleet_evlog_bound b;
			if (ev->pcr == 7 && ev->type == FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG &&
			    fleet_evlog_efi_variable_bound(ev, p->bank, &var, &b) == FLEET_OK &&
			    b == FLEET_EVLOG_BOUND_ALL && !strcmp(var.name, "SecureBoot")) {
				snprintf(note, cap,
					 "SecureBoot %s: PCR 7 event %zu @%zu "
					 "EV_EFI_VARIABLE_DRIVER_CONFIG SecureBoot (its digest binds "
					 "GUID, name and data)",
					 states[i] == FLEET_SECURE_BOOT_ON ? "on" : "off", k,
					 ev->offset);
				return;
			}
		}
		snprintf(note, cap, "SecureBoot %s, as PCR 7 measured it",
			 states[i] == FLEET_SECURE_BOOT_ON ? "on" : "off");
		return;
	}
	p->secure_boot = FLEET_SECURE_BOOT_ANY;
	snprintf(note, cap, "SecureBoot: any. PCR 7 holds no SecureBoot state fleetd can read "
			    "(a configuration variable its digest binds); its pin still holds it");
}

static int run_create(const struct create_args *a)
{
	struct fleet_evlog *log = NULL;
	struct fleet_pcr_replay replay;
	struct fleet_profile *p = calloc(1, sizeof(*p)), *back = NULL;
	struct out o;
	struct fleet_verdict v;
	char sb_note[300], auth_note[200], apps_note[200];
	int rc;

	fb_init_capped(&o.b, FLEET_PROFILE_MAX_SIZE);
	if (!p) {
		rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "policy: out of memory");
		goto out;
	}
	if ((rc = fleetctl_policy_log(a->log, &log, &replay)) != FLEETCTL_EXIT_OK)
		goto out;
	rc = FLEETCTL_EXIT_REFUSED;
	const struct fleet_pcr_bank *bank = choose_bank(&replay, a->bank);
	if (!bank) {
		fprintf(stderr,
			"fleetctl: policy: %s has no %s bank every event has a digest in, so its "
			"PCR values cannot be replayed\n",
			a->log, a->bank ? a->bank : "usable");
		goto out;
	}
	if (base_profile(a, bank, p)) {
		rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "policy: out of memory");
		goto out;
	}
	if (!evaluate_own(p, log, &replay, a->bios, &v)) {
		fprintf(stderr, "fleetctl: policy: no profile admits %s: the log itself is refused:\n",
			a->log);
		print_reasons(&v);
		goto out;
	}
	learn_secure_boot(p, log, &replay, a->bios, sb_note, sizeof(sb_note));
	learn_noted(p, &p->allowed_authorities, "authority-not-allowed",
		    "PCR 7 after its separator: authorities", log, &replay, a->bios,
		    "allowed_authorities left out: PCR 7 has no separator fleetd can prove, or "
		    "configuration it cannot read; its pin still holds it",
		    auth_note, sizeof(auth_note));
	learn_noted(p, &p->boot_applications, "boot-application-not-allowed",
		    "PCR 4: boot applications (Authenticode digests)", log, &replay, a->bios,
		    "boot_applications left out: no code event on PCR 4 after its separator; "
		    "the PCR 4 pin still holds it",
		    apps_note, sizeof(apps_note));
	emit(&o, a, log, p, sb_note, auth_note, apps_note);
	if (fb_err(&o.b)) {
		fprintf(stderr, "fleetctl: policy: the profile for %s would pass %u bytes, the "
				"most a profile may hold\n", a->log, FLEET_PROFILE_MAX_SIZE);
		goto out;
	}
	/* What is written is what fleetd will read: parse it back and judge the
	 * log by it. */
	struct fleet_errctx ec = {0};
	char msg[400];
	if (fleet_profile_parse(o.b.data, o.b.len, &back, &ec) != FLEET_OK) {
		fprintf(stderr, "fleetctl: policy: internal error: the written profile does not "
				"parse (line %u): %s\n", ec.line, fleet_errctx_text(&ec, msg, sizeof(msg)));
		goto out;
	}
	if (!evaluate_own(back, log, &replay, a->bios, &v)) {
		fprintf(stderr, "fleetctl: policy: internal error: the written profile refuses "
				"its own log:\n");
		print_reasons(&v);
		goto out;
	}
	if (write_out(a->out, &o.b)) {
		rc = FLEETCTL_EXIT_USAGE;
		goto out;
	}
	if (a->out)
		fprintf(stderr,
			"fleetctl: policy: wrote %s: class %s, %s PCRs 0-7 pinned%s, secure_boot "
			"%s, %zu authorities, %zu boot applications\n",
			a->out, p->class_name, fleet_hash_alg_name(p->bank),
			p->has_pcr0_by_bios ? " (PCR 0 by BIOS version)" : "",
			p->secure_boot == FLEET_SECURE_BOOT_ON    ? "true"
			: p->secure_boot == FLEET_SECURE_BOOT_OFF ? "false"
								  : "any",
			p->allowed_authorities.n, p->boot_applications.n);
	rc = FLEETCTL_EXIT_OK;
out:
	fb_free(&o.b);
	fleet_profile_free(back);
	fleet_profile_free(p);
	fleet_evlog_free(log);
	return rc;
}

static int create_usage(void)
{
	fprintf(stderr, "usage: fleetctl policy create --from-log LOG --class C [--bios VERSION] "
			"[--bank B] [--out FILE]\n");
	return FLEETCTL_EXIT_USAGE;
}

int fleetctl_policy_create(int argc, char **argv)
{
	struct create_args a = {0};
	const struct fleetctl_opt opts[] = {
		{"--from-log", &a.log}, {"--class", &a.class_name}, {"--bios", &a.bios},
		{"--bank", &a.bank},    {"--out", &a.out},
	};
	if (fleetctl_parse_opts("policy", argc, argv, 2, opts, sizeof(opts) / sizeof(opts[0]),
				NULL) ||
	    !a.log || !a.class_name)
		return create_usage();
	size_t cl = strlen(a.class_name);
	if (cl == 0 || cl > FLEET_PROFILE_MAX_NAME || !fleet_ascii_printable(a.class_name, cl, 0))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE,
				     "policy: --class must be 1 to %d printable ASCII characters "
				     "without spaces",
				     FLEET_PROFILE_MAX_NAME);
	size_t bl = a.bios ? strlen(a.bios) : 1;
	if (bl == 0 || bl > FLEET_PROFILE_MAX_NAME ||
	    (a.bios && !fleet_ascii_printable(a.bios, bl, FLEET_ASCII_SPACE)))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE,
				     "policy: --bios must be 1 to %d printable ASCII characters",
				     FLEET_PROFILE_MAX_NAME);
	if (a.bank && !fleet_hash_alg_from_name(a.bank))
		return fleetctl_fail(FLEETCTL_EXIT_USAGE,
				     "policy: --bank must be sha1, sha256, sha384, sha512 or "
				     "sm3_256");
	return run_create(&a);
}

/* ---- policy explain ---- */

/* One event of the boot recorded in a created profile's comments. */
struct recorded {
	unsigned pcr;
	size_t index, offset;
	char type[48];
	char hex[HEX_MAX];
};
#define MAX_RECORDED 4096

/* The "#   PCR n event k @off TYPE hex" lines of the profile's text, in
 * order, and in *mask the PCRs whose "# PCR n: ..." header says the boot
 * was recorded for them (a PCR with no event has the header alone).
 * Advisory: they explain, they never decide. */
static size_t read_record(const struct fleet_buf *text, struct recorded *rec, uint32_t *mask)
{
	*mask = 0;
	size_t n = 0, pos = 0;
	while (pos < text->len && n < MAX_RECORDED) {
		const char *line = (const char *)text->data + pos;
		const char *nl = memchr(line, '\n', text->len - pos);
		size_t len = nl ? (size_t)(nl - line) : text->len - pos;
		pos += len + 1;
		char buf[1100];
		if (len >= sizeof(buf))
			continue;
		memcpy(buf, line, len);
		buf[len] = '\0';
		struct recorded *r = &rec[n];
		const char *c = buf + strspn(buf, " ");
		unsigned hp;
		char colon;
		if (!strncmp(c, "# PCR ", 6) && sscanf(c + 2, "PCR %u%c", &hp, &colon) == 2 &&
		    colon == ':' && hp < FLEET_PCR_COUNT) {
			*mask |= 1u << hp;
			continue;
		}
		if (!strncmp(c, "#   PCR ", 8) &&
		    sscanf(c + 4, "PCR %u event %zu @%zu %47s %128[0-9a-f-]", &r->pcr, &r->index,
			   &r->offset, r->type, r->hex) == 5 &&
		    r->pcr < FLEET_PCR_COUNT && (*mask & (1u << r->pcr)))
			n++;
	}
	return n;
}

struct difference {
	bool found;
	ssize_t event;         /* index in the log, or -1: the log lacks one */
	const struct recorded *rec; /* what the recorded boot has there, or NULL */
};

/* The first event of the log, on a quoted PCR, that is not the recorded
 * boot's event at the same place in that PCR's sequence; else the first
 * recorded event the log lacks. */
static struct difference first_difference(const struct fleet_evlog *log,
					  const struct fleet_profile *p, uint32_t mask,
					  const struct recorded *rec, size_t n_rec)
{
	struct difference d = {.found = false, .event = -1, .rec = NULL};
	size_t seen[FLEET_PCR_COUNT] = {0};
	char hex[HEX_MAX];
	for (size_t k = 0; k < log->n_events; k++) {
		const struct fleet_evlog_event *ev = &log->events[k];
		if (!counted(ev, mask))
			continue;
		size_t j = seen[ev->pcr]++, m = 0;
		const struct recorded *r = NULL;
		for (size_t i = 0; i < n_rec && !r; i++)
			if (rec[i].pcr == ev->pcr && m++ == j)
				r = &rec[i];
		if (!r || strcmp(r->hex, event_hex(ev, p->bank, hex))) {
			d.found = true;
			d.event = (ssize_t)k;
			d.rec = r;
			return d;
		}
	}
	size_t m[FLEET_PCR_COUNT] = {0};
	for (size_t i = 0; i < n_rec; i++)
		if ((mask & (1u << rec[i].pcr)) && m[rec[i].pcr]++ == seen[rec[i].pcr]) {
			d.found = true;
			d.rec = &rec[i];
			return d;
		}
	return d;
}

/* "  recorded: ..." under a differing event: what the recorded boot had
 * at its place. */
static void print_recorded(const struct recorded *r, unsigned pcr)
{
	if (r)
		printf("  recorded: PCR %u event %zu @%zu %s %s\n", r->pcr, r->index, r->offset,
		       r->type, r->hex);
	else
		printf("  recorded: nothing (the recorded boot has no more events on PCR %u)\n",
		       pcr);
}

struct explain_args {
	const char *profile, *log, *pcrs, *bios;
	int json;
};

/* The PCR a reason's detail names first ("PCR 4: ..."), or FLEET_PCR_COUNT. */
static unsigned reason_pcr(const struct fleet_policy_reason *r)
{
	unsigned pcr;
	const char *s = strstr(r->detail, "PCR ");
	return s && sscanf(s, "PCR %u", &pcr) == 1 && pcr < FLEET_PCR_COUNT ? pcr
									 : FLEET_PCR_COUNT;
}

/* Reasons about a PCR's value, not one event: the event that made it
 * differ is the first one unlike the recorded boot's on that PCR. */
static bool value_reason(const char *reason)
{
	return !strcmp(reason, "pcr-pinned-mismatch") || !strcmp(reason, "pcr0-mismatch") ||
	       !strcmp(reason, "log-quote-mismatch") || !strcmp(reason, "pcr-unlogged-nonzero");
}

static json_t *recorded_json(const struct recorded *r)
{
	if (!r)
		return json_null();
	return json_pack("{s:I,s:I,s:I,s:s,s:s}", "index", (json_int_t)r->index, "offset",
			 (json_int_t)r->offset, "pcr", (json_int_t)r->pcr, "type", r->type,
			 "digest", r->hex);
}

/* What the profile would need to admit what a reason refuses. */
static void admit_text(const struct fleet_profile *p, const struct fleet_policy_reason *r,
		       const struct fleet_evlog_event *ev, const uint8_t values[][FLEET_DIGEST_MAX],
		       uint32_t have, const char *bios, char *out, size_t cap)
{
	char hex[HEX_MAX], safe[FLEET_SANITIZE_BUF(FLEET_PROFILE_MAX_NAME)];
	unsigned pcr = reason_pcr(r);
	const char *why = r->reason;
	bool value = pcr < FLEET_PCR_COUNT && (have & (1u << pcr));
	if (value)
		fleet_hex_encode(values[pcr], p->size, hex);
	if (!strcmp(why, "boot-application-not-allowed") && ev)
		snprintf(out, cap, "add \"%s\" to boot_applications", event_hex(ev, p->bank, hex));
	else if (!strcmp(why, "authority-not-allowed") && ev)
		snprintf(out, cap, "add \"%s\" to allowed_authorities", event_hex(ev, p->bank, hex));
	else if (!strcmp(why, "pcr-pinned-mismatch") && value)
		snprintf(out, cap, "pcrs: PCR %u pinned value would be \"%s\"", pcr, hex);
	else if ((!strcmp(why, "pcr0-mismatch") || !strcmp(why, "pcr0-unknown-bios")) &&
		 (have & 1u) && bios) {
		fleet_hex_encode(values[0], p->size, hex);
		snprintf(out, cap,
			 !strcmp(why, "pcr0-mismatch") ? "pcr0_by_bios: \"%s\" would be \"%s\""
						       : "add \"%s\": \"%s\" to pcr0_by_bios",
			 fleet_sanitize(bios, strlen(bios), safe, sizeof(safe),
					FLEET_PROFILE_MAX_NAME),
			 hex);
	} else if (!strcmp(why, "bios-version-missing"))
		snprintf(out, cap, "the machine's BIOS version (--bios): the profile keys PCR 0 by it");
	else if (!strcmp(why, "secure-boot-mismatch"))
		snprintf(out, cap, "secure_boot: %s",
			 p->secure_boot == FLEET_SECURE_BOOT_ON ? "false" : "true");
	else if (!strcmp(why, "secure-boot-unmeasured") || !strcmp(why, "secure-boot-ambiguous"))
		snprintf(out, cap, "secure_boot: any (this log measures no SecureBoot state fleetd "
				   "can read)");
	else if (!strcmp(why, "no-boot-application"))
		snprintf(out, cap, "a boot application after PCR 4's separator in "
				   "boot_applications, or no boot_applications key");
	else if (!strcmp(why, "bank-not-replayable"))
		snprintf(out, cap, "quote.bank: a bank this log has a digest in for every event");
	else if (!strcmp(why, "event-data-mismatch") || !strcmp(why, "separator-missing"))
		snprintf(out, cap, "secure_boot: any and no allowed_authorities (PCR 7 then rests "
				   "on its pin); the log's PCR 7 cannot be read");
	else
		snprintf(out, cap, "nothing in the profile: the log or the quote itself is refused");
}

static int run_explain(const struct explain_args *a)
{
	static struct fleetctl_policy_run run;
	size_t n_rec = 0;
	uint32_t rec_mask = 0;
	struct recorded *rec = calloc(MAX_RECORDED, sizeof(*rec));
	struct fleet_buf text;
	int rc = FLEETCTL_EXIT_USAGE;
	json_t *reasons = NULL;

	fb_init(&text);
	if (!rec) {
		rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "policy: out of memory");
		goto out;
	}
	if ((rc = fleetctl_policy_judge(a->profile, a->log, a->pcrs, a->bios, false, &run)) !=
	    FLEETCTL_EXIT_OK)
		goto out;
	const struct fleet_profile *p = run.p;
	const struct fleet_evlog *log = run.log;
	const struct fleet_verdict *vp = &run.v;
	const struct fleet_pcr_value *quoted = run.quoted;
	size_t n_quoted = run.n_quoted;
	/* The comments, read again as text (they are advisory; the profile
	 * itself came through the configuration reader). */
	struct fleet_errctx ec;
	if (fleet_file_read_data(a->profile, FLEET_PROFILE_MAX_SIZE, &text, &ec) == FLEET_OK)
		n_rec = read_record(&text, rec, &rec_mask);
	/* The values the verdict compared: the quote's, else the replay's. */
	uint8_t values[FLEET_PCR_COUNT][FLEET_DIGEST_MAX] = {{0}};
	uint32_t have = 0;
	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(&run.replay, p->bank);
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
		if (a->pcrs) {
			for (size_t k = 0; k < n_quoted; k++)
				if (quoted[k].alg == p->bank && quoted[k].index == i &&
				    quoted[k].size == p->size) {
					memcpy(values[i], quoted[k].digest, p->size);
					have |= 1u << i;
				}
		} else if (bank && bank->replayable && bank->size == p->size) {
			memcpy(values[i], bank->pcr[i], p->size);
			have |= 1u << i;
		}
	}
	const char *bank_name = fleet_hash_alg_name(p->bank);
	if (!a->json)
		printf("verdict: %s (class %s, %s, quote checked: %s)\n", vp->pass ? "pass" : "fail",
		       p->class_name, bank_name, vp->quote_checked ? "yes" : "no");
	if (!(reasons = json_array()))
		goto nomem;
	char line[1200], admit[400];
	for (size_t i = 0; i < vp->n_reasons; i++) {
		const struct fleet_policy_reason *r = &vp->reasons[i];
		size_t k = 0;
		const struct fleet_evlog_event *ev = reason_event(log, r, &k);
		struct difference rd = {0};
		unsigned pcr = reason_pcr(r);
		if (!ev && pcr < FLEET_PCR_COUNT && (rec_mask & (1u << pcr)) &&
		    value_reason(r->reason)) {
			rd = first_difference(log, p, 1u << pcr, rec, n_rec);
			if (rd.found && rd.event >= 0)
				ev = &log->events[k = (size_t)rd.event];
		}
		admit_text(p, r, ev, (const uint8_t(*)[FLEET_DIGEST_MAX])values, have, a->bios,
			   admit, sizeof(admit));
		if (a->json) {
			json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:s}", "reason", r->reason, "detail",
					      r->detail, "event",
					      ev ? event_json(log, k, p->bank) : json_null(),
					      "recorded", recorded_json(rd.found ? rd.rec : NULL),
					      "admit", admit);
			if (!o || json_array_append_new(reasons, o))
				goto nomem;
			continue;
		}
		printf("reason %zu: %s: %s\n", i + 1, r->reason, r->detail);
		if (ev) {
			event_line(log, k, p->bank, line, sizeof(line));
			printf("  event: %s\n", line);
		}
		if (rd.found)
			print_recorded(rd.rec, pcr);
		printf("  admit: %s\n", admit);
	}
	if (!a->json && vp->n_dropped)
		printf("... and %zu more failures\n", vp->n_dropped);
	struct difference d = {0};
	if (!vp->pass && rec_mask)
		d = first_difference(log, p, p->quote_mask & rec_mask, rec, n_rec);
	if (a->json) {
		json_t *diff = json_null();
		if (d.found) {
			json_t *recj = recorded_json(d.rec);
			diff = json_pack("{s:o,s:o}", "event",
					 d.event >= 0 ? event_json(log, (size_t)d.event, p->bank)
						      : json_null(),
					 "recorded", recj);
		}
		json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:o,s:I,s:o}", "verdict",
				      vp->pass ? "pass" : "fail", "class", p->class_name, "bank",
				      bank_name, "quote_checked", vp->quote_checked, "reasons",
				      reasons, "reasons_dropped", (json_int_t)vp->n_dropped,
				      "first_difference", diff);
		reasons = NULL;
		char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
		json_decref(o);
		if (!s)
			goto nomem;
		printf("%s\n", s);
		free(s);
	} else if (!vp->pass && !rec_mask) {
		printf("first difference: unknown (the profile records no boot: it was not "
		       "written by fleetctl policy create)\n");
	} else if (d.found && d.event >= 0) {
		event_line(log, (size_t)d.event, p->bank, line, sizeof(line));
		printf("first difference: %s\n", line);
		print_recorded(d.rec, log->events[d.event].pcr);
	} else if (d.found) {
		printf("first difference: the log lacks PCR %u event %zu @%zu %s %s, which the "
		       "recorded boot has\n",
		       d.rec->pcr, d.rec->index, d.rec->offset, d.rec->type, d.rec->hex);
	} else if (!vp->pass) {
		printf("first difference: none (the log's events on the quoted PCRs are the "
		       "recorded boot's)\n");
	}
	rc = vp->pass ? FLEETCTL_EXIT_OK : FLEETCTL_EXIT_REFUSED;
	goto out;
nomem:
	rc = fleetctl_fail(FLEETCTL_EXIT_USAGE, "policy: out of memory");
out:
	json_decref(reasons);
	fb_free(&text);
	free(rec);
	fleetctl_policy_run_free(&run);
	return rc;
}

int fleetctl_policy_explain(int argc, char **argv)
{
	struct explain_args a = {0};
	const struct fleetctl_opt opts[] = {
		{"--profile", &a.profile},
		{"--log", &a.log},
		{"--pcrs", &a.pcrs},
		{"--bios", &a.bios},
	};
	if (fleetctl_parse_opts("policy", argc, argv, 2, opts, sizeof(opts) / sizeof(opts[0]),
				&a.json) ||
	    !a.profile || !a.log) {
		fprintf(stderr, "usage: fleetctl policy explain --profile P --log LOG [--pcrs JSON] "
				"[--bios VERSION] [--json]\n");
		return FLEETCTL_EXIT_USAGE;
	}
	return run_explain(&a);
}
