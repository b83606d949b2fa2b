"""Greeks of barrier options written as pricing libraries write them.

The closed forms (Reiner and Rubinstein; Hull, chapter 26) call the normal CDF at a dozen
places, and FinancePy's `normcdf` (Hull's polynomial approximation) calls itself for
negative arguments. adjit differentiates the pricer as written; in a program this large it
calls `normcdf` as one operation with adjit's gradient of it, compiled once, instead of
copying it (and its adjoint) into the generated code at every call: the generated
gradient stays short and compiles in a second or two.

    python examples/barrier_greeks.py
"""
import time

import numba
import numpy as np

import adjit

INV_ROOT_2_PI = 0.3989422804014327


@numba.njit(numba.float64(numba.float64), fastmath=True)
def normcdf(x):
    """Hull's approximation of the normal CDF, accurate to about 1e-7."""
    a1 = 0.319381530
    a2 = -0.356563782
    a3 = 1.781477937
    a4 = -1.821255978
    a5 = 1.330274429
    g = 0.2316419
    k = 1.0 / (1.0 + g * np.abs(x))
    k2 = k * k
    k3 = k2 * k
    k4 = k3 * k
    k5 = k4 * k
    if x >= 0.0:
        c = a1 * k + a2 * k2 + a3 * k3 + a4 * k4 + a5 * k5
        phi = 1.0 - c * np.exp(-x * x / 2.0) * INV_ROOT_2_PI
    else:
        phi = 1.0 - normcdf(-x)
    return phi


DOWN_AND_OUT_CALL, UP_AND_IN_CALL = 1, 2


def barrier_value(t, k, h, s, r, q, v, opt_type, nobs):
    """A down-and-out or up-and-in call observed `nobs` times a year (the barrier shifted
    by Broadie, Glasserman and Kou's correction for discrete observation)."""
    sqrt_t = np.sqrt(t)
    sigma_rt_t = v * sqrt_t
    mu = r - q
    d1 = (np.log(s / k) + (mu + v * v / 2.0) * t) / sigma_rt_t
    d2 = d1 - sigma_rt_t
    df = np.exp(-r * t)
    dq = np.exp(-q * t)
    c = s * dq * normcdf(d1) - k * df * normcdf(d2)

    shift = 0.5826 * v * np.sqrt(1.0 / nobs)
    if opt_type == DOWN_AND_OUT_CALL:
        h = h * np.exp(-shift)
    else:
        h = h * np.exp(shift)
    ll = (mu + v * v / 2.0) / (v * v)
    y = np.log(h * h / (s * k)) / sigma_rt_t + ll * sigma_rt_t
    x1 = np.log(s / h) / sigma_rt_t + ll * sigma_rt_t
    y1 = np.log(h / s) / sigma_rt_t + ll * sigma_rt_t
    h_over_s = h / s

    if opt_type == DOWN_AND_OUT_CALL:
        if h >= k:
            return (s * dq * normcdf(x1) - k * df * normcdf(x1 - sigma_rt_t)
                    - s * dq * h_over_s ** (2.0 * ll) * normcdf(y1)
                    + k * df * h_over_s ** (2.0 * ll - 2.0) * normcdf(y1 - sigma_rt_t))
        c_di = (s * dq * h_over_s ** (2.0 * ll) * normcdf(y)
                - k * df * h_over_s ** (2.0 * ll - 2.0) * normcdf(y - sigma_rt_t))
        return c - c_di
    if h >= k:
        return (s * dq * normcdf(x1) - k * df * normcdf(x1 - sigma_rt_t)
                - s * dq * h_over_s ** (2.0 * ll) * (normcdf(-y) - normcdf(-y1))
                + k * df * h_over_s ** (2.0 * ll - 2.0)
                * (normcdf(-y + sigma_rt_t) - normcdf(-y1 + sigma_rt_t)))
    return c


def main():
    greeks = adjit.value_and_grad(barrier_value, argnums=(0, 1, 2, 3, 4, 5, 6))
    names = ("theta(-)", "d/dK", "d/dH", "delta", "rho", "d/dq", "vega")
    worst = 0.0
    for opt_type, h in ((DOWN_AND_OUT_CALL, 90.0), (UP_AND_IN_CALL, 120.0)):
        args = (1.0, 100.0, h, 100.0, 0.04, 0.01, 0.25, opt_type, 252)
        start = time.perf_counter()
        value, grads = greeks(*args)
        first = time.perf_counter() - start
        print(f"option type {opt_type}, barrier {h}: value {value:.6f} "
              f"(first call {first:.2f} s)")
        for k, (name, d) in enumerate(zip(names, grads)):
            step = 1e-6 * max(abs(args[k]), 1e-2)
            up, down = list(args), list(args)
            up[k] += step
            down[k] -= step
            fd = (barrier_value(*up) - barrier_value(*down)) / (2.0 * step)
            worst = max(worst, abs(d - fd) / max(abs(fd), 1e-3))
            print(f"  {name:9s} {d: .8f}   finite differences {fd: .8f}")
    source = greeks.source
    outlined = source.count("_cotangents(")
    print(f"largest relative difference from finite differences: {worst:.1e}")
    print(f"generated code: {source.count(chr(10))} lines, calling normcdf's gradient "
          f"at {outlined} places")
    return {"worst": worst, "outlined": outlined, "lines": source.count("\n")}


if __name__ == "__main__":
    main()
