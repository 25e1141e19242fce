"""The synthetic issues of ``bench/gim_perf.py`` (also driven by ``bench/gim_overlap.py``): a deterministic generator,
eight error shapes over five languages, each issue a distinct package/symbol/version; :func:`issue` gives the
``gim_submit_issue`` arguments of issue ``index`` and :func:`query_for` another developer's report of it."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

_SYLLABLES = (
    "ka lo mi ne ru ta vo zen pa qui sor dal fen gor hul jin kor lum mor nex pol rin sul tor ulm vex wyn yor bri cas "
    "dro elk fiz gla hap ivo jex kru lin mav nor"
).split()
_USERS = ("alice", "bob", "carol", "dmitri", "eve", "farah", "gus", "hiro", "ines", "jon")
_OSES = ("linux", "macOS", "Windows 11", "Ubuntu 22.04", "Debian 12", "Alpine")


def _name(rng: random.Random, parts: int = 2) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts))


def _camel(rng: random.Random) -> str:
    return "".join(
        p.capitalize() for p in (_name(rng, 1), _name(rng, 1), rng.choice(("Client", "Config", "Loader", "")))
    )


def _version(rng: random.Random) -> str:
    return f"{rng.randint(0, 9)}.{rng.randint(0, 30)}"


Template = Callable[[dict[str, str], random.Random], tuple[str, str, list[dict[str, str]], str]]


def _py_attr(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    user, line = noise.choice(_USERS), noise.randint(2, 900)
    error = (
        f'  File "/home/{user}/work/{f["app"]}/main.py", line {line}, in <module>\n'
        f"    value = {f['pkg']}.{f['attr']}(x)\n"
        f"AttributeError: module '{f['pkg']}' has no attribute '{f['attr']}'"
    )
    cause = f"{f['pkg']} {f['ver']} removed the deprecated {f['attr']} helper; code written for older {f['pkg']} fails."
    actions = [{"type": "downgrade", "command": f'pip install "{f["pkg"]}<{f["ver"]}"', "explanation": "keep it"}]
    return error, cause, actions, "python"


def _py_import(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    user = noise.choice(_USERS)
    error = (
        f"ImportError: cannot import name '{f['cls']}' from '{f['pkg']}.{f['mod']}' "
        f"(/Users/{user}/.venv/lib/python3.{noise.randint(8, 12)}/site-packages/{f['pkg']}/{f['mod']}/__init__.py)"
    )
    cause = f"{f['pkg']} {f['ver']} moved {f['cls']} out of {f['pkg']}.{f['mod']} into {f['pkg']}_core."
    actions = [{"type": "upgrade", "command": f"pip install -U {f['pkg']}_core", "explanation": "new location"}]
    return error, cause, actions, "python"


def _py_kwarg(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    error = (
        f'  File "C:\\Users\\{noise.choice(_USERS)}\\proj\\{f["app"]}.py", line {noise.randint(2, 500)}, in run\n'
        f"TypeError: {f['cls']}.__init__() got an unexpected keyword argument '{f['kw']}'"
    )
    cause = f"{f['pkg']} {f['ver']} dropped the {f['kw']} argument of {f['cls']}; pass it through the new options."
    actions = [{"type": "downgrade", "command": f"pip install {f['pkg']}=={f['ver']}", "explanation": "old API"}]
    return error, cause, actions, "python"


def _js_not_function(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    error = (
        f"TypeError: {f['pkg']}.{f['attr']} is not a function\n"
        f"    at Object.<anonymous> (/srv/{noise.choice(_USERS)}/{f['app']}/index.js:{noise.randint(1, 300)}:"
        f"{noise.randint(1, 40)})\n    at Module._compile (node:internal/modules/cjs/loader:1256:14)"
    )
    cause = f"{f['pkg']} v{f['ver']} renamed {f['attr']} to {f['attr']}Async; old callers break."
    actions = [{"type": "command", "command": f"replace {f['attr']}( with {f['attr']}Async(", "explanation": "rename"}]
    return error, cause, actions, "javascript"


def _js_missing(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    error = (
        f"Error: Cannot find module '{f['pkg']}/{f['mod']}'\nRequire stack:\n"
        f"- /home/{noise.choice(_USERS)}/{f['app']}/node_modules/{f['pkg']}-plugin/dist/index.js"
    )
    cause = f"{f['pkg']} {f['ver']} stopped shipping the {f['mod']} entry point; it is a separate package now."
    actions = [{"type": "install", "command": f"npm install @{f['pkg']}/{f['mod']}", "explanation": "split out"}]
    return error, cause, actions, "javascript"


def _go_panic(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    error = (
        "panic: runtime error: invalid memory address or nil pointer dereference\n"
        f"[signal SIGSEGV: segmentation violation code=0x1 addr=0x{noise.randint(16, 4096):x}]\n"
        f"goroutine {noise.randint(1, 90)} [running]:\n{f['pkg']}.(*{f['cls']}).{f['attr'].capitalize()}(...)\n"
        f"\t/go/pkg/mod/github.com/{f['pkg']}/{f['pkg']}@v{f['ver']}/{f['mod']}.go:{noise.randint(10, 800)}"
    )
    cause = f"{f['cls']}.{f['attr'].capitalize()} in {f['pkg']} {f['ver']} dereferences a nil {f['mod']} handle."
    actions = [{"type": "upgrade", "command": f"go get github.com/{f['pkg']}/{f['pkg']}@latest", "explanation": "fix"}]
    return error, cause, actions, "go"


def _rust_missing(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    error = (
        f"error[E0425]: cannot find function `{f['attr']}` in crate `{f['pkg']}`\n"
        f" --> src/{f['app']}.rs:{noise.randint(1, 400)}:{noise.randint(1, 60)}"
    )
    cause = f"The {f['pkg']} crate {f['ver']} put {f['attr']} behind the `{f['mod']}` feature flag."
    actions = [{"type": "config", "command": f'{f["pkg"]} = {{ features = ["{f["mod"]}"] }}', "explanation": "on"}]
    return error, cause, actions, "rust"


def _java_method(f: dict[str, str], noise: random.Random) -> tuple[str, str, list[dict[str, str]], str]:
    error = (
        f"java.lang.NoSuchMethodError: 'void com.{f['pkg']}.{f['cls']}.{f['attr']}()'\n"
        f"\tat com.{f['app']}.Main.run(Main.java:{noise.randint(5, 700)})"
    )
    cause = f"Two {f['pkg']} versions on the classpath: {f['cls']}.{f['attr']} only exists since {f['ver']}."
    actions = [
        {"type": "config", "command": f"exclude the old {f['pkg']} from the build", "explanation": "one version"}
    ]
    return error, cause, actions, "java"


_TEMPLATES: tuple[Template, ...] = (
    _py_attr,
    _py_import,
    _py_kwarg,
    _js_not_function,
    _js_missing,
    _go_panic,
    _rust_missing,
    _java_method,
)


def _identity(index: int) -> tuple[Template, dict[str, str]]:
    rng = random.Random(index * 7919 + 17)
    fields = {
        "pkg": _name(rng, 2),
        "mod": _name(rng, 1),
        "attr": _name(rng, 2),
        "cls": _camel(rng),
        "kw": _name(rng, 2),
        "app": _name(rng, 2),
        "ver": _version(rng),
    }
    return _TEMPLATES[index % len(_TEMPLATES)], fields


def issue(index: int, variant: int = 0) -> dict[str, Any]:
    """The ``gim_submit_issue`` arguments of synthetic issue ``index`` as reported the ``variant``-th time."""
    template, fields = _identity(index)
    noise = random.Random(index * 104729 + variant * 31 + 5)
    error, cause, actions, language = template(fields, noise)
    return {
        "error_message": error,
        "error_description": error.strip().splitlines()[-1][:200],
        "root_cause": cause,
        "fix_bundle": {
            "env_actions": [{"order": i + 1, **a} for i, a in enumerate(actions)],
            "verification": [{"order": 1, "command": "re-run", "expected_output": "no error"}],
        },
        "model": "synthetic-model",
        "provider": "other",
        "environment": {"language": language, "os": noise.choice(_OSES)},
    }


def query_for(index: int, variant: int = 1) -> dict[str, Any]:
    """A ``gim_search_issues`` call for issue ``index`` as another developer would report it."""
    submission = issue(index, variant)
    return {
        "error_message": submission["error_message"],
        "environment": {"language": submission["environment"]["language"]},
    }
