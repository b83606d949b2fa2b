"""What the adjoint rules know about the normalized statements before anything is planned:
arrays written once, stores that add to the element they read, numbers an array element
keeps, and temporaries whose adjoint one statement assigns (ReverseBuilder reads them)."""
import ast
import copy

from .. import ir
from ..analysis.types import FLOAT, is_array


def write_once(layout, temps):
    """Arrays the vectorizer made outside any user loop: each element is stored
    exactly once (its own loop nest covers each index once). The adjoint of such a store
    need not zero the element's adjoint afterwards: no earlier store to the element
    exists to receive it."""
    return {a for a in temps if len(layout.sites.get(a, ())) == 1}


def increments(stmts, layout, active, once):
    """Stores that add to the element they read: `t0 = A[i]; t = t0 + e; A[i] = t` (and
    `t0 - e`), the normal form of `A[i] += e`. The element's adjoint passes through
    unchanged, so the store's adjoint reads it without zeroing it and the load's adjoint
    adds nothing back. Returns {id(store): load temporary, id(add): load temporary}: the
    load temporary gets no adjoint. Only within one block, with no store to A and no new
    index value between the load and the store."""
    out = {}
    users = {}
    for s in ir.walk_stmts(stmts):
        for name in ir.reads(s):
            users.setdefault(name, []).append(s)
    for s in ir.walk_stmts(stmts):
        if not (ir.is_store(s) and isinstance(s.value, ast.Name)) \
                or ir.note(s, "atomic", False):
            continue
        arr = s.targets[0].value.id
        t = s.value.id
        if arr not in active or arr in once \
                or len(layout.sites.get(t, ())) != 1 or len(users.get(t, ())) != 1:
            continue
        add = layout.sites[t][0]
        if not (isinstance(add, ast.Assign) and isinstance(add.value, ast.BinOp)
                and isinstance(add.value.op, (ast.Add, ast.Sub))):
            continue
        left, right = add.value.left, add.value.right
        loads = [a for a in ((left, right) if isinstance(add.value.op, ast.Add)
                             else (left,))
                 if isinstance(a, ast.Name) and len(layout.sites.get(a.id, ())) == 1]
        if isinstance(left, ast.Name) and isinstance(right, ast.Name) \
                and left.id == right.id:
            continue
        for atom in loads:
            load = layout.sites[atom.id][0]
            if isinstance(load, ast.Assign) and not ir.is_store(load) \
                    and isinstance(load.value, ast.Subscript) \
                    and isinstance(load.value.value, ast.Name) \
                    and load.value.value.id == arr \
                    and ast.dump(load.value.slice) == ast.dump(s.targets[0].slice) \
                    and users.get(atom.id) == [add] \
                    and _same_block_untouched(layout, load, add, s, arr):
                out[id(s)] = out[id(add)] = atom.id
                break
    return out


def stored_values(stmts, layout, kinds, params, restored):
    """Numbers the program stores into an array element that nothing writes again:
    `_t6 = math.tanh(_t5); h[i, j] = _t6` in a loop nest over (i, j). The adjoint of the
    tanh reads `h[i, j]` instead of recording `_t6` or computing the tanh again, as a
    hand-written adjoint does. Returns {var: the element, as a Subscript}.

    The element holds the value in the backward sweep when the store's index is the
    variables of all its enclosing loops (each a range from a non-negative constant with
    a positive step: every iteration writes its own element) and constants, the array has
    no other store or assignment except earlier ones outside those loops, and the value
    is the one stored (the function allocates the array as float64). Nothing where `restored`:
    in checkpointed or CUDA code, whose arrays are restored or shared."""
    if restored:
        return {}
    stores = {}
    for x in ir.walk_stmts(stmts):
        if ir.is_store(x):
            stores.setdefault(x.targets[0].value.id, []).append(x)
    loops = {id(x): x for x in ir.walk_stmts(stmts) if isinstance(x, ast.For)}
    out = {}
    for arr, sites in stores.items():
        kind = kinds.get(arr)
        if len(sites) != 1 or not is_array(kind) or not kind.is_float:
            continue
        store = sites[0]
        if not isinstance(store.value, ast.Name):
            continue
        var = store.value.id
        defs = layout.sites.get(var, ())
        if kinds.get(var) != FLOAT or len(defs) != 1 or var in params \
                or layout.block_of[id(defs[0])] != layout.block_of[id(store)]:
            continue
        if any(L not in loops for L in layout.loops[id(store)]):
            continue        # in a while loop: its iterations are not counted
        enclosing = [loops[L] for L in layout.loops[id(store)]]
        atoms = ir.index_atoms(store.targets[0])
        names = {a.id for a in atoms if isinstance(a, ast.Name)}
        if not all(isinstance(a, ast.Constant) or a.id in
                   {L.target.id for L in enclosing} for a in atoms) or \
                not all(_counts_up(L) and L.target.id in names
                        and L.target.id not in ir.assigned(L.body) for L in enclosing):
            continue
        if not _float64_allocation(layout.sites.get(arr, ())):
            continue
        here = set(layout.loops[id(store)])
        if any(layout.pos[id(w)] > layout.pos[id(store)] or here & set(layout.loops[id(w)])
               for w in layout.sites.get(arr, ())):
            continue
        out[var] = ast.Subscript(value=ir.name(arr), slice=copy.deepcopy(
            store.targets[0].slice), ctx=ast.Load())
    return out


