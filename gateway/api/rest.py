"""REST routes a pack (or a provider) contributes under ``/api/v1``, and the rate-limit tiers they declare.

A route is served only over HTTP, beside the MCP endpoint. The host authenticates the caller, checks the route's
``scope``, takes a token from the route's bucket (its ``tier`` sets the size), validates the request into
``input_model``, awaits ``handler(args, ctx)`` and renders the returned ``output_model`` at ``status``. Errors
(a raised :class:`gateway.api.ToolError`, a refused scope or quota, invalid input) use the spec's envelope
``{"error": {"code", "message", "detail", "correlation_id", "retryable"}}``, and the OpenAPI document at
``/api/v1/openapi.json`` is generated from the same models.

Where each field of ``input_model`` is read from:

* a field named in ``path`` (``/connectors/{id}``) is a path parameter;
* for ``GET`` and ``DELETE``, every other field is a query parameter (a list field may be repeated:
  ``?tag=a&tag=b``);
* for ``POST``, ``PUT`` and ``PATCH``, every other field is a property of the JSON body.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from gateway.api.context import CallContext

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
ERROR_STATUSES = frozenset({400, 401, 403, 404, 409, 422, 429, 500, 503})
"""The error statuses of the spec's error codes (a route lists the ones its handler raises in ``errors``)."""

_PATH = re.compile(r"^(/[A-Za-z0-9._~\-]+|/\{[A-Za-z_][A-Za-z0-9_]*\})+$")

RestHandler = Callable[[Any, CallContext], Awaitable[Any]]
"""``handler(args, ctx)``: ``args`` is the validated ``input_model``; returns an ``output_model`` (or ``None``
when the route has no ``output_model``: ``204 No Content``)."""


@dataclass(frozen=True)
class RateTier:
    """A bucket size: ``limit`` requests per ``period_seconds`` per caller and route (a token bucket: bursts up to
    ``limit``, refilled continuously).

    The host knows the spec's tiers by name (``search`` 100/min, ``index`` 10/min, ``connectors`` 20/min,
    ``config`` 5/min); a route may name one of them, or declare a tier of its own with its default size. Either
    way ``[rest.tiers]`` in the config can resize a tier by name.
    """

    name: str
    limit: int
    period_seconds: float = 60.0

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", self.name):
            raise ValueError(f"tier name {self.name!r}: lower-case letters, digits and '_', starting with a letter")
        if self.limit < 1 or self.period_seconds <= 0:
            raise ValueError(f"tier {self.name!r}: limit >= 1 and period_seconds > 0")


class NoInput(BaseModel):
    """The input of a route that takes no parameters and no body (unknown query parameters are refused)."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class RestRoute:
    """One REST operation: ``method`` on ``path`` (below ``/api/v1``, e.g. ``/connectors/{id}``).

    ``scope`` is the permission a caller needs (``None``: any authenticated caller). ``public`` routes are served
    without authentication (a health probe, the token refresh); they cannot require a scope. ``tier`` names a
    rate-limit tier or declares one (``None``: unlimited). ``errors`` lists the error statuses the handler
    raises on purpose (404, 409, 422...), for the OpenAPI document; the host adds the ones it produces itself.
    """

    method: HttpMethod
    path: str
    summary: str
    handler: RestHandler
    input_model: type[BaseModel] = NoInput
    output_model: type[BaseModel] | None = None
    status: int = 200
    scope: str | None = None
    tier: str | RateTier | None = None
    public: bool = False
    errors: tuple[int, ...] = ()
    description: str | None = None
    operation_id: str | None = None
    """Unique across the API; default: derived from the method and path (``post_connectors``)."""
    exclude_none: bool = False
    """Leave ``None`` fields out of the response body."""

    def __post_init__(self) -> None:
        where = f"REST route {self.method} {self.path}"
        if not _PATH.fullmatch(self.path):
            raise ValueError(f"{where}: the path is '/'-separated segments of URL-safe characters or {{name}}")
        if self.output_model is None and self.status != 204:
            raise ValueError(f"{where}: a route without an output model answers 204 (set status=204)")
        if self.output_model is not None and not (200 <= self.status < 300 and self.status != 204):
            raise ValueError(f"{where}: a route with an output model answers a 2xx status other than 204")
        if self.public and self.scope is not None:
            raise ValueError(f"{where}: a public route cannot require a scope")
        unknown = [status for status in self.errors if status not in ERROR_STATUSES]
        if unknown:
            raise ValueError(f"{where}: errors {unknown} are not statuses of the error envelope")

    @property
    def path_parameters(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)

    @property
    def name(self) -> str:
        """The operation id (given, or ``<method>_<path words>``)."""
        if self.operation_id:
            return self.operation_id
        words = re.sub(r"[^A-Za-z0-9]+", "_", self.path).strip("_")
        return f"{self.method.lower()}_{words}" if words else self.method.lower()


@runtime_checkable
class RestRouteSource(Protocol):
    """What offers REST routes: a :class:`gateway.api.ToolPack` (its :meth:`~gateway.api.ToolPack.rest_routes`)
    or a provider (the ``jwt`` authenticator serves ``POST /auth/refresh`` when it issues tokens)."""

    def rest_routes(self) -> Sequence[RestRoute]: ...
