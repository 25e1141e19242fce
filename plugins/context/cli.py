"""``gateway context index PATH``: index a directory with a progress bar (adds a ``file`` connector if needed).

It prints what the job changed (files indexed, unchanged, removed), what the index then holds, what was skipped
and every error, and exits 1 when the job did not complete or a connector failed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from gateway.api import ToolError

if TYPE_CHECKING:
    from gateway_plugins.context.indexer import IndexOutcome
    from gateway_plugins.context.models import ConnectorInfo

__all__ = ["register"]


def register(cli: Any) -> None:
    @cli.group("context")
    def context() -> None:
        """Context Engine: index repositories from the command line."""

    @context.command("index")
    @click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
    @click.option("--name", default=None, help="Connector name (default: the directory's name).")
    @click.option("--force", is_flag=True, help="Re-chunk and re-embed every file.")
    @click.pass_context
    def index(ctx: click.Context, path: Path, name: str | None, force: bool) -> None:
        """Index PATH (incremental: only changed files are re-indexed). Interrupt and run again to resume."""
        from tqdm import tqdm

        env = ctx.find_root().obj if ctx.obj is None else ctx.obj
        root = path.resolve()

        async def main() -> tuple[str, bool]:
            from gateway_plugins.context.service import DEFAULT_TENANT

            async with env.running_pack("context") as pack:
                service = pack.service
                rows = await service.repo.list_connectors(service.store, DEFAULT_TENANT)
                row = next((r for r in rows if r["type"] == "file" and _same_root(r["config"]["root"], root)), None)
                if row is None:
                    added = await service.add_connector(
                        DEFAULT_TENANT, {"type": "file", "name": name or root.name, "root": str(root)}
                    )
                    connector_id = added.id
                else:
                    connector_id = row["public_id"]
                started = await service.start_indexing(DEFAULT_TENANT, [connector_id], force=force)
                job = started.current_job
                assert job is not None
                handle = service.jobs.running_here(job.id)  # the job runs in this process: it tells what it did
                with tqdm(desc=connector_id, unit="file", file=sys.stderr) as bar:
                    while True:
                        row = await service.repo.get_job(service.store, job.id)
                        assert row is not None
                        bar.total = row["total"] or None
                        bar.n = row["completed"]
                        bar.refresh()
                        if row["status"] not in ("running", "queued", "stopping"):
                            break
                        await asyncio.sleep(0.2)
                mine = await service.get_connector(DEFAULT_TENANT, connector_id)
                outcome = handle.outcomes.get(connector_id) if handle is not None else None
                return _summary(connector_id, row, mine, outcome), row["status"] == "completed" and not row["error"]

        try:
            summary, succeeded = anyio.run(main)
        except ToolError as exc:
            raise click.ClickException(f"{exc.code}: {exc.message}") from None
        except KeyboardInterrupt:
            click.echo("interrupted; run the same command again to resume", err=True)
            sys.exit(130)
        click.echo(summary)
        if not succeeded:
            sys.exit(1)


def _summary(connector_id: str, job: dict[str, Any], connector: ConnectorInfo, outcome: IndexOutcome | None) -> str:
    """What the job changed, what the index now holds, what was skipped, and every error the run met."""
    stats = connector.stats
    done = (
        f"{outcome.indexed} indexed (new or changed), {outcome.unchanged} unchanged, {outcome.removed} removed"
        if outcome is not None
        else "nothing indexed"
    )
    skipped = ", ".join(f"{n} {r}" for r, n in stats.skipped.items()) or "none"
    text = (
        f"{connector_id}: job {job['status']}; {done}; the index holds {stats.documents_indexed} files, "
        f"{stats.chunks} chunks; skipped: {skipped}"
    )
    if stats.last_error and stats.last_error not in (job["error"] or ""):
        text += f"; errors: {stats.last_error}"
    if job["error"]:
        text += f"; failed: {job['error']}"
    return text


def _same_root(configured: str, root: Path) -> bool:
    return Path(configured).expanduser().resolve() == root
