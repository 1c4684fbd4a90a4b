# apps.cuda_loading (label unit, every build): CPU commands map no CUDA library and `halogen --version` stays
# under 30 MiB resident; `train --device cuda` without a GPU or backend is one line and exit 2
# (tests/apps/cuda_loading.sh). Depends on the backend library being built next to bin/ (lib/), which building
# `halogen` does (kernels depends on halogen_cuda).
add_test(NAME apps.cuda_loading COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/apps/cuda_loading.sh)
set_tests_properties(apps.cuda_loading PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" TIMEOUT 180)
