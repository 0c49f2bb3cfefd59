/*
 * eventlog.h: TCG PC Client firmware event logs (TCG PC Client Platform
 * Firmware Profile, section 10): parse, replay to PCR values, decode events.
 *
 * Two formats:
 *  - crypto-agile: a SHA-1-format header event (EV_NO_ACTION, PCR 0) whose
 *    data is the "Spec ID Event03" structure listing each bank's algorithm
 *    and digest size, then TCG_PCR_EVENT2 records. Digest sizes come from
 *    that table, never from a built-in one: an algorithm not in the table is
 *    malformed input.
 *  - sha1 (legacy): TCG_PCClientPCREvent records with one SHA-1 digest each.
 *
 * The whole input is untrusted. Parsing goes through lib/reader.h only, and
 * every error names the byte offset where the log went wrong.
 *
 * What a quote makes of a log: replay proves the digests (the TPM extended
 * them, in this order, into these PCRs) and nothing else. An event's type is
 * never bound; its data is bound only as far as the digest in the quoted
 * bank is a hash of it, which fleet_evlog_event_bound() reports per event
 * and bank as ALL (every byte), VARIABLE_DATA (an EV_EFI_VARIABLE_BOOT
 * measured over its VariableData alone: GUID and name NOT bound) or NONE.
 * The rule for every reader that judges a machine (policy/evaluate.h): a
 * field the quoted digest does not bind is never read. Unbound data is at
 * most "an event extended into PCR n"; fleet_evlog_efi_variable_bound()
 * gives an EFI variable's GUID and name only when they are bound.
 */
#ifndef FLEET_EVENTLOG_H
#define FLEET_EVENTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"
#include "lib/tpm_alg.h"

/* Caps. Real logs run 2 KB to 100 KB; a log of 16 MiB is an attack. */
#define FLEET_EVLOG_MAX_SIZE (16u * 1024 * 1024)
#define FLEET_EVLOG_MAX_EVENTS 65536
#define FLEET_EVLOG_MAX_BANKS 8 /* entries in the Spec ID algorithm table */

/* Event types (PC Client PFP, Table 9/10). */
#define FLEET_EV_PREBOOT_CERT 0x00000000
#define FLEET_EV_POST_CODE 0x00000001
#define FLEET_EV_NO_ACTION 0x00000003
#define FLEET_EV_SEPARATOR 0x00000004
#define FLEET_EV_ACTION 0x00000005
#define FLEET_EV_EVENT_TAG 0x00000006
#define FLEET_EV_S_CRTM_CONTENTS 0x00000007
#define FLEET_EV_S_CRTM_VERSION 0x00000008
#define FLEET_EV_CPU_MICROCODE 0x00000009
#define FLEET_EV_PLATFORM_CONFIG_FLAGS 0x0000000A
#define FLEET_EV_TABLE_OF_DEVICES 0x0000000B
#define FLEET_EV_COMPACT_HASH 0x0000000C
#define FLEET_EV_IPL 0x0000000D
#define FLEET_EV_IPL_PARTITION_DATA 0x0000000E
#define FLEET_EV_NONHOST_CODE 0x0000000F
#define FLEET_EV_NONHOST_CONFIG 0x00000010
#define FLEET_EV_NONHOST_INFO 0x00000011
#define FLEET_EV_OMIT_BOOT_DEVICE_EVENTS 0x00000012
#define FLEET_EV_EFI_EVENT_BASE 0x80000000
#define FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG 0x80000001
#define FLEET_EV_EFI_VARIABLE_BOOT 0x80000002
#define FLEET_EV_EFI_BOOT_SERVICES_APPLICATION 0x80000003
#define FLEET_EV_EFI_BOOT_SERVICES_DRIVER 0x80000004
#define FLEET_EV_EFI_RUNTIME_SERVICES_DRIVER 0x80000005
#define FLEET_EV_EFI_GPT_EVENT 0x80000006
#define FLEET_EV_EFI_ACTION 0x80000007
#define FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB 0x80000008
#define FLEET_EV_EFI_HANDOFF_TABLES 0x80000009
#define FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB2 0x8000000A
#define FLEET_EV_EFI_HANDOFF_TABLES2 0x8000000B
#define FLEET_EV_EFI_VARIABLE_BOOT2 0x8000000C
#define FLEET_EV_EFI_HCRTM_EVENT 0x80000010
#define FLEET_EV_EFI_VARIABLE_AUTHORITY 0x800000E0
#define FLEET_EV_EFI_SPDM_FIRMWARE_BLOB 0x800000E1
#define FLEET_EV_EFI_SPDM_FIRMWARE_CONFIG 0x800000E2

