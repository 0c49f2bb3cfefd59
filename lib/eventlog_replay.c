/*
 * eventlog_replay.c: compute the PCR values a parsed log claims.
 *
 * Replay is what a verifier compares against a quote, so it never fills a
 * gap: a bank that some extending event lacks, or whose hash OpenSSL cannot
 * compute, is "not replayable" and carries no values at all.
 */
#include "lib/eventlog.h"

#include <string.h>

#include <openssl/evp.h>

/* Extend one PCR: value := H(value || digest). */
static fleet_err extend(EVP_MD_CTX *ctx, const EVP_MD *md, uint8_t *value, size_t size,
			const uint8_t *digest)
{
	unsigned int n = 0;
	if (!EVP_DigestInit_ex(ctx, md, NULL) || !EVP_DigestUpdate(ctx, value, size) ||
	    !EVP_DigestUpdate(ctx, digest, size) || !EVP_DigestFinal_ex(ctx, value, &n) ||
	    n != size)
		return FLEET_E_CRYPTO;
	return FLEET_OK;
}

void fleet_evlog_pcr_initial(const struct fleet_evlog *log, unsigned pcr, size_t size,
			     uint8_t *out)
{
	memset(out, 0, size);
	if (pcr >= 17 && pcr <= 22) {
		/* PC Client PTP: PCRs 17..22 come out of TPM2_Startup as all
		 * ones; only a dynamic launch resets them, which a firmware
		 * log does not record. */
		memset(out, 0xFF, size);
	} else if (pcr == 0 && size > 0) {
		/* Zeros, or the locality in the last byte: 3 after a
		 * TPM2_Startup from locality 3, 4 after an H-CRTM sequence
		 * (TPM 2.0 Part 1, "Startup Locality" and "H-CRTM"). The
		 * parser has already checked that a StartupLocality event and
		 * an H-CRTM event agree. */
		if (log->hcrtm)
			out[size - 1] = 4;
		else if (log->startup_locality > 0)
			out[size - 1] = (uint8_t)log->startup_locality;
	}
}

static fleet_err replay_bank(const struct fleet_evlog *log, struct fleet_pcr_bank *bank,
			     EVP_MD_CTX *ctx, struct fleet_errctx *ec)
{
	const EVP_MD *md = fleet_hash_alg_md(bank->alg);
	if (!md || (size_t)EVP_MD_get_size(md) != bank->size) {
		bank->replayable = false;
		return FLEET_OK;
	}
	memset(bank->pcr, 0, sizeof(bank->pcr));
	for (unsigned i = 0; i < FLEET_PCR_COUNT; i++)
		fleet_evlog_pcr_initial(log, i, bank->size, bank->pcr[i]);
	bank->extended = 0;
	bank->replayable = true;
	for (size_t i = 0; i < log->n_events; i++) {
		const struct fleet_evlog_event *ev = &log->events[i];
		if (ev->type == FLEET_EV_NO_ACTION)
			continue;
		/* The parser refuses this; replay does not index past the
		 * array on a log built by other means. */
		if (ev->pcr >= FLEET_PCR_COUNT)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"PCR index %u is over 23", ev->pcr);
		const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, bank->alg);
		if (!d || d->size != bank->size) {
			bank->replayable = false;
			break;
		}
		fleet_err e = extend(ctx, md, bank->pcr[ev->pcr], bank->size, d->bytes);
		if (e != FLEET_OK)
			return fleet_errctx_msg(ec, e, "hashing failed in bank 0x%04x", bank->alg);
		bank->extended |= UINT32_C(1) << ev->pcr;
	}
	if (!bank->replayable) {
		/* No partial values: a caller that forgets to check the flag
		 * must not find a plausible-looking PCR. */
		memset(bank->pcr, 0, sizeof(bank->pcr));
		bank->extended = 0;
	}
	return FLEET_OK;
}

