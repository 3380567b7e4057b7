#pragma once
/// \file
/// xf::dist: collectives as ops over MPI communicators, and data-parallel helpers
/// (docs/distributed.md). Link the CMake target xfunc::distributed.
#include <xfunc/dist/collectives.hpp>
#include <xfunc/dist/communicator.hpp>
#include <xfunc/dist/data_parallel.hpp>
#include <xfunc/xfunc.hpp>
