# ruff: noqa: E501  (data tables: one sample per line reads better than wrapped strings)
"""Write ``hard_cases.jsonl``: hand-written edge cases (kept in code so each one can carry a comment).

Run ``python tests/data/sanitizer_corpus/hard_cases.py``. Values are made up.
"""

from __future__ import annotations

import json
from pathlib import Path

P = "positive"
N = "negative"

CASES = [
    # --- positives the generator does not produce ---
    (
        P,
        "contextual_secret",
        "My ssh passphrase is 'blue-Otter-42' if you need to unlock the deploy key.",
        ["blue-Otter-42"],
    ),
    (P, "generic_assignment", "ENV PGPASSWORD=Xq7!mPz2rT9v", ["Xq7!mPz2rT9v"]),
    (
        P,
        "url_credentials",
        "Server=tcp:sql.example-shop.com,1433;Database=orders;User ID=app;Password=Vy8#kLq2Zp;",
        ["Vy8#kLq2Zp"],
    ),
    (
        P,
        "url_credentials",
        "kafka error: SASL auth failed for sasl+ssl://bus:Mq3xT8vNw2@broker.example-shop.com:9093",
        ["Mq3xT8vNw2"],
    ),
    (P, "url_credentials", "smtp.login failed: smtps://mailer:p4ss%21w0rd@smtp.example-shop.com:465", ["p4ss%21w0rd"]),
    (P, "generic_assignment", '  - name: DB_PASS\n    value: "Qw9#vLk2!xZ"', ["Qw9#vLk2!xZ"]),
    (
        P,
        "generic_assignment",
        '<add key="StorageApiKey" value="8f2KqL9xZmP4vT7wR1sY3nB6" />',
        ["8f2KqL9xZmP4vT7wR1sY3nB6"],
    ),
    (
        P,
        "contextual_secret",
        "wget --user=deploy --password=Hk29xLp0Qz https://files.example-shop.com/build.tgz",
        ["Hk29xLp0Qz"],
    ),
    (
        P,
        "jwt",
        "Set-Cookie: auth=eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UiLCJyb2xlIjoiYWRtaW4ifQ.2xZb7Gm4uQn1Yc8pKs0vLw; HttpOnly",
        ["eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UiLCJyb2xlIjoiYWRtaW4ifQ.2xZb7Gm4uQn1Yc8pKs0vLw"],
    ),
    (
        P,
        "private_key",
        'key = """-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDq8Lz2v7mXkP3qR9sT0uV1wX2yZ3aB4cD5eF6gH7iJ8kL9mN0oP1qR2sT3\n-----END OPENSSH PRIVATE KEY-----"""',
        ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"],
    ),
    (P, "email", "mailto:dmitri.ivanova+billing@initech.de?subject=Invoice", ["dmitri.ivanova+billing@initech.de"]),
    (
        P,
        "email",
        "git log --format='%an <%ae>' -> Chioma Okafor <chioma.okafor@umbrella-labs.com>",
        ["chioma.okafor@umbrella-labs.com"],
    ),
    (
        P,
        "home_path",
        "OSError: [Errno 28] No space left on device: '/home/k.tanaka/.cache/huggingface/hub'",
        ["/k.tanaka/"],
    ),
    (P, "home_path", '{"path": "C:\\\\Users\\\\Marta Nowak\\\\source\\\\repos\\\\App\\\\bin"}', ["Marta Nowak"]),
    (P, "home_path", '  File "/mnt/c/Users/jsilva/dev/tool/cli.py", line 12', ["/jsilva/"]),
    (
        P,
        "public_ip",
        "upstream timed out (110) while connecting to upstream, client: 81.2.69.160, server: shop",
        ["81.2.69.160"],
    ),
    (P, "public_ip", "ssh deploy@34.89.12.201 -p 2222", ["34.89.12.201"]),
    (P, "public_ip", "curl http://52.14.7.33:8080/health", ["52.14.7.33"]),
    (P, "phone", "Call me at +353 87 123 4567 tomorrow", ["+353 87 123 4567"]),
    (P, "phone", "phone: 030 12345678", ["030 12345678"]),
    (P, "card", "Card: 3782 822463 10005 declined (Amex)", ["3782 822463 10005"]),
    (
        P,
        "internal_host",
        "jdbc:postgresql://pg-primary.payments.internal:5432/ledger",
        ["pg-primary.payments.internal"],
    ),
    (P, "internal_host", "Pushing to registry.build.corp/team/api:1.4.2", ["registry.build.corp"]),
    (
        P,
        "generic_assignment",
        "secret_key_base: 9c1f0e7a5d3b8e2f4a6c0d9b7e5f3a1c2d4e6f8a0b9c7d5e3f1a2b4c6d8e0f9a",
        ["9c1f0e7a5d3b8e2f4a6c0d9b7e5f3a1c2d4e6f8a0b9c7d5e3f1a2b4c6d8e0f9a"],
    ),
    (P, "contextual_secret", "The new token for the staging API: 5f8Kq2LmX9vB3nT7wZ1p", ["5f8Kq2LmX9vB3nT7wZ1p"]),
    (
        P,
        "aws",
        "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9Kq3Lm2P",
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9Kq3Lm2P"],
    ),
    (
        P,
        "slack",
        "SLACK_APP_TOKEN=xapp-1-A04BC2DEF3G-5124896301234-8d7f6e5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a2918",
        ["xapp-1-A04BC2DEF3G-5124896301234-8d7f6e5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a2918"],
    ),
    (
        P,
        "bearer",
        "WWW-Authenticate failed; request had Authorization: Bearer 1a2B3c4D5e6F7g8H9i0J",
        ["1a2B3c4D5e6F7g8H9i0J"],
    ),
    (
        P,
        "pii_mixed",
        "User jamal.haddad@hooli.xyz (+1 415 555 0132) from 81.2.69.161 failed login",
        ["jamal.haddad@hooli.xyz", "+1 415 555 0132", "81.2.69.161"],
    ),
    (P, "generic_assignment", "redis-cli -a 'R3d1s!Pa55' ping", ["R3d1s!Pa55"]),
    # --- negatives that look alike ---
    (N, "goal_false_positives", "error: package task-runner@2.1.0 requires desk-lamp>=1.0", []),
    (N, "goal_false_positives", "numpy 1.26.4.0 and scipy 1.11.4.1 installed", []),
    (N, "goal_false_positives", "Received 1712345678 and 1712345679 as epoch seconds", []),
    (N, "goal_false_positives", "Authorization: Bearer undefined", []),
    (N, "placeholders", 'export OPENAI_API_KEY="sk-your-key-here"', []),
    (N, "placeholders", 'password: "<your password>"', []),
    (N, "placeholders", "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", []),
    (N, "placeholders", "api_key: '{{ vault_api_key }}'", []),
    (N, "placeholders", "Authorization: Bearer $(gcloud auth print-access-token)", []),
    (N, "placeholders", "DATABASE_URL=postgres://user:password@localhost:5432/db", []),
    (N, "placeholders", "redis://:${REDIS_PASSWORD}@redis:6379/0", []),
    (N, "versions", "Windows 10.0.19045.3803 build", []),
    (N, "versions", "Using CUDA 12.1.105 with cuDNN 8.9.2.26", []),
    (N, "versions", "pip==24.0.0.1 (python 3.11.7.final.0)", []),
    (
        N,
        "localhost_ports",
        "redis.exceptions.ConnectionError: Error 111 connecting to 127.0.0.1:6379. Connection refused.",
        [],
    ),
    (N, "localhost_ports", "Starting development server at http://0.0.0.0:8000/", []),
    (
        N,
        "hash_digest",
        "ERROR: sha1 mismatch 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 != da39a3ee5e6b4b0d3255bfef95601890afd80709",
        [],
    ),
    (N, "hash_digest", '"integrity": "sha512-Q2BzaGFyZWRBcnJheUJ1ZmZlcg=="', []),
    (N, "numbers", "Traceback line 42 in main.py; numpy 1.26.4 ModuleNotFoundError", []),
    (N, "numbers", "Elapsed: 2024-01-15 10:30:00 (duration 3600s), job 202-555-01", []),
    (N, "numbers", "UUID 12345678-1234-5678-1234-567812345678 is invalid", []),
    (N, "numbers", "pid 4111111 exited; 16 GiB = 17179869184 bytes", []),
    (N, "code_references", "def connect(password=None, api_key=None, token=None):", []),
    (N, "code_references", "assert response.json()['token'] == token", []),
    (N, "code_references", "parser.add_argument('--password', help='database password')", []),
    (N, "code_references", "const { token } = await getSession(req);", []),
    (N, "auth_error_messages", "Error: secret key not found in keyring", []),
    (N, "auth_error_messages", "botocore.exceptions.NoCredentialsError: Unable to locate credentials", []),
    (N, "auth_error_messages", "The password you entered is incorrect. Please try again.", []),
    (N, "public_hosts", "Could not resolve host: files.pythonhosted.org", []),
    (N, "generic_paths_and_emails", "/home/ubuntu/.pyenv/versions/3.11.7/bin/python", []),
    (N, "generic_paths_and_emails", "Email must look like name@example.com", []),
    (N, "hex_and_ids", "kubectl logs api-7d9f8b6c5d-x2k4p -n prod", []),
    (
        N,
        "hex_and_ids",
        "docker pull python:3.11-slim@sha256:9e5c4c8e2a1b3d5f7e9a0c2e4b6d8f0a1c3e5a7b9d1f3e5a7c9e1b3d5f7a9c1e",
        [],
    ),
    (N, "base64_harmless", "Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==", []),
    # --- issue 15: what reached storage (made-up values in the shapes) ---
    (
        P,
        "key_material",
        "ValueError: could not load signing key: key material: MIIEowwJAiphBxCq17T+ISgKbP9rWwq+E/Zk3Qn8vR2bLcX5yTmH0aJdF7uVsG1eWiO4pKtN6hBzM9xYrC2qLw8jS3fDvE5gA0oI",
        ["MIIEowwJAiphBxCq17T+ISgKbP9rWwq+E/Zk3Qn8vR2bLcX5yTmH0aJdF7uVsG1eWiO4pKtN6hBzM9xYrC2qLw8jS3fDvE5gA0oI"],
        ["could not load signing key: key material:"],
    ),
    (
        P,
        "random_token",
        "botocore.exceptions.ClientError: An error occurred (SignatureDoesNotMatch) when calling the PutObject operation (key: /ovhEZDUQuu2zzltM+bRoDiP0LGz85BeCpRFFTLq)",
        ["ovhEZDUQuu2zzltM+bRoDiP0LGz85BeCpRFFTLq"],
        ["SignatureDoesNotMatch", "PutObject"],
    ),
    (
        P,
        "url_reserved_password",
        "sqlalchemy.exc.OperationalError: could not connect to postgresql://admin:Tr0ub4dor&3xyz@db01.corp.internal:5432/orders",
        ["Tr0ub4dor", "3xyz", "db01.corp.internal"],
        ["postgresql://admin:", ":5432/orders"],
    ),
    (
        P,
        "url_reserved_password",
        "pymongo.errors.OperationFailure: bad auth for mongodb+srv://app:p@ss:w0rd/x?y#z@cluster0.a1b2c.mongodb.net/shop",
        ["p@ss:w0rd/x?y#z", "w0rd", "cluster0.a1b2c.mongodb.net"],
        ["mongodb+srv://app:", "/shop"],
    ),
    (
        P,
        "internal_host",
        "could not connect to db01.internal.acme-corp.com: timeout",
        ["db01.internal.acme-corp.com"],
        ["timeout"],
    ),
    (
        P,
        "private_ip",
        "dial tcp 10.1.2.3:5432: connect: connection refused; fallback 192.168.77.12",
        ["10.1.2.3", "192.168.77.12"],
        [":5432"],
    ),
    (
        P,
        "internal_email",
        "Permission denied for ops@corp.acme-corp.internal and qa@acme.local",
        ["ops@corp.acme-corp.internal", "qa@acme.local"],
        ["Permission denied"],
    ),
    (P, "project_path", '  File "/srv/app/agent.py", line 88, in run', ["/srv/app"], ["agent.py", "line 88"]),
    (
        P,
        "project_path",
        '  File "/srv/app/.venv/lib/python3.11/site-packages/langchain/tools.py", line 400, in invoke',
        ["/srv/app"],
        ["site-packages/langchain/tools.py"],
    ),
    (
        P,
        "project_path",
        "    at Layer.handle [as handle_request] (/srv/app/node_modules/express/lib/router/index.js:284:7)",
        ["/srv/app"],
        ["node_modules/express/lib/router/index.js:284:7"],
    ),
    (
        P,
        "project_path",
        "System.IO.IOException: The process cannot access the file 'C:\\Users\\Bob Smith\\source\\repos\\Orders\\appsettings.json'",
        ["Bob Smith", "repos\\Orders"],
        ["appsettings.json"],
    ),
    (
        P,
        "project_path",
        '{"trace": "Traceback (most recent call last):\\n  File \\"/home/alice/proj/billing/run.py\\", line 3\\n/home/alice/proj/billing/out.log: denied"}',
        ["alice", "billing"],
        ["run.py", "out.log"],
    ),
    (
        P,
        "project_path",
        "open file:///home/alice/notes/secret-plan.txt failed",
        ["/home/alice/notes"],
        ["secret-plan.txt"],
    ),
    (
        P,
        "slack",
        "GET https://slack.com/api/chat.postMessage?token=xoxb-2048-1024-Ab3dEf9HiJkLmNoPqRsTuVwX&channel=C024BE91L",
        ["xoxb-2048-1024-Ab3dEf9HiJkLmNoPqRsTuVwX"],
    ),
    # --- secret-free, written by hand (not by the generator): must come out unchanged ---
    (
        N,
        "stack_traces",
        'Traceback (most recent call last):\n  File "app/main.py", line 12, in <module>\n  File "/usr/local/lib/python3.11/site-packages/httpx/_client.py", line 1015, in send\nhttpx.ConnectError: [Errno 111] Connection refused',
        [],
    ),
    (
        N,
        "stack_traces",
        "thread 'tokio-runtime-worker' panicked at /rustc/82e1608dfa6e0b5569232559e3d385fea5a93112/library/core/src/result.rs:1652:5",
        [],
    ),
    (
        N,
        "stack_traces",
        "\tat org.springframework.beans.factory.support.AbstractAutowireCapableBeanFactory.initializeBean(AbstractAutowireCapableBeanFactory.java:1804)",
        [],
    ),
    (
        N,
        "stack_traces",
        "goroutine 7 [chan receive]:\nmain.worker(0xc00001e0c0)\n\t/go/pkg/mod/github.com/nats-io/nats.go@v1.31.0/nats.go:3142 +0x5e",
        [],
    ),
    (
        N,
        "hash_digest",
        "verifying golang.org/x/text@v0.14.0: checksum mismatch\n\tdownloaded: h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ=",
        [],
    ),
    (
        N,
        "hash_digest",
        "npm ERR! sha512-Zn5bEP2mdJdTAOIXyTcWrMtgmpX1jWu4WBcJ9kHS2vxlwzfNGO3G24Y0oJaWmf5mFYtGSqa2xLpJ0z5TwgrBnQ== integrity checksum failed",
        [],
    ),
    (
        N,
        "hex_and_ids",
        "Segmentation fault (core dumped) at 0x00007ffd5c3a1b2c in libc.so.6, build-id 4f1e0e2b9a7c6d5e3f2a1b0c9d8e7f6a5b4c3d2e",
        [],
    ),
    (
        N,
        "identifiers",
        "error TS2305: Module '\"@angular/core\"' has no exported member 'ɵɵInputTransformsFeature'",
        [],
    ),
    (N, "identifiers", "nvcc fatal   : Unsupported gpu architecture 'compute_89' (CUDA 11.7, torch 2.1.0+cu117)", []),
    (
        N,
        "routes_and_system_paths",
        '127.0.0.1 - - [25/Nov/2026:12:00:01 +0000] "GET /api/v1/users/42?include=orders HTTP/1.1" 404 153 "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.109 Safari/537.36"',
        [],
    ),
    (
        N,
        "routes_and_system_paths",
        "Error: EACCES: permission denied, open '/var/run/docker.sock' (uid 1000, gid 999)",
        [],
    ),
    (
        N,
        "public_hosts",
        "Retrying (Retry(total=4)) after connection broken by 'NewConnectionError': /simple/torch/ on pypi.org",
        [],
    ),
]


def main() -> None:
    out = Path(__file__).with_name("hard_cases.jsonl")
    with out.open("w", encoding="utf-8") as fh:
        for index, (label, category, text, secrets, *keep) in enumerate(CASES):
            record = {
                "id": f"hard-{index:03d}",
                "label": label,
                "category": category,
                "text": text,
                "secrets": secrets,
                "keep": keep[0] if keep else [],
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
