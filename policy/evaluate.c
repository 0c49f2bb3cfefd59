/*
 * evaluate.c: a profile's verdict on a log and a quote.
 *
 * Order of trust: the quote is signed by the TPM; the replay of the log must
 * reproduce it PCR by PCR before any event on that PCR means anything; and a
 * field of an event the policy reads (a separator's value, a variable's
 * GUID, name and byte) must be bound by the digest that was extended in the
 * quoted bank (lib/eventlog.h, fleet_evlog_event_bound), or it is a story
 * the firmware never measured. Nothing here reads a field the digest does
 * not bind.
 */
#include "policy/evaluate.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/hex.h"
#include "lib/sanitize.h"

/* EFI_GLOBAL_VARIABLE, the vendor GUID of SecureBoot (UEFI 2.x, 3.3). */
static const char efi_global_guid[] = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

/*
 * One more reason the verdict fails, with its detail. Not an error context
 * and not replaced by the library's setters: a verdict is a decision that
 * gathers every failed rule (up to FLEET_VERDICT_MAX_REASONS, the rest
 * counted in n_dropped) and marks the verdict failed, where a context holds
 * the one failure that stopped a function.
 */
__attribute__((format(printf, 3, 4))) static void add(struct fleet_verdict *v, const char *reason,
						       const char *fmt, ...)
{
	v->pass = false;
	if (v->n_reasons >= FLEET_VERDICT_MAX_REASONS) {
		v->n_dropped++;
		return;
	}
	struct fleet_policy_reason *r = &v->reasons[v->n_reasons++];
	r->reason = reason;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

/* Hex of a digest into a caller's buffer, for details. */
static const char *hx(const uint8_t *d, size_t n, char out[2 * FLEET_DIGEST_MAX + 1])
{
	fleet_hex_encode(d, n, out);
	return out;
}

/* Is every byte of the event's data what its digest measured? Replay proves
 * only the digests; a check that reads the data (a separator's value, an
 * action's text) must first know the whole data is what was hashed, or a
 * log could carry the digest of 00 beside data that says 01. One rule, in
 * lib/. The quoted bank is the one the TPM bound; the log's other banks are
 * its own word, so proving them would prove nothing more. */
static bool data_bound(const struct fleet_evlog_event *ev, uint16_t bank)
{
	return fleet_evlog_event_bound(ev, bank) == FLEET_EVLOG_BOUND_ALL;
}

struct state {
	const struct fleet_profile *p;
	const struct fleet_policy_input *in;
	struct fleet_verdict *v;
	const struct fleet_pcr_bank *bank; /* NULL when the bank cannot be replayed */
	uint32_t logged;                   /* bit i: the log has an event on PCR i */
	uint32_t have_value;               /* bit i: value[i] holds PCR i */
	uint8_t value[FLEET_PCR_COUNT][FLEET_DIGEST_MAX];
};

/* The quoted value of PCR i in the profile's bank; NULL when the quote lacks
 * it or lists it twice (a quote has one value per selected PCR). */
static const struct fleet_pcr_value *quoted_pcr(const struct state *s, unsigned i, int *count)
{
	const struct fleet_pcr_value *found = NULL;
	*count = 0;
	for (size_t k = 0; k < s->in->n_quoted; k++) {
		const struct fleet_pcr_value *q = &s->in->quoted[k];
		if (q->alg == s->p->bank && q->index == i) {
			found = q;
			(*count)++;
		}
	}
	return *count == 1 ? found : NULL;
}

/* The log against the quote, per quoted PCR; fills s->value with what each
 * PCR holds (the quote's word when there is a quote). */
static void check_values(struct state *s)
{
	const struct fleet_profile *p = s->p;
	char a[2 * FLEET_DIGEST_MAX + 1], b[2 * FLEET_DIGEST_MAX + 1];
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
		if (!(p->quote_mask & (1u << i)))
			continue;
		bool logged = s->logged & (1u << i);
		if (!s->in->quoted) {
			if (s->bank) {
				memcpy(s->value[i], s->bank->pcr[i], p->size);
				s->have_value |= 1u << i;
			}
			continue;
		}
		int count;
		const struct fleet_pcr_value *q = quoted_pcr(s, i, &count);
		if (!q) {
			add(s->v, "pcr-not-quoted", "%s PCR %u: the quote holds %d values for it",
			    fleet_hash_alg_name(p->bank), i, count);
			continue;
		}
		if (q->size != p->size) {
			add(s->v, "pcr-not-quoted", "%s PCR %u: the quoted value is %u bytes, not %u",
			    fleet_hash_alg_name(p->bank), i, q->size, p->size);
			continue;
		}
		memcpy(s->value[i], q->digest, p->size);
		s->have_value |= 1u << i;
		if (logged) {
			if (s->bank && memcmp(s->bank->pcr[i], q->digest, p->size))
				add(s->v, "log-quote-mismatch", "PCR %u: log replays to %s, quote has %s",
				    i, hx(s->bank->pcr[i], p->size, a), hx(q->digest, p->size, b));
		} else {
			/* No event on this PCR: the log says nothing about it, so
			 * only the value nothing was measured into will do. */
			uint8_t init[FLEET_DIGEST_MAX];
			fleet_evlog_pcr_initial(s->in->log, i, p->size, init);
			if (memcmp(init, q->digest, p->size))
				add(s->v, "pcr-unlogged-nonzero",
				    "PCR %u: no event in the log, but the quote has %s", i,
				    hx(q->digest, p->size, a));
		}
	}
}

