#include "lib/spire_nodes_format.h"

#include <string.h>

bool fleet_spire_trust_domain_ok(const char *s)
{
	if (!s)
		return false;
	size_t n = strnlen(s, FLEET_SPIRE_TRUST_DOMAIN_MAX + 1);
	if (n == 0 || n > FLEET_SPIRE_TRUST_DOMAIN_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			return false;
	}
	return true;
}

bool fleet_spire_name_ok(const char *s)
{
	if (!s)
		return false;
	size_t n = strnlen(s, FLEET_SPIRE_NAME_MAX + 1);
	if (n == 0 || n > FLEET_SPIRE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '-' && c != '_' && c != '.')))
			return false;
	}
	return true;
}
