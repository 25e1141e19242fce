"""The example sanitizer layer passes the sanitizer contract, and keeps one placeholder per address."""

from __future__ import annotations

import anyio

from example_providers.sanitizer import EmailSanitizer
from gateway.api import FieldKind, PlaceholderMap
from gateway.contracts.sanitizer_contract import SanitizerContract


class TestEmailSanitizerContract(SanitizerContract):
    def make_sanitizer(self) -> EmailSanitizer:
        return EmailSanitizer()


def test_one_address_one_placeholder_across_fields() -> None:
    layer, placeholders = EmailSanitizer(), PlaceholderMap()

    async def both() -> tuple[str, str]:
        first = await layer.sanitize(
            "mail bob@example.org or eve@example.org", kind=FieldKind.FREE_TEXT, placeholders=placeholders
        )
        second = await layer.sanitize("cc: bob@example.org", kind=FieldKind.CODE, placeholders=placeholders)
        return first.text, second.text

    assert anyio.run(both) == ("mail <EMAIL_1> or <EMAIL_2>", "cc: <EMAIL_1>")
