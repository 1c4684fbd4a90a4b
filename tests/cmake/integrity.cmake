# integrity: corrupt input is refused before anything is trained on or written (issue 15). One byte flipped in
# every dataset of a shard (`halogen train`), of a graph file (`halogen partition`, `halogen info`) and of
# assignment.h5 (`halogen info DIR --check`), and in every member `halogen convert --format npz` reads
# (tests/integrity/flip_bytes.py; skipped without h5py). The unit tests io_h5_checksum_test and
# io_npz_crc_test flip every byte of a chunk / member in-process.
if(TARGET io_h5_checksum_test)
  target_link_libraries(io_h5_checksum_test PRIVATE Halogen::hdf5)  # locates chunks with H5Dget_chunk_info
endif()
foreach(integrity_case shard graph npz)
  add_test(NAME integrity.${integrity_case}_flips
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integrity/flip_bytes.py ${integrity_case})
  set_tests_properties(integrity.${integrity_case}_flips PROPERTIES LABELS unit ENVIRONMENT "${HALOGEN_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
set_tests_properties(integrity.shard_flips PROPERTIES LABELS mpi PROCESSORS 2)
