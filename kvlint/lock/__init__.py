"""``kvlint lock``: the lock's format, the collection of locked models, the file on disk."""
