"""``gateway gim stats [--issue ID]``: usage statistics of the configured deployment, as JSON on stdout."""

from __future__ import annotations

from typing import Any

import anyio
import click

from gateway.api import ToolError

__all__ = ["register"]


def register(cli: Any) -> None:
    """Add the ``gim`` command group to the gateway's command line."""

    @cli.group("gim")
    def gim() -> None:
        """Global Issue Memory maintenance and statistics."""

    @gim.command("stats")
    @click.option("--issue", "issue_id", default=None, help="An issue id (master or child): that issue's stats.")
    @click.option("--indent", default=2, show_default=True, type=click.IntRange(0, 16), help="JSON indentation.")
    @click.pass_context
    def stats(ctx: click.Context, issue_id: str | None, indent: int) -> None:
        """Print GlobalUsageStats, or IssueUsageStats of one issue."""
        env = ctx.find_root().obj if ctx.obj is None else ctx.obj

        async def main() -> str:
            async with env.running_pack("gim") as pack:
                result = await (pack.issue_stats(issue_id) if issue_id else pack.global_stats())
                return result.model_dump_json(indent=indent or None)

        try:
            click.echo(anyio.run(main))
        except ToolError as exc:
            raise click.ClickException(f"{exc.code}: {exc.message}") from None
