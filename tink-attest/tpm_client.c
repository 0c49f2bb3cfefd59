/*
 * tpm_client.c: the TPM context, primaries, and the EKs with their
 * certificates.
 */
#include "tink-attest/tpm_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

#include "lib/x509_ek.h"
#include "tink-attest/tpm_internal.h"

int tink_tpm_fail(struct tink_tpm *t, TSS2_RC rc, const char *fmt, ...)
{
	char what[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (rc)
		snprintf(t->err, sizeof(t->err), "%s failed: 0x%x (%s)", what, rc,
			 Tss2_RC_Decode(rc));
	else
		snprintf(t->err, sizeof(t->err), "%s", what);
	return -1;
}

int tink_tpm_open(struct tink_tpm *t, const char *tcti)
{
	TSS2_RC rc;
	memset(t, 0, sizeof(*t));
	rc = Tss2_TctiLdr_Initialize(tcti, &t->tcti);
	if (rc != TSS2_RC_SUCCESS)
		return tink_tpm_fail(t, rc, "opening the TPM (TCTI \"%s\")", tcti);
	rc = Esys_Initialize(&t->esys, t->tcti, NULL);
	if (rc != TSS2_RC_SUCCESS) {
		Tss2_TctiLdr_Finalize(&t->tcti);
		return tink_tpm_fail(t, rc, "Esys_Initialize on \"%s\"", tcti);
	}
	/* A first command, so "no TPM behind this TCTI" shows up here. */
	TPMS_CAPABILITY_DATA *cap = NULL;
	rc = Esys_GetCapability(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
				TPM2_CAP_TPM_PROPERTIES, TPM2_PT_MANUFACTURER, 1, NULL, &cap);
	Esys_Free(cap);
	if (rc != TSS2_RC_SUCCESS) {
		tink_tpm_close(t);
		return tink_tpm_fail(t, rc, "TPM2_GetCapability on \"%s\"", tcti);
	}
	return 0;
}

void tink_tpm_close(struct tink_tpm *t)
{
	if (t->esys)
		Esys_Finalize(&t->esys);
	if (t->tcti)
		Tss2_TctiLdr_Finalize(&t->tcti);
}

static const char *key_name(enum tink_key k)
{
	switch (k) {
	case TINK_KEY_EK_RSA:
		return "RSA EK";
	case TINK_KEY_EK_ECC_P256:
		return "ECC P-256 EK";
	case TINK_KEY_EK_ECC_P384:
		return "ECC P-384 EK";
	case TINK_KEY_AK:
		return "AK";
	case TINK_KEY_LDEVID:
		return "LDevID key";
	case TINK_KEY_NODE:
		return "node key";
	}
	return "key";
}

int tink_tpm_load(struct tink_tpm *t, enum tink_key k, ESYS_TR *h, TPM2B_PUBLIC *pub)
{
	TPM2B_PUBLIC tmpl = k == TINK_KEY_LDEVID ? tink_ldevid_template(t->ldevid_gen)
			    : k == TINK_KEY_NODE ? tink_nodekey_template(t->node_gen)
						 : tink_key_template(k);
	TPM2B_SENSITIVE_CREATE sens;
	TPM2B_DATA outside;
	TPML_PCR_SELECTION none;
	TPM2B_PUBLIC *out = NULL;
	memset(&sens, 0, sizeof(sens));
	memset(&outside, 0, sizeof(outside));
	memset(&none, 0, sizeof(none));
	ESYS_TR hier = k == TINK_KEY_LDEVID || k == TINK_KEY_NODE ? ESYS_TR_RH_OWNER
								   : ESYS_TR_RH_ENDORSEMENT;
	*h = ESYS_TR_NONE;
	TSS2_RC rc = Esys_CreatePrimary(t->esys, hier, ESYS_TR_PASSWORD, ESYS_TR_NONE,
					ESYS_TR_NONE, &sens, &tmpl, &outside, &none, h, &out, NULL,
					NULL, NULL);
	if (rc != TSS2_RC_SUCCESS)
		return k == TINK_KEY_NODE
			       ? tink_tpm_fail(t, rc, "TPM2_CreatePrimary (node key generation %u)",
					       t->node_gen)
			       : tink_tpm_fail(t, rc, "TPM2_CreatePrimary (%s)", key_name(k));
	if (pub)
		*pub = *out;
	Esys_Free(out);
	return 0;
}

void tink_tpm_unload(struct tink_tpm *t, ESYS_TR *h)
{
	if (*h != ESYS_TR_NONE && t->esys)
		Esys_FlushContext(t->esys, *h);
	*h = ESYS_TR_NONE;
}

int tink_tpm_public(struct tink_tpm *t, enum tink_key k, TPM2B_PUBLIC *pub)
{
	ESYS_TR h;
	if (tink_tpm_load(t, k, &h, pub) != 0)
		return -1;
	tink_tpm_unload(t, &h);
	return 0;
}

/* The TPM's format-1 response code without its parameter/handle number. */
static TSS2_RC rc_base(TSS2_RC rc)
{
	if ((rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER)
		return rc;
	return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3F)) : rc;
}

