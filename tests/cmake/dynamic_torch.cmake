# EvolveGCN-O cross-check (tests/dynamic/torch_crosscheck.sh): Halogen and the plain-PyTorch model of
# scripts/bench/torch_evolvegcn.py, from the same initial weights, give the same loss at every epoch (1 rank
# and 2 ranks). Skipped (77) without a python that has torch and h5py.
add_test(NAME dynamic.torch_crosscheck COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dynamic/torch_crosscheck.sh)
set_tests_properties(dynamic.torch_crosscheck PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}"
                     TIMEOUT 120 SKIP_RETURN_CODE 77 PROCESSORS 2)
