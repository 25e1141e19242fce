"""What a fix does to each package it names (:mod:`gateway_plugins.gim.moves`), on fixes written as reporters
write them: the same upgrade, downgrade or pin under other package managers and spellings agrees; opposite
moves, disjoint versions, other variants of a distribution, plain installs and an installer upgrading itself do
not."""

from __future__ import annotations

import pytest

from gateway_plugins.gim.commands import named_packages
from gateway_plugins.gim.evidence import canonical_package
from gateway_plugins.gim.moves import (
    DOWN,
    INSTALL,
    REMOVE,
    UP,
    Move,
    fix_moves,
    moves_differ,
    removes_what_other_installs,
    same_move,
    specifier,
)
from tests.plugins.gim.test_dedup_evidence import fix


def moves(*actions: tuple[str, str, str], working: dict[str, str] | None = None) -> frozenset[Move]:
    return fix_moves(fix(*actions, versions=working))


BLACK_PIP = moves(
    ("upgrade", 'pip install -U "black>=22.3.0"', "black 22.3.0 no longer imports click._unicodefun"),
    working={"black": ">=22.3.0"},
)


def test_the_same_upgrade_under_another_manager_and_spelling_agrees() -> None:
    """``holdout4``'s reworded black fix: poetry's caret range meets pip's lower bound."""
    poetry = moves(("upgrade", 'poetry add --group dev "black@^22.3"', "bump the dev dependency"))
    assert same_move(poetry, BLACK_PIP)
    assert {(m.package, m.kind, str(m.versions)) for m in poetry} == {("black", UP, "<23,>=22.3")}


def test_an_upgrade_never_agrees_with_a_downgrade_of_the_same_package() -> None:
    down = moves(("downgrade", 'pip install "black<22"', "keep the old formatting"))
    assert not same_move(down, BLACK_PIP)


def test_disjoint_versions_do_not_agree_even_in_one_direction() -> None:
    below = moves(("downgrade", 'pip install "ruamel.yaml<0.18"', "keep load()"))
    reworded = moves(("downgrade", 'poetry add "ruamel.yaml@~0.17.40"', "stay on 0.17"))
    newer_pin = moves(("downgrade", 'pip install "ruamel.yaml==0.18.6"', "the release before the regression"))
    assert same_move(below, reworded)
    assert not same_move(below, newer_pin)


def test_conda_pins_are_read() -> None:
    conda = moves(("downgrade", "conda install -c conda-forge moviepy=1.0.3", "the last 1.x"))
    pip = moves(("downgrade", 'pip install "moviepy<2.0"', "keeps moviepy.editor"))
    upgrade = moves(("upgrade", 'pip install -U "moviepy>=2.0"', "the 2.x API"))
    assert same_move(conda, pip)
    assert not same_move(conda, upgrade)


def test_another_variant_of_a_distribution_is_another_move() -> None:
    """opencv-python and opencv-python-headless are one library (``cv2``) but two distributions."""
    full = moves(("install", 'pip install "opencv-python==4.9.0.80"', "the GUI build"))
    headless = moves(("install", 'pip install "opencv-python-headless==4.9.0.80"', "the server build"))
    assert {m.package for m in full | headless} == {"cv2"}
    assert not same_move(full, headless)
    again = moves(("install", "python -m pip install --force-reinstall opencv-python==4.9.0.80", "GUI build"))
    assert same_move(full, again)


def test_plain_installs_and_removals_are_not_specific_moves() -> None:
    """Every fix of "X is missing" installs X, whatever made it missing."""
    plain = moves(("install", "pip install scikit-learn", "install the package"))
    assert {(m.kind, m.versions) for m in plain} == {(INSTALL, None)}
    assert not same_move(plain, moves(("command", "%pip install scikit-learn", "into the kernel")))
    removal = moves(("command", "pip uninstall -y fitz", "the unrelated package"))
    assert {m.kind for m in removal} == {REMOVE}
    assert not same_move(removal, removal)


def test_an_installer_moving_itself_is_no_move() -> None:
    hygiene = moves(("upgrade", "python -m pip install --upgrade pip", "a current pip"))
    assert hygiene == frozenset()
    assert [n.itself for n in named_packages("npm install -g npm@latest", canonical_package)] == [True]


