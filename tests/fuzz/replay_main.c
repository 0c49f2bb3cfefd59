/*
 * replay_main.c: runs a fuzz target over every file of its seed corpus, for
 * builds without libFuzzer. Fails when the corpus is missing or empty, so a
 * target cannot silently test nothing.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/file_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int ran = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "replay: cannot open corpus %s\n", argv[i]);
			return 1;
		}
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			struct fleet_buf b;
			fb_init(&b);
			if (fleet_file_read_data(path, 64u << 20, &b, NULL) != FLEET_OK) {
				fprintf(stderr, "replay: cannot read %s\n", path);
				closedir(d);
				return 1;
			}
			LLVMFuzzerTestOneInput(b.data ? b.data : (const uint8_t *)"", b.len);
			fb_free(&b);
			ran++;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", ran);
	return ran > 0 ? 0 : 1;
}
