"""Look-alike negatives for the sanitizer corpus: text that must come out byte-for-byte unchanged."""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Callable

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
            priv=rng.choice(["10.0.3.12", "192.168.1.20", "172.17.0.2", "172.31.255.254", "10.255.0.1"]),
            doc=rng.choice(["192.0.2.15", "198.51.100.7", "203.0.113.42"]),
            color=rand(rng, "0123456789abcdef", 6),
            addr=rand(rng, "0123456789abcdef", 12),
            line=rng.randint(1, 2000),
        )

    return make


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
    ),
    "git_sha": _pick(
        "HEAD is now at {short} Fix flaky test",
        "commit {sha}\nMerge: {short} {short}",
        "error: pathspec '{sha}' did not match any file(s) known to git",
        "pip install git+https://github.com/org/repo@{sha}",
    ),
    "hash_digest": _pick(
        "Successfully built image sha256:{sha256}",
        "--hash=sha256:{sha256}",
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n    Expected sha256 {sha256}",
        'etag: "{md5}"',
        "cache key: {md5}",
        "Digest: sha256:{sha256}",
    ),
    "base64_harmless": _pick(
        "cursor={b64}", '{{"next_page": "{b64}"}}', "data:text/plain;base64,{b64}", "echo {b64} | base64 -d"
    ),
    "versions": _pick(
        "Requirement already satisfied: fastapi=={v} in ./venv/lib/python3.11/site-packages",
        "node v{v} (npm {v})",
        "torch {v}+cu121",
        "Chrome/{v4} Safari/537.36",
        "version {v4}",
        "django {v4} is incompatible with python 3.13",
        "Upgrading pandas ({v} -> {v})",
        "tensorflow-{v4}-cp311-cp311-linux_x86_64.whl",
    ),
    "timestamps": _pick(
        "2024-03-{n:02d}T10:14:03.123Z ERROR worker died",
        "exp={epoch} iat={epoch}",
        "ts_ms={ms}",
        "Mar 12 10:14:03 web-1 systemd[1]: Started nginx.service",
        "took 12{n} ms at {epoch}",
    ),
    "localhost_ports": _pick(
        "Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)",
        "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', {port})",
        "Local:   http://localhost:{port}/",
        "listening on 0.0.0.0:{port}",
        "curl http://[::1]:{port}/health",
        'psycopg.OperationalError: connection to server at "localhost" (::1), port {port} failed',
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
    ),
    "private_and_doc_ips": _pick(
        "Connected to {priv}:{port}",
        "inet {priv}/24 brd {priv} scope global eth0",
        "from {doc} port 22",
        "nameserver {priv}",
        "ping {doc}: 56 data bytes",
        "netmask 255.255.255.0",
        "route add default gw {priv}",
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
    "generic_paths_and_emails": _pick(
        "/home/runner/work/app/app/tests/test_x.py:{line}: AssertionError",
        "/Users/runner/hostedtoolcache/Python/3.11.7/x64/lib/python3.11",
        "git@github.com:acme/api.git",
        "contact: user@example.com",
        "noreply@github.com",
        "/root/.cache/pip/wheels",
        "C:\\Users\\Public\\Documents",
        "~/.local/lib/python3.11/site-packages",
        "@app.route('/users/<int:user_id>')",
        "react@18.2.0 requires react-dom@^18.2.0",
        "logo@2x.png",
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
    ),
    "hex_and_ids": _pick(
        "mac address 00:1a:2b:3c:4d:5e",
        "span {addr}",
        "object at 0x7f{addr}",
        "k8s pod api-{short}-xk2lp",
        "session id {uuid}",
        'ETag W/"{md5}"',
        "request-id: req_{short}",
    ),
}
