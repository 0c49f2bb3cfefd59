/*
 * fleet_err.h: the error enum of libfleet.
 *
 * Every libfleet function that can fail returns a fleet_err. The strings from
 * fleet_err_str() are stable: operators grep for them and tests assert them.
 * A refusal of evidence (a signature that does not verify, a digest that does
 * not match) is FLEET_E_VERIFY with a stable reason string beside it; the enum
 * says what kind of failure, the reason says which rule.
 *
 * Parsers of untrusted bytes also fill a struct fleet_errctx so the message can
 * name the byte offset where the input went wrong.
 */
#ifndef FLEET_ERR_H
#define FLEET_ERR_H

#include <stddef.h>

typedef enum fleet_err {
	FLEET_OK = 0,
	FLEET_E_TRUNCATED,   /* the input ended before a field did */
	FLEET_E_MALFORMED,   /* a field holds a value that cannot be */
	FLEET_E_TOO_LARGE,   /* a length or count is beyond its cap */
	FLEET_E_UNSUPPORTED, /* well formed, but of a kind we do not handle */
	FLEET_E_VERIFY,      /* evidence did not verify: see the reason string */
	FLEET_E_NOMEM,
	FLEET_E_CRYPTO,      /* the crypto library failed on valid input */
	FLEET_E_IO,          /* reading or writing a file failed */
	FLEET_E_INVALID_ARG, /* a caller's mistake, not the input's */
	FLEET_E_NOT_FOUND,
	FLEET_E__COUNT
} fleet_err;

/* Stable, lowercase, hyphenated: "truncated", "malformed", ... */
const char *fleet_err_str(fleet_err e);

/*
 * Where and why a parse failed. offset is the byte offset into the outermost
 * input (readers carry their origin, so nested structures report absolute
 * offsets). detail is a short human sentence; it never contains input bytes
 * other than numbers, so it is safe to log.
 */
struct fleet_errctx {
	int has_offset;
	size_t offset;
	char detail[200];
};

/* Set ctx (if not NULL) and return e, so callers can write
 *     return fleet_errctx_set(ec, e, off, "event size %u past end", n); */
fleet_err fleet_errctx_set(struct fleet_errctx *ec, fleet_err e, size_t offset,
			   const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same without an offset. */
fleet_err fleet_errctx_msg(struct fleet_errctx *ec, fleet_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "malformed at byte 1234: event size 99999 past end of log" */
void fleet_errctx_format(const struct fleet_errctx *ec, fleet_err e, char *out, size_t outlen);

#endif
