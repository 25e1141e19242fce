# ruff: noqa: E501  (data tables: one sample per line reads better than wrapped strings)
"""Generate ``corpus.jsonl``: labelled positives (each with the exact secret substrings) and look-alike negatives.

Run ``python tests/data/sanitizer_corpus/generate.py`` (deterministic: seed 20240611). Values follow public
formats with random content (made up, never real). Each sample puts a value into one of several realistic
contexts (tracebacks, logs, config files, shell sessions, code, prose) and most are wrapped in unrelated
surrounding lines, so no rule can win by matching the corpus' own scaffolding. ``positives.py`` adds what
issue 15 found reaching storage (unlabelled tokens, key material, URL passwords with reserved characters,
private addresses, e-mails at any domain, project paths, internal hosts, deployed stack traces);
``negatives.py`` and ``traces.py`` the secret-free look-alikes. ``hard_cases.jsonl`` beside this file holds
hand-written cases and is not generated.

A record: ``{"id", "label": "positive"|"negative", "category", "text", "secrets": [...], "keep": [...]}``:
``secrets`` must be gone from the output, ``keep`` must still be in it (the library part of a path, a
file name, a hex address); a negative must come out unchanged.
"""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from values import (
    ALNUM,
    B64,
    HEX,
    URLSAFE,
    card,
    email,
    jwt,
    mixed,
    password,
    pem_body,
    person,
    phone,
    public_ipv4,
    public_ipv6,
    rand,
    url_password,
    username,
)

SEED = 20240611
PER_POSITIVE = 40
PER_NEGATIVE = 50
PER_RESERVED_CHARACTER = 4
NEGATIVE_WEIGHTS = {"stack_traces": 8, "identifiers": 2, "hash_digest": 2, "encoded_text": 2}
"""Categories with more negatives than the others: the look-alikes that matter most for precision."""
Maker = Callable[[random.Random], tuple[str, list[str]]]

SURROUNDINGS = [
    "INFO  [main] Starting worker pool with 4 processes",
    "DEBUG retrying request (attempt 2 of 5) after 0.5s",
    '  File "/usr/lib/python3.11/asyncio/base_events.py", line 653, in run_until_complete',
    "    return future.result()",
    "WARNING: pip is configured with locations that require TLS/SSL",
    "npm WARN deprecated inflight@1.0.6: This module is not supported",
    "at Object.<anonymous> (/usr/local/lib/node_modules/express/lib/router/index.js:284:7)",
    "2024-03-14T09:26:53.589Z  INFO 1 --- [main] o.s.b.w.embedded.tomcat.TomcatWebServer",
    "Step 5/12 : RUN pip install --no-cache-dir -r requirements.txt",
    "Collecting fastapi==0.110.0",
    "# see the docs for details",
    "error: could not compile `serde_json` (lib) due to 2 previous errors",
    "Process finished with exit code 1",
    "    at java.base/java.lang.Thread.run(Thread.java:833)",
]


def framed(rng: random.Random, snippet: str) -> str:
    if rng.random() < 0.3:
        return snippet
    before = rng.sample(SURROUNDINGS, rng.randint(0, 2))
    after = rng.sample(SURROUNDINGS, rng.randint(0, 2))
    return "\n".join([*before, snippet, *after])


def _aws(rng):
    key = rng.choice(["AKIA", "ASIA"]) + rand(rng, string.ascii_uppercase + "234567", 16)
    secret = rand(rng, B64, 40)
    return rng.choice([
        (f"[default]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\nregion = eu-west-1", [key, secret]),
        (f"export AWS_ACCESS_KEY_ID={key}\nexport AWS_SECRET_ACCESS_KEY={secret}", [key, secret]),
        (f's3 = boto3.client("s3", aws_access_key_id="{key}", aws_secret_access_key="{secret}")', [key, secret]),
        (f"botocore.exceptions.ClientError: An error occurred (InvalidAccessKeyId) when calling the PutObject "
         f"operation: The AWS Access Key Id {key} you provided does not exist in our records.", [key]),
        (f'{{"AccessKeyId": "{key}", "SecretAccessKey": "{secret}", "Expiration": "2024-05-01T12:00:00Z"}}', [key, secret]),
    ])  # fmt: skip


