/*
 * join_tpm_load.c: the files behind the tpm attestor (join.h, "The tpm
 * attestor's files"): its challenge key, a secret every replica shares, and
 * its resolve list, configuration. Each is read through lib/file_read.h's
 * policies, so a key anyone else can read, or a list anyone else can
 * write, stops fleetd with a sentence rather than serve with it.
 */
#include "fleetd/join/join.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/buf.h"
#include "lib/file_read.h"
#include "lib/hex.h"

#define KEY_FILE_MAX 128
#define RESOLVE_FILE_MAX (16u * 1024 * 1024) /* 100,000 lines of ~100 bytes */

fleet_err fleet_join_challenge_key_load(const char *path, uint8_t key[32],
					struct fleet_errctx *ec)
{
	const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_SECRET("the tpm attestor's challenge key", KEY_FILE_MAX);
	struct fleet_buf b;
	fleet_err e;
	fb_init_secret(&b, KEY_FILE_MAX + 1);
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec)))
		goto out;
	/* 32 raw bytes (head -c 32 /dev/urandom), or their 64 hex digits
	 * with one optional newline (what an operator pastes from a vault). */
	size_t n = b.len;
	if (n == 65 && b.data[64] == '\n')
		n = 64;
	if (n == 32)
		memcpy(key, b.data, 32);
	else if (n != 64 || fleet_hex_decode((const char *)b.data, 64, key, 32) != FLEET_OK)
		e = fleet_errctx_msg(ec, FLEET_E_MALFORMED,
				     "the tpm attestor's challenge key %s: not 32 bytes nor their "
				     "64 hex digits (make one: head -c 32 /dev/urandom > %s)",
				     path, path);
out:
	fb_free_secret(&b);
	return e;
}

fleet_err fleet_join_tpm_resolve_load(const char *path, struct fleet_tpm_resolve *out,
				      struct fleet_errctx *ec)
{
	const struct fleet_file_policy policy =
		FLEET_FILE_POLICY_CONFIG("the tpm attestor's resolve list", RESOLVE_FILE_MAX);
	struct fleet_buf b;
	struct fleet_errctx pe;
	fleet_err e;
	fb_init(&b);
	memset(&pe, 0, sizeof(pe));
	if ((e = fleet_file_read(AT_FDCWD, path, &policy, &b, ec)) == FLEET_OK &&
	    (e = fleet_tpm_resolve_parse(b.data, b.len, out, &pe)) != FLEET_OK)
		fleet_errctx_msg(ec, e, "the tpm attestor's resolve list %s: %s", path, pe.detail);
	fb_free(&b);
	return e;
}
