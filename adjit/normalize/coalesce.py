"""Give arrays the vectorizer computed for a user's name that name (`y = _a` -> `y`)."""
import ast

from .. import ir


def coalesce_temps(stmts, temps, result):
    """`y = _a` where `_a` is an array the vectorizer made for y's value: name it y.

    Only when y is assigned nowhere else and neither name is read between _a's allocation
    and the copy (so no reader of an earlier y can see the rename)."""
    # (name, Load or Store) -> how often the statements hold it, kept up to date below
    counts = {}
    for t in stmts:
        for n in ir.walk(t):
            if isinstance(n, ast.Name):
                key = (n.id, type(n.ctx))
                counts[key] = counts.get(key, 0) + 1

    def count(name, ctx, step):
        counts[(name, ctx)] = counts.get((name, ctx), 0) + step

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
            between = [n for t in block[start:k] for n in ir.walk(t) if isinstance(n, ast.Name)]
            if any(n.id == y for n in between):
                continue
            if counts.get((y, ast.Store), 0) != 1 or counts.get((a, ast.Load), 0) != \
                    sum(1 for n in between if n.id == a and isinstance(n.ctx, ast.Load)) + 1:
                continue
            for t in block[start:k]:
                for n in ir.walk(t):
                    if isinstance(n, ast.Name) and n.id == a:
                        n.id = y
                        count(a, type(n.ctx), -1)
                        count(y, type(n.ctx), 1)
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
            for n in ir.walk(s):       # the copy goes
                if isinstance(n, ast.Name):
                    count(n.id, type(n.ctx), -1)
            block[k] = ast.Pass()
        block[:] = [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()]
    return result
