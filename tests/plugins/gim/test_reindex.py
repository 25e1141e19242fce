"""Reindexing (gateway.api.Reindexable): vectors missed during an embedder outage are filled in; a full reindex
builds a new generation beside the active one, switches when complete, and resumes after an interruption."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from gateway.api import ConfigError, hookimpl
from gateway.cli import cli
from gateway.testing import running_gateway
from tests.fakes.gemini import FakeResponse
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, call, gim_config, submission

pytestmark = pytest.mark.anyio

ISSUES = [
    (NUMPY_ERROR, NUMPY_CAUSE, NUMPY_ACTIONS),
    (
        "ModuleNotFoundError: No module named 'distutils'",
        "Python 3.12 removed distutils from the standard library.",
        [{"order": 1, "type": "install", "command": "pip install setuptools", "explanation": "distutils shim"}],
    ),
    (
        "TypeError: Client.__init__() got an unexpected keyword argument 'proxies'",
        "httpx 0.28 removed proxies=.",
        [{"order": 1, "type": "downgrade", "command": "pip install httpx==0.27.2", "explanation": "keep proxies="}],
    ),
]


def _chain_config(fake_gemini: Any, **gim: Any) -> dict[str, Any]:
    config = gim_config(gim=gim)
    config["providers"]["embedder"] = ["gemini", "local"]
    config["plugins"]["embedder"] = {
        "gemini": {
            "api_key": "test-key",
            "base_url": fake_gemini.base_url,
            "output_dimensionality": 64,
            "max_retries": 0,
        }
    }
    return config


async def _submit_all(client: Any) -> list[str]:
    ids = []
    for error, cause, actions in ISSUES:
        created = await call(client, "gim_submit_issue", submission(error, cause, actions=actions))
        ids.append(created["issue_id"])
    return ids


async def test_missing_vectors_after_an_outage_are_filled(data_dir: Path, fake_gemini: Any) -> None:
    fake_gemini.enqueue(FakeResponse(status=503))  # Gemini is down for the first submission (then its breaker opens)
    async with running_gateway(_chain_config(fake_gemini), data_dir) as client:
        ids = await _submit_all(client)
        pack = client.runtime.packs["gim"]
        core = pack.core
        gemini_id, local_id = (e.id for e in core.embeddings.embedders)
        assert await core.repo.vector_item_ids(core.store, gemini_id, 0) == set()
        assert await core.repo.vector_item_ids(core.store, local_id, 0) == set(ids)
        calls: list[tuple[int, int]] = []
        reports = await pack.reindex(missing_only=True, progress=lambda done, total: calls.append((done, total)))
        by_id = {r.embedder_id: r for r in reports}
        assert by_id[gemini_id].embedded == 3 and by_id[local_id].embedded == 0
        assert by_id[local_id].skipped == 3 and by_id[gemini_id].total == 3
        assert calls and calls[-1] == (3, 3)
        assert await core.repo.vector_item_ids(core.store, gemini_id, 0) == set(ids)
        vector = (
            await core.embeddings.embedders[0].embed(
                [core.lexical and "ModuleNotFoundError: No module named 'distutils'"], task="query"
            )
        )[0]
        hits = await core.vectors.query(gemini_id, vector, kind="error", limit=1)
        assert hits[0].payload["item_id"] == ids[1]


async def test_full_reindex_switches_generation_and_resumes(data_dir: Path) -> None:
    async with running_gateway(gim_config(gim={"reindex_batch": 1}), data_dir) as client:
        ids = await _submit_all(client)
        pack = client.runtime.packs["gim"]
        core = pack.core
        (embedder_id,) = core.vectors.generations

        def interrupt(done: int, total: int) -> None:
            if done >= 1:
                raise KeyboardInterrupt  # the operator pressed Ctrl-C after the first item

        with pytest.raises(KeyboardInterrupt):
            await pack.reindex(missing_only=False, progress=interrupt)
        generation = core.vectors.generation(embedder_id)
        assert generation.active == 0 and generation.building == 1
        assert len(await core.repo.vector_item_ids(core.store, embedder_id, 1)) == 1
        found = await call(client, "gim_search_issues", {"error_message": ISSUES[1][0]})
        assert found["issues"][0]["issue_id"] == ids[1]  # searches keep using generation 0

        late = await call(
            client, "gim_submit_issue", submission("KeyError: 'HOME' in os.environ", "HOME unset in cron")
        )
        (report,) = await pack.reindex(missing_only=False, progress=lambda done, total: None)
        assert report.embedded == 2  # resumed: the item done before the interruption and the late one are skipped
        generation = core.vectors.generation(embedder_id)
        assert generation.active == 1 and generation.building is None
        collections = [c for c in await core.vectors.store.list_collections() if c.startswith("gim__")]
        assert collections == ["gim__local-all-minilm-l6-v2-int8-384__g1"]
        assert await core.repo.vector_item_ids(core.store, embedder_id, 0) == set()
        assert await core.repo.vector_item_ids(core.store, embedder_id, 1) == {*ids, late["issue_id"]}
        for (error, _, _), issue in zip(ISSUES, ids, strict=True):
            found = await call(client, "gim_search_issues", {"error_message": error})
            assert found["issues"][0]["issue_id"] == issue
    async with running_gateway(gim_config(), data_dir) as client:  # the switch survives a restart
        found = await call(client, "gim_search_issues", {"error_message": ISSUES[2][0]})
        assert found["issues"][0]["issue_id"] == ids[2]


def test_gateway_reindex_command_drives_the_pack(tmp_path: Path, data_dir: Path) -> None:
    """``gateway reindex`` (the host's command) reindexes the gim pack through gateway.api.Reindexable."""
    import anyio

    async def seed() -> list[str]:
        async with running_gateway(gim_config(), data_dir) as client:
            return await _submit_all(client)

    ids = anyio.run(seed)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[gateway]\ndata_dir = "{data_dir.as_posix()}"\nlog_level = "warning"\n[packs]\nenabled = ["gim"]\n'
        '[providers]\nembedder = ["local"]\nvector_store = "qdrant-edge"\nstore = "sqlite"\nrate_limiter = "memory"\n'
        'auth = "none"\n'
    )
    runner = CliRunner()
    assert runner.invoke(cli, ["reindex", "--missing", "--config", str(config)]).exit_code == 0
    full = runner.invoke(cli, ["reindex", "--config", str(config)])
    assert full.exit_code == 0, full.output

    async def check() -> None:
        async with running_gateway(gim_config(), data_dir) as client:
            core = client.runtime.packs["gim"].core
            (generation,) = core.vectors.generations.values()
            assert generation.active == 1
            found = await call(client, "gim_search_issues", {"error_message": ISSUES[0][0]})
            assert found["issues"][0]["issue_id"] == ids[0]

    anyio.run(check)


