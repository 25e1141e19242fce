"""Code chunking: one chunk per definition, named as each language writes it, module code kept."""

from __future__ import annotations

from gateway_plugins.context.chunking import chunk_file


def symbols(path: str, text: str) -> dict[str | None, tuple[str, int, int]]:
    return {c.symbol: (c.kind, c.start_line, c.end_line) for c in chunk_file(path, text).chunks if c.symbol}


PYTHON = '''\
"""Module doc."""
import os
from .globals import request_ctx, app_ctx

_no_app_msg = """Working outside of application context."""


class Flask(App):
    """The app."""

    default_config = {}

    @setupmethod
    def route(self, rule):
        return rule

    class Inner:
        def deep(self):
            def helper():
                return 1
            return helper()


def find_best_app(module):
    raise RuntimeError("Could not locate a Flask application.")
'''


def test_python_qualified_names_spans_and_module_code() -> None:
    chunked = chunk_file("src/flask/app.py", PYTHON)
    found = {c.symbol: c for c in chunked.chunks}
    assert found["Flask"].kind == "class"
    assert "def route" not in found["Flask"].content  # the class keeps its own lines, methods have theirs
    assert "default_config" in found["Flask"].content
    route = found["Flask.route"]
    assert route.kind == "method" and route.content.startswith("    @setupmethod")  # decorators belong to it
    assert found["Flask.Inner.deep"].kind == "method"
    assert "helper" not in found  # a nested function stays inside its function's chunk
    assert found["find_best_app"].kind == "function"
    assert found["find_best_app"].strings == ("Could not locate a Flask application.",)
    module = [c for c in chunked.chunks if c.kind == "module"]
    assert any("_no_app_msg" in c.content for c in module)
    assert {"os", ".globals", ".globals.request_ctx", ".globals.app_ctx"} <= set(chunked.imports)


JAVASCRIPT = """\
var methods = require('methods');
var Layer = require('./layer');
var res = module.exports = {};

/**
 * Send a response.
 */
res.send = function send(body) {
  return this;
};

res.contentType =
res.type = function contentType(type) {
  return type;
};

Layer.prototype.match = function match(path) {
  return decode_param(path);
};

exports.compileTrust = function(val) {
  return val;
};

defineGetter(req, 'protocol', function protocol(){
  return 'http';
});

methods.forEach(function(method){
  app[method] = function(path){
    return this;
  };
});

proto.handle = function handle(req, res, out) {
  function trim_prefix(layer) {
    return layer;
  }
  next();
};

function decode_param(val) {
  throw new TypeError('Failed to decode param');
}

var View = function View(name) {};

class Router {
  route(path) { return path; }
}
"""


def test_javascript_names_as_the_code_writes_them() -> None:
    found = symbols("lib/response.js", JAVASCRIPT)
    for name in (
        "res.send",
        "res.contentType",
        "Layer.prototype.match",
        "exports.compileTrust",
        "req.protocol",
        "app[method]",
        "proto.handle",
        "trim_prefix",
        "decode_param",
        "View",
        "Router",
        "Router.route",
    ):
        assert name in found, name
    assert found["res.send"][1] == 5  # the JSDoc above a definition is part of its chunk
    assert found["trim_prefix"][1] > found["proto.handle"][1]  # nested, inside its parent's span
    assert found["trim_prefix"][2] < found["proto.handle"][2]
    assert found["Router"][0] == "class" and found["res.send"][0] == "method"
    assert chunk_file("lib/response.js", JAVASCRIPT).imports == ["methods", "./layer"]


def test_a_method_doc_comment_belongs_to_the_method_not_its_class() -> None:
    text = (
        "class Command {\n"
        "  /**\n   * Register a hook that runs before the action.\n   */\n"
        "  hook(event, listener) {\n    this.hooks[event] = listener;\n  }\n"
        "}\n"
    )
    chunks = {c.symbol: c for c in chunk_file("lib/command.js", text).chunks}
    assert chunks["Command.hook"].start_line == 2 and "runs before the action" in chunks["Command.hook"].content
    assert "runs before the action" not in chunks["Command"].content


