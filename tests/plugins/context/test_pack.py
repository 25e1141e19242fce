"""The pack through the MCP SDK client (in-process): the full loop, incremental indexing, bad input, filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.plugins.context.loop import full_loop
from tests.plugins.context.support import (
    add_file_connector,
    call,
    call_error,
    context_config,
    index_and_wait,
    wait_for_job,
)

pytestmark = [pytest.mark.anyio]


async def test_full_loop_in_process_with_dense_retrieval(repo: Path, embed_data_dir: Path) -> None:
    async with running_gateway(context_config(embed=True), embed_data_dir) as client:
        await full_loop(client, repo)


async def test_incremental_reindex_touches_only_changed_files_and_drops_deleted(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        service = client.runtime.packs["context"].service
        before = {r["path"]: r["id"] for r in await service.store.fetch_all("SELECT id, path FROM ctx_files")}
        (repo / "shop" / "money.py").write_text("def round_cents(amount):\n    return round(amount, 3)\n")
        (repo / "web" / "routes.js").unlink()
        await index_and_wait(client)
        after = {r["path"]: r["id"] for r in await service.store.fetch_all("SELECT id, path FROM ctx_files")}
        assert "web/routes.js" not in after
        assert after["shop/money.py"] != before["shop/money.py"]  # re-chunked
        assert all(after[p] == before[p] for p in after if p != "shop/money.py")  # untouched
        hits = await call(client, "context.search", {"query": "render the checkout page"})
        assert all(r["metadata"]["path"] != "web/routes.js" for r in hits["results"])


async def test_bad_input_gets_a_structured_error_naming_the_field(repo: Path, data_dir: Path, tmp_path: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        for top_k in (0, 500):
            error = await call_error(client, "context.search", {"query": "x", "top_k": top_k})
            assert error["code"] == "validation_error" and error["details"]["errors"][0]["field"] == "top_k"
        for blank in ("", "   ", "\n\t"):
            error = await call_error(client, "context.search", {"query": blank})
            assert error["code"] == "validation_error" and error["details"]["errors"][0]["field"] == "query"
        error = await call_error(client, "context.index_control", {"action": "rebuild"})
        assert error["details"]["errors"][0]["field"] == "action"
        error = await call_error(client, "context.index_control", {"action": "stop"})
        assert error["code"] == "not_found" and error["details"]["field"] == "action"
        error = await call_error(client, "context.connector_management", {"action": "remove", "connector_id": "nope"})
        assert error["code"] == "not_found" and error["details"]["field"] == "connector_id"
        error = await call_error(client, "context.index_control", {"action": "start", "connectors": ["nope"]})
        assert error["code"] == "not_found" and error["details"]["field"] == "connectors"
        for root, words in ((tmp_path / "missing", "does not exist"), (repo / "README.md", "not a directory")):
            error = await call_error(
                client,
                "context.connector_management",
                {"action": "add", "connector_config": {"type": "file", "name": "x", "root": str(root)}},
            )
            assert error["details"]["errors"][0]["field"] == "connector_config.root"
            assert words in error["message"]
        error = await call_error(
            client, "context.connector_management", {"action": "add", "connector_config": {"type": "ftp", "name": "x"}}
        )
        assert error["details"]["errors"][0]["field"] == "connector_config.type"
        await add_file_connector(client, repo)
        await index_and_wait(client)
        error = await call_error(
            client, "context.search", {"query": "x", "work_context": {"active_file": "../../etc/passwd"}}
        )
        assert error["details"]["errors"][0]["field"] == "work_context.active_file"
        error = await call_error(client, "context.get_related_info", {"file_path": "../secret"})
        assert error["details"]["errors"][0]["field"] == "file_path"
        error = await call_error(client, "context.get_related_info", {"file_path": "no/such.py"})
        assert error["code"] == "not_found" and error["details"]["field"] == "file_path"
        oversized = {  # a value no file, branch or ticket can have is refused before any work, and not echoed
            "context.get_related_info": [
                ({"file_path": "a/" * 3000}, "file_path"),
                ({"ticket_id": "PROJ-" + "1" * 300}, "ticket_id"),
            ],
            "context.search": [
                ({"query": "x", "work_context": {"active_file": "a/" * 3000}}, "work_context.active_file"),
                ({"query": "x", "work_context": {"git_branch": "b" * 2000}}, "work_context.git_branch"),
                ({"query": "x", "work_context": {"open_ticket_ids": ["P-1"] * 101}}, "work_context.open_ticket_ids"),
                (
                    {"query": "x", "work_context": {"open_ticket_ids": ["P-" + "1" * 300]}},
                    "work_context.open_ticket_ids.0",
                ),
            ],
        }
        for tool, cases in oversized.items():
            for arguments, field in cases:
                error = await call_error(client, tool, arguments)
                assert error["code"] == "validation_error" and error["details"]["errors"][0]["field"] == field
                assert len(error["message"]) < 1000


async def test_filters_and_active_file(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        none = await call(client, "context.search", {"query": "card", "filters": {"source_types": ["slack"]}})
        assert none["results"] == []
        future = await call(
            client, "context.search", {"query": "card", "filters": {"date_range": {"from": "2999-01-01T00:00:00Z"}}}
        )
        assert future["results"] == []
        error = await call_error(
            client,
            "context.search",
            {
                "query": "card",
                "filters": {"date_range": {"from": "2025-02-01T00:00:00Z", "to": "2025-01-01T00:00:00Z"}},
            },
        )
        assert error["details"]["errors"][0]["field"] == "filters.date_range"
        plain = await call(client, "context.search", {"query": "round the amount", "top_k": 10})
        focused = await call(
            client,
            "context.search",
            {"query": "round the amount", "top_k": 10, "work_context": {"active_file": "shop/money.py"}},
        )
        assert focused["results"][0]["metadata"]["path"] == "shop/money.py"
        assert plain["results"]  # the same question without the active file still answers


async def test_search_says_not_indexed_apart_from_not_found(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        result = await client.call_tool("context.search", {"query": "anything"})
        assert result.structured_content["query_metadata"]["index_status"] == "no_connectors"
        assert "add one with context.connector_management" in result.content[0].text
        await add_file_connector(client, repo)
        empty = await call(client, "context.search", {"query": "anything"})
        assert empty["query_metadata"]["index_status"] == "empty"
        await index_and_wait(client)
        miss = await call(client, "context.search", {"query": "zzzqqq"})
        assert miss["results"] == [] and miss["query_metadata"]["index_status"] == "ready"


async def test_declared_connectors_and_tenants(repo: Path, data_dir: Path) -> None:
    config = context_config(context={"connectors": [{"type": "file", "name": "declared", "root": str(repo)}]})
    async with running_gateway(config, data_dir) as client:
        listed = await call(client, "context.connector_management", {"action": "list"})
        assert [(c["name"], c["origin"]) for c in listed["connectors"]] == [("declared", "config")]
        service = client.runtime.packs["context"].service
        assert await service.list_connectors("other-tenant") == []  # another tenant sees none of them
        await index_and_wait(client)
        declared = listed["connectors"][0]["id"]
        change = {"action": "update", "connector_id": declared, "connector_config": {"max_file_bytes": 10}}
        for arguments in (change, {"action": "remove", "connector_id": declared}):  # the config file's, not the API's
            refused = await call_error(client, "context.connector_management", arguments)
            assert refused["code"] == "forbidden" and refused["details"]["reason"] == "declared_in_config"
            assert "declared in the config file" in refused["message"]
        added = await add_file_connector(client, repo, name="added")
        updated = await call(
            client,
            "context.connector_management",
            {"action": "update", "connector_id": added, "connector_config": {"max_file_bytes": 10}},
        )
        assert "re-index" in updated["message"]
    async with running_gateway(context_config(), data_dir) as client:  # taken out of the file: the API's now
        listed = await call(client, "context.connector_management", {"action": "list"})
        assert {(c["name"], c["origin"]) for c in listed["connectors"]} == {("declared", "tool"), ("added", "tool")}
        removed = await call(client, "context.connector_management", {"action": "remove", "connector_id": declared})
        assert removed["connectors"] == [] or declared not in {c["id"] for c in removed["connectors"]}


async def test_stop_is_graceful_and_the_next_start_resumes(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "many"
    for n in range(300):
        (root / f"m{n % 5}").mkdir(parents=True, exist_ok=True)
        (root / f"m{n % 5}" / f"mod_{n}.py").write_text(f"def f_{n}(x):\n    return x + {n}\n")
    async with running_gateway(context_config(context={"embed_batch": 8}), data_dir) as client:
        await add_file_connector(client, root, name="many")
        await call(client, "context.index_control", {"action": "start"})
        stopped = await call(client, "context.index_control", {"action": "stop"})
        assert stopped["status"] == "stopping"
        refused = await call_error(client, "context.index_control", {"action": "start"})  # one job at a time
        assert refused["code"] == "conflict" and refused["details"]["job_id"] == stopped["current_job"]["id"]
        status = await wait_for_job(client)
        assert status["status"] == "stopped"
        assert status["current_job"]["progress"]["completed"] < 300
        service = client.runtime.packs["context"].service
        done_before = {r["path"]: r["id"] for r in await service.store.fetch_all("SELECT id, path FROM ctx_files")}
        resumed = await index_and_wait(client)
        assert resumed["status"] == "completed" and resumed["current_job"]["progress"]["total"] == 300
        after = {r["path"]: r["id"] for r in await service.store.fetch_all("SELECT id, path FROM ctx_files")}
        assert len(after) == 300 and all(after[p] == i for p, i in done_before.items())


async def test_a_bad_declared_connector_stops_the_start_naming_the_key(tmp_path: Path, data_dir: Path) -> None:
    from gateway.api import ConfigError

    config = context_config(context={"connectors": [{"type": "file", "name": "gone", "root": str(tmp_path / "x")}]})
    with pytest.raises(ConfigError) as caught:
        async with running_gateway(config, data_dir):
            pass
    assert "'plugins.context.connectors.0': root: " in str(caught.value) and "does not exist" in str(caught.value)


async def test_an_empty_index_says_why(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "ignored"
    root.mkdir()
    (root / ".gitignore").write_text("*.py\n")
    (root / "a.py").write_text("x = 1\n")
    async with running_gateway(context_config(), data_dir) as client:
        await add_file_connector(client, root, name="ignored")
        await index_and_wait(client)
        [info] = (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        assert info["stats"]["documents_indexed"] == 0
        assert info["stats"]["skipped"] == {"ignored": 1, "hidden": 1}
        assert (
            info["stats"]["last_error"].startswith("no document to index (")
            and "1 ignored" in info["stats"]["last_error"]
        )


async def test_a_dense_fault_falls_back_to_lexical_ranking(repo: Path, embed_data_dir: Path) -> None:
    async with running_gateway(context_config(embed=True), embed_data_dir) as client:
        await add_file_connector(client, repo)
        service = client.runtime.packs["context"].service

        async def broken(*args: object, **kwargs: object) -> list:
            raise ConnectionError("vector store unreachable")

        await index_and_wait(client)
        service.vectors.query = broken  # the vector store goes away after indexing
        hits = await call(client, "context.search", {"query": "expired card refused", "top_k": 3})
        assert hits["results"][0]["metadata"]["symbol"] == "charge_card"
        assert hits["query_metadata"]["embedder"] is None
        assert "lexical ranking only" in hits["query_metadata"]["note"]


async def test_connector_names_stay_unique_per_tenant(repo: Path, data_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with running_gateway(context_config(), data_dir) as client:
        first = await add_file_connector(client, repo, name="one")
        await add_file_connector(client, other, name="two")
        for args in (
            {"action": "add", "connector_config": {"type": "file", "name": "two", "root": str(other)}},
            {"action": "update", "connector_id": first, "connector_config": {"name": "two"}},
        ):
            error = await call_error(client, "context.connector_management", args)
            assert error["details"]["errors"][0]["field"] == "connector_config.name", args
        renamed = await call(
            client,
            "context.connector_management",
            {"action": "update", "connector_id": first, "connector_config": {"name": "uno"}},
        )
        assert renamed["connectors"][0]["name"] == "uno" and "re-index" not in renamed["message"]


async def test_searches_while_a_job_writes_never_fail(tmp_path: Path, embed_data_dir: Path) -> None:
    root = tmp_path / "growing"
    for n in range(120):
        (root / f"p{n % 4}").mkdir(parents=True, exist_ok=True)
        (root / f"p{n % 4}" / f"mod_{n}.py").write_text(f"def handler_{n}(request):\n    return request.path + '{n}'\n")
    config = context_config(embed=True, context={"embed_batch": 4})
    async with running_gateway(config, embed_data_dir) as client:
        await add_file_connector(client, root, name="growing")
        await call(client, "context.index_control", {"action": "start"})
        searches = 0
        while (await call(client, "context.index_control", {"action": "status"}))["status"] == "running":
            result = await client.call_tool("context.search", {"query": "request path handler", "top_k": 5})
            assert not result.is_error, result.content[0].text  # rows added mid-search must not break it
            searches += 1
        assert searches > 0
        final = await call(client, "context.search", {"query": "handler_77", "top_k": 1})
        assert final["results"][0]["metadata"]["symbol"] == "handler_77"


async def test_a_root_gone_or_emptied_keeps_the_index_and_says_so(repo: Path, data_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "tax.py").write_text("def vat(amount):\n    return amount * 0.2\n")
    async with running_gateway(context_config(), data_dir) as client:
        shop = await add_file_connector(client, repo)
        await add_file_connector(client, other, name="other")
        await index_and_wait(client)
        service = client.runtime.packs["context"].service
        indexed = len(await service.store.fetch_all("SELECT id FROM ctx_files"))
        moved = tmp_path / "moved"
        repo.rename(moved)  # an unmounted volume, a checkout moved away
        status = await index_and_wait(client)
        assert status["last_completed"]["error"].startswith("1 of 2 connector(s) failed: file-shop: the directory")
        listed = {
            c["id"]: c for c in (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        }
        assert listed[shop]["status"] == "error" and "nothing was removed" in listed[shop]["stats"]["last_error"]
        assert listed["file-other"]["status"] == "active"  # the other connector was indexed as usual
        assert len(await service.store.fetch_all("SELECT id FROM ctx_files")) == indexed
        hits = await call(client, "context.search", {"query": "expired card refused", "top_k": 3})
        assert hits["results"][0]["metadata"]["symbol"] == "charge_card"

        repo.mkdir()  # back, but empty (a mount point without its volume)
        await index_and_wait(client)
        listed = {
            c["id"]: c for c in (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        }
        assert listed[shop]["status"] == "error"
        assert "offers no document now" in listed[shop]["stats"]["last_error"]
        assert len(await service.store.fetch_all("SELECT id FROM ctx_files")) == indexed

        await index_and_wait(client, [shop], action="force_reindex")  # emptied on purpose: forcing empties it
        listed = {
            c["id"]: c for c in (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        }
        assert listed[shop]["stats"]["documents_indexed"] == 0


async def test_a_rename_must_be_a_non_empty_string(repo: Path, data_dir: Path) -> None:
    async with running_gateway(context_config(), data_dir) as client:
        shop = await add_file_connector(client, repo)
        for name, problem in ((None, "must be a string"), (123, "must be a string"), ("  ", "must not be empty")):
            error = await call_error(
                client,
                "context.connector_management",
                {"action": "update", "connector_id": shop, "connector_config": {"name": name}},
            )
            assert error["details"]["errors"] == [{"field": "connector_config.name", "message": problem}], name
        [info] = (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        assert info["name"] == "shop"


async def test_a_search_passes_over_an_embedder_some_files_lack(
    repo: Path, embed_data_dir: Path, fake_gemini: Any
) -> None:
    """Gemini was down during the index run: until a run fills its vectors in, a search is served by the embedder
    that has every file's (else those files would be out of its dense stage)."""
    from tests.fakes.gemini import FakeResponse

    for _ in range(200):
        fake_gemini.enqueue(FakeResponse(status=503))
    gemini = {"api_key": "test-key", "base_url": fake_gemini.base_url, "output_dimensionality": 64, "max_retries": 0}
    config = context_config(embed=True)
    config["providers"] = {**config["providers"], "embedder": ["gemini", "local"], "embedder_retry_seconds": 0}
    config["plugins"]["embedder"] = {"gemini": gemini}
    async with running_gateway(config, embed_data_dir) as client:
        await add_file_connector(client, repo)
        await index_and_wait(client)
        fake_gemini.reset()  # Gemini answers again
        found = await call(client, "context.search", {"query": "where is the order total computed?"})
    assert found["query_metadata"]["embedder"] == "local/all-MiniLM-L6-v2-int8/384"
    assert found["results"]
