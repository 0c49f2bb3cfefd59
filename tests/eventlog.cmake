# The TCG event log: parse, replay, describe, the builder, and the CLI.
fleet_test(test_eventlog unit unit/test_eventlog.c)
fleet_test(test_eventlog_interop interop interop/test_eventlog_interop.c)
fleet_script_test(eventlog_cli interop interop/eventlog_cli.sh)
