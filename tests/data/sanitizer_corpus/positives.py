# ruff: noqa: E501  (data tables: one sample per line reads better than wrapped strings)
"""Positives added with the larger corpus (issue 15): what used to reach storage.

Credential-shaped tokens with no label or prefix around them, key material outside a PEM block, URL
passwords holding reserved characters, private addresses, e-mails at any domain, project paths, internal
hosts, data-store hosts and connection strings, and stack traces laid over deployment-specific paths. Each
maker returns ``(text, secrets, keep)``: what must be gone from the output, and what must still be in it.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

from traces import deployed_place, trace
from values import (
    COMPANIES,
    FIRST,
    HEX,
    LAST,
    RESERVED,
    SERVICES,
    aws_secret,
    company,
    internal_email,
    internal_host,
    key_material,
    mixed,
    openssh_key_body,
    private_ipv4,
    private_ipv6,
    rand,
    random_token,
    reserved_password,
)

Made = tuple[str, list[str], list[str]]


def _random_token(rng: random.Random) -> Made:
    tok, tok2 = random_token(rng), random_token(rng)
    req = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    secret = aws_secret(rng)
    return rng.choice([
        (f"botocore.exceptions.ClientError: An error occurred (SignatureDoesNotMatch) when calling the GetObject operation (key: {secret})", [secret], ["SignatureDoesNotMatch"]),
        (f"HMAC verification failed: expected {tok}, got {tok2}", [tok, tok2], ["HMAC verification failed"]),
        (f"POST https://discord.com/api/webhooks/{rng.randint(10**17, 10**18)}/{tok} returned 401", [tok], ["discord.com"]),
        (f"X-Custom-Auth: {tok}\nHTTP/1.1 403 Forbidden", [tok], ["403 Forbidden"]),
        (f"[ERROR] vault returned {tok} for lease {req}", [tok], [req]),
        (f"redis.exceptions.AuthenticationError: AUTH {tok} failed: WRONGPASS", [tok], ["WRONGPASS"]),
        (f"Using API key {tok} for tenant {rng.randint(1, 999)} (request {req})", [tok], [req]),
        (f"ValueError: invalid signing secret {tok!r}", [tok], ["ValueError"]),
        (f"curl -H 'X-Api-Token: {tok}' https://api.{company(rng)}.io/v1/items", [tok], ["curl"]),
        (f"fetch failed: 401 for https://hooks.zapier.com/hooks/catch/{rng.randint(10**6, 10**7)}/{tok}/", [tok], ["hooks.zapier.com"]),
    ])  # fmt: skip


def _key_material(rng: random.Random) -> Made:
    body = key_material(rng)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    ssh = openssh_key_body(rng)
    return rng.choice([
        (f"ValueError: Could not deserialize key data: key material: {body[:rng.choice([60, 120, 400])]}", [body[:60]], ["Could not deserialize key data"]),
        (f'{{"type": "service_account", "private_key_body": "{body}"}}', [body], ["service_account"]),
        (f"jwt.exceptions.InvalidKeyError: {body}", [body], ["InvalidKeyError"]),
        ("signing key (base64, truncated):\n" + "\n".join(lines[:4]), [line for line in lines[:4] if len(line) >= 20], ["signing key"]),
        (f"paramiko.ssh_exception.SSHException: not a valid OPENSSH private key file: {ssh}", [ssh], ["SSHException"]),
        (f"KEY={body}", [body], ["KEY="]),
    ])  # fmt: skip


def _url_reserved(rng: random.Random, ch: str) -> Made:
    pw = reserved_password(rng, ch)
    user = rng.choice(["admin", "app", "svc_orders", "postgres", "deploy"])
    host = rng.choice(
        [
            "db.example-shop.com",
            "db01.corp.internal",
            "mongo0.a1b2c.mongodb.net",
            "10.0.3.12",
            "rabbit.example-shop.com",
        ]
    )
    scheme = rng.choice(
        [
            "postgresql",
            "postgres",
            "mysql+pymysql",
            "mongodb+srv",
            "redis",
            "amqp",
            "https",
            "ftp",
            "smtps",
            "custom+scheme",
        ]
    )
    url = f"{scheme}://{user}:{pw}@{host}:{rng.choice([5432, 3306, 6379, 5672, 443])}/orders"
    return rng.choice([
        (f"sqlalchemy.exc.OperationalError: could not connect: {url}", [pw], ["sqlalchemy.exc.OperationalError", "/orders"]),
        (f"DATABASE_URL={url}", [pw], ["DATABASE_URL="]),
        (f'connecting to "{url}" failed: timeout', [pw], ["failed: timeout"]),
        (f"[{rng.randint(1, 9)}] error: {url} refused the connection", [pw], ["refused the connection"]),
    ])  # fmt: skip


def _url_passwords(rng: random.Random) -> Made:
    return _url_reserved(rng, rng.choice(RESERVED))


def _private_ip(rng: random.Random) -> Made:
    ip, ip2, v6 = private_ipv4(rng), private_ipv4(rng), private_ipv6(rng)
    port = rng.choice([80, 443, 5432, 6379, 8080, 9092])
    return rng.choice([
        (f"Connected to {ip}:{port}", [ip], [f":{port}"]),
        (f"inet {ip}/24 brd {ip2} scope global eth0", [ip, ip2], ["scope global eth0"]),
        (f"nameserver {ip}", [ip], ["nameserver"]),
        (f"route add default gw {ip}", [ip], ["route add default gw"]),
        (f"requests.exceptions.ConnectTimeout: HTTPConnectionPool(host='{ip}', port={port}): Max retries exceeded", [ip], ["Max retries exceeded"]),
        (f'upstream timed out while connecting to upstream, upstream: "http://{ip}:{port}/api"', [ip], ["upstream timed out"]),
        (f"node {ip} NotReady since {rng.randint(1, 59)}m", [ip], ["NotReady"]),
        (f"X-Forwarded-For: {ip}, {ip2}", [ip, ip2], ["X-Forwarded-For"]),
        (f"listen tcp [{v6}]:{port}: bind: address already in use", [v6], ["address already in use"]),
        (f"kafka: broker {ip}:9092 (id: {rng.randint(1, 9)} rack: null) disconnected", [ip], ["disconnected"]),
    ])  # fmt: skip


def _internal_email(rng: random.Random) -> Made:
    e = internal_email(rng)
    return rng.choice([
        (f"smtplib.SMTPRecipientsRefused: {{'{e}': (550, b'5.1.1 User unknown')}}", [e], ["SMTPRecipientsRefused"]),
        (f"Permission denied for {e} on project {rng.choice(SERVICES)}", [e], ["Permission denied"]),
        (f"git config user.email {e}", [e], ["git config user.email"]),
        (f"ALERT_EMAIL={e}", [e], ["ALERT_EMAIL="]),
        (f"ldap: bind failed for uid={e.split('@')[0]},ou=people ({e})", [e], ["bind failed"]),
    ])  # fmt: skip


def _project_path(rng: random.Random) -> Made:
    place = deployed_place(rng)
    name = rng.choice(["settings.yaml", "app.log", ".env", "config.json", "schema.sql", "agent.py"])
    path = place.join(place.root, rng.choice(["config", "logs", "data", "app"]), name)
    escaped = path.replace("\\", "\\\\")
    prefix = place.secrets[0] if place.sep == "\\" else place.root
    return rng.choice([
        (f"FileNotFoundError: [Errno 2] No such file or directory: '{escaped if place.sep == chr(92) else path}'", [prefix.replace("\\", "\\\\") if place.sep == "\\" else prefix], [name]),
        (f"EACCES: permission denied, open '{path}'", [prefix], [name]),
        (f"Loading configuration from {path}", [prefix], [name]),
        (f"cd {place.root} && make test", [prefix], ["make test"]),
    ])  # fmt: skip


def _deployed_trace(rng: random.Random) -> Made:
    made = trace(rng, deployed=True)
    return made.text, made.secrets, made.keep


def _internal_host_more(rng: random.Random) -> Made:
    host = internal_host(rng)
    return rng.choice([
        (f"could not connect to {host}", [host], ["could not connect to"]),
        (f"psycopg2.OperationalError: connection to server at \"{host}\" ({private_ipv4(rng)}), port 5432 failed", [host], ["port 5432 failed"]),
        (f"curl: (6) Could not resolve host: {host}", [host], ["Could not resolve host"]),
        (f"Pulling from {host}:5000/team/api:1.4.2", [host], [":5000/team/api"]),
        (f"ERROR: Get \"https://{host}/v2/\": x509: certificate signed by unknown authority", [host], ["x509"]),
    ])  # fmt: skip


def _datastore(rng: random.Random) -> Made:
    corp = rng.choice(COMPANIES)
    host = rng.choice(
        [
            f"db.{corp}.com",
            f"orders-db.{corp}.io",
            f"cache.{corp}.net",
            f"mongo0.{rand(rng, 'abcdefghijklmnopqrstuvwxyz0123456789', 5)}.mongodb.net",
        ]
    )
    pw = mixed(rng, rng.randint(10, 20))
    return rng.choice([
        (f"redis.exceptions.ConnectionError: Error 110 connecting to redis://{host}:6379/0. Connection timed out.", [host], ["Connection timed out"]),
        (f"DATABASE_URL=postgresql://{host}:5432/orders?sslmode=require", [host], ["sslmode=require"]),
        (f"pymongo.errors.ServerSelectionTimeoutError: mongodb+srv://app:{pw}@{host}/shop", [pw, host], ["ServerSelectionTimeoutError"]),
        (f"amqp://{host}:5672/ unreachable", [host], ["unreachable"]),
    ])  # fmt: skip


def _connection_string(rng: random.Random) -> Made:
    corp = rng.choice(COMPANIES)
    host = rng.choice([f"sql.{corp}.com", f"sqlsrv01.{corp}.corp", f"{corp}-prod.database.windows.net"])
    pw = rng.choice([mixed(rng, 12), f"{mixed(rng, 6)}#{mixed(rng, 4)}!"])
    user = rng.choice(["app", "sa", "svc_reports"])
    return rng.choice([
        (f"Server=tcp:{host},1433;Database=orders;User ID={user};Password={pw};Encrypt=True;", [host, pw], ["Database=orders"]),
        (f"Data Source={host};Initial Catalog=ledger;User Id={user};Password={pw}", [host, pw], ["Initial Catalog=ledger"]),
        (f"jdbc:sqlserver://{host}:1433;databaseName=orders;user={user};password={pw}", [host, pw], ["databaseName=orders"]),
        (f"Host={host};Port=5432;Username={user};Password={pw};Database=orders", [host, pw], ["Port=5432"]),
    ])  # fmt: skip


def _people_in_paths(rng: random.Random) -> Made:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    user = rng.choice([first, f"{first}.{last}", f"{first[0]}{last}"])
    sha, project = rand(rng, HEX, 40), f"{rng.choice(SERVICES)}-{first}"
    return rng.choice([
        (f"fatal: not a git repository: /home/{user}/work/{rng.choice(SERVICES)}/.git (commit {sha})", [f"/home/{user}"], [sha]),
        (f"warning: could not open directory '/Users/{user}/Library/Caches/pip/': Permission denied", [f"/Users/{user}"], ["Permission denied"]),
        (f"npm ERR! A complete log of this run can be found in: /home/{user}/.npm/_logs/2024-03-12T10_14_03_123Z-debug-0.log", [f"/home/{user}"], [".npm/_logs/2024-03-12T10_14_03_123Z-debug-0.log"]),
        (f"PermissionError: [Errno 13] Permission denied: '~/{project}/secrets.toml'", [project], ["secrets.toml"]),
    ])  # fmt: skip


NEW_POSITIVES: dict[str, list[Callable[[random.Random], Made]]] = {
    "random_token": [_random_token],
    "key_material": [_key_material],
    "url_reserved_password": [_url_passwords],
    "private_ip": [_private_ip],
    "internal_email": [_internal_email],
    "project_path": [_project_path, _people_in_paths],
    "deployed_trace": [_deployed_trace],
    "internal_host_more": [_internal_host_more],
    "datastore_host": [_datastore],
    "connection_string": [_connection_string],
}
"""Category → makers (used in turn)."""

URL_RESERVED = _url_reserved
"""``(rng, character)`` → a URL-password case for that reserved character (the generator makes a few of
each, so the class is covered, not one example)."""
