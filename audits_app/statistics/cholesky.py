"""Cholesky solves of many small symmetric positive definite systems, on every core.

numpy has no batched Cholesky solve, and SciPy's `lapack.dposv` wrapper keeps the GIL while it
runs, so blocks of the additive fit on two threads took turns instead of running side by side
(at 200 models a plain LU, which numpy runs without the GIL, was then faster on the wall
clock). This calls the same LAPACK routine SciPy links, `dposv`, through the pointer SciPy
publishes for Cython (`scipy.linalg.cython_lapack`); a ctypes call releases the GIL for its
duration. No ORM, no state besides the function pointer.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from scipy.linalg import cython_lapack

from audits_app.statistics.arrays import BoolArray, FloatArray

_INT = ctypes.POINTER(ctypes.c_int)
_DPOSV = ctypes.CFUNCTYPE(None, ctypes.c_char_p, _INT, _INT, ctypes.c_void_p, _INT,
                          ctypes.c_void_p, _INT, _INT)


@functools.cache
def _dposv():
    capsule = cython_lapack.__pyx_capi__["dposv"]
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return _DPOSV(pointer(capsule, name(capsule)))


def solve_upper(system: FloatArray, right: FloatArray) -> tuple[FloatArray, BoolArray]:
    """x[b] with system[b] x[b] = right[b], from each system's upper triangle, and where
    Cholesky found a system not positive definite (its x is NaN).

    system[b, M, M] is overwritten by the factors and its lower triangle is never read (it may
    hold anything). A C-ordered matrix is its transpose to LAPACK, so the upper triangle here
    is dposv's lower one.
    """
    system = np.ascontiguousarray(system, dtype=np.float64)
    solutions = np.array(right, dtype=np.float64, order="C", copy=True)
    failed = np.zeros(len(system), dtype=bool)
    if system.size == 0:
        return solutions, failed
    dposv = _dposv()
    size, one, info = ctypes.c_int(system.shape[1]), ctypes.c_int(1), ctypes.c_int(0)
    matrices, vectors = system.ctypes.data, solutions.ctypes.data
    matrix_stride, vector_stride = system.strides[0], solutions.strides[0]
    for index in range(len(system)):
        dposv(b"L", size, one, matrices + index * matrix_stride, size,
              vectors + index * vector_stride, size, info)
        failed[index] = info.value != 0
    solutions[failed] = np.nan
    return solutions, failed
