"""adjit: source-transformation reverse-mode automatic differentiation, compiled with numba."""
from .api import (GradientFunction, TapeReport, grad, hessian, hvp, jacfwd, jacobian, jacrev,
                  jvp, sparsity, value_and_grad, vjp)
from .api_stop import stop_gradient
from .custom import custom_vjp, defjvp, defvjp
from .implicit import custom_root
from .errors import AdjitError, AdjitWarning
from .pipeline import STAGES, SWEEP_STAGES
from .show import show
from . import cuda

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian", "jacfwd",
           "jacrev", "sparsity", "custom_vjp", "defvjp", "defjvp", "custom_root",
           "stop_gradient", "AdjitError", "AdjitWarning", "GradientFunction", "TapeReport", "show",
           "STAGES", "SWEEP_STAGES", "cuda"]
__version__ = "0.1.0"
