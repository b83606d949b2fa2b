"""The README's code, run as written: every ```python block in order, in one module (the
fragments' free names, the arrays `x`, `z`, `u`, `v`, ... a reader would have, given
first), and every line that ends in a comment holding a value (`grad(f)(2.0)  # 2.0`)
checked against that value. The CUDA block runs in numba's CUDA simulator (conftest.py)."""
import ast
import os
import re
import runpy

import numpy as np

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")

PREAMBLE = """\
import math
import numpy as np
rng = np.random.default_rng(0)
x, v = rng.uniform(0.5, 1.5, 6), rng.normal(size=6)
z, u = rng.normal(size=6), rng.normal(size=6)
p = np.array([0.7])
out, out_bar = np.zeros(6), np.ones(6)
x_bar, p_bar = np.zeros(6), np.zeros(1)
blocks, threads = 1, 32
"""

_CLAIM = re.compile(r"^(?P<expr>\S.*?)\s+#\s*(?P<value>\([^)]*\)|-?\d[\d.e+-]*)(?::.*)?$")


def _literal(text):
    try:
        ast.literal_eval(text)
    except ValueError:
        return False        # `# (n, n)`: a shape in words
    return True


def _blocks():
    with open(README) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_the_readme_code_runs_and_gives_the_values_it_states(tmp_path):
    blocks = _blocks()
    assert len(blocks) >= 6
    lines, claims = [PREAMBLE], []
    for block in blocks:
        for line in block.splitlines():
            m = _CLAIM.match(line)
            if m and _literal(m["value"]):
                claims.append((m["expr"], ast.literal_eval(m["value"])))
                line = f"_claims.append(({m['expr']}, {m['value']!r}))"
            lines.append(line)
    assert claims, "no line of the README states a value"
    path = tmp_path / "readme_code.py"
    path.write_text("_claims = []\n" + "\n".join(lines) + "\n")
    ns = runpy.run_path(str(path))
    assert len(ns["_claims"]) == len(claims)
    for (expr, _), (got, stated) in zip(claims, ns["_claims"]):
        stated = ast.literal_eval(stated)
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(stated, float),
                                   rtol=1e-12, err_msg=expr)
