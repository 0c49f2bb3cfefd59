/*
 * seal_tool.c: seal stdin to a join service's public key, for
 * tests/e2e/join_e2e.sh (a sealing whose plaintext is no join token: the
 * service's token-malformed). Usage: seal_tool SPKI.der PURPOSE < bytes;
 * prints the sealing in base64url.
 */
#include <stdio.h>
#include <string.h>

#include "lib/attest_wire.h"
#include "lib/buf.h"
#include "lib/token_seal.h"

int main(int argc, char **argv)
{
	uint8_t spki[512], pt[4096];
	struct fleet_buf sealed, text;
	if (argc != 3)
		return 2;
	FILE *f = fopen(argv[1], "rb");
	size_t n = f ? fread(spki, 1, sizeof(spki), f) : 0;
	if (f)
		fclose(f);
	size_t m = fread(pt, 1, sizeof(pt), stdin);
	fb_init(&sealed);
	fb_init(&text);
	if (!n || !m || fleet_seal(spki, n, argv[2], pt, m, &sealed) != FLEET_OK ||
	    fleet_b64url_encode(sealed.data, sealed.len, &text) != FLEET_OK ||
	    fwrite(text.data, 1, text.len, stdout) != text.len) {
		fprintf(stderr, "seal_tool: cannot seal\n");
		return 1;
	}
	putchar('\n');
	fb_free(&sealed);
	fb_free(&text);
	return 0;
}
