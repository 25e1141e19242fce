"""Which tree-sitter nodes define something, per language, and the qualified name each definition gets.

Names follow how each language writes them: Python ``Class.method`` (nested classes ``Outer.Inner.method``);
JavaScript/TypeScript the assigned expression as written (``res.send``, ``Layer.prototype.match``,
``exports.compileTrust``, ``app[method]``), getters made with ``defineGetter(req, 'protocol', ...)`` as
``req.protocol``, ES classes ``Class.method``, nested function declarations by their own name; Go ``Type.Method``;
Java ``Class.method``; Rust ``Type::method``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Definition", "Definitions", "definitions_for"]

Node = Any


@dataclass(frozen=True)
class Definition:
    node: Node
    """The node whose lines the chunk spans (decorators included)."""
    kind: str
    symbol: str
    depth: int
    leaf: bool = True
    """A leaf keeps all its lines; a container (class) keeps only the lines none of its members own."""


def _text(node: Node | None, source: bytes) -> str:
    if node is None:
        return ""
    return re.sub(r"\s+", "", source[node.start_byte : node.end_byte].decode("utf-8", "replace"))


_BLOCKS = frozenset(
    {
        "if_statement",
        "try_statement",
        "with_statement",
        "else_clause",
        "elif_clause",
        "except_clause",
        "block",
        "finally_clause",
        "statement_block",
    }
)


class Definitions:
    """Collects the definitions of a parsed file (subclasses per language)."""

    def collect(self, root: Node, source: bytes) -> list[Definition]:
        out: list[Definition] = []
        self.walk(root, source, "", 0, out, in_class=False)
        return out

    def walk(
        self, node: Node, source: bytes, prefix: str, depth: int, out: list[Definition], *, in_class: bool
    ) -> None:
        raise NotImplementedError


class PythonDefinitions(Definitions):
    def walk(
        self, node: Node, source: bytes, prefix: str, depth: int, out: list[Definition], *, in_class: bool
    ) -> None:
        for child in node.named_children:
            target = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
            if target is None:
                continue
            if target.type == "class_definition":
                symbol = prefix + _text(target.child_by_field_name("name"), source)
                out.append(Definition(child, "class", symbol, depth, leaf=False))
                body = target.child_by_field_name("body")
                if body is not None:
                    self.walk(body, source, symbol + ".", depth + 1, out, in_class=True)
            elif target.type == "function_definition":
                symbol = prefix + _text(target.child_by_field_name("name"), source)
                out.append(Definition(child, "method" if in_class else "function", symbol, depth))
            elif child.type in _BLOCKS:  # conditional definitions (if TYPE_CHECKING:, try/except imports)
                self.walk(child, source, prefix, depth, out, in_class=in_class)


_JS_FUNCTIONS = frozenset(
    {"function_expression", "function", "arrow_function", "generator_function", "generator_function_expression"}
)
_JS_CLASS_LIKE = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "class",
        "interface_declaration",
        "enum_declaration",
        "type_alias_declaration",
    }
)


class JavaScriptDefinitions(Definitions):
    """JavaScript and TypeScript (the TypeScript grammars extend the JavaScript one)."""

    def walk(
        self, node: Node, source: bytes, prefix: str, depth: int, out: list[Definition], *, in_class: bool
    ) -> None:
        for child in node.named_children:
            kind = child.type
            if kind in ("function_declaration", "generator_function_declaration"):
                name = _text(child.child_by_field_name("name"), source)
                out.append(Definition(child, "function", name, depth))
                self._nested(child, source, depth, out)
            elif kind in _JS_CLASS_LIKE:
                name = _text(child.child_by_field_name("name"), source)
                if not name:
                    continue
                out.append(Definition(child, "class", name, depth, leaf=False))
                body = child.child_by_field_name("body")
                if body is not None:
                    self._class_body(body, source, name, depth + 1, out)
            elif kind == "expression_statement" and child.named_children:
                self._expression(child, child.named_children[0], source, depth, out)
            elif kind in ("lexical_declaration", "variable_declaration"):
                for declarator in child.named_children:
                    value = declarator.child_by_field_name("value")
                    name = _text(declarator.child_by_field_name("name"), source)
                    if value is None or not name:
                        continue
                    if value.type in _JS_FUNCTIONS:
                        out.append(Definition(child, "function", name, depth))
                        self._nested(value, source, depth, out)
                    elif value.type == "class":
                        out.append(Definition(child, "class", name, depth, leaf=False))
                        body = value.child_by_field_name("body")
                        if body is not None:
                            self._class_body(body, source, name, depth + 1, out)
            elif kind in ("export_statement", "program") or kind in _BLOCKS:
                self.walk(child, source, prefix, depth, out, in_class=in_class)

    def _nested(self, function: Node, source: bytes, depth: int, out: list[Definition]) -> None:
        body = function.child_by_field_name("body")
        if body is not None and body.type == "statement_block":
            self.walk(body, source, "", depth + 1, out, in_class=False)

    def _class_body(self, body: Node, source: bytes, name: str, depth: int, out: list[Definition]) -> None:
        for member in body.named_children:
            if member.type in ("method_definition", "method_signature", "abstract_method_signature"):
                member_name = _text(member.child_by_field_name("name"), source)
                out.append(Definition(member, "method", f"{name}.{member_name}", depth))

    def _expression(self, statement: Node, expr: Node, source: bytes, depth: int, out: list[Definition]) -> None:
        if expr.type == "assignment_expression":
            left = expr.child_by_field_name("left")
            right = expr.child_by_field_name("right")
            names = [_text(left, source)]
            while right is not None and right.type == "assignment_expression":  # a.b = a.c = function ...
                names.append(_text(right.child_by_field_name("left"), source))
                right = right.child_by_field_name("right")
            if right is None:
                return
            symbol = names[0]
            if right.type in _JS_FUNCTIONS:
                kind = "method" if "." in symbol or "[" in symbol else "function"
                out.append(Definition(statement, kind, symbol, depth))
                self._nested(right, source, depth, out)
            elif right.type == "class":
                out.append(Definition(statement, "class", symbol, depth, leaf=False))
                body = right.child_by_field_name("body")
                if body is not None:
                    self._class_body(body, source, symbol, depth + 1, out)
        elif expr.type == "call_expression":
            callee = _text(expr.child_by_field_name("function"), source)
            arguments = expr.child_by_field_name("arguments")
            args = arguments.named_children if arguments is not None else []
            if callee.split(".")[-1] == "defineGetter" and len(args) >= 3 and args[1].type == "string":
                name = _text(args[1], source).strip("'\"`")
                out.append(Definition(statement, "method", f"{_text(args[0], source)}.{name}", depth))
                return
            for argument in args:  # definitions made inside a callback run at load time (methods.forEach(...))
                if argument.type in _JS_FUNCTIONS:
                    body = argument.child_by_field_name("body")
                    if body is not None and body.type == "statement_block":
                        self.walk(body, source, "", depth, out, in_class=False)


class GoDefinitions(Definitions):
    def walk(
        self, node: Node, source: bytes, prefix: str, depth: int, out: list[Definition], *, in_class: bool
    ) -> None:
        for child in node.named_children:
            if child.type == "function_declaration":
                out.append(Definition(child, "function", _text(child.child_by_field_name("name"), source), depth))
            elif child.type == "method_declaration":
                receiver = _text(child.child_by_field_name("receiver"), source)
                match = re.search(r"\*?([A-Za-z_]\w*)(?:\[[^\]]*\])?\)$", receiver)
                owner = match.group(1) if match else ""
                name = _text(child.child_by_field_name("name"), source)
                out.append(Definition(child, "method", f"{owner}.{name}" if owner else name, depth))
            elif child.type == "type_declaration":
                for spec in child.named_children:
                    if spec.type in ("type_spec", "type_alias"):
                        out.append(Definition(child, "class", _text(spec.child_by_field_name("name"), source), depth))
                        break


class JavaDefinitions(Definitions):
    _CONTAINERS = frozenset(
        {
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
        }
    )

    def walk(
        self, node: Node, source: bytes, prefix: str, depth: int, out: list[Definition], *, in_class: bool
    ) -> None:
        for child in node.named_children:
            if child.type in self._CONTAINERS:
                symbol = prefix + _text(child.child_by_field_name("name"), source)
                out.append(Definition(child, "class", symbol, depth, leaf=False))
                body = child.child_by_field_name("body")
                if body is not None:
                    self.walk(body, source, symbol + ".", depth + 1, out, in_class=True)
            elif child.type in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
                symbol = prefix + _text(child.child_by_field_name("name"), source)
                out.append(Definition(child, "method", symbol, depth))
            elif child.type == "enum_body_declarations":
                self.walk(child, source, prefix, depth, out, in_class=True)


class RustDefinitions(Definitions):
    def walk(
        self, node: Node, source: bytes, prefix: str, depth: int, out: list[Definition], *, in_class: bool
    ) -> None:
        for child in node.named_children:
            kind = child.type
            if kind in ("function_item", "function_signature_item"):
                name = prefix + _text(child.child_by_field_name("name"), source)
                out.append(Definition(child, "method" if in_class else "function", name, depth))
            elif kind in ("struct_item", "enum_item", "union_item", "type_item", "macro_definition"):
                out.append(Definition(child, "class", prefix + _text(child.child_by_field_name("name"), source), depth))
            elif kind in ("impl_item", "trait_item"):
                field = "type" if kind == "impl_item" else "name"
                owner = re.sub(r"<.*", "", _text(child.child_by_field_name(field), source))
                symbol = prefix + owner
                out.append(Definition(child, "class", symbol, depth, leaf=False))
                body = child.child_by_field_name("body")
                if body is not None:
                    self.walk(body, source, symbol + "::", depth + 1, out, in_class=True)
            elif kind == "mod_item":
                body = child.child_by_field_name("body")
                if body is not None:
                    symbol = prefix + _text(child.child_by_field_name("name"), source)
                    out.append(Definition(child, "class", symbol, depth, leaf=False))
                    self.walk(body, source, symbol + "::", depth + 1, out, in_class=False)


_STRATEGIES: dict[str, Callable[[], Definitions]] = {
    "python": PythonDefinitions,
    "javascript": JavaScriptDefinitions,
    "typescript": JavaScriptDefinitions,
    "tsx": JavaScriptDefinitions,
    "go": GoDefinitions,
    "java": JavaDefinitions,
    "rust": RustDefinitions,
}


def definitions_for(language: str) -> Definitions:
    return _STRATEGIES[language]()
