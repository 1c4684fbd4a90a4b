# io: end-to-end checks of `halogen convert|generate|info` and the Python converters.
foreach(io_script atomic_output bad_inputs cora_compare generate_info python_converters corpus convert_planetoid
                  convert_reddit)
  add_test(NAME io.${io_script} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/io/${io_script}.sh)
  set_tests_properties(io.${io_script} PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" SKIP_RETURN_CODE 77
                       TIMEOUT 120)
endforeach()
# About 30 processes (full disks, kills at each phase, two concurrent jobs): ~15 s idle, more under ASan.
set_tests_properties(io.atomic_output PROPERTIES TIMEOUT 300)
# Bounded-memory conversion against the in-memory one (OGB csv/npz, SNAP; about 30 MiB of generated data).
add_test(NAME io.convert_bounded COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/io/convert_bounded.sh)
set_tests_properties(io.convert_bounded PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}" SKIP_RETURN_CODE 77
                     TIMEOUT 300)
# `halogen download` against a local HTTP server on 127.0.0.1 (tests/download/): mirror end to end, resume,
# bad hash, HTTP errors, full disk, concurrent jobs, each published layout.
foreach(download_case ogb resume bad_hash http_error full_disk concurrent formats)
  add_test(NAME download.${download_case} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/download/download.sh ${download_case})
  set_tests_properties(download.${download_case} PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 180)
endforeach()
