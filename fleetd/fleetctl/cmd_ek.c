/* Placeholder until the ek command group lands; replaced by its owner. */
#include <stdio.h>
#include "fleetd/fleetctl/fleetctl.h"
int cmd_ek(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "fleetctl: ek: not built yet\n");
	return FLEETCTL_EXIT_USAGE;
}
