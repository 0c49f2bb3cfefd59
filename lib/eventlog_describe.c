/*
 * eventlog_describe.c: names and one-line decodings of events for people
 * (`fleetctl eventlog show`). Event data is untrusted like the rest of the
 * log: every structure inside it is read through lib/reader.h, and a decode
 * that does not fit says so instead of guessing.
 */
#include "lib/eventlog.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/reader.h"

struct type_name {
	uint32_t type;
	const char *name;
};

static const struct type_name type_names[] = {
	{FLEET_EV_PREBOOT_CERT, "EV_PREBOOT_CERT"},
	{FLEET_EV_POST_CODE, "EV_POST_CODE"},
	{0x00000002, "EV_UNUSED"},
	{FLEET_EV_NO_ACTION, "EV_NO_ACTION"},
	{FLEET_EV_SEPARATOR, "EV_SEPARATOR"},
	{FLEET_EV_ACTION, "EV_ACTION"},
	{FLEET_EV_EVENT_TAG, "EV_EVENT_TAG"},
	{FLEET_EV_S_CRTM_CONTENTS, "EV_S_CRTM_CONTENTS"},
	{FLEET_EV_S_CRTM_VERSION, "EV_S_CRTM_VERSION"},
	{FLEET_EV_CPU_MICROCODE, "EV_CPU_MICROCODE"},
	{FLEET_EV_PLATFORM_CONFIG_FLAGS, "EV_PLATFORM_CONFIG_FLAGS"},
	{FLEET_EV_TABLE_OF_DEVICES, "EV_TABLE_OF_DEVICES"},
	{FLEET_EV_COMPACT_HASH, "EV_COMPACT_HASH"},
	{FLEET_EV_IPL, "EV_IPL"},
	{FLEET_EV_IPL_PARTITION_DATA, "EV_IPL_PARTITION_DATA"},
	{FLEET_EV_NONHOST_CODE, "EV_NONHOST_CODE"},
	{FLEET_EV_NONHOST_CONFIG, "EV_NONHOST_CONFIG"},
	{FLEET_EV_NONHOST_INFO, "EV_NONHOST_INFO"},
	{FLEET_EV_OMIT_BOOT_DEVICE_EVENTS, "EV_OMIT_BOOT_DEVICE_EVENTS"},
	{FLEET_EV_EFI_EVENT_BASE, "EV_EFI_EVENT_BASE"},
	{FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG, "EV_EFI_VARIABLE_DRIVER_CONFIG"},
	{FLEET_EV_EFI_VARIABLE_BOOT, "EV_EFI_VARIABLE_BOOT"},
	{FLEET_EV_EFI_BOOT_SERVICES_APPLICATION, "EV_EFI_BOOT_SERVICES_APPLICATION"},
	{FLEET_EV_EFI_BOOT_SERVICES_DRIVER, "EV_EFI_BOOT_SERVICES_DRIVER"},
	{FLEET_EV_EFI_RUNTIME_SERVICES_DRIVER, "EV_EFI_RUNTIME_SERVICES_DRIVER"},
	{FLEET_EV_EFI_GPT_EVENT, "EV_EFI_GPT_EVENT"},
	{FLEET_EV_EFI_ACTION, "EV_EFI_ACTION"},
	{FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB, "EV_EFI_PLATFORM_FIRMWARE_BLOB"},
	{FLEET_EV_EFI_HANDOFF_TABLES, "EV_EFI_HANDOFF_TABLES"},
	{FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB2, "EV_EFI_PLATFORM_FIRMWARE_BLOB2"},
	{FLEET_EV_EFI_HANDOFF_TABLES2, "EV_EFI_HANDOFF_TABLES2"},
	{FLEET_EV_EFI_VARIABLE_BOOT2, "EV_EFI_VARIABLE_BOOT2"},
	{FLEET_EV_EFI_HCRTM_EVENT, "EV_EFI_HCRTM_EVENT"},
	{FLEET_EV_EFI_VARIABLE_AUTHORITY, "EV_EFI_VARIABLE_AUTHORITY"},
	{FLEET_EV_EFI_SPDM_FIRMWARE_BLOB, "EV_EFI_SPDM_FIRMWARE_BLOB"},
	{FLEET_EV_EFI_SPDM_FIRMWARE_CONFIG, "EV_EFI_SPDM_FIRMWARE_CONFIG"},
};

