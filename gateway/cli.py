"""The ``gateway`` command line: serve, inspect plugins and tools (and the remote servers they come from), call a
tool, check config, reindex."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import click
import structlog

from gateway import inventory
from gateway.api.errors import GatewayError
from gateway.api.tools import Reindexable, ToolPack
from gateway.app import DEFAULT_CONFIG, prepare, running_runtime
from gateway.cli_arguments import read_arguments
from gateway.cli_errors import cli_failure
from gateway.config import LogLevel
from gateway.logs import configure_logging
from gateway.plugin_manager import create_plugin_manager
from gateway.providers import ProviderHub
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

CONFIG_ENV = "MCP_GATEWAY_CONFIG"


def default_config_path() -> Path:
    """``$MCP_GATEWAY_CONFIG``, else ``./config.toml``, else the project's own ``config.toml``."""
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    local = Path("config.toml")
    return local if local.exists() else DEFAULT_CONFIG


class CliEnvironment:
    """click's ``obj`` for every command: the chosen config, the verbosity, and the deployment on demand.

    Commands print their result on stdout and log on stderr at ``warning`` and above (``-v``: ``info``, ``-vv``:
    ``debug``, ``-q``: ``error``); ``serve``, whose logs are its output, logs at the configured level unless
    ``-v``/``-q`` is given.
    """

    def __init__(self, config_path: Path, *, serving: bool = False) -> None:
        self.config_path = config_path
        self.serving = serving
        self.verbosity = 0
        """-1 with ``-q``, else the number of ``-v``."""

    def log_level(self) -> LogLevel | None:
        """The level to log at; None for the configured one."""
        if self.verbosity < 0:
            return "error"
        if self.verbosity > 0:
            return "info" if self.verbosity == 1 else "debug"
        return None if self.serving else "warning"

    def configure_logging(self) -> None:
        configure_logging(self.log_level() or "info")  # never on stdout: it is the stdio wire, and command output

    @asynccontextmanager
    async def running_runtime(self) -> AsyncIterator[GatewayRuntime]:
        """The deployment, started (packs, interceptors, providers), logging at :meth:`log_level`."""
        async with running_runtime(self.config_path, log_level=self.log_level()) as runtime:
            yield runtime

    @asynccontextmanager
    async def running_pack(self, name: str) -> AsyncIterator[ToolPack]:
        async with self.running_runtime() as runtime:
            if name not in runtime.packs:
                raise click.ClickException(f"pack {name!r} is not enabled in {self.config_path}")
            yield runtime.packs[name]

    @asynccontextmanager
    async def running_provider(self, kind: str, name: str | None = None) -> AsyncIterator[Any]:
        loaded, plugins = prepare(self.config_path)
        hub = ProviderHub(loaded, plugins.registry)
        try:
            yield hub.get(kind, name)
        finally:
            await hub.aclose()


def _run(main: Callable[[], Any]) -> Any:
    return anyio.run(main)


