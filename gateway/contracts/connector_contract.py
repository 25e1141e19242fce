"""The contract every :class:`gateway.api.Connector` keeps.

Subclass :class:`ConnectorContract` in a test module (name it ``Test...``) and provide the ``seeded`` fixture: a
:class:`Seeded` with a ready connector and the documents you put in its source (path -> text). A third-party
connector (a wiki, a ticket system behind a local fake) runs the same suite::

    class TestMyConnectorContract(ConnectorContract):
        @pytest.fixture
        async def seeded(self, tmp_path):
            source = start_fake_source({"guide/intro.md": "# Intro", "api.md": "text"})
            connector = MyConnector(MyConfig(url=source.url))
            yield Seeded(connector, source.documents)
            await connector.aclose()

A hosted connector (an :class:`gateway.api.IncrementalConnector`) subclasses :class:`IncrementalConnectorContract`
instead, which runs everything above plus the sync checks, against a local fake of its service. Give the source a
small page size (so a sync has several pages), ``edit`` (changes one document at the source) and ``secret`` (the
token, which no cursor may hold)::

    class TestTrackerContract(IncrementalConnectorContract):
        @pytest.fixture
        async def seeded(self, fake_tracker):
            fake_tracker.add("T-1", "text")...
            connector = TrackerConnector(TrackerConfig(base_url=fake_tracker.base_url, page_size=2, ...))
            yield Seeded(connector, {"T-1": expected_text, ...}, edit=fake_tracker.touch, secret="the-token")
            await connector.aclose()

What the suite checks: the protocol and a type name; ``scan`` offers every seeded document under a relative POSIX
path, once, with an aware modification time, and gives a known reason for each skip; the same scan twice gives the
same documents; ``read`` returns each document's exact text with a MIME type; an unknown path is ``not_found``; an
absolute path or one climbing out with ``..`` is refused with an error (never content); ``history`` is a list,
newest first, within the limit; ``aclose`` may be called twice. For an incremental connector: a full sync offers
every document once across its pages, with the text ``read`` gives, a source type and an aware time; resuming from
any page's cursor offers none of the earlier pages again and loses nothing; a sync after a complete one offers
nothing new while the source is unchanged, and offers an edited document with its new text; no cursor holds the
token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import get_args

import pytest

from gateway.api import (
    ChangedDocument,
    ChangePage,
    Connector,
    HistoryEntry,
    IncrementalConnector,
    NotFound,
    SkipReason,
    ToolError,
)


@dataclass
class Seeded:
    connector: Connector
    documents: Mapping[str, str]
    """Path -> exact text of documents the source holds and the connector must offer."""
    edit: Callable[[str], Awaitable[None]] | None = None
    """Incremental connectors: change the document at this path at the source (its text must change)."""
    secret: str | None = None
    """Incremental connectors: the token, which must never appear in a cursor."""


class ConnectorContract:
    """Inherit, provide the ``seeded`` fixture, and every test below runs against your connector."""

    pytestmark = [pytest.mark.anyio]

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def seeded(self) -> Seeded:
        raise NotImplementedError("subclass ConnectorContract and provide the `seeded` fixture")

    async def test_satisfies_the_protocol(self, seeded: Seeded) -> None:
        assert isinstance(seeded.connector, Connector)
        assert isinstance(seeded.connector.type, str) and seeded.connector.type

    async def test_scan_offers_every_document_once_under_a_relative_posix_path(self, seeded: Seeded) -> None:
        result = await seeded.connector.scan()
        paths = [d.path for d in result.documents]
        assert len(paths) == len(set(paths))
        assert set(seeded.documents) <= set(paths)
        for document in result.documents:
            assert not document.path.startswith("/") and "\\" not in document.path
            assert ".." not in document.path.split("/")
            assert isinstance(document.last_modified, datetime) and document.last_modified.utcoffset() is not None
            assert document.size >= 0 and document.source_type
        reasons = set(get_args(SkipReason))
        assert all(skip.reason in reasons for skip in result.skipped)

    async def test_the_same_scan_twice_gives_the_same_documents(self, seeded: Seeded) -> None:
        first = await seeded.connector.scan()
        second = await seeded.connector.scan()
        assert sorted(d.path for d in first.documents) == sorted(d.path for d in second.documents)

    async def test_read_returns_the_exact_text(self, seeded: Seeded) -> None:
        for path, text in seeded.documents.items():
            content = await seeded.connector.read(path)
            assert content.text == text and content.path == path
            assert content.mime_type and content.last_modified.utcoffset() is not None

    async def test_an_unknown_path_is_not_found(self, seeded: Seeded) -> None:
        with pytest.raises(NotFound):
            await seeded.connector.read("no/such/document-9f3a.txt")

    @pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "/etc/passwd"])
    async def test_paths_leaving_the_source_are_refused(self, seeded: Seeded, path: str) -> None:
        with pytest.raises(ToolError) as caught:
            await seeded.connector.read(path)
        assert not isinstance(caught.value, NotFound) or "outside" not in caught.value.message

    async def test_history_is_newest_first_within_the_limit(self, seeded: Seeded) -> None:
        entries = await seeded.connector.history(None, limit=3)
        assert isinstance(entries, list) and len(entries) <= 3
        assert all(isinstance(e, HistoryEntry) for e in entries)
        times = [e.timestamp for e in entries]
        assert times == sorted(times, reverse=True)
        some_path = next(iter(seeded.documents))
        assert isinstance(await seeded.connector.history(some_path, limit=2), list)

    async def test_aclose_twice(self, seeded: Seeded) -> None:
        await seeded.connector.aclose()
        await seeded.connector.aclose()


async def full_sync(connector: IncrementalConnector, cursor: str | None = None) -> list[ChangePage]:
    """Every page of one sync, from ``cursor`` (bounded: a connector that never ends its sync fails)."""
    pages = []
    for _ in range(1000):
        page = await connector.changes(cursor)
        assert isinstance(page, ChangePage) and isinstance(page.cursor, str)
        pages.append(page)
        cursor = page.cursor
        if not page.more:
            return pages
    raise AssertionError("the sync never ended (more=True for 1000 pages)")


def _paths(pages: list[ChangePage]) -> list[str]:
    return [d.path for page in pages for d in page.documents]


class IncrementalConnectorContract(ConnectorContract):
    """The contract of a hosted connector: the file-shaped one above, and the incremental sync."""

    async def test_is_incremental(self, seeded: Seeded) -> None:
        assert isinstance(seeded.connector, IncrementalConnector)

    async def test_a_full_sync_offers_every_document_once_with_its_text(self, seeded: Seeded) -> None:
        connector = seeded.connector
        assert isinstance(connector, IncrementalConnector)
        pages = await full_sync(connector)
        paths = _paths(pages)
        assert len(paths) == len(set(paths)), "a document was offered twice in one sync"
        assert set(seeded.documents) <= set(paths)
        for page in pages:
            for document in page.documents:
                assert isinstance(document, ChangedDocument) and document.sections and document.source_type
                assert document.last_modified.utcoffset() is not None
                assert not document.path.startswith("/") and ".." not in document.path.split("/")
                if document.path in seeded.documents:
                    assert document.text == seeded.documents[document.path]
                    assert (await connector.read(document.path)).text == document.text

    async def test_resuming_from_a_page_cursor_offers_no_earlier_page_again(self, seeded: Seeded) -> None:
        connector = seeded.connector
        assert isinstance(connector, IncrementalConnector)
        pages = await full_sync(connector)
        if len(pages) < 2:
            pytest.skip("the fixture's source fits in one page: give it a smaller page size")
        for number in range(1, len(pages)):
            resumed = await full_sync(connector, pages[number - 1].cursor)
            assert set(_paths(resumed)) == set(_paths(pages[number:])), f"resumed after page {number}"

    async def test_a_sync_after_a_complete_one_offers_nothing_new(self, seeded: Seeded) -> None:
        connector = seeded.connector
        assert isinstance(connector, IncrementalConnector)
        first = await full_sync(connector)
        texts = {d.path: d.text for page in first for d in page.documents}
        again = await full_sync(connector, first[-1].cursor)
        for page in again:  # a connector may offer a few again (an overlap window), never a changed text
            for document in page.documents:
                assert texts.get(document.path) == document.text

    async def test_an_edited_document_is_offered_by_the_next_sync(self, seeded: Seeded) -> None:
        connector = seeded.connector
        assert isinstance(connector, IncrementalConnector)
        if seeded.edit is None:
            pytest.skip("the fixture gives no `edit`")
        first = await full_sync(connector)
        path = sorted(seeded.documents)[0]
        before = next(d.text for page in first for d in page.documents if d.path == path)
        await seeded.edit(path)
        after = [d for page in await full_sync(connector, first[-1].cursor) for d in page.documents if d.path == path]
        assert after and after[-1].text != before

    async def test_no_cursor_holds_the_token(self, seeded: Seeded) -> None:
        connector = seeded.connector
        assert isinstance(connector, IncrementalConnector)
        if not seeded.secret:
            pytest.skip("the fixture gives no `secret`")
        for page in await full_sync(connector):
            assert seeded.secret not in page.cursor
