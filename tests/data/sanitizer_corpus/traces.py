# ruff: noqa: E501  (data tables: one frame per line reads better than wrapped strings)
"""Stack traces in eight languages, for the sanitizer corpus, with their labels.

A trace is laid out over *places*: where the project lives and where its libraries live. A deployed place
(``/srv/orders``, ``/home/alice/projects/orders``, ``C:\\Users\\Bob Smith\\source\\repos\\Orders``) is
deployment-specific: its prefix is labelled as a secret (it must not survive) and the library-relative part
of each library path (``site-packages/httpx/_client.py``) and each file name as keep (they must). A
system place (``/usr/local/lib/python3.11/site-packages``, ``/usr/local/go/src``, relative ``app/main.py``)
is secret-free: the whole trace must come out unchanged. Every trace carries the noise that must stay
readable: hex addresses, line numbers, versions, SHAs, UUIDs.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from values import FIRST, HEX, LAST, SERVICES, company, rand

PY_LIBS = [
    ("langchain/tools.py", "invoke", "return self._run(*args, **kwargs)"),
    ("httpx/_client.py", "send", "response = self._send_handling_auth("),
    ("requests/adapters.py", "send", "raise ConnectionError(e, request=request)"),
    ("sqlalchemy/engine/base.py", "_execute_context", "self.dialect.do_execute("),
    ("django/core/handlers/exception.py", "inner", "response = get_response(request)"),
    ("fastapi/routing.py", "run_endpoint_function", "return await dependant.call(**values)"),
    ("pydantic/main.py", "__init__", "validated_self = self.__pydantic_validator__.validate_python(data)"),
    ("torch/nn/modules/module.py", "_call_impl", "return forward_call(*args, **kwargs)"),
    ("openai/_base_client.py", "_request", "raise self._make_status_error_from_response(err.response) from None"),
    ("anyio/_backends/_asyncio.py", "run_sync_in_worker_thread", "return await future"),
    ("celery/app/task.py", "__call__", "return self.run(*args, **kwargs)"),
    ("psycopg2/__init__.py", "connect", "conn = _connect(dsn, connection_factory=connection_factory, **kwasync)"),
]
PY_ERRORS = [
    "httpx.ConnectError: [Errno 111] Connection refused",
    "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) server closed the connection unexpectedly",
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
    "RuntimeError: CUDA error: device-side assert triggered",
    "openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached', 'type': 'requests'}}",
    "KeyError: 'user_id'",
    "AttributeError: 'NoneType' object has no attribute 'id'",
    "ModuleNotFoundError: No module named 'langchain_community'",
]
NODE_LIBS = [
    ("express/lib/router/layer.js", "Layer.handle [as handle_request]"),
    ("express/lib/router/route.js", "next"),
    ("mongoose/lib/query.js", "Query.exec"),
    ("@prisma/client/runtime/library.js", "ai.handleRequestError"),
    ("axios/lib/core/settle.js", "settle"),
    ("next/dist/server/base-server.js", "DevServer.renderToResponseWithComponentsImpl"),
    ("pg/lib/client.js", "Client._handleErrorMessage"),
]
NODE_ERRORS = [
    "TypeError: Cannot read properties of undefined (reading 'id')",
    "Error: connect ECONNREFUSED 127.0.0.1:5432",
    "PrismaClientKnownRequestError: Unique constraint failed on the fields: (`email`)",
    "AxiosError: Request failed with status code 502",
]
GO_MODS = [
    ("github.com/gin-gonic/gin@v1.9.1/context.go", "github.com/gin-gonic/gin.(*Context).Next"),
    ("github.com/jackc/pgx/v5@v5.5.1/conn.go", "github.com/jackc/pgx/v5.(*Conn).Query"),
    ("google.golang.org/grpc@v1.60.1/server.go", "google.golang.org/grpc.(*Server).handleStream"),
    ("go.uber.org/zap@v1.26.0/logger.go", "go.uber.org/zap.(*Logger).Fatal"),
]
RUST_CRATES = [
    ("tokio-1.35.1/src/runtime/park.rs", "tokio::runtime::park::CachedParkThread::block_on"),
    ("hyper-0.14.28/src/client/client.rs", "hyper::client::client::Client<C,B>::send_request"),
    ("sqlx-core-0.7.3/src/pool/inner.rs", "sqlx_core::pool::inner::PoolInner<DB>::acquire"),
    ("serde_json-1.0.111/src/de.rs", "serde_json::de::from_str"),
]
RUBY_GEMS = [
    ("actionpack-7.1.2/lib/action_controller/metal/basic_implicit_render.rb", "send_action"),
    ("activerecord-7.1.2/lib/active_record/connection_adapters/postgresql_adapter.rb", "connect"),
    ("rack-2.2.8/lib/rack/builder.rb", "call"),
]
PHP_VENDOR = [
    ("laravel/framework/src/Illuminate/Routing/Controller.php", "Illuminate\\Routing\\Controller->callAction()"),
    ("laravel/framework/src/Illuminate/Pipeline/Pipeline.php", "Illuminate\\Pipeline\\Pipeline->then()"),
    ("symfony/http-kernel/HttpKernel.php", "Symfony\\Component\\HttpKernel\\HttpKernel->handle()"),
]
RUSTC = "/rustc/90c541806f23a127002de5b4038be731ba1458ca/library"


@dataclass
class Trace:
    text: str
    secrets: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)


@dataclass
class Place:
    """Where a trace's files are: ``root`` (project) and the library stores, each with its label."""

    root: str
    python: str
    node: str
    gomod: str
    cargo: str
    gems: str
    sep: str = "/"
    secrets: list[str] = field(default_factory=list)

    def join(self, base: str, *parts: str) -> str:
        return self.sep.join([base, *(part.replace("/", self.sep) for part in parts)]) if base else self.sep.join(parts)


