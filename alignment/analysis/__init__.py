"""Numbers of a run and their formatting: statistics as pure functions (`stats`), best-of-N picks
(`bon`), the sections of report.md (`report`) and the one markdown table writer (`markdown`)."""