static void check_pcr0_and_pins(struct state *s)
{
	const struct fleet_profile *p = s->p;
	char a[2 * FLEET_DIGEST_MAX + 1], b[2 * FLEET_DIGEST_MAX + 1];
	if (p->has_pcr0_by_bios) {
		const char *bios = s->in->bios_version;
		const uint8_t *want = fleet_profile_pcr0_for_bios(p, bios);
		if (!bios || !*bios) {
			add(s->v, "bios-version-missing",
			    "the profile keys PCR 0 by BIOS version and none was given");
		} else if (!want) {
			/* The version is the machine's claim: print it sanitised
			 * and capped (256 bytes leave the detail room for the
			 * sentence around it). */
			char safe[256];
			add(s->v, "pcr0-unknown-bios", "BIOS version '%s' is not in pcr0_by_bios",
			    fleet_sanitize(bios, strlen(bios), safe, sizeof(safe),
					   FLEET_PROFILE_MAX_NAME));
		} else if (!(s->have_value & 1u)) {
			add(s->v, "pcr0-mismatch", "PCR 0 has no value to compare");
		} else if (memcmp(want, s->value[0], p->size)) {
			add(s->v, "pcr0-mismatch", "PCR 0 is %s, BIOS %s expects %s",
			    hx(s->value[0], p->size, a), bios, hx(want, p->size, b));
		}
	}
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++) {
		if (!(p->pinned_mask & (1u << i)))
			continue;
		if (!(s->have_value & (1u << i)))
			add(s->v, "pcr-pinned-mismatch", "PCR %u has no value to compare", i);
		else if (memcmp(p->pinned[i], s->value[i], p->size))
			add(s->v, "pcr-pinned-mismatch", "PCR %u is %s, the profile pins %s", i,
			    hx(s->value[i], p->size, a), hx(p->pinned[i], p->size, b));
	}
}

static void check_separator(struct state *s, const struct fleet_evlog_event *ev)
{
	static const uint8_t ok[4] = {0, 0, 0, 0}, err[4] = {0xff, 0xff, 0xff, 0xff};
	/* Bound first: unbound data is not read, not even to describe it. */
	if (!data_bound(ev, s->p->bank)) {
		add(s->v, "separator-malformed",
		    "PCR %u: separator at byte %zu: its %s digest is not the hash of its data",
		    ev->pcr, ev->offset, fleet_hash_alg_name(s->p->bank));
		return;
	}
	if (ev->data_len != 4 || (memcmp(ev->data, ok, 4) && memcmp(ev->data, err, 4))) {
		add(s->v, "separator-malformed",
		    "PCR %u: separator at byte %zu holds %u bytes, not 00000000", ev->pcr,
		    ev->offset, ev->data_len);
		return;
	}
	/* 0xFFFFFFFF: the firmware hit an error before handing over
	 * (PC Client PFP, EV_SEPARATOR); what follows is not a normal boot. */
	if (!memcmp(ev->data, err, 4))
		add(s->v, "separator-error", "PCR %u: error separator (ffffffff) at byte %zu",
		    ev->pcr, ev->offset);
}

