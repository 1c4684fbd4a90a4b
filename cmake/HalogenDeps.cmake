# Imported targets for the dependencies that ship no CMake config on Debian.

# METIS (libmetis-dev): header metis.h, library libmetis.
find_path(METIS_INCLUDE_DIR metis.h REQUIRED)
find_library(METIS_LIBRARY metis REQUIRED)
if(NOT TARGET METIS::metis)
  add_library(METIS::metis UNKNOWN IMPORTED)
  set_target_properties(METIS::metis PROPERTIES IMPORTED_LOCATION "${METIS_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${METIS_INCLUDE_DIR}")
endif()

# HDF5 (C API) as one target.
if(NOT TARGET Halogen::hdf5)
  add_library(Halogen::hdf5 INTERFACE IMPORTED)
  target_include_directories(Halogen::hdf5 INTERFACE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(Halogen::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(Halogen::hdf5 INTERFACE ${HDF5_DEFINITIONS})
endif()

# OpenBLAS with its cblas.h.
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread x86_64-linux-gnu/openblas-pthread REQUIRED)
if(NOT TARGET Halogen::blas)
  add_library(Halogen::blas INTERFACE IMPORTED)
  target_include_directories(Halogen::blas INTERFACE "${CBLAS_INCLUDE_DIR}")
  target_link_libraries(Halogen::blas INTERFACE ${BLAS_LIBRARIES})
endif()

# NCCL (ships with the CUDA toolkit here; otherwise libnccl-dev).
if(HALOGEN_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include REQUIRED)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64 REQUIRED)
  if(NOT TARGET NCCL::nccl)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  endif()
endif()

# PT-Scotch with 64-bit SCOTCH_Num (libptscotch-dev: Debian ships int32, int64 and long builds side by side;
# the default /usr/include/scotch is the int32 one). The static libraries of the int64 build are linked
# (position-independent; their shared ones carry the same soname as the int32 build), so nothing at run time
# can pick the wrong width. Optional: without it, `--method ptscotch` is a clear error.
find_path(PTSCOTCH_INCLUDE_DIR ptscotch.h PATHS /usr/include/scotch-int64 NO_DEFAULT_PATH)
find_library(PTSCOTCH_LIBRARY libptscotch.a PATHS /usr/lib/x86_64-linux-gnu/scotch-int64 /usr/lib/scotch-int64
             NO_DEFAULT_PATH)
find_library(SCOTCH_LIBRARY libscotch.a PATHS /usr/lib/x86_64-linux-gnu/scotch-int64 /usr/lib/scotch-int64
             NO_DEFAULT_PATH)
find_library(PTSCOTCHERR_LIBRARY libptscotcherr.a PATHS /usr/lib/x86_64-linux-gnu/scotch-int64
             /usr/lib/scotch-int64 NO_DEFAULT_PATH)
if(PTSCOTCH_INCLUDE_DIR AND PTSCOTCH_LIBRARY AND SCOTCH_LIBRARY AND PTSCOTCHERR_LIBRARY AND NOT TARGET Halogen::ptscotch)
  find_package(BZip2)
  find_package(LibLZMA)
  add_library(Halogen::ptscotch INTERFACE IMPORTED)
  target_include_directories(Halogen::ptscotch INTERFACE ${PTSCOTCH_INCLUDE_DIR})
  target_compile_definitions(Halogen::ptscotch INTERFACE HALOGEN_HAVE_PTSCOTCH=1)
  # --exclude-libs: the SCOTCH_* symbols stay inside the module that links them.
  target_link_libraries(Halogen::ptscotch INTERFACE ${PTSCOTCH_LIBRARY} ${SCOTCH_LIBRARY} ${PTSCOTCHERR_LIBRARY}
                        ZLIB::ZLIB $<$<BOOL:${BZIP2_FOUND}>:BZip2::BZip2> $<$<BOOL:${LIBLZMA_FOUND}>:LibLZMA::LibLZMA>
                        MPI::MPI_C Threads::Threads m "-Wl,--exclude-libs,libptscotch.a:libscotch.a:libptscotcherr.a")
  message(STATUS "PT-Scotch (64-bit SCOTCH_Num): ${PTSCOTCH_LIBRARY}")
elseif(NOT TARGET Halogen::ptscotch)
  message(STATUS "PT-Scotch (scotch-int64) not found: `halogen partition --method ptscotch` is not built")
endif()
