"""What adjit knows about every function it calls: the registry (registry.py) and its
entries (table.py)."""
from .registry import REGISTRY, Primitive, Rule
from .table import BINOP_RULES, CALL_RULES, UNARY_RULES, rule_for_call

__all__ = ["REGISTRY", "Primitive", "Rule", "BINOP_RULES", "CALL_RULES", "UNARY_RULES",
           "rule_for_call"]
