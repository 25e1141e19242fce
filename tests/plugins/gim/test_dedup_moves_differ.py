"""The seventh pass of the duplicate decision through the tools (real gateway, MCP SDK client, local embedder,
Qdrant Edge, SQLite), on ``holdout5``'s texts: a report failing on another value of a family that the master's
root cause lists joins it; look-alikes whose fixes do different things to the package both name (an opposite
swap of two distributions, a downgrade against the master's plain install) stay apart, while a reworded fix that
upgrades what the master installs still merges."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.gim.support import call, submission

pytestmark = pytest.mark.anyio


def actions(*steps: tuple[str, str, str]) -> list[dict[str, Any]]:
    return [{"order": i, "type": t, "command": c, "explanation": e} for i, (t, c, e) in enumerate(steps, start=1)]


async def submit(client: Any, error: str, cause: str, steps: list[dict[str, Any]], framework: str) -> dict[str, Any]:
    environment = {"language": "Python", "framework": framework, "os": "Linux"}
    return await call(client, "gim_submit_issue", submission(error, cause, actions=steps, environment=environment))


async def test_a_report_failing_on_another_value_of_a_listed_family_joins_the_master(gim: Any) -> None:
    """The fifth held-out part's miss: the master's cause names two flags, the report fails on a third."""
    steps = actions(("upgrade", 'pip install -U "pyOpenSSL>=23.2.0"', "a pyOpenSSL built for the current bindings"))
    master = await submit(
        gim,
        "AttributeError: module 'lib' has no attribute 'X509_V_FLAG_CA'",
        "The installed pyOpenSSL predates the installed cryptography: it references OpenSSL bindings "
        "(X509_V_FLAG_CA, X509_V_FLAG_NOTIFY_POLICY) that the newer cryptography no longer exports. Upgrade "
        "pyOpenSSL to a release matching cryptography.",
        steps,
        "pyopenssl",
    )
    report = await submit(
        gim,
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/certbot", line 33, in <module>\n'
        "    sys.exit(load_entry_point('certbot==1.21.0', 'console_scripts', 'certbot')())\n"
        '  File "/usr/lib/python3/dist-packages/OpenSSL/crypto.py", line 1579, in X509StoreFlags\n'
        "    CB_ISSUER_CHECK = _lib.X509_V_FLAG_CB_ISSUER_CHECK\n"
        "AttributeError: module 'lib' has no attribute 'X509_V_FLAG_CB_ISSUER_CHECK'",
        "pyOpenSSL is too old for the cryptography version beside it, so importing OpenSSL.crypto fails on a "
        "missing lib attribute.",
        steps,
        "pyopenssl",
    )
    assert report["merged"] is True
    assert report["master_issue_id"] == master["master_issue_id"]


OPENCV_ERROR = (
    "cv2.error: OpenCV(4.9.0) /io/opencv/modules/highgui/src/window.cpp:1272: error: (-2:Unspecified error) The "
    "function is not implemented. Rebuild the library with Windows, GTK+ 2.x or Cocoa support. If you are on Ubuntu "
    "or Debian, install libgtk2.0-dev and pkg-config, then re-run cmake or configure script in function "
    "'cvShowImage'"
)


async def test_an_opposite_swap_of_two_distributions_stays_apart(gim: Any) -> None:
    """One fix removes opencv-python-headless for opencv-python, the other the reverse: two causes."""
    master = await submit(
        gim,
        OPENCV_ERROR,
        "The installed OpenCV wheel is opencv-python-headless (often pulled in by another package), which is built "
        "without any GUI backend, so highgui functions such as imshow and namedWindow are not implemented. Replace "
        "it with opencv-python.",
        actions(
            ("command", "pip uninstall -y opencv-python-headless", "remove the build without GUI support"),
            ("install", "pip install opencv-python", "the OpenCV wheel with the highgui backend"),
        ),
        "opencv",
    )
    look_alike = await submit(
        gim,
        'ImportError: libGL.so.1: cannot open shared object file: No such file or directory\n  File "/app/worker.py", '
        "line 3, in <module>\n    import cv2",
        "The server image installed opencv-python, whose highgui links libGL; the image has no GUI libraries and "
        "needs none, so switch to opencv-python-headless.",
        actions(
            ("command", "pip uninstall -y opencv-python", "drop the GUI build"),
            ("install", "pip install opencv-python-headless", "the wheel without GUI dependencies"),
        ),
        "opencv",
    )
    assert look_alike["master_issue_id"] != master["master_issue_id"]


THEME_ERROR = "sphinx.errors.ThemeError: no theme named 'sphinx_rtd_theme' found (missing theme.conf?)"
THEME_CAUSE = (
    "conf.py selects the Read the Docs theme, but the sphinx-rtd-theme distribution is not installed in the "
    "environment that builds the docs (the docs requirements were not installed)."
)


async def submit_theme_master(client: Any) -> dict[str, Any]:
    steps = actions(("install", "pip install sphinx-rtd-theme", "the theme conf.py names"))
    return await submit(client, THEME_ERROR, THEME_CAUSE, steps, "sphinx")


async def test_a_downgrade_against_the_masters_plain_install_stays_apart(gim: Any) -> None:
    master = await submit_theme_master(gim)
    look_alike = await submit(
        gim,
        "Extension error:\nThe sphinx_rtd_theme extension used by this project needs at least Sphinx v5.0; it "
        "therefore cannot be built with this version.\n(sphinx-rtd-theme 2.0.0 installed, docs pinned to Sphinx 4.5)",
        "sphinx-rtd-theme is installed (2.0), but the docs pin Sphinx 4.5, which that theme release no longer "
        "supports; pin the theme to 1.x.",
        actions(("downgrade", 'pip install "sphinx-rtd-theme<2"', "a theme release that supports Sphinx 4")),
        "sphinx",
    )
    assert look_alike["master_issue_id"] != master["master_issue_id"]


async def test_a_reworded_fix_upgrading_what_the_master_installs_still_merges(gim: Any) -> None:
    master = await submit_theme_master(gim)
    reworded = await submit(
        gim,
        "Running Sphinx v7.2.6\nsphinx.errors.ThemeError: no theme named 'sphinx_rtd_theme' found (missing "
        "theme.conf?)\nmake: *** [Makefile:20: html] Error 2",
        "The Read the Docs theme that conf.py asks for was never installed into the docs build environment, so "
        "Sphinx cannot find sphinx_rtd_theme.",
        actions(("upgrade", "python -m pip install -U sphinx-rtd-theme", "install the theme conf.py selects")),
        "sphinx",
    )
    assert reworded["merged"] is True
    assert reworded["master_issue_id"] == master["master_issue_id"]
