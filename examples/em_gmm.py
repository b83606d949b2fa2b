"""EM for a 1-D Gaussian mixture, the M-step by gradient ascent with adjit and stop_gradient.

The model: K = 3 components, x_n ~ sum_k pi_k N(mu_k, sigma_k^2). The parameters are one
vector theta = (a_1..a_K, mu_1..mu_K, s_1..s_K) with pi = softmax(a) and sigma = exp(s), so
every step of gradient ascent is unconstrained. With the log joint

    l_nk(theta) = log pi_k + log N(x_n | mu_k, sigma_k) = log p(x_n, z_n = k | theta),

the marginal log-likelihood is log p(x) = sum_n logsumexp_k l_nk, and the E-step gives the
responsibilities r_nk = softmax_k(l_nk) = p(z_n = k | x_n, theta).

EM's M-step maximizes the expected complete-data log-likelihood

    Q(theta | theta_e) = sum_n sum_k r_nk(theta_e) l_nk(theta),

with the responsibilities held fixed at the E-step's parameters theta_e. Here the function
Q(theta, theta_e, x) computes r inside, from theta_e, and wraps it in stop_gradient: the
weights are constants of the M-step objective, only l_nk(theta) is differentiated. The
M-step is a few steps of gradient ascent theta += lr/N * grad_theta Q (a generalized EM:
it increases Q, so log p(x) never decreases), and the whole EM loop, E-steps and inner
ascent steps, is one @numba.njit function calling the adjit gradient.

What it shows:
  (a) the fitted parameters recover the true ones (the data are drawn from known ones);
  (b) the fixed point is the closed-form EM's: the same loop with the textbook M-step
      (pi_k = N_k / N, mu_k and sigma_k the r-weighted mean and standard deviation) ends
      at the same parameters, because both stop where grad log p(x) = 0;
  (c) Fisher's identity, grad_theta Q(theta | theta_e) at theta_e = theta equals
      grad log p(x). Written as one function of theta, q_stopped(theta) = Q(theta, theta),
      r depends on the differentiated theta; stop_gradient cuts that dependence, and adjit's
      gradient of q_stopped equals adjit's gradient of a separate log p(x) to ~1e-15
      relative (both are float sums over the same terms);
  (d) without stop_gradient the same expression is a different function:
          q_unstopped(theta) = sum_nk r_nk l_nk = sum_nk r_nk (log p(x_n) + log r_nk)
                             = log p(x) + sum_nk r_nk log r_nk = log p(x) - H(r),
      because l_nk = log p(x_n) + log r_nk and sum_k r_nk = 1. Its gradient is
      grad log p(x) - grad H(r): ascending it also lowers the entropy of the
      responsibilities, pulling every point toward a hard assignment to one component
      (the components narrow, so its optimum is not the maximum-likelihood one).
      adjit's gradients satisfy grad q_unstopped - grad log p = grad(-H) to rounding.
      Gradient ascent on q_unstopped from the EM solution shows the pull: the mean
      entropy of r falls while log p(x) falls too.
The functions are explicit loops over points and components, with @numba.njit helpers
that the jitted loops share (numba has no np.max(..., axis=)); the same functions written
with 2-D broadcasting give the same gradients to 1e-14 but take 2-4 times longer to compile.
Run: .venv/bin/python examples/em_gmm.py
"""
import math
import time

import numba
import numpy as np

import adjit
from adjit import stop_gradient

K = 3
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit
def logsumexp_weights(theta):
    """log sum_k exp(a_k), so that log pi_k = a_k - logsumexp_weights(theta)."""
    m = -math.inf
    for k in range(K):
        m = max(m, theta[k])
    m = stop_gradient(m)                  # a constant shift, for stability only
    t = 0.0
    for k in range(K):
        t += math.exp(theta[k] - m)
    return m + math.log(t)


@numba.njit
def log_joint(theta, xn, k, lse_a):
    """l_nk = log pi_k + log N(x_n | mu_k, exp(s_k)); lse_a = logsumexp_weights(theta)."""
    z = (xn - theta[K + k]) * math.exp(-theta[2 * K + k])
    return theta[k] - lse_a - theta[2 * K + k] - HALF_LOG_2PI - 0.5 * z * z