/*
 * Why the event checks below never trust an event's type or name.
 *
 * The TPM binds only the digests, in order. An event's type is the machine's
 * word, and so is every field of its data that fleet_evlog_event_bound() does
 * not report bound in the quoted bank: the whole data when the digest is not
 * its hash, and an EV_EFI_VARIABLE_BOOT's GUID and name when the digest is
 * of its VariableData alone. A log that relabels an event (an unlisted boot
 * application called a "driver", SecureBoot=00 called an "authority", an
 * unlisted authority called a config variable, a data-only digest wrapped
 * in a record named SecureBoot) still replays to the quote. So every rule
 * here decides from what the TPM bound, and a field it did not bind is
 * never read:
 *   - which events are code (PCR 4) or authorities (PCR 7 after its
 *     separator): all of them, whatever their type, judged by digest;
 *   - what an event says (SecureBoot's byte, an EFI action's text, a
 *     separator's value): only from data bound by the digest, and only
 *     when the type agrees (a bound record of another type is not read as
 *     one of these: the type is not bound, so it may only narrow);
 *   - which variable a PCR 7 record is (SecureBoot, PK, KEK, db, dbx): by
 *     type EV_EFI_VARIABLE_DRIVER_CONFIG and a GUID and name the digest
 *     binds. A record whose name is not bound is no variable at all; it
 *     counts only as an event extended into its PCR (the replay and the
 *     "logged" test above need nothing more), and where a rule judges by
 *     digest (code, authorities) it is judged by digest like any other;
 *   - where an event stands: by the order the digests were extended in,
 *     relative to a separator whose own data is proven. Firmware measures
 *     PCR 7's configuration (SecureBoot, PK, KEK, db, dbx), then its
 *     separator, then authorities; nothing a booted OS extends later can
 *     land before that separator (tests/unit/test_policy_evaluate.c holds
 *     the relabelling attacks found in review).
 */

/* A separator: type EV_SEPARATOR with bound data 00000000 or ffffffff. */
static bool is_separator(const struct fleet_evlog_event *ev, uint16_t bank)
{
	static const uint8_t ok[4] = {0, 0, 0, 0}, err[4] = {0xff, 0xff, 0xff, 0xff};
	return ev->type == FLEET_EV_SEPARATOR && data_bound(ev, bank) && ev->data_len == 4 &&
	       (!memcmp(ev->data, ok, 4) || !memcmp(ev->data, err, 4));
}

/*
 * A PCR 7 configuration variable (SecureBoot, PK, KEK, db, dbx, ...): type
 * EV_EFI_VARIABLE_DRIVER_CONFIG and a digest that binds the whole
 * UEFI_VARIABLE_DATA, so the GUID and the name in var are the ones
 * measured. Any other record is none, and *why says why, for the detail:
 * another type (an EV_EFI_VARIABLE_BOOT, whose digest may bind its
 * VariableData alone, among them), a digest that binds nothing, data that
 * is no UEFI_VARIABLE_DATA.
 */
static bool config_variable(const struct fleet_evlog_event *ev, uint16_t bank,
			    struct fleet_efi_var *var, const char **why)
{
	enum fleet_evlog_bound bound;
	*why = "it is not EV_EFI_VARIABLE_DRIVER_CONFIG";
	if (ev->type != FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG)
		return false;
	fleet_err e = fleet_evlog_efi_variable_bound(ev, bank, var, &bound);
	if (e == FLEET_OK && bound == FLEET_EVLOG_BOUND_ALL)
		return true;
	/* VARIABLE_DATA is for EV_EFI_VARIABLE_BOOT only, so not seen here. */
	*why = e == FLEET_E_MALFORMED ? "its data is not a UEFI_VARIABLE_DATA"
				      : "its digest is not the hash of its data";
	return false;
}

/* SecureBoot: a configuration variable (above: type and bound GUID and
 * name) with the EFI global GUID and that name. *value: 0/1, or -1 when the
 * data is not a single byte 00 or 01. */
static bool is_secure_boot(const struct fleet_efi_var *var, int *value)
{
	char guid[37];
	fleet_efi_guid_str(var->guid, guid);
	if (strcmp(guid, efi_global_guid) || strcmp(var->name, "SecureBoot"))
		return false;
	*value = var->data_len == 1 && var->data[0] <= 1 ? var->data[0] : -1;
	return true;
}

/* An EFI action whose bound data is short printable text. Code measured
 * into PCR 4 is a PE image's Authenticode digest; no PE image is 128
 * printable bytes, so this cannot hide a boot application. */
static bool is_efi_action_text(const struct fleet_evlog_event *ev, uint16_t bank)
{
	if (ev->type != FLEET_EV_EFI_ACTION || !data_bound(ev, bank) || ev->data_len == 0 ||
	    ev->data_len > 128)
		return false;
	return fleet_ascii_printable(ev->data, ev->data_len, FLEET_ASCII_SPACE);
}

static bool quoted(const struct state *s, unsigned pcr)
{
	return s->p->quote_mask & (1u << pcr);
}

