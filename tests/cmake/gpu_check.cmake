# scripts/gpu-check.sh run here with the GPU steps skipped (--dry-run; tests/apps/gpu_check_test.sh): the summary
# JSON and its fields, a non-zero exit when a correctness step fails (fault injection) or is skipped for time.
add_test(NAME apps.gpu_check_dry_run COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/gpu_check_test.sh)
set_tests_properties(apps.gpu_check_dry_run PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300
                     PROCESSORS 2)
