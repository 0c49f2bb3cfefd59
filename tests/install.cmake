# fleetd/install/: the provisions reconciled and the kubelet CSRs approved
# (install.h W1-W3, A1-A4) against a real store and the Kubernetes API
# contract fake; skips as test_kube_client does.
fleet_test(test_install e2e e2e/test_install.c e2e/kube_fixture.c LIBS fleetdcore)
set_tests_properties(test_install PROPERTIES TIMEOUT 240)