def _same_block_untouched(layout, load, add, store, arr):
    """Whether load, add and store are in this order in one block, with no store to
    `arr` and no assignment to a name the store's index reads between them."""
    block = layout.block_of[id(store)]
    if not (layout.block_of[id(load)] == block == layout.block_of[id(add)]):
        return False
    stmts = layout.blocks[block]
    i, j, k = (next(n for n, x in enumerate(stmts) if x is y) for y in (load, add, store))
    if not i < j < k:
        return False
    index = set(ir.atom_names(ir.index_atoms(store.targets[0])))
    for x in stmts[i + 1:k]:
        if not isinstance(x, ast.Assign):
            return False
        if ir.is_store(x):
            if x.targets[0].value.id == arr:
                return False
        elif ir.target_name(x) in index:
            return False
    return True


def contributions(stmts, contributing_operands):
    """{var: the statements its adjoint receives from, once per operand}."""
    out = {}
    for s in ir.walk_stmts(stmts):
        for atom in contributing_operands(s):
            out.setdefault(atom.id, []).append(s)
    return out


def single_use_temps(contributions, layout, kinds, params, result):
    """Active scalars assigned once whose adjoint contributions all come from later in
    their own block, the last of them unconditionally: that one (the first the backward
    sweep meets) assigns the adjoint instead of accumulating into a reset zero, so the
    adjoint needs no initialization and no reset. Returns {var: id of that statement}."""
    out = {}
    for var, users in contributions.items():
        sites = layout.sites.get(var, [])
        if len(sites) != 1 or kinds.get(var) != FLOAT or var in params or \
                (isinstance(result, ast.Name) and result.id == var):
            continue
        site = sites[0]
        if not isinstance(site, ast.Assign):
            continue
        block = layout.block_of[id(site)]
        pos = layout.pos[id(site)]
        last = max(users, key=lambda u: layout.pos[id(u)])
        if all(layout.inside(u, block) and layout.pos[id(u)] > pos
               for u in users) and layout.block_of[id(last)] == block:
            out[var] = id(last)
    return out


def _counts_up(loop):
    """A for loop over a range starting at a non-negative constant with a positive constant
    step (its variable never wraps a negative index onto another element)."""
    lo, _, st = getattr(loop, "_bounds", (None, None, None))
    return isinstance(lo, ast.Constant) and type(lo.value) is int and lo.value >= 0 and \
        isinstance(st, ast.Constant) and type(st.value) is int and st.value > 0


def _float64_allocation(sites):
    """Whether the array's one assignment allocates float64 (`np.empty(shape)`,
    `np.zeros(shape, np.float64)`): a number stored into it is kept exactly."""
    if len(sites) != 1 or not isinstance(sites[0], ast.Assign):
        return False
    call = sites[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "np"
            and call.func.attr in ("empty", "zeros", "ones")):
        return False
    dtype = call.args[1:] + [k.value for k in call.keywords if k.arg == "dtype"]
    return all(ast.unparse(d) in ("np.float64", "float") for d in dtype) and \
        all(k.arg == "dtype" for k in call.keywords)
