/* Placeholder until the ca command group lands; replaced by its owner. */
#include <stdio.h>
#include "fleetd/fleetctl/fleetctl.h"
int cmd_ca(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "fleetctl: ca: not built yet\n");
	return FLEETCTL_EXIT_USAGE;
}
