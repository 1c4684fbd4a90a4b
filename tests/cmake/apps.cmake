add_test(NAME info.memory_prediction
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/info_memory_test.sh $<TARGET_FILE:halogen>)
set_tests_properties(info.memory_prediction PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 120
                     PROCESSORS 2)
add_test(NAME plan.prediction
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/plan_test.sh $<TARGET_FILE:halogen> ${PROJECT_SOURCE_DIR})
set_tests_properties(plan.prediction PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 180
                     PROCESSORS 2)
add_test(NAME apps.sbatch_checks
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/sbatch_checks_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(apps.sbatch_checks PROPERTIES LABELS unit TIMEOUT 60)
