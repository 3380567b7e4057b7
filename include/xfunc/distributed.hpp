#pragma once
/// \file
/// xf::dist: collectives as ops over MPI communicators, and data-parallel helpers
/// (docs/distributed.md): MPI moves cpu tensors, NCCL cuda ones (with xfunc::cuda). Link the
/// CMake target xfunc::distributed.
#include <xfunc/dist/collectives.hpp>
#include <xfunc/dist/communicator.hpp>
#include <xfunc/dist/data_parallel.hpp>
#include <xfunc/xfunc.hpp>
#if defined(XFUNC_WITH_CUDA) && __has_include(<nccl.h>)
#include <xfunc/dist/nccl.hpp>  // NCCL for cuda tensors (loaded at run time)
#endif
