# The join service (issue 13): its sealed tokens (lib/token_seal, lib/join_token)
# and the operator's commands (fleetctl join | pool | token) over a store
# owned by another user; root's, skipped (77) otherwise.
fleet_test(test_join_token unit unit/test_join_token.c)
fleet_script_test(join_cli e2e join_cli.sh $<TARGET_FILE:store_seed>)
# kill -9 at every durable write of a token join's commit (store.h N1).
add_executable(store_join_tool unit/store_join_tool.c)
target_link_libraries(store_join_tool PRIVATE fleetd_store fleet_x509_mint)
if(TARGET fleet_crash_shim)
  fleet_script_test(join_crash e2e join_crash.sh $<TARGET_FILE:store_join_tool>
                    $<TARGET_FILE:fleet_crash_shim>)
endif()
# The join service over HTTPS: every attestor's and the service's reasons,
# the concurrent one-use token, a deferral across a restart, kill -9 in a
# join, the pass's prune (tests/e2e/join_e2e.sh; root's, needs libfaketime).
add_executable(seal_tool unit/seal_tool.c)
target_link_libraries(seal_tool PRIVATE fleet)
if(TARGET fleet_crash_shim)
  fleet_script_test(join_e2e e2e e2e/join_e2e.sh $<TARGET_FILE:seal_tool>
                    $<TARGET_FILE:fleet_crash_shim>)
else()
  fleet_script_test(join_e2e e2e e2e/join_e2e.sh $<TARGET_FILE:seal_tool>)
endif()
# The store's join transaction (store.h X1-X6).
fleet_test(test_join_tx unit unit/test_join_tx.c LIBS fleetdcore fleet_x509_mint fleet_store_location)
fleet_pg_twin(test_join_tx) # the same rules on PostgreSQL (tests/CMakeLists.txt)
# The discovery and provisioned attestors' operator commands (fleetctl
# join-requests | site lease | node | token create --node; store.h D1-D8)
# over a store with nodes and join requests; root's, skipped (77) otherwise.
add_executable(join_requests_seed unit/join_requests_seed.c)
target_link_libraries(join_requests_seed PRIVATE fleetd_store fleet_x509_mint)
fleet_script_test(join_requests_cli e2e join_requests_cli.sh $<TARGET_FILE:join_requests_seed>)
