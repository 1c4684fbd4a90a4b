# GIN and APPNP end to end (tests/train/cora_models.sh): Cora accuracy and 2-rank = 1-rank (skipped without
# ../shared/data); --edge-weight end to end (tests/train/edge_weight.sh: info, partition, 2 ranks = 1 rank, the
# error on an unweighted graph); GAT on Cora (tests/train/cora_gat.sh: 2-rank = 1-rank, an accuracy floor);
# GCNII on Cora at 64 layers (tests/train/cora_gcnii.sh: 2-rank = 1-rank, an accuracy floor, predict).
# Per-epoch P-vs-1 losses on synthetic graphs are in train.partition_invariance and
# mpi_train_partition_invariance_test.
foreach(models_script cora_models cora_gat cora_gcnii edge_weight)
  add_test(NAME train.${models_script} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train/${models_script}.sh)
  set_tests_properties(train.${models_script} PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 1500 PROCESSORS 2)
endforeach()
