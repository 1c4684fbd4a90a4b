# `halogen bench halo|allreduce` (label mpi): #wrong = 0 on 2 and 4 ranks, synthetic plans and a real partition
# directory; --inject-error must be caught (tests/bench/comm_bench_test.sh).
foreach(np 2 4)
  add_test(NAME comm_bench.np${np}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench/comm_bench_test.sh $<TARGET_FILE:halogen> ${np})
  set_tests_properties(comm_bench.np${np} PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300
                       PROCESSORS 2)
endforeach()
