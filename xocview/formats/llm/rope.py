"""Rotary frequencies of a scaled rope, in float32 exactly as transformers computes them
(``modeling_rope_utils``), so a Llama 3.1 or a long-context Qwen runs as its own code does.

A scaling kind changes only the inverse frequencies (and, for yarn and longrope, multiplies
cos and sin by an attention factor); the graph's rotary op and its cos/sin caches stay the
same, so the builder calls ``inv_freq`` when a cache is first read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["SCALED", "ScalingError", "inv_freq", "scaling_params"]

# rope_type -> the keys it reads (beyond rope_theta)
SCALED: dict[str, tuple[str, ...]] = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "yarn": (
        *("factor", "original_max_position_embeddings", "beta_fast", "beta_slow"),
        *("mscale", "mscale_all_dim", "attention_factor", "truncate"),
    ),
    "longrope": (
        *("factor", "original_max_position_embeddings", "attention_factor"),
        *("short_factor", "long_factor"),
    ),
}
_REQUIRED = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings"),
    "longrope": ("original_max_position_embeddings", "short_factor"),
}


class ScalingError(ValueError):
    """A scaled rope's parameters are missing or not numbers (the message names which)."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def scaling_params(kind: str, params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The parameters ``kind`` reads, as sorted pairs (hashable, for the frozen config);
    ScalingError names a missing or malformed one."""
    out: dict[str, Any] = {}
    for key in SCALED[kind]:
        value = params.get(key)
        if value is None:
            if key in _REQUIRED[kind]:
                raise ScalingError(f"rope scaling {kind!r} has no {key}")
            continue
        if key in ("short_factor", "long_factor"):
            if not isinstance(value, list) or not all(_number(v) and v > 0 for v in value):
                raise ScalingError(f"rope scaling {kind!r}: {key} is not a list of numbers")
            value = tuple(float(v) for v in value)
        elif key == "truncate":
            value = bool(value)
        elif not _number(value):
            raise ScalingError(f"rope scaling {kind!r}: {key} is not a number")
        out[key] = value
    if kind in ("linear", "llama3", "yarn") and not out["factor"] > 0:
        raise ScalingError(f"rope scaling {kind!r}: factor is not positive")
    return tuple(sorted(out.items()))


def inv_freq(
    kind: str,
    params: Mapping[str, Any],
    theta: float,
    rot: int,
    max_positions: int,
    long: bool = False,
) -> tuple[np.ndarray, float]:
    """float32 inverse frequencies of ``rot`` rotated features and the factor cos and sin are
    multiplied by, as transformers' ``_compute_{kind}_parameters``; ``long``: LongRoPE's
    frequencies past the original context."""
    exponent = np.arange(0, rot, 2, dtype=np.int64).astype(np.float32) / np.float32(rot)
    pos_freqs = np.float32(theta) ** exponent
    inv = (np.float32(1.0) / pos_freqs).astype(np.float32)
    if kind == "linear":
        return (inv / np.float32(params["factor"])).astype(np.float32), 1.0
    if kind == "llama3":
        return _llama3(inv, params), 1.0
    if kind == "yarn":
        return _yarn(pos_freqs, params, theta, rot)
    if kind == "longrope":
        return _longrope(exponent, params, theta, rot, max_positions, long)
    return inv, 1.0


def _llama3(inv: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    """Llama 3.1: long wavelengths divided by ``factor``, short ones kept, a smooth blend
    between (``_compute_llama3_parameters``)."""
    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    old = p["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = np.float32(2 * math.pi) / inv
    scaled = np.where(wavelen > low_wavelen, inv / np.float32(factor), inv).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        smooth = (np.float32(old) / wavelen - np.float32(low)) / np.float32(high - low)
    blend = (1 - smooth) * scaled / np.float32(factor) + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, blend, scaled).astype(np.float32)


def _mscale(scale: float, m: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def _yarn(
    pos_freqs: np.ndarray, p: Mapping[str, Any], theta: float, rot: int
) -> tuple[np.ndarray, float]:
    """YaRN: extrapolated and interpolated frequencies blended by a linear ramp over the
    correction range; cos and sin scaled by the attention factor (``_compute_yarn_parameters``)."""
    factor, old = float(p["factor"]), p["original_max_position_embeddings"]
    attention = p.get("attention_factor")
    if attention is None:
        mscale, all_dim = p.get("mscale"), p.get("mscale_all_dim")
        if mscale and all_dim:
            attention = _mscale(factor, mscale) / _mscale(factor, all_dim)
        else:
            attention = _mscale(factor)
    fast, slow = p.get("beta_fast") or 32, p.get("beta_slow") or 1

    def dim(rotations: float) -> float:
        return (rot * math.log(old / (rotations * 2 * math.pi))) / (2 * math.log(theta))

    low, high = dim(fast), dim(slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rot - 1)
    if low == high:
        high += 0.001
    ramp = (np.arange(rot // 2, dtype=np.float32) - np.float32(low)) / np.float32(high - low)
    extra = np.float32(1.0) - np.clip(ramp, 0, 1).astype(np.float32)
    extrapolated = np.float32(1.0) / pos_freqs
    interpolated = np.float32(1.0) / (np.float32(factor) * pos_freqs)
    inv = interpolated * (1 - extra) + extrapolated * extra
    return inv.astype(np.float32), float(attention)


def _longrope(
    exponent: np.ndarray,
    p: Mapping[str, Any],
    theta: float,
    rot: int,
    max_positions: int,
    long: bool,
) -> tuple[np.ndarray, float]:
    """Phi-3's LongRoPE: the short factors divide the frequencies within the original
    context, the long ones past it (a GGUF's ``rope_factors_short``/``_long.weight`` do,
    later); cos and sin are scaled by the attention factor either way."""
    old = p["original_max_position_embeddings"]
    factor = p.get("factor") or max_positions / old
    attention = p.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(old))
    key = "long_factor" if long else "short_factor"
    divisors = np.asarray(p.get(key, [1.0] * (rot // 2)), dtype=np.float32)
    if divisors.shape != (rot // 2,):
        raise ScalingError(
            f"rope scaling 'longrope': {key} has {divisors.size} values, not {rot // 2}"
        )
    inv = np.float32(1.0) / (divisors * np.float32(theta) ** exponent)
    return inv.astype(np.float32), float(attention)
