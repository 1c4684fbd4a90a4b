# The Python package (python/): `pip install ./python` into a venv with --system-site-packages, then pytest
# python/tests (tests/python/run_pytest.sh). Runs `halogen train` on 2 ranks (Cora) inside; skipped (77) without
# a python that has numpy, h5py and pytest.
add_test(NAME python.pytest COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python/run_pytest.sh
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(python.pytest PROPERTIES LABELS mpi ENVIRONMENT "${HALOGEN_TEST_ENV}" SKIP_RETURN_CODE 77
                     TIMEOUT 600 PROCESSORS 2)
