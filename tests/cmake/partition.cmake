# partition: end-to-end command-line checks (generate -> partition -> info --check, bad inputs).
add_test(NAME partition.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/partition/cli_test.sh)
set_tests_properties(partition.cli PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 120)
