"""Start-up shortcuts give what the long way gives: the default config built without validation,
and the CLI path's stand-in for pydantic's plugin loader."""

from __future__ import annotations

import gc
import importlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from spark_git.core.config import Config, TopLevel, _sections, defaults, validated


def test_the_default_config_is_what_validation_gives() -> None:
    built, validated = defaults(), Config()
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.risk.high is not defaults().risk.high  # fresh lists each time, like default_factory


def test_the_cli_path_scans_no_pydantic_plugins_and_leaves_the_environment_alone() -> None:
    code = (
        "import os, sys\n"
        "before = dict(os.environ)\n"
        "from spark_git.__main__ import _without_pydantic_plugins\n"
        "_without_pydantic_plugins()\n"
        "from spark_git.core.config import Config\n"
        "Config.model_validate({'protocol': 'light'})\n"
        "assert 'importlib.metadata' not in sys.modules, 'plugin scan ran'\n"
        "assert dict(os.environ) == before, 'the environment changed'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_config_section_is_validated_for_the_defaults() -> None:
    built = defaults()
    for name in type(built).model_fields:
        value = getattr(built, name)
        assert value == getattr(Config(), name)
        assert type(value) is type(getattr(Config(), name)), name  # sections are models, not dicts


def test_no_model_field_uses_the_builtin_list_as_default_factory() -> None:
    """pydantic inspects a default factory's signature when it builds a schema; for the builtin `list`
    that parses its text signature with `ast` on every command's start-up: core.model.empty_list instead."""
    import inspect

    import spark_git
    from spark_git.core.model import Model, empty_list

    for path in sorted(Path(spark_git.__file__).parent.rglob("*.py")):
        importlib.import_module("spark_git." + ".".join(path.relative_to(Path(spark_git.__file__).parent).with_suffix("").parts).removesuffix(".__init__"))
    seen, found = 0, []
    stack: list[type[Model]] = [Model]
    while stack:
        cls = stack.pop()
        stack += cls.__subclasses__()
        for name, f in cls.model_fields.items():
            if f.default_factory is list:
                found.append(f"{cls.__module__}.{cls.__qualname__}.{name}")
            seen += f.default_factory is empty_list
    assert seen and not found, f"use core.model.empty_list: {found}"
    assert inspect.isfunction(empty_list)


def _outcome(validate: Callable[[dict[str, Any]], Config], data: dict[str, Any]) -> object:
    try:
        got = validate(data)
    except ValidationError as e:
        return e.errors(include_url=False, include_context=False)
    return got.model_dump(), got.model_fields_set, {n: getattr(got, n).model_fields_set for n in _sections()}


@pytest.mark.parametrize("data", [
    {},
    {"protocol": "light"},
    {"protocol": "light", "gates": {"build": "make", "reports": {"final": {"junit": "j.xml"}}}, "risk": {"high": ["x/*"]}},
    {"task_branch_template": "t/{task}", "queue": {"batch_max": 2}, "sync": {}},
    {"protocol": "fast"},  # a bad top-level value
    {"gates": {"timeout_s": "10"}, "ports": {"start": 5, "end": 4}},  # bad values in two sections
    {"gates": 5, "nope": 1},  # a section that is not a table, an unknown key
    {"task_branch_template": "{task}", "agent_branch_template": "{task}/{agent}"},  # the model validator
    {"queue": {"batch_max": 2, "extra": 1}, "protocol": "light"},
])
def test_a_config_validated_by_section_is_what_the_whole_model_gives(data: dict[str, Any]) -> None:
    assert _outcome(validated, data) == _outcome(Config.model_validate, data)


def test_config_adds_only_sections_to_its_top_level_keys() -> None:
    """`validated` checks the top-level keys with `TopLevel` and each section with its own model: a
    validator or a plain key written on `Config` itself would be skipped there."""
    decorators = Config.__pydantic_decorators__
    assert all(not getattr(decorators, kind) or getattr(decorators, kind).keys() == getattr(TopLevel.__pydantic_decorators__, kind).keys()
               for kind in ("validators", "field_validators", "root_validators", "model_validators", "field_serializers", "model_serializers"))
    assert set(Config.model_fields) == set(TopLevel.model_fields) | set(_sections())


def test_the_cli_process_freezes_its_imports_and_collects_again_an_in_process_call_leaves_the_gc_alone(tmp_path: Path) -> None:
    """__main__.py: no collection while the modules load, then they are frozen and collection is back
    on for the command; a caller running main(argv) in its own process keeps its gc as it was."""
    code = (
        "import gc, sys\n"
        "from spark_git.__main__ import main\n"
        "sys.argv = ['spark-git', 'schema', 'config']\n"
        "rc = main()\n"
        "assert rc == 0 and gc.isenabled() and gc.get_freeze_count() > 1000, (rc, gc.isenabled(), gc.get_freeze_count())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, stdout=subprocess.DEVNULL)
    from fixtures.repo import spark

    frozen = gc.get_freeze_count()
    assert spark(tmp_path, "schema", "config", process=False).returncode == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen
