/*
 * evaluate.c: a profile's verdict on a log and a quote.
 *
 * Order of trust: the quote is signed by the TPM; the replay of the log must
 * reproduce it PCR by PCR before any event on that PCR means anything; and an
 * event whose data the policy reads (a separator's value, the SecureBoot
 * byte) must hash to the digest that was extended, or the data is a story
 * the firmware never measured.
 */
#include "policy/evaluate.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/hex.h"

/* EFI_GLOBAL_VARIABLE, the vendor GUID of SecureBoot (UEFI 2.x, 3.3). */
static const char efi_global_guid[] = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

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

/* Is the event's data what its digests measured? Replay proves only the
 * digests; a check that reads the data (a separator's value, SecureBoot's
 * byte) must first know the data is what was hashed, or a log could carry
 * the digest of 00 beside data that says 01. One rule, in lib/. */
static bool digest_covers_data(const struct fleet_evlog_event *ev, uint16_t bank)
{
	/* The quoted bank is the one the TPM bound; the log's other banks
	 * are its own word, so proving them would prove nothing more. */
	return fleet_evlog_event_data_matches_bank(ev, bank) == FLEET_OK;
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
			/* The version is the machine's claim: print it capped and
			 * with anything unprintable replaced. */
			char safe[FLEET_PROFILE_MAX_NAME + 1];
			size_t k;
			for (k = 0; bios[k] && k < FLEET_PROFILE_MAX_NAME; k++)
				safe[k] = (bios[k] >= 0x20 && bios[k] < 0x7f) ? bios[k] : '?';
			safe[k] = '\0';
			add(s->v, "pcr0-unknown-bios", "BIOS version '%s%s' is not in pcr0_by_bios",
			    safe, bios[k] ? "..." : "");
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
	if (ev->data_len != 4 || (memcmp(ev->data, ok, 4) && memcmp(ev->data, err, 4))) {
		add(s->v, "separator-malformed",
		    "PCR %u: separator at byte %zu holds %u bytes, not 00000000", ev->pcr,
		    ev->offset, ev->data_len);
		return;
	}
	if (!digest_covers_data(ev, s->p->bank)) {
		add(s->v, "separator-malformed",
		    "PCR %u: separator at byte %zu: its %s digest is not the hash of its data",
		    ev->pcr, ev->offset, fleet_hash_alg_name(s->p->bank));
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
 * word, and so is its data unless fleet_evlog_event_data_matches() proves the
 * digests were computed over it. A log that relabels an event (an unlisted
 * boot application called a "driver", SecureBoot=00 called an "authority",
 * an unlisted authority called a config variable) still replays to the
 * quote. So every rule here decides from what the TPM bound:
 *   - which events are code (PCR 4) or authorities (PCR 7 after its
 *     separator): all of them, whatever their type, judged by digest;
 *   - what an event says (SecureBoot's byte, an EFI action's text, a
 *     separator's value): only from data proven to be what was measured;
 *   - where an event stands: by the order the digests were extended in,
 *     relative to a separator whose own data is proven. Firmware measures
 *     PCR 7's configuration (SecureBoot, PK, KEK, db, dbx), then its
 *     separator, then authorities; nothing a booted OS extends later can
 *     land before that separator (tests/unit/test_policy_evaluate.c holds
 *     the relabelling attacks found in review).
 */

/* A separator: type EV_SEPARATOR with proven data 00000000 or ffffffff. */
static bool is_separator(const struct fleet_evlog_event *ev, uint16_t bank)
{
	static const uint8_t ok[4] = {0, 0, 0, 0}, err[4] = {0xff, 0xff, 0xff, 0xff};
	return ev->type == FLEET_EV_SEPARATOR && ev->data_len == 4 &&
	       (!memcmp(ev->data, ok, 4) || !memcmp(ev->data, err, 4)) && digest_covers_data(ev, bank);
}

/* The SecureBoot variable, recognised by its proven data (GUID and name are
 * inside it), never by the event's type. *value: 0/1, or -1 when the data
 * is not a single byte 00 or 01. */
static bool is_secure_boot(const struct fleet_evlog_event *ev, uint16_t bank, int *value)
{
	struct fleet_efi_var var;
	char guid[37];
	if (fleet_evlog_efi_variable(ev, &var) != FLEET_OK)
		return false;
	fleet_efi_guid_str(var.guid, guid);
	/* Name first (cheap), proof second: an unproven look-alike is no
	 * SecureBoot measurement, and the caller refuses it as unreadable. */
	if (strcmp(guid, efi_global_guid) || strcmp(var.name, "SecureBoot") ||
	    !digest_covers_data(ev, bank))
		return false;
	*value = var.data_len == 1 && var.data[0] <= 1 ? var.data[0] : -1;
	return true;
}

/* An EFI action whose proven data is short printable text. Code measured
 * into PCR 4 is a PE image's Authenticode digest; no PE image is 128
 * printable bytes, so this cannot hide a boot application. */
static bool is_efi_action_text(const struct fleet_evlog_event *ev, uint16_t bank)
{
	if (ev->type != FLEET_EV_EFI_ACTION || ev->data_len == 0 || ev->data_len > 128 ||
	    !digest_covers_data(ev, bank))
		return false;
	for (uint32_t i = 0; i < ev->data_len; i++)
		if (ev->data[i] < 0x20 || ev->data[i] > 0x7e)
			return false;
	return true;
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

/* PCR 7: SecureBoot exactly once, before the separator, with the profile's
 * value; everything after the separator an allowed authority. */
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
		if (is_secure_boot(ev, p->bank, &value)) {
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
			 * variables, each over its own data. Anything else there
			 * is an event we cannot read, so cannot judge. */
			struct fleet_efi_var var;
			if (fleet_evlog_efi_variable(ev, &var) != FLEET_OK ||
			    !digest_covers_data(ev, p->bank))
				add(s->v, "event-data-mismatch",
				    "PCR 7: event at byte %zu before the separator is not a "
				    "configuration variable measured over its data",
				    ev->offset);
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
		    "PCR 7 has no SecureBoot variable (EFI global GUID) measured over its data "
		    "before its separator");
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
