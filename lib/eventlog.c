/*
 * eventlog.c: parse TCG PC Client firmware event logs (PFP section 10).
 *
 * Every byte is read through lib/reader.h, and every refusal names the byte
 * offset of the field that was wrong: for a length that runs past the end,
 * the offset of the length field itself, since that is the lie.
 *
 * What is checked, and why:
 *  - digest sizes come only from the Spec ID table; a digest whose algorithm
 *    is not in it cannot be skipped without trusting a size we do not know;
 *  - one digest per bank per event: with two sha256 digests a reader and the
 *    replay could disagree about which one counts;
 *  - PCR indexes above 23 are refused except on EV_NO_ACTION, which extends
 *    nothing (Windows writes its WBCL trailer on PCR 0xFFFFFFFF);
 *  - StartupLocality and H-CRTM events change the initial value of PCR 0, so
 *    they must come before anything extends PCR 0, appear once, and agree.
 */
#include "lib/eventlog.h"

#include <stdlib.h>
#include <string.h>

#include "lib/reader.h"

#define SPECID_SIG "Spec ID Event03" /* with its NUL: 16 bytes */
#define LOCALITY_SIG "StartupLocality"
#define SIG_LEN 16
#define SHA1_EVENT_MIN 32  /* pcr, type, digest[20], size */
#define AGILE_EVENT_MIN 16 /* pcr, type, count, size */

const char *fleet_evlog_format_name(enum fleet_evlog_format f)
{
	switch (f) {
	case FLEET_EVLOG_SHA1:
		return "sha1";
	case FLEET_EVLOG_CRYPTO_AGILE:
		return "crypto-agile";
	}
	return "unknown";
}

void fleet_evlog_free(struct fleet_evlog *log)
{
	if (!log)
		return;
	free(log->events);
	free(log->raw);
	free(log);
}

const struct fleet_evlog_digest *fleet_evlog_event_digest(const struct fleet_evlog_event *ev,
							  uint16_t alg)
{
	if (!ev)
		return NULL;
	for (uint32_t i = 0; i < ev->n_digests && i < FLEET_EVLOG_MAX_BANKS; i++)
		if (ev->digests[i].alg == alg)
			return &ev->digests[i];
	return NULL;
}

/* Parse state beyond what the log itself records. */
struct parse_state {
	struct fleet_evlog *log;
	size_t cap_events;
	int pcr0_extended;        /* some event already extended PCR 0 */
	size_t locality_offset;   /* where the StartupLocality event was */
	size_t hcrtm_offset;
};

static fleet_err new_event(struct parse_state *st, size_t offset, struct fleet_evlog_event **ev,
			   struct fleet_errctx *ec)
{
	struct fleet_evlog *log = st->log;
	if (log->n_events >= FLEET_EVLOG_MAX_EVENTS)
		return fleet_errctx_set(ec, FLEET_E_TOO_LARGE, offset,
					"more than %u events", FLEET_EVLOG_MAX_EVENTS);
	if (log->n_events == st->cap_events) {
		size_t cap = st->cap_events ? st->cap_events * 2 : 64;
		struct fleet_evlog_event *p = realloc(log->events, cap * sizeof(*p));
		if (!p)
			return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory for events");
		log->events = p;
		st->cap_events = cap;
	}
	*ev = &log->events[log->n_events];
	memset(*ev, 0, sizeof(**ev));
	(*ev)->offset = offset;
	return FLEET_OK;
}

/* The event's data (size field, then bytes), shared by both formats. */
static fleet_err read_data(struct fleet_reader *r, struct fleet_evlog_event *ev,
			   struct fleet_errctx *ec)
{
	size_t off = fr_offset(r);
	if (fr_u32le(r, &ev->data_len) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off,
					"event size field past end of log");
	if (fr_ptr(r, ev->data_len, &ev->data) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off,
					"event size %u past end of log (%zu bytes left)",
					ev->data_len, fr_left(r));
	return FLEET_OK;
}

static fleet_err read_pcr_type(struct fleet_reader *r, struct fleet_evlog_event *ev,
			       struct fleet_errctx *ec)
{
	size_t off = fr_offset(r);
	if (fr_u32le(r, &ev->pcr) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off, "PCR index past end of log");
	if (fr_u32le(r, &ev->type) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off + 4,
					"event type past end of log");
	if (ev->pcr >= FLEET_PCR_COUNT && ev->type != FLEET_EV_NO_ACTION)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off,
					"PCR index %u is over 23 (event type 0x%08x)", ev->pcr,
					ev->type);
	return FLEET_OK;
}

