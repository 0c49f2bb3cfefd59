#include "fleetd/provision/authorize.h"

#include <string.h>

bool fleet_provision_wanted(enum fleet_install_role role, const char *desired_action,
			    bool auto_provision, bool ran_workflow_before, const char **why)
{
	const char *d = desired_action ? desired_action : "";
	/* P4 first: nothing the owner sets installs a class with no installer. */
	if (role != FLEET_ROLE_WORKER && role != FLEET_ROLE_CONTROLPLANE) {
		*why = "class-installs-nothing";
		return false;
	}
	if (!strcmp(d, "provision")) { /* P1 */
		*why = "owner-requested";
		return true;
	}
	if (d[0] && strcmp(d, "none") != 0) {
		*why = "desired-action-unknown";
		return false;
	}
	if (role == FLEET_ROLE_CONTROLPLANE) { /* P3 */
		*why = "controlplane-needs-owner";
		return false;
	}
	if (auto_provision && !ran_workflow_before) { /* P2 */
		*why = "auto-provision";
		return true;
	}
	*why = "not-requested";
	return false;
}