@numba.njit
def responsibility(theta, xn, k, lse_a):
    """The E-step for one point: r_nk = exp(l_nk) / sum_j exp(l_nj)."""
    m = -math.inf
    for j in range(K):
        m = max(m, log_joint(theta, xn, j, lse_a))
    m = stop_gradient(m)
    t = 0.0
    for j in range(K):
        t += math.exp(log_joint(theta, xn, j, lse_a) - m)
    return math.exp(log_joint(theta, xn, k, lse_a) - m) / t


def Q(theta, theta_e, x):
    """EM's M-step objective: responsibilities from theta_e, held constant."""
    lse = logsumexp_weights(theta)
    lse_e = logsumexp_weights(theta_e)
    total = 0.0
    for n in range(x.shape[0]):
        for k in range(K):
            r = stop_gradient(responsibility(theta_e, x[n], k, lse_e))
            total += r * log_joint(theta, x[n], k, lse)
    return total


def q_stopped(theta, x):
    """Q(theta | theta): r computed from the differentiated theta itself, and stopped."""
    return Q(theta, theta, x)


def q_unstopped(theta, x):
    """The same expression without stop_gradient: log p(x) - H(r)."""
    lse = logsumexp_weights(theta)
    total = 0.0
    for n in range(x.shape[0]):
        for k in range(K):
            total += responsibility(theta, x[n], k, lse) * log_joint(theta, x[n], k, lse)
    return total


@numba.njit
def log_marginal(theta, x):
    """log p(x) = sum_n logsumexp_k l_nk."""
    lse = logsumexp_weights(theta)
    total = 0.0
    for n in range(x.shape[0]):
        m = -math.inf
        for k in range(K):
            m = max(m, log_joint(theta, x[n], k, lse))
        m = stop_gradient(m)
        t = 0.0
        for k in range(K):
            t += math.exp(log_joint(theta, x[n], k, lse) - m)
        total += m + math.log(t)
    return total


def neg_entropy(theta, x):
    """-H(r) = sum_nk r_nk log r_nk, with r a function of theta."""
    lse = logsumexp_weights(theta)
    total = 0.0
    for n in range(x.shape[0]):
        for k in range(K):
            r = responsibility(theta, x[n], k, lse)
            total += r * math.log(r)
    return total


@numba.njit
def responsibilities(theta, x):
    """All of them, an (N, K) array, for the closed-form M-step."""
    lse = logsumexp_weights(theta)
    r = np.empty((x.shape[0], K))
    for n in range(x.shape[0]):
        for k in range(K):
            r[n, k] = responsibility(theta, x[n], k, lse)
    return r


dQ = adjit.grad(Q)                     # gradient with respect to theta only
# for the checks (c) and (d); each compiles on its first call
d_log_marginal = adjit.grad(log_marginal)
d_q_stopped = adjit.grad(q_stopped)
d_q_unstopped = adjit.grad(q_unstopped)
d_neg_entropy = adjit.value_and_grad(neg_entropy)


@numba.njit
def em_gradient_ascent(theta0, x, n_em, n_inner, lr):
    """EM with the M-step as n_inner steps of gradient ascent on Q(. | theta_e)."""
    theta = theta0.copy()
    n = x.shape[0]
    loglik = np.empty(n_em + 1)
    loglik[0] = log_marginal(theta, x)
    for it in range(n_em):
        theta_e = theta.copy()                       # E-step: freeze the responsibilities
        for j in range(n_inner):                     # M-step: ascend Q(theta | theta_e)
            theta += (lr / n) * dQ(theta, theta_e, x)
        loglik[it + 1] = log_marginal(theta, x)
    return theta, loglik