/* TCG_PCClientPCREvent: the legacy record, and the crypto-agile header. */
static fleet_err read_sha1_event(struct fleet_reader *r, struct fleet_evlog_event *ev,
				 struct fleet_errctx *ec)
{
	fleet_err e = read_pcr_type(r, ev, ec);
	if (e != FLEET_OK)
		return e;
	size_t off = fr_offset(r);
	if (fr_get(r, ev->digests[0].bytes, 20) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off, "SHA-1 digest past end of log");
	ev->digests[0].alg = FLEET_ALG_SHA1;
	ev->digests[0].size = 20;
	ev->n_digests = 1;
	return read_data(r, ev, ec);
}

static const struct fleet_evlog_alg *table_alg(const struct fleet_evlog *log, uint16_t alg)
{
	for (uint32_t i = 0; i < log->n_algs; i++)
		if (log->algs[i].alg == alg)
			return &log->algs[i];
	return NULL;
}

/* TCG_PCR_EVENT2: digest sizes from the Spec ID table only. */
static fleet_err read_agile_event(const struct fleet_evlog *log, struct fleet_reader *r,
				  struct fleet_evlog_event *ev, struct fleet_errctx *ec)
{
	fleet_err e = read_pcr_type(r, ev, ec);
	if (e != FLEET_OK)
		return e;
	size_t off = fr_offset(r);
	uint32_t count;
	if (fr_u32le(r, &count) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, off, "digest count past end of log");
	if (count > log->n_algs)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, off,
					"digest count %u exceeds the %u banks of the Spec ID table",
					count, log->n_algs);
	for (uint32_t i = 0; i < count; i++) {
		size_t aoff = fr_offset(r);
		uint16_t alg;
		if (fr_u16le(r, &alg) != FLEET_OK)
			return fleet_errctx_set(ec, FLEET_E_TRUNCATED, aoff,
						"digest %u of %u past end of log", i + 1, count);
		const struct fleet_evlog_alg *a = table_alg(log, alg);
		if (!a)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, aoff,
						"digest algorithm 0x%04x is not in the Spec ID table",
						alg);
		for (uint32_t j = 0; j < i; j++)
			if (ev->digests[j].alg == alg)
				return fleet_errctx_set(ec, FLEET_E_MALFORMED, aoff,
							"second digest for algorithm 0x%04x", alg);
		ev->digests[i].alg = alg;
		ev->digests[i].size = a->size;
		if (fr_get(r, ev->digests[i].bytes, a->size) != FLEET_OK)
			return fleet_errctx_set(ec, FLEET_E_TRUNCATED, aoff + 2,
						"%u-byte digest past end of log", a->size);
	}
	ev->n_digests = count;
	return read_data(r, ev, ec);
}

/* TCG_EfiSpecIDEventStruct (PFP 10.4.5.1), the header event's data. The
 * version fields are informational and accepted as found; the table is what
 * the rest of the parse trusts, so it is checked entry by entry. */
