# The join service's wire format (lib/join_wire.h, JW1-JW14): the request,
# the signed body and its envelope. The fuzz target is
# tests/fuzz/fuzz_join_wire.c (globbed), seeds in
# tests/fuzz/corpus/fuzz_join_wire/.
fleet_test(test_join_wire unit unit/test_join_wire.c unit/wire_test.c)
