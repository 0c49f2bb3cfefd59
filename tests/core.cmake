# The foundation: reader, buffers, the file reader, hex, errors, and the swtpm
# harness.
fleet_test(test_reader unit unit/test_reader.c)
fleet_test(test_swtpm_harness tpm tpm/test_swtpm_harness.c LIBS fleet_swtpm)
fleet_script_test(install_layout unit install_layout.sh)
fleet_script_test(demo_walk e2e e2e/demo_walk.sh)
fleet_script_test(demo_fleet e2e e2e/demo_fleet.sh)
# The buffer's kinds: free and realloc wrapped at link time, so the test sees
# each block libfleet hands back (a secret's must be wiped, never realloc'd).
fleet_test(test_buf unit unit/test_buf.c)
target_link_options(test_buf PRIVATE "LINKER:--wrap=free,--wrap=realloc")
# The one reader of trusted files and secrets (lib/file_read.h).
fleet_test(test_file_read unit unit/test_file_read.c)
# The one sanitiser and the printable-ASCII check (lib/sanitize.h).
fleet_test(test_sanitize unit unit/test_sanitize.c)
fleet_test(test_runner unit unit/test_runner.c)
