"""Static analysis of Python model and engine code (ast only; scanned code is never run)."""
