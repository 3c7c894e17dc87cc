"""The one answer to "is the approved patch what would land": the approval of a task is for its patch,
and a landing onto a moved base keeps it only when the change the base receives is that same patch.
(The seam for approvals bound to another digest of the diff: swap this function.)"""

from __future__ import annotations

from spark_git.core.git import Git


def patch_unchanged(git: Git, onto: str, head: str, landed: str) -> bool:
    """True if `landed` (a commit whose first parent is `onto`) changes `onto` exactly as the task head
    changes the commit it forked from: the same patch (`--verbatim` patch id: every byte of the changed and context lines)."""
    return git.patch_id(onto, head) == git.patch_id(onto, landed)
