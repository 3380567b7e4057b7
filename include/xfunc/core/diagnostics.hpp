#pragma once
// Every compile-time diagnostic of xfunc, in one place (listed in docs/errors.md). Each message
// starts with the call it is about, names what is wrong and says the fix.

#define XFUNC_MSG_ELEMENT_TYPE \
  "xf: unsupported element type; use double, float, int64_t or bool"
#define XFUNC_MSG_GRAD_ARGNUM_RANGE \
  "xf::grad(f, argnums<...>): an argnum is out of range for the number of arguments f is called with; use indices in [-n, n)"
#define XFUNC_MSG_GRAD_ARGNUM_UNIQUE \
  "xf::grad(f, argnums<...>): an argnum appears twice; list each argument once"
#define XFUNC_MSG_GRAD_RETURN \
  "xf::grad(f): f must return an xf::tensor (a 0-d floating tensor), or std::pair<xf::tensor, Aux> when xf::has_aux is given"
#define XFUNC_MSG_HESSIAN_OPTIONS \
  "xf::hessian(f, opts...): the only options are xf::argnums<...> and xf::chunk_size(n)"
#define XFUNC_MSG_JACFWD_ARGNUM_RANGE \
  "xf::jacfwd(f, argnums<...>): an argnum is out of range for the number of arguments f is called with; use indices in [-n, n)"
#define XFUNC_MSG_JACFWD_ARGNUM_UNIQUE \
  "xf::jacfwd(f, argnums<...>): an argnum appears twice; list each argument once"
#define XFUNC_MSG_JACFWD_RETURN \
  "xf::jacfwd(f): f must return an xf::tensor or a std::tuple of tensors (with xf::has_aux: a std::pair of one of those and the aux value)"
#define XFUNC_MSG_JACREV_ARGNUM_RANGE \
  "xf::jacrev(f, argnums<...>): an argnum is out of range for the number of arguments f is called with; use indices in [-n, n)"
#define XFUNC_MSG_JACREV_ARGNUM_UNIQUE \
  "xf::jacrev(f, argnums<...>): an argnum appears twice; list each argument once"
#define XFUNC_MSG_JACREV_RETURN \
  "xf::jacrev(f): f must return an xf::tensor or a std::tuple of tensors (with xf::has_aux: a std::pair of one of those and the aux value)"
#define XFUNC_MSG_JVP_TANGENT_STRUCTURE \
  "xf::jvp(f, primals, tangents): tangents must have the same structure as primals (one tensor per primal tensor, in the same containers)"
#define XFUNC_MSG_LINEARIZE_TANGENT_TYPES \
  "xf::linearize: jvp_fn takes one tangent per primal, with the primals' types"
#define XFUNC_MSG_OPTION_TWICE \
  "xf: the same kind of option is given twice; pass each option once"
#define XFUNC_MSG_VJP_COTANGENT_TYPE \
  "xf::vjp: the cotangent passed to vjp_fn must have the same type (pytree structure) as f's output; pass one tensor per output tensor, in the same containers"
#define XFUNC_MSG_VJP_HAS_AUX_RETURN \
  "xf::vjp(f, xf::has_aux, ...): f must return std::pair<Out, Aux>"
#define XFUNC_MSG_VMAP_IN_DIMS_ARITY \
  "xf::vmap(f, in_dims(...)): in_dims needs exactly one entry per positional argument of f"
#define XFUNC_MSG_VMAP_IN_DIM_NON_TENSOR \
  "xf::vmap(f, in_dims(...)): an integer in_dim is given for an argument with no tensor, or a nested in_dims does not match the argument's tuple size; use xf::none for non-tensor arguments"
#define XFUNC_MSG_VMAP_OUT_DIMS_ARITY \
  "xf::vmap(f, out_dims(...)): out_dims needs one entry per output of f (or a single entry for all outputs)"
