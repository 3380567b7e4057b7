#pragma once
// The op conformance table: one row per op (sample inputs, an independent forward reference).
// Every row goes through the same checks (conformance.cpp):
//   forward      op(inputs) against the reference, in float64 and float32
//   gradcheck    vjp and jvp against central finite differences in float64
//   vmap         against a per-example loop, for every in_dims in {0,...,0} ∪ {-1, none}^n
//                minus all-none, with batch 2; and vmap of vmap (batches 2 and 3)
//   compositions vjp∘vjp and jvp∘vjp (gradgradcheck), vmap∘vjp, vmap∘jvp, on the floating
//                inputs (differentiable rows); jvp∘vmap and vjp∘vmap for every in_dims of the
//                floating inputs, and jvp∘vmap∘vmap, vjp∘vmap∘vmap, against per-example loops
//   make_fx      the traced graph replays to the eager value; traced under
//                functionalize(remove::mutations_and_views) it holds no view node and no
//                in-place node, and its output shares no memory with an input
// Adding an op adds a row in the rows_<family>.cpp of its family.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xvectorize.hpp>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

namespace conformance {
namespace xf = xfunc;
using tensors = std::vector<xf::tensor>;
using op_fn = std::function<xf::tensor(const tensors&)>;

struct op_row {
  std::string name;
  tensors inputs;                  // float64 samples (index tensors int64, masks bool)
  op_fn op;                        // the op under test
  op_fn reference;                 // independent forward reference (float64)
  bool differentiable = true;      // run gradcheck
  tensors inputs2 = {};            // second example for vmap (default: floating inputs perturbed)
  /// dtype of the result for float32 inputs when the op fixes it (e.g. to(f64)); by default a
  /// floating result must be float32
  std::optional<xf::dtype> dtype32 = std::nullopt;
};

std::vector<op_row>& rows();
/// Registers rows at static-initialisation time: `static const bool r = conformance::add({...});`
bool add(std::vector<op_row> rs);
/// Runs every check of the table on one row, each in its own Catch2 section (tests/cuda runs rows
/// that move data between devices through it, outside the table).
void check_row(const op_row& r);

/// Reference for pointwise ops: applies a scalar function elementwise (xtensor broadcasting).
op_fn ref_unary(std::function<double(double)> f);
op_fn ref_binary(std::function<double(double, double)> f);

/// Deterministic sample data of a shape: values spread in [lo, hi].
xf::tensor sample(const xf::shape_t& shape, double lo = -1.0, double hi = 1.0, std::uint64_t seed = 1);
/// A non-contiguous tensor with the same values as `t` (a transposed copy transposed back).
xf::tensor noncontiguous(const xf::tensor& t);

xt::xarray<double> to_x(const xf::tensor& t);
xf::tensor from_x(const xt::xarray<double>& a);

/// Reference reduction by plain loops: f maps the values of one reduced group (in row-major
/// order of the reduced dims) to a number. Empty dims reduce everything.
xf::tensor ref_reduce(const xf::tensor& x, std::vector<std::int64_t> dims, bool keepdim,
                      const std::function<double(const std::vector<double>&)>& f);
/// Reference matmul by plain loops, with torch's 1-d promotion and batch broadcasting.
xf::tensor ref_matmul(const xf::tensor& a, const xf::tensor& b);
}  // namespace conformance
