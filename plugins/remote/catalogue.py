"""What one upstream server offers (tools, resources, templates, prompts), and its copy on disk.

The copy lets a lazily started server's tools be listed before the server has run in this process: the gateway
starts with the last catalogue it saw, and re-reads it whenever the server (re)connects or says it changed. A
copy made for another command or URL is ignored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import structlog

from gateway.api import (
    PromptArgument,
    RemotePrompt,
    RemoteResource,
    RemoteResourceTemplate,
    RemoteTool,
    ToolAnnotations,
    UpstreamSession,
)

log = structlog.get_logger(__name__)

FORMAT = 1


@dataclass(frozen=True)
class RemoteCatalogue:
    tools: tuple[RemoteTool, ...] = ()
    resources: tuple[RemoteResource, ...] = ()
    templates: tuple[RemoteResourceTemplate, ...] = ()
    prompts: tuple[RemotePrompt, ...] = ()
    known: bool = field(default=False, compare=False)
    """False until read from the server or its copy: the server's tools are unknown yet."""

    @classmethod
    async def read(cls, session: UpstreamSession) -> RemoteCatalogue:
        """Everything ``session``'s server offers (only what its capabilities advertise is asked for)."""
        offers = session.offers
        return cls(
            tuple(await session.list_tools()) if "tools" in offers else (),
            tuple(await session.list_resources()) if "resources" in offers else (),
            tuple(await session.list_resource_templates()) if "resources" in offers else (),
            tuple(await session.list_prompts()) if "prompts" in offers else (),
            known=True,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "tools": [asdict(t) for t in self.tools],
            "resources": [asdict(r) for r in self.resources],
            "templates": [asdict(t) for t in self.templates],
            "prompts": [asdict(p) for p in self.prompts],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RemoteCatalogue:
        return cls(
            tuple(
                RemoteTool(**{**t, "annotations": ToolAnnotations(**t.get("annotations", {}))}) for t in data["tools"]
            ),
            tuple(RemoteResource(**r) for r in data["resources"]),
            tuple(RemoteResourceTemplate(**t) for t in data["templates"]),
            tuple(
                RemotePrompt(**{**p, "arguments": tuple(PromptArgument(**a) for a in p.get("arguments", ()))})
                for p in data["prompts"]
            ),
            known=True,
        )


class CatalogueCopy:
    """The catalogue file of one server in the pack's data dir, keyed by what the server is (command or URL)."""

    def __init__(self, directory: Path, server: str, identity: str) -> None:
        self.path = directory / f"{server}.catalogue.json"
        self.identity = hashlib.sha256(identity.encode()).hexdigest()

    def load(self) -> RemoteCatalogue:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT or data.get("identity") != self.identity:
                return RemoteCatalogue()
            return RemoteCatalogue.from_json(data["catalogue"])
        except FileNotFoundError:
            return RemoteCatalogue()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("remote catalogue copy unreadable; ignored", path=str(self.path), error=repr(exc))
            return RemoteCatalogue()

    def save(self, catalogue: RemoteCatalogue) -> None:
        data = {"format": FORMAT, "identity": self.identity, "catalogue": catalogue.to_json()}
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("remote catalogue copy not written", path=str(self.path), error=repr(exc))
