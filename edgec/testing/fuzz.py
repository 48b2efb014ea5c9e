"""Fuzzing edgec's import: mutants of small valid ONNX models, each compiled and run in a
worker subprocess under a time limit.

    python scripts/fuzz.py --mutants 10000 [--seed S] [--workers 2] [--timeout 60]
                           [--sanitize] [--keep DIR] [--json FILE]

Every mutant is one of the seed models (a small convolutional net, a small attention block)
with one to three mutations: byte flips or truncation of the serialized file, or edits of its
fields (dims wrong, negative or huge; dtypes; dangling, duplicate and hostile names; cycles;
missing initializers; attributes of the wrong type or huge values; graphs emptied; unknown
opsets and domains; op types swapped; external data outside the model's folder). A worker
compiles it with `edgec.compile` and, when that succeeds, runs the library on random inputs.
Each mutant ends in one outcome:

    ran               compiled, and the library ran (its outputs are not checked: a
                      mutant's meaning is whatever edgec made of it)
    refused:<Error>   edgec raised an EdgecError (the class named)
    bug:<Exception>   any other Python exception: a bug (its traceback is kept)
    hang              the time limit passed (the worker is killed)
    crash             the worker died: a signal in the compiler or in the library
    crash:library     (--sanitize) the library, built with AddressSanitizer and
                      UndefinedBehaviorSanitizer, reported a finding or died of a signal

The exit status is 1 when any mutant ended in bug, hang or crash; those mutants are written
to --keep (default fuzz-failures/) with their traceback, to be replayed with
`python scripts/fuzz.py --replay FILE.onnx`. Workers run with their address space limited
(--memory, GiB), so that a huge declared dim shows as a MemoryError (a bug: edgec should have
refused it up front) rather than swapping the machine.

With --sanitize every mutant is compiled with `sanitize=True` (`edgec compile --sanitize`) and
its library run as a sanitized program, so an out-of-bounds access or undefined behaviour in
the generated code shows even where it would not crash. AddressSanitizer reserves terabytes of
address space for its shadow memory, so sanitized workers run without the --memory limit (a
plain run is the one that catches a huge declared dim).

`python -m edgec.testing.fuzz` takes the same arguments (scripts/fuzz.py calls this module's
`main`).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
HOSTILE_NAMES = ["y*/ #define x", 'a"b\\c\n', "??=define", "</script>", "\u00e9\u4e2d",
                 "", " ", "0starts_with_digit", "a" * 5000, "x;system(\"id\");"]
HUGE = [0, -1, -7, 1 << 31, (1 << 31) - 1, 1 << 40, (1 << 62), -(1 << 62), 65536 * 65536]
OP_TYPES = ["Relu", "Conv", "Add", "MatMul", "Gemm", "Reshape", "Transpose", "Softmax",
            "Gather", "Concat", "Slice", "MaxPool", "AveragePool", "Flatten", "Sigmoid", "Mul",
            "Split", "Squeeze", "Unsqueeze", "ReduceMean", "Cast", "Where", "Pad", "Resize",
            "ConstantOfShape", "Expand", "Tile", "TopK", "LayerNormalization", "Identity",
            "BatchNormalization", "Clip", "NonZero", "Loop", "If", "Scan", "NoSuchOp"]


# -- the seeds ---------------------------------------------------------------------------------

def _init(name: str, arr: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(arr, name)


def conv_seed() -> onnx.ModelProto:
    """Conv + BatchNormalization + Relu, a depthwise stride-2 conv, MaxPool, a residual Add,
    GlobalAveragePool, Flatten, Gemm and Softmax: [1, 3, 8, 8] -> [1, 5]."""
    r = np.random.default_rng(0)
    w = lambda *s: (r.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = [_init("w1", w(4, 3, 3, 3)), _init("b1", w(4)),
             _init("g", np.ones(4, np.float32)), _init("beta", w(4)), _init("mean", w(4)),
             _init("var", np.ones(4, np.float32)), _init("w2", w(4, 1, 3, 3)),
             _init("w3", w(4, 4, 1, 1)), _init("fc", w(5, 4)), _init("fcb", w(5))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="dw", group=4, strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w3"], ["c3"], name="proj"),
        helper.make_node("Add", ["c2", "c3"], ["s"], name="residual"),
        helper.make_node("GlobalAveragePool", ["s"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             ir_version=IR_VERSION)


def attention_seed() -> onnx.ModelProto:
    """Token ids through an embedding Gather, LayerNormalization, a one-head attention
    (MatMul, Transpose, scaled Softmax), Concat with a Slice of the input, ReduceMean, a
    Where over a Cast mask and Clip: ids [1, 6] -> [1, 6, 16]."""
    r = np.random.default_rng(1)
    w = lambda *s: (r.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = [_init("emb", w(10, 8)), _init("ln_g", np.ones(8, np.float32)),
             _init("ln_b", w(8)), _init("wq", w(8, 8)), _init("wk", w(8, 8)),
             _init("wv", w(8, 8)), _init("scale", np.array(0.35, np.float32)),
             _init("starts", np.array([0], np.int64)), _init("ends", np.array([8], np.int64)),
             _init("axes", np.array([2], np.int64)), _init("zero", np.array(0.0, np.float32)),
             _init("lo", np.array(-3.0, np.float32)), _init("hi", np.array(3.0, np.float32))]
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed", axis=0),
        helper.make_node("LayerNormalization", ["e", "ln_g", "ln_b"], ["h"], name="ln",
                         axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["h", "wq"], ["q"], name="q"),
        helper.make_node("MatMul", ["h", "wk"], ["k"], name="k"),
        helper.make_node("MatMul", ["h", "wv"], ["v"], name="v"),
        helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
        helper.make_node("Mul", ["qk", "scale"], ["qks"], name="scaled"),
        helper.make_node("Softmax", ["qks"], ["att"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["att", "v"], ["ctx"], name="ctx"),
        helper.make_node("Slice", ["e", "starts", "ends", "axes"], ["es"], name="slice"),
        helper.make_node("Concat", ["ctx", "es"], ["cat"], name="concat", axis=-1),
        helper.make_node("ReduceMean", ["cat"], ["mean"], name="mean", axes=[-1],
                         keepdims=1),
        helper.make_node("Cast", ["ids"], ["idf"], name="cast", to=TensorProto.BOOL),
        helper.make_node("Unsqueeze", ["idf", "axes"], ["mask"], name="unsq"),
        helper.make_node("Sub", ["cat", "mean"], ["centred"], name="centre"),
        helper.make_node("Where", ["mask", "centred", "zero"], ["masked"], name="where"),
        helper.make_node("Clip", ["masked", "lo", "hi"], ["y"], name="clip"),
    ]
    graph = helper.make_graph(
        nodes, "attention", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             ir_version=IR_VERSION)


def shapes_seed() -> onnx.ModelProto:
    """The shape chain exporters write (Shape, Gather, Unsqueeze, Concat into Reshape), Pad,
    Resize, Split, ConvTranspose, AveragePool, TopK over ReduceMax, Squeeze and Expand:
    [1, 2, 6, 6] -> [1, 2, 6, 6] and [1, 2, 3]."""
    r = np.random.default_rng(2)
    inits = [_init("zero_i", np.array(0, np.int64)), _init("one_i", np.array([1], np.int64)),
             _init("minus1", np.array([-1], np.int64)), _init("ax0", np.array([0], np.int64)),
             _init("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
             _init("scales", np.array([1, 1, 2, 2], np.float32)),
             _init("wt", (r.standard_normal((2, 2, 3, 3)) * 0.3).astype(np.float32)),
             _init("split", np.array([1, 1], np.int64)), _init("k", np.array([3], np.int64)),
             _init("eshape", np.array([1, 2, 1], np.int64)), _init("ax2", np.array([2], np.int64))]
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero_i"], ["n"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="n1"),
        helper.make_node("Concat", ["n1", "minus1"], ["flat_shape"], name="flat_shape", axis=0),
        helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad", mode="reflect"),
        helper.make_node("AveragePool", ["padded"], ["smooth"], name="smooth",
                         kernel_shape=[3, 3]),
        helper.make_node("AveragePool", ["smooth"], ["pooled"], name="avg", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Resize", ["pooled", "", "scales"], ["up"], name="resize",
                         mode="nearest"),
        helper.make_node("ConvTranspose", ["x", "wt"], ["ct"], name="deconv", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["up", "ct"], ["sum"], name="add"),
        helper.make_node("Split", ["sum", "split"], ["s0", "s1"], name="split", axis=1),
        helper.make_node("Mul", ["s0", "s1"], ["prod"], name="mul"),
        helper.make_node("Concat", ["prod", "s1"], ["y"], name="concat", axis=1),
        helper.make_node("Reshape", ["y", "flat_shape"], ["flat"], name="reshape"),
        helper.make_node("ReduceMax", ["x"], ["rmax"], name="rmax", axes=[3], keepdims=0),
        helper.make_node("TopK", ["rmax", "k"], ["top", "top_i"], name="topk", axis=-1),
        helper.make_node("Expand", ["top", "eshape"], ["z"], name="expand"),
    ]
    graph = helper.make_graph(
        nodes, "shapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6]),
         helper.make_tensor_value_info("flat", TensorProto.FLOAT, [1, 72]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             ir_version=IR_VERSION)


SEEDS = {"conv": conv_seed, "attention": attention_seed, "shapes": shapes_seed}


# -- mutations ---------------------------------------------------------------------------------
# Each takes (model, rng, folder) and edits the model in place; a mutation that finds nothing
# to edit (no attribute, one node) leaves it as it is. `folder` is where the mutant is written
# (external data files go beside it, or outside it on purpose).

def _names(m: onnx.ModelProto) -> list[str]:
    g = m.graph
    names = [i.name for i in g.input] + [t.name for t in g.initializer]
    return names + [o for n in g.node for o in n.output]


def _value_infos(m: onnx.ModelProto):
    return list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info)


def mut_dim(m, rng, folder):
    infos = [v for v in _value_infos(m) if v.type.tensor_type.shape.dim]
    if infos and rng.random() < 0.6:
        dims = rng.choice(infos).type.tensor_type.shape.dim
        d = rng.choice(dims)
        choice = rng.random()
        if choice < 0.15:
            d.Clear()  # unknown
        elif choice < 0.25:
            d.dim_param = rng.choice(["N", "batch", "", "?"])
        else:
            d.dim_value = rng.choice(HUGE + [rng.randint(1, 20)])
        if rng.random() < 0.15:
            dims.add().dim_value = rng.choice([1, 3, 1 << 20])
        return
    if m.graph.initializer:
        t = rng.choice(m.graph.initializer)
        if t.dims:
            i = rng.randrange(len(t.dims))
            t.dims[i] = rng.choice(HUGE + [t.dims[i] + 1, max(t.dims[i] - 1, 0)])
        else:
            t.dims.append(rng.choice(HUGE + [2]))


def mut_dtype(m, rng, folder):
    dt = rng.choice([0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 21, 22, 23, 99, -4])
    if rng.random() < 0.5:
        infos = _value_infos(m)
        if infos:
            rng.choice(infos).type.tensor_type.elem_type = dt
    elif m.graph.initializer:
        rng.choice(m.graph.initializer).data_type = dt


def mut_dangling(m, rng, folder):
    nodes = [n for n in m.graph.node if n.input]
    if nodes:
        n = rng.choice(nodes)
        n.input[rng.randrange(len(n.input))] = rng.choice(["nowhere", "", "y", "x "])


def mut_duplicate(m, rng, folder):
    names = _names(m)
    if not m.graph.node:
        return
    n = rng.choice(list(m.graph.node))
    if n.output:
        n.output[0] = rng.choice(names)
    if rng.random() < 0.3 and len(m.graph.node) > 1:
        other = rng.choice(list(m.graph.node))
        n.name = other.name


def mut_cycle(m, rng, folder):
    nodes = list(m.graph.node)
    if len(nodes) < 2:
        return
    i, j = sorted(rng.sample(range(len(nodes)), 2))
    if nodes[i].input and nodes[j].output:
        nodes[i].input[rng.randrange(len(nodes[i].input))] = nodes[j].output[0]
    if rng.random() < 0.2 and nodes[i].input and nodes[i].output:  # a self-loop
        nodes[i].input[0] = nodes[i].output[0]


def mut_missing_initializer(m, rng, folder):
    if m.graph.initializer:
        del m.graph.initializer[rng.randrange(len(m.graph.initializer))]


def mut_initializer_data(m, rng, folder):
    inits = [t for t in m.graph.initializer if t.data_location != TensorProto.EXTERNAL]
    if not inits:
        return
    t = rng.choice(inits)
    raw = t.raw_data
    choice = rng.random()
    if choice < 0.3 and raw:
        t.raw_data = raw[:rng.randrange(len(raw))]
    elif choice < 0.5:
        t.raw_data = raw + bytes(rng.randrange(1, 64))
    elif choice < 0.7:
        try:
            arr = numpy_helper.to_array(t).copy()
        except Exception:  # an earlier mutation broke it
            return
        if arr.size and arr.dtype.kind == "f":
            arr.flat[rng.randrange(arr.size)] = rng.choice([np.nan, np.inf, -np.inf, 1e38])
        elif arr.size:
            arr.flat[rng.randrange(arr.size)] = rng.choice([-1, 1 << 40, -(1 << 62), 99])
        t.CopyFrom(numpy_helper.from_array(arr, t.name))
    else:
        t.ClearField("raw_data")
        t.float_data.extend([1.0] * rng.randrange(0, 5))


def _attr_nodes(m):
    return [n for n in m.graph.node if n.attribute]


def mut_attr_type(m, rng, folder):
    nodes = _attr_nodes(m)
    if not nodes:
        return
    a = rng.choice(rng.choice(nodes).attribute)
    A = onnx.AttributeProto
    kind = rng.choice(["float", "int", "ints", "string", "floats", "tensor", "graph", "none"])
    for f in ("f", "i", "s", "t", "g"):
        a.ClearField(f)
    for f in ("floats", "ints", "strings", "tensors", "graphs"):
        a.ClearField(f)
    if kind == "float":
        a.type, a.f = A.FLOAT, rng.choice([0.5, -1.0, 1e30, float("nan")])
    elif kind == "int":
        a.type, a.i = A.INT, rng.choice(HUGE + [2, 3])
    elif kind == "ints":
        a.type = A.INTS
        a.ints.extend(rng.choice([[], [1], [1, 2, 3, 4, 5, 6, 7], [-5, 0], [1 << 40, 1]]))
    elif kind == "string":
        a.type, a.s = A.STRING, rng.choice([b"", b"SAME_UPPER", b"\xff\xfe", b"NOTSET"])
    elif kind == "floats":
        a.type = A.FLOATS
        a.floats.extend([1.0, 2.0][:rng.randrange(3)])
    elif kind == "tensor":
        a.type = A.TENSOR
        a.t.CopyFrom(numpy_helper.from_array(np.zeros(rng.choice([0, 1, 3]), np.float32)))
    elif kind == "graph":
        a.type = A.GRAPH
        a.g.CopyFrom(helper.make_graph([], "empty", [], []))
    else:
        a.type = A.UNDEFINED


def mut_attr_value(m, rng, folder):
    nodes = _attr_nodes(m)
    if not nodes:
        return
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    choice = rng.random()
    if a.ints:
        i = rng.randrange(len(a.ints))
        a.ints[i] = rng.choice(HUGE + [a.ints[i] + 1, -a.ints[i]])
        if rng.random() < 0.3:
            a.ints.append(rng.choice([0, 1, 2]))
    elif a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(HUGE + [a.i + 1, -a.i, 2, 3, 4])
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, -1.0, 1e38, float("inf"), float("nan")])
    elif choice < 0.5:
        del n.attribute[rng.randrange(len(n.attribute))]
    if rng.random() < 0.2:
        n.attribute.append(helper.make_attribute(rng.choice(["alpha", "axis", "foo", "to"]),
                                                 rng.choice([1, 2.5, "x", [1, 2]])))


def mut_empty(m, rng, folder):
    choice = rng.random()
    g = m.graph
    if choice < 0.3:
        del g.node[:]
    elif choice < 0.5:
        del g.output[:]
    elif choice < 0.7:
        del g.input[:]
    elif choice < 0.85 and g.node:
        del g.node[rng.randrange(len(g.node)):]
    else:
        g.output.add().CopyFrom(g.output[0] if g.output else
                                helper.make_tensor_value_info("y2", TensorProto.FLOAT, None))


def mut_opset(m, rng, folder):
    choice = rng.random()
    if choice < 0.5 and m.opset_import:
        m.opset_import[0].version = rng.choice([0, -1, 1, 6, 9, 10, 11, 13, 22, 23, 99, 1 << 40])
    elif choice < 0.7:
        del m.opset_import[:]
    elif choice < 0.85 and m.graph.node:
        n = rng.choice(list(m.graph.node))
        n.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "my.domain", "ai.onnx"])
        if rng.random() < 0.5:
            m.opset_import.add().CopyFrom(helper.make_opsetid(n.domain, rng.choice([1, 99])))
    else:
        m.ir_version = rng.choice([0, 1, 3, 11, 13, 99, -1])


def mut_op_type(m, rng, folder):
    if not m.graph.node:
        return
    n = rng.choice(list(m.graph.node))
    n.op_type = rng.choice(OP_TYPES)


def mut_arity(m, rng, folder):
    if not m.graph.node:
        return
    n = rng.choice(list(m.graph.node))
    names = _names(m)
    if n.input and rng.random() < 0.5:
        del n.input[rng.randrange(len(n.input)):]
    else:
        n.input.extend(rng.sample(names, min(len(names), rng.randint(1, 3))))
    if rng.random() < 0.2:
        n.output.append("extra_out")


def mut_hostile_name(m, rng, folder):
    names = _names(m)
    if not names:
        return
    old, new = rng.choice(names), rng.choice(HOSTILE_NAMES)
    for v in _value_infos(m):
        v.name = new if v.name == old else v.name
    for t in m.graph.initializer:
        t.name = new if t.name == old else t.name
    for n in m.graph.node:
        n.input[:] = [new if i == old else i for i in n.input]
        n.output[:] = [new if o == old else o for o in n.output]
        if rng.random() < 0.2:
            n.name = rng.choice(HOSTILE_NAMES)
    if rng.random() < 0.3:
        m.graph.name = rng.choice(HOSTILE_NAMES)


def mut_external_data(m, rng, folder):
    """Move an initializer's data out of the model into a file: beside the model (allowed),
    or outside its folder (must be refused), by relative path, absolute path or symlink."""
    inits = [t for t in m.graph.initializer if t.data_location != TensorProto.EXTERNAL]
    if not inits:
        return
    t = rng.choice(inits)
    try:
        data = t.raw_data or numpy_helper.from_array(numpy_helper.to_array(t)).raw_data
    except Exception:  # an earlier mutation broke it: its dims, its type
        data = bytes(16)
    k = len(list(folder.iterdir()))  # files of earlier mutations keep their names
    outside = folder.parent / f"outside-{folder.name}-{k}.bin"
    outside.write_bytes(data)
    choice = rng.random()
    if choice < 0.2:
        (folder / f"weights{k}.bin").write_bytes(data)
        location = f"weights{k}.bin"
    elif choice < 0.4:
        location = f"../{outside.name}"
    elif choice < 0.55:
        location = str(outside.resolve())
    elif choice < 0.7:
        (folder / f"link{k}.bin").symlink_to(outside.resolve())
        location = f"link{k}.bin"
    elif choice < 0.8:
        location = "/proc/self/environ"
    elif choice < 0.9:
        location = "missing.bin"
    else:
        (folder / f"sub{k}").mkdir()
        (folder / f"sub{k}" / "w.bin").write_bytes(data)
        location = f"sub{k}/../sub{k}/w.bin"
    t.ClearField("raw_data")
    for f in ("float_data", "int64_data", "int32_data", "double_data"):
        t.ClearField(f)
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    entries = {"location": location}
    if rng.random() < 0.3:
        entries["offset"] = str(rng.choice([0, 4, 1 << 40, -8]))
    if rng.random() < 0.3:
        entries["length"] = str(rng.choice([0, 4, len(data), 1 << 40]))
    for k, v in entries.items():
        e = t.external_data.add()
        e.key, e.value = k, v


FIELD_MUTATIONS = [mut_dim, mut_dtype, mut_dangling, mut_duplicate, mut_cycle,
                   mut_missing_initializer, mut_initializer_data, mut_attr_type, mut_attr_value,
                   mut_empty, mut_opset, mut_op_type, mut_arity, mut_hostile_name,
                   mut_external_data]


def make_mutant(index: int, seed: int, folder: Path) -> tuple[str, list[str]]:
    """Write mutant `index` as folder/model.onnx; its seed model's name and mutations."""
    rng = random.Random(seed * 1_000_003 + index)
    seed_name = rng.choice(sorted(SEEDS))
    m = SEEDS[seed_name]()
    applied = []
    kind = rng.random()
    if kind < 0.8:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            mut = rng.choice(FIELD_MUTATIONS)
            mut(m, rng, folder)
            applied.append(mut.__name__[4:])
        data = m.SerializeToString()
    else:
        data = bytearray(m.SerializeToString())
        if kind < 0.9:
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
            applied.append("byte_flips")
        else:
            data = data[:rng.randrange(len(data))]
            applied.append("truncate")
        data = bytes(data)
    (folder / "model.onnx").write_bytes(data)
    return seed_name, applied


