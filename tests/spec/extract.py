"""Find every example request in the specification documents.

The documents (``../shared/spec/``) show requests in several forms; each has a finder here:

* ``await mcp_client.call_tool("NAME", {...})``: Python calls (the GIM API reference, both revisions), read with
  Python's own tokenizer and ``ast.literal_eval`` (triple-quoted strings, ``True``);
* ``NAME({ key: "value" })``: JavaScript-style calls with unquoted keys (the GIM system design), read as JSON5;
* fenced JSON blocks: a JSON-RPC request (``"jsonrpc"`` + ``"method"``), the arguments of the section's tool
  (introduced by "Example arguments"), or an HTTP request body (introduced by "Request:" / "Request Body:", the
  method and path taken from the nearest ``METHOD /path`` above);
* fenced ``gan-config`` blocks: a session config a thought carries (the Sequential Thinking audit).

Schemas and responses are not requests and are not collected. ``python -m tests.spec.extract --write`` rewrites
the checked-in manifest (``spec_examples.json``) from the documents of :data:`DOCUMENTS`; the test suite checks
that the manifest matches the documents and runs every entry. A new pack adds its document to :data:`DOCUMENTS`
(and a finder here if its examples take another form) and a harness in ``test_spec_examples.py``.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import sys
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import json5

__all__ = ["DOCUMENTS", "MANIFEST", "SpecExample", "extract", "extract_all", "load_manifest", "spec_dir"]

DOCUMENTS: dict[str, str] = {
    "gim-api-reference.md": "gim",
    "gim-api-reference-rev2.txt": "gim",
    "gim-system-design.txt": "gim",
    "sequential-thinking-audit.md": "thinking",
}
"""Document -> the pack that serves its examples. ``context-engine-api.md`` joins when its pack exists."""

MANIFEST = Path(__file__).with_name("spec_examples.json")
_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class SpecExample:
    """One example request, with where it comes from."""

    document: str
    line: int
    heading: str
    """The nearest Markdown heading above it ("" in the plain-text documents, which lost theirs)."""
    label: str
    """The text that introduces it ("Example Request:", "Example Tool Call", "Call tool:"...)."""
    kind: str
    """``tool_call`` (arguments of a tool), ``jsonrpc`` (an MCP message), ``gan_config`` (a block a thought
    carries) or ``http`` (a REST request body)."""
    target: str
    """The tool name, the JSON-RPC method, or ``"METHOD /path"``."""
    arguments: Any

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}:{self.target}"


def spec_dir() -> Path:
    """``MCP_GATEWAY_SPEC_DIR``, else ``../shared/spec`` beside the repository (where CI lays it too)."""
    return Path(os.environ.get("MCP_GATEWAY_SPEC_DIR") or _REPO.parent / "shared" / "spec")


# -- locating -------------------------------------------------------------------------------------------------


def _offset_of(text: str, start: int, row: int, col: int) -> int:
    """The offset in ``text`` of (row, col) of a tokenizer position counted from ``start``."""
    lines = text[start:].splitlines(keepends=True)
    return start + sum(len(line) for line in lines[: row - 1]) + col


def _balanced_end(text: str, start: int) -> int:
    """The offset just past the bracket that closes the first one at or after ``start`` (strings respected)."""
    depth = 0
    for token in tokenize.generate_tokens(io.StringIO(text[start:]).readline):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
            if depth == 0:
                return _offset_of(text, start, *token.end)
    raise ValueError(f"unbalanced brackets from offset {start}")


class _Document:
    """A document's text with the lookups the finders share: line numbers, headings, labels, fences."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self.lines = text.splitlines()
        self.markdown = name.endswith(".md")
        self.fenced = self._fenced_lines()

    def _fenced_lines(self) -> set[int]:
        inside, fenced = False, set()
        for number, line in enumerate(self.lines, 1):
            if line.strip().startswith("```"):
                inside = not inside
                fenced.add(number)
            elif inside:
                fenced.add(number)
        return fenced

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def heading(self, line: int) -> str:
        if not self.markdown:
            return ""
        for number in range(line - 1, 0, -1):
            text = self.lines[number - 1]
            if text.startswith("#") and number not in self.fenced:
                return text.lstrip("#").strip()
        return ""

    def label(self, line: int) -> str:
        """The nearest non-empty line above ``line`` that is not a fence, trimmed of JSON and Markdown marks."""
        for number in range(line - 1, 0, -1):
            text = self.lines[number - 1].strip()
            if text and not text.startswith("```"):
                return text.lstrip("}])").strip("*-: ").rstrip("*") + (":" if text.rstrip("*").endswith(":") else "")
        return ""

    def example(self, line: int, kind: str, target: str, arguments: Any) -> SpecExample:
        return SpecExample(self.name, line, self.heading(line), self.label(line), kind, target, arguments)


