"""What the reverse pass refuses before it builds anything.

Array variables are assigned once (one name, one array: views were resolved by the
normalizer), and the operands of array-level operations whose adjoints read them (matrix
products) are not changed afterwards. An array allocated in a loop with a shape the loop
changes (`out = np.empty_like(a)` in a helper called on `a_tri[ks:]`) is allocated again
at the start of each iteration's backward sweep (the planner replays it, with its
adjoint); the planner refuses one it cannot replay. One an operation computes at such a
shape (np.argsort of a resized window, np.arange(i)) is made again only where the loop's
iterations are computed again one by one. Each violation is an AdjitError at the
user's line, saying what to write instead."""
import ast

import numpy as np

from .. import ir
from ..analysis.activity import opaque_refusal
from ..analysis.types import is_array
from ..errors import error_at
from ..rules.table import ARRAY_OP_NAMES, ARRAY_RULES
from ..runtime import vec
from .plan import REPLAYED_KINDS


def validate(stmts, layout, prim, kinds, active, params, bounded):
    """Raise an AdjitError for what the reverse pass refuses in the normalized statements
    (`prim(s)`: a statement's primitive; `bounded`: CUDA device code, which has no room for
    arrays on its tape); return the snapshots the backward sweep needs: id(array-level
    operation) -> (operands, results) recorded at it; the arrays allocated in a loop
    with a shape that changes between its iterations: var -> the allocation; and the
    arrays an operation computes there at such a shape that a backward sweep reads: var ->
    (their statement, the array of a changing shape they are computed from or None, the
    names setting their size), refused by the planner where their loop is not computed
    again iteration by iteration (shape_error)."""
    checks = _Checks(stmts, layout, prim, kinds, active, params, bounded)
    checks.arrays()
    checks.opaque()
    checks.unanswered()
    return checks.snapshots, checks.reallocated, checks.recomputed_only


