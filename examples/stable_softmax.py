"""Stable softmax and log-sum-exp in vectorized numpy, with a stopped maximum.

softmax(x) = exp(x - m) / sum(exp(x - m)) and logsumexp(x) = m + log(sum(exp(x - m))) hold
for any constant m. Choosing m = max(x) keeps exp from overflowing; wrapping it in
stop_gradient tells adjit that m is a constant shift, so nothing is differentiated through
the max (whose derivative is only a subgradient at ties). The derivatives are exact anyway:
the gradient of logsumexp is softmax(x), and the Jacobian of softmax is diag(s) - s s^T.

This example checks, with adjit.vjp (cotangent^T J) and adjit.jvp (J tangent):
  1. the vjp of softmax against the analytic Jacobian, row by row (the whole Jacobian);
  2. logits around 1000: the stable versions stay finite, the naive ones give inf/nan;
  3. ties at the maximum: tied entries get identical values and gradients, equal to the
     analytic ones and to those of the same code without stop_gradient (where np.max's
     derivative, split equally among the ties, cancels out).
Run: .venv/bin/python examples/stable_softmax.py
"""
import numpy as np

import adjit
from adjit import stop_gradient


def softmax(x):
    z = np.exp(x - stop_gradient(np.max(x)))
    return z / np.sum(z)


def logsumexp(x):
    m = stop_gradient(np.max(x))
    return m + np.log(np.sum(np.exp(x - m)))


def softmax_unstopped(x):
    z = np.exp(x - np.max(x))
    return z / np.sum(z)


def logsumexp_unstopped(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def naive_softmax(x):
    z = np.exp(x)
    return z / np.sum(z)


def naive_logsumexp(x):
    return np.log(np.sum(np.exp(x)))


def exact_softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def analytic_jacobian(x):
    s = exact_softmax(x)
    return np.diag(s) - np.outer(s, s)


def jacobian_by_vjp(vjp_fn, x):
    """Row i of J is e_i^T J: one vjp per output."""
    rows = [vjp_fn(x, np.eye(x.shape[0])[i])[1] for i in range(x.shape[0])]
    return np.array(rows)


def main():
    soft_vjp = adjit.vjp(softmax)
    soft_jvp = adjit.jvp(softmax)
    lse_grad = adjit.value_and_grad(logsumexp)
    naive_vjp = adjit.vjp(naive_softmax)
    naive_grad = adjit.grad(naive_logsumexp)
    results = {}

    # 1. the vjp against the analytic Jacobian, on moderate logits
    rng = np.random.default_rng(0)
    x = rng.normal(size=6)
    J = jacobian_by_vjp(soft_vjp, x)
    J_exact = analytic_jacobian(x)
    t = rng.normal(size=6)
    jvp_err = np.abs(soft_jvp(x, t)[1] - J_exact @ t).max()
    results["jacobian_error"] = np.abs(J - J_exact).max()
    results["jvp_error"] = jvp_err
    value, g = lse_grad(x)
    results["lse_grad_error"] = np.abs(g - exact_softmax(x)).max()
    print("1. softmax Jacobian from adjit.vjp (one vjp per row) vs diag(s) - s s^T")
    print(f"   max |J_adjit - J_exact| = {results['jacobian_error']:.1e}   "
          f"(6 x 6, logits ~ N(0, 1))")
    print(f"   jvp: max |J t - J_exact t| = {jvp_err:.1e}")
    print(f"   max |grad logsumexp - softmax| = {results['lse_grad_error']:.1e}\n")

    # 2. logits around 1000
    big = 1000.0 + rng.normal(size=6)
    ct = rng.normal(size=6)
    s_big, vjp_big = soft_vjp(big, ct)
    exact_big = ct @ analytic_jacobian(big)
    lse_big, g_big = lse_grad(big)
    with np.errstate(over="ignore", invalid="ignore"):
        s_naive, vjp_naive = naive_vjp(big, ct)
        g_naive = naive_grad(big)
        lse_naive = naive_logsumexp(big)
    results["big_finite"] = bool(np.isfinite(s_big).all() and np.isfinite(vjp_big).all()
                                 and np.isfinite(g_big).all() and np.isfinite(lse_big))
    results["big_vjp_error"] = np.abs(vjp_big - exact_big).max()
    results["big_lse_grad_error"] = np.abs(g_big - s_big).max()
    results["big_lse_error"] = abs(lse_big - (big.max() + np.log(np.exp(big - big.max()).sum())))
    results["naive_broken"] = bool(not np.isfinite(vjp_naive).any()
                                   and not np.isfinite(g_naive).any())
    print("2. logits = 1000 + N(0, 1)")
    print(f"   stable softmax      : {np.round(s_big, 6)}")
    print(f"   stable vjp          : {np.round(vjp_big, 6)}")
    print(f"   analytic ct^T J     : {np.round(exact_big, 6)}   "
          f"max diff {results['big_vjp_error']:.1e}")
    print(f"   stable logsumexp    : {lse_big:.6f}, gradient - softmax: "
          f"{results['big_lse_grad_error']:.1e}")
    print(f"   naive softmax       : {s_naive}   (exp(1000) overflowed)")
    print(f"   naive vjp           : {vjp_naive}")
    print(f"   naive logsumexp     : {lse_naive}, gradient {g_naive}\n")

    # 3. ties at the maximum: np.max has no derivative there, but m only shifts
    tied = np.array([1000.0, 3.0, 1000.0, -2.0, 1000.0, 999.0])
    ct = np.array([0.3, -1.0, 2.0, 0.5, -0.7, 1.1])
    lse_t, g_t = lse_grad(tied)
    s_t, v_t = soft_vjp(tied, ct)
    lse_u, g_u = adjit.value_and_grad(logsumexp_unstopped)(tied)
    s_u, v_u = adjit.vjp(softmax_unstopped)(tied, ct)
    flat = adjit.grad(logsumexp)(np.full(4, 7.0))
    results["ties_identical"] = bool(g_t[0] == g_t[2] == g_t[4] and s_t[0] == s_t[2] == s_t[4])
    results["ties_error"] = max(np.abs(v_t - ct @ analytic_jacobian(tied)).max(),
                                np.abs(g_t - exact_softmax(tied)).max())
    results["ties_unstopped_diff"] = max(abs(lse_t - lse_u), np.abs(g_t - g_u).max(),
                                         np.abs(s_t - s_u).max(), np.abs(v_t - v_u).max())
    results["flat_gradient"] = flat
    print("3. ties: logits", tied, "(three entries at the max)")
    print(f"   grad logsumexp        : {g_t}")
    print(f"   tied entries          : softmax and gradient identical at all three: "
          f"{results['ties_identical']}")
    print(f"   vjp, grad vs analytic : max diff {results['ties_error']:.1e}")
    print(f"   without stop_gradient (np.max's derivative split among the ties, it cancels): "
          f"max diff {results['ties_unstopped_diff']:.1e}")
    exact = bool((flat == 0.25).all())
    print(f"   all four logits equal : gradient {flat} (exactly 1/4: {exact})")
    return results


if __name__ == "__main__":
    main()