static fleet_err read_spec_id(struct fleet_evlog *log, const struct fleet_evlog_event *hdr,
			      size_t data_off, struct fleet_errctx *ec)
{
	struct fleet_reader s;
	fr_init(&s, hdr->data, hdr->data_len);
	s.origin = data_off;
	uint32_t platform_class, n;
	uint8_t ver[4], vendor_len;
	if (fr_skip(&s, SIG_LEN) != FLEET_OK || fr_u32le(&s, &platform_class) != FLEET_OK ||
	    fr_get(&s, ver, sizeof(ver)) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, fr_offset(&s),
					"Spec ID event shorter than its fixed fields");
	size_t noff = fr_offset(&s);
	if (fr_u32le(&s, &n) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, noff,
					"Spec ID algorithm count past end of event");
	if (n == 0)
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, noff,
					"Spec ID table lists no algorithms");
	if (n > FLEET_EVLOG_MAX_BANKS)
		return fleet_errctx_set(ec, FLEET_E_TOO_LARGE, noff,
					"Spec ID table lists %u algorithms (at most %u)", n,
					FLEET_EVLOG_MAX_BANKS);
	for (uint32_t i = 0; i < n; i++) {
		size_t aoff = fr_offset(&s);
		uint16_t alg, size;
		if (fr_u16le(&s, &alg) != FLEET_OK || fr_u16le(&s, &size) != FLEET_OK)
			return fleet_errctx_set(ec, FLEET_E_TRUNCATED, aoff,
						"Spec ID entry %u of %u past end of event", i + 1, n);
		if (size == 0 || size > FLEET_DIGEST_MAX)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, aoff + 2,
						"Spec ID digest size %u for 0x%04x", size, alg);
		/* A known algorithm with another size would make every digest
		 * of that bank mean something else than the TPM extended. */
		size_t known = fleet_hash_alg_size(alg);
		if (known && known != size)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, aoff + 2,
						"Spec ID gives %s a size of %u, not %zu",
						fleet_hash_alg_name(alg), size, known);
		if (table_alg(log, alg))
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, aoff,
						"Spec ID lists algorithm 0x%04x twice", alg);
		log->algs[i].alg = alg;
		log->algs[i].size = size;
		log->n_algs = i + 1;
	}
	size_t voff = fr_offset(&s);
	if (fr_u8(&s, &vendor_len) != FLEET_OK || fr_skip(&s, vendor_len) != FLEET_OK)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, voff,
					"Spec ID vendor info past end of event");
	if (!fr_at_end(&s))
		return fleet_errctx_set(ec, FLEET_E_MALFORMED, fr_offset(&s),
					"%zu bytes after the Spec ID structure", fr_left(&s));
	return FLEET_OK;
}

/* The first record, always in the SHA-1 format; its data says which format
 * the rest of the log is in. */
static fleet_err read_header(struct parse_state *st, struct fleet_reader *r,
			     struct fleet_errctx *ec)
{
	struct fleet_evlog *log = st->log;
	struct fleet_evlog_event *ev;
	fleet_err e = new_event(st, 0, &ev, ec);
	if (e != FLEET_OK)
		return e;
	e = read_sha1_event(r, ev, ec);
	if (e != FLEET_OK)
		return e;
	log->n_events = 1;
	size_t data_off = fr_offset(r) - ev->data_len;
	if (ev->type == FLEET_EV_NO_ACTION && ev->data_len >= SIG_LEN &&
	    memcmp(ev->data, SPECID_SIG, SIG_LEN) == 0) {
		static const uint8_t zero[20];
		if (ev->pcr != 0)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, 0,
						"Spec ID event on PCR %u, not 0", ev->pcr);
		if (memcmp(ev->digests[0].bytes, zero, sizeof(zero)) != 0)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, 8,
						"Spec ID event digest is not zero");
		log->format = FLEET_EVLOG_CRYPTO_AGILE;
		return read_spec_id(log, ev, data_off, ec);
	}
	log->format = FLEET_EVLOG_SHA1;
	log->n_algs = 1;
	log->algs[0].alg = FLEET_ALG_SHA1;
	log->algs[0].size = 20;
	return FLEET_OK;
}

/* Events that set the initial value of PCR 0, and bookkeeping for them. */
static fleet_err check_event(struct parse_state *st, const struct fleet_evlog_event *ev,
			     struct fleet_errctx *ec)
{
	struct fleet_evlog *log = st->log;
	if (ev->type == FLEET_EV_NO_ACTION) {
		if (ev->data_len < SIG_LEN || memcmp(ev->data, LOCALITY_SIG, SIG_LEN) != 0)
			return FLEET_OK;
		if (ev->data_len != SIG_LEN + 1)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"StartupLocality event of %u bytes, not 17",
						ev->data_len);
		if (ev->pcr != 0)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"StartupLocality event on PCR %u, not 0", ev->pcr);
		if (log->startup_locality >= 0)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"second StartupLocality event (first at byte %zu)",
						st->locality_offset);
		if (st->pcr0_extended)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"StartupLocality event after PCR 0 was extended");
		uint8_t loc = ev->data[SIG_LEN];
		/* PFP: TPM2_Startup is sent from locality 0 or 3; 4 marks an
		 * H-CRTM. Any other value is no locality the platform has. */
		if (loc != 0 && loc != 3 && loc != 4)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"StartupLocality %u is not 0, 3 or 4", loc);
		log->startup_locality = loc;
		st->locality_offset = ev->offset;
		return FLEET_OK;
	}
	if (ev->type == FLEET_EV_EFI_HCRTM_EVENT) {
		/* The H-CRTM digest is the first thing extended into PCR 0,
		 * right after _TPM_Hash_End resets it to 0x00..04. */
		if (ev->pcr != 0)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"H-CRTM event on PCR %u, not 0", ev->pcr);
		if (st->pcr0_extended)
			return fleet_errctx_set(ec, FLEET_E_MALFORMED, ev->offset,
						"H-CRTM event after PCR 0 was extended");
		log->hcrtm = true;
		st->hcrtm_offset = ev->offset;
	}
	if (ev->pcr == 0)
		st->pcr0_extended = 1;
	return FLEET_OK;
}

