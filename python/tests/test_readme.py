"""The README's Python quickstart, executed as printed: the commands of its shell blocks in
order, in an empty folder, with the `gauntlet` and `python` of the environment the wheel under
test is installed in (so `pip install gauntlet-harness pytest` itself is not run again)."""

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from conftest import ROOT

QUICKSTART = (ROOT / "README.md").read_text().split("## Quickstart (Python)", 1)[1]
QUICKSTART = QUICKSTART.split("\n## ", 1)[0]


def commands():
    """The quickstart's shell lines, without their comments."""
    lines = []
    for block in re.findall(r"```shell\n(.*?)```", QUICKSTART, re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


def environment(tmp_path):
    """PATH with this environment's commands first, and `pytest` as this interpreter's."""
    shims = tmp_path / "bin"
    shims.mkdir()
    pytest = shims / "pytest"
    pytest.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pytest -p no:cacheprovider "$@"\n')
    pytest.chmod(0o755)
    path = os.pathsep.join([str(shims), str(Path(sys.executable).parent), os.environ["PATH"]])
    return dict(os.environ, PATH=path, NO_COLOR="1")


def test_the_quickstart_is_short_and_shows_the_agent_init_writes():
    body = QUICKSTART.strip().splitlines()
    assert len(body) + 1 <= 30, f"the quickstart has {len(body) + 1} lines"
    shown = re.findall(r"```python\n(.*?)```", QUICKSTART, re.S)
    assert len(shown) == 1
    written = (ROOT / "crates" / "gauntlet" / "src" / "init" / "python" / "agent.py").read_text()
    assert shown[0] in written


def test_the_quickstart_runs_as_printed(tmp_path):
    lines = commands()
    assert lines[0] == "pip install gauntlet-harness pytest"
    assert lines[-1] == "gauntlet view"
    env = environment(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    # Every line but the install and the viewer (a server until Ctrl-C, started below), in one
    # shell so that `cd` holds; each must succeed.
    script = "set -e\n" + "\n".join(f"echo '$ {line}'\n{line}" for line in lines[1:-1])
    done = subprocess.run(["sh", "-c", script], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: PASSED" in done.stdout, done.stdout
    assert "1 passed" in done.stdout, done.stdout
    suite = work / "my-suite"
    assert sorted(p.name for p in suite.glob("*.py")) == ["agent.py", "run.py", "test_agent.py"]
    # The command line the quickstart names runs the same agent.
    named = re.search(r"`(gauntlet run \. --agent python:agent:agent)`", QUICKSTART).group(1)
    done = subprocess.run(["sh", "-c", named], cwd=suite, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and "verdict: PASSED" in done.stdout, done.stdout + done.stderr
    # The viewer serves the runs the quickstart made (on a free port rather than the default
    # one, which a machine running tests may have taken).
    view = subprocess.Popen(["sh", "-c", lines[-1] + " --listen 127.0.0.1:0"], cwd=suite, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = json.loads(view.stdout.readline())
        with urllib.request.urlopen(started["url"], timeout=30) as page:
            assert page.status == 200
    finally:
        view.terminate()
        view.wait(timeout=30)