# -- the worker --------------------------------------------------------------------------------

def compile_and_run(model: Path, out: Path, ran: set[str] | None = None,
                    sanitize: bool = False) -> tuple[str, str]:
    """The outcome of compiling `model` into `out` and running it on random inputs, and its
    detail (a sanitized library's finding). `ran` holds the digests of the libraries already
    run (a mutant that compiles to one of those, a renamed tensor say, is not run again: its
    run would be the same)."""
    import edgec
    from edgec.errors import EdgecError
    from edgec.ir import DType

    try:
        art = edgec.compile(str(model), out, name="fuzzed", sanitize=sanitize)
        digest = hashlib.sha1()
        for f in sorted(art.manifest["sources"]) + ["fuzzed.weights.bin", "manifest.json"]:
            if (out / f).exists():
                digest.update((out / f).read_bytes())
        if ran is not None and digest.hexdigest() in ran:
            return "ran", ""
        lib = edgec.load(art.out_dir)
        rng = np.random.default_rng(0)
        feeds = {}
        for i in lib.manifest["inputs"]:
            dtype = np.dtype(DType(i["dtype"]).np)
            if dtype.kind in "fc":
                feeds[i["name"]] = rng.standard_normal(i["shape"]).astype(dtype)
            else:
                feeds[i["name"]] = rng.integers(0, 2, i["shape"]).astype(dtype)
        lib.run(feeds)
        if ran is not None:
            ran.add(digest.hexdigest())
        return "ran", ""
    except EdgecError as e:
        return edgec_error_outcome(e, sanitize)


