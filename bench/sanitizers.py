"""Sanitizer benchmark: secrets persisted, false positives, readability, throughput and linear cost, ours
next to detect-secrets.

    ./dev python bench/sanitizers.py [--corpus DIR] [--skip-linear] [--skip-throughput]

Corpus: ``tests/data/sanitizer_corpus/{corpus,hard_cases}.jsonl``. Ours is the real
:class:`gateway.sanitization.SanitizationPipeline` with ``patterns`` + ``contextual`` on ``error_message``
fields, re-scanned by ``patterns`` (what GIM stores). A labelled secret *persists* when it is still in the
output (a refusal stores nothing, so it persists nowhere); a negative is a false positive when the output
differs from the input at all (a refusal counts too); a ``keep`` span (a library path, a file name) is *lost*
when it is no longer in the output. detect-secrets runs with its default plugins and filters, each record
scanned as a file (``scan_file``): a secret persists for it when it lies on no flagged line, a negative is a
false positive when any line is flagged. detect-secrets looks for credentials only, so the table also gives
the figures over the credential categories alone.

Throughput is MB (10^6 bytes of UTF-8) of input per second of CPU time (``time.process_time``: other jobs on a
shared machine do not count, though they still slow the CPU down through shared caches), best and median of
several rounds over the whole corpus, as ``timeit`` advises.

Linear cost: each layer on adversarial inputs of 15 KB, 150 KB and 1.5 MB (an unbroken run of letters, digits,
base64, ``a@a@…``, ``/a/a…``, ``:``, ``.``, ``-``, ``key=key=…`` and the like, and the corpus itself): CPU time,
best of 5 (of 3 for 1.5 MB), and the ratio of each size to the previous. A linear layer gives ratios near 10.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.api import FieldKind, PlaceholderMap  # noqa: E402
from gateway.sanitization import SanitizationPipeline  # noqa: E402
from gateway_plugins.sanitizers.contextual import ContextualSanitizer  # noqa: E402
from gateway_plugins.sanitizers.heuristics import is_identifying_ip  # noqa: E402
from gateway_plugins.sanitizers.patterns import PatternSanitizer  # noqa: E402

CREDENTIAL_CATEGORIES = frozenset(
    """aws gcp azure openai anthropic huggingface github gitlab slack stripe twilio sendgrid npm pypi dockerhub jwt
    bearer private_key url_credentials generic_assignment contextual_secret random_token key_material
    url_reserved_password connection_string""".split()
)
"""Positive categories holding a credential (what detect-secrets looks for)."""


REFUSED: dict[str, int] = defaultdict(int)
"""Records the pipeline refused (stored nothing), by label."""


def load(corpus_dir: Path) -> list[dict]:
    records = []
    for name in ("corpus.jsonl", "hard_cases.jsonl"):
        with (corpus_dir / name).open(encoding="utf-8") as fh:
            records.extend(json.loads(line) for line in fh if line.strip())
    return records


async def ours(records: list[dict]) -> list[tuple[bool, bool]]:
    """Per record: (handled correctly: no secret persisted / unchanged, every keep span still there)."""
    patterns = PatternSanitizer()
    pipeline = SanitizationPipeline(
        {FieldKind.ERROR_MESSAGE: [patterns, ContextualSanitizer()]}, query_layers=[patterns], verifier=patterns
    )
    verdicts = []
    for record in records:
        report = await pipeline.sanitize_fields({"text": (record["text"], FieldKind.ERROR_MESSAGE)})
        REFUSED[record["label"]] += report.refused
        out = None if report.refused else report.fields["text"]
        kept = out is not None and all(k in out for k in record.get("keep", []))
        if record["label"] == "positive":
            verdicts.append((out is None or all(secret not in out for secret in record["secrets"]), kept))
        else:
            verdicts.append((out == record["text"], kept))
    return verdicts


def detect_secrets_flagged_lines(text: str, workdir: Path) -> set[int]:
    """Line numbers detect-secrets flags in ``text``, scanned as a file (its normal use: entropy limits and
    filters on), with its default plugins."""
    from detect_secrets.core.scan import scan_file

    path = workdir / "sample.txt"
    path.write_text(text, encoding="utf-8")
    return {secret.line_number for secret in scan_file(str(path))}


def detect_secrets_verdicts(records: list[dict]) -> list[bool]:
    from detect_secrets.settings import default_settings

    verdicts = []
    with default_settings(), tempfile.TemporaryDirectory() as tmp:
        for record in records:
            flagged = detect_secrets_flagged_lines(record["text"], Path(tmp))
            lines = record["text"].splitlines()
            if record["label"] == "positive":
                verdicts.append(
                    all(any(s in lines[n - 1] for n in flagged if n <= len(lines)) for s in record["secrets"])
                )
            else:
                verdicts.append(not flagged)
    return verdicts


def throughput(
    texts: list[str], fn: Callable[[str], object], rounds: int = 7, min_seconds: float = 0.2
) -> tuple[float, float]:
    """MB/s of CPU time for ``fn`` over ``texts``: (best, median) of ``rounds`` rounds, each of whole passes
    over ``texts`` lasting at least ``min_seconds``."""
    size = sum(len(t.encode("utf-8")) for t in texts)
    speeds = []
    for _ in range(rounds):
        is_identifying_ip.cache_clear()
        passes, spent = 0, 0.0
        while spent < min_seconds:
            start = time.process_time()
            for text in texts:
                fn(text)
            spent += time.process_time() - start
            passes += 1
        speeds.append(size * passes / spent / 1e6)
    return max(speeds), statistics.median(speeds)


def table(records: list[dict], mine: list[tuple[bool, bool]], theirs: list[bool], label: str) -> dict[str, tuple]:
    rows: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for record, (good, _kept), their in zip(records, mine, theirs, strict=True):
        if record["label"] == label:
            rows[record["category"]].append((good, their))
    if label == "positive":
        print("\npositives: records with a secret persisted (lower is better)")
    else:
        print("\nnegatives (secret-free): records changed (lower is better)")
    print(f"  {'category':<30}{'n':>6}{'ours':>8}{'detect-secrets':>16}")
    totals: dict[str, tuple] = {}
    groups = {"OVERALL": lambda c: True}
    if label == "positive":
        groups["credential categories"] = lambda c: c in CREDENTIAL_CATEGORIES
    for category in sorted(rows):
        pairs = rows[category]
        bad_a = sum(not a for a, _ in pairs)
        bad_b = sum(not b for _, b in pairs)
        print(f"  {category:<30}{len(pairs):>6}{bad_a:>8}{bad_b:>16}")
    for name, member in groups.items():
        pairs = [p for category, ps in rows.items() if member(category) for p in ps]
        bad_a = sum(not a for a, _ in pairs)
        bad_b = sum(not b for _, b in pairs)
        print(
            f"  {name:<30}{len(pairs):>6}{bad_a:>8}{bad_b:>16}   ({bad_a / len(pairs):.3f} vs {bad_b / len(pairs):.3f})"
        )
        totals[name] = (len(pairs), bad_a, bad_b)
    return totals


ADVERSARIAL: dict[str, Callable[[random.Random, int], str]] = {
    "letters": lambda r, n: "".join(r.choice(string.ascii_letters) for _ in range(n)),
    "digits": lambda r, n: "".join(r.choice(string.digits) for _ in range(n)),
    "base64": lambda r, n: "".join(r.choice(string.ascii_letters + string.digits + "+/") for _ in range(n)),
    "a@a@a@": lambda r, n: ("a@" * n)[:n],
    "a@a.bc ": lambda r, n: ("a@a.bc " * n)[:n],
    "/a/a/a": lambda r, n: ("/a" * n)[:n],
    "::::": lambda r, n: ":" * n,
    "....": lambda r, n: "." * n,
    "----": lambda r, n: "-" * n,
    "key=key=": lambda r, n: ("key=" * n)[:n],
    "api_key=api_key=": lambda r, n: ("api_key=" * n)[:n],
    "pass-pass-": lambda r, n: ("pass-" * n)[:n] + "=x",
    "token token ": lambda r, n: ("token " * n)[:n],
    "password: x ": lambda r, n: ("password: x " * n)[:n],
    "a://b:c@": lambda r, n: ("a://b:c@" * n)[:n],
    "/home/a": lambda r, n: ("/home/a" * n)[:n],
    "1.1.1.1.": lambda r, n: ("1." * n)[:n],
    "4111 ": lambda r, n: ("4111 " * n)[:n],
    "sk-sk-": lambda r, n: ("sk-" * n)[:n],
    "eyJ…": lambda r, n: ("eyJabcdefghij." * n)[:n],
    "BEGIN + letters": lambda r, n: ("-----BEGIN PRIVATE KEY-----" + "A" * n)[:n],
    "\\n escapes": lambda r, n: ("-----BEGIN PRIVATE KEY-----" + "\\n" * n)[:n],
    "a.a.a…internal": lambda r, n: ("a." * n)[: n - 8] + "internal",
    "Bearer Bearer ": lambda r, n: ("Bearer " * n)[:n],
    "password &a": lambda r, n: ("password &a" * n)[:n],
    "corpus text": None,  # type: ignore[dict-item]
}


def _cpu_ms(layer: PatternSanitizer | ContextualSanitizer, text: str, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        layer.sanitize_sync(text, placeholders=PlaceholderMap())
        best = min(best, time.process_time() - start)
    return best * 1000


def linear_cost(records: list[dict], sizes: tuple[int, ...]) -> None:
    layers = {"patterns": PatternSanitizer(), "contextual": ContextualSanitizer()}
    shuffled = [r["text"] for r in records]
    random.Random(7).shuffle(shuffled)  # every prefix then holds the same mix of the corpus' categories
    # ... and a non-ASCII first line, so every prefix is read the same way (the records hold a few
    # non-ASCII characters: without it the smaller prefixes would be pure ASCII, a cheaper case)
    joined = "\n".join(["# café: résumé of the corpus", *shuffled])
    while len(joined) < sizes[-1]:
        joined += "\n" + joined
    labels = [f"{size // 1000}K" for size in sizes]
    print("\nlinear cost: CPU ms per input size (best of 5, of 3 above 150 KB) and the ratio of each size to the")
    print("previous (10 = linear)")
    header = "".join(f"{label:>9}" + ("" if index == 0 else f"{'x':>6}") for index, label in enumerate(labels))
    print(f"  {'input':<20}" + "".join(f"  {name:<{len(header) - 2}}" for name in layers))
    print(f"  {'':<20}" + header * len(layers))
    worst: dict[str, tuple[float, str]] = {name: (0.0, "") for name in layers}
    for name, make in ADVERSARIAL.items():
        cells = []
        for layer_name, layer in layers.items():
            times = []
            for size in sizes:
                text = joined[:size] if make is None else make(random.Random(7), size)
                times.append(_cpu_ms(layer, text, 5 if size <= 150_000 else 3))
            cells.append(
                "".join(
                    f"{ms:>9.1f}" + ("" if index == 0 else f"{ms / max(times[index - 1], 1e-3):>6.1f}")
                    for index, ms in enumerate(times)
                )
            )
            at_150k = times[sizes.index(150_000)] if 150_000 in sizes else times[-1]
            if at_150k > worst[layer_name][0]:
                worst[layer_name] = (at_150k, name)
        print(f"  {name:<20}" + "".join(cells))
    for layer_name, (ms, name) in worst.items():
        print(f"  slowest 150 KB input for {layer_name}: {name!r}, {ms:.1f} ms of CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests/data/sanitizer_corpus")
    parser.add_argument("--skip-linear", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument(
        "--sizes", default="15000,150000,1500000", help="input sizes of the linear-cost table, in characters"
    )
    args = parser.parse_args()
    records = load(args.corpus)
    mine = anyio.run(ours, records)
    theirs = detect_secrets_verdicts(records)
    positives = sum(r["label"] == "positive" for r in records)
    print(f"corpus: {len(records)} records ({positives} positives, {len(records) - positives} negatives)")
    persisted = table(records, mine, theirs, "positive")
    changed = table(records, mine, theirs, "negative")
    lost = sum(not kept for (_good, kept) in mine)
    with_keep = sum(bool(r.get("keep")) for r in records)
    print(f"\nreadability: records losing a keep span (library path, file name...): {lost} of {with_keep}")
    print(f"refused by the pipeline (nothing stored): {REFUSED['positive']} positives, {REFUSED['negative']} negatives")

    if not args.skip_throughput:
        texts = [r["text"] for r in records]
        patterns, contextual = PatternSanitizer(), ContextualSanitizer()
        from detect_secrets.settings import default_settings

        def layer1(text: str) -> None:
            patterns.sanitize_sync(text, placeholders=PlaceholderMap())

        def layer2(text: str) -> None:
            contextual.sanitize_sync(text, placeholders=PlaceholderMap())

        rows = [
            ("layer 1 patterns, per record", texts, layer1),
            ("layer 1 patterns, whole corpus as one text", ["\n".join(texts)], layer1),
            (
                "layer 1 patterns, negatives as one text",
                ["\n".join(r["text"] for r in records if not r["secrets"])],
                layer1,
            ),
            ("layer 1 log redaction (redact), per record", texts, patterns.redact),
            ("layer 2 contextual, per record", texts, layer2),
        ]
        size = sum(len(t.encode("utf-8")) for t in texts) / len(texts)
        print(f"\nthroughput (MB/s of CPU time; best and median of 7 rounds; {size:.0f} bytes per record on average)")
        print(f"  {'':<46}{'best':>8}{'median':>8}{'us/call':>9}")
        for label, inputs, fn in rows:
            best, median = throughput(inputs, fn)
            per_call = sum(len(t.encode("utf-8")) for t in inputs) / len(inputs) / best
            print(f"  {label:<46}{best:>8.2f}{median:>8.2f}{per_call:>9.1f}")
        with default_settings(), tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            best, median = throughput(texts, lambda text: detect_secrets_flagged_lines(text, workdir), rounds=3)
        print(f"  {'detect-secrets scan_file, per record':<46}{best:>8.2f}{median:>8.2f}")
    if not args.skip_linear:
        linear_cost(records, tuple(int(size) for size in args.sizes.split(",")))
    overall = persisted["OVERALL"]
    negatives = changed["OVERALL"]
    print(
        f"\nsummary: secrets persisted ours {overall[1]} of {overall[0]} vs detect-secrets {overall[2]}; "
        f"false positives ours {negatives[1]} of {negatives[0]} vs detect-secrets {negatives[2]}; "
        f"keep spans lost {lost}"
    )


if __name__ == "__main__":
    main()
