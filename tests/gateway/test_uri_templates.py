"""RFC 6570 templates matched against URIs (:mod:`gateway.uri_templates`)."""

from __future__ import annotations

import pytest

from gateway.uri_templates import UriTemplate


@pytest.mark.parametrize(
    ("template", "uri", "values"),
    [
        ("gim://issues/{issue_id}/stats", "gim://issues/abc/stats", {"issue_id": "abc"}),
        ("gim://issues/{issue_id}/stats", "gim://issues/a/b/stats", None),
        ("x://{a}", "x://a/b", None),
        ("x://{a,b}", "x://1,2", {"a": "1", "b": "2"}),
        ("x://{+rest}", "x://a/b/c", {"rest": "a/b/c"}),
        ("x://files{/path*}", "x://files/a/b.txt", {"path": "a/b.txt"}),
        ("x://files{/path*}", "x://files", {}),
        ("x://files{/dir}/end", "x://files/a/end", {"dir": "a"}),
        ("x://search{?q,limit}", "x://search?limit=3&q=a%20b", {"q": "a b", "limit": "3"}),
        ("x://search{?q,limit}", "x://search", {}),
        ("x://search{?q}", "x://search?q=1&other=2", {"q": "1"}),
        ("x://s{?q}{&page}", "x://s?q=1&page=2", {"q": "1", "page": "2"}),
        ("x://f{.ext}", "x://f.json", {"ext": "json"}),
        ("x://m{;v}", "x://m;v=2", {"v": "2"}),
        ("x://d{#frag}", "x://d#top", {"frag": "top"}),
        ("x://{code:3}", "x://abc", {"code": "abc"}),
        ("x://a.b/{x}", "x://aXb/1", None),  # the template's own text is literal, dots included
        ("x://search{?q}", "x://search?q=c++", {"q": "c++"}),  # a plus is a plus
        ("x://{name}{.ext}", "x://file.tar.gz", {"name": "file.tar", "ext": "gz"}),
        ("x://{+path}{?q}", "x://a/1?q=2", {"path": "a/1", "q": "2"}),
        ("x://f{/path*}{?v}", "x://f/a/b?v=1", {"path": "a/b", "v": "1"}),
    ],
)
def test_a_uri_matches_as_its_template_expands(template: str, uri: str, values: dict[str, str] | None) -> None:
    assert UriTemplate(template).match(uri) == values
