# Temporal training end to end (tests/dynamic/train.sh): Chickenpox MSE below the naive forecasts for every
# model, link-prediction MAP above random, bad input. Exits 77 (skipped) for the Chickenpox part without data.
add_test(NAME dynamic.train COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dynamic/train.sh)
set_tests_properties(dynamic.train PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300
                     SKIP_RETURN_CODE 77 PROCESSORS 2)
# Temporal per-model defaults (tests/dynamic/defaults.sh): T-GCN with only --task regression and a seed beats
# both naive forecasts on Chickenpox (1 rank, ~5 s); skipped (77) without ../shared/data.
add_test(NAME dynamic.defaults COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dynamic/defaults.sh)
set_tests_properties(dynamic.defaults PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 120
                     SKIP_RETURN_CODE 77)
