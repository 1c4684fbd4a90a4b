# Temporal training end to end (tests/dynamic/train.sh): Chickenpox MSE below the naive forecasts for every
# model, link-prediction MAP above random, bad input. Exits 77 (skipped) for the Chickenpox part without data.
add_test(NAME dynamic.train COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dynamic/train.sh)
set_tests_properties(dynamic.train PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 300
                     SKIP_RETURN_CODE 77 PROCESSORS 2)
