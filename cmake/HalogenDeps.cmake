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
