/*
 * profile.h: boot-policy profiles, one YAML file per machine class.
 *
 * A profile says which PCRs the class's quote covers and what the event log
 * behind them may hold: PCR 0 per BIOS version, the SecureBoot state, the
 * Secure Boot authorities, the boot applications, and pinned PCR values.
 * docs/policy.md is the operator's description of the schema.
 *
 * Profiles are configuration, but they are parsed as untrusted input all the
 * same: an operator's typo must become a refusal naming its line, never a
 * profile that quietly checks less than it says. So unknown keys, duplicate
 * keys, YAML aliases, explicit tags, wrong digest lengths and lists beyond
 * their caps are all refused.
 */
#ifndef FLEET_POLICY_PROFILE_H
#define FLEET_POLICY_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"
#include "lib/tpm_alg.h"

/* Caps. A real profile is a few KiB with a handful of digests per list. */
#define FLEET_PROFILE_MAX_SIZE (64u * 1024)  /* bytes of YAML */
#define FLEET_PROFILE_MAX_DIGESTS 256        /* entries in one digest list */
/* renew_required_authorities: fewer than half of FLEET_VERDICT_MAX_REASONS
 * (32), so a verdict that overflows always holds a real failure besides
 * them and a renewal's missing authorities can never fail a check
 * (fleetd/reattest/reattest.h RA10; found in review). */
#define FLEET_PROFILE_MAX_RENEW_AUTHORITIES 16
#define FLEET_PROFILE_MAX_BIOS 64            /* entries in pcr0_by_bios */
#define FLEET_PROFILE_MAX_NAME 64            /* class name, BIOS version */

/* The only schema version this code reads. */
#define FLEET_PROFILE_VERSION 1

enum fleet_secure_boot {
	FLEET_SECURE_BOOT_ANY = 0, /* "any": PCR 7's SecureBoot is not checked */
	FLEET_SECURE_BOOT_ON,      /* true */
	FLEET_SECURE_BOOT_OFF,     /* false */
};

/* A list of digests, all of the profile bank's size. present distinguishes
 * an absent key (no check) from an empty list (nothing allowed). */
struct fleet_digest_list {
	bool present;
	size_t n;
	uint8_t (*d)[FLEET_DIGEST_MAX]; /* n entries; the first `size` bytes used */
};

struct fleet_profile_bios {
	char version[FLEET_PROFILE_MAX_NAME + 1];
	uint8_t pcr0[FLEET_DIGEST_MAX];
};

struct fleet_profile {
	char class_name[FLEET_PROFILE_MAX_NAME + 1];
	uint16_t bank;       /* TPM_ALG_ID of quote.bank */
	uint16_t size;       /* its digest size */
	uint32_t quote_mask; /* bit i: the quote covers PCR i */

	bool has_pcr0_by_bios;
	size_t n_bios;
	struct fleet_profile_bios *bios;

	enum fleet_secure_boot secure_boot;
	struct fleet_digest_list allowed_authorities;
	struct fleet_digest_list renew_required_authorities;
	struct fleet_digest_list boot_applications;

	uint32_t pinned_mask; /* bit i: pcrs pins PCR i to pinned[i] */
	uint8_t pinned[FLEET_PCR_COUNT][FLEET_DIGEST_MAX];
};

/* Parse a profile from memory. On error *out is NULL and ec (may be NULL;
 * lib/fleet_err.h) says where: ec->line and ec->column 1-based (0 when the
 * error has no place, such as an unreadable file), ec->detail a sentence,
 * which may quote a key name from the file with control bytes escaped.
 * FLEET_E_MALFORMED for bad YAML or a schema violation, FLEET_E_TOO_LARGE
 * for input or lists beyond their caps. */
fleet_err fleet_profile_parse(const uint8_t *buf, size_t len, struct fleet_profile **out,
			      struct fleet_errctx *ec);
/* Read (as configuration, lib/file_read.h: no symlink, owned by root or us,
 * writable by nobody else, at most FLEET_PROFILE_MAX_SIZE) and parse a file.
 * A file the reader refuses is the reader's code, reason and errno, the
 * sentence after "cannot read ". */
fleet_err fleet_profile_load(const char *path, struct fleet_profile **out,
			     struct fleet_errctx *ec);
void fleet_profile_free(struct fleet_profile *p);

/* The PCR 0 digest for a BIOS version (exact, case-sensitive match), or
 * NULL when the profile has none for it. */
const uint8_t *fleet_profile_pcr0_for_bios(const struct fleet_profile *p, const char *version);
/* True when list holds digest (the profile's digest size compared). */
bool fleet_digest_list_has(const struct fleet_profile *p, const struct fleet_digest_list *list,
			   const uint8_t *digest);

/* The profile's bank and quoted PCRs in tpm2-tools syntax ("sha256:0,1,7"),
 * what a challenge tells the machine to quote. FLEET_E_INVALID_ARG for a
 * profile that quotes nothing, FLEET_E_TOO_LARGE past cap. */
fleet_err fleet_profile_selection(const struct fleet_profile *p, char *out, size_t cap);

#endif