def test_the_action_type_gives_the_direction_a_bare_pin_leaves_open() -> None:
    pinned = moves(("downgrade", 'pip install "GDAL==3.4.1"', "bindings matching libgdal 3.4.1"))
    assert {(m.kind, str(m.versions)) for m in pinned} == {(DOWN, "==3.4.1")}


@pytest.mark.parametrize(
    ("op", "version", "expected"),
    [
        ("@", "^22.3", "<23,>=22.3"),
        ("@", "^0.17", "<0.18,>=0.17"),
        ("@", "~0.17.40", "<0.18,>=0.17.40"),
        ("@", "7.1.0", "==7.1.0"),
        ("=", "1.0.3", "==1.0.3.*"),
        (">=", "3.20,<4", "<4,>=3.20"),
        ("@", "latest", None),
        ("@", "v1-beta", None),
    ],
)
def test_specifiers_of_each_manager(op: str, version: str, expected: str | None) -> None:
    found = specifier(op, version)
    assert (None if found is None else str(found)) == expected


def test_a_range_with_both_bounds_has_no_direction_of_its_own() -> None:
    """``"elasticsearch>=7,<8"`` says which versions, not which way: the action's type (a downgrade) decides."""
    named = named_packages('pip install "elasticsearch>=7,<8"', canonical_package)
    assert [(n.package, n.direction) for n in named] == [("elasticsearch", None)]
    ranged = moves(("downgrade", 'pip install "elasticsearch>=7,<8"', "a client matching the 7.x server"))
    pinned = moves(("downgrade", "pip install elasticsearch==7.17.9", "same major as the cluster"))
    assert {m.kind for m in ranged} == {DOWN} and same_move(ranged, pinned)
    assert [n.direction for n in named_packages('pip install "requests>=2.31"', canonical_package)] == [UP]
    assert [n.direction for n in named_packages('pip install "requests<2.32"', canonical_package)] == [DOWN]


MARSHMALLOW_DOWN = moves(
    ("downgrade", 'pip install "marshmallow<4"', "keeps the missing=/default= arguments"),
    working={"marshmallow": ">=3.13,<4"},
)


def test_fixes_doing_different_things_to_one_package_differ() -> None:
    """``holdout5``'s own-fix look-alikes: up against down, a downgrade against a plain install, opposite swaps."""
    up = moves(("upgrade", 'pip install -U "marshmallow>=3.13"', "the release that introduced load_default"))
    assert moves_differ(up, MARSHMALLOW_DOWN) and moves_differ(MARSHMALLOW_DOWN, up)
    theme = moves(("install", "pip install sphinx-rtd-theme", "the theme conf.py names"))
    older = moves(("downgrade", 'pip install "sphinx-rtd-theme<2"', "a theme release for Sphinx 4"))
    assert moves_differ(older, theme) and moves_differ(theme, older)
    headless = moves(
        ("command", "pip uninstall -y opencv-python", "drop the GUI build"),
        ("install", "pip install opencv-python-headless", "the wheel without GUI dependencies"),
    )
    full = moves(
        ("command", "pip uninstall -y opencv-python-headless", "remove the build without GUI support"),
        ("install", "pip install opencv-python", "the wheel with the highgui backend"),
    )
    assert removes_what_other_installs(headless, full) == "cv2"
    assert moves_differ(headless, full)


def test_rewordings_of_one_fix_do_not_differ() -> None:
    """An upgrade is what a plain install does too (both get a current release); a removal followed by a
    reinstall of the same distribution is no swap; the same downgrade under two spellings agrees."""
    theme = moves(("install", "pip install sphinx-rtd-theme", "the theme conf.py names"))
    newest = moves(("upgrade", "pip install -U sphinx-rtd-theme", "the current theme"))
    assert not moves_differ(newest, theme) and not moves_differ(theme, newest)
    rebuilt = moves(
        ("command", "pip uninstall -y pycurl", "remove the wheel built against the other SSL library"),
        ("install", "PYCURL_SSL_LIBRARY=openssl pip install --no-cache-dir --compile pycurl", "rebuild for OpenSSL"),
    )
    plain = moves(("install", "pip install pycurl", "reinstall"))
    assert removes_what_other_installs(rebuilt, plain) is None and not moves_differ(rebuilt, plain)
    conda = moves(("downgrade", 'conda install "marshmallow=3.20"', "stay on 3.x"))
    assert not moves_differ(conda, MARSHMALLOW_DOWN)