enum fleet_evlog_format {
	FLEET_EVLOG_SHA1 = 1,         /* printed "sha1" */
	FLEET_EVLOG_CRYPTO_AGILE = 2, /* printed "crypto-agile" */
};

struct fleet_evlog_alg {
	uint16_t alg;  /* TPM_ALG_ID */
	uint16_t size; /* digest size from the Spec ID table */
};

struct fleet_evlog_digest {
	uint16_t alg;
	uint16_t size;
	uint8_t bytes[FLEET_DIGEST_MAX];
};

struct fleet_evlog_event {
	size_t offset;   /* byte offset of this event's header in the log */
	/* 0..23; larger is refused at parse time, except on EV_NO_ACTION,
	 * which extends nothing (Windows logs its WBCL trailer on PCR
	 * 0xFFFFFFFF). Check the type before indexing by pcr. */
	uint32_t pcr;
	uint32_t type;
	uint32_t n_digests;
	struct fleet_evlog_digest digests[FLEET_EVLOG_MAX_BANKS];
	const uint8_t *data; /* points into the log's own copy of the input */
	uint32_t data_len;
};

struct fleet_evlog {
	enum fleet_evlog_format format;
	uint8_t *raw; /* the log's private copy of the input bytes */
	size_t raw_len;
	uint32_t n_algs; /* crypto-agile: the Spec ID table; sha1: {sha1, 20} */
	struct fleet_evlog_alg algs[FLEET_EVLOG_MAX_BANKS];
	/* Every record in file order, the header event (index 0) included, so
	 * `fleetctl eventlog show` can list it. */
	size_t n_events;
	struct fleet_evlog_event *events;
	/* From an EV_NO_ACTION "StartupLocality" event on PCR 0, or -1. Locality
	 * 3 or 4 starts PCR 0 at 0x00..03 / 0x00..04 instead of zeros. */
	int startup_locality;
	/* True when the log has an EV_EFI_HCRTM_EVENT (on PCR 0, before
	 * anything else extends it): PCR 0 then starts at 0x00..04, the value
	 * _TPM_Hash_End resets it to. EV_NO_ACTION "SP800-155 Event" records
	 * describe reference measurements and change no initial value. */
	bool hcrtm;
};

/*
 * Parse a whole log. The input is copied; the caller may free buf afterwards.
 * Trailing zero bytes after the last event (the kernel's securityfs file and
 * some firmware tables are padded) end the log; any other trailing garbage is
 * malformed. On error *out is NULL and ec names the offset.
 */
fleet_err fleet_evlog_parse(const uint8_t *buf, size_t len, struct fleet_evlog **out,
			    struct fleet_errctx *ec);
void fleet_evlog_free(struct fleet_evlog *log);

const char *fleet_evlog_format_name(enum fleet_evlog_format f);

/* PCR values per bank after replay. */
struct fleet_pcr_bank {
	uint16_t alg;
	uint16_t size;
	/* False when some event that extends a PCR lacks this bank's digest: the
	 * bank's values would be a guess, so none are given. */
	bool replayable;
	uint32_t extended; /* bit i: some event extended PCR i */
	uint8_t pcr[FLEET_PCR_COUNT][FLEET_DIGEST_MAX];
};

struct fleet_pcr_replay {
	uint32_t n_banks; /* one per algorithm in the log's table, in its order */
	struct fleet_pcr_bank banks[FLEET_EVLOG_MAX_BANKS];
};

