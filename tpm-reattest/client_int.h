/* client_int.h: what run.c and renew.c share, not the interface. */
#ifndef TPM_REATTEST_CLIENT_INT_H
#define TPM_REATTEST_CLIENT_INT_H

#include <stddef.h>

/* Format into msg[msglen] and return code: one line for the caller's result. */
int tpm_reattest_say(char *msg, size_t msglen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
