# cmake --install into a temporary prefix, then a tiny outside project (tests/install) finds it with
# find_package(Halogen), builds against Halogen::train and runs (graph::build_csr + kernels::spmm on 3 vertices).
add_test(NAME install.find_package
         COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DCONSUMER_DIR=${PROJECT_SOURCE_DIR}/tests/install
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/install_test -DGENERATOR=${CMAKE_GENERATOR}
                 -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
                 -DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM} -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
                 -P ${PROJECT_SOURCE_DIR}/tests/install/run.cmake)
# Typically 15-30 s (configure finds MPI, OpenMP and CUDA again; one file compiles).
set_tests_properties(install.find_package PROPERTIES LABELS unit TIMEOUT 120)
