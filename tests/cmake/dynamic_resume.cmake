# Temporal checkpoint/resume is exact (tests/dynamic/resume.sh): every temporal model and task on 2 ranks.
add_test(NAME dynamic.resume COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dynamic/resume.sh)
set_tests_properties(dynamic.resume PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 600 PROCESSORS 2)
