/* profile.h: boot-policy profiles. (The full API lands with the profile work.) */
#ifndef FLEET_POLICY_PROFILE_H
#define FLEET_POLICY_PROFILE_H
const char *fleet_policy_version(void);
#endif
