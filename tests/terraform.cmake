# terraform/netbox/folly: the module parsed with the real HCL parser
# (@cdktf/hcl2json) and checked against the provider's schema pages in
# ../shared/contracts/terraform-provider-netbox, the custom fields fleetd reads
# (fleetd/inventory/netbox_json.c, docs/netbox.md) and the ignore_changes a
# plan needs; the example nodes files against docs/nodes-file.schema.json and
# fleetd's own parser (nodes_file_check). Skips (77) without hcl2json, saying
# how to install it.
add_executable(nodes_file_check terraform/nodes_file_check.c)
target_link_libraries(nodes_file_check PRIVATE fleetd_inventory)
add_test(NAME terraform_netbox_folly COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/terraform/test_terraform_module.py)
set_tests_properties(terraform_netbox_folly PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR};FLEET_BINARY_DIR=${PROJECT_BINARY_DIR};FLEET_CONTRACTS=${PROJECT_SOURCE_DIR}/../shared/contracts;FLEET_NODES_FILE_CHECK=$<TARGET_FILE:nodes_file_check>")
