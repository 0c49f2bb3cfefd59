/*
 * sanitize.h: the one rule for text that reaches a log, a terminal or an
 * error message, and the one check for input that must be printable ASCII.
 *
 * Display: fleet_sanitize(). A byte passes only as part of a complete,
 * valid, displayable UTF-8 character; a backslash becomes "\\" (so text
 * that holds "\x41" cannot pass as one of our escapes); every other byte
 * becomes "\xNN" (two uppercase hex digits). Escaped are: control
 * characters (C0, DEL, the C1 range U+0080..U+009F), every byte of invalid
 * UTF-8 (stray continuation, overlong form, surrogate, beyond U+10FFFF,
 * truncated sequence, 0xC0, 0xC1, 0xF5..0xFF), and the characters that
 * break a line or act unseen when displayed (U+2028, U+2029 and every
 * format character, general category Cf: the bidi controls such as U+202E,
 * the zero-width characters, U+00AD, U+FEFF, the tag characters, ...;
 * sanitize.c lists them). The output is therefore valid UTF-8 with no
 * control character in it.
 *
 * A character counts as one, whether it passed or was escaped. At most
 * max_chars of them are shown (SIZE_MAX: no cap but cap); if more of the
 * input is left, or out is too small to hold more, "[+N]" follows, N the
 * number of input bytes not shown. The output never ends in half an escape
 * or half a UTF-8 sequence; when not even the mark fits, out is "". out is
 * always NUL-terminated when cap > 0 and nothing is written past out[cap-1].
 *
 * Validation: fleet_ascii_printable(). Whether every byte is printable
 * ASCII (0x21..0x7E), and space or bytes above 0x7F too when flags say so.
 * A site's own extra rules (no '#', no '}', the C1 range in UTF-8, ...) stay
 * at the site.
 */
#ifndef FLEET_LIB_SANITIZE_H
#define FLEET_LIB_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h> /* SIZE_MAX, the max_chars of no cap */

/* The longest truncation mark: "[+" 20 digits (SIZE_MAX) "]". */
#define FLEET_SANITIZE_MARK_MAX 23
/* An out of this many bytes always holds max_chars characters (each at most
 * 4 bytes: a UTF-8 character or one "\xNN"), the mark and the NUL. */
#define FLEET_SANITIZE_BUF(max_chars) (4 * (size_t)(max_chars) + FLEET_SANITIZE_MARK_MAX + 1)

/* len bytes at p (which may hold NULs, escaped as \x00; p may be NULL when
 * len is 0) into out, as above. Returns out, so the call can sit inside an
 * argument list. */
const char *fleet_sanitize(const void *p, size_t len, char *out, size_t cap, size_t max_chars);

/* The same rule with backslashes passed as they are, for text made of
 * values that already went through fleet_sanitize (a log line, a message):
 * doubling their escapes would only garble them. */
const char *fleet_sanitize_keep_backslash(const void *p, size_t len, char *out, size_t cap,
					  size_t max_chars);

/* Flags of fleet_ascii_printable. */
#define FLEET_ASCII_SPACE 0x1u /* ' ' (0x20) passes */
#define FLEET_ASCII_8BIT 0x2u  /* 0x80..0xFF pass unjudged (UTF-8 text whose
				  control characters are what is refused) */

/* Whether each of the len bytes at p is 0x21..0x7E, or allowed by flags:
 * never a C0 control, never DEL. len 0 is true (emptiness is the caller's
 * rule). */
bool fleet_ascii_printable(const void *p, size_t len, unsigned flags);

/* An RFC 1123 label as Kubernetes names objects (DNS-1123): [a-z0-9-],
 * 1..63, alphanumeric at both ends. */
bool fleet_dns_label(const char *s);

#endif
