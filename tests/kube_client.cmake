# fleetd/kube/: the Kubernetes API client, rules K1-K15 and KC1-KC12
# (fleetd/kube/kube.h, kube_config.h).
fleet_test(test_kube_config unit unit/test_kube_config.c LIBS fleetd_kube)
# The client against the Kubernetes API contract fake
# (tests/fakes/kube_apiserver_fake.py); skips without python3-yaml,
# python3-jsonschema, openssl or ../shared/contracts/tinkerbell.
fleet_test(test_kube_client e2e e2e/test_kube_client.c e2e/kube_fixture.c LIBS fleetd_kube)
set_tests_properties(test_kube_client PROPERTIES TIMEOUT 180)
