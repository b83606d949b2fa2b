"""Derivative rules: one table, keyed by operator class or by function object."""
from .table import BINOP_RULES, CALL_RULES, UNARY_RULES, Rule, rule_for_call

__all__ = ["BINOP_RULES", "CALL_RULES", "UNARY_RULES", "Rule", "rule_for_call"]
