#!/usr/bin/python3
"""Writes tests/optim/reference_trajectories.inc: what torch.optim does, for test_optim.cpp.

Run with a Python that has torch (here: /usr/bin/python3, torch 1.13):

    /usr/bin/python3 tests/optim/generate_reference.py

Everything is float64. The C++ test needs no Python: it includes the generated file.

What is recorded:
  * trajectories of torch.optim.SGD (with and without momentum), Adam and AdamW over a fixed
    sequence of gradients on a two-leaf parameter pytree (w [2, 3], b [3]): the parameters after
    every step and the optimizer state (step, momentum_buffer / exp_avg / exp_avg_sq) at the end;
  * an Adam and an SGD-with-momentum trajectory driven by the gradients of a small fixed loss;
  * torch.nn.utils.clip_grad_norm_ on fixed gradients for several max_norm values;
  * meta-gradients (MAML): d/dp0 of val_loss(p2), where p2 is two optimizer updates of p0 on
    train_loss, computed with autograd through a functional copy of torch.optim's update (the copy
    is checked against torch.optim itself below before it is used).
"""
import inspect
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float64)
STEPS = 5
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_trajectories.inc")


def num(x):
    """A double literal that C++ reads back to the same value (repr is shortest round-trip)."""
    x = float(x)
    if math.isinf(x) or math.isnan(x):
        raise ValueError("non-finite reference value")
    r = repr(x)
    return r if ("e" in r or "." in r) else r + ".0"


def default(cls, name):
    return inspect.signature(cls.__init__).parameters[name].default


def vec(t):
    return "{" + ", ".join(num(v) for v in torch.as_tensor(t).reshape(-1).tolist()) + "}"


def vecs(ts):
    return "{" + ", ".join(vec(t) for t in ts) + "}"


# ---- fixed inputs ------------------------------------------------------------------------------
gen = torch.Generator().manual_seed(20240611)
w0 = torch.randn(2, 3, generator=gen)
b0 = torch.randn(3, generator=gen)
grads_w = [torch.randn(2, 3, generator=gen) for _ in range(STEPS)]
grads_b = [torch.randn(3, generator=gen) for _ in range(STEPS)]
grads_b[1][2] = 0.0  # an exactly-zero gradient entry (eps matters there)

# the small fixed loss: mean squared error of a linear model x @ w + b against y
X = torch.randn(4, 2, generator=gen)
Y = torch.randn(4, 3, generator=gen)
X_val = torch.randn(4, 2, generator=gen)
Y_val = torch.randn(4, 3, generator=gen)


def loss(w, b, x=X, y=Y):
    return ((x @ w + b - y) ** 2).mean()


# ---- configurations: (name, kind, lr, momentum, b1, b2, eps, weight_decay) ---------------------
CONFIGS = [
    ("sgd", "sgd", 0.1, 0.0, 0, 0, 0, 0),
    ("sgd_momentum", "sgd", 0.1, 0.9, 0, 0, 0, 0),
    ("adam_default", "adam", 0.01, 0, 0.9, 0.999, 1e-8, 0),
    ("adam_custom", "adam", 0.05, 0, 0.5, 0.9, 1e-3, 0),
    ("adam_b1_zero", "adam", 0.02, 0, 0.0, 0.5, 1e-8, 0),
    ("adamw_default", "adamw", 0.01, 0, 0.9, 0.999, 1e-8, 0.01),
    ("adamw_custom", "adamw", 0.1, 0, 0.8, 0.99, 1e-6, 0.1),
]


def make_torch_opt(kind, params, lr, momentum, b1, b2, eps, wd):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, betas=(b1, b2), eps=eps)
    return torch.optim.AdamW(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)


def state_of(opt, p, kind):
    st = opt.state[p]
    if kind == "sgd":
        buf = st.get("momentum_buffer")
        return [buf if buf is not None else torch.zeros_like(p), torch.zeros_like(p)], None
    return [st["exp_avg"], st["exp_avg_sq"]], float(st["step"])


def run(kind, lr, momentum, b1, b2, eps, wd, grad_fn):
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    opt = make_torch_opt(kind, [w, b], lr, momentum, b1, b2, eps, wd)
    traj_w, traj_b = [], []
    for k in range(STEPS):
        opt.zero_grad()
        gw, gb = grad_fn(k, w, b)
        w.grad, b.grad = gw.clone(), gb.clone()
        opt.step()
        traj_w.append(w.detach().clone())
        traj_b.append(b.detach().clone())
    (sa_w, sb_w), _ = state_of(opt, w, kind)
    (sa_b, sb_b), step = state_of(opt, b, kind)
    return traj_w, traj_b, (sa_w, sa_b, sb_w, sb_b), step


def fixed_grads(k, w, b):
    return grads_w[k], grads_b[k]


