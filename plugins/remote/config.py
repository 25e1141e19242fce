"""``[plugins.remote]``: the MCP servers the gateway fronts, one ``[[plugins.remote.servers]]`` table each.

.. code-block:: toml

    [[plugins.remote.servers]]
    name = "everything"
    command = ["npx", "-y", "@modelcontextprotocol/server-everything"]   # stdio, started lazily
    prefix = "ev_"
    tools = { allow = ["echo", "get-sum"] }                                # or deny = [...]

    [[plugins.remote.servers]]
    name = "search"
    url = "https://mcp.internal.example/mcp"                               # Streamable HTTP
    headers = { Authorization = { env = "SEARCH_TOKEN" } }
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gateway.api import Secret

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
PREFIX = re.compile(r"^[A-Za-z0-9_.-]*$")
"""What a prefix may hold: characters MCP tool names use."""
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""An HTTP header name (RFC 9110 token)."""
MODERN_PROTOCOLS = ("2026-07-28",)
"""The modern protocol versions ``protocol`` may name: the ones the host's MCP adapter speaks (its SDK's
``MODERN_PROTOCOL_VERSIONS``, which ``gateway.api`` does not publish; a test keeps the two equal)."""
_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")


_CREDENTIAL = re.compile(r"key|token|secret|passw|credential|auth", re.IGNORECASE)
"""An argument name whose value the displays hide."""