def edgec_error_outcome(e: Exception, sanitize: bool) -> tuple[str, str]:
    """An EdgecError is a refusal, except from running a sanitized library, where a
    sanitizer's finding or the program killed by a signal (runtime/emulated.py raises both
    as an EdgecError) is a fault of the generated code."""
    msg = str(e)
    if sanitize and ("Sanitizer:" in msg or " died of " in msg):
        return "crash:library", msg
    return f"refused:{type(e).__name__}", ""


def worker() -> None:
    """Read mutant paths from stdin, one per line; answer each with a JSON line.

    EDGEC_FUZZ_SELF_TEST=bug|crash|hang|sanitizer makes every job fail that way instead (the
    harness's own test: each must be counted as such; "sanitizer" raises the EdgecError that
    the loader raises for a sanitizer's finding)."""
    ran: set[str] = set()
    self_test = os.environ.get("EDGEC_FUZZ_SELF_TEST")
    for line in sys.stdin:
        job = json.loads(line)
        model, out = Path(job["model"]), Path(job["out"])
        try:
            if self_test == "bug":
                raise KeyError("self test")
            if self_test == "crash":
                os.abort()
            if self_test == "hang":
                time.sleep(3600)
            if self_test == "sanitizer":
                from edgec.errors import EdgecError
                outcome, detail = edgec_error_outcome(EdgecError(
                    "fuzzed_run: AddressSanitizer: heap-buffer-overflow in k0_gather "
                    "(fuzzed.c:1); the sanitizer's report is in fuzzed-sanitizer.txt"), True)
            else:
                outcome, detail = compile_and_run(model, out, ran, job.get("sanitize", False))
        except BaseException as e:  # noqa: BLE001 - any other exception is what we look for
            outcome, detail = f"bug:{type(e).__name__}", traceback.format_exc()
        shutil.rmtree(out, ignore_errors=True)
        sys.stdout.write(json.dumps({"outcome": outcome, "detail": detail}) + "\n")
        sys.stdout.flush()


