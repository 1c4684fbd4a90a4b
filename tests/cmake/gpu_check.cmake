# scripts/gpu-check.sh run here with the GPU steps skipped (--dry-run; tests/apps/gpu_check_test.sh): the summary
# JSON and its fields, a non-zero exit when a correctness step fails (fault injection) or is skipped for time.
add_test(NAME apps.gpu_check_dry_run COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/gpu_check_test.sh)
set_tests_properties(apps.gpu_check_dry_run PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300
                     PROCESSORS 2)

# No false pass (tests/apps/gpu_check_false_pass_test.sh): a skipped GPU test, a missing or silent test binary,
# a device without a working driver and a machine without a GPU (no --dry-run) each make the check fail; fake
# nvidia-smi and fake test binaries, so it runs in every build; in a CUDA build the real GPU tests (which skip
# here) must fail the check too.
add_test(NAME apps.gpu_check_false_pass COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/gpu_check_false_pass_test.sh)
set_tests_properties(apps.gpu_check_false_pass PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300
                     PROCESSORS 2)