def loss_grads(k, w, b):
    return torch.autograd.grad(loss(w, b), (w, b))


# ---- a functional copy of torch.optim's updates, for autograd through them ---------------------
def f_sgd(p, g, buf, lr, momentum):
    if momentum != 0:
        buf = g if buf is None else buf * momentum + g
        g = buf
    return p - lr * g, buf


def f_adam(p, g, m, v, step, lr, b1, b2, eps, wd):
    p = p * (1 - lr * wd)
    m = m * b1 + (1 - b1) * g
    v = v * b2 + (1 - b2) * g * g
    bc1 = 1 - b1**step
    bc2 = 1 - b2**step
    return p - (lr / bc1) * m / (v.sqrt() / math.sqrt(bc2) + eps), m, v


def functional_run(kind, lr, momentum, b1, b2, eps, wd, w, b, steps, create_graph):
    """Applies `steps` updates on train-loss gradients; returns the final (w, b)."""
    ps = [w, b]
    bufs = [None, None]
    ms = [torch.zeros_like(w), torch.zeros_like(b)]
    vs = [torch.zeros_like(w), torch.zeros_like(b)]
    for k in range(steps):
        gs = torch.autograd.grad(loss(*ps), ps, create_graph=create_graph)
        if kind == "sgd":
            out = [f_sgd(p, g, buf, lr, momentum) for p, g, buf in zip(ps, gs, bufs)]
            ps, bufs = [o[0] for o in out], [o[1] for o in out]
        else:
            out = [f_adam(p, g, m, v, k + 1, lr, b1, b2, eps, wd if kind == "adamw" else 0.0)
                   for p, g, m, v in zip(ps, gs, ms, vs)]
            ps, ms, vs = [o[0] for o in out], [o[1] for o in out], [o[2] for o in out]
    return ps


lines = [
    "// Generated by tests/optim/generate_reference.py with torch " + torch.__version__ + " (float64).",
    "// Do not edit: rerun `/usr/bin/python3 tests/optim/generate_reference.py`.",
    "// Included by test_optim.cpp; `optim_ref` holds torch.optim's results for fixed inputs.",
    "namespace optim_ref {",
    "",
    "inline constexpr int steps = %d;" % STEPS,
    "// torch.optim's default hyper-parameters",
    "inline constexpr double sgd_momentum_default = %s;" % num(default(torch.optim.SGD, "momentum")),
    "inline constexpr double adam_b1_default = %s;" % num(default(torch.optim.Adam, "betas")[0]),
    "inline constexpr double adam_b2_default = %s;" % num(default(torch.optim.Adam, "betas")[1]),
    "inline constexpr double adam_eps_default = %s;" % num(default(torch.optim.Adam, "eps")),
    "inline constexpr double adamw_b1_default = %s;" % num(default(torch.optim.AdamW, "betas")[0]),
    "inline constexpr double adamw_b2_default = %s;" % num(default(torch.optim.AdamW, "betas")[1]),
    "inline constexpr double adamw_eps_default = %s;" % num(default(torch.optim.AdamW, "eps")),
    "inline constexpr double adamw_weight_decay_default = %s;" % num(default(torch.optim.AdamW, "weight_decay")),
    "// initial parameters: w [2, 3], b [3]",
    "inline const std::vector<double> w0 = %s;" % vec(w0),
    "inline const std::vector<double> b0 = %s;" % vec(b0),
    "// the gradient fed to the optimizer at each step",
    "inline const std::vector<std::vector<double>> grads_w = %s;" % vecs(grads_w),
    "inline const std::vector<std::vector<double>> grads_b = %s;" % vecs(grads_b),
    "// loss(w, b) = mean((x @ w + b - y)^2) on (x, y); the meta-gradient cases validate on (x_val, y_val)",
    "inline const std::vector<double> x = %s;  // [4, 2]" % vec(X),
    "inline const std::vector<double> y = %s;  // [4, 3]" % vec(Y),
    "inline const std::vector<double> x_val = %s;  // [4, 2]" % vec(X_val),
    "inline const std::vector<double> y_val = %s;  // [4, 3]" % vec(Y_val),
    "",
    "/// One torch.optim run: hyper-parameters, parameters after each step, state after the last.",
    "struct trajectory {",
    "  const char* name;",
    "  const char* kind;  // \"sgd\", \"adam\" or \"adamw\"",
    "  bool from_loss;    // gradients of loss(w, b) rather than grads_w / grads_b",
    "  double lr, momentum, b1, b2, eps, weight_decay;",
    "  std::vector<std::vector<double>> w, b;  // after step 1, 2, ...",
    "  // final state, per leaf: momentum_buffer (sgd) or exp_avg and exp_avg_sq (adam, adamw)",
    "  std::vector<double> first_w, first_b, second_w, second_b;",
    "  double step;  // torch's state['step'] (adam, adamw)",
    "};",
    "",
    "inline const std::vector<trajectory> trajectories = {",
]

