"""A sample pack that contributes REST routes (the way the context pack serves its API): notes per tenant, with
scopes, tiers, path/query/body input, 201/204 answers and deliberate 404/409/500s."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    CallContext,
    NotFound,
    RateTier,
    RestRoute,
    Tool,
    ToolError,
    ToolPack,
    hookimpl,
)

NOTE_ID = r"^[0-9a-f]{8}$"


class NoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=100, description="Unique per tenant")
    body: str = Field("", max_length=1000)
    tags: list[str] = Field(default_factory=list, max_length=5)


class Note(BaseModel):
    id: str
    title: str
    body: str
    tags: list[str]
    author: str


class NoteRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=NOTE_ID, description="The note's id")


class NoteUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=NOTE_ID)
    title: str | None = Field(None, min_length=1, max_length=100)
    body: str | None = Field(None, max_length=1000)


class NoteQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(10, ge=1, le=50, description="At most this many notes")
    tag: list[str] = Field(default_factory=list, max_length=5, description="Only notes with every tag")
    prefix: str | None = Field(None, max_length=50)


class NoteList(BaseModel):
    notes: list[Note]
    total: int


class Pong(BaseModel):
    status: Literal["ok"] = "ok"
    caller: str


class Boom(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["crash", "tool_error"] = "crash"


class NotesPack(ToolPack):
    """Notes kept in memory per tenant; ``notes_count`` is the one MCP tool, sharing the store with the routes."""

    name = "notes"

    def __init__(self) -> None:
        self.notes: dict[str, dict[str, Note]] = {}

    def _of(self, ctx: CallContext) -> dict[str, Note]:
        return self.notes.setdefault(ctx.principal.tenant or "-", {})

    def tools(self) -> list[Tool[Any, Any]]:
        async def count(args: Pong, ctx: CallContext) -> NoteList:
            notes = list(self._of(ctx).values())
            return NoteList(notes=notes, total=len(notes))

        return [Tool("notes_count", "Count the caller's notes.", Pong, NoteList, count, scope="notes:read")]

    def rest_routes(self) -> Sequence[RestRoute]:
        return [
            RestRoute("GET", "/ping", "Liveness of the notes", self.ping, output_model=Pong, public=True),
            RestRoute(
                "GET", "/probe", "A public probe", self.ping, output_model=Pong, public=True, tier=RateTier("probe", 60)
            ),
            RestRoute(
                "POST",
                "/notes",
                "Add a note",
                self.create,
                NoteIn,
                Note,
                status=201,
                scope="notes:write",
                tier="index",
                errors=(409,),
            ),
            RestRoute("GET", "/notes", "List notes", self.list, NoteQuery, NoteList, scope="notes:read", tier="search"),
            RestRoute("GET", "/notes/{id}", "Read a note", self.read, NoteRef, Note, scope="notes:read", tier="search"),
            RestRoute(
                "PUT",
                "/notes/{id}",
                "Change a note",
                self.update,
                NoteUpdate,
                Note,
                scope="notes:write",
                tier=RateTier("notes_edit", 30),
                errors=(409,),
            ),
            RestRoute("DELETE", "/notes/{id}", "Remove a note", self.delete, NoteRef, status=204, scope="notes:write"),
            RestRoute("POST", "/boom", "Fail on purpose", self.boom, Boom, Pong, scope="notes:admin", errors=(422,)),
        ]

    async def ping(self, args: BaseModel, ctx: CallContext) -> Pong:
        return Pong(caller=ctx.principal.key)

    async def create(self, args: NoteIn, ctx: CallContext) -> Note:
        notes = self._of(ctx)
        if any(note.title == args.title for note in notes.values()):
            raise ToolError(f"a note titled {args.title!r} exists", code="conflict", http_status=409)
        note = Note(id=secrets.token_hex(4), author=ctx.principal.subject, **args.model_dump())
        notes[note.id] = note
        return note

    async def list(self, args: NoteQuery, ctx: CallContext) -> NoteList:
        found = [
            note
            for note in self._of(ctx).values()
            if set(args.tag) <= set(note.tags) and note.title.startswith(args.prefix or "")
        ]
        return NoteList(notes=found[: args.limit], total=len(found))

    async def read(self, args: NoteRef, ctx: CallContext) -> Note:
        note = self._of(ctx).get(args.id)
        if note is None:
            raise NotFound(f"no note {args.id}", details={"id": args.id})
        return note

    async def update(self, args: NoteUpdate, ctx: CallContext) -> Note:
        note = await self.read(NoteRef(id=args.id), ctx)
        changes = args.model_dump(exclude={"id"}, exclude_none=True)
        if "title" in changes and any(n.title == changes["title"] and n.id != note.id for n in self._of(ctx).values()):
            raise ToolError("title taken", code="conflict", http_status=409)
        updated = note.model_copy(update=changes)
        self._of(ctx)[note.id] = updated
        return updated

    async def delete(self, args: NoteRef, ctx: CallContext) -> None:
        if self._of(ctx).pop(args.id, None) is None:
            raise NotFound(f"no note {args.id}")

    async def boom(self, args: Boom, ctx: CallContext) -> Pong:
        if args.mode == "tool_error":
            raise ToolError("cannot do that", code="semantic_error", http_status=422, details={"why": "test"})
        raise RuntimeError("secret internal detail at /srv/notes.py")


class NotesPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("notes", lambda ctx: NotesPack())


PLUGINS = [("notes", NotesPlugin())]
SCOPES = ["notes:read", "notes:write", "notes:admin"]


def notes_config(tmp_path: Path, *, auth: str = "api_key", **tables: Any) -> dict[str, Any]:
    """The notes pack over HTTP behind ``auth``, keys and buckets on SQLite/memory; ``tables`` add or replace tables."""
    config: dict[str, Any] = {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "local"},
        "packs": {"enabled": ["notes"]},
        "sanitize": {"logs": ""},
        "providers": {"store": "sqlite", "auth": auth, "rate_limiter": "memory"},
    }
    config.update(tables)
    return config
