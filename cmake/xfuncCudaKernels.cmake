# xfunc_cuda_kernels: src/cuda/kernels.cu compiled by nvcc into a fatbinary (sm_90 code, and
# compute_90 PTX that newer GPUs compile when they load it), embedded by src/cuda/fatbin.cpp.
# XFUNC_CUDA_ARCHITECTURES adds real architectures (e.g. "80;90;100").
set(XFUNC_CUDA_ARCHITECTURES 90 CACHE STRING "Real GPU architectures xfunc's CUDA kernels are compiled for (PTX for the lowest is added)")
set(_xfunc_fatbin ${CMAKE_CURRENT_BINARY_DIR}/xfunc_kernels.fatbin)
set(_xfunc_gencode)
list(SORT XFUNC_CUDA_ARCHITECTURES COMPARE NATURAL)
foreach(arch IN LISTS XFUNC_CUDA_ARCHITECTURES)
  list(APPEND _xfunc_gencode -gencode arch=compute_${arch},code=sm_${arch})
endforeach()
list(GET XFUNC_CUDA_ARCHITECTURES 0 _xfunc_ptx_arch)
list(APPEND _xfunc_gencode -gencode arch=compute_${_xfunc_ptx_arch},code=compute_${_xfunc_ptx_arch})
file(GLOB_RECURSE _xfunc_kernel_deps CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/xfunc/*.hpp)
# the headers xfunc's own dependencies bring (xtensor, xsimd, Boost.Hana), wherever they are
set(_xfunc_dep_includes)
foreach(dep xtensor xsimd Boost::headers)
  if(TARGET ${dep})
    list(APPEND _xfunc_dep_includes "$<TARGET_PROPERTY:${dep},INTERFACE_INCLUDE_DIRECTORIES>")
  endif()
endforeach()
add_custom_command(
  OUTPUT ${_xfunc_fatbin}
  COMMAND ${XFUNC_NVCC} -std=c++20 --expt-relaxed-constexpr -Werror all-warnings -DXTENSOR_USE_XSIMD
          -ccbin ${CMAKE_CXX_COMPILER} ${_xfunc_gencode} -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/src
          "-I$<JOIN:${_xfunc_dep_includes},;-I>" -fatbin ${PROJECT_SOURCE_DIR}/src/cuda/kernels.cu -o ${_xfunc_fatbin}
  DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda/kernels.cu ${PROJECT_SOURCE_DIR}/src/cuda/kernel_support.hpp ${_xfunc_kernel_deps}
  COMMENT "nvcc: xfunc's CUDA kernels (sm_${XFUNC_CUDA_ARCHITECTURES})"
  COMMAND_EXPAND_LISTS VERBATIM)
add_library(xfunc_cuda_kernels STATIC ${PROJECT_SOURCE_DIR}/src/cuda/fatbin.cpp)
set_target_properties(xfunc_cuda_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_compile_definitions(xfunc_cuda_kernels PRIVATE XFUNC_FATBIN_PATH="${_xfunc_fatbin}")
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/cuda/fatbin.cpp PROPERTIES OBJECT_DEPENDS ${_xfunc_fatbin})
