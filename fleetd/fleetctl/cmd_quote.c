/* Placeholder until the quote command group lands; replaced by its owner. */
#include <stdio.h>
#include "fleetd/fleetctl/fleetctl.h"
int cmd_quote(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "fleetctl: quote: not built yet\n");
	return FLEETCTL_EXIT_USAGE;
}