@numba.njit
def em_closed_form(theta0, x, n_em):
    """Textbook EM: the M-step's maximizer in closed form, in the same parameterization."""
    theta = theta0.copy()
    n = x.shape[0]
    for it in range(n_em):
        r = responsibilities(theta, x)
        for k in range(K):
            nk = np.sum(r[:, k])
            mu = np.sum(r[:, k] * x) / nk
            var = np.sum(r[:, k] * (x - mu) ** 2) / nk
            theta[k] = math.log(nk / n)
            theta[K + k] = mu
            theta[2 * K + k] = 0.5 * math.log(var)
    return theta


def pack(pi, mu, sigma):
    return np.concatenate([np.log(pi), mu, np.log(sigma)])


def unpack(theta):
    """(pi, mu, sigma), components sorted by their mean."""
    a, mu, s = theta[:K], theta[K:2 * K], theta[2 * K:]
    pi = np.exp(a - a.max())
    pi /= pi.sum()
    order = np.argsort(mu)
    return pi[order], mu[order], np.exp(s)[order]


def _row(v):
    return "".join(f"{u:9.4f}" for u in v)


def synthetic(n, seed):
    rng = np.random.default_rng(seed)
    pi = np.array([0.3, 0.5, 0.2])
    mu = np.array([-4.0, 0.0, 3.0])
    sigma = np.array([0.7, 1.0, 0.5])
    z = rng.choice(K, size=n, p=pi)
    x = rng.normal(mu[z], sigma[z])
    return x, pi, mu, sigma


