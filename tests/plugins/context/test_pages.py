"""``POST /search`` pagination over real HTTP: walking every page gives every result once, in the order of one
ranking, even while the index changes between pages; a cursor changed in any way, sent with another query or
filters, or expired, is a 400 naming ``pagination.cursor``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.api import ValidationFailed
from gateway_plugins.context.pages import CursorCodec
from tests.plugins.context.rest_support import SCOPES, Api, envelope, rest_config, serve

QUERY = {"query": "handler request path"}


def _handlers(root: Path, count: int) -> Path:
    for n in range(count):
        (root / f"p{n % 4}").mkdir(parents=True, exist_ok=True)
        (root / f"p{n % 4}" / f"mod_{n}.py").write_text(f"def handler_{n}(request):\n    return request.path + '{n}'\n")
    return root


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with serve(rest_config(tmp_path / "data"), {"acme": ("acme", SCOPES), "globex": ("globex", SCOPES)}) as api:
        api.add_file_connector("acme", _handlers(tmp_path / "handlers", 60), name="handlers")
        api.index("acme")
        yield api


def _walk(api: Api, body: dict[str, Any], limit: int, between: Any = None) -> tuple[list[dict], list[dict]]:
    pages, results = [], []
    cursor = None
    while True:
        page = api.ok("POST", "/search", "acme", json={**body, "pagination": {"limit": limit, "cursor": cursor}})
        pages.append(page)
        results += page["results"]
        cursor = page["pagination"]["next_cursor"]
        assert page["pagination"]["has_more"] is (cursor is not None)
        if cursor is None:
            return pages, results
        if between is not None:
            between(len(pages))


def _key(result: dict) -> tuple[str, str]:
    return result["source"], result["metadata"]["lines"]


def test_walking_every_page_gives_every_result_once_in_ranking_order(api: Api) -> None:
    whole = api.ok("POST", "/search", "acme", json={**QUERY, "pagination": {"limit": 100}})
    assert whole["pagination"] == {"has_more": False, "next_cursor": None, "total_results": 60}
    pages, results = _walk(api, QUERY, 7)
    assert len(pages) == 9 and [len(p["results"]) for p in pages] == [7] * 8 + [4]
    assert all(p["pagination"]["total_results"] == 60 for p in pages)
    assert [_key(r) for r in results] == [_key(r) for r in whole["results"]]  # one ranking, no duplicates
    assert len(set(map(_key, results))) == 60
    first = pages[0]["pagination"]["next_cursor"]
    assert isinstance(first, str) and "handler" not in base64.urlsafe_b64decode(first.split(".")[0] + "==").decode()


def test_top_k_is_the_page_size_without_a_limit_and_the_page_size_may_change(api: Api) -> None:
    first = api.ok("POST", "/search", "acme", json={**QUERY, "top_k": 5})
    assert len(first["results"]) == 5 and first["pagination"]["has_more"]
    cursor = first["pagination"]["next_cursor"]
    second = api.ok("POST", "/search", "acme", json={**QUERY, "pagination": {"cursor": cursor, "limit": 20}})
    assert len(second["results"]) == 20 and not {_key(r) for r in second["results"]} & {
        _key(r) for r in first["results"]
    }


def test_pages_stay_one_ranking_while_the_index_changes(api: Api, tmp_path: Path) -> None:
    root = tmp_path / "handlers"

    def reindex(page: int) -> None:
        if page == 2:  # after two pages: new handlers that rank high, and a file rewritten
            for n in range(60, 80):
                (root / "p9").mkdir(exist_ok=True)
                (root / "p9" / f"mod_{n}.py").write_text(f"def handler_{n}(request):\n    return request.path\n")
            (root / "p0" / "mod_0.py").write_text("def handler_0(request):\n    return request.path + 'changed'\n")
            api.index("acme")

    pages, results = _walk(api, QUERY, 10, between=reindex)
    keys = [_key(r) for r in results]
    assert len(keys) == len(set(keys))  # never a result twice
    assert all(p["pagination"]["total_results"] == 60 for p in pages)  # the pages of the first ranking
    assert not any("p9/" in source for source, _ in keys)
    assert 59 <= len(keys) <= 60  # the rewritten file's old chunk is left out if it was after page 2
    fresh = api.ok("POST", "/search", "acme", json={**QUERY, "pagination": {"limit": 100}})
    assert fresh["pagination"]["total_results"] == 80  # a new search sees the new index


def _cursor(api: Api) -> str:
    page = api.ok("POST", "/search", "acme", json={**QUERY, "pagination": {"limit": 5}})
    return page["pagination"]["next_cursor"]


def _refused(api: Api, body: dict[str, Any], key: str = "acme") -> str:
    error = envelope(api.call("POST", "/search", key, json=body), 400, "VALIDATION_ERROR")
    [item] = error["details"]["errors"]
    assert item["field"] == "pagination.cursor" and "pagination.cursor" in error["message"]
    return item["reason"]


def _flip(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1 :]


def test_a_changed_cursor_is_refused(api: Api) -> None:
    cursor = _cursor(api)
    body, signature = cursor.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    forged_payload = base64.urlsafe_b64encode(json.dumps({**payload, "o": 0}).encode()).rstrip(b"=").decode()
    for changed in (
        _flip(cursor, 3),
        _flip(cursor, len(cursor) - 2),
        f"{forged_payload}.{signature}",  # another offset with the old signature
        body,
        f"{body}.",
        "not-a-cursor",
    ):
        assert _refused(api, {**QUERY, "pagination": {"cursor": changed}}) == "invalid", changed
    assert api.ok("POST", "/search", "acme", json={**QUERY, "pagination": {"cursor": ""}})["results"]  # no cursor


def test_a_cursor_is_bound_to_its_query_filters_and_tenant(api: Api) -> None:
    cursor = _cursor(api)
    for other in (
        {"query": "handler request"},
        {**QUERY, "filters": {"source_types": ["file"]}},
        {**QUERY, "work_context": {"active_file": "p0/mod_0.py"}},
    ):
        assert _refused(api, {**other, "pagination": {"cursor": cursor}}) == "other_query"
    assert _refused(api, {**QUERY, "pagination": {"cursor": cursor}}, key="globex") == "invalid"
    assert api.ok("POST", "/search", "acme", json={**QUERY, "top_k": 3, "pagination": {"cursor": cursor}})["results"]


def test_an_expired_cursor_is_refused(api: Api) -> None:
    cursor = _cursor(api)
    service = api.runtime.packs["context"].service

    async def expire() -> None:
        past = datetime.now(UTC) - timedelta(seconds=1)
        await service.store.execute("UPDATE ctx_result_sets SET expires_at = :past", {"past": past})

    anyio.run(expire)
    assert _refused(api, {**QUERY, "pagination": {"cursor": cursor}}) == "expired"


def test_the_codec_signs_for_one_tenant_and_needs_a_long_key() -> None:
    codec = CursorCodec(b"k" * 32)
    cursor = codec.encode("acme", {"s": "x", "o": 5, "q": "d"})
    assert codec.decode("acme", cursor) == {"s": "x", "o": 5, "q": "d"}
    with pytest.raises(ValidationFailed, match=r"pagination\.cursor"):
        codec.decode("globex", cursor)
    with pytest.raises(ValidationFailed, match=r"pagination\.cursor"):
        CursorCodec(b"k" * 33).decode("acme", cursor)
    with pytest.raises(ValueError, match="32 bytes"):
        CursorCodec(b"short")
