"""spark-git: a git-native worktree coordinator for teams of AI coding agents."""

__version__ = "0.1.0"