fleet_err fleet_evlog_replay(const struct fleet_evlog *log, struct fleet_pcr_replay *out,
			     struct fleet_errctx *ec)
{
	if (!log || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no log or no output");
	memset(out, 0, sizeof(*out));
	if (log->n_algs > FLEET_EVLOG_MAX_BANKS)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "log with %u banks", log->n_algs);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx)
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory for a digest context");
	fleet_err e = FLEET_OK;
	for (uint32_t b = 0; b < log->n_algs && e == FLEET_OK; b++) {
		struct fleet_pcr_bank *bank = &out->banks[b];
		bank->alg = log->algs[b].alg;
		bank->size = log->algs[b].size;
		out->n_banks = b + 1;
		e = replay_bank(log, bank, ctx, ec);
	}
	EVP_MD_CTX_free(ctx);
	if (e != FLEET_OK)
		memset(out, 0, sizeof(*out));
	return e;
}

fleet_err fleet_evlog_replay_one(const struct fleet_evlog *log, uint16_t alg,
				 struct fleet_pcr_replay *out, struct fleet_errctx *ec)
{
	if (!log || !out)
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no log or no output");
	memset(out, 0, sizeof(*out));
	for (uint32_t b = 0; b < log->n_algs && b < FLEET_EVLOG_MAX_BANKS; b++) {
		if (log->algs[b].alg != alg)
			continue;
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		if (!ctx)
			return fleet_errctx_msg(ec, FLEET_E_NOMEM,
						"out of memory for a digest context");
		out->banks[0].alg = alg;
		out->banks[0].size = log->algs[b].size;
		out->n_banks = 1;
		fleet_err e = replay_bank(log, &out->banks[0], ctx, ec);
		EVP_MD_CTX_free(ctx);
		if (e != FLEET_OK)
			memset(out, 0, sizeof(*out));
		return e;
	}
	/* Not an error: the log simply has no such bank, and the caller's
	 * fleet_pcr_replay_bank() lookup will say so. */
	return FLEET_OK;
}

const struct fleet_pcr_bank *fleet_pcr_replay_bank(const struct fleet_pcr_replay *r, uint16_t alg)
{
	if (!r)
		return NULL;
	for (uint32_t i = 0; i < r->n_banks && i < FLEET_EVLOG_MAX_BANKS; i++)
		if (r->banks[i].alg == alg)
			return &r->banks[i];
	return NULL;
}

bool fleet_evlog_type_binds_data(uint32_t type)
{
	switch (type) {
	case FLEET_EV_SEPARATOR:
	case FLEET_EV_ACTION:
	case FLEET_EV_S_CRTM_VERSION:
	case FLEET_EV_EFI_ACTION:
	case FLEET_EV_EFI_GPT_EVENT:
	case FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG:
	case FLEET_EV_EFI_VARIABLE_BOOT:
	case FLEET_EV_EFI_VARIABLE_BOOT2:
		return true;
	default:
		return false;
	}
}

/*
 * What digest d binds of ev's data. FLEET_E_UNSUPPORTED when the bank cannot
 * be computed here (then *out is NONE: an unchecked digest binds nothing).
 *
 * ALL when d = H(data), whatever the type says: the hash binds every byte.
 * VARIABLE_DATA only for EV_EFI_VARIABLE_BOOT whose d = H(VariableData):
 * firmware measures the EFI_LOAD_OPTION alone there (both forms occur in the
 * shared real logs), so the GUID, the name and both length fields are the
 * log's word. Not for EV_EFI_VARIABLE_BOOT2, which the PFP added precisely
 * so that the whole UEFI_VARIABLE_DATA is measured, nor for any other type.
 */
