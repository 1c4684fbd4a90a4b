# Training end to end through `halogen generate|partition|train` under mpirun (tests/train/*.sh):
# partition invariance (P = 1, 2, 4; GCN, SAGE; overlap on/off), checkpoint/resume, bad input, and Cora's
# published accuracy (skipped without ../shared/data).
foreach(train_script partition_invariance checkpoint_resume bad_input cora_accuracy input_validation)
  add_test(NAME train.${train_script} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train/${train_script}.sh)
  set_tests_properties(train.${train_script} PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 600 PROCESSORS 2)
endforeach()
