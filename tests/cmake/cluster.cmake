# The emulated cluster (label `cluster`): hosts in network namespaces with shaped links, real Slurm daemons
# and OpenMPI over TCP between them (scripts/cluster/cluster.sh, tests/cluster/cluster_test.sh): 2 and 4 hosts
# through Slurm, a killed host, a dead link, a stopped rank, a slow host, elastic resume, and `down` leaving
# nothing behind. Skipped (exit 77) where namespaces cannot be made. RUN_SERIAL: the fault cases time how
# fast a job ends, and the Slurm nodes offer both cores.
foreach(mode slurm faults elastic)
  add_test(NAME cluster.${mode}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/cluster_test.sh ${mode} $<TARGET_FILE:halogen>)
  set_tests_properties(cluster.${mode} PROPERTIES LABELS cluster ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 420 RUN_SERIAL TRUE)
  # Not in the sanitizer build (label asan_slow): they test processes, links and launchers, not memory.
  set_property(TEST cluster.${mode} APPEND PROPERTY LABELS asan_slow)
endforeach()
