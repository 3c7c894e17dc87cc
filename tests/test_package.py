"""The package people install (issue 14, item 1): one version, the metadata an index shows, the typed
marker, the licence, the changelog, README's Install and Supported platforms. CI (.ci/run) builds the
wheel and sdist, installs the wheel into a fresh venv and runs `spark-git --version` and the demo."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import spark_git

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_single_sourced() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "src/spark_git/__init__.py"
    assert metadata.version("spark-git") == spark_git.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", spark_git.__version__)


def test_metadata_an_index_shows() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == {"text": "MIT"} and "MIT License" in (ROOT / "LICENSE").read_text()
    classifiers = set(project["classifiers"])
    assert {"License :: OSI Approved :: MIT License", "Typing :: Typed", "Environment :: Console",
            "Operating System :: POSIX :: Linux"} <= classifiers
    assert project["requires-python"] == ">=3.11"
    assert {c for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)} >= {"Programming Language :: Python :: 3.11"}
    assert project["scripts"] == {"spark-git": "spark_git.__main__:main"}
    # [project.urls] is left out until the project has a public home: an invented address would be worse (docs/decisions.md)


def test_typed_marker_licence_and_changelog_are_shipped() -> None:
    assert (ROOT / "src/spark_git/py.typed").is_file()
    sdist = PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    assert {"LICENSE", "CHANGELOG.md", "README.md"} <= set(sdist)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert changelog.startswith("# Changelog") and re.search(r"^## (Unreleased|\d+\.\d+\.\d+)", changelog, re.M)


def test_readme_install_and_supported_platforms() -> None:
    readme = (ROOT / "README.md").read_text()
    # from a checkout until a release exists (issue 24: the package is not on PyPI), then the quick start
    install = readme.split("## Install\n", 1)[1].split("\n## Set-up", 1)[0]
    for needle in ("not on PyPI", "uv tool install .", "pipx install .", "--install-completion", "-h"):
        assert needle in install, needle
    assert "pip install spark-git" not in readme and "pipx install spark-git" not in readme
    platforms = install.split("### Supported platforms\n", 1)[1]
    for needle in ("Linux", "macOS", "/proc", "PR_SET_PDEATHSIG", "process group", "Windows"):
        assert needle in platforms, needle
