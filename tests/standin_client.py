"""The stand-in agent client of tests/test_extension_points.py: an adapter module like
clients/claude.py, registered by one line ("standin": "tests.standin_client:STANDIN"). Its events are
Claude-shaped; everything spark-git must know about its files is in FACTS. Standard library only at
module level, like every adapter (the hook imports it)."""

from __future__ import annotations

from pathlib import Path

from spark_git.clients.claude import CLAUDE
from spark_git.clients.facts import Facts
from spark_git.clients.jsonhooks import Wanted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from spark_git.clients.settings import HooksData

FACTS = Facts("standin", "Stand-in CLI", ".standin", {"project": ".standin/settings.json", "user": "~/.standin/settings.json"})
LINE = ("standin", "tests.standin_client:STANDIN")  # its registry line


class StandIn:
    name = FACTS.name
    facts = FACTS
    parse_event = staticmethod(CLAUDE.parse_event)
    render = staticmethod(CLAUDE.render)
    render_bad_event = staticmethod(CLAUDE.render_bad_event)
    session_start = staticmethod(CLAUDE.session_start)

    def settings_files(self) -> dict[str, Path]:
        return FACTS.settings_files()

    def wanted(self) -> list[Wanted]:
        return [Wanted("PreToolUse", "spark-git hook pre-tool-use --client standin", "Write|Edit|Bash")]

    def install(self, root: Path, scope: str = "project") -> HooksData:
        from spark_git.clients import settings

        return settings.install_file(settings.scope_path(root, self.name, self.settings_files(), scope), scope, self.name, self.wanted())

    def uninstall(self, root: Path, scope: str = "project") -> HooksData:
        from spark_git.clients import settings

        return settings.uninstall_file(settings.scope_path(root, self.name, self.settings_files(), scope), scope, self.name)


STANDIN = StandIn()
