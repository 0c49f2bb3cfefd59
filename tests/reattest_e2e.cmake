# The hourly re-check end to end: the real fleetd, tink-attest, tpm-reattest
# and fleetctl on swtpm machines booted by fleet-fwsim, against the
# Kubernetes and talosctl contract fakes (tests/e2e/reattest_e2e.sh; skips
# without swtpm or ../shared/contracts).
fleet_script_test(reattest_e2e e2e e2e/reattest_e2e.sh)
