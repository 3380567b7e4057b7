#pragma once
// Every compile-time diagnostic of xfunc, in one place (listed in docs/errors.md). Each message
// starts with the call it is about, names what is wrong and says the fix.

#define XFUNC_MSG_ELEMENT_TYPE \
  "xf: unsupported element type; use double, float, int64_t or bool"
#define XFUNC_MSG_FUNCTIONALIZE_OPTIONS \
  "xf::functionalize(f, opts...): the only option is xf::remove::mutations or xf::remove::mutations_and_views"
#define XFUNC_MSG_GRAD_ARGNUM_RANGE \
  "xf::grad(f, argnums<...>): an argnum is out of range for the number of arguments f is called with; use indices in [-n, n)"
#define XFUNC_MSG_GRAD_ARGNUM_UNIQUE \
  "xf::grad(f, argnums<...>): an argnum appears twice; list each argument once"
#define XFUNC_MSG_GRAD_OPTIONS \
  "xf::grad(f, opts...): the only options are xf::argnums<...> and xf::has_aux (likewise for xf::grad_and_value)"
#define XFUNC_MSG_GRAD_RETURN \
  "xf::grad(f): f must return an xf::tensor (a 0-d floating tensor), or std::pair<xf::tensor, Aux> when xf::has_aux is given"
#define XFUNC_MSG_HESSIAN_OPTIONS \
  "xf::hessian(f, opts...): the only options are xf::argnums<...> and xf::chunk_size(n)"
#define XFUNC_MSG_JACFWD_ARGNUM_RANGE \
  "xf::jacfwd(f, argnums<...>): an argnum is out of range for the number of arguments f is called with; use indices in [-n, n)"
#define XFUNC_MSG_JACFWD_ARGNUM_UNIQUE \
  "xf::jacfwd(f, argnums<...>): an argnum appears twice; list each argument once"
#define XFUNC_MSG_JACFWD_OPTIONS \
  "xf::jacfwd(f, opts...): the only options are xf::argnums<...>, xf::has_aux, xf::randomness and xf::chunk_size(n)"
#define XFUNC_MSG_JACFWD_RETURN \
  "xf::jacfwd(f): f must return an xf::tensor or a std::tuple of tensors (with xf::has_aux: a std::pair of one of those and the aux value)"
#define XFUNC_MSG_JACREV_ARGNUM_RANGE \
  "xf::jacrev(f, argnums<...>): an argnum is out of range for the number of arguments f is called with; use indices in [-n, n)"
#define XFUNC_MSG_JACREV_ARGNUM_UNIQUE \
  "xf::jacrev(f, argnums<...>): an argnum appears twice; list each argument once"
#define XFUNC_MSG_JACREV_OPTIONS \
  "xf::jacrev(f, opts...): the only options are xf::argnums<...>, xf::has_aux and xf::chunk_size(n)"
#define XFUNC_MSG_JACREV_RETURN \
  "xf::jacrev(f): f must return an xf::tensor or a std::tuple of tensors (with xf::has_aux: a std::pair of one of those and the aux value)"
#define XFUNC_MSG_JVP_TANGENT_STRUCTURE \
  "xf::jvp(f, primals, tangents): tangents must have the same structure as primals (one tensor per primal tensor, in the same containers)"
#define XFUNC_MSG_LINEARIZE_TANGENT_TYPES \
  "xf::linearize: jvp_fn takes one tangent per primal, with the primals' types"
#define XFUNC_MSG_OPTIM_ADAMW_INIT_PARAMS \
  "xf::optim::adamw::init(params): params must be a pytree of xf::tensor leaves (a tensor, std::tuple, std::pair, std::array, std::vector or Boost.Hana struct)"
#define XFUNC_MSG_OPTIM_ADAMW_UPDATE_GRADS \
  "xf::optim::adamw::update(params, grads, state): grads must have the pytree type of params; pass the gradient xf::grad(loss) returns for params"
#define XFUNC_MSG_OPTIM_ADAMW_UPDATE_STATE \
  "xf::optim::adamw::update(params, grads, state): state must be the xf::optim::adam_state<Params> that adamw::init(params) or a previous adamw::update returned"
#define XFUNC_MSG_OPTIM_ADAM_INIT_PARAMS \
  "xf::optim::adam::init(params): params must be a pytree of xf::tensor leaves (a tensor, std::tuple, std::pair, std::array, std::vector or Boost.Hana struct)"
#define XFUNC_MSG_OPTIM_ADAM_UPDATE_GRADS \
  "xf::optim::adam::update(params, grads, state): grads must have the pytree type of params; pass the gradient xf::grad(loss) returns for params"
