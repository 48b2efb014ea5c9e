"""Signal and sampling ops: window functions, DFT, STFT, GridSample and AffineGrid.

Windows, with N' = size (periodic) or size - 1 (symmetric) and n = 0..size-1:
    HannWindow      w[n] = 0.5 - 0.5 cos(2 pi n / N')                (= sin^2(pi n / N'))
    HammingWindow   w[n] = 25/46 - 21/46 cos(2 pi n / N')
    BlackmanWindow  w[n] = 0.42 - 0.5 cos(2 pi n / N') + 0.08 cos(4 pi n / N')
DFT along `axis` of a real ([..., 1]) or complex ([..., 2]) signal: X[k] = sum_j x[j] e^(-+2 pi
i j k / n) (inverse: + and / n); onesided keeps k <= n / 2; inverse + onesided is the real
inverse of a half spectrum (numpy's irfft). STFT is the DFT of each frame (window-weighted).
GridSample reads X at the points of a normalized grid (x, y[, z] in [-1, 1], reversed axis
order), interpolating (nearest / linear / cubic) with zeros, border or reflection padding;
AffineGrid makes such a grid: grid[..., :] = theta @ [x, y, (z,) 1] over the base grid.
"""

from __future__ import annotations

import math

import numpy as np

from .. import onnx_dtypes
from ..registry import Attr, const_input, op
from ..types import TensorType
from .nn import _fail

# -- window functions ---------------------------------------------------------------------------

# cos coefficients (a0, a1, a2): w = a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N')
WINDOWS = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (25 / 46, 21 / 46, 0.0),
           "BlackmanWindow": (0.42, 0.5, 0.08)}


def _window_size(opname: str, inputs) -> int:
    size = const_input(inputs, 0, f"{opname}: the size input")
    if size.size != 1 or not np.issubdtype(size.dtype, np.integer):
        _fail(opname, f"size must be one integer, got {size.dtype}{list(size.shape)}")
    n = int(size.reshape(()))
    if n < 0:
        _fail(opname, f"size must be >= 0, got {n}")
    return n


