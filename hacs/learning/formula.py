"""A GP4C score function as a librarian reads it: simplified, with its terminals named.

Pure (stdlib and :mod:`hacs.learning.gp4c`'s reader). GP4C's trees carry whatever evolution
left in them — ``mul(sub(t, t), gad)``, ``add(X, div(0.5, 0.5))`` — so the stored formula is
often longer than what it computes. :func:`readable_formula` rewrites the stored expression
and writes it in infix with a legend of the terminals it uses; the stored expression, the one
that scores, is never changed.

Readings. A rewrite is made only when it gives every site the same score, bit for bit, under
the protected operators of :mod:`hacs.learning.gp4c` (a zero divisor and a non-positive
logarithm give 0, a non-finite result gives 0), on finite terminal values (every terminal
the evaluation builds is finite; every operator's result is):

* a subtree of constants is folded, by the same protected functions;
* x + 0, 0 + x, x − 0, x × 1, 1 × x, x ÷ 1, x^1 → x; x × 0, 0 × x, 0 ÷ x, x ÷ 0 (any divisor
  the protected division treats as 0), x − x → 0; x^0, 1^x → 1; x + x → 2 × x;
* 0 − (0 − x) → x; a − (0 − b) → a + b; a + (0 − b) and (0 − b) + a → a − b; a + (−c) →
  a − c and a − (−c) → a + c for a constant c; 0 − x is written −x.

Anything else is left as it is: x ÷ x is 0 where x is 0, log(exp(x)) is 0 where exp overflows,
and regrouping constants ((x + 1) + 2 → x + 3) rounds differently, which can change a score
and so the order of two sites.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hacs.evaluation.terminals import TERMINALS
from hacs.learning.gp4c import OPERATORS, _Node, _parse

__all__ = ["TERMINAL_LABELS", "ReadableFormula", "readable_formula", "terminal_name"]

#: What each terminal is, as the legend under a formula says it (hacs.evaluation.terminals).
TERMINAL_LABELS: Mapping[str, str] = {
    "n": "accesses in the history window that could detect a change",
    "X": "accesses in the history window that found one",
    "t": "days from the last access to the end of the horizon",
    "cg": "Cho–Garcia-Molina's estimate, as λ·t",
    "nad": "NAD's estimate (nonuniform access), as λ·t",
    "sad": "SAD's estimate (shortest interval), as λ·t",
    "aad": "AAD's estimate (arithmetic mean interval), as λ·t",
    "gad": "GAD's estimate (geometric mean interval), as λ·t",
    "lam": "HACS's estimated update rate, per day",
    "p": "HACS's probability of a change since the newest copy",
}
#: How a terminal is written in the formula (the stored name otherwise).
_SHOWN = {"lam": "λ"}
_ZERO: _Node = ("const", 0.0)
_ONE: _Node = ("const", 1.0)


@dataclass(frozen=True)
class ReadableFormula:
    """A stored function, simplified: ``expression`` (prefix, scoring exactly as the stored
    one: constants written in full), ``text`` (infix, as shown), ``legend`` (each terminal it
    uses, in TERMINALS order, as (shown name, what it is)) and ``simplified`` (a rewrite was
    made)."""

    expression: str
    text: str
    legend: tuple[tuple[str, str], ...]
    simplified: bool


def terminal_name(name: str) -> str:
    """A terminal as the formula writes it (``lam`` as λ)."""
    return _SHOWN.get(name, name)


def readable_formula(expression: str) -> ReadableFormula:
    """The stored GP4C ``expression`` simplified and written for people (module docstring);
    ``ValueError`` as :class:`hacs.learning.gp4c.ScoreFunction` raises it."""
    original = _parse(expression)
    tree = _simplify(original)
    used = _terminals(tree)
    legend = tuple((terminal_name(n), TERMINAL_LABELS[n]) for n in TERMINALS if n in used)
    return ReadableFormula(
        expression=_prefix(tree), text=_infix(tree)[0], legend=legend, simplified=tree != original
    )


def _simplify(tree: _Node) -> _Node:
    if tree[0] != "op":
        return tree
    name = tree[1]
    children = tuple(_simplify(child) for child in tree[2])
    if all(child[0] == "const" for child in children):
        return ("const", _fold(name, children))
    if name == "add":
        return _add(*children)
    if name == "sub":
        return _sub(*children)
    if name == "mul":
        return _mul(*children)
    if name == "div":
        return _div(*children)
    if name == "pow":
        return _pow(*children)
    return ("op", name, children)


def _fold(name: str, children: tuple[_Node, ...]) -> float:
    """The value the protected operator gives for constant operands (as scoring computes it)."""
    values = [np.array([child[1]], dtype=np.float64) for child in children]
    return float(OPERATORS[name].apply(*values)[0])


def _is(node: _Node, value: float) -> bool:
    return bool(node[0] == "const" and node[1] == value)


def _negated(node: _Node) -> _Node | None:
    """x when ``node`` is 0 − x, else None."""
    if node[0] == "op" and node[1] == "sub" and _is(node[2][0], 0.0):
        child: _Node = node[2][1]
        return child
    return None


def _add(a: _Node, b: _Node) -> _Node:
    if _is(b, 0.0):
        return a
    if _is(a, 0.0):
        return b
    if a == b:
        return ("op", "mul", (("const", 2.0), a))
    if b[0] == "const" and b[1] < 0:
        return ("op", "sub", (a, ("const", -b[1])))
    negative_b, negative_a = _negated(b), _negated(a)
    if negative_b is not None:
        return _sub(a, negative_b)
    if negative_a is not None:
        return _sub(b, negative_a)
    return ("op", "add", (a, b))


def _sub(a: _Node, b: _Node) -> _Node:
    if _is(b, 0.0):
        return a
    if a == b:
        return _ZERO
    if b[0] == "const" and b[1] < 0:
        return ("op", "add", (a, ("const", -b[1])))
    negative_b = _negated(b)
    if negative_b is not None:
        return negative_b if _is(a, 0.0) else _add(a, negative_b)
    return ("op", "sub", (a, b))


def _mul(a: _Node, b: _Node) -> _Node:
    if _is(a, 0.0) or _is(b, 0.0):
        return _ZERO
    if _is(b, 1.0):
        return a
    if _is(a, 1.0):
        return b
    return ("op", "mul", (a, b))


def _div(a: _Node, b: _Node) -> _Node:
    if _is(a, 0.0) or (b[0] == "const" and _fold("div", (_ONE, b)) == 0.0):
        return _ZERO  # 0 ÷ x, and a divisor the protected division refuses
    if _is(b, 1.0):
        return a
    return ("op", "div", (a, b))


def _pow(a: _Node, b: _Node) -> _Node:
    if _is(b, 0.0) or _is(a, 1.0):
        return _ONE
    if _is(b, 1.0):
        return a
    return ("op", "pow", (a, b))


def _terminals(tree: _Node) -> set[str]:
    if tree[0] == "var":
        return {str(tree[1])}
    if tree[0] == "const":
        return set()
    return set().union(*(_terminals(child) for child in tree[2]))


def _prefix(tree: _Node) -> str:
    """The prefix expression, constants in full (``repr``), so that it scores exactly."""
    if tree[0] == "const":
        return repr(float(tree[1]))
    if tree[0] == "var":
        return str(tree[1])
    return f"{tree[1]}({', '.join(_prefix(child) for child in tree[2])})"


def _number(value: float) -> str:
    text = f"{abs(value):.4g}"
    if "e" in text:  # 1e-05 → 1×10⁻⁵
        mantissa, exponent = text.split("e")
        power = str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
        text = f"10{power}" if mantissa == "1" else f"{mantissa}×10{power}"
    return f"−{text}" if value < 0 else text


# Precedence in the infix text: + − and a leading minus < × ÷ < ^ < functions and atoms.
_ATOM = 4


def _infix(tree: _Node) -> tuple[str, int]:
    """The infix text of a tree and its precedence (as gp4c's formula, with −x and λ)."""
    if tree[0] == "const":
        return _number(tree[1]), 3 if tree[1] < 0 else _ATOM
    if tree[0] == "var":
        return terminal_name(str(tree[1])), _ATOM
    op = OPERATORS[tree[1]]
    if op.arity == 1:
        return f"{op.symbol}({_infix(tree[2][0])[0]})", _ATOM
    negative = _negated(tree)
    if negative is not None:
        text, precedence = _infix(negative)
        return (f"−({text})" if precedence <= 1 else f"−{text}"), 1
    (left, left_p), (right, right_p) = (_infix(child) for child in tree[2])
    if left_p < op.precedence or (op.symbol == "^" and left_p == op.precedence):
        left = f"({left})"
    if right_p < op.precedence or (right_p == op.precedence and op.symbol in "−÷^"):
        right = f"({right})"
    elif right.startswith("−"):  # a + (−3), not a + −3
        right = f"({right})"
    if op.symbol == "^":
        return f"{left}^{right}", op.precedence
    return f"{left} {op.symbol} {right}", op.precedence
