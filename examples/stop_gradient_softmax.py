"""Stable log-sum-exp with a stopped maximum, written as loops.

log(sum(exp(z))) = m + log(sum(exp(z - m))) for any m. Choosing m = max(z) keeps exp from
overflowing; wrapping it in stop_gradient tells adjit that m is a constant shift, so no
adjoint flows through the max (whose derivative is a one-hot subgradient): the gradient is
exactly softmax(z). Run: .venv/bin/python examples/stop_gradient_softmax.py
"""
import math

import numpy as np

from adjit import grad, stop_gradient


def logsumexp(z):
    m = z[0]
    for i in range(z.shape[0]):
        m = max(m, z[i])
    m = stop_gradient(m)
    total = 0.0
    for i in range(z.shape[0]):
        total += math.exp(z[i] - m)
    return m + math.log(total)


def naive_logsumexp(z):
    total = 0.0
    for i in range(z.shape[0]):
        total += math.exp(z[i])
    return math.log(total)


def main():
    z = np.array([1000.0, 1001.0, 999.5, 1000.2])
    g = grad(logsumexp)(z)
    softmax = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    print("gradient of stable log-sum-exp:", g)
    print("softmax(z)                    :", softmax)
    print("naive version's gradient      :", grad(naive_logsumexp)(z), "(exp overflowed)")
    print("\nno adjoint is generated for the stopped max (no 'm_bar' in the source):",
          "m_bar" not in grad(logsumexp).source_for(z))
    assert np.allclose(g, softmax, rtol=1e-12)


if __name__ == "__main__":
    main()
