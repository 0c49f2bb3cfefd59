# The firmware simulator: boot events into a real (swtpm) TPM plus the
# matching crypto-agile log (tests/fwsim/fwsim.c, docs/fwsim.md), the
# fleet-fwsim demo tool (not installed), and its tests.
add_library(fleet_fwsim STATIC fwsim/fwsim.c)
target_link_libraries(fleet_fwsim PUBLIC fleet PkgConfig::TSS2 PkgConfig::YAML)
target_include_directories(fleet_fwsim PUBLIC ${PROJECT_SOURCE_DIR})

add_executable(fleet-fwsim fwsim/fwsim_main.c)
target_link_libraries(fleet-fwsim PRIVATE fleet_fwsim)

fleet_test(test_fwsim tpm fwsim/test_fwsim.c LIBS fleet_fwsim fleet_swtpm)
target_compile_definitions(test_fwsim PRIVATE FWSIM_BIN="$<TARGET_FILE:fleet-fwsim>")
add_dependencies(test_fwsim fleet-fwsim)
