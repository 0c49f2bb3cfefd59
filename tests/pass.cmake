# The reconcile pass (fleetd/pass/): spire-nodes.json from the store and the
# inventory, and nothing decided from an inventory error.
fleet_test(test_pass unit unit/test_pass.c LIBS fleetdcore)
