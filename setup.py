"""Packages for setuptools (everything else is in pyproject.toml).

The named configs stay at the repository's top level (``modeling_configs/``) and ship inside the
wheel as ``hf_variants/modeling_configs``, where ``hf_variants.models.named_configs`` finds them after a
``pip install``. pyproject.toml's ``packages.find`` cannot add a package that lives outside the
package tree, hence this file.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["hf_variants", "hf_variants.*"]), "hf_variants.modeling_configs"],
    package_dir={"hf_variants.modeling_configs": "modeling_configs"},
    package_data={
        "hf_variants.modeling_configs": ["*/config.json"],
        "hf_variants.metrics": ["evaluate_modules/*/*.py"],
    },
)
