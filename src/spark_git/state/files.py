"""State files on disk: written temp -> fsync -> rename, created exclusively with full content, read
into pydantic models with corruption reported by path."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from spark_git.core.errors import CorruptState

M = TypeVar("M", bound=BaseModel)


def _dump(data: BaseModel | dict[str, Any]) -> bytes:
    obj = data.model_dump(mode="json", by_alias=True) if isinstance(data, BaseModel) else data
    return (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode()


def _write_temp(path: Path, payload: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: BaseModel | dict[str, Any]) -> None:
    """Readers see the old file or the new one, never a mix; a crash leaves at most a stray temp file."""
    tmp = _write_temp(path, _dump(data))
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str) -> None:
    """write_atomic for a text document (task.md, settings files)."""
    tmp = _write_temp(path, text.encode())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def create_exclusive(path: Path, data: BaseModel | dict[str, Any]) -> bool:
    """Creates `path` with its full content, atomically, only if it does not exist. False if it did.

    link(2) of a complete, fsynced temp file is both create-exclusive and all-or-nothing, so a racing
    reader never sees an empty or half-written lock.
    """
    tmp = _write_temp(path, _dump(data))
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)
    return True


def read_model(path: Path, model: type[M]) -> M:
    """Raises FileNotFoundError if absent, CorruptState (with the path) if unreadable."""
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorruptState(str(path), f"not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise CorruptState(str(path), "expected a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        fields = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in e.errors())
        raise CorruptState(str(path), fields) from e


def read_optional(path: Path, model: type[M]) -> M | None:
    try:
        return read_model(path, model)
    except FileNotFoundError:
        return None
