"""The committed type stubs are what stubgen.py writes from the module, and they parse."""

import ast
import sys
from pathlib import Path

import calib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import stubgen  # noqa: E402


def test_stubs_are_current():
    committed = (ROOT / "python" / "calib" / "__init__.pyi").read_text()
    assert committed == stubgen.render(), "run: python crates/calib-py/stubgen.py"
    ast.parse(committed)


def test_every_public_name_has_a_stub():
    tree = ast.parse((ROOT / "python" / "calib" / "__init__.pyi").read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {t.target.id for t in tree.body if isinstance(t, ast.AnnAssign)}
    missing = [n for n in calib.__all__ if n not in names]
    assert not missing, missing