/*
 * Replay: every event except EV_NO_ACTION extends its PCR in every bank
 * (PCR := H(PCR || digest)), starting from zeros, or for PCR 0 from the
 * locality / H-CRTM initial value. A bank whose algorithm OpenSSL cannot
 * compute is marked not replayable rather than failing the whole replay.
 */
fleet_err fleet_evlog_replay(const struct fleet_evlog *log, struct fleet_pcr_replay *out,
			     struct fleet_errctx *ec);
/* The value PCR `pcr` holds when nothing has extended it since
 * TPM2_Startup, for this log's startup: zeros; PCR 0 with the startup
 * locality (3) or H-CRTM (4) in its last byte; PCRs 17..22 all ones. Replay
 * starts from it, and a policy compares an unlogged quoted PCR against it.
 * out holds size bytes. */
void fleet_evlog_pcr_initial(const struct fleet_evlog *log, unsigned pcr, size_t size,
			     uint8_t *out);

/* Replay one bank only (n_banks is 0 or 1): what a verifier needs when the
 * quote covers one bank, at a third of the cost of replaying a log's three.
 * A log without that bank gives FLEET_OK and n_banks 0. */
fleet_err fleet_evlog_replay_one(const struct fleet_evlog *log, uint16_t alg,
				 struct fleet_pcr_replay *out, struct fleet_errctx *ec);
/* The bank for alg, or NULL. */
const struct fleet_pcr_bank *fleet_pcr_replay_bank(const struct fleet_pcr_replay *r,
						   uint16_t alg);

/*
 * The replay as JSON, the shape of the shared *.expected.json files:
 *   {"format":"crypto-agile"|"sha1","pcrs":{"<bank>":{"<pcr>":"<hex>"}}}
 * Banks by name (sha1, sha256, sha384, sha512, sm3_256), only replayable
 * ones, in the log's table order; PCRs in numeric order, only those some
 * event extended (a replayable bank with none is an empty object); digests
 * in lowercase hex. A bank fleetd has no name for is left out.
 * fleet_evlog_replay_json returns a new jansson reference (json_decref it);
 * fleet_evlog_replay_json_str a compact string to free(). NULL on no memory.
 */
struct json_t;
struct json_t *fleet_evlog_replay_json(const struct fleet_pcr_replay *r,
				       enum fleet_evlog_format format);
char *fleet_evlog_replay_json_str(const struct fleet_pcr_replay *r,
				  enum fleet_evlog_format format);

/*
 * Which part of an event's data the digest in bank alg binds. Replay proves
 * the digests are what the TPM saw; it proves nothing about the data beside
 * them. A log can pair the digest of "SecureBoot = 0" with data saying 1, or
 * wrap a digest of VariableData alone in a record with any GUID and name,
 * and still replay to the quoted PCRs.
 *
 *   FLEET_EVLOG_BOUND_ALL: the digest is H(event data); every byte is bound
 *     (the type still is not).
 *   FLEET_EVLOG_BOUND_VARIABLE_DATA: EV_EFI_VARIABLE_BOOT only, digest =
 *     H(VariableData) (firmware measures the EFI_LOAD_OPTION alone; both
 *     forms occur in the shared real logs). The VariableData bytes are
 *     bound; the VariableName GUID, the UnicodeName and the length fields
 *     are NOT. EV_EFI_VARIABLE_BOOT2 exists so that the whole record is
 *     measured: for it, as for every other type, a VariableData-only digest
 *     is NONE.
 *   FLEET_EVLOG_BOUND_NONE: nothing: the digest differs, the event has no
 *     digest in alg, or fleetd cannot compute alg.
 *
 * Computed on demand for the bank asked (the quoted one), so parsing and
 * replay do not hash every bank of every event.
 */
enum fleet_evlog_bound {
	FLEET_EVLOG_BOUND_NONE = 0,
	FLEET_EVLOG_BOUND_VARIABLE_DATA = 1,
	FLEET_EVLOG_BOUND_ALL = 2,
};
enum fleet_evlog_bound fleet_evlog_event_bound(const struct fleet_evlog_event *ev, uint16_t alg);
/* "all", "variable-data", "none". */
const char *fleet_evlog_bound_name(enum fleet_evlog_bound b);