def _user(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return rng.choice([first, f"{first}.{last}", f"{first[0]}{last}", f"{last}_{first[0]}"])


def deployed_place(rng: random.Random) -> Place:
    """Paths that name a user, a project or a deployment."""
    svc, user, corp = rng.choice(SERVICES), _user(rng), company(rng)
    kind = rng.randrange(9)
    if kind == 0:
        root = f"/srv/{svc}"
    elif kind == 1:
        root = f"/home/{user}/projects/{svc}-api"
    elif kind == 2:
        root = f"/Users/{user}/code/{corp}/{svc}"
    elif kind == 3:
        root = f"/opt/{corp}/{svc}"
    elif kind == 4:
        root = f"/var/www/{svc}.{corp}.com"
    elif kind == 5:
        root = f"/home/runner/work/{svc}-service/{svc}-service"
    elif kind == 6:
        root = f"/builds/{corp}/platform/{svc}"
    elif kind == 7:
        name = f"{rng.choice(FIRST).title()} {rng.choice(LAST).title()}"
        root = f"C:\\Users\\{name}\\source\\repos\\{svc.title()}"
        lib = f"C:\\Users\\{name}\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages"
        return Place(
            root, lib, root + "\\node_modules", root, root, root, "\\", [f"{name}\\source", f"{name}\\AppData"]
        )
    else:
        root = f"/workspace/{corp}-{svc}"
    home = "/".join(root.split("/")[:3]) if root.startswith(("/home/", "/Users/")) else f"/home/{user}"
    python = rng.choice(
        [
            f"{root}/.venv/lib/python3.11/site-packages",
            f"{home}/.pyenv/versions/3.11.7/lib/python3.11/site-packages",
            f"{root}/venv/lib/python3.12/site-packages",
        ]
    )
    secrets = [root] + ([home] if home != root and home in python else [])
    return Place(
        root,
        python,
        f"{root}/node_modules",
        f"{home}/go/pkg/mod",
        f"{home}/.cargo/registry/src/index.crates.io-6f17d22bba15001f",
        f"{root}/vendor/bundle/ruby/3.2.0/gems",
        "/",
        secrets,
    )


def system_place(rng: random.Random) -> Place:
    """Paths every machine of a kind shares: the project's own files are relative."""
    return Place(
        "",
        rng.choice(
            [
                "/usr/local/lib/python3.11/site-packages",
                "/usr/lib/python3/dist-packages",
                "/opt/homebrew/lib/python3.12/site-packages",
                "/opt/conda/lib/python3.11/site-packages",
            ]
        ),
        rng.choice(["/usr/local/lib/node_modules", "/usr/lib/node_modules"]),
        "/go/pkg/mod",
        "/usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f",
        "/usr/local/bundle/gems",
    )


def _addr(rng: random.Random) -> str:
    return "0x" + rand(rng, HEX, rng.choice([6, 8, 12]))


def python_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace("", list(place.secrets))
    app = rng.choice(["main.py", "service.py", "agent.py", "worker.py", "handlers.py"])
    own = place.join(place.root, "app", app) if place.root else f"app/{app}"
    lines = [
        "Traceback (most recent call last):",
        f'  File "{own}", line {rng.randint(5, 400)}, in {rng.choice(["<module>", "handle", "run"])}',
        "    result = pipeline.run(payload)",
    ]
    trace.keep.append(app)
    for lib, func, code in rng.sample(PY_LIBS, rng.randint(1, 3)):
        lines += [f'  File "{place.join(place.python, lib)}", line {rng.randint(10, 2000)}, in {func}', f"    {code}"]
        trace.keep.append(
            "site-packages" + place.sep + lib.replace("/", place.sep)
            if "site-packages" in place.python
            else lib.replace("/", place.sep)
        )
    if rng.random() < 0.4:
        lines.append(f"  <object at {_addr(rng)}> in state {uuid.UUID(int=rng.getrandbits(128), version=4)}")
    lines.append(rng.choice(PY_ERRORS))
    trace.text = "\n".join(lines)
    return trace


def node_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace("", list(place.secrets))
    own = (
        place.join(place.root, "src", "services", "user.js")
        if place.root
        else "webpack-internal:///./src/services/user.js"
    )
    lines = [rng.choice(NODE_ERRORS), f"    at getUser ({own}:{rng.randint(1, 300)}:{rng.randint(1, 80)})"]
    for lib, func in rng.sample(NODE_LIBS, rng.randint(1, 3)):
        lines.append(f"    at {func} ({place.join(place.node, lib)}:{rng.randint(1, 900)}:{rng.randint(1, 60)})")
        trace.keep.append("node_modules" + place.sep + lib.replace("/", place.sep))
    lines.append(
        f"    at process.processTicksAndRejections (node:internal/process/task_queues:{rng.randint(60, 99)}:5)"
    )
    trace.text = "\n".join(lines)
    return trace


def go_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace(
        "", list(place.secrets) + ([place.gomod.rsplit("/go/pkg/mod", 1)[0]] if place.root and place.sep == "/" else [])
    )
    own = place.join(place.root, "cmd", "server", "main.go") if place.root else "/usr/local/go/src/net/http/server.go"
    lines = [
        "panic: runtime error: invalid memory address or nil pointer dereference",
        f"[signal SIGSEGV: segmentation violation code=0x1 addr=0x{rng.randint(8, 255):x} pc={_addr(rng)}]",
        "",
        f"goroutine {rng.randint(1, 400)} [running]:",
        f"main.(*Server).handle({_addr(rng)}, {{{_addr(rng)}, {_addr(rng)}}})",
        f"\t{own}:{rng.randint(10, 300)} +0x{rng.randint(16, 900):x}",
    ]
    for mod, func in rng.sample(GO_MODS, rng.randint(1, 2)):
        lines += [
            f"{func}(...)",
            f"\t{place.join(place.gomod, mod)}:{rng.randint(10, 900)} +0x{rng.randint(16, 900):x}",
        ]
        trace.keep.append(mod.replace("/", place.sep))
    lines += [
        "created by net/http.(*Server).Serve in goroutine 1",
        f"\t/usr/local/go/src/net/http/server.go:{rng.randint(3000, 3300)} +0x4b4",
    ]
    trace.text = "\n".join(lines)
    return trace


def rust_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace(
        "", list(place.secrets) + ([place.cargo.split("/.cargo/", 1)[0]] if place.root and place.sep == "/" else [])
    )
    lines = [
        f"thread 'main' panicked at src/main.rs:{rng.randint(5, 200)}:{rng.randint(1, 40)}:",
        'called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: "No such file or directory" }',
        "stack backtrace:",
        "   0: rust_begin_unwind",
        f"             at {RUSTC}/std/src/panicking.rs:645:5",
    ]
    for index, (crate, func) in enumerate(rng.sample(RUST_CRATES, rng.randint(1, 2)), start=1):
        lines += [
            f"   {index}: {func}",
            f"             at {place.join(place.cargo, crate)}:{rng.randint(10, 900)}:{rng.randint(1, 60)}",
        ]
        trace.keep.append(crate)
    own = place.join(place.root, "src", "main.rs") if place.root else "./src/main.rs"
    lines += ["   9: app::main", f"             at {own}:{rng.randint(5, 200)}:5"]
    trace.text = "\n".join(lines)
    return trace


def java_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace("")
    svc = rng.choice(SERVICES)
    lines = [
        rng.choice(
            [
                'Exception in thread "main" java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null',
                "org.springframework.dao.DataAccessResourceFailureException: Unable to acquire JDBC Connection",
                f"java.lang.IllegalStateException: Failed to load ApplicationContext for [WebMergedContextConfiguration@{rand(rng, HEX, 8)}]",
            ]
        ),
        f"\tat com.example.{svc}.{svc.title()}Service.validate({svc.title()}Service.java:{rng.randint(10, 400)})",
        f"\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:{rng.randint(800, 900)})",
        f"\tat org.apache.catalina.core.ApplicationFilterChain.doFilter(ApplicationFilterChain.java:{rng.randint(100, 200)})",
        f"\tat java.base/java.lang.Thread.run(Thread.java:{rng.choice([833, 840, 1583])})",
    ]
    if rng.random() < 0.5:
        lines.insert(2, f"\tat jdk.proxy2/jdk.proxy2.$Proxy{rng.randint(50, 200)}.save(Unknown Source)")
    trace.text = "\n".join(lines)
    trace.keep += ["FrameworkServlet.java", "Thread.java"]
    return trace


def ruby_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace("", list(place.secrets))
    own = (
        place.join(place.root, "app", "controllers", "users_controller.rb")
        if place.root
        else "app/controllers/users_controller.rb"
    )
    lines = ["NoMethodError: undefined method `name' for nil:NilClass", f"  {own}:{rng.randint(5, 90)}:in `show'"]
    for gem, func in rng.sample(RUBY_GEMS, rng.randint(1, 2)):
        lines.append(f"  {place.join(place.gems, gem)}:{rng.randint(5, 300)}:in `{func}'")
        trace.keep.append(gem)
    trace.text = "\n".join(lines)
    return trace


def php_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace("", list(place.secrets))
    base = place.root if place.root else "/usr/share/php"
    own = place.join(base, "app", "Http", "Controllers", "UserController.php")
    lines = [
        f"PHP Fatal error:  Uncaught Error: Call to a member function find() on null in {own}:{rng.randint(10, 200)}",
        "Stack trace:",
    ]
    for index, (lib, func) in enumerate(rng.sample(PHP_VENDOR, rng.randint(1, 2))):
        lines.append(f"#{index} {place.join(base, 'vendor', lib)}({rng.randint(10, 300)}): {func}")
        trace.keep.append("vendor" + place.sep + lib.replace("/", place.sep))
    lines.append(f"#{len(lines) - 2} {{main}}")
    trace.text = "\n".join(lines)
    if not place.root:
        trace.keep = []
    return trace


def dotnet_trace(rng: random.Random, place: Place) -> Trace:
    trace = Trace("", list(place.secrets))
    svc = rng.choice(SERVICES).title()
    own = place.join(place.root, f"{svc}Service.cs") if place.root else f"{svc}Service.cs"
    lines = [
        "System.NullReferenceException: Object reference not set to an instance of an object.",
        f"   at Example.{svc}.{svc}Service.Place(Order order) in {own}:line {rng.randint(10, 300)}",
        "   at Microsoft.AspNetCore.Mvc.Infrastructure.ActionMethodExecutor.TaskOfIActionResultExecutor.Execute(ActionContext context)",
        f"   at System.Threading.Tasks.Task.InnerInvoke() in /_/src/libraries/System.Private.CoreLib/src/System/Threading/Tasks/Task.cs:line {rng.randint(2000, 2500)}",
    ]
    trace.text = "\n".join(lines)
    trace.keep.append(f"{svc}Service.cs")
    return trace


TRACES = [python_trace, node_trace, go_trace, rust_trace, java_trace, ruby_trace, php_trace, dotnet_trace]


def trace(rng: random.Random, *, deployed: bool) -> Trace:
    """A stack trace of a random language; ``deployed`` lays it out over deployment-specific paths."""
    place = deployed_place(rng) if deployed else system_place(rng)
    maker = rng.choice(TRACES if place.sep == "/" else [python_trace, node_trace, dotnet_trace])
    made = maker(rng, place)
    made.secrets = sorted({s for s in made.secrets if s and s in made.text})
    return made
