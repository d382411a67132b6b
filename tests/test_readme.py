"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = (
    re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    if README.exists()
    else []
)


@pytest.mark.skipif(not README.exists(), reason="README.md not present (installed test run)")
@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{k}" for k in range(len(BLOCKS))])
def test_readme_example_runs(code, capsys):
    exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
