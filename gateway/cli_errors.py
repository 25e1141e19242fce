"""How a failure reaches the command line: a configuration or start-up error is one ``Error:`` line, not a traceback.

Serving runs inside task groups, which wrap what they raise in exception groups; a group of one cause is told as
that cause.
"""

from __future__ import annotations

import click

from gateway.api.errors import GatewayError

__all__ = ["cli_failure"]


def _sole_cause(group: BaseExceptionGroup) -> BaseException | None:
    """The one exception inside nested groups of one exception each, else None."""
    current: BaseException = group
    while isinstance(current, BaseExceptionGroup):
        if len(current.exceptions) != 1:
            return None
        current = current.exceptions[0]
    return current


INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""


def cli_failure(exc: BaseException) -> BaseException | None:
    """What to raise instead of ``exc`` (a gateway error as a click error, Ctrl-C as exit status 130 rather than
    click's "Aborted!" and 1, which ``gateway call`` uses for a tool error; a group's sole exit or click error as
    itself); None to let ``exc`` through as it is."""
    cause = _sole_cause(exc) if isinstance(exc, BaseExceptionGroup) else exc
    if isinstance(cause, GatewayError):
        return click.ClickException(str(cause))
    if isinstance(cause, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        return click.exceptions.Exit(INTERRUPTED)
    if cause is not exc and isinstance(cause, SystemExit | KeyboardInterrupt | click.ClickException):
        return cause
    return None
