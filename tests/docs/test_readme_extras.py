"""README's list of optional extras names every extra of setup.cfg (but ``test``), and nothing else."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_lists_every_extra_of_setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    extras = set(config["options.extras_require"]) - {"test"}
    readme = (ROOT / "README.rst").read_text("utf-8")
    after = readme.split("Optional extras\n---------------\n", 1)[1]
    section = re.split(r"\n[^\n]+\n-{3,}\n", after, maxsplit=1)[0]  # up to the next section's title
    listed = set(re.findall(r"^- ``([\w-]+)``:", section, re.MULTILINE))

    assert listed == extras
