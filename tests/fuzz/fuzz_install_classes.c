/*
 * fuzz_install_classes.c: classes.json and class-inputs.json
 * (fleetd/provision/install_classes.h). The input is both files, split at
 * the first NUL byte (none: the second file is empty). Whatever the bytes,
 * the parser returns, and what it accepts keeps K1-K4: every class that
 * installs has a digest of the pinned form, an image reference, inputs
 * with an https endpoint; role none has none of them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleetd/provision/install_classes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t a = nul ? (size_t)(nul - data) : size;
	const uint8_t *second = nul ? nul + 1 : data + size;
	size_t b = nul ? size - a - 1 : 0;
	static struct fleet_install_classes c;
	struct fleet_errctx ec;
	memset(&ec, 0, sizeof(ec));
	fleet_err e = fleet_install_classes_parse(data, a, second, b, &c, &ec);
	if (e == FLEET_OK) {
		for (size_t i = 0; i < c.n; i++) {
			const struct fleet_install_class *k = &c.v[i];
			char ref[FLEET_INSTALL_IMAGE_MAX + 80];
			if (fleet_install_class_installs(k)) {
				if (strlen(k->digest) != 71 || strncmp(k->digest, "sha256:", 7) ||
				    strncmp(k->endpoint, "https://", 8) || !k->cluster_name[0] ||
				    fleet_install_class_image_ref(k, ref, sizeof(ref)) != FLEET_OK ||
				    strchr(k->image, '@'))
					abort();
			} else if (k->digest[0] || k->image[0] || k->endpoint[0] || k->n_patches) {
				abort();
			}
			if (fleet_install_class_find(&c, k->name) != k)
				abort();
		}
	} else if (ec.detail[0] == '\0') {
		abort(); /* every refusal says why */
	}
	fleet_install_classes_free(&c);
	return 0;
}
