"""Sanitizer benchmark: recall, false positives and layer-1 throughput, ours next to detect-secrets.

    /work/venv/bin/python bench/sanitizers.py [--corpus DIR]

Corpus: ``tests/data/sanitizer_corpus/{corpus,hard_cases}.jsonl``. Ours is the real
:class:`gateway.sanitization.SanitizationPipeline` with ``patterns`` + ``contextual`` on ``error_message``
fields: a positive is caught when every labelled secret is gone from the output (a refusal stores nothing,
so it also counts as caught); a negative is a false positive when the output differs from the input at all
(a refusal counts too). detect-secrets runs with its default plugins and filters, each record scanned as a
file (``scan_file``): a positive is caught when every labelled secret lies on a flagged line, a negative is a
false positive when any line is flagged.

Throughput is MB (10^6 bytes of UTF-8) of input per second of CPU time (``time.process_time``: other jobs on a
shared machine do not count, though they still slow the CPU down through shared caches). Layer 1 is timed as
the pipeline calls it, ``PatternSanitizer.sanitize_sync`` with a fresh ``PlaceholderMap`` (findings,
placeholders and the redacted text included), two ways: one call per record (783 texts of 154 bytes on
average: this includes the fixed cost of every call, and is the figure the >= 5 MB/s target is judged on) and
the whole corpus joined into one text (scanning speed). Each figure is the best of several rounds over the
whole corpus, as ``timeit`` advises (the slower rounds measure interference, not the code); the median is
shown too. The memo of IP classifications is emptied before every round, so no round profits from the
previous one.
"""

from __future__ import annotations

import argparse
import json
import statistics
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
from gateway_plugins.sanitizers.gate import Re2Gate  # noqa: E402
from gateway_plugins.sanitizers.heuristics import is_public_ip  # noqa: E402
from gateway_plugins.sanitizers.patterns import PatternSanitizer  # noqa: E402


def load(corpus_dir: Path) -> list[dict]:
    records = []
    for name in ("corpus.jsonl", "hard_cases.jsonl"):
        with (corpus_dir / name).open(encoding="utf-8") as fh:
            records.extend(json.loads(line) for line in fh if line.strip())
    return records


async def ours(records: list[dict]) -> list[bool]:
    """Per record: True when the record is handled correctly (caught / left unchanged)."""
    patterns = PatternSanitizer()
    pipeline = SanitizationPipeline(
        {FieldKind.ERROR_MESSAGE: [patterns, ContextualSanitizer()]}, query_layers=[patterns], verifier=patterns
    )
    verdicts = []
    for record in records:
        report = await pipeline.sanitize_fields({"text": (record["text"], FieldKind.ERROR_MESSAGE)})
        out = None if report.refused else report.fields["text"]
        if record["label"] == "positive":
            verdicts.append(out is None or all(secret not in out for secret in record["secrets"]))
        else:
            verdicts.append(out == record["text"])
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
        is_public_ip.cache_clear()
        passes, spent = 0, 0.0
        while spent < min_seconds:
            start = time.process_time()
            for text in texts:
                fn(text)
            spent += time.process_time() - start
            passes += 1
        speeds.append(size * passes / spent / 1e6)
    return max(speeds), statistics.median(speeds)


def ds_scanner(workdir: Path):
    def scan(text: str) -> None:
        detect_secrets_flagged_lines(text, workdir)

    return scan


def table(records: list[dict], mine: list[bool], theirs: list[bool], label: str) -> tuple[float, float]:
    rows: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for record, a, b in zip(records, mine, theirs, strict=True):
        if record["label"] == label:
            rows[record["category"]].append((a, b))
    metric = "recall" if label == "positive" else "FP rate"
    print(f"\n{'positives' if label == 'positive' else 'negatives'}: {metric}")
    print(f"  {'category':<26}{'n':>5}{'ours':>10}{'detect-secrets':>17}")
    total_a = total_b = total = 0
    for category in sorted(rows):
        pairs = rows[category]
        good_a = sum(a for a, _ in pairs)
        good_b = sum(b for _, b in pairs)
        n = len(pairs)
        total_a, total_b, total = total_a + good_a, total_b + good_b, total + n
        if label == "positive":
            print(f"  {category:<26}{n:>5}{good_a / n:>10.3f}{good_b / n:>17.3f}")
        else:
            print(f"  {category:<26}{n:>5}{1 - good_a / n:>10.3f}{1 - good_b / n:>17.3f}")
    overall_a, overall_b = total_a / total, total_b / total
    if label != "positive":
        overall_a, overall_b = 1 - overall_a, 1 - overall_b
    print(f"  {'OVERALL':<26}{total:>5}{overall_a:>10.3f}{overall_b:>17.3f}")
    return overall_a, overall_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests/data/sanitizer_corpus")
    args = parser.parse_args()
    records = load(args.corpus)
    mine = anyio.run(ours, records)
    theirs = detect_secrets_verdicts(records)
    positives = sum(r["label"] == "positive" for r in records)
    print(f"corpus: {len(records)} records ({positives} positives, {len(records) - positives} negatives)")
    recall = table(records, mine, theirs, "positive")
    fp = table(records, mine, theirs, "negative")

    texts = [r["text"] for r in records]
    patterns = PatternSanitizer()
    contextual = ContextualSanitizer()
    joined = ["\n".join(texts)]
    clean = ["\n".join(r["text"] for r in records if r["label"] == "negative")]
    from detect_secrets.settings import default_settings

    def layer1(text: str) -> None:
        patterns.sanitize_sync(text, placeholders=PlaceholderMap())

    def layer2(text: str) -> None:
        contextual.sanitize_sync(text, placeholders=PlaceholderMap())

    rows = [
        ("layer 1 patterns, per record  [target]", texts, layer1),
        ("layer 1 patterns, whole corpus as one text", joined, layer1),
        ("layer 1 patterns, negatives as one text", clean, layer1),
        ("layer 1 log redaction (redact), per record", texts, patterns.redact),
        ("layer 2 contextual, per record", texts, layer2),
    ]
    gate = "google-re2 set" if Re2Gate.available() else "pure Python (google-re2 not installed)"
    print(f"\nthroughput (MB/s of CPU time; best and median of 7 rounds; rule gate: {gate})")
    print(f"  {'':<46}{'best':>8}{'median':>8}{'us/call':>9}")
    for label, inputs, fn in rows:
        best, median = throughput(inputs, fn)
        per_text = sum(len(t.encode("utf-8")) for t in inputs) / len(inputs) / best
        print(f"  {label:<46}{best:>8.2f}{median:>8.2f}{per_text:>9.1f}")
    with default_settings(), tempfile.TemporaryDirectory() as tmp:
        best, median = throughput(texts, ds_scanner(Path(tmp)), rounds=3)
    print(f"  {'detect-secrets scan_file, per record':<46}{best:>8.2f}{median:>8.2f}")
    print(f"\nsummary: recall ours {recall[0]:.3f} vs detect-secrets {recall[1]:.3f}; "
          f"false positives ours {fp[0]:.3f} vs detect-secrets {fp[1]:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
