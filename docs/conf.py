"""Sphinx configuration for the agcore_sync documentation.

Build (warnings are errors, as in the test suite), from the repository root::

    python -m pip install -e ".[docs]" && python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

import agcore_sync  # noqa: E402

project = "agcore_sync"
author = "the agcore_sync developers"
release = agcore_sync.__version__
version = release
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
exclude_patterns = ["_build", "examples"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
# The optional integrations' packages (extras ``redis``, ``rq``, ``celery``)
# are imported at the top of their contrib modules; autodoc imports those
# modules with stand-ins, so ``pip install -e ".[docs]"`` alone builds the
# whole reference with ``-W``.
autodoc_mock_imports = ["redis", "rq", "celery"]


def _resolve_top_level_name(app, env, node, contnode):
    """Link ``agcore_sync.X`` (or a bare ``X``) to the documented ``agcore_sync.<module>.X``.

    Every public name is re-exported by the package (``agcore_sync._EXPORTS``
    maps each to its module); the API pages document it where it is defined.
    A bare exported name in a docstring (``:class:`AgentError```) resolves the
    same way when its own module does not define it.
    """
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py":
        return None
    if target.startswith("agcore_sync."):
        target = target[len("agcore_sync."):]
    name, _, rest = target.partition(".")
    module = agcore_sync._EXPORTS.get(name)
    if module is None:
        return None
    full = f"{module}.{name}" + (f".{rest}" if rest else "")
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node.get("refdoc"), app.builder, node.get("reftype"), full, node, contnode)


def setup(app):
    app.connect("missing-reference", _resolve_top_level_name)