async def test_changing_the_local_precision_warns_until_a_reindex_fills_the_vectors(data_dir: Path) -> None:
    """fp32 and int8 vectors are different embedders: a deployment switched to int8 says at first use that its
    items lack int8 vectors, and ``reindex --missing`` makes them searchable again."""
    fp32 = gim_config(plugins={"embedder": {"local": {"precision": "fp32"}}})
    async with running_gateway(fp32, data_dir) as client:
        ids = await _submit_all(client)
    async with running_gateway(gim_config(), data_dir) as client:
        pack = client.runtime.packs["gim"]
        with capture_logs() as logs:
            (embedder,) = await pack.core.ensure_embedders()
        assert embedder.id == "local/all-MiniLM-L6-v2-int8/384"
        (warning,) = [entry for entry in logs if entry["event"] == "gim.embedder.vectors_missing"]
        assert (warning["items"], warning["without_vectors"]) == (3, 3)
        suggested = re.match(r"run `gateway (reindex[^`]*)`", warning["fix"])
        assert suggested is not None, warning["fix"]
        # the command the warning suggests is one the CLI accepts
        accepted = CliRunner().invoke(cli, [*suggested.group(1).split(), "--help"])
        assert accepted.exit_code == 0, accepted.output
        (report,) = await pack.reindex(missing_only=True, progress=lambda done, total: None)
        assert report.embedded == 3
        found = await call(client, "gim_search_issues", {"error_message": "No module named 'distutils'"})
        assert found["issues"][0]["issue_id"] == ids[1] and found["embedder"] == embedder.id
    async with running_gateway(gim_config(), data_dir) as client:
        with capture_logs() as logs:
            await client.runtime.packs["gim"].core.ensure_embedders()
        assert not [entry for entry in logs if entry["event"] == "gim.embedder.vectors_missing"]


