# fleetctl policy create / explain on the shared real firmware logs (issue 15).
fleet_script_test(policy_create_cli interop interop/policy_create_cli.sh)
