"""Entry point. Answers `--version` without importing anything heavy, makes `--json` global
(accepted anywhere on the command line), then hands over to the typer app with only the invoked
command's module loaded."""

from __future__ import annotations

import gc
import os
import signal
import sys
import types

from spark_git.core.errors import INTERRUPTED, INTERRUPTED_MESSAGE, CtrlC, Interrupted


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    before = _ctrl_c_raises_interrupted()
    try:
        return _main(args, whole_process=argv is None)
    except (Interrupted, KeyboardInterrupt):  # one envelope under --json, wherever Ctrl-C struck
        _say_interrupted("--json" in args[: args.index("--") if "--" in args else len(args)])
        return INTERRUPTED
    finally:
        if before is not None:
            signal.signal(signal.SIGINT, before)  # type: ignore[arg-type]  # what signal.signal gave back


def _ctrl_c_raises_interrupted() -> object:
    try:
        return signal.signal(signal.SIGINT, CtrlC())
    except ValueError:  # not the main thread (an embedding caller): Ctrl-C stays theirs
        return None


def _say_interrupted(json_mode: bool) -> None:
    if json_mode:
        import json  # here, not at the top: every import before main() is time a Ctrl-C ends the way Python's own does

        env = {"status": "FAIL", "summary": INTERRUPTED_MESSAGE, "task": None, "data": {"error": INTERRUPTED_MESSAGE}, "next": ["spark-git doctor"],
               "data_schema": "error"}
        print(json.dumps(env), flush=True)
    else:
        sys.stderr.write(f"error: {INTERRUPTED_MESSAGE}\n")


def _main(args: list[str], whole_process: bool = False) -> int:
    if args in (["--version"], ["-V"]):
        from spark_git import __version__

        print(f"spark-git {__version__}")
        return 0
    if args[:2] == ["hook", "pre-tool-use"]:
        # Fast path: runs before every tool call of an agent, so no typer/pydantic/GitPython/rich.
        from spark_git.clients.hooks import main as hook_main

        rc = hook_main(args[1:])
        if rc >= 0:
            return rc
    if args[:1] == ["statusline"]:
        # Fast path too: Claude Code runs it after every assistant message.
        from spark_git.clients.statusline import main as statusline_main

        rc = statusline_main(args)
        if rc >= 0:
            return rc
    # Hooks and gates must never act on a repository other than the one they were asked about.
    from spark_git.core.gittypes import GIT_LOCATION_ENV

    for var in GIT_LOCATION_ENV:
        os.environ.pop(var, None)
    end = args.index("--") if "--" in args else len(args)
    json_mode = "--json" in args[:end]
    if json_mode:
        args = [a for a in args[:end] if a != "--json"] + args[end:]
    args = _directory_first(args)
    _without_pydantic_plugins()
    if whole_process:
        # No garbage collection while the modules load: they allocate objects that live as long as the
        # process, and every collection would walk them all again. cli/entry.py freezes them (out of
        # every later collection) and turns collection back on before the command runs. Not for an
        # in-process caller (tests): its own garbage would be frozen with them.
        gc.disable()
    try:
        from spark_git.cli.entry import run

        return run(args, json_mode, freeze_imports=whole_process)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        if whole_process:
            gc.enable()


def _directory_first(args: list[str]) -> list[str]:
    """`-C DIR` is a root option accepted anywhere before `--` (`spark-git status -C DIR`), as --json is:
    moved to the front."""
    end = args.index("--") if "--" in args else len(args)
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < end:
        if args[i] == "-C" and i + 1 < end:
            front += args[i : i + 2]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    return front + rest + args[end:]


def _without_pydantic_plugins() -> None:
    """The CLI loads no pydantic plugins. pydantic's plugin loader, on the first model build,
    imports importlib.metadata and scans every installed distribution's entry points (10-20 ms of
    a command's start-up); a loader that finds none stands in for it. Unlike PYDANTIC_DISABLE_PLUGINS
    (which still pays the import), nothing leaks into the environment of git, gates or hooks."""
    name = "pydantic.plugin._loader"
    if name in sys.modules:
        return
    loader = types.ModuleType(name, "spark-git: no pydantic plugins on the CLI path")
    loader.get_plugins = tuple  # type: ignore[attr-defined]  # returns () like the real one with none installed
    sys.modules[name] = loader


if __name__ == "__main__":
    sys.exit(main())
