"""The contract every :class:`gateway.api.Authenticator` honours, as a reusable test base class.

Use it from a test module (a third-party plugin can run it against its own class)::

    from gateway.contracts.auth_contract import AuthenticatorContract, Credential

    class TestMyAuth(AuthenticatorContract):
        @pytest.fixture
        async def authenticator(self):
            return MyAuthenticator(...)

        @pytest.fixture
        async def credential(self, authenticator) -> Credential:
            return Credential(headers={"X-My-Token": "..."}, secret="...", subject="...", tenant=None,
                              scopes=frozenset({"a:read"}), method="my")

What it checks: no credential is refused with :class:`gateway.api.Unauthenticated`; a valid credential gives the
expected :class:`gateway.api.Principal` (header names in any case, repeatedly, concurrently); garbage and tampered
credentials are refused with ``Unauthenticated`` and never with another exception; no refusal echoes the secret;
the challenge is a valid header value. Authenticators that never refuse (``none``) do not run this suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
import pytest

from gateway.api import Authenticator, Principal, Unauthenticated

ECHO_WINDOW = 12
"""A refusal may not contain any run of this many characters of the secret."""

GARBAGE = (
    "",
    " ",
    "null",
    "undefined",
    "Bearer",
    "Bearer ",
    "Bearer     ",
    "bearer null",
    "Basic dXNlcjpwYXNzd29yZA==",
    "Bearer a.b.c",
    "Bearer ....",
    "Bearer eyJ",
    "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    "Bearer eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln",
    "Bearer !!!!.????.####",
    "gwk_",
    "gwk__",
    "gwk_0123456789abcdef_",
    "gwk_0123456789abcdef_" + "A" * 43,
    "gwk_ZZZZ_" + "A" * 43,
    "' OR '1'='1",
    "\x00\x01\x02",
    "ключ-доступа",
    "\U0001f511" * 16,
    "A" * 10_000,
    "Bearer " + "A" * 9_000,
)


@dataclass(frozen=True)
class Credential:
    """A valid credential for the authenticator under test, and the principal it must yield."""

    headers: Mapping[str, str]
    secret: str
    """The part that must never be echoed (an API key's secret, a token's signature...)."""
    subject: str
    tenant: str | None
    scopes: frozenset[str]
    method: str
    extra_secrets: tuple[str, ...] = field(default=())


def _recase(headers: Mapping[str, str], how: str) -> dict[str, str]:
    change = {"lower": str.lower, "upper": str.upper, "title": str.title}[how]
    return {change(name): value for name, value in headers.items()}


def _tamper(value: str, secret: str) -> str:
    """Change one character in the middle of the secret (every bit there is significant)."""
    at = value.rindex(secret) + len(secret) // 2
    replacement = "B" if value[at] != "B" else "C"
    return value[:at] + replacement + value[at + 1 :]


class AuthenticatorContract:
    """Base class of the contract. Subclasses provide the ``authenticator`` and ``credential`` fixtures."""

    pytestmark = [pytest.mark.anyio]

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    def assert_refusal_is_clean(self, error: Unauthenticated, credential: Credential) -> None:
        """The refusal says nothing of the secret (message, details or str)."""
        texts = [str(error), error.message, repr(error.details)]
        for secret in (credential.secret, *credential.extra_secrets):
            for start in range(max(1, len(secret) - ECHO_WINDOW + 1)):
                window = secret[start : start + ECHO_WINDOW]
                for text in texts:
                    assert window not in text, f"refusal echoes part of the secret: {text!r}"
        assert error.http_status == 401
        assert error.code == "unauthorized"

    async def refused(self, authenticator: Authenticator, headers: Mapping[str, str]) -> Unauthenticated:
        with pytest.raises(Unauthenticated) as caught:
            await authenticator.authenticate(headers)
        return caught.value

    # -- the protocol ----------------------------------------------------------------------------------------

    async def test_satisfies_the_protocol(self, authenticator: Authenticator) -> None:
        assert isinstance(authenticator, Authenticator)
        assert isinstance(authenticator.name, str) and authenticator.name

    async def test_challenge_is_a_valid_header_value(self, authenticator: Authenticator) -> None:
        value = authenticator.challenge()
        assert value is None or (isinstance(value, str) and value and value.isascii())
        assert value is None or not any(ch in value for ch in "\r\n\x00")

    # -- missing credentials ---------------------------------------------------------------------------------

    async def test_no_headers_is_refused(self, authenticator: Authenticator) -> None:
        await self.refused(authenticator, {})

    async def test_unrelated_headers_are_refused(self, authenticator: Authenticator) -> None:
        await self.refused(authenticator, {"User-Agent": "contract/1.0", "Accept": "*/*", "Cookie": "session=abc"})

    async def test_credential_under_another_header_is_refused(
        self, authenticator: Authenticator, credential: Credential
    ) -> None:
        moved = {f"X-Not-{name}": value for name, value in credential.headers.items()}
        error = await self.refused(authenticator, moved)
        self.assert_refusal_is_clean(error, credential)

    # -- valid credentials -----------------------------------------------------------------------------------

    async def test_valid_credential_gives_its_principal(
        self, authenticator: Authenticator, credential: Credential
    ) -> None:
        principal = await authenticator.authenticate(credential.headers)
        assert isinstance(principal, Principal)
        assert principal.subject == credential.subject
        assert principal.tenant == credential.tenant
        assert principal.scopes == credential.scopes
        assert principal.method == credential.method
        assert principal.all_scopes is False

    @pytest.mark.parametrize("how", ["lower", "upper", "title"])
    async def test_header_names_in_any_case(
        self, authenticator: Authenticator, credential: Credential, how: str
    ) -> None:
        principal = await authenticator.authenticate(_recase(credential.headers, how))
        assert principal.subject == credential.subject

    async def test_authenticating_twice_gives_the_same_principal(
        self, authenticator: Authenticator, credential: Credential
    ) -> None:
        first = await authenticator.authenticate(credential.headers)
        second = await authenticator.authenticate(credential.headers)
        assert first == second

    async def test_concurrent_requests(self, authenticator: Authenticator, credential: Credential) -> None:
        results: list[Principal] = []

        async def one() -> None:
            results.append(await authenticator.authenticate(credential.headers))

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(one)
        assert len(results) == 20 and len(set(results)) == 1

    # -- bad credentials -------------------------------------------------------------------------------------

    @pytest.mark.parametrize("garbage", GARBAGE, ids=lambda g: repr(g[:24]))
    async def test_garbage_is_refused_as_unauthenticated(
        self, authenticator: Authenticator, credential: Credential, garbage: str
    ) -> None:
        for name in credential.headers:
            error = await self.refused(authenticator, {**credential.headers, name: garbage})
            self.assert_refusal_is_clean(error, credential)

    async def test_tampered_credential_is_refused_without_echo(
        self, authenticator: Authenticator, credential: Credential
    ) -> None:
        tampered = {
            name: _tamper(value, credential.secret) if credential.secret in value else value
            for name, value in credential.headers.items()
        }
        assert tampered != dict(credential.headers), "the secret must appear in one of the credential headers"
        error = await self.refused(authenticator, tampered)
        self.assert_refusal_is_clean(error, credential)

    async def test_truncated_credential_is_refused(self, authenticator: Authenticator, credential: Credential) -> None:
        truncated = {name: value[: len(value) - 5] for name, value in credential.headers.items()}
        error = await self.refused(authenticator, truncated)
        self.assert_refusal_is_clean(error, credential)

    async def test_credential_with_trailing_junk_is_refused(
        self, authenticator: Authenticator, credential: Credential
    ) -> None:
        padded = {name: value + "x" for name, value in credential.headers.items()}
        error = await self.refused(authenticator, padded)
        self.assert_refusal_is_clean(error, credential)
