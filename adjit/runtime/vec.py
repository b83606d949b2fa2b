"""The helpers generated code calls, spelled `vec.<name>` (normalize/names.py spells every
helper through this module, and the registry's rules name them so: rules/table.py):

- runtime/index.py: broadcast sizes, slice bounds, reshape sizes, index-array entries,
  scratch arrays, dtype widening, asserts: the run time of the generated loops;
- runtime/linalg.py: the adjoints and tangents of the np.linalg functions kept at array
  level (matrix products, cholesky, det, slogdet, eigh, solve, pinv, qr, svd, lstsq, ...);
- runtime/arrays.py: those of numpy's other whole-array functions kept at array level
  (linspace, arange, cumprod, interp, convolve, the quantiles, cov, ...).

A new helper goes in the module of its kind and is named here.
"""
from .index import (  # noqa: F401 - the names generated code calls
    bcast, check_assign, check_sequence, stride, slice_start, slice_len, index, take_index, same_length, dot_length,
    infer_size,
    empty_int, local_empty, shared_empty, local_empty32, shared_empty32, SCRATCH,
    empty_bool, nanmax, nanmin, widened, as_float64, keep, check_assert, tuple_index,
    check_same_length, check_reducible, EMPTY_MAX, EMPTY_MIN, EMPTY_PTP, EMPTY_BUILTIN_MAX,
    EMPTY_BUILTIN_MIN, check_gufunc_sizes, check_stencil_shape, check_einsum_sizes,
    num_threads,
    check_tangent, check_cotangent, ShapeMismatchError, reshape_dim, check_reshape,
    check_apart, SharedMemoryError, extent,
    digamma, trigamma, convert_like, norm_root, not_negative, to_slot, from_slot, sum_slots,
    RAISABLE, raise_error, ASSERT_FAILED, DECLARED, RAISE_FORMATTED, RAISE_WITH_VALUES,
    RAISE_PARTS, order_key, key_value, KEY_LOWEST, KEY_HIGHEST, zeros, empty, zeros_like,
    empty_like, zeros_as, empty_as)
from . import index as _index
from . import special  # noqa: F401 - scipy.special's C functions (vec.special.i1)

for _name in [f"{k}_{d}" for k in ("zeros", "ones", "empty") for d in DECLARED + ("float32",)]:
    globals()[_name] = getattr(_index, _name)      # zeros_int64, ones_bool_, ...
from .linalg import (  # noqa: F401 - the names generated code calls
    mm, mm_tn, mm_nt, mm_tt, mv, mv_t, outer_vv, outer_nt, lower_sym, lower_bar,
    cholesky_tangent, cholesky_a_bar,
    det1, det_a_bar, det_tangent, slogdet2, slogdet_a_bar, slogdet_tangent, eigh_packed,
    eigh_a_bar, eigh_tangent, eigvalsh_a_bar, eigvalsh_tangent, solve_again, matrix_power,
    matrix_power_bar, matrix_power_tangent, pinv_a_bar, pinv_tangent, qr_packed, qr_a_bar,
    qr_tangent, svd_packed, svd_a_bar, svd_tangent, lstsq_x, lstsq_bars, lstsq_tangent_a,
    lstsq_tangent_b)
from .arrays import (  # noqa: F401 - the names generated code calls
    sum_bar, linspace_start_bar, linspace_stop_bar, arange_step_bar, arange_len,
    arange_tangent, cumprod_bar, cumprod_tangent, interp_bars, interp_slope,
    interp_dxp, as1, interp1, nan_if_none, kron_bars, kron_matrix, summed_like, cross_a_bar,
    cross_b_bar, convolve_bars, correlate_bars, quantile1, quantile_bars, quantile_tangent_a,
    quantile_tangent_q, cov_m_bar, cov_tangent, corrcoef_m_bar, corrcoef_tangent, vander_bar,
    vander_tangent, diagflat_bar, geomspace_bars, geomspace_tangent, logspace_bars,
    logspace_tangent, nancumprod_bar, nancumprod_tangent, size_of, shaped_like, zero_like,
    append_head_bar, append_tail_bar, gather1, take_along_axis_bar, take_along_axis_adjoint,
    extract_bar, delete_bar, argsort_rows, partition_order)
