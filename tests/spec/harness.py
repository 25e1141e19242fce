"""Gateways the spec examples run against, one per pack, each on a fresh data dir.

* ``gim``: the embedded deployment with the issue the GIM examples talk about already stored under the id they
  use (``550e8400-...``): the LangChain ``@tool`` issue of the submission example, imported with that id.
* ``thinking``: the pack with auditing on, over a git repository that has a pending change (``change``) or
  none (``clean``: nothing to review).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gateway.testing import running_gateway
from tests.plugins.gim.support import gim_config, seed_model_cache
from tests.plugins.thinking.conftest import GitRepo
from tests.plugins.thinking.conftest import gateway_config as thinking_config
from tests.spec.extract import SpecExample, load_manifest

SPEC_ISSUE = "550e8400-e29b-41d4-a716-446655440000"
"""The master issue id of the GIM examples (fix bundle, confirmation, usage) and of their responses."""


def spec_submission() -> dict[str, Any]:
    """The submission example of the API reference (rev 2, which wins where the revisions differ)."""
    return next(
        e.arguments
        for e in load_manifest()
        if e.document == "gim-api-reference-rev2.txt" and e.target == "gim_submit_issue"
    )


async def seed_spec_issue(runtime: Any) -> None:
    """Store the example submission as a master under :data:`SPEC_ISSUE` (the bulk import keeps given ids)."""
    from gateway_plugins.gim.bulk import import_masters, prepare_trusted
    from gateway_plugins.gim.schemas import SubmitIssueInput

    core = runtime.packs["gim"].core
    await core.ensure_embedders()
    prepared = prepare_trusted(SubmitIssueInput.model_validate(spec_submission()))
    documents = await core.embeddings.embed_documents([prepared.texts[k] for k in core.kinds])
    vectors = {eid: [dict(zip(core.kinds, vecs, strict=True))] for eid, vecs in documents.vectors.items()}
    await import_masters(core, [prepared], vectors, ids=[SPEC_ISSUE])


@asynccontextmanager
async def gim_gateway(tmp_path: Path, minilm_graph: Path) -> AsyncIterator[Any]:
    data = tmp_path / "data"
    seed_model_cache(data, minilm_graph)
    async with running_gateway(gim_config(), data) as client:
        await seed_spec_issue(client.runtime)
        yield client


PATCHED = """\
def load(path):
    try:
        return open(path).read()
    except Exception:
        return None
"""


@asynccontextmanager
async def thinking_gateway(tmp_path: Path, workspace: str) -> AsyncIterator[Any]:
    repo = GitRepo(tmp_path / "repo")
    repo.write("src/loader.py", "def load(path):\n    return open(path).read()\n")
    repo.commit()
    if workspace == "change":
        repo.write("src/loader.py", PATCHED)
    async with running_gateway(thinking_config(repo.root), tmp_path / "data") as client:
        yield client


def example_id(example: SpecExample) -> str:
    return example.id
