#include "lib/fleet_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const err_names[FLEET_E__COUNT] = {
	[FLEET_OK] = "ok",
	[FLEET_E_TRUNCATED] = "truncated",
	[FLEET_E_MALFORMED] = "malformed",
	[FLEET_E_TOO_LARGE] = "too-large",
	[FLEET_E_UNSUPPORTED] = "unsupported",
	[FLEET_E_VERIFY] = "verify-failed",
	[FLEET_E_NOMEM] = "out-of-memory",
	[FLEET_E_CRYPTO] = "crypto-error",
	[FLEET_E_IO] = "io-error",
	[FLEET_E_INVALID_ARG] = "invalid-argument",
	[FLEET_E_NOT_FOUND] = "not-found",
};

const char *fleet_err_str(fleet_err e)
{
	if ((unsigned)e >= FLEET_E__COUNT)
		return "unknown-error";
	return err_names[e];
}

__attribute__((format(printf, 2, 0)))
static void set_detail(struct fleet_errctx *ec, const char *fmt, va_list ap)
{
	vsnprintf(ec->detail, sizeof(ec->detail), fmt, ap);
}

fleet_err fleet_errctx_set(struct fleet_errctx *ec, fleet_err e, size_t offset,
			   const char *fmt, ...)
{
	if (ec) {
		va_list ap;
		ec->has_offset = 1;
		ec->offset = offset;
		va_start(ap, fmt);
		set_detail(ec, fmt, ap);
		va_end(ap);
	}
	return e;
}

fleet_err fleet_errctx_msg(struct fleet_errctx *ec, fleet_err e, const char *fmt, ...)
{
	if (ec) {
		va_list ap;
		ec->has_offset = 0;
		ec->offset = 0;
		va_start(ap, fmt);
		set_detail(ec, fmt, ap);
		va_end(ap);
	}
	return e;
}

void fleet_errctx_format(const struct fleet_errctx *ec, fleet_err e, char *out, size_t outlen)
{
	if (!ec || ec->detail[0] == '\0')
		snprintf(out, outlen, "%s", fleet_err_str(e));
	else if (ec->has_offset)
		snprintf(out, outlen, "%s at byte %zu: %s", fleet_err_str(e), ec->offset, ec->detail);
	else
		snprintf(out, outlen, "%s: %s", fleet_err_str(e), ec->detail);
}