#define XFUNC_MSG_OPTIM_ADAM_UPDATE_STATE \
  "xf::optim::adam::update(params, grads, state): state must be the xf::optim::adam_state<Params> that adam::init(params) or a previous adam::update returned"
#define XFUNC_MSG_OPTIM_SGD_INIT_PARAMS \
  "xf::optim::sgd::init(params): params must be a pytree of xf::tensor leaves (a tensor, std::tuple, std::pair, std::array, std::vector or Boost.Hana struct)"
#define XFUNC_MSG_OPTIM_SGD_UPDATE_GRADS \
  "xf::optim::sgd::update(params, grads, state): grads must have the pytree type of params; pass the gradient xf::grad(loss) returns for params"
#define XFUNC_MSG_OPTIM_SGD_UPDATE_STATE \
  "xf::optim::sgd::update(params, grads, state): state must be the xf::optim::sgd_state<Params> that sgd::init(params) or a previous sgd::update returned"
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
#define XFUNC_MSG_VMAP_OPTIONS \
  "xf::vmap(f, opts...): the only options are xf::in_dims(...), xf::out_dims(...), xf::randomness and xf::chunk_size(n)"
#define XFUNC_MSG_VMAP_OUT_DIMS_ARITY \
  "xf::vmap(f, out_dims(...)): out_dims needs one entry per output of f (or a single entry for all outputs)"

// ---- xf::custom_op: schema inference from fn's signature (schema/signature.hpp) ----
// Parameter positions count from 0, like the default names a0, a1, ... of the schema; K is
// stringized, so each position gets its own literal (static_assert needs one).
#define XFUNC_MSG_CUSTOM_OP_CALLABLE \
  "xf::custom_op(name, fn): fn must be a function, a function pointer, a non-generic lambda or functor, or a std::function (its signature gives the schema)"
#define XFUNC_MSG_CUSTOM_OP_PARAM_FLOAT(K) \
  "xf::custom_op(name, fn): parameter " #K " of fn has type float; use double"
#define XFUNC_MSG_CUSTOM_OP_PARAM_INT(K) \
  "xf::custom_op(name, fn): parameter " #K " of fn has an integer type other than int64_t (int, unsigned, short, int32_t, ...); use int64_t"
#define XFUNC_MSG_CUSTOM_OP_PARAM_OTHER(K) \
  "xf::custom_op(name, fn): parameter " #K " of fn has an unsupported type; use one of the types listed in API.md §4.1 (tensor, tensor&, std::optional<tensor>, std::vector<tensor>, double, int64_t, bool, std::vector<int64_t>, std::string, xf::dtype, xf::device, std::optional<T>)"
#define XFUNC_MSG_CUSTOM_OP_RETURN \
  "xf::custom_op(name, fn): fn must return xf::tensor, std::tuple<xf::tensor, ...>, std::vector<xf::tensor> or void"

// ---- xf::custom_op<"schema">(fn): a written-out schema (schema/parse.hpp, schema/match.hpp) ----
// A message cannot quote the schema (static_assert takes a literal): the note after it does,
// giving positions (from 0), the schema text from the fault on, and the types (NOTE: [Schema
// text notes]). The schema's syntax:
#define XFUNC_MSG_SCHEMA_UNBALANCED \
  "xf::custom_op<\"...\">(fn): the schema's parentheses do not balance; the note below gives the position of the unmatched one and the text from there"
#define XFUNC_MSG_SCHEMA_OP_NAME \
  "xf::custom_op<\"...\">(fn): the schema must start with the op name, ns::name (two identifiers joined by ::); the note below gives the position of the fault and the text from there"
#define XFUNC_MSG_SCHEMA_OPEN_PAREN \
  "xf::custom_op<\"...\">(fn): expected ( after the op name ns::name, then the parameters; the note below gives the position and the text from there"
#define XFUNC_MSG_SCHEMA_PARAM_TYPE \
  "xf::custom_op<\"...\">(fn): unknown parameter type in the schema; use Tensor, Tensor(a!), Tensor?, Tensor[], float, int, bool, int[], str, ScalarType, Device, or T? for a non-tensor T; the note below gives the parameter, the character position and the text from there"
#define XFUNC_MSG_SCHEMA_ALIAS \
  "xf::custom_op<\"...\">(fn): the only alias annotation is Tensor(a!) (any alias set, then !), on a Tensor that fn writes in place (xf::tensor&); a read-only Tensor(a) is rejected because outputs never alias inputs (write Tensor); the note below gives the parameter, the character position and the text from there"
#define XFUNC_MSG_SCHEMA_PARAM_NAME \
  "xf::custom_op<\"...\">(fn): a parameter of the schema has no name; write Type name (the name an identifier); the note below gives the parameter, the character position and the text from there"
