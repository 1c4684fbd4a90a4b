# scripts/scaling/run_scaling.sh on tiny graphs (P = 1, 2): one command -> CSV, tables, PNGs
# (tests/scaling/scaling_smoke_test.sh). Label mpi: it launches mpiexec.
add_test(NAME scaling.smoke COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scaling/scaling_smoke_test.sh $<TARGET_FILE:halogen>)
set_tests_properties(scaling.smoke PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" SKIP_RETURN_CODE 77
                     TIMEOUT 300 PROCESSORS 2)
