/*
 * fleet_err.c: the strings of the one error space, and its context.
 */
#include "lib/fleet_err.h"

#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const code_names[FLEET_CODE__COUNT] = {
	[FLEET_CODE_OK] = "ok",
	[FLEET_CODE_TRUNCATED] = "truncated",
	[FLEET_CODE_MALFORMED] = "malformed",
	[FLEET_CODE_TOO_LARGE] = "too-large",
	[FLEET_CODE_UNSUPPORTED] = "unsupported",
	[FLEET_CODE_VERIFY] = "verify-failed",
	[FLEET_CODE_NOMEM] = "out-of-memory",
	[FLEET_CODE_CRYPTO] = "crypto-error",
	[FLEET_CODE_IO] = "io-error",
	[FLEET_CODE_INVALID_ARG] = "invalid-argument",
	[FLEET_CODE_NOT_FOUND] = "not-found",
	[FLEET_CODE_CONFLICT] = "conflict",
	[FLEET_CODE_EK_MISMATCH] = "ek-mismatch",
	[FLEET_CODE_FULL] = "full",
	[FLEET_CODE_BUSY] = "busy",
	[FLEET_CODE_READONLY] = "read-only",
	[FLEET_CODE_UNSAFE] = "unsafe-permissions",
	[FLEET_CODE_SCHEMA] = "schema-version",
	[FLEET_CODE_CORRUPT] = "corrupt",
	[FLEET_CODE_AMBIGUOUS] = "ambiguous",
	[FLEET_CODE_UNAVAILABLE] = "unavailable",
	[FLEET_CODE_STATE] = "bad-state",
	[FLEET_CODE_EXISTS] = "already-exists",
	[FLEET_CODE_AUTH] = "unauthorized",
};

static const char *const layer_names[FLEET_LAYER__COUNT] = {
	[FLEET_LAYER_NONE] = "",
	[FLEET_LAYER_LIB] = "lib",
	[FLEET_LAYER_STORE] = "store",
	[FLEET_LAYER_INVENTORY] = "inventory",
	[FLEET_LAYER_SPIRE] = "spire",
	[FLEET_LAYER_KUBE] = "kube",
};

int fleet_err_valid(fleet_err e)
{
	if (e == FLEET_OK)
		return 1;
	/* Bits above the layer field are reserved; a layer-less failure, or a
	 * code of 0 inside a layer, is nothing this tree returns. */
	if (e & ~(FLEET_ERR_LAYER_MASK | FLEET_ERR_CODE_MASK))
		return 0;
	unsigned layer = fleet_err_layer(e), code = fleet_err_code(e);
	return layer > FLEET_LAYER_NONE && layer < FLEET_LAYER__COUNT && code > FLEET_CODE_OK &&
	       code < FLEET_CODE__COUNT;
}

const char *fleet_err_str(fleet_err e)
{
	if (!fleet_err_valid(e))
		return "unknown-error";
	return code_names[fleet_err_code(e)];
}

const char *fleet_err_layer_str(fleet_err e)
{
	if (!fleet_err_valid(e))
		return "unknown";
	return layer_names[fleet_err_layer(e)];
}

int fleet_err_blames_input(fleet_err e)
{
	switch (fleet_err_code(e)) {
	case FLEET_CODE_TRUNCATED:
	case FLEET_CODE_MALFORMED:
	case FLEET_CODE_TOO_LARGE:
	case FLEET_CODE_UNSUPPORTED:
	case FLEET_CODE_VERIFY:
	case FLEET_CODE_EK_MISMATCH:
		return e != FLEET_OK && fleet_err_valid(e);
	default:
		return 0;
	}
}

struct fleet_decision fleet_decide(fleet_err e, const char *reason)
{
	if (e == FLEET_OK && reason == NULL)
		return (struct fleet_decision){.outcome = FLEET_PASSED, .err = FLEET_OK};
	if (e == FLEET_OK) /* a check named a reason and then said yes: never a pass */
		return (struct fleet_decision){
			.outcome = FLEET_REFUSED, .reason = reason, .err = FLEET_E_VERIFY};
	if (fleet_err_blames_input(e))
		return (struct fleet_decision){.outcome = FLEET_REFUSED,
					       .reason = reason ? reason : fleet_err_str(e),
					       .err = e};
	return (struct fleet_decision){.outcome = FLEET_FAILED, .err = e};
}

__attribute__((format(printf, 5, 0)))
static fleet_err set(struct fleet_errctx *ec, fleet_err e, int has_offset, size_t offset,
		     const char *fmt, va_list ap)
{
	ec->err = e;
	ec->reason = NULL;
	ec->line = ec->column = 0;
	ec->has_offset = has_offset;
	ec->offset = has_offset ? offset : 0;
	ec->sys_errno = 0;
	ec->ossl[0] = '\0';
	vsnprintf(ec->detail, sizeof(ec->detail), fmt, ap);
	return e;
}

