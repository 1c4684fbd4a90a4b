# partition: end-to-end command-line checks (generate -> partition -> info --check, bad inputs).
add_test(NAME partition.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/partition/cli_test.sh)
set_tests_properties(partition.cli PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 120)
# meta.json grows with P, not P x P (issue 15): 64 and 512 parts of a small generated graph.
add_test(NAME partition.meta_size COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/partition/meta_size.sh)
set_tests_properties(partition.meta_size PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300)
# The default --balance all on RMAT (issue 18): vertices, stored edges and training vertices within 1.15x.
add_test(NAME partition.balance_default COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/partition/balance_default.sh)
set_tests_properties(partition.balance_default PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 120)