#define XFUNC_MSG_SCHEMA_DUPLICATE_NAME \
  "xf::custom_op<\"...\">(fn): two parameters of the schema have the same name; rename one; the note below gives the second one's parameter and character position and the text from there"
#define XFUNC_MSG_SCHEMA_DUPLICATE_ALIAS \
  "xf::custom_op<\"...\">(fn): two Tensor(x!) parameters of the schema share an alias set; give each its own (Tensor(a!), Tensor(b!), ...); the note below gives the second one's parameter and character position and the text from there"
#define XFUNC_MSG_SCHEMA_SEPARATOR \
  "xf::custom_op<\"...\">(fn): expected , or ) after a parameter of the schema (Type name; default values are not part of a schema); the note below gives the parameter, the character position and the text from there"
#define XFUNC_MSG_SCHEMA_ARROW \
  "xf::custom_op<\"...\">(fn): expected -> and the return type after the schema's parameters; the note below gives the position and the text from there"
#define XFUNC_MSG_SCHEMA_RETURN \
  "xf::custom_op<\"...\">(fn): unknown return type in the schema; use Tensor, (Tensor, ...), Tensor[] or (); the note below gives the position and the text from there"
#define XFUNC_MSG_SCHEMA_TRAILING \
  "xf::custom_op<\"...\">(fn): unexpected text after the schema's return type; the note below gives the position and the text from there"
// The schema against fn's signature. K is the parameter position, stringized like
// XFUNC_MSG_CUSTOM_OP_PARAM_FLOAT's; the note repeats it with both types.
#define XFUNC_MSG_SCHEMA_PARAM_TYPE_MISMATCH(K) \
  "xf::custom_op<\"...\">(fn): parameter " #K " has one type in the schema and another in fn; the note below names both (schema_vs_fn_param<position, schema type, fn's parameter type>); make them agree (API.md §4.1 maps each C++ type to its schema type)"
#define XFUNC_MSG_SCHEMA_PARAM_READ_ONLY(K) \
  "xf::custom_op<\"...\">(fn): parameter " #K " is Tensor(a!) (written in place) in the schema but fn takes it read-only (const xf::tensor& or xf::tensor, named in the note below); take xf::tensor& in fn, or write Tensor in the schema"
#define XFUNC_MSG_SCHEMA_PARAM_NOT_ANNOTATED(K) \
  "xf::custom_op<\"...\">(fn): parameter " #K " is Tensor in the schema but fn takes xf::tensor& (writes it in place); write Tensor(a!) in the schema, or take const xf::tensor& in fn"
#define XFUNC_MSG_SCHEMA_EXTRA_PARAM \
  "xf::custom_op<\"...\">(fn): fn has more parameters than the schema; the note below names fn's first parameter the schema lacks (fn_param_not_in_schema<position, type>); add it to the schema or remove it from fn"
#define XFUNC_MSG_SCHEMA_MISSING_PARAM \
  "xf::custom_op<\"...\">(fn): fn has fewer parameters than the schema; the note below names the schema's first parameter fn lacks (schema_param_not_in_fn<position, schema type>); add it to fn or remove it from the schema"
#define XFUNC_MSG_SCHEMA_RETURN_MISMATCH \
  "xf::custom_op<\"...\">(fn): the schema's return type and fn's disagree; the note below names both (schema_vs_fn_return<schema return, fn's return type>); Tensor is xf::tensor, (Tensor, ...) std::tuple<xf::tensor, ...>, Tensor[] std::vector<xf::tensor>, () void"

// xf::autograd::function (extend/function.hpp)
#define XFUNC_MSG_FUNCTION_SETUP_CONTEXT \
  "xf::autograd::function<Derived>::apply: Derived must define static void setup_context(xf::autograd::context&, const std::tuple<Args...>& inputs, const Out& output); add it (it may be empty)"
#define XFUNC_MSG_FUNCTION_VMAP_BOTH \
  "xf::autograd::function<Derived>::apply: Derived defines both vmap and generate_vmap_rule; keep one of them"
#define XFUNC_MSG_FUNCTION_OUTPUT \
  "xf::autograd::function<Derived>::apply: forward must return xf::tensor or std::tuple<xf::tensor, ...>"
#define XFUNC_MSG_FUNCTION_BACKWARD_ARITY \
  "xf::autograd::function<Derived>::apply: backward must return one gradient per tensor argument of forward (an xf::tensor, or a std::tuple of them; an undefined tensor means zero)"
#define XFUNC_MSG_COND_BRANCH_TYPES \
  "xf::cond(pred, true_fn, false_fn, operands...): true_fn and false_fn must return the same C++ type (the same pytree structure); make both branches return e.g. xf::tensor, or the same std::tuple / std::pair of tensors"