class ToolFilter(BaseModel):
    """Which of the server's tools to serve, by the server's own names: ``allow`` only these, or all but ``deny``."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_list(self) -> ToolFilter:
        if self.allow is not None and self.deny:
            raise ValueError("give either allow or deny, not both")
        return self

    @property
    def listing(self) -> Literal["allow", "deny"]:
        """Which list is given (``deny``, empty, when neither is)."""
        return "allow" if self.allow is not None else "deny"

    def absent_from(self, offered: set[str]) -> list[str]:
        """The names the list given (``allow`` or ``deny``) holds that the server does not offer (a misspelling, or
        a server version)."""
        return sorted(set(self.allow if self.allow is not None else self.deny) - offered)

    def admits(self, name: str) -> bool:
        return name in self.allow if self.allow is not None else name not in self.deny


class ServerConfig(BaseModel):
    """One upstream MCP server: a stdio ``command`` or a Streamable HTTP ``url`` (exactly one)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Names the server in logs, metrics, errors and `gateway tools`.")
    command: list[str] | None = Field(None, min_length=1, description="A stdio server: argv of the command to run.")
    env: dict[str, Secret] = Field(default_factory=dict, description="Variables for the command (besides PATH...).")
    cwd: str | None = None
    url: str | None = Field(None, description="A Streamable HTTP server's MCP endpoint.")
    headers: dict[str, Secret] = Field(
        default_factory=dict, description="Headers sent to the HTTP server; write credentials as { env = NAME }."
    )
    protocol: str = Field(
        "auto", description="HTTP: 'auto', 'legacy' (handshake era) or a modern protocol version (2026-07-28)."
    )
    prefix: str = Field("", description="Prepended to the server's tool and prompt names.")
    tools: ToolFilter = Field(default_factory=ToolFilter)
    scope: str | None = Field(None, description="The scope a caller needs for this server's tools and prompts.")
    start: Literal["lazy", "eager"] = "lazy"
    idle_timeout_seconds: float | None = Field(
        600.0, ge=0, description="A stdio server unused this long is stopped (restarted on next use); 0: never."
    )
    call_timeout_seconds: float = Field(60.0, gt=0)
    connect_timeout_seconds: float = Field(30.0, gt=0)
    max_concurrency: int = Field(16, ge=1, description="Calls in flight to this server at once; more wait.")
    restart_backoff_seconds: float = Field(0.5, gt=0, description="First wait before restarting after a failure.")
    max_backoff_seconds: float = Field(60.0, gt=0)
    _unset: dict[str, str] = PrivateAttr(default_factory=dict)
    _referenced: set[str] = PrivateAttr(default_factory=set)
    """``headers.X``/``env.Y`` written as ``{ env = ... }``: the secrets (a literal env value is plain config)."""

    @model_validator(mode="wrap")
    @classmethod
    def _note_unset_secrets(cls, data: Any, handler: ModelWrapValidatorHandler[ServerConfig]) -> ServerConfig:
        """Keep the names of secrets whose variable is unset: a server missing one is reported down, naming it,
        while the others serve."""
        unset = {}
        referenced: set[str] = set()
        if isinstance(data, Mapping):
            for table in ("headers", "env"):
                for key, value in (data.get(table) or {}).items():
                    variable = value.get("env") if isinstance(value, Mapping) else None
                    if isinstance(variable, str):
                        referenced.add(f"{table}.{key}")
                        if not os.environ.get(variable):
                            unset[f"{table}.{key}"] = variable
        model = handler(data)
        model._unset = unset
        model._referenced = referenced
        return model

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError("letters, digits, '_', '.' and '-' only, starting with a letter or digit")
        return value

    @field_validator("idle_timeout_seconds")
    @classmethod
    def _never(cls, value: float | None) -> float | None:
        return value or None  # 0 (TOML has no null): never

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not PREFIX.match(value):
            raise ValueError("letters, digits, '_', '.' and '-' only (it becomes part of tool names)")
        return value

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, value: str, info: ValidationInfo) -> str:
        if value in ("auto", "legacy", *MODERN_PROTOCOLS):
            return value
        server = f"server {info.data['name']!r}: " if "name" in info.data else ""
        modern = ", ".join(MODERN_PROTOCOLS)
        if _VERSION.match(value) and value < min(MODERN_PROTOCOLS):  # the dates sort as the versions do
            raise ValueError(
                f"{server}protocol {value!r} is a handshake-era version: write 'legacy' (that era, its "
                "version negotiated) or 'auto'"
            )
        raise ValueError(f"{server}protocol must be 'auto', 'legacy' or a version the gateway speaks ({modern})")

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, Secret]) -> dict[str, Secret]:
        if bad := [name for name in value if not HEADER_NAME.match(name)]:
            raise ValueError(f"not an HTTP header name: {', '.join(map(repr, bad))}")
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value[0].strip():
            raise ValueError("the first element must name the program to run")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {self.name!r}: give either command (stdio) or url (Streamable HTTP)")
        if self.url is not None and (
            not self.url.startswith(("http://", "https://")) or not urlsplit(self.url).hostname
        ):
            raise ValueError(f"server {self.name!r}: url must be an http:// or https:// URL with a host")
        if self.restart_backoff_seconds > self.max_backoff_seconds:
            raise ValueError(f"server {self.name!r}: restart_backoff_seconds exceeds max_backoff_seconds")
        if self.command is not None and (self.headers or self.protocol != "auto"):
            raise ValueError(f"server {self.name!r}: headers and protocol apply to url servers only")
        if self.url is not None and (self.env or self.cwd):
            raise ValueError(f"server {self.name!r}: env and cwd apply to command servers only")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """The command line or URL, as ``gateway plugins`` and ``gateway tools`` show it, credentials hidden: a URL's
        user name, password and query values; an argument's value when the argument is named like a credential
        (``--api-key X``, ``--token=X``, ``-e GITHUB_TOKEN=X``), and a header's (``--header "Authorization: ..."``)."""
        if self.url is not None:
            parts = urlsplit(self.url)
            netloc = parts.netloc
            if "@" in netloc:
                netloc = f"***@{netloc.rsplit('@', 1)[1]}"
            query = "&".join(f"{pair.split('=', 1)[0]}=***" if "=" in pair else pair for pair in parts.query.split("&"))
            return parts._replace(netloc=netloc, query=query if parts.query else "").geturl()
        shown: list[str] = []
        for arg in self.command or []:
            name, equals, _ = arg.partition("=")
            before = shown[-1] if shown else ""
            if equals and _CREDENTIAL.search(name):  # --token=X, GITHUB_TOKEN=X
                shown.append(f"{name}=***")
            elif before in ("-H", "--header") and ":" in arg:
                shown.append(f"{arg.split(':', 1)[0]}: ***")
            elif before.startswith("-") and _CREDENTIAL.search(before) and not arg.startswith("-"):
                shown.append("***")
            else:
                shown.append(arg)
        return " ".join(shown)

    def is_secret(self, where: str) -> bool:
        """Whether ``headers.X`` or ``env.Y`` holds a secret: every header (credentials travel there), and an env
        variable written as ``{ env = ... }``."""
        return where.startswith("headers.") or where in self._referenced

    def missing_secrets(self) -> dict[str, str]:
        """``{"headers.Authorization": "SEARCH_TOKEN"}`` for every secret whose variable is unset."""
        return dict(self._unset)


class RemoteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: list[ServerConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> RemoteConfig:
        names = [server.name for server in self.servers]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"server names must be unique (repeated: {', '.join(repeated)})")
        return self
