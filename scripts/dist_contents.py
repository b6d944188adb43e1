"""Check that the built wheel and sdist hold the library only: no tests, benchmarks,
examples, docs or eval data, and nothing the library needs left out.

    python scripts/dist_contents.py DIST_DIR

DIST_DIR holds one wheel and one sdist (`python -m build --outdir DIST_DIR`). Exit code 0
when both pass; otherwise every file that should not be there (or is missing) is printed,
and it exits 1. Uses only the standard library.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

# The package data the library reads at run time (pyproject.toml's package-data).
NEEDED = ("warmloop/py.typed", "warmloop/facts/profiles.json", "warmloop/facts/prices.json")
# What an sdist needs to build the wheel, besides the library and its egg-info.
SDIST_FILES = {"PKG-INFO", "README.md", "pyproject.toml", "setup.cfg", "LICENSE", "MANIFEST.in"}
WHERE = "pyproject.toml's [tool.setuptools.packages.find] and MANIFEST.in decide what goes in"


def one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"FAIL: expected one {pattern} in {dist}, found {len(found)}")
    return found[0]


def compiled(name: str) -> bool:
    return "__pycache__/" in name or name.endswith((".pyc", ".pyo"))


def wheel_problems(names: list[str]) -> list[str]:
    """Every entry outside `warmloop/` and the wheel's own .dist-info, and every needed
    file that is missing."""
    stray = [
        n
        for n in names
        if compiled(n) or not (n.startswith("warmloop/") or n.split("/")[0].endswith(".dist-info"))
    ]
    licence = [n for n in names if n.split("/")[0].endswith(".dist-info") and "LICENSE" in n]
    missing = [n for n in NEEDED if n not in names] + ([] if licence else ["LICENSE (dist-info)"])
    return [f"not library: {n}" for n in stray] + [f"missing: {n}" for n in missing]


def sdist_problems(names: list[str]) -> list[str]:
    """Every entry that is not the library, its egg-info or a file the build needs."""
    root = names[0].split("/")[0]
    inside = [n.removeprefix(f"{root}/") for n in names if n != root]
    stray = [
        n
        for n in inside
        if compiled(n)
        or not (
            n in SDIST_FILES
            or n in ("warmloop", "warmloop.egg-info")
            or n.startswith(("warmloop/", "warmloop.egg-info/"))
        )
    ]
    missing = [n for n in (*NEEDED, "pyproject.toml", "README.md", "LICENSE") if n not in inside]
    return [f"not library: {n}" for n in stray] + [f"missing: {n}" for n in missing]


def main(dist: Path) -> None:
    wheel = one(dist, "warmloop-*.whl")
    sdist = one(dist, "warmloop-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        wheel_names = archive.namelist()
    with tarfile.open(sdist) as archive:
        sdist_names = archive.getnames()
    failed = False
    for built, problems in (
        (wheel, wheel_problems(wheel_names)),
        (sdist, sdist_problems(sdist_names)),
    ):
        if problems:
            failed = True
            print(
                f"FAIL: {built.name} holds more or less than the library ({WHERE}):",
                file=sys.stderr,
            )
            for problem in problems:
                print(f"  {problem}", file=sys.stderr)
        else:
            print(f"ok: {built.name} holds the library only")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))
