"""How a fix's commands are read (:mod:`gateway_plugins.gim.commands`): the packages an install-like command moves
under every common package manager's spelling, and what an action acts on (not the tool that runs it)."""

from __future__ import annotations

from gateway_plugins.gim.commands import DOWN, UP, action_objects, command_packages, installs_extra, system_package
from gateway_plugins.gim.evidence import canonical_package


def packages(command: str) -> list[tuple[str, str | None]]:
    return command_packages(command, canonical_package)


def test_python_installers_in_every_spelling_name_the_package() -> None:
    for command in (
        "pip install tf-keras",
        "python -m pip install tf-keras",
        "python3 -m pip install tf-keras",
        "uv pip install tf-keras",
        "uv add tf-keras",
        "poetry add --group dev tf-keras",
        "pdm add tf-keras",
        "pipx install tf-keras",
        "conda install -c conda-forge tf-keras",
    ):
        assert packages(command) == [("tf-keras", None)], command
    assert packages('uv add "bcrypt<4.1"') == [("bcrypt", DOWN)]
    assert packages('poetry add --group dev "black@^22.3"') == [("black", None)]
    assert packages("python -m pip install --upgrade flake8") == [("flake8", UP)]


def test_system_package_names_are_read_by_their_distributions_conventions() -> None:
    assert system_package("libpango-1.0-0") == "pango"
    assert system_package("portaudio19-dev") == "portaudio"
    assert system_package("libnss3") == "nss"
    assert system_package("python3-tk") == "tk"
    assert system_package("poppler-utils") == "poppler"
    assert system_package("libxcb-cursor0") == "xcb-cursor"
    assert system_package("graphviz") == "graphviz"
    apt = packages("sudo apt-get install -y libnss3 libxkbcommon0 portaudio19-dev")
    assert apt == [("nss", None), ("xkbcommon", None), ("portaudio", None)]
    assert packages("brew install portaudio") == [("portaudio", None)]
    assert packages("winget install graphviz") == packages("choco install graphviz") == [("graphviz", None)]
    # a Python package keeps its name: only system installers follow the distribution conventions
    assert packages("pip install libcst") == [("libcst", None)]


def test_an_action_acts_on_its_objects_not_on_its_tool() -> None:
    acted, removed = action_objects("gunicorn --timeout 120 app:app")
    assert "gunicorn" not in acted and "--timeout 120" in acted and removed == ""
    acted, removed = action_objects('python -m pip install -U "black>=22.3.0"')
    assert "pip" not in acted and "black" in acted
    acted, removed = action_objects("sudo apt-get install -y libnss3 && pip uninstall -y onnxruntime")
    assert "libnss3" in acted and "apt-get" not in acted and "sudo" not in acted
    assert "onnxruntime" in removed and "onnxruntime" not in acted
    acted, _ = action_objects("DEBIAN_FRONTEND=noninteractive apt-get install -y tzdata")
    assert acted.split() == ["-y", "tzdata"]


def test_an_extra_names_what_it_pulls_in() -> None:
    assert packages("pip install beautifulsoup4[lxml]") == [("lxml", None), ("bs4", None)]
    assert packages('uv add "fastapi[standard]>=0.110"') == [("standard", None), ("fastapi", UP)]


def test_an_install_of_an_extra_is_recognised() -> None:
    assert installs_extra("pip install 'pandas[parquet]'")
    assert installs_extra('uv add "fastapi[standard]"')
    assert not installs_extra("pip install pandas pyarrow")
    assert not installs_extra("echo '[boot] systemd=true' >> /etc/wsl.conf")