def window_values(coeffs: tuple[float, float, float], size: int, periodic: int) -> np.ndarray:
    """The window in float64."""
    n_den = size if periodic else size - 1
    n = np.arange(size, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = 2 * np.pi * n / n_den
    a0, a1, a2 = coeffs
    return a0 - a1 * np.cos(a) + a2 * np.cos(2 * a)


def _declare_window(opname: str) -> None:
    def infer(inputs, *, periodic, output_datatype):
        return TensorType((_window_size(opname, inputs),),
                          onnx_dtypes.from_onnx(output_datatype))

    @op(opname, attrs={"periodic": Attr.int(1), "output_datatype": Attr.int(1)}, infer=infer)
    def window(size, *, periodic, output_datatype):
        dt = onnx_dtypes.from_onnx(output_datatype).np
        return window_values(WINDOWS[opname], int(np.asarray(size).reshape(())), periodic) \
            .astype(np.float32).astype(dt)

    window.__doc__ = f"{opname}: see the module docstring for the formula."


for _name in WINDOWS:
    _declare_window(_name)


# -- DFT and STFT -------------------------------------------------------------------------------

def dft_geometry(shape: tuple[int, ...], dft_length: int | None, axis: int, inverse: int,
                 onesided: int) -> tuple[int, int, tuple[int, ...]]:
    """(normalized axis, transform length n, output shape) of a DFT of an input `shape`."""
    rank = len(shape)
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        _fail("DFT", f"axis {axis} is out of range for an input of rank {rank} (the last axis "
                     f"holds the real and imaginary parts)")
    a = axis % rank
    m = shape[a]
    if dft_length is None:
        n = 2 * (m - 1) if inverse and onesided else m
    else:
        n = dft_length
    if n < 1:
        _fail("DFT", f"the transform length must be >= 1, got {n}")
    out = list(shape)
    if inverse and onesided:  # half spectrum in, real signal out
        out[a], out[-1] = n, 1
    else:
        out[a], out[-1] = (n // 2 + 1 if onesided else n), 2
    return a, n, tuple(out)


def _scalar_input(opname: str, inputs, i: int, what: str) -> int | None:
    v = const_input(inputs, i, f"{opname}: the {what} input")
    if v is None:
        return None
    if v.size != 1 or not np.issubdtype(v.dtype, np.integer):
        _fail(opname, f"{what} must be one integer, got {v.dtype}{list(v.shape)}")
    return int(v.reshape(()))


def _infer_dft(inputs, *, inverse, onesided):
    x = inputs[0].type
    if not x.dtype.is_float or x.rank < 2 or x.shape[-1] not in (1, 2):
        _fail("DFT", f"input must be float [..., signal, 1 or 2] (real or complex), got {x}")
    axis = _scalar_input("DFT", inputs, 2, "axis")
    _, _, out = dft_geometry(x.shape, _scalar_input("DFT", inputs, 1, "dft_length"),
                             -2 if axis is None else axis, inverse, onesided)
    return TensorType(out, x.dtype)


def _as_complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0] if x.shape[-1] == 1 else x[..., 0] + 1j * x[..., 1]


@op("DFT", inputs=(1, 3), attrs={"inverse": Attr.int(0), "onesided": Attr.int(0)},
    infer=_infer_dft)
def dft(x, dft_length=None, axis=None, *, inverse, onesided):
    """The opset-20 DFT (axis an input, default -2), computed in float64."""
    length = None if dft_length is None else int(np.asarray(dft_length).reshape(()))
    a, n, _ = dft_geometry(x.shape, length, -2 if axis is None else int(np.asarray(axis)),
                           inverse, onesided)
    sig = _as_complex(x.astype(np.float64))
    if inverse and onesided:
        return np.fft.irfft(sig, n=n, axis=a)[..., None].astype(x.dtype)
    res = np.fft.ifft(sig, n=n, axis=a) if inverse else np.fft.fft(sig, n=n, axis=a)
    if onesided:
        res = np.take(res, np.arange(n // 2 + 1), axis=a)
    return np.stack([res.real, res.imag], axis=-1).astype(x.dtype)


def stft_geometry(signal: TensorType | tuple, frame_step: int, window_len: int | None,
                  frame_length: int | None, onesided: int) -> tuple[int, int, int]:
    """(frames, frame length, frequency bins) of an STFT."""
    shape = signal.shape if isinstance(signal, TensorType) else signal
    if frame_length is None:
        frame_length = window_len if window_len is not None else shape[1]
    if window_len is not None and window_len != frame_length:
        _fail("STFT", f"window length {window_len} differs from frame_length {frame_length}")
    if frame_step < 1 or not 1 <= frame_length <= shape[1]:
        _fail("STFT", f"frame_step {frame_step} must be >= 1 and frame_length {frame_length} "
                      f"within the signal's {shape[1]} samples")
    frames = 1 + (shape[1] - frame_length) // frame_step
    return frames, frame_length, frame_length // 2 + 1 if onesided else frame_length


def _infer_stft(inputs, *, onesided):
    x = inputs[0].type
    if not x.dtype.is_float or x.rank != 3 or x.shape[-1] not in (1, 2):
        _fail("STFT", f"signal must be float [batch, length, 1 or 2], got {x}")
    w = inputs[2] if len(inputs) > 2 else None
    if w is not None and (w.type.rank != 1 or w.dtype != x.dtype):
        _fail("STFT", f"window must be {x.dtype}[frame_length], got {w.type}")
    frames, _, bins = stft_geometry(x, _scalar_input("STFT", inputs, 1, "frame_step"),
                                    None if w is None else w.shape[0],
                                    _scalar_input("STFT", inputs, 3, "frame_length"), onesided)
    return TensorType((x.shape[0], frames, bins, 2), x.dtype)


@op("STFT", inputs=(2, 4), attrs={"onesided": Attr.int(1)}, infer=_infer_stft)
def stft(signal, frame_step, window=None, frame_length=None, *, onesided):
    """Frame f is signal[:, f * step : f * step + frame_length] times the window (ones by
    default); its DFT, in float64."""
    step = int(np.asarray(frame_step).reshape(()))
    flen = None if frame_length is None else int(np.asarray(frame_length).reshape(()))
    frames, flen, bins = stft_geometry(signal.shape, step,
                                       None if window is None else window.shape[0], flen,
                                       onesided)
    sig = _as_complex(signal.astype(np.float64))
    w = np.ones(flen) if window is None else window.astype(np.float64)
    idx = np.arange(frames)[:, None] * step + np.arange(flen)[None, :]
    spec = np.fft.fft(sig[:, idx] * w, axis=-1)[..., :bins]
    return np.stack([spec.real, spec.imag], axis=-1).astype(signal.dtype)


# -- GridSample and AffineGrid ------------------------------------------------------------------

GRID_MODES = ("nearest", "linear", "cubic")
GRID_PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75  # Keys' coefficient, as PyTorch and onnxruntime use for GridSample


def _infer_grid_sample(inputs, *, align_corners, mode, padding_mode):
    x, g = inputs[0].type, inputs[1].type
    if not x.dtype.is_float or x.rank < 3:
        _fail("GridSample", f"X must be float [N, C, spatial...], got {x}")
    nsp = x.rank - 2
    if g.rank != x.rank or g.shape[0] != x.shape[0] or g.shape[-1] != nsp \
            or not g.dtype.is_float:
        _fail("GridSample", f"grid must be float [N={x.shape[0]}, out spatial..., {nsp}] for X "
                            f"{x}, got {g}")
    if mode not in GRID_MODES:
        _fail("GridSample", f"mode must be one of {GRID_MODES}, got '{mode}'")
    if padding_mode not in GRID_PADDINGS:
        _fail("GridSample", f"padding_mode must be one of {GRID_PADDINGS}, got '{padding_mode}'")
    if mode == "cubic" and nsp != 2:
        _fail("GridSample", f"cubic mode is defined for 4-D inputs only, got {x}")
    return TensorType(x.shape[:2] + g.shape[1:-1], x.dtype)


def grid_borders(size: int, align_corners: int) -> tuple[float, float]:
    """The reflection borders of an axis of `size` pixels."""
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect `x` by the borders until it lies in [lo, hi]."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0))
    flips = np.floor(d / span)
    r = d - flips * span
    odd = flips % 2 == 1
    inside_lo = np.where(odd, hi - r, lo + r)  # reflected off the low border
    inside_hi = np.where(odd, lo + r, hi - r)
    return np.where(below, inside_lo, np.where(above, inside_hi, x)).astype(x.dtype)


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    a = np.float32(CUBIC_A)

    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    one = np.float32(1)
    return [far(t + one), near(t), near(one - t), far(np.float32(2) - t)]


@op("GridSample", inputs=2, infer=_infer_grid_sample,
    attrs={"align_corners": Attr.int(0), "mode": Attr.str("linear"),
           "padding_mode": Attr.str("zeros")})
def grid_sample(x, grid, *, align_corners, mode, padding_mode):
    """Per output point: denormalize (align_corners: (g + 1) / 2 * (size - 1), else
    ((g + 1) * size - 1) / 2) in float32; nearest rounds half to even; out-of-range coordinates
    clamp (border; cubic clamps only its taps, as onnxruntime does) or reflect (reflection);
    taps outside X read 0 (zeros), the edge (border) or their reflection (reflection)."""
    n, c, *sizes = x.shape
    nsp = len(sizes)
    out_sp = grid.shape[1:-1]
    g = grid.astype(np.float32).reshape(n, -1, nsp)[..., ::-1]  # axis order of X
    coords, taps = [], []
    for a, size in enumerate(sizes):
        v = g[..., a]
        if align_corners:
            p = (v + np.float32(1)) / np.float32(2) * np.float32(size - 1)
        else:
            p = ((v + np.float32(1)) * np.float32(size) - np.float32(1)) / np.float32(2)
        if mode == "nearest":
            p = np.rint(p)
        lo, hi = grid_borders(size, align_corners)
        if padding_mode == "border" and mode != "cubic":  # cubic clamps only its taps
            p = np.clip(p, 0, size - 1)
        elif padding_mode == "reflection":
            p = reflect(p.astype(np.float64), lo, hi).astype(np.float32)
        coords.append(p)
        if mode == "nearest":
            taps.append([(p.astype(np.int64), None)])
            continue
        base = np.floor(p)
        t = (p - base).astype(np.float32)
        base = base.astype(np.int64)
        if mode == "linear":
            taps.append([(base, np.float32(1) - t), (base + 1, t)])
        else:
            taps.append([(base + k - 1, w) for k, w in enumerate(_cubic_weights(t))])
    flat = x.reshape(n, c, -1)
    strides = [math.prod(sizes[a + 1:]) for a in range(nsp)]
    y = np.zeros((n, c, g.shape[1]), np.float32)
    for combo in np.ndindex(*[len(t) for t in taps]):
        offset = np.zeros(g.shape[:2], np.int64)
        valid = np.ones(g.shape[:2], bool)
        weight = np.ones(g.shape[:2], np.float32)
        for a, k in enumerate(combo):
            idx, w = taps[a][k]
            lo, hi = grid_borders(sizes[a], align_corners)
            if padding_mode == "zeros":
                valid = valid & (idx >= 0) & (idx < sizes[a])
            elif padding_mode == "border":
                idx = np.clip(idx, 0, sizes[a] - 1)
            else:
                idx = np.clip(reflect(idx.astype(np.float64), lo, hi).astype(np.int64), 0,
                              sizes[a] - 1)
            offset = offset + np.clip(idx, 0, sizes[a] - 1) * strides[a]
            if w is not None:
                weight = (weight * w).astype(np.float32)
        vals = np.take_along_axis(flat, np.broadcast_to(offset[:, None, :], y.shape), axis=2)
        y += np.where(valid[:, None, :], vals * weight[:, None, :], np.float32(0))
    return y.reshape(n, c, *out_sp).astype(x.dtype)


def _infer_affine_grid(inputs, *, align_corners):
    theta = inputs[0].type
    size = const_input(inputs, 1, "AffineGrid: the size input")
    if size.ndim != 1 or size.size not in (4, 5):
        _fail("AffineGrid", f"size must be [N, C, H, W] or [N, C, D, H, W], got {size}")
    n, _, *sp = (int(v) for v in size)
    nsp = len(sp)
    if not theta.dtype.is_float or theta.shape != (n, nsp, nsp + 1):
        _fail("AffineGrid", f"theta must be float [{n}, {nsp}, {nsp + 1}] for size "
                            f"{size.tolist()}, got {theta}")
    return TensorType((n, *sp, nsp), theta.dtype)


def base_grid(size: int, align_corners: int) -> np.ndarray:
    """The normalized coordinates of the pixel centers (corners) of an axis, in float64."""
    i = np.arange(size, dtype=np.float64)
    if align_corners:
        return -1 + 2 * i / (size - 1) if size > 1 else np.full(size, -1.0)
    return -1 + (2 * i + 1) / size


@op("AffineGrid", inputs=2, attrs={"align_corners": Attr.int(0)}, infer=_infer_affine_grid)
def affine_grid(theta, size, *, align_corners):
    """grid[n, (d,) h, w] = theta[n] @ [x_w, y_h, (z_d,) 1]."""
    _, _, *sp = (int(v) for v in size)
    axes = [base_grid(s, align_corners) for s in sp]
    mesh = np.meshgrid(*axes, indexing="ij")  # per spatial axis, in X's axis order
    homo = np.stack([*mesh[::-1], np.ones(sp)], axis=-1)  # (x, y, (z,) 1)
    grid = np.einsum("...j,nkj->n...k", homo, theta.astype(np.float64))
    return grid.astype(theta.dtype)
