# fleetd/provision/: classes.json and class-inputs.json, rules K1-K6.
fleet_test(test_install_classes unit unit/test_install_classes.c LIBS fleetd_provision)
fleet_test(test_render unit unit/test_render.c LIBS fleetd_provision)
# The whole render through talosctl's contract fake and the real Talos schema.
fleet_test(test_render_fake e2e e2e/test_render_fake.c LIBS fleetd_provision)
fleet_test(test_kubelet_csr unit unit/test_kubelet_csr.c LIBS fleetd_provision OpenSSL::Crypto)
fleet_test(test_bootstrap_token unit unit/test_bootstrap_token.c LIBS fleetd_provision)
# The configuration code and the proof of a passing check (code.h D1, D3-D5).
fleet_test(test_code unit unit/test_code.c LIBS fleetd_provision)
# D2 on a real TPM: the wrapped code opens through tink-attest's activation.
fleet_test(test_code_wrap tpm tpm/test_code_wrap.c LIBS fleetd_provision tinkattest fleet_swtpm)
# GET /config?code=: the one-time, fully acknowledged delivery through a real
# HTTPS server, real TLS clients, and kill -9 of the serving process.
fleet_test(test_config_delivery e2e e2e/test_config_delivery.c e2e/http_client.c
           LIBS fleetdcore OpenSSL::SSL)
set_tests_properties(test_config_delivery PROPERTIES TIMEOUT 180)
