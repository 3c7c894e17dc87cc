"""The merge queue: `complete` enqueues (a ref under refs/spark/queue/, created by compare-and-swap),
one process at a time drains (the "queue-drain" mutex): the longest run of ready tasks is applied
onto the base without a worktree, gated once in a scratch worktree and landed with one compare-and-
swap; a failing batch is bisected. Modules: checks, enqueue, candidate, gate, land, bisect, drain,
recover, show."""
