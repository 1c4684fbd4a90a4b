# `halogen bench spmm|gemm` run end to end on tiny sizes (a smoke test of the commands, never of timings):
# the exit status is 1 when any checked element is wrong, and the table must have one row per width/product.
add_test(NAME kernels_bench.spmm
         COMMAND bash -c "out=$($<TARGET_FILE:halogen> bench spmm --rows 3000 --avg-degree 5 --width 7 16 65 --iters 2 --warmup 1 --triad-mib 4 --graph rmat) || exit 1; echo \"$out\"; test $(echo \"$out\" | grep -c '^ ') -eq 3")
# BF16 X (kernels::spmm_bf16), with factors instead of values (gcn's form): the same checks.
add_test(NAME kernels_bench.spmm_bf16
         COMMAND bash -c "out=$($<TARGET_FILE:halogen> bench spmm --rows 3000 --avg-degree 5 --width 7 16 65 --iters 2 --warmup 1 --triad-mib 4 --scaled --precision bf16) || exit 1; echo \"$out\"; test $(echo \"$out\" | grep -c '^ ') -eq 3")
add_test(NAME kernels_bench.gemm
         COMMAND bash -c "out=$($<TARGET_FILE:halogen> bench gemm --rows 3000 --shapes 32x7 --iters 2 --warmup 1 --ref-size 64) || exit 1; echo \"$out\"; test $(echo \"$out\" | grep -c '^ ') -eq 3")
set_tests_properties(kernels_bench.spmm kernels_bench.spmm_bf16 kernels_bench.gemm PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}"
                     TIMEOUT 60)
