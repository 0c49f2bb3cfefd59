/*
 * eventlog_build.c: writes TCG PC Client event logs (see eventlog_build.h).
 *
 * The events are kept as one growing byte buffer; the header is written by
 * fleet_evlog_builder_new so that finish is a plain copy.
 */
#include "lib/eventlog_build.h"

#include <stdlib.h>
#include <string.h>

struct fleet_evlog_builder {
	size_t n_algs;
	struct fleet_evlog_alg algs[FLEET_EVLOG_MAX_BANKS];
	struct fleet_buf log;
	size_t n_last;
	struct fleet_evlog_digest last[FLEET_EVLOG_MAX_BANKS];
	int have_last;
};

static const uint8_t zero_digest[20];

fleet_err fleet_evlog_builder_new(const uint16_t *algs, size_t n_algs,
				  struct fleet_evlog_builder **out)
{
	if (!out)
		return FLEET_E_INVALID_ARG;
	*out = NULL;
	if (!algs || n_algs == 0 || n_algs > FLEET_EVLOG_MAX_BANKS)
		return FLEET_E_INVALID_ARG;
	struct fleet_evlog_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return FLEET_E_NOMEM;
	fb_init(&b->log);
	b->log.max = FLEET_EVLOG_MAX_SIZE;
	for (size_t i = 0; i < n_algs; i++) {
		size_t sz = fleet_hash_alg_size(algs[i]);
		for (size_t j = 0; j < i; j++)
			if (algs[j] == algs[i])
				sz = 0; /* a duplicate bank is as wrong as an unknown one */
		if (sz == 0) {
			fleet_evlog_builder_free(b);
			return FLEET_E_INVALID_ARG;
		}
		b->algs[i].alg = algs[i];
		b->algs[i].size = (uint16_t)sz;
	}
	b->n_algs = n_algs;

	/* TCG_EfiSpecIDEventStruct (PFP 10.4.5.1). */
	struct fleet_buf spec;
	fb_init(&spec);
	fb_put(&spec, FLEET_EVLOG_SPECID_SIGNATURE, sizeof(FLEET_EVLOG_SPECID_SIGNATURE));
	fb_put_u32le(&spec, 0); /* platformClass: client */
	fb_put_u8(&spec, 0);    /* specVersionMinor */
	fb_put_u8(&spec, 2);    /* specVersionMajor */
	fb_put_u8(&spec, 2);    /* specErrata */
	fb_put_u8(&spec, 2);    /* uintnSize: 64-bit UINTN */
	fb_put_u32le(&spec, (uint32_t)n_algs);
	for (size_t i = 0; i < n_algs; i++) {
		fb_put_u16le(&spec, b->algs[i].alg);
		fb_put_u16le(&spec, b->algs[i].size);
	}
	fb_put_u8(&spec, 0); /* vendorInfoSize */
	fleet_err e = fb_err(&spec);
	if (e == FLEET_OK)
		e = fleet_evlog_sha1_append(&b->log, 0, FLEET_EV_NO_ACTION, zero_digest, spec.data,
					    spec.len);
	fb_free(&spec);
	if (e != FLEET_OK) {
		fleet_evlog_builder_free(b);
		return e;
	}
	*out = b;
	return FLEET_OK;
}

void fleet_evlog_builder_free(struct fleet_evlog_builder *b)
{
	if (!b)
		return;
	fb_free(&b->log);
	free(b);
}

static const struct fleet_evlog_alg *table_alg(const struct fleet_evlog_builder *b, uint16_t alg)
{
	for (size_t i = 0; i < b->n_algs; i++)
		if (b->algs[i].alg == alg)
			return &b->algs[i];
	return NULL;
}

fleet_err fleet_evlog_builder_add_digests(struct fleet_evlog_builder *b, uint32_t pcr,
					  uint32_t type, const void *data, size_t len,
					  const struct fleet_evlog_digest *d, size_t n)
{
	if (!b || (len > 0 && !data) || (n > 0 && !d) || n > b->n_algs || len > UINT32_MAX)
		return FLEET_E_INVALID_ARG;
	if (pcr >= FLEET_PCR_COUNT && type != FLEET_EV_NO_ACTION)
		return FLEET_E_INVALID_ARG;
	for (size_t i = 0; i < n; i++) {
		const struct fleet_evlog_alg *a = table_alg(b, d[i].alg);
		if (!a || a->size != d[i].size)
			return FLEET_E_INVALID_ARG;
		for (size_t j = 0; j < i; j++)
			if (d[j].alg == d[i].alg)
				return FLEET_E_INVALID_ARG;
	}
	size_t mark = b->log.len;
	fb_put_u32le(&b->log, pcr);
	fb_put_u32le(&b->log, type);
	fb_put_u32le(&b->log, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		fb_put_u16le(&b->log, d[i].alg);
		fb_put(&b->log, d[i].bytes, d[i].size);
	}
	fb_put_u32le(&b->log, (uint32_t)len);
	fb_put(&b->log, data, len);
	fleet_err e = fb_err(&b->log);
	if (e != FLEET_OK) {
		/* Drop the partial record and clear the sticky error so the
		 * builder keeps a well-formed log behind the failed add. */
		b->log.len = mark;
		b->log.err = FLEET_OK;
		return e;
	}
	memcpy(b->last, d, n * sizeof(*d));
	b->n_last = n;
	b->have_last = 1;
	return FLEET_OK;
}

