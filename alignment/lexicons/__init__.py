"""Keyword-judge lexicons: each task's words and rules, registered under its judge name."""
