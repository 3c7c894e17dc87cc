"""Old home of load_task/save_task/updating/role_of (now ops/taskfile.py), `start` (ops/start.py) and
`agent add` (ops/agent_add.py). Kept only for modules not yet moved to those imports (ops/merge.py,
ops/doctor.py, protocol/machine.py); delete once none imports it."""

from spark_git.ops.agent_add import AgentAddData, add_agent  # noqa: F401
from spark_git.ops.start import StartData, WorktreeInfo, slug_from_title, start  # noqa: F401
from spark_git.ops.taskfile import load_task, role_of, save_task, updating  # noqa: F401
