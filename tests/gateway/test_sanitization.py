"""The host's sanitization pipeline (fail closed, shared placeholders, re-scan) and the log redactor."""

from __future__ import annotations

from pathlib import Path

import anyio
import pluggy
import pytest

from gateway.api import (
    PROJECT_NAME,
    FieldKind,
    Finding,
    PlaceholderMap,
    ProviderContext,
    SanitizationFailed,
    SanitizedText,
)
from gateway.sanitization import SanitizationPipeline
from gateway_plugins.sanitizers import plugin as sanitizers_plugin
from gateway_plugins.sanitizers.contextual import ContextualSanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer

E, C, F = FieldKind.ERROR_MESSAGE, FieldKind.CODE, FieldKind.FREE_TEXT


def pipeline(*extra) -> SanitizationPipeline:
    patterns = PatternSanitizer()
    chain = [patterns, ContextualSanitizer(), *extra]
    return SanitizationPipeline({E: chain, C: chain, F: chain}, query_layers=[patterns], verifier=patterns)


class Raising:
    name = "broken"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def sanitize(self, text, *, kind, placeholders):
        raise self.exc


class Unredactable:
    name = "flagger"

    async def sanitize(self, text, *, kind, placeholders):
        return SanitizedText(text, [Finding("odd", "secret", 0, 1, 0.72, self.name, None)])


class PassThrough:
    """A broken layer that hands back the original secret (simulates a buggy third-party plugin)."""

    name = "leaky"

    def __init__(self, original: str) -> None:
        self.original = original

    async def sanitize(self, text, *, kind, placeholders):
        return SanitizedText(self.original, [])


def test_fields_share_placeholders_and_keep_context() -> None:
    report = anyio.run(
        pipeline().sanitize_fields,
        {
            "error_message": ('File "/home/bob/app/main.py", line 42: mail alice@acme-corp.io failed', E),
            "code_snippet": ('ADMIN = "alice@acme-corp.io"  # or bob@acme-corp.io', C),
            "context": ("asked bob@acme-corp.io; numpy 1.26.4 on localhost:8000", F),
        },
    )
    assert not report.refused and report.confidence == 1.0
    assert report.fields["error_message"] == 'File "<PATH_1>/main.py", line 42: mail <EMAIL_1> failed'
    assert report.fields["code_snippet"] == 'ADMIN = "<EMAIL_1>"  # or <EMAIL_2>'
    assert report.fields["context"] == "asked <EMAIL_2>; numpy 1.26.4 on localhost:8000"
    assert len(report.findings) == 5 and set(report.findings_by_field) == {"error_message", "code_snippet", "context"}


@pytest.mark.parametrize("exc", [SanitizationFailed("model down"), RuntimeError("bug"), TimeoutError()])
def test_layer_failure_refuses(exc: Exception) -> None:
    report = anyio.run(pipeline(Raising(exc)).sanitize_fields, {"error_message": ("token ghp_x", E)})
    assert report.refused and report.reason == "sanitization_failed"
    assert report.fields == {} and "broken" in (report.details or "")


def test_unredactable_finding_refuses_with_spec_message() -> None:
    report = anyio.run(pipeline(Unredactable()).sanitize_fields, {"error_message": ("hello", E)})
    assert report.refused and report.fields == {}
    assert report.details == "Detected 1 potential secrets in submission. Please remove sensitive data and resubmit."
    assert report.confidence == pytest.approx(0.72)


def test_rescan_catches_survivors() -> None:
    secret = "key AKIAQ3EXAMPL2Z7K4M5N and alice@acme-corp.io"
    report = anyio.run(pipeline(PassThrough(secret)).sanitize_fields, {"error_message": (secret, E)})
    assert report.refused and len(report.unresolved) == 2
    assert report.details.startswith("Detected 2 potential secrets")


def test_unconfigured_kind_runs_the_verifier() -> None:
    patterns = PatternSanitizer()
    only_errors = SanitizationPipeline({E: [patterns]}, query_layers=[patterns], verifier=patterns)
    assert only_errors.layers_for(C) == (patterns,)


def test_sanitize_query() -> None:
    out = anyio.run(pipeline().sanitize_query, "ConnectionError 34.120.5.17 numpy 1.26.4")
    assert out == "ConnectionError <IP_1> numpy 1.26.4"
    patterns = PatternSanitizer()
    failing = SanitizationPipeline({}, query_layers=[Raising(RuntimeError("x"))], verifier=patterns)
    with pytest.raises(SanitizationFailed):
        anyio.run(failing.sanitize_query, "q")


def test_from_config_uses_registered_providers(tmp_path: Path) -> None:
    providers: dict[str, object] = {}

    def register(kind, name, factory, *, config_model=None, description=""):
        assert kind == "sanitizer" and description
        ctx = ProviderContext(kind, name, config_model() if config_model else None, tmp_path, lambda k, n=None: None)
        if name != "gemini":
            providers[name] = factory(ctx)

    pm = pluggy.PluginManager(PROJECT_NAME)
    from gateway import hookspecs

    pm.add_hookspecs(hookspecs)
    pm.register(sanitizers_plugin)
    pm.hook.gateway_register_providers(register=register)
    built = SanitizationPipeline.from_config(
        {"error_message": ["patterns", "contextual"], "code": ["patterns"], "query": ["patterns"]},
        providers.__getitem__,
    )
    assert [layer.name for layer in built.layers_for(E)] == ["patterns", "contextual"]
    assert built.layers_for(E)[0] is built.layers_for(C)[0]


def test_placeholder_map_is_per_submission() -> None:
    first = PlaceholderMap()
    assert first.placeholder("EMAIL", "a@b.io") == "<EMAIL_1>"