# -- finders --------------------------------------------------------------------------------------------------

_PY_CALL = re.compile(r"\bcall_tool\(")
_JS_CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\(\{")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
_ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s`]*)")
_TOOL_HEADING = re.compile(r"Tool: `([^`]+)`")


def _python_calls(doc: _Document) -> list[SpecExample]:
    found = []
    for match in _PY_CALL.finditer(doc.text):
        call = ast.parse(doc.text[match.start() : _balanced_end(doc.text, match.start())], mode="eval").body
        assert isinstance(call, ast.Call) and len(call.args) == 2, doc.line_of(match.start())
        name, arguments = ast.literal_eval(call.args[0]), ast.literal_eval(call.args[1])
        found.append(doc.example(doc.line_of(match.start()), "tool_call", name, arguments))
    return found


def _js_calls(doc: _Document) -> list[SpecExample]:
    found = []
    for match in _JS_CALL.finditer(doc.text):
        brace = match.end() - 1
        arguments = json5.loads(doc.text[brace : _balanced_end(doc.text, brace)])
        found.append(doc.example(doc.line_of(match.start()), "tool_call", match.group(1), arguments))
    return found


def _fenced_blocks(doc: _Document) -> list[SpecExample]:
    found = []
    for match in _FENCE.finditer(doc.text):
        lang, line = match.group("lang"), doc.line_of(match.start()) + 1
        if lang == "gan-config":
            found.append(doc.example(line, "gan_config", "sequentialthinking", json.loads(match.group("body"))))
            continue
        if lang != "json":
            continue
        try:
            value = json.loads(match.group("body"))
        except ValueError:
            continue  # an illustration with "..." in it, not a request
        label = doc.label(line).lower()
        if isinstance(value, dict) and "jsonrpc" in value and "method" in value:
            found.append(doc.example(line, "jsonrpc", value["method"], value.get("params", {})))
        elif label.startswith("example arguments"):
            tool = next((m.group(1) for n in range(line, 0, -1) if (m := _TOOL_HEADING.search(doc.lines[n - 1]))), "")
            found.append(doc.example(line, "tool_call", tool, value))
        elif re.match(r"(\*\*)?request( body)?:", label):
            endpoint = next(
                (" ".join(m.groups()) for n in range(line, 0, -1) if (m := _ENDPOINT.search(doc.lines[n - 1]))), ""
            )
            found.append(doc.example(line, "http", endpoint, value))
    return found


_FINDERS = (_python_calls, _js_calls, _fenced_blocks)


def extract(name: str, text: str) -> list[SpecExample]:
    """Every example request of one document, in document order."""
    doc = _Document(name, text)
    return sorted((e for finder in _FINDERS for e in finder(doc)), key=lambda e: e.line)


def extract_all(directory: Path | None = None) -> list[SpecExample]:
    """The examples of every document of :data:`DOCUMENTS`."""
    directory = directory or spec_dir()
    return [e for name in DOCUMENTS for e in extract(name, (directory / name).read_text(encoding="utf-8"))]


def load_manifest() -> list[SpecExample]:
    return [SpecExample(**entry) for entry in json.loads(MANIFEST.read_text(encoding="utf-8"))]


def _write_manifest() -> None:
    entries = [asdict(e) for e in extract_all()]
    MANIFEST.write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{MANIFEST}: {len(entries)} examples")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        _write_manifest()
    else:
        for example in extract_all():
            print(f"{example.id}  [{example.kind}] {example.heading or example.label}")
