"""Values checked at load: every number a loader reads from a file is finite, or the run stops with one line.

A NaN, an infinity or a non-numeric entry in a column a loader uses would flow into the rescaling, the statistics
and the released estimate (a min–max over a column with a NaN turns every value into NaN).  ``require_finite``
raises ``DataValueError`` — a ``UserError``: one line and exit code 2 from the CLI — naming the file, the data row
(1-based, the header not counted), its line in the file and the column.  Rows are dropped instead only where a
loader documents an option (or a convention of the data, such as GDSC's untested cell lines) that says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from dpexp.errors import DataValueError


def _describe(raw: object) -> str:
    if raw is None or (isinstance(raw, float) and np.isnan(raw)) or raw is pd.NA or raw is pd.NaT:
        return "a missing value (NaN)"
    if isinstance(raw, str) and not raw.strip():
        return "an empty value"
    try:
        v = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"a non-numeric value {str(raw)[:40]!r}"
    if np.isnan(v):
        return f"a missing value ({str(raw)[:20]})"
    return f"an infinite value ({str(raw)[:20]})"


def _raise(path: str | Path, row: int, line: int | None, column: str, raw: object, hint: str) -> None:
    where = f"row {row}" + (f" (line {line})" if line is not None else "")
    tail = f"; {hint}" if hint else ""
    raise DataValueError(f"{path}: {where}, column {column!r}: {_describe(raw)}; the loader needs a finite number "
                         f"there (fix or remove the row){tail}")


def require_finite(df: pd.DataFrame, columns: Iterable[str], path: str | Path, header_lines: int | None = 1,
                   hint: str = "", missing_ok: bool = False) -> None:
    """Raise ``DataValueError`` at the first entry of ``df[columns]`` (in row order) that is not a finite number.

    ``df`` holds the file's data rows in file order (row ``i`` of ``df`` is data row ``i + 1``); ``header_lines``
    is the number of lines before the first data row (None when the rows do not map to lines, e.g. an Excel
    sheet).  The columns may hold strings (an entry that does not parse as a number is reported as such).
    ``missing_ok``: an empty/NaN entry is a documented missing value (e.g. GDSC's untested drug × line pairs,
    dropped per drug by the loader); infinities and non-numeric entries are still rejected."""
    cols = list(columns)
    if not cols or df.empty:
        return
    sub = df[cols]
    if all(pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t) for t in sub.dtypes):
        v = sub.to_numpy(dtype=float, na_value=np.nan)   # one pass for a wide numeric table (GDSC's genes)
        missing = np.isnan(v)
    else:
        v = np.column_stack([pd.to_numeric(sub[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                             for c in cols])
        missing = np.column_stack([sub[c].isna().to_numpy() for c in cols])
    bad = ~np.isfinite(v)
    if missing_ok:
        bad &= ~missing
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        _raise(path, i + 1, None if header_lines is None else i + 1 + header_lines, str(cols[j]),
               sub.iloc[i, j], hint)


def require_finite_array(a: np.ndarray, path: str | Path, columns: Sequence[str] | None = None,
                         header_lines: int | None = 0, hint: str = "") -> None:
    """``require_finite`` for a numeric array read from ``path`` (1-D: one column; 2-D: rows × columns, named by
    ``columns`` or by their 1-based index)."""
    a = np.asarray(a, dtype=float)
    m = a.reshape(len(a), -1) if a.ndim else a.reshape(1, 1)
    bad = ~np.isfinite(m)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        name = columns[j] if columns is not None else f"#{j + 1}"
        _raise(path, i + 1, None if header_lines is None else i + 1 + header_lines, name, m[i, j], hint)
