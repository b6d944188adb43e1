"""What a release ships: the check `scripts/extras.sh` runs on the built wheel and sdist
(the library only, nothing it needs left out), the tools it builds and checks them with,
and the changelog. The real build, `twine check` and installs run in `scripts/extras.sh`."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "scripts" / "dist_contents.py"
LIBRARY = [
    "warmloop/__init__.py",
    "warmloop/py.typed",
    "warmloop/facts/profiles.json",
    "warmloop/facts/prices.json",
]
SDIST_BESIDES = ["PKG-INFO", "README.md", "pyproject.toml", "setup.cfg", "LICENSE"]


def build(dist: Path, wheel: list[str], sdist: list[str]) -> None:
    """A wheel and an sdist holding these files (each one line of text)."""
    with zipfile.ZipFile(dist / "warmloop-0.1.0-py3-none-any.whl", "w") as archive:
        for name in wheel:
            archive.writestr(name, "x\n")
    with tarfile.open(dist / "warmloop-0.1.0.tar.gz", "w:gz") as archive:
        for name in sdist:
            info = tarfile.TarInfo(f"warmloop-0.1.0/{name}")
            info.size = 2
            archive.addfile(info, io.BytesIO(b"x\n"))


def check(dist: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK), str(dist)], capture_output=True, text=True, check=False
    )


def released(
    extra_wheel: tuple[str, ...] = (), extra_sdist: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """The files of a good wheel and sdist, plus any extra ones."""
    dist_info = "warmloop-0.1.0.dist-info"
    wheel = [*LIBRARY, f"{dist_info}/METADATA", f"{dist_info}/licenses/LICENSE", *extra_wheel]
    sdist = [*LIBRARY, *SDIST_BESIDES, "warmloop.egg-info/PKG-INFO", *extra_sdist]
    return wheel, sdist


def test_a_wheel_and_sdist_holding_the_library_only_pass(tmp_path: Path) -> None:
    build(tmp_path, *released())
    result = check(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("holds the library only") == 2


def test_a_wheel_holding_tests_or_benchmark_data_fails_naming_each_file(tmp_path: Path) -> None:
    strays = ("tests/test_x.py", "benchmarks/framework_corpus/a.json", "warmloop/__pycache__/a.pyc")
    build(tmp_path, *released(extra_wheel=strays))
    result = check(tmp_path)
    assert result.returncode == 1
    for stray in strays:
        assert f"not library: {stray}" in result.stderr
    assert "warmloop-0.1.0-py3-none-any.whl holds more or less" in result.stderr
    assert "warmloop-0.1.0.tar.gz holds the library only" in result.stdout


def test_an_sdist_holding_examples_or_scripts_fails_naming_each_file(tmp_path: Path) -> None:
    strays = ("examples/workspace/config.toml", "scripts/test.sh", "docs/index.md")
    build(tmp_path, *released(extra_sdist=strays))
    result = check(tmp_path)
    assert result.returncode == 1
    for stray in strays:
        assert f"not library: {stray}" in result.stderr
    assert "warmloop-0.1.0.tar.gz holds more or less" in result.stderr


def test_a_wheel_without_the_package_data_or_licence_fails(tmp_path: Path) -> None:
    wheel, sdist = released()
    wheel = [n for n in wheel if not n.endswith(("prices.json", "LICENSE"))]
    build(tmp_path, wheel, sdist)
    result = check(tmp_path)
    assert result.returncode == 1
    assert "missing: warmloop/facts/prices.json" in result.stderr
    assert "missing: LICENSE (dist-info)" in result.stderr


def test_the_dev_extra_installs_the_tools_extras_sh_builds_and_checks_with() -> None:
    # scripts/test.sh installs `.[dev]` into .venv, and scripts/extras.sh runs both from it.
    extras_sh = (ROOT / "scripts" / "extras.sh").read_text(encoding="utf-8")
    assert ".venv/bin/python -m build " in extras_sh
    assert ".venv/bin/python -m twine " in extras_sh
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = {
        spec.split(">")[0].split("=")[0]
        for spec in pyproject["project"]["optional-dependencies"]["dev"]
    }
    assert {"build", "twine"} <= dev
    assert (ROOT / "LICENSE").is_file()
    assert pyproject["project"]["license-files"] == ["LICENSE"]


def test_the_changelog_opens_with_the_unreleased_changes() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = [line for line in changelog.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Unreleased"
    unreleased = changelog.split("## Unreleased", 1)[1].split("\n## ", 1)[0]
    assert "\n- " in unreleased
