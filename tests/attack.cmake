# The join service's attack reproducers (tests/attack/README.md): each stood
# a defect up against the real fleetd and fleet-join and now must find every
# attack refused (exit 0); root's, skipped (77) otherwise.
foreach(attack join_client_tls_pin join_discovery_approval_claim
        join_discovery_approved_lockout join_hook_flood join_x509pop_loop
        join_x509pop_ramdisk)
  fleet_script_test(attack_${attack} e2e attack/${attack}.sh)
endforeach()
