/* Placeholder until the certify command group lands; replaced by its owner. */
#include <stdio.h>
#include "fleetd/fleetctl/fleetctl.h"
int cmd_certify(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "fleetctl: certify: not built yet\n");
	return FLEETCTL_EXIT_USAGE;
}
