#include "policy/profile.h"
const char *fleet_policy_version(void) { return "1"; }