/* The digest in the profile's bank; NULL when the event lacks it (then the
 * bank is not replayable and that is reported already). */
static const uint8_t *bank_digest(const struct state *s, const struct fleet_evlog_event *ev)
{
	const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, s->p->bank);
	return d && d->size == s->p->size ? d->bytes : NULL;
}

/* Every separator on a quoted PCR is well formed. */
static void check_separators(struct state *s)
{
	const struct fleet_evlog *log = s->in->log;
	for (size_t k = 0; k < log->n_events; k++) {
		const struct fleet_evlog_event *ev = &log->events[k];
		if (ev->type == FLEET_EV_SEPARATOR && ev->pcr < FLEET_PCR_COUNT &&
		    quoted(s, ev->pcr))
			check_separator(s, ev);
	}
}

/* PCR 7: before the separator only configuration variables (type and bound
 * GUID and name), SecureBoot among them exactly once with the profile's
 * value; everything after the separator an allowed authority, by digest. */
static void check_pcr7(struct state *s, bool renew_seen[])
{
	const struct fleet_profile *p = s->p;
	const struct fleet_evlog *log = s->in->log;
	bool check_sb = p->secure_boot != FLEET_SECURE_BOOT_ANY;
	bool check_auth = p->allowed_authorities.present || p->renew_required_authorities.n > 0;
	char a[2 * FLEET_DIGEST_MAX + 1];
	bool separated = false, any = false;
	int sb_count = 0, sb_value = -2;

	if (!quoted(s, 7) || (!check_sb && !check_auth))
		return;
	for (size_t k = 0; k < log->n_events; k++) {
		const struct fleet_evlog_event *ev = &log->events[k];
		struct fleet_efi_var var;
		const char *why;
		int value;
		if (ev->type == FLEET_EV_NO_ACTION || ev->pcr != 7)
			continue;
		any = true;
		if (ev->type == FLEET_EV_SEPARATOR) {
			/* The first proven one is the boundary; any other is
			 * judged by check_separators (malformed fails there). */
			if (!separated && is_separator(ev, p->bank))
				separated = true;
			continue;
		}
		/* The type test comes first, so an authority after the
		 * separator is judged by digest without hashing its data. */
		bool config = config_variable(ev, p->bank, &var, &why);
		if (config && is_secure_boot(&var, &value)) {
			/* Measured again after the separator can only be a later
			 * extend by whatever booted: never the firmware's word. */
			if (separated)
				sb_count = 2;
			else
				sb_count++, sb_value = value;
			continue;
		}
		if (!separated) {
			/* Before the separator firmware measures configuration
			 * variables, each over its whole record. Anything else
			 * there is an event we cannot read, so cannot judge. */
			if (!config)
				add(s->v, "event-data-mismatch",
				    "PCR 7: %s at byte %zu before the separator is not a "
				    "configuration variable: %s (what its %s digest binds: %s)",
				    fleet_evlog_type_name(ev->type), ev->offset, why,
				    fleet_hash_alg_name(p->bank),
				    fleet_evlog_bound_name(fleet_evlog_event_bound(ev, p->bank)));
			continue;
		}
		/* After the separator: authorities, judged by digest alone. */
		const uint8_t *d = bank_digest(s, ev);
		if (!d)
			continue;
		if (p->allowed_authorities.present &&
		    !fleet_digest_list_has(p, &p->allowed_authorities, d))
			add(s->v, "authority-not-allowed",
			    "PCR 7: %s at byte %zu (%s) is not in allowed_authorities",
			    hx(d, p->size, a), ev->offset, fleet_evlog_type_name(ev->type));
		for (size_t r = 0; r < p->renew_required_authorities.n; r++)
			if (!memcmp(p->renew_required_authorities.d[r], d, p->size))
				renew_seen[r] = true;
	}
	if (any && !separated)
		add(s->v, "separator-missing",
		    "PCR 7 has events but no separator: nothing tells firmware configuration "
		    "from what came after");
	if (!check_sb)
		return;
	if (sb_count == 0) {
		add(s->v, "secure-boot-unmeasured",
		    "PCR 7 has no SecureBoot variable (EV_EFI_VARIABLE_DRIVER_CONFIG, EFI global "
		    "GUID) whose digest binds its GUID, name and data before its separator");
	} else if (sb_count > 1) {
		add(s->v, "secure-boot-ambiguous",
		    "PCR 7: SecureBoot measured more than once, or after the separator");
	} else if (sb_value < 0) {
		add(s->v, "secure-boot-unmeasured",
		    "PCR 7: SecureBoot does not hold one byte 00 or 01");
	} else {
		int want = p->secure_boot == FLEET_SECURE_BOOT_ON;
		if (sb_value != want)
			add(s->v, "secure-boot-mismatch",
			    "PCR 7: SecureBoot is %s, the profile requires %s",
			    sb_value ? "on" : "off", want ? "on" : "off");
	}
}