fleet_err fleet_evlog_builder_add_measured(struct fleet_evlog_builder *b, uint32_t pcr,
					   uint32_t type, const void *data, size_t len,
					   const void *measured, size_t measured_len)
{
	if (!b || (measured_len > 0 && !measured))
		return FLEET_E_INVALID_ARG;
	struct fleet_evlog_digest d[FLEET_EVLOG_MAX_BANKS];
	memset(d, 0, sizeof(d));
	for (size_t i = 0; i < b->n_algs; i++) {
		d[i].alg = b->algs[i].alg;
		d[i].size = b->algs[i].size;
		fleet_err e = fleet_hash(d[i].alg, measured_len ? measured : "", measured_len,
					 d[i].bytes);
		if (e != FLEET_OK)
			return e;
	}
	return fleet_evlog_builder_add_digests(b, pcr, type, data, len, d, b->n_algs);
}

fleet_err fleet_evlog_builder_add(struct fleet_evlog_builder *b, uint32_t pcr, uint32_t type,
				  const void *data, size_t len)
{
	return fleet_evlog_builder_add_measured(b, pcr, type, data, len, data, len);
}

fleet_err fleet_evlog_builder_add_startup_locality(struct fleet_evlog_builder *b,
						   uint8_t locality)
{
	if (!b)
		return FLEET_E_INVALID_ARG;
	/* PFP 10.4.5.3: the signature with its NUL, then the locality. */
	uint8_t data[17];
	memcpy(data, "StartupLocality", 16);
	data[16] = locality;
	struct fleet_evlog_digest d[FLEET_EVLOG_MAX_BANKS];
	memset(d, 0, sizeof(d));
	for (size_t i = 0; i < b->n_algs; i++) {
		d[i].alg = b->algs[i].alg;
		d[i].size = b->algs[i].size;
	}
	return fleet_evlog_builder_add_digests(b, 0, FLEET_EV_NO_ACTION, data, sizeof(data), d,
					       b->n_algs);
}

fleet_err fleet_evlog_builder_last_digests(const struct fleet_evlog_builder *b,
					   const struct fleet_evlog_digest **d, size_t *n)
{
	if (!b || !d || !n)
		return FLEET_E_INVALID_ARG;
	if (!b->have_last)
		return FLEET_E_NOT_FOUND;
	*d = b->last;
	*n = b->n_last;
	return FLEET_OK;
}

fleet_err fleet_evlog_builder_finish(const struct fleet_evlog_builder *b, struct fleet_buf *out)
{
	if (!b || !out)
		return FLEET_E_INVALID_ARG;
	return fb_put(out, b->log.data, b->log.len);
}

fleet_err fleet_evlog_sha1_append(struct fleet_buf *out, uint32_t pcr, uint32_t type,
				  const uint8_t *digest, const void *data, size_t len)
{
	if (!out || (len > 0 && !data) || len > UINT32_MAX)
		return FLEET_E_INVALID_ARG;
	uint8_t md[20];
	if (digest) {
		memcpy(md, digest, sizeof(md));
	} else {
		fleet_err e = fleet_hash(FLEET_ALG_SHA1, len ? data : "", len, md);
		if (e != FLEET_OK)
			return e;
	}
	fb_put_u32le(out, pcr);
	fb_put_u32le(out, type);
	fb_put(out, md, sizeof(md));
	fb_put_u32le(out, (uint32_t)len);
	fb_put(out, data, len);
	return fb_err(out);
}

static void put_u64le(struct fleet_buf *out, uint64_t v)
{
	fb_put_u32le(out, (uint32_t)v);
	fb_put_u32le(out, (uint32_t)(v >> 32));
}

fleet_err fleet_evlog_efi_variable_data(const uint8_t guid[16], const char *name,
					const void *data, size_t len, struct fleet_buf *out)
{
	if (!guid || !name || !out || (len > 0 && !data))
		return FLEET_E_INVALID_ARG;
	size_t n = strlen(name);
	if (n > 127)
		return FLEET_E_INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] > 0x7F)
			return FLEET_E_INVALID_ARG;
	fb_put(out, guid, 16);
	put_u64le(out, n);   /* UnicodeNameLength, in CHAR16 */
	put_u64le(out, len); /* VariableDataLength */
	for (size_t i = 0; i < n; i++)
		fb_put_u16le(out, (uint8_t)name[i]);
	fb_put(out, data, len);
	return fb_err(out);
}

fleet_err fleet_evlog_efi_image_load_data(uint64_t image_base, uint64_t image_len,
					  uint64_t link_time_address, const void *devpath,
					  size_t devpath_len, struct fleet_buf *out)
{
	if (!out || (devpath_len > 0 && !devpath))
		return FLEET_E_INVALID_ARG;
	put_u64le(out, image_base);
	put_u64le(out, image_len);
	put_u64le(out, link_time_address);
	put_u64le(out, devpath_len);
	fb_put(out, devpath, devpath_len);
	return fb_err(out);
}

fleet_err fleet_evlog_devpath_node(struct fleet_buf *out, uint8_t type, uint8_t subtype,
				   const void *data, size_t len)
{
	if (!out || (len > 0 && !data) || len > UINT16_MAX - 4)
		return FLEET_E_INVALID_ARG;
	fb_put_u8(out, type);
	fb_put_u8(out, subtype);
	fb_put_u16le(out, (uint16_t)(len + 4));
	fb_put(out, data, len);
	return fb_err(out);
}
