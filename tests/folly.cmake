# clusters/folly as a whole: every YAML parses, the classes schemas and their
# examples, Tinkerbell objects against ../shared/contracts/tinkerbell, the
# kustomization complete and rendered by `kubectl kustomize`.
add_test(NAME folly_kustomize COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/clusters/test_folly_kustomize.py)
set_tests_properties(folly_kustomize PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
# .github/workflows/talos-images.yml and scripts/update-class-image.py: the
# script that writes a class's digest, and the workflow through action-validator.
add_test(NAME folly_class_image COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/clusters/test_update_class_image.py)
set_tests_properties(folly_class_image PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
add_test(NAME folly_talos_images_workflow COMMAND /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/clusters/test_talos_images_workflow.py)
set_tests_properties(folly_talos_images_workflow PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  ENVIRONMENT "FLEET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
