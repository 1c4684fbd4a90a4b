# cmake -P: installs a Halogen build into a fresh prefix, checks the install layout, then configures, builds and
# runs tests/install (find_package(Halogen) + Halogen::train) against that prefix only. Registered by
# tests/cmake/install.cmake. Variables: BUILD_DIR, CONSUMER_DIR (tests/install), WORK (scratch, wiped),
# GENERATOR, MAKE_PROGRAM, CXX_COMPILER, BUILD_TYPE.
foreach(var BUILD_DIR CONSUMER_DIR WORK GENERATOR MAKE_PROGRAM CXX_COMPILER BUILD_TYPE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install test: -D${var}=... is missing")
  endif()
endforeach()
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The layout other projects rely on.
foreach(file bin/halogen lib/libhalogen_core.so lib/libhalogen_graph.so lib/libhalogen_kernels.so
             lib/libhalogen_comm.so lib/libhalogen_io.so lib/libhalogen_partition.so lib/libhalogen_nn.so
             lib/libhalogen_train.so lib/cmake/Halogen/HalogenConfig.cmake lib/cmake/Halogen/HalogenTargets.cmake
             lib/cmake/Halogen/HalogenConfigVersion.cmake include/halogen/core/buffer.h include/halogen/graph/build.h
             include/halogen/kernels/ops.h include/halogen/comm/communicator.h include/halogen/io/graph_file.h
             include/halogen/partition/partition_dir.h include/halogen/nn/model.h include/halogen/train/trainer.h)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install test: ${prefix}/${file} was not installed")
  endif()
endforeach()
foreach(file include/halogen/apps/commands.h lib/libhalogen_warnings.so)
  if(EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install test: ${prefix}/${file} is installed but is not part of the public interface")
  endif()
endforeach()

# The installed CLI runs from the prefix (finds its libraries through its RPATH, $ORIGIN/../lib).
step("installed halogen --help" ${prefix}/bin/halogen --help)

# A project that knows only the prefix.
step("configuring tests/install" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK}/consumer -G ${GENERATOR}
     -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
     -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
step("building tests/install" ${CMAKE_COMMAND} --build ${WORK}/consumer)
step("running tests/install" ${WORK}/consumer/app)
message(STATUS "${step_output}")
if(NOT step_output MATCHES "spmm: 2 4 2")
  message(FATAL_ERROR "install test: unexpected output of tests/install:\n${step_output}")
endif()
