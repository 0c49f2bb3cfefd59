/* log.c: one line per message on stderr. */
#include "tink-attest/log.h"

#include <stdarg.h>
#include <stdio.h>

void tink_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "tink-attest: %s\n", line);
}