class Worker:
    """A worker process; `ask` sends it one mutant and waits at most `timeout` seconds."""

    def __init__(self, memory_gib: float | None, sanitize: bool = False):
        self.memory = None if memory_gib is None else int(memory_gib * (1 << 30))
        self.sanitize = sanitize
        self.proc: subprocess.Popen | None = None
        self.buf = b""

    def _start(self) -> None:
        limit = self.memory

        def limits():
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        env = dict(os.environ, EDGEC_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "edgec.testing.fuzz", "--worker"],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, preexec_fn=limits)
        self.buf = b""

    def ask(self, model: Path, out: Path, timeout: float) -> tuple[str, str]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        job = json.dumps({"model": str(model), "out": str(out),
                          "sanitize": self.sanitize}) + "\n"
        try:
            self.proc.stdin.write(job.encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                return "hang", f"no answer in {timeout:.0f} s"
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return self._died()
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        reply = json.loads(line)
        return reply["outcome"], reply["detail"]

    def _died(self) -> tuple[str, str]:
        code = self.proc.wait()
        self.proc = None
        return "crash", f"worker exit status {code}"

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def fuzz(mutants: int, seed: int = 0, workers: int = 2, timeout: float = 60.0,
         memory_gib: float = 4.0, keep: Path | None = None, progress: bool = True,
         sanitize: bool = False) -> dict:
    """Run `mutants` mutants; {"outcomes": {outcome: count}, "failures": [...],
    "mutations": {mutation: count}}. With `sanitize` the libraries are built and run with
    AddressSanitizer and UndefinedBehaviorSanitizer, and the workers have no memory limit."""
    counts: collections.Counter = collections.Counter()
    by_mutation: collections.Counter = collections.Counter()
    failures: list[dict] = []
    lock = threading.Lock()
    todo = iter(range(mutants))
    root = Path(tempfile.mkdtemp(prefix="edgec-fuzz-"))
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=mutants, unit="mutant", file=sys.stderr)

    errors: list[BaseException] = []

    def run_slot() -> None:
        w = Worker(None if sanitize else memory_gib, sanitize)
        try:
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                folder = root / f"m{i}"
                folder.mkdir()
                seed_name, applied = make_mutant(i, seed, folder)
                outcome, detail = w.ask(folder / "model.onnx", folder / "out", timeout)
                with lock:
                    counts[outcome] += 1
                    for a in applied:
                        by_mutation[a] += 1
                    if outcome.split(":")[0] in ("bug", "hang", "crash"):
                        failures.append({"index": i, "seed": seed_name, "mutations": applied,
                                         "outcome": outcome, "detail": detail})
                        if keep is not None:
                            keep.mkdir(parents=True, exist_ok=True)
                            shutil.copy(folder / "model.onnx", keep / f"mutant{i}.onnx")
                            (keep / f"mutant{i}.txt").write_text(
                                f"{outcome} ({seed_name}: {', '.join(applied)})\n{detail}")
                    if bar is not None:
                        bar.update()
                shutil.rmtree(folder, ignore_errors=True)
                for stray in root.glob(f"outside-m{i}-*.bin"):
                    stray.unlink()
        except BaseException as e:  # the harness's own failure: reported by fuzz()
            errors.append(e)
        finally:
            w.kill()

    threads = [threading.Thread(target=run_slot) for _ in range(workers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        if bar is not None:
            bar.close()
        shutil.rmtree(root, ignore_errors=True)
    if errors:
        raise RuntimeError("the fuzzer itself failed") from errors[0]
    failures.sort(key=lambda f: f["index"])
    return {"mutants": mutants, "seed": seed, "outcomes": dict(sorted(counts.items())),
            "mutations": dict(sorted(by_mutation.items())), "failures": failures}


def replay(path: Path, sanitize: bool = False) -> int:
    """Compile and run one saved mutant in this process, printing the outcome (and any
    traceback or sanitizer finding): for debugging a failure the fuzzer kept."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            outcome, detail = compile_and_run(path, Path(tmp) / "out", sanitize=sanitize)
            print(outcome, detail)
            if outcome.startswith("crash"):
                return 1
        except Exception:
            traceback.print_exc()
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mutants", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    p.add_argument("--memory", type=float, default=4.0,
                   help="GiB of address space per worker (not with --sanitize)")
    p.add_argument("--sanitize", action="store_true",
                   help="build and run each library with AddressSanitizer and UBSan")
    p.add_argument("--keep", type=Path, default=Path("fuzz-failures"),
                   help="folder for the mutants that ended in bug, hang or crash")
    p.add_argument("--json", type=Path, help="write the outcome counts and failures here")
    p.add_argument("--replay", type=Path, metavar="FILE.onnx")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker()
        return 0
    if a.replay:
        return replay(a.replay, a.sanitize)
    t0 = time.monotonic()
    result = fuzz(a.mutants, a.seed, a.workers, a.timeout, a.memory, a.keep,
                  sanitize=a.sanitize)
    result["seconds"] = round(time.monotonic() - t0, 1)
    if a.json:
        a.json.write_text(json.dumps(result, indent=2) + "\n")
    width = max(map(len, result["outcomes"]), default=0)
    result["sanitize"] = a.sanitize
    print(f"{a.mutants} mutants (seed {a.seed}{', sanitized' if a.sanitize else ''}) in "
          f"{result['seconds']} s:")
    for outcome, n in result["outcomes"].items():
        print(f"  {outcome:<{width}}  {n}")
    for f in result["failures"][:20]:
        last = f["detail"].strip().splitlines()[-1] if f["detail"].strip() else ""
        print(f"mutant {f['index']} ({f['seed']}: {', '.join(f['mutations'])}): "
              f"{f['outcome']}: {last}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
