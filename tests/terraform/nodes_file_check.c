/*
 * nodes_file_check.c: runs fleetd's own nodes-file parser
 * (fleet_nodes_file_parse, fleetd/inventory/nodes_file_parse.c) on a file, for
 * tests/terraform/test_terraform_module.py. `fleetd --check-config` does not
 * read the nodes file (it is opened at start, with the store), so the test
 * asks the parser directly.
 *
 *   nodes_file_check PATH
 *
 * Prints one line per node (name, serial, class, status) and exits 0 when
 * the parser accepts the file; prints the parser's error with its line and
 * exits 1 when it refuses it; 2 on a bad command line or an unreadable file.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fleetd/inventory/nodes_file.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: nodes_file_check PATH\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	size_t cap = FLEET_NODES_FILE_MAX_SIZE + 1, len;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		fclose(f);
		return 2;
	}
	len = fread(buf, 1, cap, f);
	fclose(f);
	struct fleet_inv_device *d = NULL;
	size_t n = 0;
	struct fleet_errctx ec = {0};
	fleet_err e = fleet_nodes_file_parse(buf, len, &d, &n, &ec);
	free(buf);
	if (e) {
		char text[sizeof(ec.detail) + sizeof(ec.ossl) + 80];
		fprintf(stderr, "%s:%u: refused: %s\n", argv[1], ec.line,
			fleet_errctx_text(&ec, text, sizeof(text)));
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s\t%s\t%s\t%s\n", d[i].name, d[i].serial, d[i].class_name, d[i].status);
	printf("%s: %zu nodes accepted\n", argv[1], n);
	free(d);
	return 0;
}
