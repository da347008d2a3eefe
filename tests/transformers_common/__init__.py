"""transformers' own common model tests run against our classes (harness.py, upstream.py)."""
