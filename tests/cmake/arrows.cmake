# DESIGN.md's arrows, enforced by the link graph (cmake/HalogenModule.cmake): each test compiles a one-line file
# with the include directories of a module's own sources. arrows.<module>.sees: one header of the module and of
# every module it may use compiles (the control). arrows.<module>.hides.<other>: including <other>'s header fails
# with "not found".
function(halogen_arrow_test name target expect headers)
  string(REPLACE ";" "|" headers "${headers}")
  add_test(NAME arrows.${name}
           COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER}
                   "-DINCLUDES=$<JOIN:$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>,|>"
                   "-DDEFINES=$<JOIN:$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>,|>"
                   "-DHEADERS=${headers}" -DEXPECT=${expect} -DINCLUDE_ROOT=${PROJECT_BINARY_DIR}/include
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/arrows/${name}
                   -P ${PROJECT_SOURCE_DIR}/tests/arrows/check_include.cmake)
  set_tests_properties(arrows.${name} PROPERTIES LABELS unit TIMEOUT 60)
endfunction()

# module -> a header of each module it may see (itself first; transitively through PUBLIC links)
set(arrow_sees_core core/buffer.h)
set(arrow_sees_graph graph/graph.h core/error.h)
set(arrow_sees_kernels kernels/ops.h core/buffer.h)
set(arrow_sees_comm comm/halo_exchange.h graph/halo_plan.h kernels/ops.h core/buffer.h)
set(arrow_sees_io io/graph_file.h graph/graph.h core/error.h)
set(arrow_sees_partition partition/partition_dir.h io/graph_file.h graph/graph.h)
set(arrow_sees_download download/catalog.h core/error.h)
set(arrow_sees_nn nn/model.h comm/communicator.h kernels/ops.h graph/local_graph.h)
set(arrow_sees_train train/trainer.h nn/model.h comm/communicator.h io/graph_file.h)
set(arrow_sees_apps apps/commands.h download/download.h train/trainer.h partition/partition_dir.h io/graph_file.h)
# module -> headers of modules it must not see (DESIGN.md's "Never" list, and everything not on an arrow)
set(arrow_hides_core graph/graph.h kernels/ops.h)
set(arrow_hides_graph kernels/ops.h comm/communicator.h io/graph_file.h)
set(arrow_hides_kernels graph/graph.h comm/communicator.h nn/model.h)
set(arrow_hides_comm nn/model.h train/trainer.h io/graph_file.h)
set(arrow_hides_io kernels/ops.h comm/communicator.h train/trainer.h partition/partition_dir.h)
set(arrow_hides_partition kernels/ops.h comm/communicator.h train/trainer.h)
set(arrow_hides_download graph/graph.h io/graph_file.h train/trainer.h)
set(arrow_hides_nn train/trainer.h io/graph_file.h partition/partition_dir.h)
set(arrow_hides_train partition/partition_dir.h apps/commands.h)

foreach(module core graph kernels comm io partition download nn train apps)
  if(module STREQUAL "apps")
    set(target halogen)
  else()
    set(target halogen_${module})
  endif()
  halogen_arrow_test(${module}.sees ${target} visible "${arrow_sees_${module}}")
  foreach(header ${arrow_hides_${module}})
    string(REGEX MATCH "^[a-z_]+" other "${header}")
    halogen_arrow_test(${module}.hides.${other} ${target} hidden ${header})
  endforeach()
endforeach()
