"""One sub-package per variant: configuration_<variant>.py, modeling_<variant>.py, conversion.py."""
