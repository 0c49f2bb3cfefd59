# The join service (issue 13): its sealed tokens (lib/token_seal, lib/join_token)
# and the operator's commands (fleetctl join | pool | token) over a store
# owned by another user; root's, skipped (77) otherwise.
fleet_test(test_join_token unit unit/test_join_token.c)
fleet_script_test(join_cli e2e join_cli.sh $<TARGET_FILE:store_seed>)
