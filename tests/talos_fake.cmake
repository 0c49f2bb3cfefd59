# The talosctl contract fake (tests/fakes/talosctl_fake.py, talosctl v1.13.9)
# against the real Talos machine-config JSON Schema in ../shared/contracts,
# with an independent jsonschema validator (tests/talos/talos_yaml.py); skips
# (77) without ../shared/contracts or Debian's python3-yaml/python3-jsonschema.
fleet_script_test(talos_fake_contract unit talos/test_talosctl_fake.sh)
set_tests_properties(talos_fake_contract PROPERTIES TIMEOUT 300)