fleet_err fleet_errctx_set(struct fleet_errctx *ec, fleet_err e, size_t offset,
			   const char *fmt, ...)
{
	if (ec) {
		va_list ap;
		va_start(ap, fmt);
		set(ec, e, 1, offset, fmt, ap);
		va_end(ap);
	}
	return e;
}

fleet_err fleet_errctx_msg(struct fleet_errctx *ec, fleet_err e, const char *fmt, ...)
{
	if (ec) {
		va_list ap;
		va_start(ap, fmt);
		set(ec, e, 0, 0, fmt, ap);
		va_end(ap);
	}
	return e;
}

fleet_err fleet_errctx_refuse(struct fleet_errctx *ec, fleet_err e, const char *reason,
			      const char *fmt, ...)
{
	if (ec) {
		va_list ap;
		va_start(ap, fmt);
		set(ec, e, 0, 0, fmt, ap);
		va_end(ap);
		ec->reason = reason;
	}
	return e;
}

fleet_err fleet_errctx_errno(struct fleet_errctx *ec, fleet_err e, int errnum,
			     const char *fmt, ...)
{
	if (ec) {
		va_list ap;
		va_start(ap, fmt);
		set(ec, e, 0, 0, fmt, ap);
		va_end(ap);
		ec->sys_errno = errnum;
	}
	return e;
}

fleet_err fleet_errctx_wrap(struct fleet_errctx *ec, fleet_err e, const char *before,
			    const char *after)
{
	if (!ec)
		return e;
	ec->err = e;
	char was[sizeof(ec->detail)];
	memcpy(was, ec->detail, sizeof(was));
	was[sizeof(was) - 1] = '\0';
	snprintf(ec->detail, sizeof(ec->detail), "%s%s%s", before ? before : "", was,
		 after ? after : "");
	return e;
}

void fleet_openssl_drain(char *out, size_t outlen)
{
	const char *func = NULL, *data = NULL;
	int flags = 0;
	unsigned long first = ERR_get_error_all(NULL, NULL, &func, &data, &flags);
	unsigned more = 0;
	while (ERR_get_error() != 0)
		more++;
	if (!out || outlen == 0)
		return;
	out[0] = '\0';
	if (first == 0)
		return;
	char reason[120];
	/* ERR_error_string_n: "error:<code>:<lib>::<reason>"; the library
	 * and reason strings are OpenSSL's own, never input bytes. The data
	 * string can hold input (a file name, a field), so it is left out. */
	ERR_error_string_n(first, reason, sizeof(reason));
	if (more)
		snprintf(out, outlen, "%s (+%u more)", reason, more);
	else
		snprintf(out, outlen, "%s", reason);
	(void)flags;
	(void)data;
	(void)func;
}

fleet_err fleet_errctx_openssl(struct fleet_errctx *ec, fleet_err e, const char *fmt, ...)
{
	if (!ec) {
		fleet_openssl_drain(NULL, 0);
		return e;
	}
	va_list ap;
	va_start(ap, fmt);
	set(ec, e, 0, 0, fmt, ap);
	va_end(ap);
	fleet_openssl_drain(ec->ossl, sizeof(ec->ossl));
	return e;
}

const char *fleet_errctx_text(const struct fleet_errctx *ec, char *out, size_t outlen)
{
	if (!out || outlen == 0)
		return "";
	out[0] = '\0';
	if (!ec)
		return out;
	size_t n = (size_t)snprintf(out, outlen, "%s", ec->detail);
	if (ec->sys_errno && n < outlen)
		n += (size_t)snprintf(out + n, outlen - n, "%s%s", n ? ": " : "",
				      strerror(ec->sys_errno));
	if (ec->ossl[0] && n < outlen)
		snprintf(out + n, outlen - n, "%s(openssl: %s)", n ? " " : "", ec->ossl);
	return out;
}

void fleet_errctx_format(const struct fleet_errctx *ec, fleet_err e, char *out, size_t outlen)
{
	char text[sizeof(ec->detail) + sizeof(ec->ossl) + 80];
	fleet_errctx_text(ec, text, sizeof(text));
	if (text[0] == '\0')
		snprintf(out, outlen, "%s", fleet_err_str(e));
	else if (ec->has_offset)
		snprintf(out, outlen, "%s at byte %zu: %s", fleet_err_str(e), ec->offset, text);
	else if (ec->line && ec->column)
		snprintf(out, outlen, "%s at line %u, column %u: %s", fleet_err_str(e), ec->line,
			 ec->column, text);
	else if (ec->line)
		snprintf(out, outlen, "%s at line %u: %s", fleet_err_str(e), ec->line, text);
	else
		snprintf(out, outlen, "%s: %s", fleet_err_str(e), text);
}
