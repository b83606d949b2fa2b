"""A-normal form: one primitive operation per assignment, calls to user functions inlined.

The output is still valid, runnable Python (tests run it against the original). Returns,
`break` and `continue` survive this pass as statements; `exits.lower_exits` turns them into
flags afterwards.
"""
import ast
import copy
import types

import math

import numpy as np

from ..api_stop import stop_gradient
from ..frontend.source import MISSING, read_function, unwrap
from ..rules.table import (ALLOCATORS, ARRAY_FUNCTIONS, ARRAY_QUERIES, CONST_ARRAYS,
                           ELEMENTWISE, ELEMENTWISE_ARITY, METHOD_REDUCTIONS, REDUCTIONS,
                           rule_for_call)
from .. import ir
from .check import check_supported
from . import swaps
from .exits import lower_exits
from .names import lookup
from .views import Indexing, Take, has_take, view_atoms, with_atoms
from .vectorize import ONE, Lazy, Op, Scalar, View, Vectorizing, _index_node
from ..runtime import vec

_RESERVED = {"math", "np", "stop_gradient"}


class InlineContext:
    """State shared by a function and every function inlined into it."""

    def __init__(self, namegen, env, arrays=None, ints=(), layouts=None):
        self.namegen = namegen
        self.env = env
        self.ints = set(ints)               # names known to hold integers (for dtypes here)
        self.layouts = dict(layouts or {})  # numba layouts of argument arrays: "C", "F", "A"
        self.user_names = set()             # user variables of every inlined function
        self.serial = 0                     # numbers the bindings of names to views
        # array variables: name -> (ndim, dtype), dtype "f", "i", "b" or "?" (not known here:
        # analysis/types.py infers it exactly)
        self.arrays = dict(arrays or {})
        self.vec_temps = _Temps()           # arrays the vectorizer allocated
        self.loop_depth = 0                 # user loops around the statement being lowered
        self.stack = []
        self.prefix_counts = {}

    def prefix_for(self, fname):
        k = self.prefix_counts.get(fname, 0) + 1
        self.prefix_counts[fname] = k
        return f"{fname}_" if k == 1 else f"{fname}{k}_"


def normalize_function(src, ctx, prefix="", subst=None, views=None):
    """Normalize `src`'s body. Returns (statements, result atom or None). `views` binds
    local names to Views (a helper's parameters that alias the caller's arrays)."""
    check_supported(src.tree, src.loc)
    if src.fn in ctx.stack:
        chain = " -> ".join(f.__name__ for f in ctx.stack + [src.fn])
        raise src.loc.error(src.tree, f"recursion ({chain}) is not supported",
                            "Rewrite the recursion as a loop.")
    ctx.stack.append(src.fn)
    try:
        norm = _Normalizer(src, ctx, prefix, subst or {}, views or {})
        body = norm.block(src.tree.body)
        stmts, result = lower_exits(body, ctx.namegen, src.loc)
        if norm.returned_views:
            returns = [x for x in ir.walk_stmts(body) if isinstance(x, ast.Return)]
            if len(returns) != 1 or body[-1] is not returns[0]:
                raise src.loc.error(norm.returned_views[0][0], "a helper that returns an "
                                    "array or a view from one of several `return`s",
                                    "Return it once, at the end of the helper, or return a "
                                    "copy (return a[1:].copy()).")
            return stmts, norm.returned_views[0][1]
        return stmts, result
    finally:
        ctx.stack.pop()


class _Binding:
    """A local name bound to a View (an alias of part of an array)."""

    def __init__(self, view, serial):
        self.view = view
        self.serial = serial


class _Unknown:
    """A name whose view binding this pass cannot determine (why: for the error)."""

    def __init__(self, why, line):
        self.why = why
        self.line = line


