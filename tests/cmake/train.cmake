# Training end to end through `halogen generate|partition|train` under mpirun (tests/train/*.sh):
# partition invariance (P = 1, 2, 4; GCN, SAGE; overlap on/off), checkpoint/resume, the --resume rules, bad
# input, run reports (metrics header, --config, progress, TensorBoard), and Cora's published accuracy and
# `halogen predict` from a --save-best checkpoint (skipped without ../shared/data), input validation, `predict`
# on a nearly full disk (a private tmpfs; the earlier file survives byte-identical), a rank killed mid-run (the
# job ends at once naming it), signals in each phase of train and predict (one line, exit 128 + signal).
foreach(train_script partition_invariance checkpoint_resume checkpoint_rules predict_cora bad_input cora_accuracy
        run_reports input_validation temporal_memory predict_full_disk address_space_limit output_locks trace lost_rank interrupted
        recompute vertex_order bf16 cora_bf16)
  add_test(NAME train.${train_script} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train/${train_script}.sh)
  set_tests_properties(train.${train_script} PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 600 PROCESSORS 2)
endforeach()
# Signals sent at timed moments: left to the release run (under ASan a run's phases take other times).
set_property(TEST train.interrupted APPEND PROPERTY LABELS asan_slow)
# 30 Cora runs (15 of GAT for 300 epochs): minutes under ASan; train.bf16 runs the same BF16 code there.
set_property(TEST train.cora_bf16 APPEND PROPERTY LABELS asan_slow)
