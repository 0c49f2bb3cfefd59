/* Placeholder until the policy command group lands; replaced by its owner. */
#include <stdio.h>
#include "fleetd/fleetctl/fleetctl.h"
int cmd_policy(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "fleetctl: policy: not built yet\n");
	return FLEETCTL_EXIT_USAGE;
}
