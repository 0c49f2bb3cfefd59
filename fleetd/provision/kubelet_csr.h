/*
 * kubelet_csr.h: which kubelet certificate request fleetd approves.
 *
 * A worker's configuration carries its own bootstrap token; its kubelet
 * uses it once to ask for its first client certificate. fleetd approves
 * that request only when everything in it is what this one machine may
 * ask for (spec "Join Kubernetes"; the rules of Kubernetes' own
 * ValidateKubeletClientCSR, pkg/apis/certificates/helpers.go, narrowed to
 * one node):
 *
 *   C1  spec.signerName is kubernetes.io/kube-apiserver-client-kubelet
 *       ("csr-signer").
 *   C2  spec.username is system:bootstrap:<this token's id>: the API
 *       server sets it from the token the request came with
 *       ("csr-requester").
 *   C3  spec.request is one PEM CERTIFICATE REQUEST that OpenSSL parses
 *       whole and whose self-signature verifies ("csr-malformed",
 *       "csr-signature"); at most FLEET_KUBELET_CSR_MAX bytes; and the
 *       bytes are exactly that request's canonical PEM (one block,
 *       64-column lines, no headers, nothing around it), because
 *       Kubernetes reads them with Go's encoding/pem, which skips a block
 *       it cannot decode and takes the next: with any other spelling the
 *       request fleetd judged need not be the one the signer signs.
 *   C4  its subject is exactly O=system:nodes and CN=system:node:<this
 *       device's name>, nothing else ("csr-subject").
 *   C5  it requests no extension at all: no subject alternative names,
 *       nothing a signer might copy ("csr-extensions").
 *   C6  spec.usages is exactly {digital signature, client auth}, or those
 *       and key encipherment, each once ("csr-usages").
 *   C7  the key is EC P-256 or P-384, or RSA of 2048 to 4096 bits
 *       ("csr-key").
 *
 * "Once per token" is the caller's: the store records the token spent
 * when it approves, in the same transaction (issue 11). Tests:
 * tests/unit/test_kubelet_csr.c; fuzz: tests/fuzz/fuzz_kubelet_csr.c.
 */
#ifndef FLEETD_PROVISION_KUBELET_CSR_H
#define FLEETD_PROVISION_KUBELET_CSR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/fleet_err.h"

#define FLEET_KUBELET_SIGNER "kubernetes.io/kube-apiserver-client-kubelet"
#define FLEET_KUBELET_CSR_MAX (16u * 1024)

struct fleet_kubelet_csr {
	const char *signer_name;  /* spec.signerName */
	const char *username;     /* spec.username */
	const char *const *usages; /* spec.usages */
	size_t n_usages;
	const uint8_t *request; /* spec.request, base64-decoded: PEM */
	size_t request_len;
};

/* C1-C7 for the machine whose bootstrap token id is token_id and whose
 * device name is node_name. FLEET_PASSED, FLEET_REFUSED with a reason
 * above, or FLEET_FAILED (out of memory, the crypto library). */
struct fleet_decision fleet_kubelet_csr_judge(const struct fleet_kubelet_csr *c,
					      const char *token_id, const char *node_name)
	__attribute__((warn_unused_result));

#endif
