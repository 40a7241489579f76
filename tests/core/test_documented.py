"""Field descriptions written as attribute docstrings (dpexp.documented): read back as one line, in the fields and in
the JSON schema, also for a model with a forward reference; and the house rule that declarations are one line."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Literal

from pydantic import Field

from dpexp.components import Params
from dpexp.documented import Documented


class _Choice(Params):
    noise: Literal["laplace", "gaussian"] = "laplace"
    """laplace: pure epsilon-DP; gaussian: (epsilon, delta)-DP,
    analytic calibration"""
    omega: float = Field(1.0, gt=0)
    """threshold in stds"""
    short: int = Field(3, description="kept on the declaration's line")
    bare: int = 4


class _Later(Documented):
    child: "_Defined | None" = None
    """a field whose type is defined after this class,
    wrapped over two lines"""


class _Defined(Documented):
    x: int = 0


def test_wrapped_docstring_reads_as_one_line():
    f = _Choice.model_fields
    assert f["noise"].description == "laplace: pure epsilon-DP; gaussian: (epsilon, delta)-DP, analytic calibration"
    assert f["omega"].description == "threshold in stds"
    assert f["short"].description == "kept on the declaration's line"
    assert f["bare"].description is None
    assert f["omega"].metadata and f["noise"].default == "laplace"


def test_schema_holds_the_one_line_descriptions():
    props = _Choice.model_json_schema()["properties"]
    assert props["noise"]["description"] == _Choice.model_fields["noise"].description
    later = _Later.model_json_schema()["properties"]["child"]["description"]
    assert later == "a field whose type is defined after this class, wrapped over two lines"


def test_params_stay_strict_and_frozen():
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError):
        _Choice(unknown=1)
    with pytest.raises(pydantic.ValidationError):
        _Choice().noise = "gaussian"


def _multi_line_field_declarations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for st in cls.body:
                if isinstance(st, ast.AnnAssign) and st.value is not None and st.end_lineno > st.lineno:
                    found.append(f"{path}:{st.lineno}")
    return found


def test_house_rule_declarations_are_one_line():
    """A field declared over several lines hides its constraints in the wrapping: the description goes below."""
    root = Path(__file__).resolve().parents[2] / "dpexp"
    assert _multi_line_field_declarations(root) == []


def test_the_rule_check_finds_a_wrapped_declaration(tmp_path):
    (tmp_path / "m.py").write_text('class P:\n    a: int = Field(\n        1, description="x")\n')
    assert _multi_line_field_declarations(tmp_path) == [f"{tmp_path / 'm.py'}:2"]
