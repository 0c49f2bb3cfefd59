/*
 * nodes_file.h: the nodes-file inventory, fleetd's embedded default for a
 * site without NetBox (`inventory: {kind: file}`). The file is the same YAML
 * terraform/netbox/folly reads; docs/nodes-file.md describes it.
 *
 * The file is the operator's declaration and the binding's author, so:
 *   - it must be a regular file owned by root and writable by nobody else,
 *     in a directory likewise (ancestors may be world-writable only with the
 *     sticky bit, as /tmp is). These are checked with fstat on the very
 *     descriptors that are read, on open and again on every reload.
 *   - fleetd never writes it. write_ek_hashes and set_status answer OK and
 *     keep the values in memory for this process only (fleetd's store is
 *     where proven EK hashes live; they authorize nothing here either).
 *   - binding_change() names FLEET_NODES_FILE_AUTHOR as the author and the
 *     file's mtime as the time; the configured binding_author must be that
 *     constant.
 *
 * The file is read again whenever its inode, size or mtime changes, so an
 * edit takes effect without a restart. A file that no longer passes the
 * ownership rules answers UNAVAILABLE; one that no longer parses answers
 * INVALID; running out of memory reading it, NOMEM. None is an answer about
 * a device, and the last good copy is not used.
 */
#ifndef FLEETD_NODES_FILE_H
#define FLEETD_NODES_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/yaml_strict.h"
#include "fleetd/inventory/inventory.h"
#include "lib/fleet_err.h"

/* The binding author binding_change() reports for every device. */
#define FLEET_NODES_FILE_AUTHOR "nodes-file"

#define FLEET_NODES_FILE_MAX_SIZE (1024u * 1024) /* bytes of YAML */
#define FLEET_NODES_FILE_MAX_NODES 4096
#define FLEET_NODES_FILE_VERSION 1

/* Parse the bytes of a nodes file. *out is malloc'd (n entries, possibly
 * 0); each entry's id is derived from its serial (stable across edits,
 * see docs/nodes-file.md). On failure *out is NULL and ec (may be NULL)
 * says why, with the line and column (lib/yaml_strict.h). */
fleet_err fleet_nodes_file_parse(const uint8_t *buf, size_t len, struct fleet_inv_device **out,
				 size_t *n, struct fleet_errctx *ec);

/* The id a device with this serial has (case-insensitive; never 0). */
long fleet_nodes_file_id(const char *serial);

/* Open path (absolute): check ownership and modes, load, and return the
 * inventory. Refuses with a sentence in ec (may be NULL): FLEET_E_UNSAFE when the file
 * or a directory above it breaks the root-only rule (or the file is a link
 * or not a regular file), FLEET_E_NOT_FOUND when it is not there, FLEET_E_IO
 * when it cannot be opened or read, FLEET_E_TOO_LARGE, FLEET_E_MALFORMED
 * (with the line) when it does not parse. fleetd does not start on any. */
fleet_err fleet_nodes_file_open(const char *path, struct fleet_inventory **out,
				struct fleet_errctx *ec);

#endif
