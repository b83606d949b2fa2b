"""Every refusal documented in docs/errors.md raises the message the document gives.

The examples are the ```python blocks of docs/errors.md whose first line is a header comment
`# error: <text>`. The convention (also described at the top of docs/errors.md):

- The header is the block's first comment lines. Each `# error: <text>` names a piece of the
  message that must appear in it, verbatim (case-sensitive); a block may give several. The
  first one names the refusal: another example of the same refusal repeats it.
  `# raises: ValueError` says the refusal is raised by the compiled gradient as that
  exception class instead of `adjit.AdjitError`. `# xfail: <reason>` marks an example that
  does not produce its documented message yet (an adjit bug): the test then expects it to
  fail (strictly, so a fix shows up).
- A trailing comment `# <-` marks the offending line. The message must then name the
  function whose body holds that line (or whose `def` line it is; `<lambda>` for a lambda at
  module level) together with the file and that line: `'NAME' (FILE, line N)`.
- The block is a complete program given these imports, which the test puts in front of its
  first line (the header comment), so that line N of the block is line N of the module:
      import math, numba, numpy as np, adjit
      from adjit import grad, value_and_grad, vjp, jvp, stop_gradient
  Its last lines call adjit (`grad(f)(1.5)`), so running it raises the error. The test writes
  the block into a module file in a temporary directory and imports it (adjit reads the
  source of functions with inspect, so the code must live in a real file).

The test ids are `<section>-<first error text>` in lower case (the section is the `## `
heading above the block).
"""
import ast
import builtins
import importlib.util
import pathlib
import re
import sys

import pytest

import adjit

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "errors.md"
PRELUDE = ("import math, numba, numpy as np, adjit; "
           "from adjit import grad, value_and_grad, vjp, jvp, stop_gradient  ")
MARKER = re.compile(r"#\s*<-")

# The refusals found in adjit's sources that a program can reach: each distinct message
# (construct) of an AdjitError raise site, each entry of the syntax whitelist's table, and the
# run-time refusals of the compiled code (tape limit, `adjit:` ValueErrors). The document has
# an example of each, told apart by their first `# error:` line (a few more examples show a
# refusal again in another form and repeat that line). Deleting the only example of a
# refusal makes this test fail; update the number together with adjit and the document.
# Raise sites no program reaches today (adjit/normalize/check.py's async/await/type-alias
# entries on Python 3.11, checkpointing a loop carrying a non-number, CUDA-only checks behind
# earlier refusals, ...) have no example and are not counted.
REFUSAL_KINDS = 344


class Example:
    def __init__(self, section, doc_line, code):
        self.section = section
        self.doc_line = doc_line          # the line of docs/errors.md where the code starts
        self.code = code
        self.errors, self.raises, self.xfail = [], "AdjitError", None
        for text in code.splitlines():
            m = re.match(r"#\s*(error|raises|xfail):\s?(.*)$", text.strip())
            if not m:
                break
            key, value = m.group(1), m.group(2).rstrip()
            if key == "error":
                self.errors.append(value)
            elif key == "raises":
                self.raises = value
            else:
                self.xfail = value
        lines = code.splitlines()
        self.marked = [k + 1 for k, text in enumerate(lines) if MARKER.search(text)]

    @property
    def slug(self):
        words = re.sub(r"[^a-z0-9]+", "-", (self.section + " " + self.errors[0]).lower())
        return words.strip("-")[:70].rstrip("-")


def parse_examples(text):
    """The example blocks of the document, in order."""
    examples, section = [], ""
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("## "):
            section = line[3:].strip()
        if line.strip() == "```python":
            start = k + 1
            k += 1
            while lines[k].strip() != "```":
                k += 1
            code = "\n".join(lines[start:k]) + "\n"
            if code.lstrip().startswith("# error:"):
                examples.append(Example(section, start + 1, code))
        k += 1
    return examples


EXAMPLES = parse_examples(DOC.read_text(encoding="utf-8"))


def _ids(examples):
    seen, out = {}, []
    for ex in examples:
        n = seen[ex.slug] = seen.get(ex.slug, 0) + 1
        out.append(ex.slug if n == 1 else f"{ex.slug}-{n}")
    return out


def _params():
    out = []
    for ex, name in zip(EXAMPLES, _ids(EXAMPLES)):
        marks = [pytest.mark.xfail(strict=True, reason=ex.xfail)] if ex.xfail else []
        if "cuda" in ex.code:
            marks.append(pytest.mark.cuda)
        if "numba_mpi" in ex.code and importlib.util.find_spec("numba_mpi") is None:
            # the mpi extra (make test installs it); test_mpi.py skips the same way
            marks.append(pytest.mark.skip(reason="numba-mpi is not installed"))
        out.append(pytest.param(ex, id=name, marks=marks))
    return out


def enclosing_function(code, line):
    """The qualified name of the function a line of `code` belongs to: the innermost `def`
    whose body holds it, or a module-level `def` (or method) whose `def` or decorator lines
    hold it, else `<lambda>` for a lambda on that line."""
    def search(body, prefix, top):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + node.name
                if node.lineno < line <= node.end_lineno:
                    return search(node.body, name + ".<locals>.", False) or name
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if top and first <= line <= node.lineno:
                    return name
            elif isinstance(node, ast.ClassDef) and node.lineno <= line <= node.end_lineno:
                return search(node.body, prefix + node.name + ".", top)
        return None

    tree = ast.parse(code)
    found = search(tree.body, "", True)
    if found is None:
        found = next(("<lambda>" for node in ast.walk(tree) if isinstance(node, ast.Lambda)
                      and node.lineno == line), None)
    assert found, f"the marked line {line} is in no function"
    return found


def run_example(ex, tmp_path, index):
    """Write the example into a module and import it; returns (exception, module path)."""
    name = f"errors_doc_example_{index}"
    path = tmp_path / f"{name}.py"
    path.write_text(PRELUDE + ex.code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the test inspects what was raised
        return exc, path
    finally:
        sys.modules.pop(name, None)
    return None, path


def test_the_document_has_an_example_for_every_refusal():
    kinds = {ex.errors[0] for ex in EXAMPLES}
    assert len(EXAMPLES) >= len(kinds) >= REFUSAL_KINDS, \
        f"docs/errors.md has examples of {len(kinds)} refusals, adjit has {REFUSAL_KINDS}"
    for ex in EXAMPLES:
        assert all(e.strip() for e in ex.errors), f"empty `# error:` at docs line {ex.doc_line}"
        assert len(ex.marked) <= 1, f"several `# <-` markers at docs line {ex.doc_line}"


@pytest.mark.parametrize("ex", _params())
def test_documented_example_raises_its_message(ex, tmp_path):
    index = EXAMPLES.index(ex)
    exc, path = run_example(ex, tmp_path, index)
    where = f"docs/errors.md line {ex.doc_line}"
    assert exc is not None, f"{where}: the example ran without an error"
    expected = adjit.AdjitError if ex.raises == "AdjitError" else getattr(builtins, ex.raises)
    assert isinstance(exc, expected), \
        f"{where}: raised {type(exc).__name__}, not {ex.raises}: {exc}"
    msg = str(exc)
    for text in ex.errors:
        assert text in msg, f"{where}: {text!r} is not in the message:\n{msg}"
    if ex.marked:
        line = ex.marked[0]
        fname = enclosing_function(ex.code, line)
        located = f"'{fname}' ({path}, line {line})"
        assert located in msg, f"{where}: the message does not name {located}:\n{msg}"