def main(n=2000, seed=0, n_em=150, n_inner=10, lr=0.4):
    x, pi_true, mu_true, sigma_true = synthetic(n, seed)
    # start: equal weights, means at the 1/6, 1/2, 5/6 quantiles, the data's spread
    theta0 = pack(np.full(K, 1.0 / K), np.quantile(x, [1 / 6, 1 / 2, 5 / 6]),
                  np.full(K, x.std()))

    t0 = time.perf_counter()
    em_gradient_ascent(theta0, x, 1, 1, lr)          # compiles dQ and the loop
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    theta, loglik = em_gradient_ascent(theta0, x, n_em, n_inner, lr)
    run_s = time.perf_counter() - t0
    pi, mu, sigma = unpack(theta)
    em_closed_form(theta0, x, 1)
    theta_cf = em_closed_form(theta0, x, 4 * n_em)
    pi_cf, mu_cf, sigma_cf = unpack(theta_cf)

    t_checks = time.perf_counter()
    # (c) Fisher's identity at the start, at an early EM iterate and at the fit
    theta_mid, _ = em_gradient_ascent(theta0, x, 3, n_inner, lr)     # an early EM iterate
    fisher = []
    for th in (theta0, theta_mid, theta):
        gl, gq = d_log_marginal(th, x), d_q_stopped(th, x)
        fisher.append((np.abs(gq - gl).max() / np.abs(gl).max(), np.abs(gq - gl).max()))

    # (d) without stop_gradient: grad q_unstopped - grad log p = grad(-H(r))
    entropy = {}
    for name, th in (("start", theta0), ("fit", theta)):
        gu, gl = d_q_unstopped(th, x), d_log_marginal(th, x)
        negH, gh = d_neg_entropy(th, x)
        entropy[name] = dict(diff=np.abs(gu - gl).max(), grad_negH=np.abs(gh).max(),
                             rel=np.abs((gu - gl) - gh).max() / np.abs(gh).max(),
                             value=abs(q_unstopped(th, x) - (log_marginal(th, x) + negH)))
    # ascend q_unstopped from the EM fit: responsibilities harden, log p(x) falls
    th_u = theta.copy()
    for _ in range(300):
        th_u += (lr / n) * d_q_unstopped(th_u, x)
    checks_s = time.perf_counter() - t_checks
    H_fit = -neg_entropy(theta, x) / n
    H_u = -neg_entropy(th_u, x) / n
    sigma_u = unpack(th_u)[2]

    res = dict(
        pi=pi, mu=mu, sigma=sigma, pi_true=pi_true, mu_true=mu_true, sigma_true=sigma_true,
        pi_cf=pi_cf, mu_cf=mu_cf, sigma_cf=sigma_cf,
        param_error=max(np.abs(pi - pi_true).max(), np.abs(mu - mu_true).max(),
                        np.abs(sigma - sigma_true).max()),
        fixed_point_diff=max(np.abs(pi - pi_cf).max(), np.abs(mu - mu_cf).max(),
                             np.abs(sigma - sigma_cf).max()),
        loglik=loglik, loglik_monotone=bool(np.all(np.diff(loglik) >= -1e-9 * n)),
        grad_logp_at_fit=float(np.abs(d_log_marginal(theta, x)).max() / n),
        fisher_rel_start=float(fisher[0][0]), fisher_rel_mid=float(fisher[1][0]),
        fisher_abs_fit=float(fisher[2][1]),
        grad_logp_scale=float(np.abs(d_log_marginal(theta0, x)).max()),
        entropy_rel_start=float(entropy["start"]["rel"]),
        entropy_rel_fit=float(entropy["fit"]["rel"]),
        entropy_diff_fit=float(entropy["fit"]["diff"]),
        entropy_value_error=max(entropy["start"]["value"], entropy["fit"]["value"]),
        entropy_fit=H_fit, entropy_unstopped=H_u,
        loglik_fit=float(log_marginal(theta, x)), loglik_unstopped=float(log_marginal(th_u, x)),
        sigma_unstopped=sigma_u, compile_s=compile_s, run_s=run_s, checks_s=checks_s)

    print(f"{n} points from a 3-component 1-D Gaussian mixture; EM with {n_em} E-steps, "
          f"each M-step {n_inner} gradient-ascent steps on Q (lr {lr}/N)")
    print(f"compiled em_gradient_ascent and adjit's grad(Q) in {compile_s:.2f} s; ran "
          f"{n_em * n_inner} gradient steps in {run_s * 1e3:.1f} ms")
    print(f"log p(x): {loglik[0]:.3f} at the start -> {loglik[-1]:.3f} "
          f"(never decreased: {res['loglik_monotone']}); max |grad log p|/N at the fit "
          f"{res['grad_logp_at_fit']:.1e}")
    print("(a) recovered parameters, components sorted by mean:")
    print(f"    {'':8}{'true':>24}{'EM, gradient M-step':>27}{'EM, closed form':>27}")
    for name, t, g, c in (("pi", pi_true, pi, pi_cf), ("mu", mu_true, mu, mu_cf),
                          ("sigma", sigma_true, sigma, sigma_cf)):
        print(f"    {name:8}{_row(t):>24}{_row(g):>27}{_row(c):>27}")
    print(f"    max |fitted - true| = {res['param_error']:.3f} (sampling error of {n} points)")
    print(f"(b) gradient-ascent EM vs closed-form EM ({4 * n_em} iterations): max parameter "
          f"difference {res['fixed_point_diff']:.1e}")
    print(f"(c) Fisher's identity, grad Q(theta|theta) with r stopped vs grad log p(x) "
          f"(max |grad log p| at the start {res['grad_logp_scale']:.0f}):")
    print(f"    relative difference {fisher[0][0]:.1e} at the start, {fisher[1][0]:.1e} after "
          f"3 EM iterations; at the fit, where both vanish, absolute {fisher[2][1]:.1e}")
    print(f"(d) without stop_gradient, q = log p(x) - H(r): "
          f"|q - (log p - H)| = {res['entropy_value_error']:.1e};")
    for name in ("start", "fit"):
        e = entropy[name]
        print(f"    at the {name:5}: max|grad q_unstopped - grad log p| = {e['diff']:9.3e}, "
              f"vs grad(-H): relative difference {e['rel']:.1e}")
    print(f"    ascending q_unstopped from the EM fit: mean entropy of r per point "
          f"{H_fit:.4f} -> {H_u:.4f} (harder assignments), log p(x) {res['loglik_fit']:.3f} "
          f"-> {res['loglik_unstopped']:.3f}, sigma {np.round(sigma, 3)} -> "
          f"{np.round(sigma_u, 3)}")
    print(f"(c) and (d) compiled four more gradients and ran the checks in {checks_s:.2f} s")
    return res


if __name__ == "__main__":
    main()
