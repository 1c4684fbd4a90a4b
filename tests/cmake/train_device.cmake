# `halogen train --device/--comm` (tests/train/device_*.sh):
#   train.device_flags  (label unit, every build): the flag errors are one line and exit 2;
#   train.device_parity (label gpu, CUDA builds): --device cuda reproduces --device cpu, 2 ranks sharing a GPU
#                       with --comm mpi reproduce 1 rank; exits 77 (skipped) without a usable GPU.
set(_halogen_train_device_env ${HALOGEN_TEST_ENV})
if(HALOGEN_HAVE_CUDA)
  list(APPEND _halogen_train_device_env "HALOGEN_HAVE_CUDA=1")
endif()
add_test(NAME train.device_flags COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train/device_flags.sh)
set_tests_properties(train.device_flags PROPERTIES LABELS unit ENVIRONMENT "${_halogen_train_device_env}"
                     SKIP_RETURN_CODE 77 TIMEOUT 120)
if(HALOGEN_HAVE_CUDA)
  add_test(NAME train.device_parity COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train/device_parity.sh)
  set_tests_properties(train.device_parity PROPERTIES LABELS gpu ENVIRONMENT "${_halogen_train_device_env}"
                       SKIP_RETURN_CODE 77 TIMEOUT 600 PROCESSORS 2)
endif()
