"""Worst-case texts for the request paths: long runs of one character class, repeated structures, many lines.

Each entry builds a text of exactly ``size`` characters. They are the inputs that made regex passes super-linear
(a pattern that rescans a run from each of its characters, two quantifiers that share characters) or made a
line loop quadratic; the tests feed them through the passes, ``bench/worst_case.py`` through every tool.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count, product
from string import ascii_lowercase

__all__ = ["ADVERSARIAL", "CODE_ADVERSARIAL", "repeat"]


def repeat(unit: str, size: int, *, head: str = "", tail: str = "") -> str:
    """``head`` + ``unit`` repeated + ``tail``, exactly ``size`` characters (``tail`` kept whole)."""
    body = size - len(head) - len(tail)
    return head + (unit * (body // len(unit) + 1))[: max(body, 0)] + tail


def _words() -> Callable[[], str]:
    names = ("".join(letters) for width in count(2) for letters in product(ascii_lowercase, repeat=width))
    return lambda: next(names)


def _distinct_lines(template: str, size: int) -> str:
    """Lines that stay distinct after normalisation (numbers are stripped, words are not)."""
    word, lines, used = _words(), [], 0
    while used < size:
        line = template.format(word())
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)[:size]


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "letters": lambda n: repeat("x", n),
    "camel-case": lambda n: repeat("Xy", n, tail=" !"),
    "digits": lambda n: repeat("7", n),
    "slash-path": lambda n: repeat("/a", n),
    "dotted": lambda n: repeat("a.", n),
    "colons": lambda n: repeat(":", n),
    "blank-run": lambda n: repeat(" ", n, head="x", tail="x"),
    "tab-run": lambda n: repeat("\t", n, head="-", tail="x"),
    "quotes": lambda n: repeat('"', n),
    "brackets": lambda n: "(" * (n // 2) + ")" * (n - n // 2),
    "traceback": lambda n: repeat(
        'Traceback (most recent call last):\n  File "/home/u/app/main.py", line 12, in <module>\n    run()\n', n
    ),
    "exception-lines": lambda n: _distinct_lines("ValueError: bad {}", n),
    "blank-lines": lambda n: repeat("\n", n, head="x", tail="x"),
    "user-at-host": lambda n: repeat("b", n, head="a@"),
    "scheme-run": lambda n: repeat("a.", n, tail=" x://y"),
    "line-refs": lambda n: repeat(", line ", n),
}
"""Texts for any free-text field (error messages, descriptions, thoughts)."""

CODE_ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "dotted-call": lambda n: repeat("a.", n, tail="b"),
    "keyword-blanks": lambda n: "\n".join(
        repeat(" ", n // 8 - (i < 7), head=head, tail="x") + " " * (n % 8 if i == 7 else 0)
        for i, head in enumerate(("class a", "import a", "except", "function", "if", "from ", "debugger", "def f"))
    ),
    "from-dots": lambda n: repeat(".", n, head="from "),
    "nested-expression": lambda n: "x = " + repeat("(", (n - 4) // 2) + repeat(")", n - 4 - (n - 4) // 2),
    "long-sum": lambda n: repeat("a+", n, head="def f():\n    return ", tail="a"),
    "tilde-fence": lambda n: repeat("~", n, tail="`"),
}
"""Texts that look like code (thoughts with code, code fields)."""
