"""The ``insufficient_scope`` challenge on the MCP endpoint names the scope of the refused call, over real HTTP with
the real ``jwt`` authenticator, in both protocol eras: for a tool whose scope depends on its arguments
(``ScopeByArgument``), a caller holding none of the tool's scopes is told the scope that call needs, not the
tool's broadest one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.http_errors import JSONRPC_FORBIDDEN
from gateway.testing import http_gateway
from tests.gateway.http_support import PUBLIC_URL, Idp, bearer, challenges, config, jwt_table, post_mcp, rpc
from tests.gateway.test_tool_scopes import PLUGINS as LEDGER_PLUGINS

MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ledger"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Idp]]:
    tmp = tmp_path_factory.mktemp("scopes")
    idp = Idp()
    cfg = config(
        tmp,
        "jwt",
        packs={"enabled": ["ledger"]},
        transport={"public_url": PUBLIC_URL},
        plugins={"auth": {"jwt": jwt_table(idp.write_public_key(tmp / "idp.pem"))}},
    )
    with http_gateway(cfg, extra_plugins=LEDGER_PLUGINS) as (base, _runtime):
        yield base, idp


@pytest.mark.parametrize("era", [{}, MODERN], ids=["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    ("held", "action", "needed"),
    [
        ("search:read", "show", "ledger:read"),  # none of the tool's scopes: still the scope of this call
        ("search:read", "post", "ledger:write"),
        ("search:read", "close", "ledger:admin"),
        ("ledger:read", "close", "ledger:admin"),
    ],
)
def test_the_challenge_names_the_scope_of_the_call(
    served: tuple[str, Idp], era: dict[str, str], held: str, action: str, needed: str
) -> None:
    base, idp = served
    headers = {**bearer(idp.token(scope=held)), **era}
    response = post_mcp(base, rpc("tools/call", {"name": "ledger", "arguments": {"action": action}}), headers)
    assert response.status_code == 403, response.text
    challenge = challenges(response)["bearer"]
    assert challenge["error"] == "insufficient_scope" and challenge["scope"] == needed
    error = response.json()["error"]
    assert error["code"] == JSONRPC_FORBIDDEN and error["data"]["details"]["scope"] == needed


def test_without_arguments_a_caller_holding_none_of_the_scopes_is_told_the_tools_scope(
    served: tuple[str, Idp],
) -> None:
    base, idp = served
    response = post_mcp(base, rpc("tools/call", {"name": "ledger"}), bearer(idp.token(scope="search:read")))
    assert response.status_code == 403 and challenges(response)["bearer"]["scope"] == "ledger:write"
