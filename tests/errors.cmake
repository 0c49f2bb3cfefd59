# The one error space (lib/fleet_err.h): layers, codes, decisions, context.
fleet_test(test_fleet_err unit unit/test_fleet_err.c LIBS OpenSSL::Crypto)
