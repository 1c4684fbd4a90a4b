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

# The GPU bundle starts on a bare machine (tests/apps/gpu_bundle_relocated_test.sh): made from this build in a
# fresh prefix and run in a mount namespace that hides /etc/openmpi, the system OpenMPI and PMIx and ssh/rsh:
# `halogen --version`, a singleton and a 2-rank CPU train through the bundle's mpiexec; without env.sh's launcher
# variables the same mpiexec must fail. CUDA builds only (the bundle carries the CUDA backend); skipped (77) only
# where mount namespaces are refused.
if(HALOGEN_HAVE_CUDA)
  add_test(NAME apps.gpu_bundle_relocated COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/gpu_bundle_relocated_test.sh)
  set_tests_properties(apps.gpu_bundle_relocated PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       TIMEOUT 600 PROCESSORS 2 SKIP_RETURN_CODE 77)
endif()
