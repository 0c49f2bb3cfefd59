/* Placeholder until the eventlog command group lands; replaced by its owner. */
#include <stdio.h>
#include "fleetd/fleetctl/fleetctl.h"
int cmd_eventlog(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "fleetctl: eventlog: not built yet\n");
	return FLEETCTL_EXIT_USAGE;
}