class GatewayGroup(click.Group):
    """Adds plugin commands (``gateway_register_commands``) when the command line is built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plugins_loaded = False

    def _load_plugin_commands(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        try:
            plugins = create_plugin_manager()
        except GatewayError as exc:
            click.echo(f"warning: plugin commands unavailable: {exc}", err=True)
            return
        plugins.pm.hook.gateway_register_commands(cli=self)
        for command in self.commands.values():  # plugins' commands take ``--config`` after their name too
            _accept_config_after(command)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (GatewayError, BaseExceptionGroup, KeyboardInterrupt) as exc:
            replacement = cli_failure(exc)
            if replacement is None:
                raise
            raise replacement from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._load_plugin_commands()
            command = super().get_command(ctx, cmd_name)
        return command


@click.group(cls=GatewayGroup)
@click.option(
    "--config", "config_path", type=click.Path(path_type=Path), default=None, help="Deployment config (TOML)."
)
@click.option("-v", "--verbose", count=True, help="Log info (-vv: debug) on stderr; commands log warnings only.")
@click.option("-q", "--quiet", is_flag=True, help="Log errors only.")
@click.pass_context
def cli(ctx: click.Context, config_path: Path | None, verbose: int, quiet: bool) -> None:
    """A plugin-architecture MCP gateway."""
    env = CliEnvironment(config_path or default_config_path(), serving=ctx.invoked_subcommand == "serve")
    env.verbosity = -1 if quiet else verbose
    env.configure_logging()
    ctx.obj = env


def _accept_config_after(command: click.Command) -> None:
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_config_after(sub)
    elif not any("--config" in getattr(param, "opts", ()) for param in command.params):
        _config_option(command)


def _config_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--config``, ``-v`` and ``-q`` accepted after the sub-command too (``gateway serve --config x.toml``)."""

    def config(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
        if value is not None:
            ctx.ensure_object(CliEnvironment).config_path = value

    def verbosity(ctx: click.Context, param: click.Parameter, value: int | bool) -> None:
        if value:
            env = ctx.ensure_object(CliEnvironment)
            env.verbosity = -1 if param.name == "quiet" else max(env.verbosity, 0) + int(value)
            env.configure_logging()

    eager: dict[str, Any] = {"expose_value": False, "is_eager": True}
    func = click.option(
        "--config",
        type=click.Path(path_type=Path),
        default=None,
        callback=config,
        help="Deployment config (TOML).",
        **eager,
    )(func)
    func = click.option("-v", "--verbose", count=True, callback=verbosity, help="Log info (-vv: debug).", **eager)(func)
    return click.option("-q", "--quiet", is_flag=True, callback=verbosity, help="Log errors only.", **eager)(func)


@cli.command()
@click.option("--transport", type=click.Choice(["stdio", "http"]), default=None)
@click.option("--host", default=None, help="HTTP bind address (default from config: 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="HTTP port (0 picks a free one).")
@_config_option
@click.pass_obj
def serve(env: CliEnvironment, transport: str | None, host: str | None, port: int | None) -> None:
    """Serve the configured packs over MCP stdio or Streamable HTTP.

    SIGINT or SIGTERM stops serving, then the packs and providers (stores flushed and closed); the process then
    ends by that signal (a shell reports 128 + its number). A second signal ends it at once."""
    from gateway import mcp_adapter
    from gateway.serving import serve_runtime, stdio_client_waits
    from gateway.shutdown import exit_by, shutdown_signals

    async def main() -> int | None:
        async with shutdown_signals() as shutdown:
            started = False
            try:
                async with contextlib.AsyncExitStack() as stack:
                    # a stop signal while the packs start abandons the start (a pack may wait on a server it fronts)
                    runtime = await shutdown.starting(lambda: stack.enter_async_context(env.running_runtime()))
                    started = runtime is not None
                    if runtime is not None:
                        await serve_runtime(runtime, shutdown, transport=transport, host=host, port=port)
            except Exception as exc:
                if started or not stdio_client_waits(env.config_path, transport):
                    raise
                # An MCP client launched us: tell it why, rather than leave it a bare "Connection closed".
                detail = str(exc) if isinstance(exc, GatewayError) else f"{type(exc).__name__} (the log has details)"
                log.error("gateway failed to start", error=detail, exc_info=not isinstance(exc, GatewayError))
                click.echo(f"Error: the gateway could not start: {detail}", err=True)
                await shutdown.serve(lambda: mcp_adapter.refuse_stdio(f"the gateway could not start: {detail}"))
                if shutdown.received is None:
                    raise SystemExit(1) from None
            if shutdown.received is not None:
                log.info("stopped", signal=signal.Signals(shutdown.received).name)
            return shutdown.received

    signum = _run(main)
    if signum is not None:
        exit_by(signum)


@cli.command("plugins")
@_config_option
@click.pass_obj
def plugins_command(env: CliEnvironment) -> None:
    """Inventory of loaded plugins: distribution, entry point, module, hooks, what each offers; then the enabled
    packs with their tool counts and the state of the remote servers they front."""
    loaded, plugins = prepare(env.config_path)
    for info in plugins.inventory():
        click.echo(f"{info.name}  ({info.distribution} {info.version})")
        click.echo(f"    entry point: {info.entry_point or '-'}")
        click.echo(f"    module:      {info.module}")
        click.echo(f"    hooks:       {', '.join(info.hooks) or '-'}")
        click.echo(f"    offers:      {', '.join(info.offers) or '-'}")
    blocked = loaded.config.gateway.block
    if blocked:
        click.echo(f"blocked: {', '.join(blocked)}")
    if loaded.config.packs.enabled:
        click.echo("\n".join(inventory.enabled_packs(env.running_runtime, env.config_path)))


@cli.command("tools")
@click.option("--json", "as_json", is_flag=True, help="Print names, descriptions and schemas as JSON.")
@_config_option
@click.pass_obj
def tools_command(env: CliEnvironment, as_json: bool) -> None:
    """The tools the configured packs serve, with their schemas and the remote server each comes from."""

    async def main() -> tuple[list[dict[str, Any]], list[str]]:
        async with env.running_runtime() as runtime:
            return inventory.tool_rows(runtime), inventory.upstream_lines(runtime)

    rows, upstreams = _run(main)
    click.echo(json.dumps(rows, indent=2) if as_json else "\n".join(inventory.tool_lines(rows, upstreams)))


@cli.command("call")
@click.argument("tool")
@click.argument("arguments", default="{}")
@_config_option
@click.pass_obj
def call_command(env: CliEnvironment, tool: str, arguments: str) -> None:
    """Call TOOL once in-process and print the result (exit status 1 when it is an error).

    ARGUMENTS is a JSON object: inline, ``-`` to read it from stdin, or ``@FILE`` to read it from a file."""
    parsed = read_arguments(arguments)

    async def main() -> bool:
        from gateway.runtime import UnknownTool

        async with env.running_runtime() as runtime:
            context = runtime.new_context(transport="cli")
            try:
                outcome = await runtime.call_tool(tool, parsed, context)
            except UnknownTool as exc:
                why = f"{exc.reason}; " if exc.reason else ""
                raise click.ClickException(f"unknown tool {tool!r} ({why}served: {', '.join(runtime.tools)})") from None
        click.echo(json.dumps(outcome.body, indent=2, ensure_ascii=False))
        return outcome.is_error

    if _run(main):
        sys.exit(1)


@cli.group("config")
def config_group() -> None:
    """Configuration commands."""


@config_group.command("check")
@click.option(
    "--start",
    is_flag=True,
    help="Also start the deployment once (packs, stores, remote servers, tool names) and stop it again.",
)
@_config_option
@click.pass_obj
def config_check(env: CliEnvironment, start: bool) -> None:
    """Validate the configuration against the installed plugins (with --start: and start it once).

    Without --start the check reads the file only: keys, types, plugin options, provider names. What only
    starting reveals (a pack's own checks, a store that cannot be opened, two packs offering one tool name) is
    found by --start, which does what `gateway serve` does before it serves."""
    loaded, _ = prepare(env.config_path)
    cfg = loaded.config
    if start:

        async def main() -> tuple[int, list[str], list[str]]:
            async with env.running_runtime() as runtime:
                if cfg.transport.kind == "http":  # what only the HTTP front checks (public bind, origins)
                    from gateway.http import build_http_app

                    build_http_app(runtime)
                # started and not up (a lazy server whose tools are known stays idle: it is not started)
                down = [
                    f"{status.name} ({status.last_error or 'still starting when the start-up wait ended'})"
                    for _, status in runtime.upstream_statuses()
                    if status.state in ("down", "starting")
                ]
                return len(runtime.catalogue.tools), inventory.pack_lines(runtime), down

        count, packs, down = _run(main)
        if down:  # the deployment starts, but a server it fronts does not
            raise click.ClickException(f"{loaded.source}: remote server(s) down: {'; '.join(down)}")
        click.echo(f"{loaded.source}: ok (started: {count} tools)")
        click.echo("\n".join(packs))
    else:
        click.echo(f"{loaded.source}: ok (not started: --start also starts it once)")
    click.echo(f"  packs: {', '.join(cfg.packs.enabled) or '-'}   transport: {cfg.transport.kind}")
    click.echo(f"  embedders: {' -> '.join(cfg.providers.embedder)}   vector store: {cfg.providers.vector_store}")
    click.echo(
        f"  store: {cfg.providers.store}   rate limiter: {cfg.providers.rate_limiter}   auth: {cfg.providers.auth}"
    )
    click.echo(f"  data dir: {loaded.data_dir}")


@cli.command("reindex")
@click.option("--missing", is_flag=True, help="Only fill in vectors missing after an embedder outage.")
@_config_option
@click.pass_obj
def reindex_command(env: CliEnvironment, missing: bool) -> None:
    """Re-embed every stored item with the configured embedders (interruptible; run again to resume)."""
    from tqdm import tqdm

    async def main() -> None:
        async with env.running_runtime() as runtime:
            packs = [(name, pack) for name, pack in runtime.packs.items() if isinstance(pack, Reindexable)]
            if not packs:
                click.echo("no enabled pack is reindexed by this command (`gateway --help` lists packs' own)", err=True)
            for name, pack in packs:
                with tqdm(desc=f"{name}", unit="item", file=sys.stderr) as bar:

                    def progress(done: int, total: int, bar: Any = bar) -> None:
                        bar.total = total
                        bar.n = done
                        bar.refresh()

                    reports = await pack.reindex(missing_only=missing, progress=progress)
                for report in reports:
                    if report.error is not None:
                        failed.append(report.embedder_id)
                        click.echo(f"{name}: {report.embedder_id}: not reindexed: {report.error}")
                        continue
                    click.echo(
                        f"{name}: {report.embedder_id}: {report.embedded} embedded, {report.skipped} skipped "
                        f"of {report.total}"
                    )

    failed: list[str] = []
    try:
        _run(main)
        if failed:
            raise click.ClickException(f"not reindexed: {', '.join(failed)} (run the same command again later)")
    except KeyboardInterrupt:
        click.echo("interrupted; run the same command again to resume", err=True)
        sys.exit(130)


def main() -> None:
    cli(prog_name="gateway")