const char *fleet_evlog_type_name(uint32_t type)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return "EV_UNKNOWN";
}

void fleet_efi_guid_str(const uint8_t g[16], char out[37])
{
	/* EFI_GUID: Data1 (u32), Data2, Data3 (u16) little-endian, then
	 * Data4 as 8 bytes in order. */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

/* A bounded text writer: appends what fits and always NUL-terminates. */
struct text {
	char *p;
	size_t cap;
	size_t len;
};

static void tx_init(struct text *t, char *out, size_t outlen)
{
	t->p = out;
	t->cap = outlen;
	t->len = 0;
	if (outlen)
		out[0] = '\0';
}

static void tx_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx_printf(struct text *t, const char *fmt, ...)
{
	if (t->cap == 0 || t->len >= t->cap - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	t->len += (size_t)n < t->cap - t->len ? (size_t)n : t->cap - t->len - 1;
}

/* One character for people: printable ASCII as is, the rest escaped, so
 * a log cannot move a terminal's cursor or forge a line. */
static void tx_char(struct text *t, unsigned c)
{
	if (c >= 0x20 && c < 0x7F && c != '\\')
		tx_printf(t, "%c", (char)c);
	else if (c == '\\')
		tx_printf(t, "\\\\");
	else if (c < 0x100)
		tx_printf(t, "\\x%02x", c);
	else
		tx_printf(t, "\\u%04x", c);
}

/* Text bytes up to the first NUL (firmware often counts the NUL in). */
static void tx_ascii(struct text *t, struct fleet_reader *r)
{
	uint8_t c;
	while (fr_u8(r, &c) == FLEET_OK && c != 0)
		tx_char(t, c);
}

/* UTF-16LE up to a NUL or the end. */
static void tx_utf16(struct text *t, struct fleet_reader *r)
{
	uint16_t c;
	while (fr_u16le(r, &c) == FLEET_OK && c != 0)
		tx_char(t, c);
}

static void tx_guid(struct text *t, const uint8_t g[16])
{
	char s[37];
	fleet_efi_guid_str(g, s);
	tx_printf(t, "%s", s);
}

fleet_err fleet_evlog_efi_variable(const struct fleet_evlog_event *ev, struct fleet_efi_var *out)
{
	if (!ev || !out)
		return FLEET_E_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	struct fleet_reader r;
	fr_init(&r, ev->data, ev->data_len);
	uint64_t name_len, data_len;
	if (fr_get(&r, out->guid, 16) != FLEET_OK || fr_u64le(&r, &name_len) != FLEET_OK ||
	    fr_u64le(&r, &data_len) != FLEET_OK)
		return FLEET_E_MALFORMED;
	if (name_len > sizeof(out->name) - 1)
		return FLEET_E_MALFORMED;
	for (uint64_t i = 0; i < name_len; i++) {
		uint16_t c;
		if (fr_u16le(&r, &c) != FLEET_OK)
			return FLEET_E_MALFORMED;
		out->name[i] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
	}
	out->name[name_len] = '\0';
	/* The data must be exactly what is left: extra bytes would be data
	 * the digest covers that no reader of the variable sees. */
	if (data_len != fr_left(&r) || fr_ptr(&r, (size_t)data_len, &out->data) != FLEET_OK)
		return FLEET_E_MALFORMED;
	out->data_len = data_len;
	return FLEET_OK;
}

/* --- UEFI device paths (UEFI 2.10, chapter 10) --- */

static void devpath_node(struct text *t, uint8_t type, uint8_t sub, struct fleet_reader *d)
{
	uint8_t b8[2];
	uint16_t u16;
	uint32_t u32, u32b;
	uint64_t u64a, u64b;
	uint8_t guid[16];
	const uint8_t *p;

	if (type == 0x01 && sub == 0x01 && fr_get(d, b8, 2) == FLEET_OK) {
		tx_printf(t, "Pci(0x%x,0x%x)", b8[1], b8[0]); /* device, function */
		return;
	}
	if (type == 0x02 && sub == 0x01 && fr_u32le(d, &u32) == FLEET_OK &&
	    fr_u32le(d, &u32b) == FLEET_OK) {
		if (u32 == 0x0A0341D0) /* EISA PNP0A03 */
			tx_printf(t, "PciRoot(0x%x)", u32b);
		else if (u32 == 0x0A0841D0) /* PNP0A08 */
			tx_printf(t, "PcieRoot(0x%x)", u32b);
		else
			tx_printf(t, "Acpi(0x%08x,0x%x)", u32, u32b);
		return;
	}
	if (type == 0x03 && sub == 0x0B && fr_ptr(d, 32, &p) == FLEET_OK &&
	    fr_u8(d, &b8[0]) == FLEET_OK) {
		/* MAC: 32 bytes of address, 6 used for Ethernet-like IfTypes. */
		size_t n = (b8[0] == 0 || b8[0] == 1) ? 6 : 32;
		tx_printf(t, "MAC(");
		for (size_t i = 0; i < n; i++)
			tx_printf(t, "%02x", p[i]);
		tx_printf(t, ",0x%x)", b8[0]);
		return;
	}
	if (type == 0x03 && sub == 0x18) {
		tx_printf(t, "Uri(");
		tx_ascii(t, d);
		tx_printf(t, ")");
		return;
	}
	if (type == 0x03 && sub == 0x05 && fr_get(d, b8, 2) == FLEET_OK) {
		tx_printf(t, "USB(0x%x,0x%x)", b8[0], b8[1]);
		return;
	}
	if (type == 0x03 && sub == 0x12 && fr_u16le(d, &u16) == FLEET_OK &&
	    fr_get(d, b8, 2) == FLEET_OK) {
		tx_printf(t, "Sata(0x%x,0x%x)", u16, (unsigned)(b8[0] | b8[1] << 8));
		return;
	}
	if (type == 0x03 && sub == 0x17 && fr_u32le(d, &u32) == FLEET_OK &&
	    fr_ptr(d, 8, &p) == FLEET_OK) {
		tx_printf(t, "NVMe(0x%x,", u32);
		for (size_t i = 0; i < 8; i++)
			tx_printf(t, "%s%02x", i ? "-" : "", p[i]);
		tx_printf(t, ")");
		return;
	}
	if (type == 0x04 && sub == 0x01 && fr_u32le(d, &u32) == FLEET_OK &&
	    fr_u64le(d, &u64a) == FLEET_OK && fr_u64le(d, &u64b) == FLEET_OK &&
	    fr_get(d, guid, 16) == FLEET_OK && fr_get(d, b8, 2) == FLEET_OK) {
		/* Hard drive: partition, start, size, signature, MBR type,
		 * signature type (1 MBR, 2 GPT). */
		tx_printf(t, "HD(%u,", u32);
		if (b8[1] == 2) {
			tx_printf(t, "GPT,");
			tx_guid(t, guid);
		} else if (b8[1] == 1) {
			tx_printf(t, "MBR,0x%02x%02x%02x%02x", guid[3], guid[2], guid[1], guid[0]);
		} else {
			tx_printf(t, "0x%x", b8[1]);
		}
		tx_printf(t, ",0x%llx,0x%llx)", (unsigned long long)u64a, (unsigned long long)u64b);
		return;
	}
	if (type == 0x04 && sub == 0x04) {
		tx_utf16(t, d); /* a file path, printed as found */
		return;
	}
	if (type == 0x04 && (sub == 0x06 || sub == 0x07) && fr_get(d, guid, 16) == FLEET_OK) {
		tx_printf(t, sub == 0x06 ? "FvFile(" : "Fv(");
		tx_guid(t, guid);
		tx_printf(t, ")");
		return;
	}
	/* Vendor nodes: hardware 0x04, messaging 0x0A, media 0x03. */
	if (((type == 0x01 && sub == 0x04) || (type == 0x03 && sub == 0x0A) ||
	     (type == 0x04 && sub == 0x03)) &&
	    fr_get(d, guid, 16) == FLEET_OK) {
		tx_printf(t, "%s(", type == 0x01 ? "VenHw" : type == 0x03 ? "VenMsg" : "VenMedia");
		tx_guid(t, guid);
		tx_printf(t, ")");
		return;
	}
	/* Relative offset range: a reserved u32, then start and end. */
	if (type == 0x04 && sub == 0x08 && fr_skip(d, 4) == FLEET_OK &&
	    fr_u64le(d, &u64a) == FLEET_OK &&
	    fr_u64le(d, &u64b) == FLEET_OK) {
		tx_printf(t, "Offset(0x%llx,0x%llx)", (unsigned long long)u64a,
			  (unsigned long long)u64b);
		return;
	}
	/* Unknown node, or a known one too short for its fields. */
	tx_printf(t, "Path(0x%x,0x%x,%zu bytes)", type, sub, d->len);
}

/* Writes the device path as text; "<bad device path at byte N>" where a
 * node's length is impossible, so a reader sees where it went wrong. */
static void devpath_text(struct text *t, struct fleet_reader *r)
{
	int first = 1;
	while (!fr_at_end(r)) {
		size_t off = fr_offset(r);
		uint8_t type, sub;
		uint16_t len;
		struct fleet_reader node;
		if (fr_u8(r, &type) != FLEET_OK || fr_u8(r, &sub) != FLEET_OK ||
		    fr_u16le(r, &len) != FLEET_OK || len < 4 ||
		    fr_sub(r, (size_t)len - 4, &node) != FLEET_OK) {
			tx_printf(t, "%s<bad device path at byte %zu>", first ? "" : "/", off);
			return;
		}
		if (type == 0x7F && sub == 0xFF)
			return;
		if (type == 0x7F && sub == 0x01) {
			tx_printf(t, ",");
			first = 1;
			continue;
		}
		if (!first)
			tx_printf(t, "/");
		first = 0;
		devpath_node(t, type, sub, &node);
	}
}

/* --- per-type decoders --- */

static void describe_variable(struct text *t, const struct fleet_evlog_event *ev)
{
	struct fleet_efi_var v;
	if (fleet_evlog_efi_variable(ev, &v) != FLEET_OK) {
		tx_printf(t, "<not a UEFI_VARIABLE_DATA>");
		return;
	}
	tx_guid(t, v.guid);
	tx_printf(t, " %s (%llu bytes)", v.name, (unsigned long long)v.data_len);
	/* Boot#### holds an EFI_LOAD_OPTION: attributes, path length, the
	 * description, then the device path of what it boots. */
	if (ev->type == FLEET_EV_EFI_VARIABLE_BOOT || ev->type == FLEET_EV_EFI_VARIABLE_BOOT2) {
		struct fleet_reader r, dp;
		uint32_t attrs;
		uint16_t plen;
		fr_init(&r, v.data, (size_t)v.data_len);
		if (strncmp(v.name, "Boot", 4) != 0 || strlen(v.name) != 8 ||
		    fr_u32le(&r, &attrs) != FLEET_OK || fr_u16le(&r, &plen) != FLEET_OK)
			return;
		tx_printf(t, " \"");
		tx_utf16(t, &r);
		tx_printf(t, "\" ");
		if (fr_sub(&r, plen, &dp) == FLEET_OK)
			devpath_text(t, &dp);
	}
}

static void describe_image(struct text *t, const struct fleet_evlog_event *ev)
{
	struct fleet_reader r, dp;
	fr_init(&r, ev->data, ev->data_len);
	uint64_t base, len, link, dplen;
	if (fr_u64le(&r, &base) != FLEET_OK || fr_u64le(&r, &len) != FLEET_OK ||
	    fr_u64le(&r, &link) != FLEET_OK || fr_u64le(&r, &dplen) != FLEET_OK ||
	    dplen > fr_left(&r) || fr_sub(&r, (size_t)dplen, &dp) != FLEET_OK) {
		tx_printf(t, "<not a UEFI_IMAGE_LOAD_EVENT>");
		return;
	}
	tx_printf(t, "image at 0x%llx, %llu bytes: ", (unsigned long long)base,
		  (unsigned long long)len);
	devpath_text(t, &dp);
}

static void describe_blob(struct text *t, const struct fleet_evlog_event *ev)
{
	struct fleet_reader r;
	fr_init(&r, ev->data, ev->data_len);
	uint8_t dlen;
	uint64_t base, len;
	if (ev->type == FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB2) {
		tx_printf(t, "\"");
		struct fleet_reader desc;
		if (fr_u8(&r, &dlen) != FLEET_OK || fr_sub(&r, dlen, &desc) != FLEET_OK) {
			tx_printf(t, "<bad description>\"");
			return;
		}
		tx_ascii(t, &desc);
		tx_printf(t, "\" ");
	}
	if (fr_u64le(&r, &base) == FLEET_OK && fr_u64le(&r, &len) == FLEET_OK)
		tx_printf(t, "base 0x%llx, %llu bytes", (unsigned long long)base,
			  (unsigned long long)len);
	else
		tx_printf(t, "<not a firmware blob descriptor>");
}

/* S-CRTM versions and IPL strings are UTF-16 on some firmware and loaders
 * and ASCII on others. */
static void describe_text_guess(struct text *t, const struct fleet_evlog_event *ev)
{
	struct fleet_reader r;
	fr_init(&r, ev->data, ev->data_len);
	int utf16 = ev->data_len >= 2 && ev->data_len % 2 == 0 && ev->data[1] == 0 && ev->data[0];
	if (utf16)
		tx_utf16(t, &r);
	else
		tx_ascii(t, &r);
}

static void describe_no_action(struct text *t, const struct fleet_evlog_event *ev)
{
	struct fleet_reader r;
	fr_init(&r, ev->data, ev->data_len);
	if (ev->data_len >= 16 && memcmp(ev->data, "Spec ID Event03", 16) == 0) {
		uint32_t n;
		if (fr_skip(&r, 24) != FLEET_OK || fr_u32le(&r, &n) != FLEET_OK)
			return;
		tx_printf(t, "Spec ID Event03:");
		for (uint32_t i = 0; i < n; i++) {
			uint16_t alg, size;
			if (fr_u16le(&r, &alg) != FLEET_OK || fr_u16le(&r, &size) != FLEET_OK)
				return;
			const char *name = fleet_hash_alg_name(alg);
			if (name)
				tx_printf(t, " %s", name);
			else
				tx_printf(t, " 0x%04x", alg);
			tx_printf(t, "/%u", size);
		}
		return;
	}
	if (ev->data_len == 17 && memcmp(ev->data, "StartupLocality", 16) == 0) {
		tx_printf(t, "StartupLocality %u", ev->data[16]);
		return;
	}
	/* Other EV_NO_ACTION payloads start with a NUL-terminated signature. */
	struct fleet_reader sig;
	if (fr_sub(&r, ev->data_len < 16 ? ev->data_len : 16, &sig) == FLEET_OK)
		tx_ascii(t, &sig);
}

void fleet_evlog_describe(const struct fleet_evlog_event *ev, char *out, size_t outlen)
{
	struct text t;
	tx_init(&t, out, outlen);
	if (!ev || !out || outlen == 0)
		return;
	struct fleet_reader r;
	fr_init(&r, ev->data, ev->data_len);
	uint32_t v;
	switch (ev->type) {
	case FLEET_EV_EFI_VARIABLE_DRIVER_CONFIG:
	case FLEET_EV_EFI_VARIABLE_BOOT:
	case FLEET_EV_EFI_VARIABLE_BOOT2:
	case FLEET_EV_EFI_VARIABLE_AUTHORITY:
		describe_variable(&t, ev);
		break;
	case FLEET_EV_EFI_BOOT_SERVICES_APPLICATION:
	case FLEET_EV_EFI_BOOT_SERVICES_DRIVER:
	case FLEET_EV_EFI_RUNTIME_SERVICES_DRIVER:
		describe_image(&t, ev);
		break;
	case FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB:
	case FLEET_EV_EFI_PLATFORM_FIRMWARE_BLOB2:
		describe_blob(&t, ev);
		break;
	case FLEET_EV_SEPARATOR:
		if (ev->data_len == 4 && fr_u32le(&r, &v) == FLEET_OK)
			tx_printf(&t, "0x%08x%s", v,
				  v == 0xFFFFFFFF ? " (error)" : "");
		else
			tx_ascii(&t, &r);
		break;
	case FLEET_EV_EFI_ACTION:
	case FLEET_EV_ACTION:
	case FLEET_EV_EFI_HCRTM_EVENT:
		tx_ascii(&t, &r);
		break;
	case FLEET_EV_S_CRTM_VERSION:
	case FLEET_EV_POST_CODE:
	case FLEET_EV_IPL: /* GRUB logs ASCII, systemd-boot UTF-16 */
		describe_text_guess(&t, ev);
		break;
	case FLEET_EV_NO_ACTION:
		describe_no_action(&t, ev);
		break;
	default:
		break;
	}
}
