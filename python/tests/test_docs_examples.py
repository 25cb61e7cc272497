"""The documentation's examples run: every fenced block of README.md and docs/*.md whose info string
is ``python runnable`` is executed as it stands, in a fresh namespace, from a scratch directory
that sees the repository's tests/ (the sample data) as the repository's root does. Words after
``runnable``: ``gpu`` (skipped without a CUDA GPU), ``opencl`` (skipped without an OpenCL device),
``needs=a,b`` (skipped without those modules). And the C++ the user-facing pages show uses only
the installed API (the runtime behind the tool and the module is not installed)."""

import importlib.util
import os
import re
from pathlib import Path

import pytest

import multireduce as mr

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\S*)(.*)$")


def _blocks(language):
    """(page, first line, info words, code) of every fenced block of a language."""
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if m and m.group(1):
                start, words = i + 1, m.group(2).split()
                i += 1
                while i < len(lines) and not lines[i].startswith("```"):
                    i += 1
                if m.group(1) == language:
                    found.append((page, start, words, "\n".join(lines[start:i]) + "\n"))
            i += 1
    return found


def _runnable():
    params = []
    for page, line, words, code in _blocks("python"):
        if not words or words[0] != "runnable":
            continue
        marks = []
        for word in words[1:]:
            if word == "gpu" and not mr.cuda_available():
                marks.append(pytest.mark.skip(reason="the example needs a CUDA GPU"))
            elif word == "opencl" and mr._core.device_count("opencl") == 0:
                marks.append(pytest.mark.skip(reason="the example needs an OpenCL device"))
            elif word.startswith("needs="):
                missing = [m for m in word[6:].split(",") if importlib.util.find_spec(m) is None]
                if missing:
                    marks.append(pytest.mark.skip(reason=f"the example needs {', '.join(missing)}"))
            elif word not in ("gpu", "opencl"):
                raise ValueError(f"{page.name}:{line}: unknown word {word!r} after 'python runnable'")
        params.append(pytest.param(page, line, code, id=f"{page.relative_to(ROOT)}:{line}", marks=marks))
    return params


def test_the_pages_have_runnable_examples():
    pages = {p.values[0].name for p in _runnable()}
    assert {"README.md", "python.md", "colmap.md", "dask.md"} <= pages, pages


@pytest.mark.parametrize("page,line,code", _runnable())
def test_example_runs(page, line, code, tmp_path, monkeypatch):
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page}:{line}", "exec"), {"__name__": "__docs_example__"})  # noqa: S102


# the C++ of src/ (the runtime, the COLMAP writer, the tool's files) is not installed: the pages users read must not show it
_NOT_INSTALLED = re.compile(r"\bruntime::|#include\s+\"(runtime|colmap|cli|files|npy)/")


@pytest.mark.parametrize("page", [p for p in PAGES if p.name not in ("architecture.md", "tuning-log.md")],
                         ids=lambda p: p.name)
def test_cpp_examples_use_the_installed_api(page):
    for block_page, line, _, code in _blocks("cpp"):
        if block_page == page:
            assert not _NOT_INSTALLED.search(code), f"{page.name}:{line} shows the runtime's C++ API, which is not installed"


def test_the_fence_reader_reads_info_strings():
    assert FENCE.match("```python runnable gpu").group(1, 2) == ("python", " runnable gpu")
    assert os.path.isdir(ROOT / "tests" / "data")
