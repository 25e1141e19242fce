"""Atlassian Document Format (ADF) to readable text.

Jira Cloud's REST API v3 returns rich-text fields (an issue's description, a comment's body) as ADF: a JSON tree of
block nodes (``paragraph``, ``heading``, ``bulletList``, ``codeBlock``, ``table``, ``panel``...) holding inline nodes
(``text`` with marks, ``mention``, ``emoji``, ``inlineCard``, ``hardBreak``, ``status``, ``date``). This renders
the tree as markdown-flavoured text, the way a reader would copy it: headings with ``#``, list items with ``-`` or
``1.``, code in fences, links as ``label (url)``, tables as ``|`` rows. Unknown nodes keep their text content, so
nothing written is lost when Atlassian adds a node type.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["adf_to_text"]

_BLOCK_SEPARATOR = "\n\n"


def adf_to_text(node: Any) -> str:
    """The text of an ADF document (or of a plain string, returned as is; ``None`` gives ``""``)."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.strip()
    return _block(node).strip()


def _children(node: dict[str, Any]) -> list[dict[str, Any]]:
    content = node.get("content")
    return [child for child in content if isinstance(child, dict)] if isinstance(content, list) else []


def _inline(nodes: list[dict[str, Any]]) -> str:
    return "".join(_inline_one(node) for node in nodes)


def _inline_one(node: dict[str, Any]) -> str:
    kind, attrs = node.get("type"), node.get("attrs") or {}
    if kind == "text":
        text = str(node.get("text", ""))
        for mark in node.get("marks") or []:
            mark_type, mark_attrs = mark.get("type"), mark.get("attrs") or {}
            if mark_type == "code":
                text = f"`{text}`"
            elif mark_type == "link" and mark_attrs.get("href") and mark_attrs["href"] != text:
                text = f"{text} ({mark_attrs['href']})"
        return text
    if kind == "hardBreak":
        return "\n"
    if kind == "mention":
        name = str(attrs.get("text") or attrs.get("id") or "someone")
        return name if name.startswith("@") else f"@{name}"
    if kind == "emoji":
        return str(attrs.get("text") or attrs.get("shortName") or "")
    if kind in ("inlineCard", "blockCard", "embedCard"):
        return str(attrs.get("url") or "")
    if kind == "status":
        return f"[{attrs.get('text', '')}]"
    if kind == "date":
        try:
            return datetime.fromtimestamp(int(attrs.get("timestamp", 0)) / 1000, UTC).strftime("%Y-%m-%d")
        except (TypeError, ValueError):
            return ""
    if kind == "placeholder":
        return ""
    return _inline(_children(node)) or str(node.get("text", ""))


def _list(node: dict[str, Any], ordered: bool) -> str:
    start = int((node.get("attrs") or {}).get("order", 1) or 1)
    lines = []
    for number, item in enumerate(_children(node), start):
        parts = [_block(child) for child in _children(item)] if item.get("type") == "listItem" else [_block(item)]
        body = "\n".join(part for part in parts if part.strip())  # a nested list stays in its item
        if item.get("type") == "taskItem":
            done = (item.get("attrs") or {}).get("state") == "DONE"
            body = f"[{'x' if done else ' '}] {_inline(_children(item)).strip()}"
        bullet = f"{number}." if ordered else "-"
        first, *rest = body.splitlines() or [""]
        lines.append(f"{bullet} {first}")
        lines.extend(f"  {line}" if line else "" for line in rest)
    return "\n".join(lines)


def _table(node: dict[str, Any]) -> str:
    rows = []
    for row in _children(node):
        cells = [_blocks(_children(cell)).strip().replace("\n", " ") for cell in _children(row)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _blocks(nodes: list[dict[str, Any]]) -> str:
    parts = [_block(node) for node in nodes]
    return _BLOCK_SEPARATOR.join(part for part in parts if part.strip())


def _block(node: dict[str, Any]) -> str:
    kind, attrs = node.get("type"), node.get("attrs") or {}
    if kind == "doc":
        return _blocks(_children(node))
    if kind == "paragraph":
        return _inline(_children(node))
    if kind == "heading":
        return "#" * int(attrs.get("level", 1) or 1) + " " + _inline(_children(node))
    if kind == "bulletList":
        return _list(node, ordered=False)
    if kind in ("orderedList",):
        return _list(node, ordered=True)
    if kind in ("taskList", "decisionList"):
        return _list(node, ordered=False)
    if kind == "codeBlock":
        return f"```{attrs.get('language') or ''}\n{_inline(_children(node))}\n```"
    if kind == "blockquote":
        return "\n".join(f"> {line}" for line in _blocks(_children(node)).splitlines())
    if kind == "rule":
        return "---"
    if kind == "table":
        return _table(node)
    if kind in ("panel", "expand", "nestedExpand"):
        title = attrs.get("title")
        body = _blocks(_children(node))
        return f"{title}\n{body}" if title else body
    if kind in ("mediaSingle", "mediaGroup", "media"):
        alt = attrs.get("alt")
        inner = _blocks(_children(node)) if kind != "media" else ""
        return inner or (f"[attachment: {alt}]" if alt else "[attachment]")
    if kind in ("inlineCard", "blockCard", "embedCard", "mention", "emoji", "text", "status", "date", "hardBreak"):
        return _inline_one(node)
    children = _children(node)  # unknown block: keep whatever text it holds
    if children and all(child.get("type") in ("text", "hardBreak", "mention", "emoji") for child in children):
        return _inline(children)
    return _blocks(children) or str(node.get("text", ""))
