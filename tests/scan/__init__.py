"""Tests of kvlint.scan."""