/* PCR 4: every event but proven separators and EFI action text is code,
 * whatever its type, and must be a listed boot application; at least one
 * listed application after the separator. */
static void check_pcr4(struct state *s)
{
	const struct fleet_profile *p = s->p;
	const struct fleet_evlog *log = s->in->log;
	char a[2 * FLEET_DIGEST_MAX + 1];
	bool separated = false;
	size_t apps_after = 0;

	if (!quoted(s, 4) || !p->boot_applications.present)
		return;
	for (size_t k = 0; k < log->n_events; k++) {
		const struct fleet_evlog_event *ev = &log->events[k];
		if (ev->type == FLEET_EV_NO_ACTION || ev->pcr != 4)
			continue;
		if (ev->type == FLEET_EV_SEPARATOR) {
			/* An unproven separator fails in check_separators; it
			 * does not mark the boundary here. */
			if (is_separator(ev, p->bank))
				separated = true;
			continue;
		}
		if (is_efi_action_text(ev, p->bank))
			continue;
		const uint8_t *d = bank_digest(s, ev);
		if (!d)
			continue;
		/* Unlisted code ran whether before or after the separator;
		 * only listed code after it is the OS loader the rule wants. */
		if (!fleet_digest_list_has(p, &p->boot_applications, d))
			add(s->v, "boot-application-not-allowed",
			    "PCR 4: %s at byte %zu (%s) is not in boot_applications",
			    hx(d, p->size, a), ev->offset, fleet_evlog_type_name(ev->type));
		else if (separated)
			apps_after++;
	}
	if (apps_after == 0)
		add(s->v, "no-boot-application",
		    "PCR 4 has no listed boot application after its separator");
}

static void check_events(struct state *s)
{
	const struct fleet_profile *p = s->p;
	char a[2 * FLEET_DIGEST_MAX + 1];
	bool renew_seen[FLEET_PROFILE_MAX_DIGESTS] = {false};

	check_separators(s);
	check_pcr7(s, renew_seen);
	check_pcr4(s);
	if (s->in->renewal)
		for (size_t r = 0; r < p->renew_required_authorities.n; r++)
			if (!renew_seen[r])
				add(s->v, "renew-authority-missing",
				    "PCR 7: required authority %s is not in the log",
				    hx(p->renew_required_authorities.d[r], p->size, a));
}

fleet_err fleet_policy_evaluate(const struct fleet_profile *p, const struct fleet_policy_input *in,
				struct fleet_verdict *v)
{
	if (!v)
		return FLEET_E_INVALID_ARG;
	memset(v, 0, sizeof(*v));
	if (!p || !in || !in->log || !in->replay || (in->n_quoted && !in->quoted))
		return FLEET_E_INVALID_ARG;
	struct state s = {.p = p, .in = in, .v = v};
	v->pass = true;
	v->quote_checked = in->quoted != NULL;

	const struct fleet_pcr_bank *bank = fleet_pcr_replay_bank(in->replay, p->bank);
	if (!bank)
		add(v, "bank-not-replayable", "the log has no %s bank",
		    fleet_hash_alg_name(p->bank));
	else if (!bank->replayable || bank->size != p->size)
		add(v, "bank-not-replayable", "some event lacks a %s digest, or the bank is unusable",
		    fleet_hash_alg_name(p->bank));
	else
		s.bank = bank;
	/* "Logged" is read from the events themselves, not from the replay,
	 * so a bank that could not be replayed does not turn into "no events". */
	for (size_t k = 0; k < in->log->n_events; k++) {
		const struct fleet_evlog_event *ev = &in->log->events[k];
		if (ev->type != FLEET_EV_NO_ACTION && ev->pcr < FLEET_PCR_COUNT)
			s.logged |= 1u << ev->pcr;
	}
	check_values(&s);
	check_pcr0_and_pins(&s);
	check_events(&s);
	return FLEET_OK;
}

bool fleet_verdict_has(const struct fleet_verdict *v, const char *reason)
{
	for (size_t i = 0; i < v->n_reasons; i++)
		if (!strcmp(v->reasons[i].reason, reason))
			return true;
	return false;
}
