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

What the suite checks: the protocol and a type name; ``scan`` offers every seeded document under a relative POSIX
path, once, with an aware modification time, and gives a known reason for each skip; the same scan twice gives the
same documents; ``read`` returns each document's exact text with a MIME type; an unknown path is ``not_found``; an
absolute path or one climbing out with ``..`` is refused with an error (never content); ``history`` is a list,
newest first, within the limit; ``aclose`` may be called twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import get_args

import pytest

from gateway.api import Connector, HistoryEntry, NotFound, SkipReason, ToolError


@dataclass
class Seeded:
    connector: Connector
    documents: Mapping[str, str]
    """Path -> exact text of documents the source holds and the connector must offer."""


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