/* Read an NV index fully. 1 when it is not defined. */
static int nv_read(struct tink_tpm *t, TPM2_HANDLE index, struct fleet_buf *out)
{
	ESYS_TR nv = ESYS_TR_NONE;
	TPM2B_NV_PUBLIC *pub = NULL;
	TPM2B_NAME *name = NULL;
	TSS2_RC rc = Esys_TR_FromTPMPublic(t->esys, index, ESYS_TR_NONE, ESYS_TR_NONE,
					   ESYS_TR_NONE, &nv);
	if (rc_base(rc) == TPM2_RC_HANDLE)
		return 1;
	if (rc != TSS2_RC_SUCCESS)
		return tink_tpm_fail(t, rc, "looking up NV index 0x%08x", index);
	rc = Esys_NV_ReadPublic(t->esys, nv, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &pub,
				&name);
	if (rc != TSS2_RC_SUCCESS) {
		Esys_TR_Close(t->esys, &nv);
		return tink_tpm_fail(t, rc, "TPM2_NV_ReadPublic (0x%08x)", index);
	}
	size_t size = pub->nvPublic.dataSize;
	Esys_Free(pub);
	Esys_Free(name);
	if (size == 0 || size > FLEET_EK_CERT_MAX) {
		Esys_TR_Close(t->esys, &nv);
		return tink_tpm_fail(t, 0, "NV index 0x%08x holds %zu bytes; an EK certificate "
					   "is 1 to %d",
				     index, size, FLEET_EK_CERT_MAX);
	}
	for (size_t off = 0; off < size;) {
		/* 512 is below every TPM's MAX_NV_BUFFER_SIZE. */
		UINT16 chunk = (UINT16)(size - off > 512 ? 512 : size - off);
		TPM2B_MAX_NV_BUFFER *data = NULL;
		rc = Esys_NV_Read(t->esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
				  chunk, (UINT16)off, &data);
		if (rc != TSS2_RC_SUCCESS) {
			Esys_TR_Close(t->esys, &nv);
			return tink_tpm_fail(t, rc, "TPM2_NV_Read (0x%08x at %zu)", index, off);
		}
		if (data->size != chunk) {
			Esys_Free(data);
			Esys_TR_Close(t->esys, &nv);
			return tink_tpm_fail(t, 0, "TPM2_NV_Read (0x%08x) returned %u bytes, not %u",
					     index, data->size, chunk);
		}
		fb_put(out, data->buffer, data->size);
		off += data->size;
		Esys_Free(data);
	}
	Esys_TR_Close(t->esys, &nv);
	if (fb_err(out) != FLEET_OK)
		return tink_tpm_fail(t, 0, "out of memory reading NV index 0x%08x", index);
	return 0;
}

/* Create the EK from template k and require the certificate's key. */
static int ek_check(struct tink_tpm *t, struct tink_ek *ek, enum tink_key k, TPM2_HANDLE index)
{
	X509 *cert = NULL;
	struct fleet_errctx ec;
	const char *reason = NULL;
	memset(&ec, 0, sizeof(ec));
	if (fleet_ek_cert_load(ek->cert.data, ek->cert.len, &cert, &ec) != FLEET_OK)
		return tink_tpm_fail(t, 0, "the %s certificate in NV 0x%08x does not parse (%s)",
				     key_name(k), index, ec.detail);
	if (tink_tpm_public(t, k, &ek->pub) != 0) {
		X509_free(cert);
		return -1;
	}
	fleet_err e = fleet_ek_cert_matches_public(cert, &ek->pub.publicArea, &reason);
	X509_free(cert);
	if (e != FLEET_OK)
		return tink_tpm_fail(t, 0,
				     "refusing to go on: the %s made from its TCG template is not "
				     "the key in its certificate (NV 0x%08x): %s",
				     key_name(k), index, reason ? reason : fleet_err_str(e));
	ek->key = k;
	ek->present = true;
	return 0;
}

static int read_ek(struct tink_tpm *t, struct tink_ek *ek, enum tink_key k, TPM2_HANDLE index)
{
	int r = nv_read(t, index, &ek->cert);
	if (r != 0)
		return r;
	return ek_check(t, ek, k, index);
}

int tink_tpm_read_ek_rsa(struct tink_tpm *t, struct tink_ek *ek)
{
	memset(ek, 0, sizeof(*ek));
	fb_init_capped(&ek->cert, FLEET_EK_CERT_MAX); /* the TPM's NV: untrusted */
	int r = read_ek(t, ek, TINK_KEY_EK_RSA, TINK_NV_EK_RSA);
	return r < 0 ? -1 : 0;
}

int tink_tpm_read_ek_ecc(struct tink_tpm *t, struct tink_ek *ek)
{
	memset(ek, 0, sizeof(*ek));
	fb_init_capped(&ek->cert, FLEET_EK_CERT_MAX); /* the TPM's NV: untrusted */
	int r = read_ek(t, ek, TINK_KEY_EK_ECC_P256, TINK_NV_EK_ECC_P256);
	if (r == 1)
		r = read_ek(t, ek, TINK_KEY_EK_ECC_P384, TINK_NV_EK_ECC_P384);
	return r < 0 ? -1 : 0;
}

void tink_ek_free(struct tink_ek *ek)
{
	fb_free(&ek->cert);
	memset(ek, 0, sizeof(*ek));
}