class _Normalizer(Vectorizing, Indexing):
    def __init__(self, src, ctx, prefix, subst, views):
        self.src = src
        self.loc = src.loc
        self.ctx = ctx
        self.prefix = prefix
        self.subst = subst
        self.origin = None
        self.loads = {}
        self.shape_cache = {}
        self.stopped = 0
        self.lazy = {}                      # name -> Lazy kept unevaluated (or its array)
        # names that may stay unevaluated; of those, the ones no helper receives (their
        # elements are stored once, when they are computed)
        self.lazy_ok, self.lazy_once = _lazy_candidates(src)
        for local in sorted(src.locals):
            if local not in subst:
                ctx.namegen.reserve(self.local(local))
                ctx.user_names.add(self.local(local))
        self.returned_views = []            # (return statement, View) of an inlined helper
        self.views = {}                     # local name -> _Binding or _Unknown
        self.view_uses = []                 # (name, serial) of every read of a binding
        for name, view in views.items():
            self.views[name] = self.new_binding(view)

    # names ---------------------------------------------------------------
    def local(self, id_):
        if id_ in self.subst:
            return self.subst[id_]
        out = self.prefix + id_
        return out + "_" if out in _RESERVED else out

    def fresh(self, stem="_t"):
        return self.ctx.namegen.fresh(stem)

    def fresh_local(self, stem):
        """A new name treated as a local variable of the user's function."""
        name = self.fresh(stem)
        self.src.locals.add(name)
        return name

    # views: names bound to parts of arrays (normalize/views.py) -------------------
    def new_binding(self, view):
        self.ctx.serial += 1
        # an array the vectorizer filled once may now be written again through the name
        self.ctx.vec_temps.write_once.discard(view.base)
        return _Binding(view, self.ctx.serial)

    def view_name(self, node):
        """The local target name of `node` (a Name) when it is bound to a view, else None."""
        if not (isinstance(node, ast.Name) and node.id in self.src.locals):
            return None
        target = self.local(node.id)
        return target if isinstance(target, str) and target in self.views else None

    def use_view(self, target, node):
        """The View a name is bound to, for a read or a write through it."""
        binding = self.views[target]
        if isinstance(binding, _Unknown):
            raise self.error(node, f"'{getattr(node, 'id', target)}' {binding.why} (line "
                             f"{binding.line}), so which array it refers to is not known when "
                             "the code is compiled", "Bind the name to one array or view on every "
                             "path (before the branch or loop), or copy: v = x[1:].copy().")
        self.view_uses.append((target, binding.serial))
        return binding.view

    def bind_view(self, target, view, out):
        """`target = <a view>`: the name becomes an alias (an index map, no array). Names of
        user variables the map reads are copied, so that the map keeps the positions it had
        when the name was bound (`row = A[i]` stays row i when i changes)."""
        frozen, atoms = {}, view_atoms(view)
        for k, atom in enumerate(atoms):
            if isinstance(atom, ast.Name) and atom.id in self.ctx.user_names and \
                    atom.id not in self.ctx.arrays:
                if atom.id not in frozen:
                    keep = self.fresh("_v")
                    self.emit_assign(out, keep, atom)
                    frozen[atom.id] = ir.name(keep)
                atoms[k] = frozen[atom.id]
        if frozen:
            view = with_atoms(view, atoms)
        self.rebinding(target, out)
        self.views[target] = self.new_binding(view)

    def rebinding(self, name, out):
        """`name` is about to hold another array or value. Views of the array it held keep
        that array: its contents are kept in a new array they now read (in Python the old
        array lives on through them). Views of an argument that is rebound are stale."""
        self.views.pop(name, None)
        rooted = [t for t, b in self.views.items() if isinstance(b, _Binding) and
                  b.view.base == name]
        if not rooted:
            return
        if name in self.src.params or name not in self.ctx.arrays:
            for t in rooted:
                self.views[t] = _Unknown(f"views the argument '{name}', which was rebound",
                                         self.origin[1] if self.origin else 0)
            return
        keep = self.fresh(f"_{name}_old")
        ndim, dtype = self.ctx.arrays[name]
        out.append(ir.assign(keep, ast.Call(func=ast.Attribute(value=ir.name(name),
                                                               attr="copy", ctx=ast.Load()),
                                            args=[], keywords=[]), self.origin))
        self.ctx.arrays[keep] = (ndim, dtype)
        for t in rooted:
            self.views[t] = self.new_binding(_rebased(self.views[t].view, keep))

    def merge_views(self, before, branches, out_blocks, line):
        """The bindings after an `if`: a name bound to the same view on both paths keeps it;
        views of one array that differ only in positions (`v = x[0]` / `v = x[1]`) read
        positions each branch sets; anything else cannot be known here."""
        names = set().union(*branches)
        merged = {}
        for name in names:
            got = [b.get(name) for b in branches]
            if all(g is got[0] for g in got):
                merged[name] = got[0]
                continue
            views = [g.view if isinstance(g, _Binding) else None for g in got]
            if all(v is not None for v in views) and _same_structure(views):
                atoms = [view_atoms(v) for v in views]
                chosen = list(atoms[0])
                for k, a in enumerate(atoms[0]):
                    if all(_same_atom(a, other[k]) for other in atoms[1:]):
                        continue
                    sel = self.fresh("_sel")
                    self.ctx.ints.add(sel)
                    for block, other in zip(out_blocks, atoms):
                        block.append(ir.assign(sel, other[k], self.origin))
                    chosen[k] = ir.name(sel)
                merged[name] = self.new_binding(with_atoms(views[0], chosen))
                continue
            merged[name] = _Unknown("is bound to different arrays or views on the paths "
                                    "of an `if`", line)
        self.views = merged

    def check_loop_views(self, before, mark, first, line):
        """After a loop body: a name the body binds to another view must not be read in the
        body before that binding (it would mean the previous iteration's binding)."""
        rebound = {n for n in set(before) | set(self.views)
                   if self.views.get(n) is not before.get(n)}
        for name, serial in self.view_uses[mark:]:
            if name in rebound and serial <= first:
                raise self.error(_At(line), f"the name '{name}' is read in a loop before the loop "
                                 "binds it to another view (which array it means changes "
                                 "between iterations)", "Bind it at the top of the loop body, "
                                 "or copy: v = x[i].copy().")
        for name in rebound:
            if before.get(name) is not None and name in self.views:
                self.views[name] = _Unknown("is bound in a loop that may run zero times "
                                            "after it was bound before the loop", line)

    def refuse_swapped_bases(self, loop):
        """A loop that swaps array names exchanges their contents after the loop (see
        normalize/swaps.py): a view of one of those arrays would then see the other one."""
        for x in loop.body:
            swap = swaps.find_swap(x, self.is_array_local)
            if not swap:
                continue
            for name in swap[0]:
                target = self.local(name)
                if self.is_view_local(name) or not isinstance(target, str):
                    continue
                viewers = sorted(t for t, b in self.views.items() if isinstance(b, _Binding)
                                 and b.view.base == target)
                if viewers:
                    raise self.error(x, f"a swap of the array '{name}', which '{viewers[0]}' "
                                     "is a view of", "Take the view inside the loop, after the "
                                     "swap, or copy it (v = u[1:].copy()).")

    def is_view_local(self, name):
        target = self.local(name) if name in self.src.locals else None
        return isinstance(target, str) and isinstance(self.views.get(target), _Binding)

    def is_array_local(self, name):
        if name not in self.src.locals:
            return False
        target = self.local(name)
        if isinstance(target, str) and isinstance(self.views.get(target), _Binding):
            return True
        atom = ir.name(target) if isinstance(target, str) else target
        return self.array_ndim(atom) is not None

    def emit_assign(self, out, target, value):
        """Append an assignment; forget cached loads it may invalidate."""
        if isinstance(target, str):
            if self.views:
                self.rebinding(target, out)
            self.loads = {k: v for k, v in self.loads.items() if target not in v[2]}
            self.track_array(target, value)
            if self.is_int(value):
                self.ctx.ints.add(target)
            else:
                self.ctx.ints.discard(target)
        else:
            if self.lazy:
                self.flush_lazy(out, target.value.id)
            self.loads = {k: v for k, v in self.loads.items() if k[0] != target.value.id}
        out.append(ir.assign(target, value, self.origin))

    def track_array(self, target, value):
        """Record whether `target` now holds an array (and of what dimension)."""
        info = None
        if isinstance(value, ast.Name):
            info = self.ctx.arrays.get(value.id)
        elif isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Attribute) and func.attr == "copy" and \
                    isinstance(func.value, ast.Name):
                info = self.ctx.arrays.get(func.value.id)
            else:
                obj = self.resolve_generated(func)
                if obj in ALLOCATORS or obj in CONST_ARRAYS:
                    info = (_alloc_ndim(value, obj, self.ctx.arrays), "f")
                elif obj is np.linspace:
                    info = (1, "f")
                elif obj is np.arange:
                    floats = any(isinstance(a, ast.Constant) and isinstance(a.value, float)
                                 for a in value.args)
                    info = (1, "f" if floats else "?")
                elif obj in (vec.mm, vec.mm_tn, vec.mm_nt, vec.mm_tt):
                    info = (2, "f")
        if info is None:
            self.ctx.arrays.pop(target, None)
        else:
            self.ctx.arrays[target] = info

    def is_int(self, value):
        """Whether a normalized right-hand side surely gives an integer (a guess for the
        dtype of arrays made from it; analysis/types.py decides exactly)."""
        if isinstance(value, ast.Constant):
            return isinstance(value.value, int) and not isinstance(value.value, bool)
        if isinstance(value, ast.Name):
            return value.id in self.ctx.ints
        if isinstance(value, ast.BinOp):
            return isinstance(value.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)) \
                and self.is_int(value.left) and self.is_int(value.right)
        if isinstance(value, ast.UnaryOp):
            return isinstance(value.op, ast.USub) and self.is_int(value.operand)
        if isinstance(value, ast.Subscript):
            base = value.value
            if isinstance(base, ast.Attribute):
                return base.attr == "shape"
            return isinstance(base, ast.Name) and \
                self.ctx.arrays.get(base.id, (0, "?"))[1] == "i"
        if isinstance(value, ast.Call):
            obj = self.resolve_generated(value.func)
            return obj in (len, int, round) or (getattr(rule_for_call(obj), "result", None)
                                                == "int" and obj is not None)
        return False

    def resolve_generated(self, func):
        """The object a function expression of generated code names."""
        return lookup(func, self.ctx.env.ns)

    def to_atom(self, out, value, stem="_t"):
        if isinstance(value, Lazy):
            return self.materialize(value, out)
        if ir.is_atom(value):
            return value
        t = self.fresh(stem)
        self.emit_assign(out, t, value)
        return ir.name(t)

    def error(self, node, construct, advice):
        return self.loc.error(node, construct, advice)

    # statements ----------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            self.origin = (self.loc.filename, getattr(s, "lineno", self.loc.firstlineno),
                           self.loc.name)
            self.loads = {}
            self.shape_cache = {}
            self.stmt(s, out)
        return out

    def stmt(self, s, out):
        if isinstance(s, ast.Assign):
            value = self.rhs(s.value, out)
            if len(s.targets) > 1 and not ir.is_atom(value):
                value = self.to_atom(out, value)
            for tgt in s.targets:
                self.assign_to(tgt, value, out)
        elif isinstance(s, ast.AnnAssign):
            if s.value is None:
                return
            self.assign_to(s.target, self.rhs(s.value, out), out)
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s, out)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call) and \
                    self.cuda_intrinsic(s.value.func) == "atomic.add":
                self.atomic_add(s.value, out)
            elif isinstance(s.value, ast.Call):
                self.rhs(s.value, out)
        elif isinstance(s, ast.If):
            cond = self.atom(s.test, out)
            before = dict(self.views)
            body = self.block(s.body)
            after_body, self.views = self.views, dict(before)
            orelse = self.block(s.orelse)
            self.origin = (self.loc.filename, s.lineno, self.loc.name)
            if after_body != before or self.views != before:
                self.merge_views(before, [after_body, self.views], [body, orelse], s.lineno)
            self.emit_if(out, cond, body, orelse)
        elif isinstance(s, (ast.For, ast.While)):
            self.refuse_swapped_bases(s)
            unrolled = swaps.unroll(s, self.is_array_local, self.fresh_local, self.error,
                                    set(self.src.params), self.is_view_local)
            if unrolled is not None:
                for x in unrolled:
                    self.stmt(x, out)
                return
            before, mark, first = dict(self.views), len(self.view_uses), self.ctx.serial
            if isinstance(s, ast.For):
                self.for_loop(s, out)
            else:
                self.while_loop(s, out)
            self.check_loop_views(before, mark, first, s.lineno)
        elif isinstance(s, (ast.Break, ast.Continue)):
            node = type(s)(lineno=s.lineno)
            ir.annotate(node, origin=self.origin)
            out.append(node)
        elif isinstance(s, ast.Return):
            if s.value is None:
                raise self.error(s, "`return` without a value",
                                 "Return a number: the function's result.")
            value = self.rhs(s.value, out)
            if isinstance(value, ast.Name) and self.array_ndim(value) is not None:
                value = self.view_of(value.id, out)
            if isinstance(value, View) and not has_take(value) and len(self.ctx.stack) > 1:
                # a helper returning (part of) an array: the caller gets the same memory
                self.returned_views.append((s, value))
                value = ir.const(0)
            elif isinstance(value, (_Shape, _TupleValue)):
                raise self.error(s.value, "returning a tuple", "Return one value.")
            node = ast.Return(value=self.to_atom(out, value), lineno=s.lineno)
            ir.annotate(node, origin=self.origin)
            out.append(node)
        elif isinstance(s, ast.Pass):
            return
        else:
            raise AssertionError(type(s))

    def emit_if(self, out, cond, body, orelse):
        """`if` on a fresh condition variable that nothing inside the branches reassigns.
        A constant condition keeps only its branch: numba would prune the other one and
        leave variables the backward sweep reads undefined."""
        if isinstance(cond, ast.Constant):
            out.extend(body if cond.value else orelse)
            return
        if not body and not orelse:
            return
        c = self.fresh("_c")
        self.emit_assign(out, c, cond)
        node = ast.If(test=ir.name(c), body=body or [ast.Pass()], orelse=orelse, lineno=0)
        ir.annotate(node, origin=self.origin)
        out.append(node)

    def assign_to(self, tgt, value, out):
        if isinstance(tgt, ast.Name):
            if isinstance(value, (_Shape, _TupleValue)):
                raise self.error(tgt, "a tuple assigned to a single name",
                                 "Unpack it into names: n, m = a.shape.")
            target = self.local(tgt.id)
            if not isinstance(target, str):
                raise self.error(tgt, f"assigning to parameter '{tgt.id}' of an inlined helper",
                                 "Copy the parameter into a new local variable first.")
            if isinstance(value, ast.Name) and self.array_ndim(value) is not None and \
                    value.id != target:
                value = self.view_of(value.id, out)     # `y = x`: two names, one array
            if isinstance(value, View) and not has_take(value):
                self.bind_view(target, value, out)
                return
            if isinstance(value, Lazy) and tgt.id in self.lazy_ok and \
                    not isinstance(value, Scalar) and isinstance(target, str):
                self.bind_lazy(target, value, tgt.id)
                return
            if isinstance(value, Lazy):
                value = self.materialize(value, out, tgt)
            if isinstance(value, ast.Name) and value.id == target:
                return      # `z = z` does nothing (its adjoint would zero z_bar: fuzzer find)
            if target in ir.atom_names(ir.operands(value)) and not ir.is_atom(value):
                value = self.to_atom(out, value)
            self.emit_assign(out, target, value)
        elif isinstance(tgt, ast.Subscript):
            what, arr, idx = self.resolve_subscript(tgt.value, tgt.slice, out, tgt)
            if what == "view":
                self.store_view(arr, value, None, out, tgt)
                return
            atom = self.to_atom(out, value)
            sub = ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Store())
            self.emit_assign(out, sub, atom)
        elif isinstance(tgt, ast.Tuple):
            self.unpack(tgt, value, out)
        else:
            raise self.error(tgt, f"assigning to {type(tgt).__name__}",
                             "Assign to a variable name or an array element a[i].")

    def unpack(self, tgt, value, out):
        if isinstance(value, _Shape):
            items = [value.item(k) for k in range(value.ndim if value.ndim is not None
                                                  else len(tgt.elts))]
        elif isinstance(value, _TupleValue):
            items = value.items
        else:
            raise self.error(tgt, "unpacking a value that is not a tuple",
                             "Unpack a tuple written out (a, b = x, y) or an array's shape.")
        if len(items) != len(tgt.elts):
            raise self.error(tgt, f"unpacking {len(items)} values into {len(tgt.elts)} names",
                             "Use as many names as values.")
        targets = _tuple_target_names(tgt, self)
        held = []
        for v in items:
            if isinstance(v, View) and not has_take(v):
                held.append(v)      # a view: nothing to compute, nothing the targets change
                continue
            v = self.to_atom(out, v)
            if isinstance(v, ast.Name) and v.id in targets:
                t = self.fresh()
                self.emit_assign(out, t, v)
                v = ir.name(t)
            held.append(v)
        for t, v in zip(tgt.elts, held):
            if isinstance(t, ast.Tuple):
                raise self.error(t, "nested tuple unpacking", "Unpack one level at a time.")
            self.assign_to(t, v, out)

    def aug_assign(self, s, out):
        """`t op= e`. Python loads an element target before it evaluates e (which may call a
        helper that writes the array), so the load comes first here too."""
        if self.view_name(s.target) is not None:
            view = self.use_view(self.view_name(s.target), s.target)
            self.store_view(view, self.rhs(s.value, out), s.op, out, s)
            return
        if isinstance(s.target, ast.Name) and s.target.id in self.src.locals:
            local = self.local(s.target.id)
            arr = local if isinstance(local, str) else getattr(local, "id", None)
            if arr is not None and self.array_ndim(ir.name(arr)) is not None:
                # `a += e` on an array updates it in place, as numpy does
                self.store_view(self.view_of(arr, out), self.rhs(s.value, out), s.op, out, s)
                return
        if isinstance(s.target, ast.Name):
            rhs = self.atom(s.value, out)
            cur = ir.name(self.local(s.target.id))
            self.assign_to(s.target, self.binop(s.op, cur, rhs, s), out)
        elif isinstance(s.target, ast.Subscript):
            what, arr, idx = self.resolve_subscript(s.target.value, s.target.slice, out, s)
            if what == "view":
                current = None
                if has_take(arr) and self.may_write(s.value):
                    # x[idx] op= e reads x[idx] (a copy) before e runs, which may write x
                    current = self.view_of(self.materialize(arr, out, s, copy=True).id, out)
                self.store_view(arr, self.rhs(s.value, out), s.op, out, s, current)
                return
            cur = self.to_atom(out, ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Load()))
            rhs = self.atom(s.value, out)
            new = self.to_atom(out, self.binop(s.op, cur, rhs, s))
            sub = ast.Subscript(value=ir.name(arr), slice=copy.deepcopy(idx), ctx=ast.Store())
            self.emit_assign(out, sub, new)
        else:
            raise self.error(s, "augmented assignment to this target",
                             "Use a variable name or an array element a[i].")

    def bound(self, atom, loop, out, stem):
        """A loop bound that keeps its value through the loop: a name the loop body assigns
        is copied first, as Python evaluates range(...) once."""
        if isinstance(atom, ast.Name) and atom.id in self.assigned_in(loop.body):
            t = self.fresh(stem)
            self.emit_assign(out, t, atom)
            return ir.name(t)
        return atom

    def assigned_in(self, stmts):
        return {self.local(n) for n in _assigned_user_names(stmts)
                if isinstance(self.local(n), str)}

    def for_loop(self, s, out):
        it = s.iter
        if not (isinstance(it, ast.Call) and self.src.resolve(it.func) is range):
            raise self.error(s, "a for loop that is not over range(...)",
                             "Loop over indices: `for i in range(len(x)):` and read x[i].")
        if not isinstance(s.target, ast.Name):
            raise self.error(s, "a for loop with a tuple target",
                             "Loop over `range(...)` with a single index variable.")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(s, "range() with keywords or the wrong number of arguments",
                             "Call range with 1 to 3 positional arguments.")
        args = [self.atom(a, out) for a in it.args]
        lo, hi, st = ([ir.const(0)] + args + [ir.const(1)])[:3] if len(args) == 1 else \
            (args + [ir.const(1)])[:3]
        lo = self.bound(lo, s, out, "_lo")
        hi = self.bound(hi, s, out, "_hi")
        st = self.bound(st, s, out, "_st")
        target = self.local(s.target.id)
        body = []
        var = target
        self.ctx.loop_depth += 1
        if s.target.id in _assigned_user_names(s.body):
            var = self.fresh("_i")
            self.emit_assign(body, target, ir.name(var))
        body += self.block(s.body)
        self.ctx.loop_depth -= 1
        self.origin = (self.loc.filename, s.lineno, self.loc.name)
        call = ast.Call(func=ir.name("range"), args=[lo, hi, st], keywords=[])
        if isinstance(st, ast.Constant) and st.value == 1:
            call.args = [hi] if isinstance(lo, ast.Constant) and lo.value == 0 else [lo, hi]
        node = ast.For(target=ir.store(var), iter=call, body=body or [ast.Pass()], orelse=[],
                       lineno=s.lineno)
        ir.annotate(node, user=True)    # a loop the user wrote (not one of vectorized code)
        ir.annotate(node, origin=self.origin)
        node._bounds = (lo, hi, st)
        out.append(node)

    def while_loop(self, s, out):
        body = []
        self.origin = (self.loc.filename, s.lineno, self.loc.name)
        cond = self.atom(s.test, body)
        stop = self.fresh("_c")
        self.emit_assign(body, stop, ast.UnaryOp(op=ast.Not(), operand=cond))
        brk = ast.Break(lineno=s.lineno)
        ir.annotate(brk, origin=self.origin)
        node = ast.If(test=ir.name(stop), body=[brk], orelse=[], lineno=s.lineno)
        ir.annotate(node, origin=self.origin)
        body.append(node)
        self.ctx.loop_depth += 1
        body += self.block(s.body)
        self.ctx.loop_depth -= 1
        loop = ast.While(test=ir.const(True), body=body, orelse=[], lineno=s.lineno)
        ir.annotate(loop, origin=(self.loc.filename, s.lineno, self.loc.name))
        out.append(loop)

    # expressions ---------------------------------------------------------
    def store_view(self, view, value, op, out, node, current=None):
        """`view = value` or `view op= value` elementwise. A value that reads the target
        array is computed into a new array first, as numpy computes the whole right-hand
        side before it assigns."""
        value = self.lazy_operand(value, out)
        if op is not None:
            cur = current or View(view.base, view.ndim, view.dims, view.fixed, view.shape,
                                  None, view.parent, view.contiguous)
            value = Op(("bin", op), [cur, self.as_lazy(value)],
                       self.broadcast([view.shape, self.as_lazy(value).shape], out, node))
        if isinstance(value, Lazy) and any(isinstance(leaf, View) and leaf.base == view.base
                                           and not _same_elements(leaf, view)
                                           and not _disjoint(leaf, view)
                                           for leaf in _leaves(value)):
            # x[::-1] = x, u[1:-1] = u[2:] + u[:-2], out[idx] += v (repeated indices): read
            # everything before writing
            value = self.lazy_operand(self.materialize(value, out, node, copy=True), out)
        self.store_elements(view, value, out, node)

    def operand(self, node, out):
        """An atom, or a Lazy array expression (fused into whatever consumes it)."""
        return self.lazy_operand(self.rhs(node, out), out)

    def operands(self, nodes, out):
        """Operands evaluated left to right. numpy computes an array expression when it is
        evaluated: one that a later operand could change by calling a helper that writes
        arrays (`(x + x) * h(x)`) is computed first (a view still reads the array when it is
        used, as numpy's views do)."""
        values = []
        for k, n in enumerate(nodes):
            v = self.operand(n, out)
            if isinstance(v, Op) and any(self.may_write(m) for m in nodes[k + 1:]):
                v = self.view_of(self.materialize(v, out, n).id, out)
            values.append(v)
        return values

    def may_write(self, node):
        """Whether evaluating `node` calls a helper (which may write arrays)."""
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                obj = self.src.resolve(n.func) if not isinstance(n.func, ast.Attribute) or \
                    self.src.resolve(n.func.value) is not MISSING else MISSING
                inner = unwrap(obj) if obj is not MISSING else None
                if isinstance(inner, types.FunctionType) and not _library_function(inner):
                    return True
        return False

    def atom(self, node, out):
        value = self.rhs(node, out)
        if isinstance(value, (_Shape, _TupleValue)):
            raise self.error(node, "a tuple used as a value",
                             "Use tuples only to unpack them into names (a, b = b, a).")
        return self.to_atom(out, value)

    def rhs(self, node, out):
        """Normalize an expression into an atom or a single primitive operation."""
        if isinstance(node, ast.Constant):
            return ir.const(node.value)
        if isinstance(node, ast.Name):
            return self.load_name(node)
        if isinstance(node, ast.BinOp):
            left, right = self.operands([node.left, node.right], out)
            if isinstance(node.op, ast.MatMult):
                return self.matmul(left, right, out, node)
            if isinstance(left, Lazy) or isinstance(right, Lazy):
                return self.elementwise(("bin", node.op), [left, right], out, node)
            return self.binop(node.op, left, right, node)
        if isinstance(node, ast.UnaryOp):
            operand = self.operand(node.operand, out)
            if isinstance(operand, Lazy):
                if isinstance(node.op, ast.UAdd):
                    return operand
                if not isinstance(node.op, ast.USub):
                    raise self.error(node, "`not` / `~` on an array",
                                     "Use np.where(cond, a, b) for elementwise choices.")
                return self.elementwise(("unary", node.op), [operand], out, node)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not) and isinstance(operand, ast.Constant):
                return ir.const(not operand.value)
            if isinstance(node.op, ast.USub) and isinstance(operand, ast.Constant) and \
                    isinstance(operand.value, int) and not isinstance(operand.value, bool):
                return ir.const(-operand.value)     # a[1:-1]: the bound is a constant
            return ast.UnaryOp(op=node.op, operand=operand)
        if isinstance(node, ast.Compare):
            return self.compare(node, out)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, out)
        if isinstance(node, ast.IfExp):
            return self.ifexp(node, out)
        if isinstance(node, ast.Call):
            return self.call(node, out)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, out)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, out)
        if isinstance(node, ast.Tuple):
            return _TupleValue([self.tuple_item(e, out) for e in node.elts])
        if isinstance(node, ast.List):
            raise self.error(node, "a list literal (outside np.array) is not supported",
                             "Use np.array([a, b, c]) for an array of numbers.")
        raise AssertionError(type(node))

    def tuple_item(self, node, out):
        """An element of a tuple: an atom, or a view (`cur, nxt = nxt, cur` of views)."""
        value = self.rhs(node, out)
        if isinstance(value, ast.Name) and self.array_ndim(value) is not None:
            return self.view_of(value.id, out)
        if isinstance(value, View) and not has_take(value):
            return value
        if isinstance(value, (_Shape, _TupleValue)):
            raise self.error(node, "a tuple inside a tuple", "Unpack one level at a time.")
        return self.to_atom(out, value)

    def load_name(self, node):
        if self.view_name(node) is not None:
            return self.use_view(self.view_name(node), node)
        if node.id in self.src.locals:
            target = self.local(node.id)
            if isinstance(target, str) and target in self.lazy:
                return self.lazy[target]
            return _copy(target) if not isinstance(target, str) else ir.name(target)
        obj = self.src.resolve_name(node.id)
        if obj is MISSING:
            raise self.error(node, f"the name '{node.id}' is not defined",
                             "Define it at module level before calling the gradient.")
        if isinstance(obj, (bool, int, float)) and not isinstance(obj, np.ndarray):
            return ir.const(obj)
        if isinstance(obj, np.ndarray):
            spelled = self.ctx.env.spell(obj, node.id)
            self.ctx.arrays[spelled] = (obj.ndim, {"f": "f", "b": "b"}.get(obj.dtype.kind, "i"))
            return ir.name(spelled)
        raise self.error(node, f"the global '{node.id}' ({type(obj).__name__}) used as a value",
                         "Use numbers, numpy arrays, or call it as a function.")

    def shape_of(self, node, out):
        """The _Shape of an array-valued expression (a name, a view, an expression)."""
        if isinstance(node, ast.Name) and self.view_name(node) is None:
            obj = None if node.id in self.src.locals else self.src.resolve_name(node.id)
            if node.id in self.src.locals or isinstance(obj, np.ndarray):
                arr = self.array_name(node)
                if arr not in self.lazy:
                    return _Shape(arr, ndim=self.array_ndim(ir.name(arr)))
        value = self.operand(node, out)
        if not isinstance(value, Lazy) or isinstance(value, Scalar):
            raise self.error(node, f"the shape of `{ast.unparse(node)}`, which is not an array",
                             "Ask arrays for their shape.")
        return _Shape(atoms=[ir.const(1) if a is ONE else a for a in value.shape])

    def attribute(self, node, out):
        if node.attr == "shape" and not self.is_module(node.value):
            return self.shape_of(node.value, out)
        if node.attr == "T":
            return self.transpose(self.operand(node.value, out), out)
        if node.attr in ("size", "ndim") and not self.is_module(node.value):
            shape = self.shape_of(node.value, out)
            if shape.ndim is None:
                raise self.error(node, f"`.{node.attr}` of an array whose dimensions are not "
                                 "known", "Pass example arguments (adjit.show(f, stage, *args)).")
            if node.attr == "ndim":
                return ir.const(shape.ndim)
            return self.size_of([self.to_atom(out, shape.item(k), "_n")
                                 for k in range(shape.ndim)], out)
        obj = self.src.resolve(node)
        if obj is not MISSING and isinstance(obj, (int, float)):
            return ir.const(float(obj) if isinstance(obj, float) else obj)
        raise self.error(node, f"the attribute `.{node.attr}`",
                         "Use elements a[i], a.shape[k], len(a), or constants like math.pi.")

    def is_module(self, node):
        obj = self.src.resolve(node)
        return isinstance(obj, types.ModuleType)

    def size_of(self, shape, out):
        """The number of elements of an array of this shape (size atoms, ONE for 1)."""
        size = ir.const(1)
        for n in shape:
            if n is None or _is_one(n):
                continue
            size = n if _is_one(size) else \
                self.to_atom(out, ast.BinOp(left=size, op=ast.Mult(), right=n), "_n")
        return size

    def binop(self, op, left, right, node):
        return ast.BinOp(left=left, op=op, right=right)

    def compare(self, node, out):
        if len(node.ops) == 1:
            left, right = self.operands([node.left, node.comparators[0]], out)
            if isinstance(left, Lazy) or isinstance(right, Lazy):
                return self.elementwise(("cmp", node.ops[0]), [left, right], out, node)
            if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
                return ir.const(_constant_compare(node.ops[0], left.value, right.value))
            return ast.Compare(left=left, ops=node.ops, comparators=[right])
        left = self.operand(node.left, out)
        if isinstance(left, Lazy):
            raise self.error(node, "a chained comparison of arrays",
                             "Compare arrays one pair at a time inside np.where.")
        result = self.fresh()
        pending = []
        for op, comp in zip(node.ops, node.comparators):
            pending.append((op, comp))
        return self._chain(left, pending, result, out)

    def _chain(self, left, pending, result, out):
        op, comp = pending[0]
        right = self.atom(comp, out)
        self.emit_assign(out, result, ast.Compare(left=left, ops=[op], comparators=[right]))
        if len(pending) > 1:
            inner = []
            self._chain(right, pending[1:], result, inner)
            self.emit_if(out, ir.name(result), inner, [])
        return ir.name(result)

    def boolop(self, node, out):
        result = self.fresh()
        self.emit_assign(out, result, self.atom(node.values[0], out))
        for value in node.values[1:]:
            rest = []
            self.emit_assign(rest, result, self.atom(value, rest))
            if isinstance(node.op, ast.And):
                self.emit_if(out, ir.name(result), rest, [])
            else:
                self.emit_if(out, ir.name(result), [], rest)
        return ir.name(result)

    def ifexp(self, node, out):
        cond = self.atom(node.test, out)
        result = self.fresh()
        body, orelse = [], []
        self.emit_assign(body, result, self.atom(node.body, body))
        self.emit_assign(orelse, result, self.atom(node.orelse, orelse))
        self.emit_if(out, cond, body, orelse)
        return ir.name(result)

    def array_name(self, node):
        if isinstance(node, ast.Name) and node.id in self.src.locals:
            target = self.local(node.id)
            if isinstance(target, ast.Name):
                return target.id
            if isinstance(target, str):
                return target
        if isinstance(node, ast.Name):
            obj = self.src.resolve_name(node.id)
            if isinstance(obj, np.ndarray):
                return self.ctx.env.spell(obj, node.id)
        raise self.error(node, "indexing something that is not an array variable",
                         "Index numpy arrays held in variables: a[i] or a[i, j].")

    def indices(self, sub, out):
        idx = sub.slice
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        atoms = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.error(e, "a slice (a[i:j]) is not supported",
                                 "Index single elements in a loop (a[i]).")
            atoms.append(self.atom(e, out))
        return ast.Tuple(elts=atoms, ctx=ast.Load()) if len(atoms) != 1 else atoms[0]

    def subscript(self, node, out):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            shape = self.attribute(node.value, out)
            k = self.atom(node.slice, out)
            if shape.ndim is not None and isinstance(k, ast.Constant) and \
                    isinstance(k.value, int) and -shape.ndim <= k.value < shape.ndim:
                return shape.item(k.value % shape.ndim)
            if shape.array is None:
                raise self.error(node, "a shape indexed by a variable or out of range",
                                 f"Index the shape with a constant from 0 to {shape.ndim - 1}.")
            return ast.Subscript(value=ast.Attribute(value=ir.name(shape.array), attr="shape",
                                                     ctx=ast.Load()),
                                 slice=k, ctx=ast.Load())
        what, arr, idx = self.resolve_subscript(node.value, node.slice, out, node)
        if what == "view":
            return arr
        key = (arr, ast.unparse(idx))
        cached = self.loads.get(key)
        if cached is not None and cached[0] is out:
            return ir.name(cached[1])
        t = self.to_atom(out, ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Load()))
        self.loads[key] = (out, t.id, set(ir.atom_names(ir.index_atoms(
            ast.Subscript(value=ir.name(arr), slice=idx)))))
        return t

    def resolve_subscript(self, base_node, sl, out, node):
        """("elem", array name, index node) for one element, or ("view", View, None)."""
        plain = view = None
        if isinstance(base_node, ast.Name) and self.view_name(base_node) is not None:
            view = self.use_view(self.view_name(base_node), base_node)
        elif isinstance(base_node, ast.Name):
            plain = self.array_name(base_node)
        else:
            base = self.operand(base_node, out)
            if isinstance(base, View) and not has_take(base):
                view = base     # x[1:][0], x.T[i]: the same memory (a gather is a copy)
            elif isinstance(base, Lazy) and not isinstance(base, Scalar):
                view = self.view_of(self.materialize(base, out, node).id, out)
            else:
                raise self.error(node, "indexing something that is not an array",
                                 "Index numpy arrays: a[i], a[i, j], a[1:], a[idx].")
        items = self.index_items(sl, out, node)
        if plain is not None:
            ndim = self.array_ndim(ir.name(plain))
            if all(it[0] == "int" for it in items) and (ndim is None or len(items) == ndim):
                return "elem", plain, _index_node([it[1] for it in items])
            view = self.view_of(plain, out)
        w = self.index_view(view, items, out, node)
        if not w.shape and not has_take(w):
            return "elem", w.base, _index_node(self.map_index(w, [], None, out))
        return "view", w, None

    def cuda_intrinsic(self, func):
        """"grid", "gridsize", "atomic.add" for `cuda.<that>` (cuda = numba.cuda), else None.
        Resolved by name: outside the simulator numba.cuda has no Python attribute `grid`."""
        chain = []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or not chain:
            return None
        base = self.src.resolve_name(func.id)
        if not (isinstance(base, types.ModuleType) and base.__name__.startswith("numba.cuda")):
            return None
        return ".".join(reversed(chain))

    def atomic_add(self, node, out):
        """`cuda.atomic.add(a, i, v)`: a store that adds (kept atomic in generated code)."""
        if len(node.args) != 3 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise self.error(node, "cuda.atomic.add with other than (array, index, value)",
                             "Write cuda.atomic.add(a, i, v) with an array name.")
        arr = self.array_name(node.args[0])
        target = ast.Subscript(value=node.args[0], slice=node.args[1], ctx=ast.Store())
        idx = self.indices(target, out)
        val = self.atom(node.args[2], out)
        sub = ast.Subscript(value=ir.name(arr), slice=idx, ctx=ast.Store())
        self.emit_assign(out, sub, val)
        ir.annotate(out[-1], atomic=True)

    def call(self, node, out):
        func = node.func
        cu = self.cuda_intrinsic(func)
        if cu in ("grid", "gridsize"):
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or \
                    node.args[0].value != 1:
                raise self.error(node, f"cuda.{cu} of a 2-D or 3-D grid",
                                 f"Use a 1-D grid: cuda.{cu}(1).")
            return ast.Call(func=ast.Attribute(value=ir.name("cuda"), attr=cu, ctx=ast.Load()),
                            args=[ir.const(1)], keywords=[])
        if cu is not None:
            raise self.error(node, f"cuda.{cu} in differentiated code",
                             "Use cuda.grid(1), cuda.gridsize(1), and cuda.atomic.add(a, i, v) "
                             "as a statement.")
        if isinstance(func, ast.Attribute) and (self.src.resolve(func.value) is MISSING or
                                                isinstance(self.src.resolve(func.value),
                                                           np.ndarray)):
            return self.method(node, out)
        obj = self.src.resolve(func)
        if obj is MISSING:
            raise self.error(node, f"a call to `{ast.unparse(func)}`, which adjit cannot resolve",
                             "Call module-level functions, math.*, or numpy allocation "
                             "functions.")
        if obj in ALLOCATORS:
            return self.allocation(node, obj, out)
        handled = self.numpy_call(node, obj, out)
        if handled is not None:
            return handled
        inner = unwrap(obj)
        if isinstance(inner, types.FunctionType) and not _library_function(inner) and \
                getattr(obj, "__adjit_function__", None) is None:
            return self.inline(node, inner, out)
        if node.keywords:
            raise self.error(node, f"keyword arguments in a call to `{ast.unparse(func)}`",
                             "Pass arguments by position.")
        if obj in ARRAY_QUERIES:
            if len(node.args) != 1:
                raise self.error(node, "len() with other than one argument", "Use len(a).")
            shape = self.shape_of(node.args[0], out)
            if shape.array is not None:
                return ast.Call(func=ir.name("len"), args=[ir.name(shape.array)], keywords=[])
            if not shape.ndim:
                raise self.error(node, "len() of a 0-d array", "Use the value itself.")
            return shape.item(0)
        rule = rule_for_call(obj)
        if rule is not None:
            return self.primitive(node, obj, rule, out)
        if getattr(obj, "__adjit_function__", None) is not None:
            raise self.error(node, f"a call to the gradient `{ast.unparse(func)}` inside a "
                             "function adjit differentiates",
                             "Derivatives of gradients (second derivatives) are not supported: "
                             "compute the gradient outside and pass its value in as an "
                             "argument, or write that derivative as code.")
        inner = unwrap(obj)
        if isinstance(inner, types.FunctionType) and not _library_function(inner):
            return self.inline(node, inner, out)
        raise self.error(node, f"a call to `{ast.unparse(func)}`, which has no derivative rule",
                         "Use math functions adjit knows (see docs), or write the helper as a "
                         "Python/@njit function adjit can read.")

    def method(self, node, out):
        """`a.sum()`, `a.reshape(...)`, `a.copy()` and the other array methods."""
        func = node.func
        name = func.attr
        if name == "copy" and not node.args and not node.keywords:
            base = self.rhs(func.value, out)
            if isinstance(base, ast.Name) and self.array_ndim(base) is not None:
                base = ir.name(self.array_name(func.value)) if isinstance(func.value, ast.Name) \
                    else base
                return ast.Call(func=ast.Attribute(value=base, attr="copy", ctx=ast.Load()),
                                args=[], keywords=[])
            base = self.lazy_operand(base, out)
            if isinstance(base, View) and base.is_identity():
                return ast.Call(func=ast.Attribute(value=ir.name(base.base), attr="copy",
                                                   ctx=ast.Load()), args=[], keywords=[])
            if isinstance(base, Lazy):
                return self.materialize(base, out, node)
            arr = self.array_name(func.value)
            return ast.Call(func=ast.Attribute(value=ir.name(arr), attr="copy", ctx=ast.Load()),
                            args=[], keywords=[])
        if name in METHOD_REDUCTIONS:
            axis = self.axis_argument(node, node.args, 0)
            return self.reduce(METHOD_REDUCTIONS[name], self.operand(func.value, out), axis,
                               out, node)
        if name == "reshape" and not node.keywords:
            args = node.args[0].elts if len(node.args) == 1 and \
                isinstance(node.args[0], (ast.Tuple, ast.List)) else node.args
            return self.reshape_view(self.operand(func.value, out), args, out, node)
        if name in ("ravel", "flatten") and not node.args and not node.keywords:
            return self.reshape_view(self.operand(func.value, out), [ir.const(-1)], out, node,
                                     copy=name == "flatten")
        if name == "dot" and len(node.args) == 1:
            return self.matmul(self.operand(func.value, out), self.operand(node.args[0], out),
                               out, node)
        if name == "swapaxes" and len(node.args) == 2 and not node.keywords:
            return self.permute_axes("swapaxes", self.operand(func.value, out), node.args,
                                     node, out)
        if name == "transpose" and not node.keywords:
            axes = node.args[0] if len(node.args) == 1 and \
                isinstance(node.args[0], (ast.Tuple, ast.List)) else \
                (ast.Tuple(elts=node.args, ctx=ast.Load()) if node.args else None)
            return self.transpose(self.operand(func.value, out), out,
                                  self.axes_argument(axes, node), node)
        raise self.error(node, f"the method call `.{name}(...)`",
                         "Array methods adjit knows: copy, sum, mean, prod, max, min, reshape, "
                         "ravel, flatten, dot, transpose, swapaxes; use the numpy functions or "
                         "loops for the rest.")

    def like_shape(self, arg, out, node, like=None):
        """Size atoms of the array expression `arg` (for the *_like allocators)."""
        like = self.operand(arg, out) if like is None else like
        if not isinstance(like, Lazy) or isinstance(like, Scalar):
            raise self.error(node, "a *_like allocation of something that is not an array",
                             "Pass an array: np.zeros_like(x).")
        return [ir.const(1) if s is ONE else s for s in like.shape]

    def axis_argument(self, node, args, position):
        """The constant `axis` of a reduction (positional or keyword), or None."""
        value = args[position] if len(args) > position else None
        for kw in node.keywords:
            if kw.arg == "axis":
                value = kw.value
            else:
                raise self.error(node, f"the keyword argument `{kw.arg}=`",
                                 "adjit supports axis= (an int constant) on reductions.")
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return None
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            value = ast.Constant(value=-value.operand.value)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int)):
            raise self.error(node, "an axis that is not an int constant",
                             "Write the axis as a number: axis=0 or axis=-1.")
        return value.value

    def permute_axes(self, what, v, axis_nodes, node, out):
        """np.swapaxes(v, a, b) / v.swapaxes(a, b) and np.moveaxis(v, src, dst): views."""
        d = len(v.shape) if isinstance(v, Lazy) else 0
        a, b = (self.axes_argument(e, node, d) for e in axis_nodes)
        if what == "moveaxis":
            a, b = (list(e) if isinstance(e, list) else [e] for e in (a, b))
            if len(a) != len(b) or len(set(a)) != len(a) or len(set(b)) != len(b):
                raise self.error(node, "np.moveaxis with repeated axes or source and "
                                 "destination of different lengths",
                                 "Move as many distinct axes as you name.")
            rest = [k for k in range(d) if k not in a]
            order = [None] * d
            for src_axis, dst_axis in zip(a, b):
                order[dst_axis] = src_axis
            order = [k if k is not None else rest.pop(0) for k in order]
        else:
            order = list(range(d))
            order[a], order[b] = order[b], order[a]
        return self.transpose(v, out, order, node)

    def axes_argument(self, node, where, ndim=None):
        """A constant axis (int) or tuple of axes (list of ints) from source; None for none.
        With `ndim`, negative axes count from the end and out-of-range ones are refused."""
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return None
        if isinstance(node, (ast.Tuple, ast.List)):
            return [self.axes_argument(e, where, ndim) for e in node.elts]
        value = node
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            value = ast.Constant(value=-value.operand.value)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, int) and
                not isinstance(value.value, bool)):
            raise self.error(where, "an axis that is not an int constant",
                             "Write axes as numbers: axis=0, axis=-1, (1, 0, 2).")
        k = value.value
        if ndim is not None:
            if not -ndim <= k < ndim:
                raise self.error(where, f"axis {k} of a {ndim}-D array",
                                 f"Use an axis from {-ndim} to {ndim - 1}.")
            k %= ndim
        return k

    def numpy_call(self, node, obj, out):
        """Vectorized numpy functions; None when `obj` is not one of them."""
        try:
            known = obj in ELEMENTWISE or obj in REDUCTIONS or obj in ARRAY_FUNCTIONS
        except TypeError:
            return None
        if not known:
            return None
        args = node.args
        if obj in REDUCTIONS:
            axis = self.axis_argument(node, args, 1)
            return self.reduce(REDUCTIONS[obj], self.operand(args[0], out), axis, out, node)
        if obj in ELEMENTWISE:
            if node.keywords:
                raise self.error(node, f"keyword arguments to `{ast.unparse(node.func)}`",
                                 "Pass arguments by position.")
            fn = ELEMENTWISE[obj]
            arity = ELEMENTWISE_ARITY[obj]
            if len(args) != arity:
                raise self.error(node, f"`{ast.unparse(node.func)}` with {len(args)} "
                                 f"argument(s)", f"Call it with {arity}.")
            operands = self.operands(args, out)
            lazy = self.elementwise(("call", fn), operands, out, node)
            if lazy is not None:
                return lazy
            scalar = Op(("call", fn), [Scalar(a) for a in operands], [])
            return self.scalar_op(scalar.fn, [a.atom for a in scalar.args], out)
        what = ARRAY_FUNCTIONS[obj]
        handler = getattr(self, f"lower_{what}", None)
        if handler is not None:
            return handler(node, out)
        if what in ("dot", "matmul"):
            return self.matmul(self.operand(args[0], out), self.operand(args[1], out), out, node)
        if what == "outer":
            return self.outer(args[0] and self.operand(args[0], out),
                              self.operand(args[1], out), out, node)
        if what == "transpose":
            axes = args[1] if len(args) > 1 else None
            for kw in node.keywords:
                if kw.arg != "axes" or axes is not None:
                    raise self.error(node, f"np.transpose with `{kw.arg}=`",
                                     "Write np.transpose(x) or np.transpose(x, (1, 0, 2)).")
                axes = kw.value
            return self.transpose(self.operand(args[0], out), out,
                                  self.axes_argument(axes, node), node)
        if what in ("swapaxes", "moveaxis"):
            if len(args) != 3 or node.keywords:
                raise self.error(node, f"np.{what} with other than (array, axis, axis)",
                                 f"Write np.{what}(x, a, b) with constant axes.")
            return self.permute_axes(what, self.operand(args[0], out), args[1:], node, out)
        if what == "reshape":
            if len(args) != 2 or node.keywords:
                raise self.error(node, "np.reshape with other than (array, shape)",
                                 "Write np.reshape(x, (m, n)).")
            shape = args[1].elts if isinstance(args[1], (ast.Tuple, ast.List)) else [args[1]]
            return self.reshape_view(self.operand(args[0], out), shape, out, node)
        if what == "ravel":
            if len(args) != 1 or node.keywords:
                raise self.error(node, "np.ravel with an order", "Write np.ravel(x).")
            return self.reshape_view(self.operand(args[0], out), [ir.const(-1)], out, node)
        if what == "take":
            if len(args) not in (2, 3) or any(kw.arg != "axis" for kw in node.keywords):
                raise self.error(node, "np.take with other than (array, indices, axis)",
                                 "Write np.take(x, idx) or np.take(x, idx, axis=k).")
            axis = args[2] if len(args) > 2 else next((kw.value for kw in node.keywords), None)
            x = self.operand(args[0], out)
            if not isinstance(x, Lazy) or isinstance(x, Scalar):
                raise self.error(node, "np.take from something that is not an array",
                                 "Take from arrays.")
            axis = self.axes_argument(axis, node, len(x.shape))
            if axis is None:
                x = self.reshape_view(x, [ir.const(-1)], out, node)
                axis = 0
            if not isinstance(x, View):
                x = self.view_of(self.materialize(x, out, node).id, out)
            full = ("slice", ast.Slice(lower=None, upper=None, step=None))
            items = [full] * axis + self.index_items(args[1], out, node)
            w = self.index_view(x, items, out, node)
            if not w.shape and not has_take(w):
                return self.to_atom(out, ast.Subscript(value=ir.name(w.base), slice=_index_node(
                    self.map_index(w, [], None, out)), ctx=ast.Load()))
            return w
        if what == "norm":
            if len(args) != 1 or node.keywords:
                raise self.error(node, "np.linalg.norm with ord= or axis=",
                                 "adjit differentiates the 2-norm of a whole array: "
                                 "np.linalg.norm(x).")
            x = self.operand(args[0], out)
            sq = self.elementwise(("call", "square"), [x], out, node)
            total = self.reduce("sum", sq, None, out, node) if sq is not None else \
                self.to_atom(out, ast.BinOp(left=x, op=ast.Mult(), right=x))
            return self.scalar_op(("call", math.sqrt), [total], out)
        if what == "array":
            if len(args) != 1 or any(kw.arg != "dtype" for kw in node.keywords):
                raise self.error(node, "np.array with other than one list argument",
                                 "Write np.array([a, b, c]).")
            return self.array_literal(args[0], out)
        if what in ("concatenate", "stack"):
            axis = self.axis_argument(node, args, 1) or 0
            if not args or not isinstance(args[0], (ast.Tuple, ast.List)):
                raise self.error(node, f"np.{what} of something other than a tuple of arrays",
                                 f"Write np.{what}((a, b)).")
            return self.concatenate(args[0].elts, axis, out, node, stack=what == "stack")
        if what in ("full", "full_like"):
            if len(args) != 2 or node.keywords:
                raise self.error(node, f"np.{what} with other than (shape, value)",
                                 f"Write np.{what}(shape, value).")
            if what == "full_like":
                shape = self.like_shape(args[0], out, node)
            else:
                shape_node = args[0]
                if isinstance(shape_node, ast.Attribute) and shape_node.attr == "shape":
                    given = self.shape_of(shape_node.value, out)
                    shape = [self.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
                else:
                    elts = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
                    shape = [self.atom(e, out) for e in elts]
            name = self.new_array(shape, out)
            self.store_elements(self.full_view(name, shape), self.operand(args[1], out), out,
                                node)
            return ir.name(name)
        if what in ("linspace", "arange", "eye"):
            if node.keywords:
                raise self.error(node, f"keyword arguments to np.{what}",
                                 "Pass arguments by position.")
            spelled = ast.parse(self.ctx.env.spell(obj, what), mode="eval").body
            return ast.Call(func=spelled, args=[self.atom(a, out) for a in args], keywords=[])
        raise AssertionError(what)

    def primitive(self, node, obj, rule, out):
        if obj is stop_gradient:
            self.stopped += 1   # no derivative leaves: np.max needs no tie split
        try:
            args = self.operands(node.args, out)
        finally:
            if obj is stop_gradient:
                self.stopped -= 1
        if obj is stop_gradient and len(args) == 1 and isinstance(args[0], Lazy):
            # an array: every element stopped, fused like any elementwise operation
            return Op(("call", stop_gradient), [args[0]], args[0].shape)
        args = [self.to_atom(out, a) for a in args]
        spelled = ast.parse(self.ctx.env.spell(obj, "f"), mode="eval").body
        if obj in (min, max) and len(args) > 2:
            acc = args[0]
            for a in args[1:]:
                acc = self.to_atom(out, ast.Call(func=spelled, args=[acc, a], keywords=[]))
            return acc
        if len(args) != len(rule.params):
            raise self.error(node, f"`{ast.unparse(node.func)}` called with {len(args)} "
                             f"argument(s); adjit's rule takes {len(rule.params)}",
                             "Call it with the documented number of arguments "
                             "(math.log(x) / math.log(b) for a log in base b).")
        return ast.Call(func=spelled, args=args, keywords=[])

    def allocation(self, node, obj, out):
        kind = ALLOCATORS[obj]
        for kw in node.keywords:
            if kw.arg != "dtype" or self.src.resolve(kw.value) not in (np.float64, float):
                raise self.error(node, f"`{ast.unparse(node.func)}` with "
                                 f"`{kw.arg}=` argument",
                                 "Allocate float64 arrays: np.zeros(n) or np.zeros((n, m)).")
        if len(node.args) != 1:
            raise self.error(node, f"`{ast.unparse(node.func)}` with {len(node.args)} arguments",
                             "Pass one shape (n or (n, m)), or one array for the *_like forms.")
        spelled = ast.parse(self.ctx.env.spell(obj, "alloc"), mode="eval").body
        arg = node.args[0]
        if isinstance(arg, ast.Attribute) and arg.attr == "shape" and kind != "like":
            given = self.shape_of(arg.value, out)
            elts = [self.to_atom(out, given.item(k), "_n") for k in range(given.ndim)]
            shape = ast.Tuple(elts=elts, ctx=ast.Load()) if len(elts) != 1 else elts[0]
            return ast.Call(func=spelled, args=[shape], keywords=[])
        if kind == "like":
            like = self.operand(arg, out)
            if isinstance(like, Lazy) and not (isinstance(like, View) and like.is_identity()):
                # an expression or a name kept lazy: allocate by its shape
                elts = self.like_shape(arg, out, node, like)
                shape = ast.Tuple(elts=elts, ctx=ast.Load()) if len(elts) > 1 else elts[0]
                base = {np.zeros_like: np.zeros, np.ones_like: np.ones,
                        np.empty_like: np.empty}[obj]
                spelled = ast.parse(self.ctx.env.spell(base, "alloc"), mode="eval").body
                return ast.Call(func=spelled, args=[shape], keywords=[])
            shape = ir.name(like.base if isinstance(like, View) else self.array_name(arg))
        elif isinstance(arg, ast.Tuple):
            shape = ast.Tuple(elts=[self.atom(e, out) for e in arg.elts], ctx=ast.Load())
        else:
            shape = self.atom(arg, out)
        return ast.Call(func=spelled, args=[shape], keywords=[])

    def argument(self, node, out):
        """A value passed to a helper: an atom, a shape, or a view (the helper's parameter is
        then a name for part of the caller's array: writes through it reach the array)."""
        value = self.rhs(node, out)
        if isinstance(value, _Shape) or (isinstance(value, View) and not has_take(value)):
            return value
        if isinstance(value, _TupleValue):
            raise self.error(node, "passing a tuple to a helper",
                             "Pass its elements as separate arguments.")
        return self.to_atom(out, value)

    def inline(self, node, fn, out):
        callee = read_function(fn)
        params = callee.params
        positional = [a.arg for a in callee.tree.args.posonlyargs + callee.tree.args.args]
        values = [self.argument(a, out) for a in node.args]
        if self.lazy:
            self.flush_lazy(out)     # the helper may write any array it is given
        if len(values) > len(positional):
            raise self.error(node, f"a call to {fn.__name__} with the wrong arguments "
                             f"({len(values)} positional)", f"It takes {len(positional)}: "
                             f"{', '.join(positional)}; pass the others by keyword.")
        bound = dict(zip(positional, values))
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in params or kw.arg in bound:
                raise self.error(node, f"the keyword argument `{kw.arg}`",
                                 f"Pass the parameters of {fn.__name__}: {', '.join(params)}, "
                                 "each once.")
            bound[kw.arg] = self.argument(kw.value, out)
        defaults = dict(zip(positional[len(positional) - len(callee.fn.__defaults__ or ()):],
                            callee.fn.__defaults__ or ()))
        defaults.update(callee.fn.__kwdefaults__ or {})
        for p, d in defaults.items():
            if p not in bound:
                if not isinstance(d, (bool, int, float)):
                    raise self.error(node, f"the non-numeric default of `{p}`",
                                     f"Pass `{p}` explicitly.")
                bound[p] = ir.const(d)
        missing = [p for p in params if p not in bound]
        if missing:
            raise self.error(node, f"a call to {fn.__name__} with the wrong arguments (no "
                             f"value for `{missing[0]}`)",
                             f"Pass {len(params)} argument(s): {', '.join(params)}.")
        prefix = self.ctx.prefix_for(self.prefix + callee.fn.__name__)
        reassigned = _assigned_user_names(callee.tree.body)
        subst, copies, views = {}, [], {}
        for p in params:
            v = bound[p]
            if isinstance(v, _Shape):
                raise self.error(node, "passing a shape tuple to a helper",
                                 "Pass the numbers a.shape[0], a.shape[1] separately.")
            if isinstance(v, ast.Name) and self.array_ndim(v) is not None and p in reassigned:
                v = self.view_of(v.id, out)     # the parameter aliases the caller's array
            if isinstance(v, View):
                subst[p] = prefix + p
                self.ctx.namegen.reserve(prefix + p)
                views[prefix + p] = v
            elif p in reassigned:
                copies.append(ir.assign(prefix + p, v, self.origin))
            else:
                subst[p] = v
        out.extend(copies)
        stmts, result = normalize_function(callee, self.ctx, prefix, subst, views)
        out.extend(stmts)
        self.loads = {}
        if result is None:
            return ir.const(0.0)
        return result


_LIBRARIES = {"numpy", "scipy", "numba", "math", "builtins", "adjit"}



def _lazy_candidates(src):
    """Locals assigned exactly once, by a plain `y = ...` statement, and read by exactly
    one later simple statement of the same block (never indexed or written element-wise):
    an array value of such a name can stay unevaluated and fuse into the loop of that
    statement. Returns (those names, those of them never passed to a user function)."""
    stores, loads, written, passed = {}, {}, set(), set()
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            else:
                loads[node.id] = loads.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            stores[node.target.id] = stores.get(node.target.id, 0) + 2
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            written.add(node.value.id)      # indexed, sliced or written: a real array
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.attr in ("shape", "size", "ndim", "copy"):
            written.add(node.value.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "len":
            written.update(a.id for a in node.args if isinstance(a, ast.Name))
        if isinstance(node, ast.Call):
            fn = src.resolve(node.func)
            if fn is MISSING or not _library_function(unwrap(fn)):
                passed.update(a.id for a in node.args if isinstance(a, ast.Name))
    out = set()
    simple = (ast.Assign, ast.AugAssign, ast.Return, ast.Expr, ast.AnnAssign)

    def names_in(stmt):
        return [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and
                isinstance(n.ctx, ast.Load)]

    def visit(block):
        for k, s in enumerate(block):
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and not isinstance(s, simple):
                    visit(inner)
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                    isinstance(s.targets[0], ast.Name)):
                continue
            y = s.targets[0].id
            if stores.get(y) != 1 or y in src.params or y in written or not loads.get(y):
                continue
            users = [t for t in block[k + 1:] if y in names_in(t)]
            if len(users) == 1 and isinstance(users[0], simple) and \
                    names_in(users[0]).count(y) == loads[y]:
                out.add(y)

    visit(src.tree.body)
    return out, out - passed


def _same_elements(a, b):
    """Views `a` and `b` of one array name the same element at every index (an elementwise
    update `x[1:] = 2 * x[1:]` reads each element only where it writes it)."""
    from .vectorize import _same
    if has_take(a) or has_take(b) or a.parent is not b.parent:
        return False    # a gather may repeat an index: its elements are not distinct
    if a.ndim != b.ndim or len(a.shape) != len(b.shape) or \
            any(not _same(p, q) for p, q in zip(a.shape, b.shape)):
        return False
    if set(a.fixed) != set(b.fixed) or any(not _same(a.fixed[k], b.fixed[k]) for k in a.fixed):
        return False
    for p, q in zip(a.dims, b.dims):
        if (p is None) != (q is None):
            return False
        if p is not None and (p[0] != q[0] or not _same(p[1], q[1]) or not _same(p[2], q[2])):
            return False
    return True


def _disjoint(a, b):
    """Views of one array that never share an element: both fix a base dimension (that no
    dimension of theirs runs along) at different constant positions, as rows 0 and 1."""
    if a.parent is not None or b.parent is not None:
        return False
    running = {d[0] for d in a.dims + b.dims if isinstance(d, tuple)}
    return any(isinstance(a.fixed[d], ast.Constant) and isinstance(b.fixed[d], ast.Constant)
               and a.fixed[d].value != b.fixed[d].value and d not in running
               for d in set(a.fixed) & set(b.fixed))


def _leaves(v):
    from .vectorize import leaves
    return leaves(v)


def _alloc_ndim(value, obj, arrays):
    """The dimension of the array an allocation call makes."""
    if obj in CONST_ARRAYS:
        return 2 if CONST_ARRAYS[obj] == "eye" else 1
    shape = value.args[0]
    if isinstance(shape, ast.Tuple):
        return len(shape.elts)
    if isinstance(shape, ast.Name) and shape.id in arrays:
        return arrays[shape.id][0]
    return 1


def _library_function(fn):
    """Functions of numpy & co. are primitives with rules (or none), never inlined."""
    return (getattr(fn, "__module__", None) or "").split(".")[0] in _LIBRARIES


def _is_one(atom):
    return isinstance(atom, ast.Constant) and atom.value == 1


def _constant_compare(op, a, b):
    return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b,
            ast.Eq: a == b, ast.NotEq: a != b}[type(op)]