async def test_an_embedder_id_that_would_reuse_another_ids_collection_is_refused(data_dir: Path) -> None:
    """Collections are named after the embedder id in lower case without punctuation: a later embedder whose id
    differs from a recorded one only there would overwrite its vectors."""
    async with running_gateway(gim_config(), data_dir) as client:
        vectors = client.runtime.packs["gim"].core.vectors
        await vectors.ensure_embedder("acme/sha/64", 64)
        with pytest.raises(ConfigError, match="holds the vectors of embedder 'acme/sha/64'"):
            await vectors.ensure_embedder("Acme-SHA/64", 64)
        assert "Acme-SHA/64" not in vectors.generations


async def test_a_reindex_goes_on_past_an_embedder_that_is_down(data_dir: Path, fake_gemini: Any) -> None:
    async with running_gateway(_chain_config(fake_gemini), data_dir) as client:
        ids = await _submit_all(client)
        for _ in range(50):
            fake_gemini.enqueue(FakeResponse(status=503))
        pack = client.runtime.packs["gim"]
        gemini_id, local_id = (e.id for e in pack.core.embeddings.embedders)
        reports = {r.embedder_id: r for r in await pack.reindex(missing_only=False, progress=lambda d, t: None)}
        found = await call(client, "gim_search_issues", {"error_message": ISSUES[1][0]})
    assert reports[gemini_id].error and reports[gemini_id].embedded == 0
    assert reports[local_id].error is None and reports[local_id].embedded == len(ids)
    assert found["issues"][0]["issue_id"] == ids[1]


async def test_a_resubmission_after_the_deciding_embedder_changed_still_finds_its_master(data_dir: Path) -> None:
    """Switched from fp32 to int8 with no reindex yet: the stored issues lack the deciding embedder's vectors, so the
    masters a submission may join get them at once, and the same issue submitted again joins its master."""
    fp32 = gim_config(plugins={"embedder": {"local": {"precision": "fp32"}}})
    async with running_gateway(fp32, data_dir) as client:
        ids = await _submit_all(client)
    async with running_gateway(gim_config(), data_dir) as client:
        core = client.runtime.packs["gim"].core
        (embedder,) = await core.ensure_embedders()
        before = await core.repo.count_items_without_vectors(core.store, embedder.id, 0)
        again = await call(client, "gim_submit_issue", submission(*ISSUES[1][:2], actions=ISSUES[1][2]))
        after = await core.repo.count_items_without_vectors(core.store, embedder.id, 0)
    assert before == 3
    assert again["merged"] is True and again["master_issue_id"] == ids[1]
    assert after < before  # the candidates' vectors were filled in on the way


async def test_searches_pass_over_an_embedder_that_lacks_some_items_vectors(data_dir: Path, fake_gemini: Any) -> None:
    """Gemini was down for a submission: until `reindex --missing` fills its vectors, a search is served by the
    embedder that has every item's (else that issue would only be found by its words), then by Gemini again."""
    fake_gemini.enqueue(FakeResponse(status=503))
    config = _chain_config(fake_gemini)
    config["providers"]["embedder_retry_seconds"] = 0  # Gemini answers again at once: only the gap keeps it out
    async with running_gateway(config, data_dir) as client:
        ids = await _submit_all(client)
        pack = client.runtime.packs["gim"]
        gemini_id, local_id = (e.id for e in pack.core.embeddings.embedders)
        query = {"error_message": ISSUES[0][0]}
        during = await call(client, "gim_search_issues", query)
        await pack.reindex(missing_only=True, progress=lambda done, total: None)
        after = await call(client, "gim_search_issues", query)
    assert during["embedder"] == local_id and during["issues"][0]["issue_id"] == ids[0]
    assert after["embedder"] == gemini_id and after["issues"][0]["issue_id"] == ids[0]


