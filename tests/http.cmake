# fleetd's serving and observability parts: the HTTPS listener
# (fleetd/http/), metrics, the journal, its claimed-value sanitiser and its
# limiter, sd_notify (fleetd/obs/).
fleet_test(test_metrics unit unit/test_metrics.c LIBS fleetdcore)
fleet_test(test_journal unit unit/test_journal.c LIBS fleetdcore)
# The journal limiter for requests that prove nothing (fleetd/obs/log_limit.c).
fleet_test(test_log_limit unit unit/test_log_limit.c LIBS fleetdcore)
set_tests_properties(test_log_limit PROPERTIES TIMEOUT 120)
fleet_test(test_sdnotify unit unit/test_sdnotify.c LIBS fleetdcore)
fleet_test(test_http_server e2e e2e/test_http_server.c e2e/http_client.c
           LIBS fleetdcore OpenSSL::SSL)
# The systemd unit and sysusers entry (systemd-analyze verify, exposure <= 1.4).
fleet_script_test(fleetd_unit unit systemd/verify_unit.sh)
