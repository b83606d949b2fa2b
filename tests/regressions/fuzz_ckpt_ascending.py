"""Found by the program fuzzer (2026-11-28, `--only globals -n 300 --seed 1`, reduced; the
module array it was drawn with is not needed): checkpointed gradient differs.

checkpoint=2: d/dy 1.496796716700701, recorded 1.4967967167007012 (values equal)

value_and_grad(f, argnums=(0, 1, 2)) with checkpoint=2 differs from the recorded gradient in
the last bit of d/dy, compiled by numba as in the interpreter (grad alone agrees: with no
value to return the loop is not recorded at all). The recorded backward sweep runs the
loop upward (reverse/ascending.py: its iterations commute, `y_bar += _t1_bar * i11`), the
checkpointed one runs it downward, block by block: the three additions into y_bar are
made in the other order (1 + t0*0 + t1*1 + t2*2 against 1 + t2*2 + t1*1 + t0*0).
Also fuzz_ckpt_ascending_nested.py (the same cause in an inner loop).

Cause and fix: a checkpointed loop reverses its steps downward, block by block; the
recorded gradient ran the same loop upward (reverse/ascending.py), its iterations
commuting. The builder now notes `downward` on the reversed loop of each top-level loop
checkpoint="auto" would checkpoint (checkpoint.select(builder, "auto")), and the
ascending pass leaves such a loop reversed: recorded and checkpointed add in one order.
"""
PARAMS = (('x', 'array1'), ('y', 'float'), ('z', 'float'), ('n', 'int'))
SEED = 12567441
GROUPS = ()
SOURCE = '''\
def f(x, y, z, n):
    v10 = 0.0
    for i11 in range(3):
        v10 += 2.0 ** math.tanh(y * i11)
    return v10 + y
'''
