"""Calibration: map a critic's raw score to a probability of being on track.

A critic's ``score`` ranks trajectories well but is not a probability one can act on: on the
90 real HotPotQA trajectories a capable model's InferAct scores have an expected calibration
error of 11.5%. A :class:`Calibration` is a monotone map fitted on labelled trajectories, so
that ``threshold=0.5`` means "flag when the action is less likely than not to serve the task".

* :func:`fit_calibration` fits Platt scaling (a logistic curve on the score, or on its
  log-odds) and isotonic regression, and keeps the one with the lowest cross-validated
  log-loss on the data it is given (needs scikit-learn, the ``[eval]`` extra).
* A fitted :class:`Calibration` is a few numbers: :meth:`Calibration.save` writes a small JSON
  file, :meth:`Calibration.load` reads it back, and applying it needs neither numpy nor
  scikit-learn. Every critic takes ``calibration=`` (a :class:`Calibration` or the file's
  path) and applies it to the score before comparing with its threshold.

Isotonic maps are made strictly increasing (ties broken by the raw score, at the 1e-6 level),
so a calibration keeps the ranking, hence AUC-PR: only scores that float rounding alone
separates (0.6 and 0.6000000000000001, differing by less than about 1e-9) can share a value
on a flat isotonic step.

Example:
    >>> calibration = Calibration.platt(slope=4.0, intercept=-2.0)
    >>> round(calibration(0.5), 3), round(calibration(0.9), 3)
    (0.5, 0.832)
    >>> Calibration.from_dict(calibration.to_dict()) == calibration
    True
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from inferact_langgraph.errors import CalibrationError

__all__ = [
    "DEFAULT",
    "METHODS",
    "Calibration",
    "CalibrationError",
    "default_calibration",
    "fit_calibration",
    "load_calibration",
]

Method = Literal["platt", "platt-logit", "isotonic"]
METHODS: tuple[str, ...] = ("platt", "platt-logit", "isotonic")
FORMAT = "inferact-calibration"
VERSION = 1
DEFAULT = "default"
"""``calibration=DEFAULT`` (every critic's default): the calibration shipped for the critic
and its preset (:func:`default_calibration`), or none where none is shipped."""
#: Where the shipped calibrations live: ``<critic>-<preset>.json`` (see its README.md).
SHIPPED_DIR = Path(__file__).resolve().parent / "calibrations"
_EPS = 1e-4  # scores are clipped to [eps, 1 - eps] before taking log-odds
_TIE_BREAK = 1e-6
_ISOTONIC_MARGIN = 1e-3


def _logit(score: float) -> float:
    p = min(1.0 - _EPS, max(_EPS, score))
    return math.log(p / (1.0 - p))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True)
class Calibration:
    """A monotone map from a critic's raw score to P(on track).

    Build one with :func:`fit_calibration`, :meth:`platt`, :meth:`isotonic` or :meth:`load`.

    Attributes:
        method: ``"platt"`` (logistic on the score), ``"platt-logit"`` (logistic on the
            score's log-odds) or ``"isotonic"``.
        params: ``{"slope", "intercept"}`` for Platt; ``{"x", "y"}`` (increasing knots,
            linear in between, constant beyond) for isotonic.
        info: What it was fitted on (critic, n, class counts, selection log-losses).
    """

    method: Method
    params: Mapping[str, Any]
    info: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise CalibrationError(f"unknown calibration method {self.method!r}; use {METHODS}")
        if self.method == "isotonic":
            x, y = self.params.get("x"), self.params.get("y")
            if not isinstance(x, Sequence) or not isinstance(y, Sequence) or len(x) != len(y):
                raise CalibrationError("isotonic params need lists 'x' and 'y' of equal length")
            if not x:
                raise CalibrationError("isotonic params need at least one knot")
            xs, ys = [float(v) for v in x], [float(v) for v in y]
            if any(b < a for a, b in itertools.pairwise(xs)):
                raise CalibrationError("isotonic knots 'x' must be increasing")
            if any(b < a for a, b in itertools.pairwise(ys)):
                raise CalibrationError("isotonic values 'y' must be non-decreasing")
            if any(not 0.0 <= v <= 1.0 for v in ys):
                raise CalibrationError("isotonic values 'y' must lie in [0, 1]")
            object.__setattr__(self, "params", {"x": xs, "y": ys})
        else:
            try:
                slope = float(self.params["slope"])
                intercept = float(self.params["intercept"])
            except (KeyError, TypeError, ValueError):
                raise CalibrationError(
                    f"{self.method} params need numbers 'slope' and 'intercept'"
                ) from None
            if not (math.isfinite(slope) and math.isfinite(intercept)) or slope < 0:
                raise CalibrationError(
                    f"{self.method} needs a finite slope >= 0 (a monotone map), got {slope!r}"
                )
            object.__setattr__(self, "params", {"slope": slope, "intercept": intercept})
        object.__setattr__(self, "info", dict(self.info))

    # ------------------------------------------------------------------ builders
    @classmethod
    def platt(cls, *, slope: float, intercept: float, logit: bool = False) -> Calibration:
        """Platt scaling: ``sigmoid(slope * s + intercept)``, ``s`` the score or its log-odds."""
        method: Method = "platt-logit" if logit else "platt"
        return cls(method, {"slope": slope, "intercept": intercept})

    @classmethod
    def isotonic(cls, x: Sequence[float], y: Sequence[float]) -> Calibration:
        """An isotonic map through the knots ``(x[i], y[i])``.

        Example:
            >>> round(Calibration.isotonic([0.2, 0.6], [0.1, 0.7])(0.4), 4)
            0.4
        """
        return cls("isotonic", {"x": list(x), "y": list(y)})

    # ------------------------------------------------------------------ applying
    def __call__(self, score: float) -> float:
        """P(on track) for a raw score in [0, 1]."""
        s = float(score)
        if math.isnan(s):
            raise CalibrationError("cannot calibrate NaN")
        if self.method == "isotonic":
            # Checked at construction: increasing knots, as many x as y.
            xs: Sequence[float] = self.params["x"]
            ys: Sequence[float] = self.params["y"]
            if s <= xs[0]:
                value = ys[0]
            elif s >= xs[-1]:
                value = ys[-1]
            else:
                i = bisect.bisect_right(xs, s)
                x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
                value = y0 if x1 == x0 else y0 + (y1 - y0) * (s - x0) / (x1 - x0)
            # Never certain, and strictly increasing: equal calibrated values keep the raw
            # order (so the ranking, hence AUC-PR, is the raw score's).
            value = min(1.0 - _ISOTONIC_MARGIN, max(_ISOTONIC_MARGIN, value))
            return min(1.0, max(0.0, value + _TIE_BREAK * (s - 0.5)))
        feature = _logit(s) if self.method == "platt-logit" else s
        return _sigmoid(self.params["slope"] * feature + self.params["intercept"])

    def apply(self, scores: Sequence[float]) -> list[float]:
        """:meth:`__call__` on every score."""
        return [self(s) for s in scores]

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (what :meth:`save` writes)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "method": self.method,
            "params": dict(self.params),
            "info": dict(self.info),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """Read :meth:`to_dict`'s data.

        Raises:
            CalibrationError: Not a calibration, an unknown version, or bad parameters.
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise CalibrationError(
                f'not a calibration: expected a JSON object with "format": "{FORMAT}"'
            )
        if data.get("version") != VERSION:
            raise CalibrationError(
                f"calibration version {data.get('version')!r} is not supported (expected {VERSION})"
            )
        return cls(data.get("method"), data.get("params") or {}, data.get("info") or {})  # type: ignore[arg-type]

    def save(self, path: str | Path) -> Path:
        """Write the calibration as a small JSON file; return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a calibration file written by :meth:`save` (or ``inferact eval``).

        Raises:
            FileNotFoundError: No such file.
            CalibrationError: The file is not a calibration.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CalibrationError(f"{path}: not JSON ({exc.msg})") from None
        try:
            return cls.from_dict(data)
        except CalibrationError as exc:
            raise CalibrationError(f"{path}: {exc}") from None

    def describe(self) -> str:
        """One line for tables and logs."""
        if self.method == "isotonic":
            return f"isotonic ({len(self.params['x'])} knots)"
        slope, intercept = self.params["slope"], self.params["intercept"]
        return f"{self.method} (slope {slope:.3g}, intercept {intercept:.3g})"


def load_calibration(
    value: Calibration | str | Path | Mapping[str, Any] | None,
) -> Calibration | None:
    """Accept what ``calibration=`` may be: ``None``, a :class:`Calibration`, a path, a dict.

    Raises:
        CalibrationError: Anything else, or a file that is not a calibration.
        FileNotFoundError: A path that does not exist.

    Example:
        >>> load_calibration(None) is None
        True
        >>> load_calibration(Calibration.platt(slope=1, intercept=0)).method
        'platt'
    """
    if value is None or isinstance(value, Calibration):
        return value
    if isinstance(value, str | Path):
        return Calibration.load(value)
    if isinstance(value, Mapping):
        return Calibration.from_dict(value)
    raise CalibrationError(
        "calibration must be a Calibration, the path of a calibration JSON file (written by "
        f"`inferact eval` or Calibration.save) or None; got {type(value).__name__}"
    )


@functools.cache  # read once per process: every critic built on that preset shares it
def default_calibration(critic: str, preset: str, *, with_rules: bool = False) -> Calibration | None:
    """The calibration shipped for a critic and a preset, fitted on a capable model's answers.

    ``inferact`` and ``standard`` ship one for the ``generic`` preset (fitted on the tau-bench
    airline dev records) and for ``hotpotqa`` (the 90 HotPotQA trajectories), so that their
    default ``threshold=0.5`` means "flag when P(on track) < 0.5". A critic given ``rules=``
    sends other prompts, and scores otherwise: for ``generic`` it gets the calibration fitted
    on the same records with the airline's policy as the rules (``with_rules``); where none was
    fitted with rules, ``None``. Other critics and presets have none (``None``): their raw score
    meets the threshold. ``bench/bench_quality.py --fit`` fits them again (docs/quality.md).

    Example:
        >>> default_calibration("inferact", "generic").method in METHODS
        True
        >>> default_calibration("inferact", "generic", with_rules=True).info["rules"]
        'tau-airline-policy.md'
        >>> default_calibration("scripted", "generic") is None
        True
    """
    suffix = "-rules" if with_rules else ""
    path = SHIPPED_DIR / f"{critic}-{preset}{suffix}.json"
    return Calibration.load(path) if path.is_file() else None


# ---------------------------------------------------------------------- fitting
def _check_fit_input(
    scores: Sequence[float], on_track: Sequence[int]
) -> tuple[list[float], list[int]]:
    s = [float(v) for v in scores]
    y = [int(v) for v in on_track]
    if len(s) != len(y):
        raise CalibrationError(f"{len(s)} scores but {len(y)} labels")
    if any(math.isnan(v) or not 0.0 <= v <= 1.0 for v in s):
        raise CalibrationError("scores must be numbers in [0, 1]")
    if set(y) - {0, 1}:
        raise CalibrationError("labels must be 1 (on track) or 0 (off track)")
    if min(y.count(0), y.count(1)) < 2:
        raise CalibrationError(
            "fitting a calibration needs at least 2 on-track and 2 off-track trajectories, got "
            f"{y.count(1)} and {y.count(0)}"
        )
    return s, y


def _fit_one(
    method: str,
    scores: Sequence[float],
    on_track: Sequence[int],
    weights: Sequence[float] | None = None,
) -> Calibration:
    import numpy as np

    s = np.asarray(scores, dtype=float)
    y = np.asarray(on_track, dtype=int)
    w = None if weights is None else np.asarray(weights, dtype=float)
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        model.fit(s, y, sample_weight=w)
        return Calibration.isotonic(
            [float(v) for v in model.X_thresholds_], [float(v) for v in model.y_thresholds_]
        )
    feature = np.array([_logit(v) for v in s]) if method == "platt-logit" else s
    slope, intercept = _platt_newton(feature, y, w)
    return Calibration.platt(slope=slope, intercept=intercept, logit=method == "platt-logit")


def _platt_newton(x: Any, y: Any, w: Any = None) -> tuple[float, float]:
    """Platt's (1999) fit: logistic regression on smoothed targets, by Newton's method.

    The targets are ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` rather than 1 and 0, which
    keeps the fit finite when the classes separate and is less overconfident on small data.
    With weights ``w`` each example counts ``w`` times (``N+`` and ``N-`` are weighted sums).
    """
    import numpy as np

    w = np.ones(len(y)) if w is None else w
    positives = float(w[y == 1].sum())
    negatives = float(w[y == 0].sum())
    target = np.where(y == 1, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    design = np.column_stack([x, np.ones_like(x)])
    weights = np.zeros(2)
    ridge = 1e-6 * np.eye(2)  # numerical safety only
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ weights)))
        gradient = design.T @ (w * (p - target))
        hessian = design.T @ (design * (w * p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-10:
            break
    return max(0.0, float(weights[0])), float(weights[1])


def _log_loss(
    on_track: Sequence[int], prob: Sequence[float], weights: Sequence[float] | None = None
) -> float:
    total = 0.0
    w = [1.0] * len(on_track) if weights is None else weights
    for y, p, weight in zip(on_track, prob, w, strict=True):
        p = min(1 - 1e-6, max(1e-6, p))
        total -= weight * math.log(p if y else 1 - p)
    return total / sum(w)


def fit_calibration(
    scores: Sequence[float],
    on_track: Sequence[int],
    *,
    method: Method | Literal["auto"] = "auto",
    folds: int = 5,
    seed: int = 0,
    info: Mapping[str, Any] | None = None,
    sample_weight: Sequence[float] | None = None,
) -> Calibration:
    """Fit a calibration on labelled scores.

    With ``method="auto"`` every method of :data:`METHODS` is scored by its log-loss on
    held-out folds (stratified ``folds``-fold cross-validation of the data given), the best is
    refitted on all of it, and the log-losses are kept in ``info["selection"]``.

    Args:
        scores: Raw critic scores (``Verdict.score`` without calibration).
        on_track: 1 when the trajectory was on track (label ``correct``), 0 when off track.
        method: ``"auto"`` or one method.
        folds: Folds of the selection (reduced to the smaller class size when needed).
        seed: Seed of the folds.
        info: Stored in the calibration (critic name, data source ...).
        sample_weight: How many calls each example stands for (e.g. the inverse of the
            probability that it was labelled: a spot check of 2% of the passed calls counts
            50 times); the fit and the selection's log-losses are weighted. ``None``: 1 each.

    Raises:
        CalibrationError: Fewer than two examples of a class, bad scores, labels or weights.
        ImportError: scikit-learn is missing (install the ``[eval]`` extra).

    Example:
        >>> scores = [0.1, 0.2, 0.3, 0.35, 0.6, 0.62, 0.64, 0.7, 0.9, 0.95]
        >>> labels = [0, 0, 0, 1, 0, 1, 1, 1, 1, 1]
        >>> calibration = fit_calibration(scores, labels, folds=2)
        >>> calibration.method in METHODS, 0 < calibration(0.5) < 1
        (True, True)
    """
    s, y = _check_fit_input(scores, on_track)
    w = None if sample_weight is None else [float(v) for v in sample_weight]
    if w is not None and (len(w) != len(y) or any(not (math.isfinite(v) and v > 0) for v in w)):
        raise CalibrationError(
            f"sample_weight must hold one positive, finite number per score ({len(y)}), "
            f"got {len(w)} values"
        )
    if method != "auto" and method not in METHODS:
        raise CalibrationError(f"unknown calibration method {method!r}; use 'auto' or {METHODS}")
    details: dict[str, Any] = {
        "n": len(y),
        "on_track": sum(y),
        "off_track": len(y) - sum(y),
        **(info or {}),
    }
    if w is not None:
        details["weight_sum"] = sum(w)
    if method != "auto":
        chosen = method
    else:
        from sklearn.model_selection import StratifiedKFold

        k = max(2, min(folds, y.count(0), y.count(1)))
        splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
        losses: dict[str, float] = {}
        for candidate in METHODS:
            predicted = [0.0] * len(y)
            for train, test in splitter.split(s, y):
                fitted = _fit_one(
                    candidate,
                    [s[i] for i in train],
                    [y[i] for i in train],
                    None if w is None else [w[i] for i in train],
                )
                for i in test:
                    predicted[i] = fitted(s[i])
            losses[candidate] = _log_loss(y, predicted, w)
        chosen = min(METHODS, key=lambda m: (losses[m], METHODS.index(m)))  # type: ignore[arg-type]
        details["selection"] = {"folds": k, "seed": seed, "held_out_log_loss": losses}
    fitted = _fit_one(chosen, s, y, w)
    return Calibration(fitted.method, fitted.params, details)
