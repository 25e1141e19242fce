# ruff: noqa: E501  (data tables: one sample per line reads better than wrapped strings)
"""Secret-free look-alikes for the sanitizer corpus: text that must come out byte-for-byte unchanged.

Hashes, git SHAs, UUIDs, hex addresses, versions, timestamps, ports on loopback, documentation addresses and
domains, digests with their labels, base64 of plain data, identifiers with digits, URL routes, paths under
the operating system's roots, placeholders, code that names credentials without holding one, and stack
traces of eight languages laid over system paths (``traces.py``).
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid
from collections.abc import Callable

from traces import trace
from values import ALNUM, HEX, harmless_b64, rand


def _pick(*templates: str) -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        return rng.choice(templates).format(
            n=rng.randint(2, 999),
            port=rng.choice([3000, 5000, 5173, 5432, 6379, 8000, 8080, 8443, 9200, 27017]),
            epoch=rng.randint(1_600_000_000, 1_760_000_000),
            ms=rng.randint(1_600_000_000_000, 1_760_000_000_000),
            v=f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
            v4=f"{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
            uuid=uuid.UUID(int=rng.getrandbits(128), version=4),
            sha=rand(rng, HEX, 40),
            short=rand(rng, HEX, 7),
            sha256=hashlib.sha256(rand(rng, ALNUM, 12).encode()).hexdigest(),
            md5=hashlib.md5(rand(rng, ALNUM, 12).encode()).hexdigest(),
            b64=harmless_b64(rng),
            b64sha=base64.b64encode(hashlib.sha256(rand(rng, ALNUM, 12).encode()).digest()).decode(),
            b64sha512=base64.b64encode(hashlib.sha512(rand(rng, ALNUM, 12).encode()).digest()).decode(),
            b64md5=base64.b64encode(hashlib.md5(rand(rng, ALNUM, 12).encode()).digest()).decode(),
            doc=rng.choice(["192.0.2.15", "198.51.100.7", "203.0.113.42"]),
            color=rand(rng, "0123456789abcdef", 6),
            addr=rand(rng, "0123456789abcdef", 12),
            line=rng.randint(1, 2000),
            col=rng.randint(1, 120),
        )

    return make


def _encoded_text(rng: random.Random) -> str:
    data = rng.choice([b'{"page": 7, "size": 100, "sort": "created_at"}', b'{"alg":"none","typ":"cursor"}',
                       b"The quick brown fox jumps over the lazy dog", b"offset=1200&limit=50&order=desc",
                       b'{"user_id": 4182, "expires_in": 3600}'])  # fmt: skip
    encoded = rng.choice([base64.b64encode(data), base64.urlsafe_b64encode(data).rstrip(b"=")]).decode()
    return rng.choice(
        ["next_cursor={e}", '{{"cursor": "{e}", "has_more": true}}', "echo {e} | base64 -d", "state={e}"]
    ).format(e=encoded)


NEGATIVES: dict[str, Callable[[random.Random], str]] = {
    "goal_false_positives": _pick(
        "npm ERR! missing script: task-runner",
        "Installed desk-lamp-controller {v} from PyPI",
        "ERROR: numpy 1.26.4.0 is not a supported wheel on this platform",
        "created_at={epoch} updated_at={epoch}",
        "curl -H 'Authorization: Bearer undefined' http://localhost:{port}/api -> 401",
        "task-runner: job {n} finished in 0.{n}s",
        "Received timestamp {epoch} (expected seconds since epoch)",
        "Bearer null rejected: missing token",
        "desk-lamp firmware {v4} available",
    ),
    "uuid": _pick(
        "Request {uuid} failed with status 500",
        'issue_id: "{uuid}"',
        "trace_id={uuid} span_id={addr}",
        "docker: Error response from daemon: Conflict. The container name is already in use by container {uuid}",
        "x-request-id: {uuid}",
    ),
    "git_sha": _pick(
        "HEAD is now at {short} Fix flaky test",
        "commit {sha}\nMerge: {short} {short}",
        "error: pathspec '{sha}' did not match any file(s) known to git",
        "pip install git+https://github.com/org/repo@{sha}",
        "fatal: reference is not a tree: {sha}",
    ),
    "hash_digest": _pick(
        "Successfully built image sha256:{sha256}",
        "--hash=sha256:{sha256}",
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n    Expected sha256 {sha256}",
        'etag: "{md5}"',
        "cache key: {md5}",
        "Digest: sha256:{sha256}",
        "github.com/gin-gonic/gin v1.9.1 h1:{b64sha}",
        "verifying github.com/jackc/pgx/v5@v5.5.1: checksum mismatch\n\tdownloaded: h1:{b64sha}\n\tgo.sum:     h1:{b64sha}",
        '"integrity": "sha512-{b64sha512}"',
        "Content-MD5: {b64md5}",
        "x-amz-checksum-sha256: {b64sha}",
    ),
    "base64_harmless": _pick(
        "cursor={b64}", '{{"next_page": "{b64}"}}', "data:text/plain;base64,{b64}", "echo {b64} | base64 -d"
    ),
    "encoded_text": _encoded_text,
    "versions": _pick(
        "Requirement already satisfied: fastapi=={v} in ./venv/lib/python3.11/site-packages",
        "node v{v} (npm {v})",
        "torch {v}+cu121",
        "Chrome/{v4} Safari/537.36",
        "version {v4}",
        "django {v4} is incompatible with python 3.13",
        "Upgrading pandas ({v} -> {v})",
        "tensorflow-{v4}-cp311-cp311-linux_x86_64.whl",
        "go: downloading golang.org/x/net v0.0.0-20230817173708-{addr}",
    ),
    "timestamps": _pick(
        "2024-03-{n:02d}T10:14:03.123Z ERROR worker died",
        "exp={epoch} iat={epoch}",
        "ts_ms={ms}",
        "Mar 12 10:14:03 web-1 systemd[1]: Started nginx.service",
        "took 12{n} ms at {epoch}",
    ),
    "loopback_and_reserved_ips": _pick(
        "Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)",
        "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', {port})",
        "Local:   http://localhost:{port}/",
        "listening on 0.0.0.0:{port}",
        "curl http://[::1]:{port}/health",
        'psycopg.OperationalError: connection to server at "localhost" (::1), port {port} failed',
        "from {doc} port 22",
        "ping {doc}: 56 data bytes",
        "netmask 255.255.255.0",
        "GET http://169.254.169.254/latest/meta-data/iam/security-credentials/ timed out",
        "inet6 fe80::1%lo0 prefixlen 64 scopeid 0x1",
        "nameserver 8.8.8.8",
    ),
    "sk_package_names": _pick(
        "pip install scikit-learn tsk-tools risk-engine",
        "Collecting disk-usage-analyzer=={v}",
        "import task_runner as tsk  # tsk-runner",
        "npm i @desk/desk-lamp-ui@{v}",
        "ModuleNotFoundError: No module named 'sk_video'",
        "brew install whisk-cli",
    ),
    "placeholders": _pick(
        "OPENAI_API_KEY=your-api-key-here",
        'api_key = "<YOUR_API_KEY>"',
        "token: ${{GITHUB_TOKEN}}",
        "password: changeme",
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "export STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        "Authorization: Bearer <token>",
        'secret = "xxx"',
        "DB_PASSWORD=${{DB_PASSWORD}}",
        'client = OpenAI(api_key="sk-...")',
        "HF_TOKEN=hf_********************************",
        "DATABASE_URL=postgres://user:password@localhost:5432/app",
        "redis://:${{REDIS_PASSWORD}}@localhost:6379/0",
    ),
    "code_references": _pick(
        'password = os.environ["DB_PASSWORD"]',
        "def login(username: str, password: str) -> Token:",
        "api_key=api_key,",
        "token = get_token(session)",
        "secret = settings.SECRET_KEY",
        "const apiKey = process.env.API_KEY;",
        "if password != confirm_password:",
        "self.access_token = access_token",
        "password_hash = bcrypt.hashpw(pw, salt)",
        "max_tokens=4096, temperature=0.2",
        "client_secret: Optional[str] = None",
    ),
    "auth_error_messages": _pick(
        "Invalid password: must be at least 8 characters",
        "token: expired",
        "ValueError: secret must not be empty",
        "401 Unauthorized: invalid api key",
        "PasswordResetError: password is incorrect",
        "jwt.exceptions.DecodeError: Not enough segments",
        "KeyError: 'api_key'",
        "The security token included in the request is invalid.",
    ),
    "documentation_emails_and_remotes": _pick(
        "git@github.com:acme/api.git",
        "contact: user@example.com",
        "noreply@github.com",
        "Email must look like name@example.com",
        "@app.route('/users/<int:user_id>')",
        "react@18.2.0 requires react-dom@^18.2.0",
        "logo@2x.png",
        "npm ERR! 404 '@types/nodee@{v}' is not in this registry.",
        "Author: Dependabot <49699333+dependabot[bot]@users.noreply.github.com>",
    ),
    "numbers": _pick(
        "order #{ms} not found",
        "allocated {ms} bytes",
        "line {line}, column {n}",
        "0x{addr}",
        "color: #{color};",
        "Process 4{n}2{n} exited with code 137",
        "ISBN 978-3-16-148410-0",
        "build 2024.03.{n}",
        "range 1000-2000 (step 50)",
        "id={ms}",
        "1234 5678 9012 3456 is not valid",
    ),
    "public_hosts": _pick(
        "Could not fetch URL https://pypi.org/simple/fastapi/: connection timeout",
        "ssh: connect to host github.com port 22: Network is unreachable",
        "getaddrinfo ENOTFOUND registry.npmjs.org",
        "GET https://api.github.com/repos/acme/api/pulls 404",
        "Resolving deb.debian.org (deb.debian.org)... failed",
        "metadata.google.internal unreachable",
        "host.docker.internal:{port}",
        "from app.settings.local import *",
        'Get "https://production.cloudflare.docker.com/registry-v2/docker/registry/v2/blobs/sha256/{short}/data": net/http: TLS handshake timeout',
        "Failed to connect to files.pythonhosted.org port 443 after 21 ms",
        "https://s3.us-east-1.amazonaws.com returned 503 SlowDown",
    ),
    "hex_and_ids": _pick(
        "mac address 00:1a:2b:3c:4d:5e",
        "span {addr}",
        "object at 0x7f{addr}",
        "k8s pod api-{short}-xk2lp",
        "session id {uuid}",
        'ETag W/"{md5}"',
        "request-id: req_{short}",
        "Segmentation fault at address 0x{addr} (pc 0x{short})",
    ),
    "identifiers": _pick(
        "at org.apache.logging.log4j.core.Log4j2LoggerContextFactory.getContext(Log4jContextFactory.java:{line})",
        "FAILED tests/test_orders.py::test_create_order_returns_201_when_payload_is_valid - AssertionError",
        "Cannot find symbol: getUserById2FactorAuthenticationToken",
        "error TS2339: Property 'MyApp_v2_Release_Build3' does not exist on type 'Window'",
        "class HTTP2ServerConnectionManagerFactoryV3 is deprecated",
        "com/google/protobuf/GeneratedMessageV3$Builder",
        "ImportError: cannot import name 'AutoModelForSequenceClassification2' from 'transformers'",
        "Unknown column 'user_preferences_2024Q1' in 'field list'",
        "kubectl rollout restart deployment/orders-api-v2-canary",
        "tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    ),
    "routes_and_system_paths": _pick(
        "GET /api/v1/users/{n} HTTP/1.1 404",
        "POST /v2/orders/{n}/items 422 Unprocessable Entity",
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
        "SSL: CERTIFICATE_VERIFY_FAILED (/etc/ssl/certs/ca-certificates.crt)",
        "/usr/bin/python3: No module named pip",
        "OSError: [Errno 24] Too many open files: '/proc/self/fd/{n}'",
        "C:\\Windows\\System32\\cmd.exe /c npm run build",
        "error: could not find `Cargo.toml` in `src/bin` or any parent directory",
        "Exec format error: /usr/local/bin/docker-entrypoint.sh",
        "ENOENT: no such file or directory, open 'src/config/default.json'",
        'File "app/models/user.py", line {line}, in save',
        "/dev/shm: No space left on device",
    ),
}


def secret_free_trace(rng: random.Random) -> str:
    return trace(rng, deployed=False).text


NEGATIVES["stack_traces"] = secret_free_trace
