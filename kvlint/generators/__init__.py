"""Generators of kvlint's shipped data and docs (run by developers, never at lint time)."""
