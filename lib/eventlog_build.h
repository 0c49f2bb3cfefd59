/*
 * eventlog_build.h: a writer of TCG PC Client event logs.
 *
 * Tests build synthetic logs with it, and the firmware simulator uses it to
 * write the log of a boot while it extends a real (swtpm) TPM with the same
 * digests. It writes the crypto-agile format (a Spec ID Event03 header, then
 * TCG_PCR_EVENT2 records); fleet_evlog_sha1_append writes the legacy SHA-1
 * format one record at a time.
 *
 * The builder only writes well-formed logs: every digest algorithm must be
 * in its Spec ID table, with that table's size, at most once per event, and
 * only EV_NO_ACTION may name a PCR above 23. Tests that need malformed logs
 * build a valid one and then damage known bytes, so that each malformed case
 * differs from a valid log in exactly the field under test.
 */
#ifndef FLEET_EVENTLOG_BUILD_H
#define FLEET_EVENTLOG_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/eventlog.h"
#include "lib/fleet_err.h"

struct fleet_evlog_builder;

/* Byte sizes of the fixed parts, for callers that compute offsets. */
#define FLEET_EVLOG_SHA1_HEADER_SIZE 32 /* pcr, type, digest[20], size */
#define FLEET_EVLOG_SPECID_SIGNATURE "Spec ID Event03"

/*
 * A builder whose Spec ID table lists algs in that order (1..8 distinct
 * algorithms fleetd knows). The Spec ID Event03 header event is written now.
 */
fleet_err fleet_evlog_builder_new(const uint16_t *algs, size_t n_algs,
				  struct fleet_evlog_builder **out);
void fleet_evlog_builder_free(struct fleet_evlog_builder *b);

/* An event whose digest in every bank is H(data): separators, EFI variables,
 * EFI actions. */
fleet_err fleet_evlog_builder_add(struct fleet_evlog_builder *b, uint32_t pcr, uint32_t type,
				  const void *data, size_t len);
/* An event whose digests cover other bytes than its data: boot applications
 * and firmware blobs, where the data is a descriptor of the measured image. */
fleet_err fleet_evlog_builder_add_measured(struct fleet_evlog_builder *b, uint32_t pcr,
					   uint32_t type, const void *data, size_t len,
					   const void *measured, size_t measured_len);
/* An event with explicit digests, in the given order; fewer than the table's
 * banks is allowed (a log that lacks a bank in this event). */
fleet_err fleet_evlog_builder_add_digests(struct fleet_evlog_builder *b, uint32_t pcr,
					  uint32_t type, const void *data, size_t len,
					  const struct fleet_evlog_digest *d, size_t n);
/* EV_NO_ACTION on PCR 0, zero digests, data "StartupLocality\0" + locality. */
fleet_err fleet_evlog_builder_add_startup_locality(struct fleet_evlog_builder *b,
						   uint8_t locality);

/*
 * The digests of the last event added, one per bank written, so a simulator
 * can extend a TPM with exactly what the log says. *d stays valid until the
 * next add or free. FLEET_E_NOT_FOUND before any event was added.
 */
fleet_err fleet_evlog_builder_last_digests(const struct fleet_evlog_builder *b,
					   const struct fleet_evlog_digest **d, size_t *n);

/* Append the whole log to out. The builder stays usable (more events may be
 * added and finish called again). */
fleet_err fleet_evlog_builder_finish(const struct fleet_evlog_builder *b, struct fleet_buf *out);

/* One legacy SHA-1 format record (TCG_PCClientPCREvent). digest NULL means
 * SHA-1(data). */
fleet_err fleet_evlog_sha1_append(struct fleet_buf *out, uint32_t pcr, uint32_t type,
				  const uint8_t *digest, const void *data, size_t len);

/*
 * UEFI_VARIABLE_DATA: VariableName GUID (as stored: little-endian fields),
 * the name as UTF-16LE without its NUL, and the data. The name is taken as
 * ASCII; a byte above 0x7F is FLEET_E_INVALID_ARG rather than a silent
 * mis-encoding, and names over 127 characters are refused as the parser
 * would refuse them.
 */
fleet_err fleet_evlog_efi_variable_data(const uint8_t guid[16], const char *name,
					const void *data, size_t len, struct fleet_buf *out);
/* UEFI_IMAGE_LOAD_EVENT: image address, length, link-time address, then the
 * device path bytes (build them with fleet_evlog_devpath_node). */
fleet_err fleet_evlog_efi_image_load_data(uint64_t image_base, uint64_t image_len,
					  uint64_t link_time_address, const void *devpath,
					  size_t devpath_len, struct fleet_buf *out);
/* One UEFI device path node (type, subtype, 16-bit length, data); the end
 * node is type 0x7F, subtype 0xFF, no data. */
fleet_err fleet_evlog_devpath_node(struct fleet_buf *out, uint8_t type, uint8_t subtype,
				   const void *data, size_t len);

#endif
