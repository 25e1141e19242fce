"""Resource templates in the catalogue: one entry per URI template, as for resource URIs and tool names."""

from __future__ import annotations

import re
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.api import ConfigError, ResourceContent, ResourceTemplate, ToolPack
from gateway.catalogue import Catalogue
from gateway.metrics import GatewayMetrics


class _Templates(ToolPack):
    """A pack offering one template, ``items/{id}``; from a remote server when ``upstream`` is given."""

    def __init__(self, name: str, upstream: str | None = None) -> None:
        self.name = name
        self.upstream = upstream

    def resource_templates(self) -> list[ResourceTemplate]:
        async def read(variables: Any, ctx: Any) -> ResourceContent:
            return ResourceContent(text=self.name)

        return [ResourceTemplate("items/{id}", "item", read, upstream=self.upstream)]


def test_two_local_packs_offering_one_template_stop_the_start() -> None:
    catalogue = Catalogue(GatewayMetrics())
    catalogue.add_pack("one", _Templates("one"))
    clash = "resource template 'items/{id}' is offered by pack 'one' and by pack 'two'"
    with pytest.raises(ConfigError, match=re.escape(clash)):
        catalogue.add_pack("two", _Templates("two"))


def test_a_serving_pack_that_now_clashes_is_left_out_with_a_log() -> None:
    catalogue = Catalogue(GatewayMetrics())
    catalogue.add_pack("one", _Templates("one"))
    with capture_logs() as logs:
        catalogue.replace_pack("two", _Templates("two"))
        catalogue.replace_pack("two", _Templates("two"))  # re-read at its next change: the same clash, told once
    assert [pack for pack, _, _ in catalogue.templates] == ["one"]
    assert [e["event"] for e in logs] == ["catalogue change refused"]


@pytest.mark.parametrize("local_first", [True, False])
def test_a_remote_template_never_takes_a_local_ones_place(local_first: bool) -> None:
    catalogue = Catalogue(GatewayMetrics())
    packs = [("local", _Templates("local")), ("remote", _Templates("remote", upstream="py"))]
    for name, pack in packs if local_first else reversed(packs):
        catalogue.add_pack(name, pack)
    assert [pack for pack, _, _ in catalogue.templates] == ["local"]