/*
 * Padding: the ACPI log area and some tools hand over a fixed-size buffer,
 * zero-filled after the last event. A zero run to the end of the input that
 * is at least one minimal record long ends the log. A shorter zero tail is
 * a truncated record, not padding, so that cutting a log inside a record
 * never reads as a valid shorter log. The price: a trailing all-zero record
 * (PCR 0, EV_PREBOOT_CERT, no digests, no data) is taken for padding, which
 * loses nothing since such a record extends nothing a bank could replay.
 */
static int is_padding(const struct fleet_reader *r, size_t min_record)
{
	struct fleet_reader t = *r;
	const uint8_t *p;
	size_t n = fr_left(&t);
	if (n < min_record || fr_ptr(&t, n, &p) != FLEET_OK)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

fleet_err fleet_evlog_parse(const uint8_t *buf, size_t len, struct fleet_evlog **out,
			    struct fleet_errctx *ec)
{
	if (!out || (!buf && len > 0))
		return fleet_errctx_msg(ec, FLEET_E_INVALID_ARG, "no log given");
	*out = NULL;
	if (len == 0)
		return fleet_errctx_set(ec, FLEET_E_TRUNCATED, 0, "empty log");
	if (len > FLEET_EVLOG_MAX_SIZE)
		return fleet_errctx_set(ec, FLEET_E_TOO_LARGE, FLEET_EVLOG_MAX_SIZE,
					"log of %zu bytes is over the %u-byte cap", len,
					FLEET_EVLOG_MAX_SIZE);
	struct fleet_evlog *log = calloc(1, sizeof(*log));
	if (!log || !(log->raw = malloc(len))) {
		free(log);
		return fleet_errctx_msg(ec, FLEET_E_NOMEM, "out of memory for the log");
	}
	memcpy(log->raw, buf, len);
	log->raw_len = len;
	log->startup_locality = -1;

	struct parse_state st = {.log = log};
	struct fleet_reader r;
	fr_init(&r, log->raw, len);
	fleet_err e = read_header(&st, &r, ec);
	if (e == FLEET_OK && log->format == FLEET_EVLOG_SHA1)
		e = check_event(&st, &log->events[0], ec);
	size_t min_record =
		log->format == FLEET_EVLOG_CRYPTO_AGILE ? AGILE_EVENT_MIN : SHA1_EVENT_MIN;
	while (e == FLEET_OK && !fr_at_end(&r) && !is_padding(&r, min_record)) {
		struct fleet_evlog_event *ev;
		e = new_event(&st, fr_offset(&r), &ev, ec);
		if (e != FLEET_OK)
			break;
		if (log->format == FLEET_EVLOG_CRYPTO_AGILE)
			e = read_agile_event(log, &r, ev, ec);
		else
			e = read_sha1_event(&r, ev, ec);
		if (e == FLEET_OK)
			e = check_event(&st, ev, ec);
		if (e == FLEET_OK)
			log->n_events++;
	}
	if (e == FLEET_OK && log->hcrtm && log->startup_locality >= 0 &&
	    log->startup_locality != 4)
		e = fleet_errctx_set(ec, FLEET_E_MALFORMED, st.locality_offset,
				     "StartupLocality %d contradicts the H-CRTM event at byte %zu",
				     log->startup_locality, st.hcrtm_offset);
	if (e != FLEET_OK) {
		fleet_evlog_free(log);
		return e;
	}
	*out = log;
	return FLEET_OK;
}