/*
 * Whether an event's data is what its digests measured, in any part
 * (fleet_evlog_event_bound is not NONE): for tools that flag a lying log.
 * A policy must ask fleet_evlog_event_bound (or fleet_evlog_efi_variable_bound)
 * instead, since an OK here for EV_EFI_VARIABLE_BOOT may bind no name.
 *
 * FLEET_OK: every digest in a bank fleetd can compute binds the data (all of
 * it, or for EV_EFI_VARIABLE_BOOT its VariableData). FLEET_E_VERIFY: some
 * digest differs. FLEET_E_UNSUPPORTED: no digest could be checked. Only types
 * for which fleet_evlog_type_binds_data is true are meant to match; boot
 * applications, firmware blobs and the like measure other bytes.
 */
fleet_err fleet_evlog_event_data_matches(const struct fleet_evlog_event *ev);
/* The same for one bank: what a verifier needs when the quote binds only
 * that bank (the others are the machine's word whatever they hold).
 * FLEET_E_NOT_FOUND when the event has no digest in alg. */
fleet_err fleet_evlog_event_data_matches_bank(const struct fleet_evlog_event *ev, uint16_t alg);
/* True for types whose digest the PFP defines as the hash of the event
 * data: EV_SEPARATOR, EV_ACTION, EV_S_CRTM_VERSION, EV_EFI_ACTION,
 * EV_EFI_GPT_EVENT, EV_EFI_VARIABLE_DRIVER_CONFIG, EV_EFI_VARIABLE_BOOT,
 * EV_EFI_VARIABLE_BOOT2. */
bool fleet_evlog_type_binds_data(uint32_t type);

/* "EV_EFI_VARIABLE_AUTHORITY"; "EV_UNKNOWN" for types not in the table. */
const char *fleet_evlog_type_name(uint32_t type);

/* The digest of this event in bank alg, or NULL. */
const struct fleet_evlog_digest *fleet_evlog_event_digest(const struct fleet_evlog_event *ev,
							  uint16_t alg);

/*
 * UEFI_VARIABLE_DATA (EV_EFI_VARIABLE_*): VariableName GUID, the UTF-16LE
 * name (converted to UTF-8, non-ASCII replaced by '?'), and the data bytes.
 * FLEET_E_MALFORMED when the event's data does not hold one.
 */
struct fleet_efi_var {
	uint8_t guid[16]; /* as stored (little-endian fields) */
	char name[128];   /* names longer than 127 are refused as malformed */
	const uint8_t *data;
	uint64_t data_len;
};
fleet_err fleet_evlog_efi_variable(const struct fleet_evlog_event *ev, struct fleet_efi_var *out);
/*
 * The same, holding only what the digest in bank alg binds (*bound says
 * which): ALL fills GUID, name and data; VARIABLE_DATA fills the data and
 * leaves the GUID all zeros and the name "" (they are not bound, so they are
 * not given). FLEET_E_VERIFY (bound NONE, *out all zeros) when the digest
 * binds nothing; FLEET_E_MALFORMED when the data is no UEFI_VARIABLE_DATA.
 * This is the reader a policy uses.
 */
fleet_err fleet_evlog_efi_variable_bound(const struct fleet_evlog_event *ev, uint16_t alg,
					 struct fleet_efi_var *out, enum fleet_evlog_bound *bound);
/* "8be4df61-93ca-11d2-aa0d-00e098032b8c"; out holds 37 bytes. */
void fleet_efi_guid_str(const uint8_t guid[16], char out[37]);

/*
 * One line of human-readable decoded data for `fleetctl eventlog show`
 * (EFI variable GUID and name, EFI action text, separator value, boot
 * application device path, firmware blob base/length, S-CRTM version).
 * Control characters are escaped. Writes "" when the type has no decoder.
 */
void fleet_evlog_describe(const struct fleet_evlog_event *ev, char *out, size_t outlen);

#endif
