/*
 * attest_wire_json.h: the field readers and writers behind attest_wire.c,
 * reattest_wire.c and join_wire.c (internal to libfleet; the formats are
 * lib/attest_wire.h, lib/reattest_wire.h and lib/join_wire.h).
 *
 * Every reader takes the field's path for error messages ("ek_rsa.public")
 * and writes only that path and numbers into ec.detail: never bytes of the
 * input, so the detail is safe to log.
 */
#ifndef FLEET_ATTEST_WIRE_JSON_H
#define FLEET_ATTEST_WIRE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/attest_wire.h"

/* Parse body (capped at FLEET_WIRE_MAX_BODY) into a JSON object, check its
 * keys against allowed (NULL-terminated) and "v" == 1. */
fleet_err wj_load(const uint8_t *body, size_t len, const char *const *allowed, json_t **out,
		  struct fleet_errctx *ec);
/* wj_load after the whole message's own cap (FLEET_E_TOO_LARGE, naming
 * what): the join service's messages are each capped below the outer one.
 * *root is NULL on a refusal. */
fleet_err wj_load_capped(const uint8_t *msg, size_t len, size_t cap, const char *what,
			 const char *const *keys, json_t **root, struct fleet_errctx *ec);
/* Every key of obj is in allowed (NULL-terminated). */
fleet_err wj_keys(const json_t *obj, const char *const *allowed, const char *path,
		  struct fleet_errctx *ec);
/* The member key of obj, or NULL with an error when it is missing. */
json_t *wj_need(const json_t *obj, const char *key, const char *path, fleet_err *e,
		struct fleet_errctx *ec);

/* The readers below take the member (NULL when it is absent: then the
 * error is "<path>: missing"). */

/* A string of at most max bytes (UTF-8, no control characters) into dst
 * (max + 1 bytes). min is the least length accepted. */
fleet_err wj_string(const json_t *v, const char *path, size_t min, size_t max, char *dst,
		    struct fleet_errctx *ec);
/* base64url of 1..max bytes. */
fleet_err wj_bytes(const json_t *v, const char *path, size_t max, struct fleet_wire_bytes *out,
		   struct fleet_errctx *ec);
/* base64url of exactly n bytes into dst. */
fleet_err wj_fixed(const json_t *v, const char *path, uint8_t *dst, size_t n,
		   struct fleet_errctx *ec);
/* One of the status names in allowed (their enum values in vals). */
fleet_err wj_status(const json_t *obj, const char *const *names, const enum fleet_wire_status *vals,
		    size_t n, enum fleet_wire_status *out, struct fleet_errctx *ec);

/* True when s (n bytes of valid UTF-8) holds no C0/C1 control and no DEL. */
bool wj_text_ok(const char *s, size_t n);

/* An integer min..max (a JSON integer: 1.0 and "1" are not). */
fleet_err wj_int(const json_t *v, const char *path, json_int_t min, json_int_t max,
		 json_int_t *out, struct fleet_errctx *ec);
/* "aa:bb:cc:dd:ee:ff", lowercase (FLEET_WIRE_MAC_LEN): one spelling per
 * address, so two messages about one machine compare equal byte for byte. */
bool wj_mac_ok(const char *s);

/* Byte fields a message owns: set, non-empty and at most max; freed (wiped
 * first, OPENSSL_cleanse) and emptied. */
bool wj_bytes_ok(const struct fleet_wire_bytes *b, size_t max);
void wj_bytes_free(struct fleet_wire_bytes *b);

/* A decoder's step: on failure jump to its fail label with e set. */
#define WJ_TRY(call)                      \
	do {                              \
		if ((e = (call)) != FLEET_OK) \
			goto fail;        \
	} while (0)

/* Writers: each returns 0 on success; -1 when out of memory or the value
 * cannot be written (bad UTF-8). They build into obj. */
/* A new message object holding "v": 1 (NULL when out of memory). */
json_t *wj_start(void);
int wj_put_string(json_t *obj, const char *key, const char *s);
int wj_put_bytes(json_t *obj, const char *key, const uint8_t *p, size_t n);
/* The base64url string of 1 or more bytes (NULL when n is 0 or out of memory). */
json_t *wj_bytes_value(const uint8_t *p, size_t n);
/* Finish: dump obj compactly and append to out; obj is released. */
fleet_err wj_finish(json_t *obj, struct fleet_buf *out);
/* An encoder's end: rc is the writers' results or'd together; non-zero
 * (a value that could not be written) releases obj and is
 * FLEET_E_INVALID_ARG with out unchanged, else wj_finish. */
fleet_err wj_end(json_t *obj, int rc, struct fleet_buf *out);

/* "2026-11-30T06:00:00Z" <-> time_t (UTC, whole seconds only). */
fleet_err wj_time_format(time_t t, char out[21]);
fleet_err wj_time_parse(const char *s, time_t *out);

/* lib/join_wire.c's chain reader, which lib/join_evidence.c shares: a JSON
 * array of 1..FLEET_JOIN_MAX_CHAIN base64url DER certificates. */
fleet_err fleet_join_chain_read(const json_t *v, struct fleet_wire_bytes *chain, size_t *n,
				struct fleet_errctx *ec);

#endif
