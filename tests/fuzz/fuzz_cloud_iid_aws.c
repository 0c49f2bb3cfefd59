/*
 * fuzz_cloud_iid_aws.c: the cloud-iid attestor's AWS half
 * (policy/attestors/cloud_iid_aws.c): an EC2 instance identity document
 * and its PKCS#7, on arbitrary bytes.
 *
 * Input: [document length:2 big-endian][document][pkcs7 text]. Verified by
 * a provider whose '*' certificate is a fixed test certificate (its key
 * made the seeds and is kept nowhere), at a fixed now one minute after the
 * seeds' pendingTime, accounts unrestricted.
 *
 * What must hold: the answer is a reason of
 * fleet_attestor_cloud_iid_reasons or an identity of 1..255 printable
 * bytes each, and an identity only when the document is byte for byte
 * the PKCS#7's content; OpenSSL's error queue is empty after every call.
 *
 * Seeds (tests/fuzz/corpus/fuzz_cloud_iid_aws/): a document signed as AWS
 * serves it (base64 in lines of 64), the same PKCS#7 beside another
 * document, one carrying its signer certificate, one not base64.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "policy/attestors/cloud_iid_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char cert_pem[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIDGTCCAgGgAwIBAgIUI9sJEB0rHzpbIJJZux5iKdLfYQswDQYJKoZIhvcNAQEL\n"
	"BQAwHDEaMBgGA1UEAwwRZWMyLmFtYXpvbmF3cy5jb20wHhcNMjYxMjAyMDQ1MjI1\n"
	"WhcNMzYxMTI5MDQ1MjI1WjAcMRowGAYDVQQDDBFlYzIuYW1hem9uYXdzLmNvbTCC\n"
	"ASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAK0AkVnziU1a3PU7Sb8mXyWl\n"
	"lsKeuWRtQ+3cdLN2xt7mFXJFCzIwIVCHI59efIVmMjMMYoIohSFMR+cvpOuA7DW2\n"
	"spiRgkhhwTG3mJYjlw1GJ+B7U7+jfzEsk1GOUOwnQS3A6re5arSez9G+UixAciwq\n"
	"tJIa6trr/RlViGfUW0NfmVXW98oh6lPNkL5PPXjenOYN+DTgPi/CjPYnWo9CK/Lq\n"
	"2Kzl+qOO+3GmnLBEQpklmjl8HVQj4qrsu2BS8wx1mpxJc058aG0NtuYXJ9Pt2bAL\n"
	"DyOVzDypYJM4CJhbTWkykHRITd+Ndo0QnlEVzbve0LF55y/0AxXYp8LP2wS6xrMC\n"
	"AwEAAaNTMFEwHQYDVR0OBBYEFBV9ziS4jOlFTg64uyhuY8vcd6dgMB8GA1UdIwQY\n"
	"MBaAFBV9ziS4jOlFTg64uyhuY8vcd6dgMA8GA1UdEwEB/wQFMAMBAf8wDQYJKoZI\n"
	"hvcNAQELBQADggEBAKGo2f5zZczpytSRC9qNlnAysV/SqvHGhxEPPb4LRgEGjEnb\n"
	"RQpEevampE6jEUrywtoiHMRap/Xn9sxt8oKqO6INh6Y9xc4xjtRqI6P80b5J9zR2\n"
	"7x0O0ZladH/CM/DFzgDAd4k7k5JsnDP4w480od4j1KvpJU7Dmyc4igECEGdpWfCJ\n"
	"tf0BFghinFhMA0WOibWzVQ17WYiu/0MXHJH3ZQlxzMPMTezQ93uxQ9Q/IwEvPZpJ\n"
	"m1lhs4GuM0+ShNTtRFDlYndLP5Qk+d7tJms54HfBzDtCptbyXVbVHGa9aW+C2Ioa\n"
	"761zjuVcq+ArZC6RoiCYGqX/eofz8swuzobiCoY=\n"
	"-----END CERTIFICATE-----\n";

#define NOW 1700000060 /* the seeds' pendingTime + 60 s */

static const struct ciid_provider *provider(void)
{
	static struct ciid_provider p;
	static struct ciid_cert c;
	if (!c.cert) {
		BIO *b = BIO_new_mem_buf(cert_pem, (int)sizeof(cert_pem) - 1);
		if (!b || !(c.cert = PEM_read_bio_X509(b, NULL, NULL, NULL)))
			abort();
		BIO_free(b);
		memcpy(c.region, "*", 2);
		memcpy(p.id, "aws", 4);
		p.type = CIID_AWS;
		p.certs = &c;
		p.n_certs = 1;
		p.max_age = 1800;
	}
	return &p;
}

static int printable(const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return n >= 1 && n <= CIID_MAX_ID;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > 40000)
		return 0;
	size_t dl = (size_t)data[0] << 8 | data[1];
	if (dl > size - 2)
		return 0;
	/* Copies of exactly the bytes: a reader past either end is seen. */
	char *doc = malloc(dl ? dl : 1), *p7 = malloc(size - 2 - dl ? size - 2 - dl : 1);
	if (!doc || !p7)
		abort();
	memcpy(doc, data + 2, dl);
	memcpy(p7, data + 2 + dl, size - 2 - dl);
	struct ciid_identity id;
	const char *reason = NULL;
	memset(&id, 0, sizeof(id));
	if (ciid_aws_verify(provider(), doc, dl, p7, size - 2 - dl, NOW, &id, &reason) != FLEET_OK)
		abort();
	if (reason) {
		int ok = 0;
		for (size_t i = 0; fleet_attestor_cloud_iid_reasons[i]; i++)
			ok |= !strcmp(fleet_attestor_cloud_iid_reasons[i], reason);
		if (!ok)
			abort();
	} else if (!printable(id.account) || !printable(id.instance)) {
		abort();
	}
	free(doc);
	free(p7);
	if (ERR_peek_error() != 0)
		abort();
	return 0;
}
