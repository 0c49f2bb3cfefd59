# fleetd's state: the SQLite store, verdicts.jsonl, the nodes-file
# inventory, fleetd.yaml, and fleetctl's read-only store commands.
fleet_test(test_store unit unit/test_store.c LIBS fleetdcore fleet_x509_mint)
fleet_test(test_verdict_log unit unit/test_verdict_log.c LIBS fleetdcore)
fleet_test(test_nodes_file unit unit/test_nodes_file.c LIBS fleetdcore)
fleet_test(test_config unit unit/test_config.c LIBS fleetdcore)
add_executable(store_seed unit/store_seed.c)
target_link_libraries(store_seed PRIVATE fleetdcore fleet_x509_mint)
fleet_script_test(store_cli e2e store_cli.sh $<TARGET_FILE:store_seed>)
