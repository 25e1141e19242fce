"""Layer 2 offline: context-revealed secrets, and the filters that keep look-alikes."""

from __future__ import annotations

import pytest

from gateway.api import PlaceholderMap
from gateway_plugins.sanitizers.contextual import ContextualSanitizer

LAYER = ContextualSanitizer()


def redact(text: str) -> str:
    return LAYER.sanitize_sync(text, placeholders=PlaceholderMap()).text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("the admin password is Tr0ub4dor&3 so use it", "Tr0ub4dor&3"),
        ("./deploy.sh --token 7f3a9b2c8d1e4f5a6b7c --env prod", "7f3a9b2c8d1e4f5a6b7c"),
        ("mysql -u root -pS3cretPass db", "S3cretPass"),
        ("curl -u alice:hunter2x https://api.example-saas.com", "hunter2x"),
        ("docker login -u bot -p Hy7Lq2Nv9Xz registry.example.com", "Hy7Lq2Nv9Xz"),
        ("htpasswd -cb .htpasswd admin Yp2Kd8Wm5", "Yp2Kd8Wm5"),
        ("labels: auth=$(htpasswd -nb admin Yp2Kd8Wm5)", "Yp2Kd8Wm5"),
        ("keytool -importkeystore -srcstorepass Aa1Bb2Cc3 -deststorepass Dd4Ee5Ff6", "Dd4Ee5Ff6"),
        ("keytool -importkeystore -srcstorepass Aa1Bb2Cc3 -deststorepass Dd4Ee5Ff6", "Aa1Bb2Cc3"),
        ("GET /cb?state=1&access_token=Ab3dEf9HiJkLmNoP", "Ab3dEf9HiJkLmNoP"),
        ("Cookie: sessionid=8f3k2j5h7g9d1s3a5f7g9h; theme=dark", "8f3k2j5h7g9d1s3a5f7g9h"),
        ('api_token = "550e8400-e29b-41d4-a716-446655440000"', "550e8400-e29b"),
        ('  - name: DB_PASS\n    value: "Qw9#vLk2!xZ"', "Qw9#vLk2!xZ"),
        ("secret_key_base: 9c1f0e7a5d3b8e2f4a6c0d9b7e5f3a1c2d4e6f8a0b9c7d5e3f1a2b4c6d8e0f9a", "9c1f0e7a5d3b"),
    ],
)
def test_context_reveals_secret(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "password is incorrect",
        "token expired at 12:00",
        "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
        "cache key 5d41402abc4b2a76b9719d911017c592",
        "session id 550e8400-e29b-41d4-a716-446655440000",
        "password: ${DB_PASSWORD} and token=<TOKEN> and api_key: your-api-key-here",
        "tokenizer = AutoTokenizer.from_pretrained('bert'); token_count=12; KeyError: 'user_id'",
        "self.access_token = access_token; if password != confirm_password: token = get_token(s)",
        "Authorization: Bearer $(gcloud auth print-access-token)",
        "keytool -list -storepass:env STOREPASS; docker login -u bot --password-stdin < pw.txt",
        "htpasswd -b is insecure because it shows; the -keypass option of keytool; htpasswd -b on shared hosts: no",
    ],
)
def test_lookalikes_unchanged(text: str) -> None:
    assert redact(text) == text
