"""What every command runs on: the quiet console and log (`console`), torch's CPU threads
(`threads`), strict JSON-lines input (`jsonl`) and whole runs fanned out on an executor (`fanout`)."""
