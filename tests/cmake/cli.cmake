add_test(NAME cli.contract COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_test.sh $<TARGET_FILE:halogen>)
set_tests_properties(cli.contract PROPERTIES LABELS unit)