class _Temps(set):
    """Names of the arrays the vectorizer allocated; `write_once` holds those made outside
    every user loop, whose elements are each stored exactly once."""

    def __init__(self):
        super().__init__()
        self.write_once = set()


class _Shape:
    """`a.shape`, which only tuple unpacking, indexing and shape arguments may consume:
    the sizes of an array variable, or the size atoms of a view or expression."""

    def __init__(self, array=None, atoms=None, ndim=None):
        self.array = array
        self.atoms = atoms
        self.ndim = ndim if atoms is None else len(atoms)

    def item(self, k):
        """Size k as a right-hand side (`a.shape[k]`) or an atom."""
        if self.atoms is not None:
            return self.atoms[k]
        return ast.Subscript(value=ast.Attribute(value=ir.name(self.array), attr="shape",
                                                 ctx=ast.Load()),
                             slice=ir.const(k), ctx=ast.Load())


class _TupleValue:
    def __init__(self, items):
        self.items = items


def _copy(node):
    return ast.Name(id=node.id, ctx=ast.Load()) if isinstance(node, ast.Name) else \
        ast.Constant(value=node.value)


def _tuple_target_names(tgt, norm):
    names = set()
    for t in tgt.elts:
        if isinstance(t, ast.Name):
            local = norm.local(t.id)
            if isinstance(local, str):
                names.add(local)
    return names


