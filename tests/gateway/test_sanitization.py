"""The host's sanitization pipeline (fail closed, shared placeholders, re-scan) and the log redactor."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import pluggy
import pytest

from gateway import sanitization
from gateway.api import (
    OFF_LOOP_CHARS,
    PROJECT_NAME,
    FieldKind,
    Finding,
    PlaceholderMap,
    ProviderContext,
    SanitizationFailed,
    SanitizedText,
)
from gateway.sanitization import SanitizationPipeline, sweep_known_values
from gateway_plugins.sanitizers import plugin as sanitizers_plugin
from gateway_plugins.sanitizers.contextual import ContextualSanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer
from tests.holding import PATIENCE, in_event_loop

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


class Recording:
    """An offline layer (it has a synchronous form) that notes which thread runs it, and can be held there."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.hold: threading.Event | None = None

    async def sanitize(self, text, *, kind, placeholders):
        self.calls.append(("sanitize", in_event_loop()))
        return SanitizedText(text, [])

    def sanitize_sync(self, text, *, placeholders):
        self.calls.append(("sanitize_sync", in_event_loop()))
        if self.hold is not None:
            assert self.hold.wait(PATIENCE), "nothing released the layer: the event loop was blocked"
        return SanitizedText(text, [])


class Networked:
    """A layer without a synchronous form (it would wait on the network): always awaited on the loop."""

    name = "networked"

    def __init__(self) -> None:
        self.on_loop: list[bool] = []

    async def sanitize(self, text, *, kind, placeholders):
        self.on_loop.append(in_event_loop())
        return SanitizedText(text, [])


def test_long_texts_go_to_a_worker_thread_and_short_ones_stay_on_the_loop() -> None:
    layer, remote = Recording(), Networked()
    chain = SanitizationPipeline({E: [layer, remote]}, query_layers=[layer], verifier=layer)
    long, short = "x" * OFF_LOOP_CHARS, "x" * (OFF_LOOP_CHARS - 1)
    report = anyio.run(chain.sanitize_fields, {"long": (long, E), "short": (short, E)})
    assert report.fields == {"long": long, "short": short}
    # long: the layer, then the verifier's re-scan, in a thread; short: both on the loop
    assert layer.calls == [("sanitize_sync", False)] * 2 + [("sanitize", True)] * 2
    assert remote.on_loop == [True, True]
    layer.calls.clear()
    assert anyio.run(chain.sanitize_query, long) == long and layer.calls == [("sanitize_sync", False)]


def test_other_tasks_run_while_a_long_text_is_sanitized() -> None:
    layer = Recording()
    layer.hold = threading.Event()
    chain = SanitizationPipeline({E: [layer]}, query_layers=[layer], verifier=layer)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(chain.sanitize_query, "x" * 100_000)
            await anyio.sleep(0.01)  # the query is in its worker thread, held there; the loop is free
            layer.hold.set()

    anyio.run(main)
    assert layer.calls == [("sanitize_sync", False)]


def test_many_short_fields_let_other_tasks_run_between_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sanitization, "SLICE_SECONDS", 0.0)
    chain = pipeline()
    fields = {f"f{n}": (f"value {n} of a short field", F) for n in range(50)}
    turns = 0

    async def main() -> None:
        nonlocal turns
        finished = anyio.Event()

        async def other() -> None:
            nonlocal turns
            while not finished.is_set():
                turns += 1
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as group:
            group.start_soon(other)
            await chain.sanitize_fields(fields)
            finished.set()

    anyio.run(main)
    assert turns > 50, "the other task got a turn between the fields' layers"


def test_a_value_redacted_in_one_field_is_swept_from_the_others() -> None:
    placeholders = PlaceholderMap()
    secret = placeholders.placeholder("PASSWORD", "Zq8xTr0ub4dor3kW", category="secret")
    word_secret = placeholders.placeholder("PASSWORD", "correcthorse", category="secret")
    email = placeholders.placeholder("EMAIL", "jane@northwind-corp.io", category="pii")
    user = placeholders.placeholder("PATH_USER", "ubuntu", category="pii")
    short = placeholders.placeholder("PASSWORD", "hunt3", category="secret")
    code = f'DB_PASSWORD = "{secret}"\nPW2 = "{word_secret}" # {short}\nHOME = "/home/{user}"  # {email}'
    swept = sweep_known_values(
        {
            "code": code,
            "cause": "The value Zq8xTr0ub4dor3kW had expired (not Zq8xTr0ub4dor3kWx), correcthorse too; mail "
            "jane@northwind-corp.io. Runs on ubuntu 22.04; hunt3 is short.",
        },
        placeholders,
    )
    assert swept["cause"] == (
        "The value <PASSWORD_1> had expired (not Zq8xTr0ub4dor3kWx), <PASSWORD_2> too; mail <EMAIL_1>. "
        "Runs on ubuntu 22.04; hunt3 is short."
    )  # whole words only; a user name that is a plain word, and a value too short to tell from prose, stay
    assert swept["code"] == code
