"""`agent run`: spark-git starts an agent's client, briefs it and files what it answers."""
