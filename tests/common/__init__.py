"""The shared testers and fixtures every part of the suite imports (``from tests.common.tiny_variants import ...``)."""
