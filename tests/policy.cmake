# Boot-policy profiles and their evaluation (policy/), and fleetctl policy.
fleet_test(test_policy_profile unit unit/test_policy_profile.c)
fleet_test(test_policy_evaluate unit unit/test_policy_evaluate.c)
fleet_test(test_policy_profiles interop interop/test_policy_profiles.c)
fleet_script_test(policy_cli interop interop/policy_cli.sh)
