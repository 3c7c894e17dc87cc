"""Development models of spark-git (not installed with the package): the merge queue over a simulated
day (scripts/sim_queue), its decision code the real one."""
