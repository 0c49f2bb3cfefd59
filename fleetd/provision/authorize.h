/*
 * authorize.h: whether an admitted machine is installed now.
 *
 * The spec's "Authorize installation": after the signed confirmation
 * admits the device (the binding read again, the declarations and the
 * LLDP port checked on that fresh read), a provision starts when
 *
 *   P1  the owner set desired_action to "provision" (a worker or a
 *       control plane), or
 *   P2  auto-provision is on (fleetd.yaml) and the class is a worker that
 *       has never run a Workflow;
 *   P3  a control plane always needs P1: auto-provision never installs one;
 *   P4  a class of role none never installs.
 *
 * Anything else in desired_action than "", "none" or "provision" starts
 * nothing (the inventory's validation should have refused it; fleetd does
 * not guess). Tests: tests/unit/test_install_classes.c provision_wanted.
 */
#ifndef FLEETD_PROVISION_AUTHORIZE_H
#define FLEETD_PROVISION_AUTHORIZE_H

#include <stdbool.h>

#include "fleetd/provision/install_classes.h"

/* Whether to start; *why (never NULL after the call) is a stable word for
 * the journal: "owner-requested", "auto-provision", "not-requested",
 * "controlplane-needs-owner", "class-installs-nothing",
 * "desired-action-unknown". */
bool fleet_provision_wanted(enum fleet_install_role role, const char *desired_action,
			    bool auto_provision, bool ran_workflow_before, const char **why);

#endif
