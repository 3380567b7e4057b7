# pkg-config files for builds without CMake, written from what this configuration found, so they
# name the same dependencies as the CMake package: xfunc.pc (header-only), xfunc-kernels.pc (adds
# the precompiled kernel library) and xfunc-distributed.pc (adds MPI).

# The include directories of the header-only dependencies, as -I flags (none for the system's).
set(_xfunc_pc_cflags "")
foreach(_dep xtensor xtl xsimd Boost::headers xfunc::libzip)
  if(TARGET ${_dep})
    get_target_property(_dirs ${_dep} INTERFACE_INCLUDE_DIRECTORIES)
    foreach(_dir IN LISTS _dirs)
      if(_dir AND NOT _dir STREQUAL "/usr/include" AND NOT _dir MATCHES "^\\$<" AND NOT "-I${_dir}" IN_LIST _xfunc_pc_cflags)
        list(APPEND _xfunc_pc_cflags "-I${_dir}")
      endif()
    endforeach()
  endif()
endforeach()
list(JOIN _xfunc_pc_cflags " " XFUNC_PC_DEP_CFLAGS)
# Libraries: BLAS and libzip as CMake found them (full paths), and the thread library.
list(JOIN BLAS_LIBRARIES " " XFUNC_PC_BLAS_LIBS)
set(XFUNC_PC_LIBS "${XFUNC_PC_BLAS_LIBS} ${XFUNC_LIBZIP_LIBRARY} -pthread")

# Relocatable: the prefix is found from the .pc file's own place, so `cmake --install --prefix P`
# into any P gives working files.
file(RELATIVE_PATH _xfunc_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
set(XFUNC_PC_PREFIX "\${pcfiledir}/${_xfunc_pc_up}")

configure_file(cmake/xfunc.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/xfunc.pc @ONLY)
set(_xfunc_pc_files ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/xfunc.pc)
if(XFUNC_BUILD_KERNELS)
  if(XFUNC_KERNELS_SHARED)
    # (the run path: an installation anywhere works without LD_LIBRARY_PATH; the loader still
    # picks the copy for the CPU from libdir's glibc-hwcaps directories)
    set(XFUNC_PC_KERNELS_LIBS "-L\${libdir} -Wl,-rpath,\${libdir} -lxfunc_kernels")
  else()
    set(XFUNC_PC_KERNELS_LIBS "\${libdir}/libxfunc_kernels.a")
  endif()
  configure_file(cmake/xfunc-kernels.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/xfunc-kernels.pc @ONLY)
  list(APPEND _xfunc_pc_files ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/xfunc-kernels.pc)
endif()
if(XFUNC_HAS_DISTRIBUTED)
  set(_mpi_cflags "")
  foreach(_dir IN LISTS MPI_CXX_INCLUDE_DIRS)
    list(APPEND _mpi_cflags "-I${_dir}")
  endforeach()
  list(JOIN _mpi_cflags " " XFUNC_PC_MPI_CFLAGS)
  list(JOIN MPI_CXX_LIBRARIES " " XFUNC_PC_MPI_LIBS)
  configure_file(cmake/xfunc-distributed.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/xfunc-distributed.pc @ONLY)
  list(APPEND _xfunc_pc_files ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/xfunc-distributed.pc)
endif()
install(FILES ${_xfunc_pc_files} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
