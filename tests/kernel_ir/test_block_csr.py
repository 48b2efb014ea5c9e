"""Block-CSR sparse iteration in the kernel IR: `KernelBuilder.csr` over a block row pointer
yields (block index k, block column), and dense R x C blocks are read at k * R * C.

Two SpMV kernels, y = A x with A in block-CSR (rowptr over block rows, colidx of block
columns, blocks stored densely): R x C blocks in scalar code, and blocks of R = L rows stored
column-major, so that each block column is one vector load against a broadcast of x (the
vectorized form); built for AVX2, scalar C and, where the CPU has it, AVX-512, checked against
numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import isa_builds
from kernel_ir.test_vector_ir import build, function

from edgec.ir.dtypes import DType
from edgec.kernel_ir.kernel import Kernel, KernelBuilder, broadcast, fma, vload

F32, I32 = DType.F32, DType.I32
BUILDS = isa_builds()


def bcsr_spmv(r: int, c: int, lanes: int) -> Kernel:
    """y[br*R + i] = sum over the blocks (k, bc) of block row br, sum_j vals[k, i, j] x[bc*C + j]
    (row-major blocks, scalar) and, with R = lanes and column-major blocks, the same as
    acc += vload(vals[k, j, :]) * x[bc*C + j] (one vector per block column)."""
    kb = KernelBuilder(f"bcsr_{r}x{c}_l{lanes}", "block-CSR sparse matrix times vector")
    rowptr, colidx = kb.pointer("rowptr", I32), kb.pointer("colidx", I32)
    vals, x = kb.pointer("vals", F32), kb.pointer("x", F32)
    y = kb.pointer("y", F32, "out")
    brows = kb.scalar("brows")
    with kb.loop(brows, "br") as br:
        if lanes > 1:
            acc = kb.local("acc", broadcast(0.0, lanes))
            with kb.csr(rowptr, colidx, br, "k") as (k, bc):
                for j in range(c):
                    kb.assign(acc, fma(vload(vals, (k * c + j) * r, r),
                                       broadcast(x[bc * c + j], r), acc))
            kb.store(y, br * r, acc)
        else:
            accs = [kb.local(f"acc{i}_", 0.0) for i in range(r)]
            with kb.csr(rowptr, colidx, br, "k") as (k, bc):
                for i in range(r):
                    for j in range(c):
                        kb.assign(accs[i], fma(vals[(k * r + i) * c + j], x[bc * c + j],
                                               accs[i]))
            for i in range(r):
                kb.store(y, br * r + i, accs[i])
    return kb.build()


def random_bcsr(rng, brows: int, bcols: int, r: int, c: int):
    """(rowptr, colidx, blocks [nnzb, r, c], dense [brows*r, bcols*c]) with empty block rows."""
    counts = rng.integers(0, bcols + 1, brows)
    counts[1] = 0
    cols = [np.sort(rng.choice(bcols, n, replace=False)) for n in counts]
    rowptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    colidx = np.concatenate(cols).astype(np.int32)
    blocks = rng.standard_normal((len(colidx), r, c)).astype(np.float32)
    dense = np.zeros((brows * r, bcols * c), np.float32)
    for br in range(brows):
        for k in range(rowptr[br], rowptr[br + 1]):
            bc = colidx[k]
            dense[br * r:(br + 1) * r, bc * c:(bc + 1) * c] = blocks[k]
    return rowptr, colidx, blocks, dense


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_block_csr_spmv_matches_numpy(build_name, tmp_path):
    isa, flags = BUILDS[build_name]
    lanes = isa.lanes(F32) if isa else 1
    shapes = [(2, 3, 1), (lanes, 3, lanes)] if lanes > 1 else [(2, 3, 1), (4, 1, 1)]
    kernels = [bcsr_spmv(r, c, vl) for r, c, vl in shapes]
    lib = build(tmp_path, kernels, isa, flags, f"bcsr_{build_name}")
    rng = np.random.default_rng(7)
    for (r, c, vl), kern in zip(shapes, kernels):
        brows, bcols = 5, 4
        rowptr, colidx, blocks, dense = random_bcsr(rng, brows, bcols, r, c)
        # the vectorized form stores each block column-major: [k][j][i]
        vals = blocks.transpose(0, 2, 1) if vl > 1 else blocks
        x = rng.standard_normal(bcols * c).astype(np.float32)
        y = np.full(brows * r, -777.0, np.float32)
        function(lib, kern)(rowptr, colidx, np.ascontiguousarray(vals.reshape(-1)), x, y,
                            brows)
        np.testing.assert_allclose(y, dense @ x, rtol=1e-5, atol=1e-5, err_msg=kern.name)