class _Checks:
    def __init__(self, stmts, layout, prim, kinds, active, params, bounded):
        self.stmts = stmts
        self.layout = layout
        self.prim = prim
        self.kinds = kinds
        self.active = active
        self.params = params
        self.bounded = bounded
        self.snapshots = {}
        self.reallocated = {}
        # arrays computed (not allocated) in a loop at a shape it changes -> the names the
        # loop changes that set their size (np.arange(i): i; none when computed from an
        # array of a changing shape)
        self.reshaped = {}
        self.unkept = set()     # inactive arrays of a changing shape the backward never reads
        # arrays of a changing shape a backward sweep reads: var -> (statement, the array of
        # a changing shape it is computed from, the names of reshaped), refused by the
        # planner where their loop's iterations are not computed again one by one
        self.recomputed_only = {}

    def arrays(self):
        for s in ir.walk_stmts(self.stmts):     # a number from an array-level operation
            if isinstance(s, ast.Assign) and not ir.is_store(s) and \
                    self.prim(s).reads_operands() and ir.target_name(s) in self.active and \
                    not is_array(self.kinds.get(ir.target_name(s))):
                self._check_operands_kept(s)
        self._changing_shapes()
        for var, sites in self.layout.sites.items():
            if not is_array(self.kinds.get(var)):
                continue
            origin = ir.note(sites[0], "origin", None)
            if var in self.params or len(sites) > 1:
                own_copy = next((s for s in sites if isinstance(s, ast.Assign) and
                                 ir.unparse(s.value) == f"{var}.copy()"), None)
                if own_copy is not None:
                    raise error_at(ir.note(own_copy, "origin", None) or origin,
                                   f"'{var} = {var}.copy()' inside a loop or a branch rebinds "
                                   f"'{var}' on some paths only (or on every iteration), so "
                                   f"which array '{var}' is cannot be told when the code is "
                                   "compiled",
                                   f"Copy once before the loop or branch ({var} = {var}.copy() "
                                   f"at the top) and update '{var}' in place afterwards.")
                tgt = sites[0].targets[0] if isinstance(sites[0], ast.Assign) else None
                user = ir.note(tgt, "web", var) if isinstance(tgt, ast.Name) else var
                raise error_at(origin, f"the array variable '{user}' is reassigned",
                               "Assign each array variable once; update it in place "
                               f"({user}[:] = ...) or copy values (b = a.copy()) instead of "
                               "rebinding names.")
            s = sites[0]
            if var in self.reshaped:
                self._check_shape_fixed(s, var)
            if self.prim(s).kind == "copy":
                raise error_at(origin, f"'{var}' = another array makes two names for one array"
                               " (or rebinds an array name to a new value inside a loop)",
                               "Use a.copy() for a new array, keep using the original name, or "
                               "update the array in place (a[:] = ...).")
            if self.prim(s).reads_operands() and var in self.active:
                self._check_operands_kept(s)    # (an inactive product has no adjoint)
            if self.prim(s).kind == "arrayop" and ARRAY_RULES[self.prim(s).obj].reads_out \
                    and var in self.active:
                self._check_result_kept(s, var)
            if var in self.reallocated and self.bounded:
                raise reallocation_error(s, var)

    def _changing_shapes(self):
        """Find the arrays made in a loop with a shape that may change between its
        iterations: allocated there at a size the loop computes (self.reallocated), or
        computed there from such an array by an operation, not allocated (np.argsort of a
        slice a[lo:i + 1] copied; self.reshaped). Repeated until nothing changes: a size read
        from such an array (`b = np.zeros(a.shape[0])`) changes too."""
        by_id = {id(x): x for x in ir.walk_stmts(self.stmts)}
        varying_in = {}     # the loops around a statement -> the names they change

        def varying(loops):
            if loops not in varying_in:
                names = set()
                for loop in map(by_id.get, loops):
                    names |= ir.assigned(loop.body) | ir.stored_names(loop.body)
                    if isinstance(loop, ast.For):
                        names.add(loop.target.id)     # np.zeros(n) for n in range(...)
                varying_in[loops] = names
            return varying_in[loops]

        changed = True
        while changed:
            changed = False
            for var, sites in self.layout.sites.items():
                if var in self.reallocated or var in self.reshaped or var in self.params \
                        or len(sites) > 1 or not is_array(self.kinds.get(var)):
                    continue
                s = sites[0]
                loops = self.layout.loops[id(s)]
                if not loops or not isinstance(s, ast.Assign):
                    continue
                operands = [a.id for a in self.prim(s).operands if isinstance(a, ast.Name)]
                changes = varying(tuple(loops))
                if self.prim(s).kind != "alloc":
                    sizes = self._sized_by_the_loop(s, changes)
                    # a call kept as numba's (np.where(c) of one argument, np.unique) may
                    # size its result by its operands' values
                    if any(a in self.reallocated or a in self.reshaped for a in operands) or \
                            sizes or (self.prim(s).kind == "opaque" and set(operands) & changes):
                        self.reshaped[var] = sizes
                        changed = True
                    continue
                # an array operand (np.zeros_like(a)) lends its own shape: one allocated so
                # itself (np.empty_like(out) after out = ...) changes it
                shape = [a for a in operands if not is_array(self.kinds.get(a))]
                if any(n in changes and not self._from_shapes(n, {}) for n in shape) or \
                        any(a in self.reallocated or a in self.reshaped for a in operands):
                    self.reallocated[var] = s
                    changed = True

    def _sized_by_the_loop(self, s, varying):
        """The operands of an array-level operation in a loop that set its result's shape
        (the registry's `sized_by`: np.arange(i), np.linspace(a, b, i + 1), np.extract of a
        condition the loop fills) and that the loop changes; empty if none."""
        prim = self.prim(s)
        rule = ARRAY_RULES.get(prim.obj) if prim.kind == "arrayop" else None
        if rule is None or not rule.sized_by:
            return []
        return [a.id for k, a in enumerate(prim.operands)
                if k < len(rule.params) and rule.params[k] in rule.sized_by
                and isinstance(a, ast.Name) and a.id in varying
                and (is_array(self.kinds.get(a.id)) or not self._from_shapes(a.id, {}))]

    def _check_shape_fixed(self, s, var):
        """An array computed in a loop by an operation (not allocated) from an array whose
        shape the loop changes, or at a size the loop changes (np.arange(i)), has a shape the
        loop changes too. Its backward sweep cannot make it again, unless no adjoint reads it
        (a mask tested whole: np.all(np.isfinite(a[i:i + w]))) or the loop's iterations are
        computed again one by one, which makes it again: left to the planner
        (self.recomputed_only), which refuses it where neither holds; in CUDA code, refused."""
        source = next((a.id for a in self.prim(s).operands if isinstance(a, ast.Name)
                       and (a.id in self.reallocated or a.id in self.reshaped)), None)
        sizes = self.reshaped[var] if source is None else ()
        if self._only_inactive_reads(var):      # np.all(np.isfinite(a[i:i + w]))
            self.unkept.add(var)
            return
        if self.bounded:
            raise shape_error(self.prim(s), s, var, source, sizes=sizes)
        self.recomputed_only[var] = (s, source, sizes)

    def _only_inactive_reads(self, var):
        """Whether no backward sweep reads `var`: it is inactive and read only by
        assignments of inactive names that the backward sweep never computes again from
        their operands (not REPLAYED_KINDS, or read by nothing). Such a name is recorded
        where the backward needs it, or its whole iteration is computed again (which
        computes var again); an array among them is checked the same way where it is."""
        if var in self.active:
            return False
        loaded = {n.id for s in ir.walk_stmts(self.stmts) for n in ir.walk(s)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for s in ir.walk_stmts(self.stmts):
            header = [s.test] if isinstance(s, (ast.If, ast.While)) else \
                [s.iter] if isinstance(s, ast.For) else [s.value] \
                if isinstance(s, ast.Assign) and not ir.is_store(s) else [s]
            if not any(isinstance(n, ast.Name) and n.id == var
                       for e in header for n in ir.walk(e)):
                continue
            if not isinstance(s, ast.Assign) or ir.is_store(s) or \
                    not isinstance(s.targets[0], ast.Name) or s.targets[0].id in self.active:
                return False
            if self.prim(s).kind in REPLAYED_KINDS and s.targets[0].id in loaded:
                return False
        return True

    def _from_shapes(self, name, seen):
        """Whether `name` is computed from arrays' shapes alone (`P.shape[0]`, sizes
        broadcast from them): the same in every iteration, as array shapes are fixed.
        `seen` maps the names looked at to their answer (None while in progress: a name
        computed from itself is not)."""
        if name in seen:
            return bool(seen[name])
        seen[name] = None
        seen[name] = self._computed_from_shapes(name, seen)
        return seen[name]

    def _computed_from_shapes(self, name, seen):
        sites = self.layout.sites.get(name, [])
        if not sites or not all(isinstance(x, ast.Assign) for x in sites):
            return not sites and name in self.params
        for x in sites:
            for n in ir.walk(x.value):
                if isinstance(n, ast.Name) and (n.id in self.reallocated or
                                                n.id in self.reshaped):
                    return False    # np.zeros(a.shape[0]), np.zeros(len(a)) of such an a
                if isinstance(n, ast.Attribute) and n.attr in ("shape", "size", "ndim") and \
                        isinstance(n.value, ast.Name) and is_array(self.kinds.get(n.value.id)):
                    continue
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and \
                        not is_array(self.kinds.get(n.id)) and n.id not in ("vec", "len") and \
                        not self._from_shapes(n.id, seen):
                    if self.layout.sites.get(n.id) or n.id in self.params:
                        return False
        return True

    def opaque(self):
        """No derivative flows through a call with no derivative rule (rules/opaque.py)."""
        for s in ir.walk_stmts(self.stmts):
            if isinstance(s, ast.Assign) and not ir.is_store(s) and \
                    ir.target_name(s) in self.active and self.prim(s).kind == "opaque":
                raise opaque_refusal(s)

    def unanswered(self):
        """No derivative flows from an operand a rule gives no cotangent (ArrayRule's
        `unanswered`: a custom_vjp rule's None for a tuple holding it)."""
        for s in ir.walk_stmts(self.stmts):
            if isinstance(s, ast.Assign) and not ir.is_store(s) and \
                    ir.target_name(s) in self.active and self.prim(s).kind == "arrayop":
                rule = ARRAY_RULES[self.prim(s).obj]
                for k, atom in enumerate(self.prim(s).operands):
                    if k in rule.unanswered and isinstance(atom, ast.Name) and \
                            atom.id in self.active:
                        raise error_at(ir.note(s, "origin", None), rule.unanswered[k][0],
                                       rule.unanswered[k][1])

    def _check_operands_kept(self, s):
        """The adjoint of an array-level operation reads its operands' values in the
        backward sweep: an operand changed after the operation (or again in a later
        iteration of its loop) is recorded at the operation (self.snapshots), as is the
        result of one whose adjoint reads it (np.linalg.solve, inv) inside a loop. In CUDA
        code, which has no room for arrays on its tape, that is refused."""
        pos, loops = self.layout.pos[id(s)], set(self.layout.loops[id(s)])
        op = ARRAY_OP_NAMES.get(self.prim(s).obj, "an array-level operation")
        for a in self.prim(s).read_operands():
            arr = a[1].id
            if not is_array(self.kinds.get(arr)):
                continue    # a number the backward sweep reads is recorded where it changes
            for w in ir.walk_stmts(self.stmts):
                changes = (ir.is_store(w) and w.targets[0].value.id == arr) or \
                    (isinstance(w, ast.Assign) and ir.target_name(w) == arr)
                if changes and not self.bounded and w is not s and (
                        self.layout.pos[id(w)] > pos or loops & set(self.layout.loops[id(w)])):
                    kept = self.snapshots.setdefault(id(s), ([], []))[0]
                    if arr not in kept:
                        kept.append(arr)
                    break
                if changes and loops and loops & set(self.layout.loops[id(w)]):
                    what = "an array expression" if arr.startswith("_") else \
                        f"the array '{arr}'"
                    product = op == "a matrix product"
                    raise error_at(ir.note(s, "origin", None),
                                   f"{op} inside a loop reading {what} that the same loop "
                                   "computes again in its next iteration",
                                   "Its adjoint would need every iteration's operand, which "
                                   "adjit does not record for array-level operations: "
                                   + ("write the product as explicit loops over elements (one "
                                      "row of A times x at a time), or move it out of the loop."
                                      if product else "move it out of the loop."))
                if changes and (self.layout.pos[id(w)] > pos or
                                loops & set(self.layout.loops[id(w)])):
                    raise error_at(ir.note(s, "origin", None),
                                   f"the array '{arr}' is changed after {op} reads it",
                                   "Finish changing the array first, or pass a copy "
                                   "(a.copy()).")

    def _check_result_kept(self, s, var):
        """The adjoint of np.linalg.solve or inv reads the result: inside a loop each
        iteration's result is recorded (self.snapshots; refused in CUDA code); elements
        written into it are refused."""
        if self.layout.loops[id(s)]:
            if self.bounded:
                raise error_at(ir.note(s, "origin", None),
                               f"{ast.unparse(s.value.func)} inside a loop in CUDA code",
                               "Its adjoint reads each iteration's result, which a device "
                               "function has no room to record: move it out of the loop.")
            self.snapshots.setdefault(id(s), ([], []))[1].append(var)
        for w in ir.walk_stmts(self.stmts):
            if ir.is_store(w) and w.targets[0].value.id == var:
                raise error_at(ir.note(w, "origin", None),
                               f"writing into '{var}', the result of "
                               f"{ast.unparse(s.value.func)}, whose derivative reads it",
                               f"Write into a copy ({var}2 = {var}.copy()).")


def reallocation_error(s, var, why=""):
    """The refusal of an array allocated in a loop with a shape that changes between its
    iterations, where its backward sweep cannot allocate it again (`why` says why)."""
    return error_at(ir.note(s, "origin", None),
                    f"the array '{var}' is allocated in a loop with a shape that changes "
                    f"between iterations{why}",
                    "Allocate it once before the loop, with its largest shape.")


def shape_error(prim, s, var, source, why=None, sizes=()):
    """The refusal of an array computed in a loop (`s`, whose primitive is `prim`) from an
    array `source` whose shape the loop changes, or (source None) at a size set by the
    names `sizes` the loop changes; `why`: why the loop's iterations cannot be computed
    again one by one, where that was the way left."""
    what = ARRAY_OP_NAMES.get(prim.obj) if prim.kind == "arrayop" else None
    if what is not None and what.startswith("vec."):   # (adjit's, not the user's)
        what = None
    named = ", ".join(f"'{n}'" for n in sizes if not n.startswith("_"))
    source = ("values the loop changes" + (f" ({named})" if named else "")
              if source is None else "a temporary array (a slice's or an expression's)"
              if source.startswith("_") else f"'{source}'")
    made = "an array the statement makes on the way," \
        if var.startswith("_") else f"the array {var!r}"    # (not a name of the user's)
    if var.startswith("_") and prim.obj in (np.argsort, vec.argsort_rows):
        made = "the order that sorts an array (for np.sort, np.median, np.argsort, ...),"
    if why is not None:
        return error_at(ir.note(s, "origin", None),
                        f"{what or made} computed in a loop from {source}, whose shape may "
                        "change between iterations (a slice a[i:i + w] has a length computed "
                        f"from the loop's names), in a loop whose iterations depend on each "
                        f"other ({why})",
                        "adjit makes such an array again by computing the iteration again, "
                        "which needs iterations that depend on nothing an earlier one left "
                        "(sums s += ... are fine): compute the values made from these arrays "
                        "in a loop of their own first (e.g. m[i] = np.median(x[lo:i + 1])), "
                        "then use them in the loop that carries the value.")
    return error_at(ir.note(s, "origin", None),
                    f"{what or made} computed in a loop from {source}, "
                    "allocated there with a shape that may change between iterations "
                    "(a slice a[i:i + w] has a length computed from the loop's names)",
                    "Allocate the arrays it is computed from once before the loop, with "
                    "their largest shape; only arrays allocated with np.zeros, np.empty, "
                    "... (and what numpy's functions allocate elementwise), and arrays "
                    "no derivative reads (a mask tested whole: "
                    "np.all(np.isfinite(a[i:i + w]))), may change shape from one "
                    "iteration to the next.")
