"""``kvlint lint``: manifests found (discovery), read (extraction), linted (runner),
results kept (cache)."""