def _gcp(rng):
    api = "AIza" + rand(rng, URLSAFE, 35)
    tok = "ya29." + rand(rng, URLSAFE, rng.randint(60, 160))
    sec = "GOCSPX-" + rand(rng, URLSAFE, 28)
    body = pem_body(rng, 8, escaped=True)
    return rng.choice([
        (f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={api} 403 Forbidden", [api]),
        (f"const firebaseConfig = {{ apiKey: \"{api}\", projectId: \"demo-shop\" }};", [api]),
        (f"curl -H 'Authorization: Bearer {tok}' https://www.googleapis.com/drive/v3/files", [tok]),
        (f'{{"web": {{"client_id": "1234-abc.apps.googleusercontent.com", "client_secret": "{sec}"}}}}', [sec]),
        (f'{{"type": "service_account", "project_id": "demo", "private_key": "-----BEGIN PRIVATE KEY-----\\n{body}'
         f'\\n-----END PRIVATE KEY-----\\n"}}', [body.split("\\n")[2]]),
    ])  # fmt: skip


def _azure(rng):
    acct = rand(rng, B64, 86) + "=="
    sig = rand(rng, ALNUM, 40) + "%2B" + rand(rng, ALNUM, 3) + "%3D"
    client = rand(rng, ALNUM, 3) + str(rng.randint(0, 9)) + "Q~" + rand(rng, ALNUM + "_.-", 34)
    sb = rand(rng, B64, 43) + "="
    return rng.choice([
        (f"DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey={acct};EndpointSuffix=core.windows.net", [acct]),
        (f"https://shopdata.blob.core.windows.net/img/a.png?sv=2022-11-02&ss=b&srt=o&sp=r&se=2024-09-01T00:00:00Z&sig={sig}", [sig]),
        (f"AZURE_CLIENT_SECRET={client}\nAZURE_TENANT_ID=72f988bf-86f1-41af-91ab-2d7cd011db47", [client]),
        (f'"ServiceBus": "Endpoint=sb://orders-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={sb}"', [sb]),
        (f"azure.core.exceptions.ClientAuthenticationError: secret {client} is expired", [client]),
    ])  # fmt: skip


def _openai(rng):
    key = rng.choice([
        "sk-proj-" + mixed(rng, rng.randint(40, 60), URLSAFE) + "T3BlbkFJ" + mixed(rng, 40, URLSAFE),
        "sk-" + mixed(rng, 48), "sk-svcacct-" + mixed(rng, 74, URLSAFE), "sk-" + mixed(rng, 20) + "T3BlbkFJ" + mixed(rng, 20),
    ])  # fmt: skip
    return rng.choice([
        (f"openai.AuthenticationError: Error code: 401 - Incorrect API key provided: {key}.", [key]),
        (f'client = OpenAI(api_key="{key}")', [key]),
        (f"OPENAI_API_KEY={key}", [key]),
        (f"llm = ChatOpenAI(model='gpt-4o', openai_api_key='{key}', temperature=0)", [key]),
    ])  # fmt: skip


def _anthropic(rng):
    key = "sk-ant-api03-" + mixed(rng, 93, URLSAFE) + "AA"
    return rng.choice([
        (f"anthropic.AuthenticationError: invalid x-api-key {key}", [key]),
        (f"export ANTHROPIC_API_KEY='{key}'", [key]),
        (f'headers = {{"x-api-key": "{key}", "anthropic-version": "2023-06-01"}}', [key]),
    ])  # fmt: skip


def _prefixed(prefix: str, body: Callable[[random.Random], str], contexts: list[str]) -> Maker:
    def make(rng):
        value = prefix + body(rng)
        return rng.choice(contexts).format(v=value), [value]

    return make


_hf = _prefixed("hf_", lambda r: mixed(r, 34, string.ascii_letters + "0"), [
    "huggingface_hub.utils._errors.RepositoryNotFoundError: 401 Client Error (token {v})",
    "HF_TOKEN={v} python train.py", "login(token=\"{v}\")", "$ huggingface-cli login --token {v}"])  # fmt: skip
_github = _prefixed("", lambda r: r.choice(["ghp_", "gho_", "ghs_", "ghu_"]) + mixed(r, 36), [
    "remote: Invalid username or token {v}. Password authentication is not supported.",
    "git clone https://{v}@github.com/acme/private-repo.git", "GITHUB_TOKEN: {v}",
    "gh auth login --with-token <<< {v}", "Authorization: token {v}"])  # fmt: skip
_github_pat = _prefixed("github_pat_", lambda r: mixed(r, 22) + "_" + mixed(r, 59), [
    "export GH_PAT={v}", "uses: actions/checkout@v4\n  with:\n    token: {v}"])  # fmt: skip
_gitlab = _prefixed("", lambda r: r.choice(["glpat-", "GR1348941"]) + mixed(r, 20, URLSAFE), [
    "git push https://oauth2:{v}@gitlab.com/team/app.git", "gitlab-runner register --registration-token {v}",
    "CI_JOB_TOKEN mismatch, using PRIVATE-TOKEN: {v}", "    private_token = '{v}'"])  # fmt: skip
_slack = _prefixed("", lambda r: r.choice(["xoxb-", "xoxp-"]) + f"{r.randint(10**10, 10**12)}-{r.randint(10**10, 10**12)}-" + mixed(r, 24), [
    "slack_sdk.errors.SlackApiError: invalid_auth (token={v})", "SLACK_BOT_TOKEN={v}", "client = WebClient(token='{v}')"])  # fmt: skip
_slack_hook = _prefixed("", lambda r: f"T{rand(r, string.ascii_uppercase + string.digits, 8)}/B{rand(r, string.ascii_uppercase + string.digits, 10)}/{mixed(r, 24)}", [
    "POST https://hooks.slack.com/services/{v} failed: 404 no_service", "webhook_url: https://hooks.slack.com/services/{v}"])  # fmt: skip
_stripe = _prefixed("", lambda r: r.choice(["sk_live_", "rk_live_", "sk_test_"]) + mixed(r, r.choice([24, 99])), [
    "stripe.error.AuthenticationError: Invalid API Key provided: {v}", "stripe.api_key = \"{v}\"",
    "STRIPE_SECRET_KEY={v}", "curl https://api.stripe.com/v1/charges -u {v}:"])  # fmt: skip
_stripe_wh = _prefixed("whsec_", lambda r: mixed(r, 32), ["STRIPE_WEBHOOK_SECRET={v}", "endpoint_secret = '{v}'"])
_twilio = _prefixed("SK", lambda r: rand(r, HEX, 32), [
    "twilio.base.exceptions.TwilioRestException: HTTP 401 error: Unable to create record: API Key {v} not found",
    "client = Client('{v}', api_secret, account_sid)", "TWILIO_API_KEY={v}"])  # fmt: skip
_sendgrid = _prefixed("SG.", lambda r: mixed(r, 22, URLSAFE) + "." + mixed(r, 43, URLSAFE), [
    "python_http_client.exceptions.UnauthorizedError: HTTP Error 401 (key {v})", "SENDGRID_API_KEY='{v}'",
    "sg = SendGridAPIClient(\"{v}\")"])  # fmt: skip
_npm = _prefixed("npm_", lambda r: mixed(r, 36), [
    "//registry.npmjs.org/:_authToken={v}", "npm ERR! 403 token {v} lacks publish rights", "NPM_TOKEN={v} npm publish"])  # fmt: skip
_pypi = _prefixed("pypi-AgEIcHlwaS5vcmc", lambda r: mixed(r, r.randint(60, 140), URLSAFE), [
    "[pypi]\nusername = __token__\npassword = {v}", "twine upload -u __token__ -p {v} dist/*", "TWINE_PASSWORD={v}"])  # fmt: skip
_docker = _prefixed("dckr_pat_", lambda r: mixed(r, 27, URLSAFE), [
    "echo {v} | docker login -u acmebot --password-stdin", "DOCKERHUB_TOKEN={v}",
    "Error response from daemon: Get \"https://registry-1.docker.io/v2/\": unauthorized: token {v} revoked"])  # fmt: skip


def _jwt(rng):
    tok = jwt(rng)
    return rng.choice([
        (f"jwt.exceptions.ExpiredSignatureError: Signature has expired for {tok}", [tok]),
        (f"Authorization: Bearer {tok}", [tok]),
        (f'localStorage.setItem("id_token", "{tok}");', [tok]),
        (f"GET /api/me?access_token={tok} HTTP/1.1", [tok]),
    ])  # fmt: skip


def _bearer(rng):
    tok = rng.choice([mixed(rng, rng.randint(24, 64), URLSAFE + "."), mixed(rng, 40, ALNUM + "~+/")])
    return rng.choice([
        (f"curl -H \"Authorization: Bearer {tok}\" https://api.example-saas.com/v2/items", [tok]),
        (f"requests.exceptions.HTTPError: 401 Client Error; sent headers {{'Authorization': 'Bearer {tok}'}}", [tok]),
        (f"> Authorization: bearer {tok}\n< HTTP/2 403", [tok]),
        (f'fetch(url, {{ headers: {{ Authorization: `Bearer {tok}` }} }})', [tok]),
    ])  # fmt: skip


def _private_key(rng):
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED ", "DSA "])
    body = pem_body(rng, rng.randint(4, 12))
    line = body.split("\n")[1]
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    return rng.choice([
        (block, [line]),
        ("ssh_key: |\n  " + block.replace("\n", "\n  "), [line]),
        (f"ValueError: Could not deserialize key data. The data may be in an incorrect format:\n{block}", [line]),
        (f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n(output truncated)", [line]),
    ])  # fmt: skip


def _url_credentials(rng):
    pw = url_password(rng)
    user = rng.choice(["admin", "app", "postgres", "svc_orders", username(rng)])
    host = rng.choice(
        ["db.example-shop.com", "10.0.3.12", "mongo0.a1b2c.mongodb.net", "redis-12345.c1.cloud.redislabs.com"]
    )
    return rng.choice([
        (f"sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) could not connect: postgresql://{user}:{pw}@{host}:5432/orders", [pw]),
        (f"DATABASE_URL=mysql+pymysql://{user}:{pw}@{host}:3306/shop", [pw]),
        (f'MONGO_URI = "mongodb+srv://{user}:{pw}@{host}/?retryWrites=true"', [pw]),
        (f"redis.exceptions.AuthenticationError: invalid password for redis://:{pw}@{host}:6379/0", [pw]),
        (f"pip install git+https://{user}:{pw}@git.example-shop.com/pkgs/core.git", [pw]),
        (f"amqp://{user}:{pw}@{host}:5672/vhost", [pw]),
    ])  # fmt: skip


def _generic(rng):
    pw = password(rng)
    tok = mixed(rng, rng.randint(20, 48), ALNUM + "-_")
    return rng.choice([
        (f'DB_PASSWORD="{pw}"', [pw]), (f"password: {pw}", [pw]), (f'{{"username": "svc", "password": "{pw}"}}', [pw]),
        (f"conn = psycopg2.connect(host='db', user='app', password='{pw}')", [pw]),
        (f"spring.datasource.password={pw}", [pw]), (f"  api_key: {tok}", [tok]), (f'API_SECRET = "{tok}"', [tok]),
        (f"const clientSecret = '{tok}';", [tok]), (f"[smtp]\nuser = mailer\npasswd = {pw}", [pw]),
        (f'config.set("auth_token", "{tok}")', [tok]), (f"X-Api-Key: {tok}", [tok]),
    ])  # fmt: skip


def _contextual(rng):
    pw = password(rng)
    tok = mixed(rng, rng.randint(20, 40))
    user = username(rng)
    return rng.choice([
        (f"I reset the admin password to {pw} but login still fails", [pw]),
        (f"mysql -u root -p{pw} -h 127.0.0.1 shop", [pw]),
        (f"curl -u {user}:{pw} https://ci.example-shop.com/api/json", [pw]),
        (f"./deploy.sh --token {tok} --env prod", [tok]),
        (f"the passphrase is {pw} (do not share)", [pw]),
        (f"GET /oauth/callback?code=ok&access_token={tok}&state=xyz", [tok]),
        (f"Cookie: sessionid={tok}; theme=dark", [tok]),
        (f"sshpass -p '{pw}' ssh deploy@build-box", [pw]),
    ])  # fmt: skip


def _email(rng):
    e = email(rng)
    first, last = person(rng)
    return rng.choice([
        (f"Author: {first.title()} {last.title()} <{e}>\nDate:   Tue Mar 12 10:14:03 2024 +0100", [e]),
        (f"django.core.exceptions.ValidationError: ['User with email {e} already exists.']", [e]),
        (f"Author-email: {e}\nLicense: MIT", [e]),
        (f'{{"id": 4182, "email": "{e}", "active": true}}', [e]),
        (f"KeyError: '{e}'", [e]), (f"Please contact {e} for access to the staging bucket.", [e]),
        (f"smtplib.SMTPRecipientsRefused: {{'{e}': (550, b'5.1.1 User unknown')}}", [e]),
    ])  # fmt: skip


def _home_path(rng):
    user = username(rng)
    win = rng.choice([user, f"{person(rng)[0].title()} {person(rng)[1].title()}"])
    return rng.choice([
        (f'Traceback (most recent call last):\n  File "/home/{user}/projects/api/app/main.py", line {rng.randint(1, 400)}, in <module>\n'
         f"    from app.db import engine\nModuleNotFoundError: No module named 'app.db'", [f"/{user}/"]),
        (f"    at Module._compile (/Users/{user}/code/web/node_modules/ts-node/src/index.ts:1618:23)", [f"/{user}/"]),
        (f"FileNotFoundError: [Errno 2] No such file or directory: 'C:\\\\Users\\\\{win}\\\\AppData\\\\Local\\\\app\\\\cfg.json'", [f"\\\\{win}\\\\"]),
        (f"error: could not open C:\\Users\\{win}\\Documents\\repo\\Cargo.toml", [f"\\{win}\\"]),
        (f"PermissionError: [Errno 13] Permission denied: '/Users/{user}/Library/Caches/pip'", [f"/{user}/"]),
        (f"cd /home/{user}/src && make", [f"/{user}/"]),
    ])  # fmt: skip


def _public_ip(rng):
    ip = public_ipv4(rng) if rng.random() < 0.8 else public_ipv6(rng)
    return rng.choice([
        (f"Failed password for invalid user admin from {ip} port {rng.randint(1024, 65000)} ssh2", [ip]),
        (f'{ip} - - [12/Mar/2024:10:14:03 +0000] "GET /login HTTP/1.1" 401 153', [ip]),
        (f"X-Forwarded-For: {ip}", [ip]), (f"ConnectionRefusedError: could not connect to server at {ip}", [ip]),
        (f"requests.exceptions.ConnectTimeout: HTTPConnectionPool(host='{ip}', port=8080)", [ip]),
        (f"client_ip={ip} status=403 path=/admin", [ip]), (f"Blocked request from {ip} (rate limit)", [ip]),
    ])  # fmt: skip


def _phone(rng):
    p = phone(rng)
    return rng.choice([
        (f"Customer callback requested: {p}", [p]), (f'{{"name": "J. Doe", "phone": "{p}"}}', [p]),
        (f"twilio.base.exceptions.TwilioRestException: The 'To' number {p} is not a valid phone number.", [p]),
        (f"Support hotline: {p} (Mon-Fri)", [p]), (f"ValueError: invalid phone {p!r}", [p]),
    ])  # fmt: skip


def _card(rng):
    c = card(rng)
    return rng.choice([
        (f"stripe.error.CardError: Your card was declined. card_number={c}", [c]),
        (f"payment failed for card {c} exp 04/27", [c]), (f'{{"pan": "{c}", "cvc": "***"}}', [c]),
        (f"AssertionError: expected masked output, got '{c}'", [c]),
    ])  # fmt: skip


def _internal_host(rng):
    host = rng.choice([
        f"db-{rng.randint(1, 9):02d}.prod.internal", f"git.{rng.choice(['acme', 'initech', 'globex'])}.corp",
        "jenkins.build.lan", f"{person(rng)[0]}-macbook-pro.local", f"wiki.{rng.choice(['eng', 'ops'])}.intranet",
        f"ip-10-0-{rng.randint(0, 255)}-{rng.randint(0, 255)}.ec2.internal", "nas.home.arpa", "vault.svc.corp",
    ])  # fmt: skip
    return rng.choice([
        (f"psycopg2.OperationalError: could not translate host name \"{host}\" to address", [host]),
        (f"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='{host}', port=443)", [host]),
        (f"ssh: connect to host {host} port 22: Connection timed out", [host]),
        (f"registry: {host}:5000/team/api:latest", [host]),
    ])  # fmt: skip


POSITIVES: dict[str, list[Maker]] = {
    "aws": [_aws], "gcp": [_gcp], "azure": [_azure], "openai": [_openai], "anthropic": [_anthropic],
    "huggingface": [_hf], "github": [_github, _github_pat], "gitlab": [_gitlab], "slack": [_slack, _slack_hook],
    "stripe": [_stripe, _stripe_wh], "twilio": [_twilio], "sendgrid": [_sendgrid], "npm": [_npm], "pypi": [_pypi],
    "dockerhub": [_docker], "jwt": [_jwt], "bearer": [_bearer], "private_key": [_private_key],
    "url_credentials": [_url_credentials], "generic_assignment": [_generic], "contextual_secret": [_contextual],
    "email": [_email], "home_path": [_home_path], "public_ip": [_public_ip], "phone": [_phone], "card": [_card],
    "internal_host": [_internal_host],
}  # fmt: skip


def _record(rid: str, label: str, category: str, text: str, secrets: list[str], keep: list[str]) -> dict:
    return {"id": rid, "label": label, "category": category, "text": text, "secrets": secrets, "keep": keep}


def build(seed: int = SEED) -> list[dict]:
    from negatives import NEGATIVES
    from positives import NEW_POSITIVES, URL_RESERVED
    from values import RESERVED

    rng = random.Random(seed)
    records: list[dict] = []
    for category, makers in {**POSITIVES, **NEW_POSITIVES}.items():
        for index in range(PER_POSITIVE):
            text, secrets, *rest = makers[index % len(makers)](rng)
            keep = rest[0] if rest else []
            label = "positive" if secrets else "negative"
            records.append(
                _record(f"{label[:3]}-{category}-{index:03d}", label, category, framed(rng, text), secrets, keep)
            )
    for ch in RESERVED:
        for index in range(PER_RESERVED_CHARACTER):
            text, secrets, keep = URL_RESERVED(rng, ch)
            records.append(
                _record(
                    f"pos-url_reserved_{ord(ch)}-{index}",
                    "positive",
                    "url_reserved_password",
                    framed(rng, text),
                    secrets,
                    keep,
                )
            )
    for category, maker in NEGATIVES.items():
        for index in range(PER_NEGATIVE * NEGATIVE_WEIGHTS.get(category, 1)):
            records.append(
                _record(f"neg-{category}-{index:03d}", "negative", category, framed(rng, maker(rng)), [], [])
            )
    return records


def main() -> None:
    out = Path(__file__).with_name("corpus.jsonl")
    records = build()
    with out.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    pos = sum(r["label"] == "positive" for r in records)
    sys.stderr.write(f"wrote {len(records)} records ({pos} positives, {len(records) - pos} negatives) to {out}\n")


if __name__ == "__main__":
    main()
