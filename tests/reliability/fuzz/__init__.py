"""The property fuzzer of every registered variant and head: what it draws (fuzz_cases.py), the properties
and the nightly driver (fuzz_variants.py: ``python -m tests.reliability.fuzz.fuzz_variants --help``), and its
results (RESULTS.md). The CI sample is tests/reliability/test_fuzz_variants.py."""
