"""The README's Python example works as printed."""

import re
import shutil
import subprocess
import sys

from conftest import EXAMPLES, ROOT


def test_the_readme_python_example_runs(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks, "the README has a Python example"
    shutil.copytree(EXAMPLES / "incident-desk", tmp_path / "examples" / "incident-desk",
                    ignore=shutil.ignore_patterns(".gauntlet"))
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    verdict, pass_rate = done.stdout.split()
    assert verdict == "failed" and 0 < float(pass_rate) < 1
