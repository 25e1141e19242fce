"""Listings (``tools/list``, ``resources/list``, ``resources/templates/list``, ``prompts/list``) read entry by
entry: an entry the SDK's models refuse is left out and logged, and the rest of the page is served.

The SDK's typed ``Client.list_tools()`` (and its three siblings) validates a page as a whole, so one tool with an
invalid ``inputSchema`` would fail the server's whole catalogue. A page the SDK refuses is asked for again untyped
and checked the SDK's way, with its own models for the negotiated version: the page's own fields as a whole (a
page broken there still fails), each entry on its own. The tools kept reach the SDK's client as its own listing
would (their output schemas, their ``x-mcp-header`` maps, the 2026-07-28 rule that drops invalid ones).
"""

from __future__ import annotations

from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from gateway.mcp_adapter.sdk import Client, mt, request_methods

__all__ = ["LISTINGS", "read_page", "sdk_internals_present", "sound_page"]

log = structlog.get_logger(__name__)

_LISTS: dict[str, tuple[str, str, type[BaseModel], type[BaseModel], str]] = {
    # method: (wire key, model field, page model, entry model, what an entry is called in logs)
    "tools/list": ("tools", "tools", mt.ListToolsResult, mt.Tool, "tool"),
    "resources/list": ("resources", "resources", mt.ListResourcesResult, mt.Resource, "resource"),
    "resources/templates/list": (
        "resourceTemplates",
        "resource_templates",
        mt.ListResourceTemplatesResult,
        mt.ResourceTemplate,
        "resource template",
    ),
    "prompts/list": ("prompts", "prompts", mt.ListPromptsResult, mt.Prompt, "prompt"),
}
LISTINGS = frozenset(_LISTS)
"""The listing methods :func:`read_page` reads."""


async def read_page(client: Client, method: str, cursor: str | None) -> BaseModel:
    """One page of a listing as the SDK's typed result, without the entries the SDK's models refuse (each logged
    as left out, naming the entry; the upstream's name comes from the caller's bound log context)."""
    typed = {
        "tools/list": client.list_tools,
        "resources/list": client.list_resources,
        "resources/templates/list": client.list_resource_templates,
        "prompts/list": client.list_prompts,
    }
    try:
        return await typed[method](cursor=cursor)
    except ValidationError:  # some entry, or the page itself, is not what the protocol says: see which
        if not sdk_internals_present(getattr(client, "session", None)):  # an SDK without it: the page fails whole
            raise
    result, left_out = sound_page(method, client.protocol_version, await _untyped(client, method, cursor))
    what = _LISTS[method][4]
    for entry, reason in left_out:
        log.warning(f"upstream {what} left out: not valid MCP", entry=entry, error=reason)
    if method == "tools/list":  # what the SDK's list_tools() does with a page it accepted
        complete = cursor is None and getattr(result, "next_cursor", None) is None
        result = client.session._absorb_tool_listing(result, complete=complete)
    return result


def sdk_internals_present(session: Any) -> bool:
    """Whether ``session`` (the SDK's client session) has the private members :func:`read_page` uses for a page the
    SDK refused (the SDK has no public untyped request). A release without them: a refused page fails as a whole,
    as it did before entries were checked one by one."""
    return all(
        callable(getattr(owner, member, None))
        for owner, member in (
            (session, "_stamp"),
            (session, "_absorb_tool_listing"),
            (getattr(session, "_dispatcher", None), "send_raw_request"),
        )
    )


async def _untyped(client: Client, method: str, cursor: str | None) -> dict[str, Any]:
    """The page as the server sent it: the request stamped and sent as the SDK's ``send_request`` does (the SDK
    has no public untyped request), its answer not validated."""
    session = client.session
    data: dict[str, Any] = {"method": method, **({"params": {"cursor": cursor}} if cursor else {})}
    options: dict[str, Any] = {}
    session._stamp(data, options)  # the negotiated era's envelope and headers
    return await session._dispatcher.send_raw_request(method, data.get("params"), options)


def sound_page(method: str, version: str, page: dict[str, Any]) -> tuple[BaseModel, list[tuple[str, str]]]:
    """``page`` (wire JSON of ``method`` at protocol ``version``) as the SDK's typed result holding the entries its
    models accept, and ``(entry, reason)`` for each one left out. Raises ``ValidationError`` when the page's own
    fields are refused."""
    key, field, page_model, entry_model, _ = _LISTS[method]
    entries = page.get(key)
    if not isinstance(entries, list):
        request_methods.validate_server_result(method, version, page)  # the SDK's refusal of the page, if any
        entries = []
    rest = {name: value for name, value in page.items() if name != key}
    # The page's fields as this version has them (a later revision's dropped, as the SDK's client drops them).
    shape = request_methods.serialize_server_result(method, version, {**rest, key: []})
    kept: list[BaseModel] = []
    left_out: list[tuple[str, str]] = []
    for index, entry in enumerate(entries):
        try:
            request_methods.validate_server_result(method, version, {**rest, key: [entry]})
        except ValidationError as exc:
            left_out.append((_label(entry, index), _reason(exc, within=2)))  # past (key, 0): the entry's fields
            continue
        try:
            kept.append(entry_model.model_validate(entry, by_name=False))
        except ValidationError as exc:
            left_out.append((_label(entry, index), _reason(exc, within=0)))
    result = page_model.model_validate(shape, by_name=False)
    setattr(result, field, kept)
    return result, left_out


def _label(entry: Any, index: int) -> str:
    """How the log names an entry: its name (a resource's URI, a template's URI template), else its position."""
    if isinstance(entry, dict):
        for name in ("name", "uri", "uriTemplate"):
            if isinstance(entry.get(name), str):
                return entry[name][:200]
    return f"#{index}"


def _reason(exc: ValidationError, *, within: int) -> str:
    """The first thing refused, where it is in the entry (its location past ``within`` parts of ``exc``'s):
    ``inputSchema.type: Input should be 'object'``."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"][within:])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where or 'the entry'}: {error['msg']}{more}"