runs = [(c, False) for c in CONFIGS]
runs.append((("adam_on_loss", "adam", 0.05, 0, 0.9, 0.999, 1e-8, 0), True))
runs.append((("sgd_momentum_on_loss", "sgd", 0.1, 0.9, 0, 0, 0, 0), True))
for (name, kind, lr, momentum, b1, b2, eps, wd), from_loss in runs:
    tw, tb, (fa_w, fa_b, fb_w, fb_b), step = run(kind, lr, momentum, b1, b2, eps, wd,
                                                  loss_grads if from_loss else fixed_grads)
    if from_loss:  # the functional copy must reproduce torch.optim before it is trusted below
        fw, fb = functional_run(kind, lr, momentum, b1, b2, eps, wd, w0.clone().requires_grad_(True),
                                b0.clone().requires_grad_(True), STEPS, False)
        assert torch.allclose(fw, tw[-1], rtol=1e-13, atol=1e-15), name
        assert torch.allclose(fb, tb[-1], rtol=1e-13, atol=1e-15), name
    lines.append('    {"%s", "%s", %s, %s, %s, %s, %s, %s, %s,' % (
        name, kind, "true" if from_loss else "false", num(lr), num(momentum), num(b1), num(b2), num(eps), num(wd)))
    lines.append("     %s," % vecs(tw))
    lines.append("     %s," % vecs(tb))
    lines.append("     %s, %s, %s, %s, %s}," % (vec(fa_w), vec(fa_b), vec(fb_w), vec(fb_b),
                                               num(step if step is not None else 0.0)))
lines.append("};")
lines.append("")

# ---- clip_grad_norm_ ---------------------------------------------------------------------------
lines += [
    "/// torch.nn.utils.clip_grad_norm_(grads, max_norm) on grads = (grads_w[0], grads_b[0]).",
    "struct clip_case {",
    "  double max_norm;",
    "  double total_norm;                // what clip_grad_norm_ returned",
    "  std::vector<double> w, b;        // the clipped gradients",
    "};",
    "inline const std::vector<clip_case> clips = {",
]
for max_norm in [1.0, 0.5, 100.0, 0.0]:
    gw = grads_w[0].clone().requires_grad_(False)
    gb = grads_b[0].clone()
    pw = torch.zeros_like(gw, requires_grad=True)
    pb = torch.zeros_like(gb, requires_grad=True)
    pw.grad, pb.grad = gw, gb
    total = torch.nn.utils.clip_grad_norm_([pw, pb], max_norm)
    lines.append("    {%s, %s, %s, %s}," % (num(max_norm), num(total), vec(pw.grad), vec(pb.grad)))
lines.append("};")
lines.append("")

# ---- meta-gradients through optimizer updates --------------------------------------------------
lines += [
    "/// d/d(w0, b0) of loss(w_n, b_n; x_val, y_val), where (w_n, b_n) is n updates of (w0, b0) on",
    "/// the gradients of loss(.; x, y), differentiated through the updates (MAML).",
    "struct meta_case {",
    "  const char* name;",
    "  const char* kind;",
    "  int inner_steps;",
    "  double lr, momentum, b1, b2, eps, weight_decay;",
    "  double meta_loss;",
    "  std::vector<double> grad_w, grad_b;",
    "};",
    "inline const std::vector<meta_case> metas = {",
]
META = [
    ("maml_sgd_1", "sgd", 1, 0.1, 0.0, 0, 0, 0, 0),
    ("maml_sgd_momentum_2", "sgd", 2, 0.1, 0.9, 0, 0, 0, 0),
    ("maml_adam_2", "adam", 2, 0.05, 0, 0.9, 0.999, 1e-8, 0),
    ("maml_adamw_2", "adamw", 2, 0.05, 0, 0.8, 0.99, 1e-6, 0.1),
]
for name, kind, n, lr, momentum, b1, b2, eps, wd in META:
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    wn, bn = functional_run(kind, lr, momentum, b1, b2, eps, wd, w, b, n, True)
    meta = loss(wn, bn, X_val, Y_val)
    gw, gb = torch.autograd.grad(meta, (w, b))
    lines.append('    {"%s", "%s", %d, %s, %s, %s, %s, %s, %s, %s, %s, %s},' % (
        name, kind, n, num(lr), num(momentum), num(b1), num(b2), num(eps), num(wd), num(meta), vec(gw), vec(gb)))
lines.append("};")
lines.append("")
lines.append("}  // namespace optim_ref")

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", OUT, file=sys.stderr)
