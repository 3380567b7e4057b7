// xfunc's CUDA kernels (src/cuda/kernels.cu) compiled as host C++ into the fake driver, where
// each registers itself under its name (NOTE: [Kernels compiled twice] in
// src/cuda/kernel_support.hpp). A .cu file cannot be a C++ source of a CXX-only project, hence
// this file; the guard lets the fake driver build before kernels.cu exists.
#if __has_include("../../../src/cuda/kernels.cu")
#include "../../../src/cuda/kernels.cu"
#endif