class _BuggyEmbedder:
    """A third-party embedder with a bug: it raises a plain exception, not ProviderUnavailable."""

    id = "buggy/model/8"
    dimension = 8
    max_batch = 16
    max_input_chars = 1000

    async def embed(self, texts: list[str], *, task: str) -> list[list[float]]:
        raise RuntimeError("a bug in the plugin")

    async def aclose(self) -> None:
        pass


class _BuggyPlugin:
    @hookimpl
    def gateway_register_providers(self, register: Any) -> None:
        register("embedder", "buggy", lambda ctx: _BuggyEmbedder())


async def test_a_reindex_reports_an_embedder_with_a_bug_and_fills_the_others(data_dir: Path) -> None:
    config = gim_config()
    config["providers"]["embedder"] = ["buggy", "local"]
    async with running_gateway(config, data_dir, extra_plugins=[("buggy", _BuggyPlugin())]) as client:
        ids = await _submit_all(client)  # the chain falls back past the buggy link
        pack = client.runtime.packs["gim"]
        with capture_logs() as logs:
            reports = {r.embedder_id: r for r in await pack.reindex(missing_only=True, progress=lambda d, t: None)}
    assert reports["buggy/model/8"].error == "RuntimeError: a bug in the plugin"
    local = next(r for embedder_id, r in reports.items() if embedder_id != "buggy/model/8")
    assert local.error is None and local.total == len(ids)
    assert any(line["event"] == "gim.reindex.embedder_failed" for line in logs)


async def test_a_generation_left_by_a_reindex_killed_after_its_switch_is_removed_at_the_next_start(
    data_dir: Path,
) -> None:
    """The switch commits, then the process dies before deleting the replaced collection and its rows: nothing
    would ever read or remove them. The state such a kill leaves is rebuilt here, then a restart cleans it."""
    from gateway.api import VectorPoint
    from gateway_plugins.gim.vectors import collection_name

    async with running_gateway(gim_config(), data_dir) as client:
        ids = await _submit_all(client)
        core = client.runtime.packs["gim"].core
        (embedder_id,) = core.vectors.generations
        await client.runtime.packs["gim"].reindex(missing_only=False, progress=lambda done, total: None)
        assert core.vectors.generation(embedder_id).active == 1
        old = collection_name(embedder_id, 0)
        (embedder,) = core.embeddings.embedders
        await core.vectors.store.ensure_collection(old, dimension=embedder.dimension, indexed_fields={})
        await core.vectors.store.upsert(old, [VectorPoint(ids[0], [1.0] * embedder.dimension, {"item_id": ids[0]})])
        async with core.store.transaction() as tx:
            await core.repo.record_vectors(tx, ids, embedder_id, 0)
    with capture_logs() as logs:
        async with running_gateway(gim_config(), data_dir) as client:
            core = client.runtime.packs["gim"].core
            collections = [c for c in await core.vectors.store.list_collections() if c.startswith("gim__")]
            left = await core.repo.vector_item_ids(core.store, embedder_id, 0)
            found = await call(client, "gim_search_issues", {"error_message": ISSUES[0][0]})
    assert collections == [collection_name(embedder_id, 1)] and left == set()
    assert found["issues"][0]["issue_id"] == ids[0]
    assert any(line["event"] == "gim.reconcile.replaced_generation_removed" for line in logs)


async def test_rows_of_a_replaced_generation_whose_collection_is_gone_are_dropped_at_the_next_start(
    data_dir: Path,
) -> None:
    """Killed between deleting the replaced collection and dropping its rows: the rows go at the next start."""
    async with running_gateway(gim_config(), data_dir) as client:
        ids = await _submit_all(client)
        core = client.runtime.packs["gim"].core
        (embedder_id,) = core.vectors.generations
        await client.runtime.packs["gim"].reindex(missing_only=False, progress=lambda done, total: None)
        async with core.store.transaction() as tx:
            await core.repo.record_vectors(tx, ids, embedder_id, 0)
    async with running_gateway(gim_config(), data_dir) as client:
        core = client.runtime.packs["gim"].core
        assert await core.repo.vector_item_ids(core.store, embedder_id, 0) == set()
        assert await core.repo.vector_item_ids(core.store, embedder_id, 1) == set(ids)
