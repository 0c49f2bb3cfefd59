/*
 * install_classes.h: what each machine class installs, and with what.
 *
 * Two files, both written by people or CI and read at start:
 *
 *   clusters/folly/fleet/classes.json  class -> role, Talos version, the
 *       installer image and the digest that pins it. The image workflow
 *       (.github/workflows/talos-images.yml) writes the digest after each
 *       build; until it has, a class has none.
 *   clusters/folly/fleet/class-inputs.json  class -> the inputs talosctl
 *       renders its configuration from: cluster name, endpoint, Kubernetes
 *       version, config patches.
 *
 *     classes.json                          class-inputs.json
 *     {"version": 1,                        {"version": 1,
 *      "classes": {                          "classes": {
 *        "worker": {                           "worker": {
 *          "role": "worker",                     "cluster_name": "folly",
 *          "talos_version": "v1.13.9",           "endpoint": "https://folly.lan:6443",
 *          "image": "ghcr.io/x/installer",       "kubernetes_version": "1.32.4",
 *          "digest": "sha256:<64 hex>"}}}        "patches": [{...}, ...]}}}
 *
 * Rules (each a refusal naming the class and the key; tests in
 * tests/unit/test_install_classes.c):
 *   K1  A class that installs (role worker or controlplane) has a digest,
 *       "sha256:" and 64 lowercase hex digits. fleetd refuses to start
 *       while one has none: the spec's "fleetd refuses to start while an
 *       installing class has no digest". A class of role "none" installs
 *       nothing (admission only) and has no image.
 *   K2  image is a repository reference without a tag or a digest
 *       (registry/path, lowercase, [a-z0-9._/-:] with a port only in the
 *       registry): the digest alone says which image, so nothing can move
 *       it (a tag can be pushed again).
 *   K3  talos_version is vMAJOR.MINOR.PATCH; kubernetes_version
 *       MAJOR.MINOR.PATCH (talosctl's --kubernetes-version form).
 *   K4  Every class that installs has inputs; inputs for a class that
 *       classes.json does not list are refused (a typo would otherwise
 *       leave a class rendered with nothing). endpoint is an https URL of
 *       a host and optional port, no path, query or user; cluster_name
 *       (like a class name) starts with a letter or digit, so it can never
 *       reach talosctl's command line as a flag.
 *   K5  Unknown keys are refused at every level; duplicate keys are
 *       refused (jansson's JSON_REJECT_DUPLICATES); each file at most
 *       FLEET_INSTALL_FILE_MAX bytes; at most FLEET_INSTALL_MAX_CLASSES
 *       classes, FLEET_INSTALL_MAX_PATCHES patches a class, each patch a
 *       JSON object of at most FLEET_INSTALL_PATCH_MAX bytes encoded.
 *   K6  fleet_install_classes_check_profiles: every class fleetd.yaml maps
 *       to a profile and that installs is in classes.json with a digest,
 *       so no admitted machine can reach a class without an installer.
 */
#ifndef FLEETD_PROVISION_INSTALL_CLASSES_H
#define FLEETD_PROVISION_INSTALL_CLASSES_H

#include <stddef.h>

#include "lib/fleet_err.h"

#define FLEET_INSTALL_FILE_MAX (256u * 1024)
#define FLEET_INSTALL_MAX_CLASSES 64
#define FLEET_INSTALL_MAX_PATCHES 8
#define FLEET_INSTALL_PATCH_MAX (16u * 1024)
#define FLEET_INSTALL_NAME_MAX 63
#define FLEET_INSTALL_IMAGE_MAX 200

enum fleet_install_role {
	FLEET_ROLE_NONE = 1, /* "none": admitted, never installed */
	FLEET_ROLE_WORKER,
	FLEET_ROLE_CONTROLPLANE,
};

struct fleet_install_class {
	char name[FLEET_INSTALL_NAME_MAX + 1];
	enum fleet_install_role role;
	char talos_version[32];               /* "v1.13.9"; "" for role none */
	char image[FLEET_INSTALL_IMAGE_MAX + 1]; /* "ghcr.io/x/installer"; "" for role none */
	char digest[72];                      /* "sha256:<64 hex>"; "" for role none */
	/* From class-inputs.json; empty for role none. */
	char cluster_name[64];
	char endpoint[256];
	char kubernetes_version[32];
	size_t n_patches;
	char *patches[FLEET_INSTALL_MAX_PATCHES]; /* compact JSON objects, malloc'd */
};

struct fleet_install_classes {
	size_t n;
	struct fleet_install_class v[FLEET_INSTALL_MAX_CLASSES];
};

/* Parse both files' bytes into out (zeroed first; free with
 * fleet_install_classes_free, also after a failure). FLEET_OK, or
 * FLEET_E_MALFORMED / FLEET_E_TOO_LARGE / FLEET_E_NOMEM with ec->detail
 * naming the file, the class and the key, and ec->reason one of
 * "no-digest", "bad-digest", "bad-image", "bad-version", "bad-endpoint",
 * "no-inputs", "unknown-class", "unknown-key", "malformed". */
fleet_err fleet_install_classes_parse(const void *classes, size_t classes_len, const void *inputs,
				      size_t inputs_len, struct fleet_install_classes *out,
				      struct fleet_errctx *ec);

/* Read both files (lib/file_read.h, the CONFIG policy: owned by root or
 * fleetd, writable by nobody else, at most FLEET_INSTALL_FILE_MAX) and
 * parse them; the reader's refusals pass on with the file's path. */
fleet_err fleet_install_classes_load(const char *classes_path, const char *inputs_path,
				     struct fleet_install_classes *out, struct fleet_errctx *ec);

/* K6: names[n] are the classes fleetd.yaml maps to profiles. Each must be
 * in c; FLEET_E_NOT_FOUND (reason "unknown-class") names the first that is
 * not. */
fleet_err fleet_install_classes_check_profiles(const struct fleet_install_classes *c,
					       const char *const *names, size_t n,
					       struct fleet_errctx *ec);

const struct fleet_install_class *fleet_install_class_find(const struct fleet_install_classes *c,
							   const char *name);

/* Whether the class installs (role worker or controlplane). */
int fleet_install_class_installs(const struct fleet_install_class *k);

/* "image@digest", what talosctl's --install-image gets. FLEET_E_INVALID_ARG
 * for a class that installs nothing, FLEET_E_TOO_LARGE when out is short. */
fleet_err fleet_install_class_image_ref(const struct fleet_install_class *k, char *out,
					size_t outlen);

/* "none", "worker", "controlplane". */
const char *fleet_install_role_str(enum fleet_install_role r);

void fleet_install_classes_free(struct fleet_install_classes *c);

#endif
