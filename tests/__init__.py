"""The test suite; it mirrors the package (tests/models/<variant>, tests/modules, ...)."""
