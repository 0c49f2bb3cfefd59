# The HookOS entrypoint images/tink-agent-autoid/entrypoint.sh
# (docs/hookos-entrypoint.md), run under dash and busybox sh with a fake
# /proc/cmdline and fake ntpd, tink-attest and tink-agent.
fleet_script_test(entrypoint unit entrypoint/test_entrypoint.sh)
