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
static bool digest_covers_data(const struct fleet_evlog_event *ev)
{
	return fleet_evlog_event_data_matches(ev) == FLEET_OK;
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
	if (!digest_covers_data(ev)) {
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

/* SecureBoot in PCR 7: returns true when this event is the SecureBoot
 * variable, and records its value in *state: 0/1, -1 when the data is not
 * one such byte, -2 when the data is not what was measured (reported here,
 * since the value it claims means nothing). */
static bool secure_boot_event(struct state *s, const struct fleet_evlog_event *ev, int *state)
{
	struct fleet_efi_var var;
	char guid[37];
	if (fleet_evlog_efi_variable(ev, &var) != FLEET_OK)
		return false;
	fleet_efi_guid_str(var.guid, guid);
	if (strcmp(guid, efi_global_guid) || strcmp(var.name, "SecureBoot"))
		return false;
	if (!digest_covers_data(ev)) {
		add(s->v, "event-data-mismatch",
		    "PCR 7: SecureBoot at byte %zu: its data does not hash to its %s digest",
		    ev->offset, fleet_hash_alg_name(s->p->bank));
		*state = -2;
	} else if (var.data_len != 1 || var.data[0] > 1) {
		*state = -1;
	} else {
		*state = var.data[0];
	}
	return true;
}

static void check_events(struct state *s)
{
	const struct fleet_profile *p = s->p;
	const struct fleet_evlog *log = s->in->log;
	char a[2 * FLEET_DIGEST_MAX + 1];
	bool pcr4_separated = false, sb_seen = false;
	size_t apps_after = 0;
	bool renew_seen[FLEET_PROFILE_MAX_DIGESTS] = {false};
	for (size_t k = 0; k < log->n_events; k++) {
		const struct fleet_evlog_event *ev = &log->events[k];
		if (ev->type == FLEET_EV_NO_ACTION || ev->pcr >= FLEET_PCR_COUNT)
			continue;
		/* Events on PCRs outside the quote are unauthenticated. */
		if (!(p->quote_mask & (1u << ev->pcr)))
			continue;
		const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, p->bank);
		bool dig_ok = d && d->size == p->size;
		if (ev->type == FLEET_EV_SEPARATOR) {
			check_separator(s, ev);
			if (ev->pcr == 4)
				pcr4_separated = true;
		} else if (ev->pcr == 7 && ev->type == FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG &&
			   p->secure_boot != FLEET_SECURE_BOOT_ANY) {
			int st;
			if (!secure_boot_event(s, ev, &st))
				continue;
			sb_seen = true;
			int want = p->secure_boot == FLEET_SECURE_BOOT_ON;
			if (st == -1)
				add(s->v, "secure-boot-unmeasured",
				    "PCR 7: SecureBoot at byte %zu does not hold one byte 00 or 01",
				    ev->offset);
			else if (st >= 0 && st != want)
				add(s->v, "secure-boot-mismatch",
				    "PCR 7: SecureBoot is %s, the profile requires %s",
				    st ? "on" : "off", want ? "on" : "off");
		} else if (ev->pcr == 7 && ev->type == FLEET_EV_EFI_VARIABLE_AUTHORITY && dig_ok) {
			if (p->allowed_authorities.present &&
			    !fleet_digest_list_has(p, &p->allowed_authorities, d->bytes))
				add(s->v, "authority-not-allowed",
				    "PCR 7: authority %s at byte %zu is not in allowed_authorities",
				    hx(d->bytes, p->size, a), ev->offset);
			for (size_t r = 0; r < p->renew_required_authorities.n; r++)
				if (!memcmp(p->renew_required_authorities.d[r], d->bytes, p->size))
					renew_seen[r] = true;
		} else if (ev->pcr == 4 && ev->type == FLEET_EV_EFI_BOOT_SERVICES_APPLICATION &&
			   dig_ok && p->boot_applications.present) {
			/* Every boot application must be listed, before the
			 * separator too: unlisted code ran either way. Only those
			 * after it count as the OS loader the rule asks for. */
			if (!fleet_digest_list_has(p, &p->boot_applications, d->bytes))
				add(s->v, "boot-application-not-allowed",
				    "PCR 4: boot application %s at byte %zu is not in boot_applications",
				    hx(d->bytes, p->size, a), ev->offset);
			else if (pcr4_separated)
				apps_after++;
		}
	}
	if (p->secure_boot != FLEET_SECURE_BOOT_ANY && !sb_seen)
		add(s->v, "secure-boot-unmeasured",
		    "PCR 7 has no SecureBoot variable event (EFI global variable GUID)");
	if (p->boot_applications.present && apps_after == 0)
		add(s->v, "no-boot-application",
		    "PCR 4 has no listed boot application after its separator");
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
