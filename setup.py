"""Packaging that pyproject.toml cannot express: the top-level ``formations/`` folder of the
repository installs as ``wingman_actors.formations``, so the wheel adds no generic
top-level package to site-packages. Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    # Namespace-aware, as pyproject's automatic discovery is: a folder without __init__.py
    # (wingman_actors/actors) is a package too.
    packages=[
        *find_namespace_packages(include=["wingman_actors", "wingman_actors.*"], exclude=["*.__pycache__"]),
        "wingman_actors.formations",
    ],
    package_dir={"wingman_actors.formations": "formations"},
    # the run viewer's page and assets (/ui/), its vendored libraries with their licences, ship in
    # the wheel: a user needs no Node.js, no CDN
    package_data={"wingman_actors": ["py.typed"], "wingman_actors.formations": ["data/*.pdf"],
                  "wingman_actors.server.ui": ["*.html", "*.js", "*.css", "vendor/*.mjs", "vendor/LICENSE.*",
                                               "vendor/README.md"]},
)
