# Slurm end-to-end (label `slurm`): a throw-away one-node Slurm cluster on localhost runs the sbatch templates of
# scripts/slurm/ (tests/slurm/slurm_test.sh). Skipped (exit 77) only where slurm-wlm/munge are not installed.
add_test(NAME slurm.pipeline
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm/slurm_test.sh $<TARGET_FILE:halogen>
                 $<TARGET_FILE:mpi_smoke_test>)
# RUN_SERIAL: the cluster's slurmd offers 2 CPUs and the job uses both.
set_tests_properties(slurm.pipeline PROPERTIES LABELS slurm ENVIRONMENT "${HALOGEN_TEST_ENV}" SKIP_RETURN_CODE 77
                     TIMEOUT 300 RUN_SERIAL TRUE)
