# The Debian package end to end (tests/packaging/build_deb.sh: build,
# lintian, dpkg -x, fleetd --check-config on the packaged example). Slow (a
# full release build), so only with -DFLEET_PACKAGE_TEST=ON.
option(FLEET_PACKAGE_TEST "Register the slow Debian package test" OFF)
if(FLEET_PACKAGE_TEST)
  fleet_script_test(test_package_deb packaging packaging/build_deb.sh)
  set_tests_properties(test_package_deb PROPERTIES TIMEOUT 3600)
endif()
