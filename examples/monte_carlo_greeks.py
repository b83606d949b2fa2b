"""Monte Carlo Greeks: pathwise sensitivities of a simulated option price, from adjit.

A European call under geometric Brownian motion, priced by simulating paths step by step with
numba's generator, as a numba user writes it: the function seeds its own generator, so the
same paths come out at every call (common random numbers). adjit.grad of the price gives the
pathwise estimators of delta (dP/dS0), vega (dP/dsigma) and rho (dP/dr) from one backward
sweep over the same paths: each draw runs once, in the forward sweep, and the backward sweep
reads what it drew. They are checked against finite differences of the same function (which
see the same draws: exact to rounding) and against Black-Scholes' closed forms (within the
Monte Carlo error).
Run: .venv/bin/python examples/monte_carlo_greeks.py
"""
import math
import time

import numba
import numpy as np

import adjit


@numba.njit
def call_price(params, strike, maturity, n_paths, n_steps, seed):
    """Discounted mean payoff max(S_T - K, 0) over simulated paths; params = (S0, sigma, r)."""
    s0, sigma, rate = params[0], params[1], params[2]
    np.random.seed(seed)
    dt = maturity / n_steps
    drift = (rate - 0.5 * sigma * sigma) * dt
    vol = sigma * math.sqrt(dt)
    total = 0.0
    for p in range(n_paths):
        s = s0
        for t in range(n_steps):
            z = np.random.standard_normal()
            s = s * math.exp(drift + vol * z)
        total += max(s - strike, 0.0)
    return math.exp(-rate * maturity) * total / n_paths


def black_scholes(s0, sigma, rate, strike, maturity):
    """Price and (delta, vega, rho) of the call in closed form."""
    def cdf(v):
        return 0.5 * math.erfc(-v / math.sqrt(2.0))
    sq = sigma * math.sqrt(maturity)
    d1 = (math.log(s0 / strike) + (rate + 0.5 * sigma * sigma) * maturity) / sq
    d2 = d1 - sq
    disc = math.exp(-rate * maturity)
    price = s0 * cdf(d1) - strike * disc * cdf(d2)
    pdf = math.exp(-0.5 * d1 * d1) / math.sqrt(2.0 * math.pi)
    return price, np.array([cdf(d1), s0 * pdf * math.sqrt(maturity),
                            strike * maturity * disc * cdf(d2)])


def main(n_paths=20000, n_steps=50):
    params = np.array([100.0, 0.2, 0.03])
    strike, maturity, seed = 105.0, 1.0, 7
    args = (params, strike, maturity, n_paths, n_steps, seed)
    greeks = adjit.value_and_grad(call_price)
    t0 = time.perf_counter()
    greeks(*args)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    price, g = greeks(*args)
    grad_s = time.perf_counter() - t0
    call_price(*args)
    t0 = time.perf_counter()
    call_price(*args)
    forward_s = time.perf_counter() - t0

    h = 1e-6 * params      # (small: a path whose payoff crosses its kink within h would bias it)
    fd = np.array([(call_price(params + e, *args[1:]) - call_price(params - e, *args[1:]))
                   / (2 * e[k]) for k, e in enumerate(np.diag(h))])
    exact_price, exact = black_scholes(*params, strike, maturity)
    # the Monte Carlo standard error of the price, for scale
    print(f"{n_paths} paths of {n_steps} steps: price {price:.4f} "
          f"(Black-Scholes {exact_price:.4f})")
    for name, k in (("delta", 0), ("vega", 1), ("rho", 2)):
        print(f"  {name:5s}  adjit {g[k]: .6f}   finite differences {fd[k]: .6f}   "
              f"Black-Scholes {exact[k]: .6f}")
    print(f"first call {first_s:.2f} s (transformation and compilation); price and all "
          f"three Greeks {grad_s * 1e3:.1f} ms, the price alone {forward_s * 1e3:.1f} ms "
          f"({grad_s / forward_s:.1f}x)")
    return {"price": price, "grad": g, "fd": fd, "exact_price": exact_price, "exact": exact,
            "fd_error": float(np.max(np.abs(g - fd) / (1.0 + np.abs(fd)))),
            "ratio": grad_s / forward_s}


if __name__ == "__main__":
    main()
