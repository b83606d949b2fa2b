"""Mirrors: the reverse builder's view of each forward statement and its adjoint statements,
nested as the forward program is (an if mirrors both branches, a loop its body)."""


class AssignMirror:
    def __init__(self, stmt, adj):
        self.stmt = stmt
        self.adj = adj


class IfMirror:
    def __init__(self, stmt, body, orelse):
        self.stmt = stmt
        self.body = body
        self.orelse = orelse


class LoopMirror:
    def __init__(self, stmt, body):
        self.stmt = stmt
        self.body = body
