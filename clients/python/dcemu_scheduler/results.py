"""Read dcemu's results into Python: one run's directory, or a sweep's.

``load_run(dir)`` reads a results directory (``dcemu run --out DIR``);
``load_sweep(dir)`` reads the output of ``dcemu sweep`` (``sweep.csv`` and
``summary.csv``). Tables come back as pandas DataFrames when pandas is
installed, and otherwise as lists of dicts (numbers parsed, empty cells as
``None``), so the module needs nothing beyond the standard library.

    from dcemu_scheduler.results import load_sweep
    s = load_sweep("results/sweep/paragon-load")
    s.summary[s.summary.metric == "qos_met_fraction"]
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

try:  # pandas is optional
    import pandas as _pd  # type: ignore
except ImportError:  # pragma: no cover - exercised where pandas is absent
    _pd = None

__all__ = ["Run", "Sweep", "load_run", "load_sweep", "has_pandas"]


def has_pandas() -> bool:
    """Whether tables come back as pandas DataFrames."""
    return _pd is not None


def _number(text: str) -> Any:
    if text == "":
        return None
    try:
        value = int(text)
        return value
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _table(path: str, as_pandas: Optional[bool]) -> Any:
    """A CSV file as a DataFrame, or as a list of dicts without pandas."""
    use_pandas = has_pandas() if as_pandas is None else as_pandas
    if use_pandas:
        if _pd is None:
            raise ImportError("pandas is not installed (pip install pandas)")
        return _pd.read_csv(path)
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _require(directory: str, name: str, what: str) -> str:
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: not found ({directory} is not {what})")
    return path


@dataclass
class Run:
    """One results directory."""

    path: str
    #: ``metrics.json``: every metric by name.
    metrics: Dict[str, Any]
    #: ``run.json``: how the run was made (seed, partitions, wall time…).
    facts: Dict[str, Any]
    #: Every other CSV of the directory by file name without ``.csv``
    #: (``timeseries``, ``applications``, ``jobs``, ``utilisation``…).
    tables: Dict[str, Any] = field(default_factory=dict)
    #: The digest the run committed (its results are byte-identical to any
    #: run with the same digest).
    digest: str = ""

    def __getitem__(self, name: str) -> Any:
        return self.tables[name]


@dataclass
class Sweep:
    """The output of ``dcemu sweep``."""

    path: str
    #: ``sweep.csv``: one row per cell, seed and metric.
    runs: Any
    #: ``summary.csv``: per cell and metric, n, mean, sd, 95 % CI, min, max.
    summary: Any
    #: The sweep's axis columns, in the file's order.
    axes: List[str]

    def run(self, name: str, as_pandas: Optional[bool] = None) -> Run:
        """One of its runs by directory name (``runs/<labels>_s<seed>``)."""
        return load_run(os.path.join(self.path, "runs", name), as_pandas)


def load_run(directory: str, as_pandas: Optional[bool] = None) -> Run:
    """Reads the results directory ``directory``.

    ``as_pandas``: ``True`` or ``False`` forces the tables' type; the
    default is pandas when it is installed.
    """
    with open(_require(directory, "metrics.json", "a results directory"), encoding="utf-8") as f:
        metrics = json.load(f)
    facts: Dict[str, Any] = {}
    run_json = os.path.join(directory, "run.json")
    if os.path.isfile(run_json):
        with open(run_json, encoding="utf-8") as f:
            facts = json.load(f)
    digest = ""
    digest_path = os.path.join(directory, "digest")
    if os.path.isfile(digest_path):
        with open(digest_path, encoding="utf-8") as f:
            digest = f.read().strip()
    tables = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".csv") and name != "metrics.csv":
            tables[name[: -len(".csv")]] = _table(os.path.join(directory, name), as_pandas)
    return Run(path=directory, metrics=metrics, facts=facts, tables=tables, digest=digest)


def load_sweep(directory: str, as_pandas: Optional[bool] = None) -> Sweep:
    """Reads the output directory of ``dcemu sweep``."""
    tidy = _require(directory, "sweep.csv", "the output of dcemu sweep")
    summary = _require(directory, "summary.csv", "the output of dcemu sweep")
    with open(tidy, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    axes = header[: max(0, len(header) - 3)]
    return Sweep(
        path=directory,
        runs=_table(tidy, as_pandas),
        summary=_table(summary, as_pandas),
        axes=axes,
    )
