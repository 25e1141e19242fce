"""``gateway context index PATH``: index a directory with a progress bar (adds a ``file`` connector if needed)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import anyio
import click

from gateway.api import ToolError

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

        async def main() -> str:
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
                skipped = ", ".join(f"{n} {r}" for r, n in mine.stats.skipped.items()) or "none"
                return (
                    f"{connector_id}: job {row['status']}; {mine.stats.documents_indexed} files, "
                    f"{mine.stats.chunks} chunks indexed; skipped: {skipped}"
                    + (f"; errors: {row['error']}" if row["error"] else "")
                )

        try:
            click.echo(anyio.run(main))
        except ToolError as exc:
            raise click.ClickException(f"{exc.code}: {exc.message}") from None
        except KeyboardInterrupt:
            click.echo("interrupted; run the same command again to resume", err=True)
            sys.exit(130)


def _same_root(configured: str, root: Path) -> bool:
    return Path(configured).expanduser().resolve() == root
