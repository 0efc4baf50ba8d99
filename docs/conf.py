"""Sphinx configuration for the agcore_sync documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "agcore_sync"
author = "the agcore_sync developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
exclude_patterns = ["_build", "examples"]
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
