# cmake -P: compiles (syntax only) a file that includes HEADERS with the include directories and definitions a
# module's own sources get, and checks the outcome against EXPECT:
#   visible  - it compiles (the positive control: allowed includes resolve, so a failure below means something)
#   hidden   - it fails because the (single) header is not found: the module cannot see that module
# Variables: CXX, INCLUDES and DEFINES ('|'-separated), HEADERS ('|'-separated), EXPECT, INCLUDE_ROOT (the build
# tree's include/ with one <module>/<module> link per module: a hidden header must exist there), WORK.
string(REPLACE "|" ";" includes "${INCLUDES}")
string(REPLACE "|" ";" defines "${DEFINES}")
string(REPLACE "|" ";" headers "${HEADERS}")
list(TRANSFORM includes PREPEND "-I")
list(TRANSFORM defines PREPEND "-D")

set(probe "")
foreach(header ${headers})
  string(REGEX MATCH "^[a-z_]+" module "${header}")
  if(NOT EXISTS ${INCLUDE_ROOT}/${module}/${header})
    message(FATAL_ERROR "arrows: ${header} is not a header of module ${module} (fix the test)")
  endif()
  string(APPEND probe "#include \"${header}\"\n")
endforeach()
string(APPEND probe "int main() { return 0; }\n")
file(MAKE_DIRECTORY ${WORK})
string(MAKE_C_IDENTIFIER "${HEADERS}" name)
set(source ${WORK}/${name}.cpp)
file(WRITE ${source} "${probe}")

execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only ${defines} ${includes} ${source}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "visible")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "arrows: ${HEADERS} should compile here but does not:\n${out}")
  endif()
elseif(EXPECT STREQUAL "hidden")
  if(rc EQUAL 0)
    message(FATAL_ERROR "arrows: ${HEADERS} compiles here, against DESIGN.md's arrows")
  endif()
  string(FIND "${out}" "${HEADERS}: No such file or directory" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "arrows: ${HEADERS} failed to compile, but not because it is hidden:\n${out}")
  endif()
else()
  message(FATAL_ERROR "arrows: EXPECT must be visible or hidden, not '${EXPECT}'")
endif()
