"""What every hosted connector's config shares: the token, written only as an environment reference, the base URL,
and the HTTP policy.

A token is accepted only as ``{ env = "NAME" }`` (``{"env": "NAME"}`` over MCP or REST): the connector's config is
stored as given, so the store keeps the variable's name and never the token. A literal token is refused with a
message that says so; a variable that is not set is refused when the connector is added (so the mistake shows at
once, not at the first sync).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PrivateAttr, SecretStr, field_validator, model_validator

from gateway_plugins.connectors.http import HttpPolicy

__all__ = ["EnvToken", "HostedConfig", "env_name"]


def _from_env(value: Any) -> SecretStr | None:
    if value is None:
        return None
    if isinstance(value, Mapping) and set(value) == {"env"} and isinstance(value["env"], str) and value["env"]:
        secret = os.environ.get(value["env"])
        if not secret:
            raise ValueError(f"the environment variable {value['env']} is not set (or is empty)")
        return SecretStr(secret)
    if isinstance(value, SecretStr):
        return value
    raise ValueError(
        'write the token as { env = "NAME" } (JSON {"env": "NAME"}), the environment variable that holds it: '
        "a connector's config is stored, and a token is never stored"
    )


EnvToken = Annotated[SecretStr | None, BeforeValidator(_from_env)]
"""A token read from the environment variable the config names; the value is a SecretStr (never in a repr)."""


def env_name(raw: Mapping[str, Any], key: str = "token") -> str | None:
    """The variable name a raw config gives for ``key`` (for messages: which variable to fix)."""
    value = raw.get(key)
    return value.get("env") if isinstance(value, Mapping) else None


class HostedConfig(HttpPolicy):
    """Fields every hosted connector has, besides its own."""

    base_url: str = Field(description="The service's API root (point it at a proxy, an Enterprise host, a fake).")
    token: EnvToken = Field(None, description='The API token, as { env = "NAME" }.')
    _token_env: str | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_the_variable(cls, data: Any, handler: Any) -> Any:
        model = handler(data)
        if isinstance(data, Mapping):
            model._token_env = env_name(data)
        return model

    @property
    def token_env(self) -> str | None:
        """The environment variable the token comes from (named in errors: which one to fix)."""
        return self._token_env

    def token_hint(self) -> str:
        where = f"the environment variable {self.token_env}" if self.token_env else "the connector's token"
        return f"Put a valid token in {where} and restart the gateway, or update the connector."

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")
