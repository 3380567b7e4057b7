# The packages xfunc's INTERFACE target needs (shared by the build and the installed config).
include(CMakeFindDependencyMacro)
find_dependency(xtl)
find_dependency(xsimd)
find_dependency(xtensor)
find_dependency(Boost 1.71)
find_dependency(Threads)
if(NOT TARGET BLAS::BLAS)
  set(BLA_VENDOR OpenBLAS)
  find_dependency(BLAS)
endif()
# libzip (npz files, <xfunc/io/npz.hpp>), found by hand: Debian 12's libzip-config.cmake names
# command-line tools (zipcmp, ...) that libzip-dev does not install, so find_package(libzip) fails.
if(NOT TARGET xfunc::libzip)
  find_path(XFUNC_LIBZIP_INCLUDE_DIR zip.h)
  find_library(XFUNC_LIBZIP_LIBRARY zip)
  if(NOT XFUNC_LIBZIP_INCLUDE_DIR OR NOT XFUNC_LIBZIP_LIBRARY)
    set(_xfunc_libzip_message "xfunc needs libzip (zip.h and libzip.so; Debian: apt-get install libzip-dev)")
    if(CMAKE_FIND_PACKAGE_NAME STREQUAL "xfunc")  # in find_package(xfunc): report, don't stop
      set(xfunc_FOUND FALSE)
      set(xfunc_NOT_FOUND_MESSAGE "${_xfunc_libzip_message}")
      return()
    endif()
    message(FATAL_ERROR "${_xfunc_libzip_message}")
  endif()
  add_library(xfunc::libzip UNKNOWN IMPORTED)
  set_target_properties(xfunc::libzip PROPERTIES IMPORTED_LOCATION "${XFUNC_LIBZIP_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${XFUNC_LIBZIP_INCLUDE_DIR}")
endif()
