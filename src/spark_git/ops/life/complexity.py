"""Complexity assessment (seed 002 §2): six signals scored from the task's text and the paths it
touches → LITE (0-1), ASK (2-3, default lite) or FULL (4+). `classify` shows it and suggests the
protocol; the human decides (`protocol` in the config), spark-git never switches on its own."""

from __future__ import annotations

import re

from spark_git.state.models import Complexity

# 002's keyword lists; components are 002's "frontend + backend + DB + infra".
COMPONENTS = {
    "frontend": ("frontend", "front-end", "ui", "react", "css", "browser"),
    "backend": ("backend", "back-end", "server", "endpoint"),
    "database": ("database", "db", "sql", "migration", "schema"),
    "infra": ("infra", "infrastructure", "docker", "kubernetes", "terraform", "deploy", "ci"),
}
SECURITY = ("auth", "authentication", "payment", "stripe", "pii", "personal data", "password", "token", "secret", "credential", "encrypt")
PERFORMANCE = ("real-time", "websocket", "sla", "latency", "performance", "cache", "optimization", "scale", "< 100ms", "< 1s")
INTEGRATION = ("api", "third-party", "webhook", "integration", "external service", "oauth", "stripe", "supabase", "firebase")
UNFAMILIAR = ("new framework", "never used", "unfamiliar", "learning", "blockchain", "web3", "machine learning", "ai model")
MAX_SCORE = 10


def _has(text: str, word: str) -> bool:
    # whole words, so "ui" does not fire inside "build" nor "ci" inside "special"
    return re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", text) is not None


def assess(text: str, paths: list[str]) -> Complexity:
    t = text.lower()
    score, signals = 0, []
    comps = [c for c, words in COMPONENTS.items() if any(_has(t, w) for w in words)]
    if len(comps) >= 2:
        score += 2 if len(comps) >= 3 else 1
        signals.append(f"{'Multiple' if len(comps) >= 3 else 'Two'} components: {', '.join(comps)}")
    if any(_has(t, w) for w in SECURITY):
        score += 2
        signals.append("Security-sensitive feature detected")
    if any(_has(t, w) for w in PERFORMANCE):
        score += 1
        signals.append("Performance requirements detected")
    integrations = sum(1 for w in INTEGRATION if _has(t, w))
    if integrations:
        score += 2 if integrations >= 2 else 1
        signals.append(f"Multiple external integrations ({integrations})" if integrations >= 2 else "External integration required")
    files = len(set(paths))
    if files >= 10:
        score += 2 if files >= 15 else 1
        signals.append(f"{'Large' if files >= 15 else 'Medium'} change: {files} files")
    if any(_has(t, w) for w in UNFAMILIAR):
        score += 1
        signals.append("Unfamiliar technology domain")
    rec = "LITE" if score <= 1 else "ASK" if score <= 3 else "FULL"
    return Complexity(score=score, max_score=MAX_SCORE, recommendation=rec, signals=signals,
                      suggested_protocol="full" if rec == "FULL" else "light")


def objective_text(task_md: str) -> str:
    """The `## Task Objective` section of task.md (what `start --from` put there), or ''."""
    m = re.search(r"^##\s+(Task\s+)?Objective\s*$(.*?)(?=^#{1,2}\s|\Z)", task_md, re.MULTILINE | re.DOTALL)
    return m.group(2) if m else ""
