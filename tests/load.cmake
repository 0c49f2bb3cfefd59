# Load and soak (issue 16, tests/load/README.md): 50 swtpm machines admitted
# at once against one real fleetd, without and with a forged-intake flood;
# a soak of repeated admissions, passes and unproven traffic watching
# fleetd's RSS, descriptors and log. Label `load`; each a couple of minutes
# on two cores. The full-size soak is run by hand (LOAD_SOAK_ADMISSIONS).
if(TARGET fleetd)
  # The forger: made-up AKs over the victims' public EK certificates.
  add_executable(load_forger load/load_forger.c e2e/http_client.c)
  target_link_libraries(load_forger PRIVATE tinkattest fleet fleet_testutil PkgConfig::TSS2 PkgConfig::CURL
                        OpenSSL::SSL OpenSSL::Crypto pthread)
  # Each machine's connections to fleetd from its own loopback address.
  add_library(load_bind_shim MODULE load/bind_shim.c)
  target_link_libraries(load_bind_shim PRIVATE ${CMAKE_DL_LIBS})
  foreach(t load_admission load_soak)
    fleet_script_test(${t} load load/${t}.sh)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
      "LOAD_FORGER=$<TARGET_FILE:load_forger>;LOAD_BIND_SHIM=$<TARGET_FILE:load_bind_shim>")
    set_tests_properties(${t} PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
  endforeach()
endif()