def _assigned_user_names(stmts):
    names = set()
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


class _At:
    def __init__(self, lineno):
        self.lineno = lineno


def _rebased(view, base):
    """The same index map onto another array (with the same shape)."""
    if view is None:
        return None
    return View(base, view.ndim, view.dims, view.fixed, view.shape, view.whole,
                _rebased(view.parent, base), view.contiguous)


def _same_atom(a, b):
    if isinstance(a, ast.Constant) or isinstance(b, ast.Constant):
        return isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and \
            a.value == b.value and type(a.value) is type(b.value)
    return a.id == b.id


def _same_structure(views):
    """Views that differ at most in their position and length atoms."""
    first = views[0]
    for v in views[1:]:
        if first is None or v is None:
            if first is not v:
                return False
            continue
        if (v.base, v.ndim, len(v.dims), sorted(v.fixed), [s is ONE for s in v.shape]) != \
                (first.base, first.ndim, len(first.dims), sorted(first.fixed),
                 [s is ONE for s in first.shape]):
            return False
        for d, e in zip(first.dims, v.dims):
            if type(d) is not type(e):
                return False
            if isinstance(d, tuple) and d[0] != e[0]:
                return False
            if isinstance(d, Take) and [(x.b, x.arr, x.col, x.flag is None)
                                        for x in d.sources] != \
                    [(x.b, x.arr, x.col, x.flag is None) for x in e.sources]:
                return False
        if not _same_structure([first.parent, v.parent]):
            return False
    return True
