"""A sanitizer layer: redacts e-mail addresses (a real layer would add its own rules for its own data)."""

from __future__ import annotations

import re

from gateway.api import FieldKind, Finding, PlaceholderMap, SanitizedText

EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b")


class EmailSanitizer:
    """Each address becomes ``<EMAIL_n>``: the same address gets the same placeholder in every field of a
    submission, because ``placeholders`` is shared by the fields."""

    @property
    def name(self) -> str:
        return "emails"

    async def sanitize(self, text: str, *, kind: FieldKind, placeholders: PlaceholderMap) -> SanitizedText:
        findings: list[Finding] = []
        parts: list[str] = []
        position = 0
        for match in EMAIL.finditer(text):
            placeholder = placeholders.placeholder("EMAIL", match.group())
            findings.append(Finding("email", "pii", match.start(), match.end(), 0.95, self.name, placeholder))
            parts += [text[position : match.start()], placeholder]
            position = match.end()
        return SanitizedText("".join([*parts, text[position:]]), findings)
