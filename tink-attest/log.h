/* log.h: tink-attest's messages go to stderr, one line each, prefixed. */
#ifndef TINK_LOG_H
#define TINK_LOG_H

void tink_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
