# dynamic graphs: end-to-end checks of convert --format pgt-json, generate temporal-sbm, partition and info.
add_test(NAME dynamic.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dynamic/cli.sh)
set_tests_properties(dynamic.cli PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 120)