static fleet_err digest_binds(const struct fleet_evlog_event *ev,
			      const struct fleet_evlog_digest *d, enum fleet_evlog_bound *out)
{
	uint8_t h[FLEET_DIGEST_MAX];
	*out = FLEET_EVLOG_BOUND_NONE;
	if (fleet_hash_alg_size(d->alg) != d->size ||
	    fleet_hash(d->alg, ev->data_len ? ev->data : (const uint8_t *)"", ev->data_len, h) !=
		    FLEET_OK)
		return FLEET_E_UNSUPPORTED;
	if (memcmp(h, d->bytes, d->size) == 0) {
		*out = FLEET_EVLOG_BOUND_ALL;
		return FLEET_OK;
	}
	struct fleet_efi_var var;
	if (ev->type == FLEET_EV_EFI_VARIABLE_BOOT && fleet_evlog_efi_variable(ev, &var) == FLEET_OK &&
	    fleet_hash(d->alg, var.data_len ? var.data : (const uint8_t *)"", (size_t)var.data_len,
		       h) == FLEET_OK &&
	    memcmp(h, d->bytes, d->size) == 0)
		*out = FLEET_EVLOG_BOUND_VARIABLE_DATA;
	return FLEET_OK;
}

enum fleet_evlog_bound fleet_evlog_event_bound(const struct fleet_evlog_event *ev, uint16_t alg)
{
	enum fleet_evlog_bound b = FLEET_EVLOG_BOUND_NONE;
	if (!ev || (ev->data_len > 0 && !ev->data))
		return b;
	const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, alg);
	if (d)
		(void)digest_binds(ev, d, &b); /* NONE when it cannot be computed */
	return b;
}

const char *fleet_evlog_bound_name(enum fleet_evlog_bound b)
{
	switch (b) {
	case FLEET_EVLOG_BOUND_ALL:
		return "all";
	case FLEET_EVLOG_BOUND_VARIABLE_DATA:
		return "variable-data";
	case FLEET_EVLOG_BOUND_NONE:
	default:
		return "none";
	}
}

fleet_err fleet_evlog_efi_variable_bound(const struct fleet_evlog_event *ev, uint16_t alg,
					 struct fleet_efi_var *out, enum fleet_evlog_bound *bound)
{
	if (!ev || !out || !bound)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	*bound = fleet_evlog_event_bound(ev, alg);
	if (*bound == FLEET_EVLOG_BOUND_NONE)
		return FLEET_E_VERIFY;
	struct fleet_efi_var var;
	fleet_err e = fleet_evlog_efi_variable(ev, &var);
	if (e != FLEET_OK)
		return e;
	/* VariableData is bound in both cases; the GUID and the name only
	 * when the whole record is. An unbound name is not copied at all, so
	 * no caller can compare it by mistake. */
	out->data = var.data;
	out->data_len = var.data_len;
	if (*bound == FLEET_EVLOG_BOUND_ALL) {
		memcpy(out->guid, var.guid, sizeof(out->guid));
		memcpy(out->name, var.name, sizeof(out->name));
	}
	return FLEET_OK;
}

/* One digest against the event's data: bound in any part. */
static fleet_err digest_matches(const struct fleet_evlog_event *ev,
				const struct fleet_evlog_digest *d)
{
	enum fleet_evlog_bound b;
	fleet_err e = digest_binds(ev, d, &b);
	if (e != FLEET_OK)
		return e;
	return b != FLEET_EVLOG_BOUND_NONE ? FLEET_OK : FLEET_E_VERIFY;
}

fleet_err fleet_evlog_event_data_matches(const struct fleet_evlog_event *ev)
{
	if (!ev || (ev->data_len > 0 && !ev->data))
		return FLEET_E_INVALID_ARG;
	uint32_t checked = 0;
	for (uint32_t i = 0; i < ev->n_digests && i < FLEET_EVLOG_MAX_BANKS; i++) {
		fleet_err e = digest_matches(ev, &ev->digests[i]);
		if (e == FLEET_E_UNSUPPORTED)
			continue; /* a bank we cannot compute proves nothing either way */
		if (e != FLEET_OK)
			return e;
		checked++;
	}
	return checked ? FLEET_OK : FLEET_E_UNSUPPORTED;
}

fleet_err fleet_evlog_event_data_matches_bank(const struct fleet_evlog_event *ev, uint16_t alg)
{
	if (!ev || (ev->data_len > 0 && !ev->data))
		return FLEET_E_INVALID_ARG;
	const struct fleet_evlog_digest *d = fleet_evlog_event_digest(ev, alg);
	return d ? digest_matches(ev, d) : FLEET_E_NOT_FOUND;
}
