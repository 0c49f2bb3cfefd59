/*
 * fwsim.h: a firmware simulator for tests and demos.
 *
 * From a declarative list of boot events it extends the PCRs of a real TPM
 * (swtpm) and writes the crypto-agile event log of the same boot, so a quote
 * from that TPM and the log agree the way they do on a real machine. It can
 * also replay a real firmware log's digests into a TPM.
 *
 * The events file (YAML, one document; see docs/fwsim.md):
 *
 *   events:
 *     - scrtm_version: "fleetd-sim firmware 1.0"
 *         PCR 0, EV_S_CRTM_VERSION; data is the string as UCS-2LE with its
 *         NUL, as EDK2 writes it; digest H(data).
 *     - firmware_blob: {pcr: 0, base: 0xffc00000, length: 0x400000,
 *                       content: "bios region"}
 *         EV_EFI_PLATFORM_FIRMWARE_BLOB; data is UEFI_PLATFORM_FIRMWARE_BLOB
 *         (base, length: u64 LE); digest H(content).
 *     - efi_variable: {pcr: 7, name: SecureBoot, guid: global, data: "01"}
 *         EV_EFI_VARIABLE_DRIVER_CONFIG; data is UEFI_VARIABLE_DATA; digest
 *         H(data). guid: global | image_security_db | a UUID string.
 *     - efi_variable_boot: {pcr: 1, name: BootOrder, data: "0000"}
 *         EV_EFI_VARIABLE_BOOT; guid optional (default global); digest
 *         H(UEFI_VARIABLE_DATA).
 *     - authority: {pcr: 7, name: db, guid: image_security_db, data: "..."}
 *         EV_EFI_VARIABLE_AUTHORITY; data UEFI_VARIABLE_DATA holding the
 *         EFI_SIGNATURE_DATA that verified an image; digest H(data).
 *     - separator: {pcrs: [0, 1, 2, 3, 4, 5, 6, 7]}
 *         EV_SEPARATOR with data 00000000 on each PCR, in the given order.
 *     - efi_action: {pcr: 4, text: "Calling EFI Application from Boot Option"}
 *         EV_EFI_ACTION; data the ASCII text without a NUL; digest H(text).
 *     - boot_application: {pcr: 4, path: "\\EFI\\BOOT\\BOOTX64.EFI",
 *                          image: "shim image bytes", base: 0x7e000000}
 *         EV_EFI_BOOT_SERVICES_APPLICATION; data is UEFI_IMAGE_LOAD_EVENT
 *         (base, length of image, link-time address 0, a device path of one
 *         file path node and the end node); digest H(image). base optional.
 *
 * Hex data is an even number of hex digits, "" for none. Unknown keys,
 * missing keys, duplicate keys, aliases, tags and out-of-range values are
 * refused with their line; sizes are capped (FWSIM_MAX_*).
 */
#ifndef FLEET_FWSIM_H
#define FLEET_FWSIM_H

#include <stddef.h>
#include <stdint.h>

#include <tss2/tss2_esys.h>

#include "lib/buf.h"
#include "lib/fleet_err.h"

#define FWSIM_MAX_FILE (1024u * 1024) /* events file bytes */
#define FWSIM_MAX_EVENTS 1024         /* entries under events: */
#define FWSIM_MAX_DATA (64u * 1024)   /* one data / content / image, bytes */
#define FWSIM_MAX_NAME 127            /* EFI variable names, characters */
#define FWSIM_MAX_TEXT 1024           /* version, action text, path */

enum fwsim_kind {
	FWSIM_SCRTM_VERSION,
	FWSIM_FIRMWARE_BLOB,
	FWSIM_EFI_VARIABLE,
	FWSIM_EFI_VARIABLE_BOOT,
	FWSIM_AUTHORITY,
	FWSIM_SEPARATOR,
	FWSIM_EFI_ACTION,
	FWSIM_BOOT_APPLICATION,
};

struct fwsim_event {
	enum fwsim_kind kind;
	unsigned line;       /* in the events file, 1-based */
	uint32_t pcr;        /* all but separator */
	uint32_t n_pcrs;     /* separator: pcrs[0..n_pcrs) in file order */
	uint8_t pcrs[24];
	uint64_t base;       /* firmware_blob, boot_application */
	uint64_t length;     /* firmware_blob */
	uint8_t guid[16];    /* variables, authority: as stored (LE fields) */
	char name[FWSIM_MAX_NAME + 1];
	char *text;          /* scrtm_version, efi_action, boot_application path */
	uint8_t *data;       /* variable data, blob content, image bytes */
	size_t data_len;
};

struct fwsim_events {
	size_t n;
	struct fwsim_event *ev;
};

/* Parse an events file. On error *out is NULL and err holds
 * "PATH:LINE: message". */
fleet_err fwsim_load(const char *path, struct fwsim_events **out, char *err, size_t errlen);
/* The same from memory; name is used in messages. */
fleet_err fwsim_parse(const char *name, const uint8_t *yaml, size_t len,
		      struct fwsim_events **out, char *err, size_t errlen);
void fwsim_free(struct fwsim_events *ev);

/*
 * The TPM's active PCR banks (TPM2_CAP_PCRS, banks with a non-empty
 * selection), in the TPM's order. FLEET_E_UNSUPPORTED when a bank's
 * algorithm is one fleetd cannot hash.
 */
fleet_err fwsim_tpm_banks(ESYS_CONTEXT *esys, uint16_t *algs, size_t max, size_t *n,
			  char *err, size_t errlen);

/*
 * Boot: write the log with exactly the TPM's active banks and extend each
 * event's PCR with the digests written, in log order. The TPM should be
 * fresh (just started); the log is appended to log_out. err may be NULL.
 */
fleet_err fwsim_apply(ESYS_CONTEXT *esys, const struct fwsim_events *ev,
		      struct fleet_buf *log_out, char *err, size_t errlen);

/*
 * Replay a real log: extend every event but EV_NO_ACTION with its digests
 * in every bank the TPM has active. Refused: a log that does not parse, a
 * TPM bank the log lacks (in its table or in some event), and a log whose
 * PCR 0 does not start at zero (StartupLocality 3/4, H-CRTM), since plain
 * extends from locality 0 cannot reproduce it.
 */
fleet_err fwsim_replay_log(ESYS_CONTEXT *esys, const uint8_t *log, size_t len, char *err,
			   size_t errlen);

#endif
