# fleetd's state: the SQLite store, verdicts.jsonl, the nodes-file
# inventory, fleetd.yaml, and fleetctl's read-only store commands.
fleet_test(test_store unit unit/test_store.c LIBS fleetdcore fleet_x509_mint fleet_store_location)
# db.h DB8: the SQLite engine's statement cache.
fleet_test(test_db_sqlite unit unit/test_db_sqlite.c LIBS fleetdcore)
fleet_test(test_verdict_log unit unit/test_verdict_log.c LIBS fleetdcore)
fleet_test(test_nodes_file unit unit/test_nodes_file.c LIBS fleetdcore)
# calloc and realloc wrapped at link time: the test makes the nodes-file
# inventory's own allocations fail (fleetd/inventory/nodes_file.c).
target_link_options(test_nodes_file PRIVATE "LINKER:--wrap=calloc,--wrap=realloc")
fleet_test(test_config unit unit/test_config.c LIBS fleetdcore)
add_executable(store_seed unit/store_seed.c)
target_link_libraries(store_seed PRIVATE fleetdcore fleet_x509_mint)
fleet_script_test(store_cli e2e store_cli.sh $<TARGET_FILE:store_seed>)
# The store owns its concurrency (store.h "Threads"): the real pass in a loop
# on its read-only handle while threads do the admission's store work on one
# shared handle. .ci/run also builds it alone with -DFLEET_TSAN=ON and runs it
# under ThreadSanitizer; only the pass's and the store's targets are linked,
# so that build stays small.
fleet_test(test_store_concurrency unit unit/test_store_concurrency.c
           LIBS fleetd_pass fleetd_store fleet_x509_mint fleet_store_location)
set_tests_properties(test_store_concurrency PROPERTIES TIMEOUT 300)
# The install runs (schema version 4): one open per device, compare-and-set
# stages, burned codes across restarts, the config wiped, one CSR per token.
fleet_test(test_store_provisions unit unit/test_store_provisions.c LIBS fleetd_store fleet_store_location)
# fleetctl quarantine list | lift (root; the store's operator handle, the
# journal entry): tests/quarantine_cli.sh, skipped (77) when not root.
fleet_script_test(quarantine_cli e2e quarantine_cli.sh $<TARGET_FILE:store_seed>)
# The same tests on PostgreSQL (tests/CMakeLists.txt, fleet_pg_twin).
fleet_pg_twin(test_store)
fleet_pg_twin(test_store_provisions)
fleet_pg_twin(test_store_concurrency)
