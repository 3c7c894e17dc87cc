"""`install`/`uninstall` for an adapter whose hooks live in a Claude-shaped settings file, written once
and mixed into each adapter. Standard library at import (the hook imports every adapter); the file
I/O (clients/settings.py, pydantic) only when a hook is installed or removed."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from spark_git.clients.jsonhooks import Wanted
    from spark_git.clients.settings import HooksData


class HooksInSettings:
    """`install`/`uninstall` of an adapter whose hooks live in a Claude-shaped settings file: written
    once here, mixed into each adapter (it brings `name`, `settings_files()` and `wanted()`)."""

    name: str

    def settings_files(self) -> dict[str, Path]:
        raise NotImplementedError

    def wanted(self) -> list[Wanted]:
        raise NotImplementedError

    def install(self, root: Path, scope: str = "project") -> HooksData:
        """spark-git's hooks merged into the settings file (nothing else dropped); idempotent."""
        from spark_git.clients import settings  # pydantic: only `hooks install|uninstall` pay for it

        return settings.install_file(settings.scope_path(root, self.name, self.settings_files(), scope), scope, self.name, self.wanted())

    def uninstall(self, root: Path, scope: str = "project") -> HooksData:
        """Only spark-git's entries removed from the settings file."""
        from spark_git.clients import settings

        return settings.uninstall_file(settings.scope_path(root, self.name, self.settings_files(), scope), scope, self.name)
