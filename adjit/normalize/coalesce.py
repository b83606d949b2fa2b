"""Give arrays the vectorizer computed for a user's name that name (`y = _a` -> `y`)."""
import ast

from .. import ir


def coalesce_temps(stmts, temps, result):
    """`y = _a` where `_a` is an array the vectorizer made for y's value: name it y.

    Only when y is assigned nowhere else and neither name is read between _a's allocation
    and the copy (so no reader of an earlier y can see the rename)."""
    for block in ir.blocks(stmts):
        for k, s in enumerate(block):
            if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and
                    isinstance(s.value, ast.Name) and s.value.id in temps):
                continue
            y, a = s.targets[0].id, s.value.id
            start = next((j for j in range(k) if isinstance(block[j], ast.Assign) and
                          isinstance(block[j].targets[0], ast.Name) and
                          block[j].targets[0].id == a), None)
            if start is None:
                continue
            between = [n for t in block[start:k] for n in ast.walk(t) if isinstance(n, ast.Name)]
            if any(n.id == y for n in between):
                continue
            everywhere = [n for t in stmts for n in ast.walk(t) if isinstance(n, ast.Name)]
            if sum(1 for n in everywhere if n.id == y and isinstance(n.ctx, ast.Store)) != 1 or \
                    sum(1 for n in everywhere if n.id == a and isinstance(n.ctx, ast.Load)) != \
                    sum(1 for n in between if n.id == a and isinstance(n.ctx, ast.Load)) + 1:
                continue
            for t in block[start:k]:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id == a:
                        n.id = y
            write_once = getattr(temps, "write_once", set())
            if a in write_once:
                write_once.discard(a)
                stores = [w for t in stmts for w in ir.walk_stmts([t]) if ir.is_store(w)
                          and w.targets[0].value.id == y]
                made = [w for w in ir.walk_stmts(block[start:k]) if ir.is_store(w)
                        and w.targets[0].value.id == y]
                if len(stores) == len(made):    # the user never writes y afterwards
                    write_once.add(y)
            temps.add(y)
            block[k] = ast.Pass()
        block[:] = [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()]
    return result
