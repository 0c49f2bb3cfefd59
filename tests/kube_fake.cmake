# The Kubernetes API contract fake (tests/fakes/kube_apiserver_fake.py,
# Kubernetes v1.32 API) proven against the real kubectl: secrets, the CSR
# approval and certificate, cordon, Tinkerbell Workflows checked against the
# real CRDs of ../shared/contracts/tinkerbell, watch and its 410. KUBECTL
# picks the client (CI: Debian 12's kubernetes-client, kubectl v1.20.2);
# skips without kubectl or ../shared/contracts.
fleet_script_test(kube_fake_kubectl e2e kube/test_kubectl_fake.sh)
set_tests_properties(kube_fake_kubectl PROPERTIES TIMEOUT 180)
