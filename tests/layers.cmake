# docs/ARCHITECTURE.md's layer and program tables, checked by
# scripts/check-layers.py: the tree as built passes, planted wrong-way
# edges (an include, an applier linking SQLite) fail.
fleet_script_test(layers unit layers/test_check_layers.sh)

# Every mutant under tests/mutants/ still applies to the code it targets.
fleet_script_test(mutants_current unit mutants/check_current.sh)