def test_typescript_go_java_rust() -> None:
    ts = symbols(
        "src/a.ts",
        "export class Store {\n  get(key: string): number { return 1; }\n}\n"
        "export interface Shape { x: number }\nexport function make(): Store { return new Store(); }\n",
    )
    assert {"Store", "Store.get", "Shape", "make"} <= set(ts)
    go = symbols(
        "client.go",
        "package http\n\ntype Client struct {\n\tTimeout int\n}\n\n"
        "func (c *Client) Do(req *Request) error {\n\treturn nil\n}\n\nfunc NewClient() *Client {\n\treturn nil\n}\n",
    )
    assert go["Client.Do"][0] == "method" and go["NewClient"][0] == "function" and go["Client"][0] == "class"
    java = symbols(
        "A.java", "class Outer {\n  Outer() {}\n  void run() {}\n  static class Inner { int size() { return 0; } }\n}\n"
    )
    assert {"Outer", "Outer.Outer", "Outer.run", "Outer.Inner", "Outer.Inner.size"} <= set(java)
    rust = symbols(
        "lib.rs",
        "struct Vec2 { x: f32 }\nimpl Vec2 {\n    fn len(&self) -> f32 { self.x }\n}\n"
        "fn main() {}\nmod net {\n    fn connect() {}\n}\n",
    )
    assert rust["Vec2::len"][0] == "method" and rust["main"][0] == "function" and "net::connect" in rust


def test_a_syntax_error_still_gives_chunks() -> None:
    chunked = chunk_file("broken.py", "def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    assert any(c.symbol == "ok" for c in chunked.chunks)


def test_a_message_built_from_pieces_is_one_literal() -> None:
    python = (
        'def fail(self):\n    raise KeyError(f"{self.obj!r} has no"\n                   f" attribute {self.name!r}")\n'
    )
    assert chunk_file("pkg/runtime.py", python).chunks[0].strings == ("{self.obj!r} has no attribute {self.name!r}",)
    javascript = (
        "function lookup(name, dirs) {\n"
        "  throw new Error('Failed to lookup view \"' + name + '\" in views ' + dirs.join(' and the '));\n"
        "}\n"
    )
    # a non-literal operand stands where a placeholder would; literals inside it are kept on their own
    assert set(chunk_file("lib/view.js", javascript).chunks[0].strings) == {
        "Failed to lookup view {} in views {}",
        " and the ",
    }


def test_docstrings_and_directives_are_not_message_literals() -> None:
    python = (
        '"""Module docs that say how the parser works."""\n\n\n'
        "def parse(text):\n"
        '    """Parse the text and raise when a block is defined twice."""\n'
        '    "a bare string statement documents too"\n'
        '    raise ValueError(f"block {text!r} defined twice")\n'
    )
    chunked = chunk_file("pkg/parser.py", python)
    (parse,) = [c for c in chunked.chunks if c.symbol == "parse"]
    assert parse.strings == ("block {text!r} defined twice",)  # the docstring stays in the text, not the messages
    assert "raise when a block is defined twice" in parse.content
    assert all("Module docs" not in s for c in chunked.chunks for s in c.strings)
    javascript = "'use strict';\n\nfunction fail(name) {\n  throw new Error('No such command ' + name);\n}\n"
    assert [s for c in chunk_file("lib/cmd.js", javascript).chunks for s in c.strings] == ["No such command {}"]


def test_a_minified_line_gives_each_function_its_own_text() -> None:
    text = "// bundled\nvar q=" + ";".join(f"function mini{i}(){{return {i}}}" for i in range(2000)) + ";\n"
    chunks = chunk_file("bundle.min.js", text).chunks
    by_symbol = {c.symbol: c for c in chunks}
    assert by_symbol["mini1999"].content == "function mini1999(){return 1999}"
    assert by_symbol["mini7"].start_line == by_symbol["mini7"].end_line == 2
    assert sum(len(c.content) for c in chunks) < 2 * len(text)  # not one copy of the line per function


def test_a_definition_sharing_its_line_with_a_little_code_keeps_the_line() -> None:
    text = "x = 1; def f(): return 2\n"
    (f,) = [c for c in chunk_file("m.py", text).chunks if c.symbol == "f"]
    assert f.content == "x = 1; def f(): return 2"
