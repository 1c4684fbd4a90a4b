# One CMake library per module; the link graph enforces DESIGN.md's arrows.
#
# A module's headers are included as "<module>/x.h". Each module gets its own include root in the build tree,
#   ${PROJECT_BINARY_DIR}/include/<module>/<module> -> the module's source directory (a symlink, so edits are seen),
# and only that root is a usage requirement of its target. A file can therefore include "comm/x.h" only when its
# target links Halogen::comm (directly or through a module that links it PUBLIC); an include against the arrows
# fails to compile ("comm/x.h: No such file or directory"). tests/cmake/arrows.cmake checks this.
#
# Installed, every module's headers are under <prefix>/include/halogen/<module>/ (so "core/buffer.h" resolves
# against include/halogen), its library under <prefix>/lib, and its target is exported as Halogen::<module>.
include(GNUInstallDirs)

# halogen_module_include_root(<target> <module> <PUBLIC|PRIVATE>): gives <target> the include root in which
# "<module>/..." resolves to ${CMAKE_CURRENT_SOURCE_DIR}/... (and nothing else resolves).
function(halogen_module_include_root target module scope)
  set(root ${PROJECT_BINARY_DIR}/include/${module})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${root}/${module} RESULT link_result SYMBOLIC)
  if(NOT link_result EQUAL 0)
    message(FATAL_ERROR "cannot create the include root ${root}/${module} -> ${CMAKE_CURRENT_SOURCE_DIR}: ${link_result}")
  endif()
  target_include_directories(${target} ${scope} $<BUILD_INTERFACE:${root}>)
endfunction()

# halogen_add_module(<module> <sources>...): the shared library halogen_<module>, alias Halogen::<module>,
# exported (install(EXPORT HalogenTargets)) as Halogen::<module>; installs it and the module's headers.
# Link other modules with target_link_libraries(halogen_<module> PUBLIC Halogen::<other>) only where
# DESIGN.md draws an arrow.
function(halogen_add_module module)
  set(target halogen_${module})
  add_library(${target} SHARED ${ARGN})
  add_library(Halogen::${module} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${module} OUTPUT_NAME halogen_${module})
  halogen_module_include_root(${target} ${module} PUBLIC)
  target_include_directories(${target} PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/halogen>)
  target_link_libraries(${target} PRIVATE Halogen::warnings)
  install(TARGETS ${target} EXPORT HalogenTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/halogen/${module}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
endfunction()
