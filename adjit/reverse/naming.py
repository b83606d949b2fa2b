"""Adjoint variable names: `x` -> `x_bar`, never colliding with a primal name."""


class BarNames:
    def __init__(self, taken):
        self.taken = set(taken)
        self.names = {}

    def __call__(self, var):
        if var not in self.names:
            name = f"{var}_bar"
            while name in self.taken:
                name += "_"
            self.taken.add(name)
            self.names[var] = name
        return self.names[var]

    def values(self):
        return set(self.names.values())
