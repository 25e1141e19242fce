"""The house's import rules, read from the source: the ``mcp`` SDK is imported by one module
(``gateway/mcp_adapter/sdk.py``), and a built-in plugin imports nothing of the host but ``gateway.api``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDK = ("mcp", "mcp_types")


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _is(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_only_one_module_imports_the_sdk() -> None:
    importers = sorted(
        str(path.relative_to(ROOT))
        for folder in ("gateway", "plugins")
        for path in (ROOT / folder).rglob("*.py")
        if any(_is(module, sdk) for module in _imports(path) for sdk in SDK)
    )
    assert importers == ["gateway/mcp_adapter/sdk.py"]


def test_plugins_import_only_the_public_api_of_the_host() -> None:
    offenders = {
        str(path.relative_to(ROOT)): module
        for path in (ROOT / "plugins").rglob("*.py")
        for module in _imports(path)
        if _is(module, "gateway") and not _is(module, "gateway.api")
    }
    assert offenders == {}
