"""One small model per family real users bring, each in the form its exporter emits: a
BERT-style encoder layer, a two-scale detector, a 1-D audio CNN, a tf2onnx NHWC CNN, and a
model of ONNX functions as torch's dynamo exporter writes them."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .builder import Builder, finish, value_info


def _linear(b: Builder, x: str, prefix: str, scope: str, cin: int, cout: int) -> str:
    """nn.Linear on a rank-3 input as torch exports it: MatMul with the transposed weight, Add."""
    w = b.rng.normal(0, math.sqrt(1 / cin), (cin, cout)).astype(np.float32)
    y = b.node("MatMul", [x, b.init(f"onnx::MatMul_{prefix}", w)], scope)
    return b.node("Add", [b.init(f"{prefix}.bias", b.uniform(-0.1, 0.1, cout)), y], scope)


def _layer_norm(b: Builder, x: str, prefix: str, scope: str, d: int) -> str:
    gamma = b.init(f"{prefix}.weight", b.uniform(0.8, 1.2, d))
    beta = b.init(f"{prefix}.bias", b.uniform(-0.1, 0.1, d))
    return b.node("LayerNormalization", [x, gamma, beta], scope, axis=-1, epsilon=1e-12)


def _shape_dims(b: Builder, x: str, dims: Sequence[int], scope: str) -> list[str]:
    """`x.size(i)` for i in dims, as the tracer records it: Shape -> Gather -> Unsqueeze."""
    shape = b.node("Shape", [x], scope)
    return [b.unsqueeze(b.node("Gather", [shape, b.constant(np.array(i, np.int64), scope)],
                               scope, axis=0), [0], scope) for i in dims]


def _view(b: Builder, x: str, like: str, tail: Sequence[int], scope: str) -> str:
    """`x.view(like.size(0), like.size(1), *tail)`: the target shape computed from Shape."""
    dims = _shape_dims(b, like, (0, 1), scope)
    target = b.node("Concat", [*dims, b.constant(np.array(tail, np.int64), scope)], scope, axis=0)
    return b.node("Reshape", [x, target], scope)


def transformer_encoder(opset: int = 17, batch: int | str = 1, seq: int | str = 16,
                        d_model: int = 64, heads: int = 4, ffn: int = 128, vocab: int = 100,
                        max_len: int = 32, gelu: str = "", mask: str = "mul",
                        seed: int = 0) -> onnx.ModelProto:
    """A BERT-style encoder layer: input_ids [batch, seq] (+ a padding mask) -> [batch, seq, d].

    Embeddings: word + position (a `position_ids` buffer sliced to the sequence length) + token
    type (zeros made by `Shape -> Slice -> ConstantOfShape`), LayerNorm. Self-attention: Q/K/V
    projections viewed as [b, t, heads, d/heads] with shapes computed by Shape -> Gather ->
    Unsqueeze -> Concat, scores / sqrt(d/heads) + mask, Softmax, back to [b, t, d], output
    projection, residual, LayerNorm; then Linear -> GELU -> Linear, residual, LayerNorm.

    `gelu`: "op" (the Gelu op, opset 20), "tanh" (the Gelu op, approximate="tanh") or "erf"
    (0.5 * x * (1 + erf(x / sqrt(2))), as torch exports nn.GELU before opset 20); by default the
    op where the opset has it. `mask`: "mul" takes `attention_mask` (int64, 1 = attend) and
    adds (1 - mask) * -10000 as BERT does; "where" takes `key_padding_mask` (bool, True = pad)
    and adds Where(mask, -inf, 0) as torch's MultiheadAttention does. `batch` and `seq` may be
    names: the model then has symbolic dims, as `torch.onnx.export(dynamic_axes=...)` writes.
    """
    if opset < 17:
        raise ValueError(f"LayerNormalization needs opset 17 or later, got {opset}")
    gelu = gelu or ("op" if opset >= 20 else "erf")
    if gelu not in ("op", "tanh", "erf") or mask not in ("mul", "where"):
        raise ValueError(f"gelu must be 'op', 'tanh' or 'erf' and mask 'mul' or 'where': "
                         f"{gelu}, {mask}")
    if gelu != "erf" and opset < 20:
        raise ValueError(f"the Gelu op needs opset 20 or later, got {opset}")
    if d_model % heads:
        raise ValueError(f"d_model {d_model} is not a multiple of heads {heads}")
    b = Builder(seed, opset)
    dh = d_model // heads
    # embeddings ----------------------------------------------------------------------------
    emb = "/embeddings"
    words = b.init("embeddings.word_embeddings.weight",
                   b.rng.normal(0, 1, (vocab, d_model)).astype(np.float32))
    x = b.node("Gather", [words, "input_ids"], f"{emb}/word_embeddings")
    (t,) = _shape_dims(b, "input_ids", (1,), emb)
    pos_ids = b.init("embeddings.position_ids", np.arange(max_len, dtype=np.int64)[None])
    pos_ids = b.node("Slice", [pos_ids, b.constant(np.array([0], np.int64), emb), t,
                               b.constant(np.array([1], np.int64), emb)], emb)
    pos = b.init("embeddings.position_embeddings.weight",
                 b.rng.normal(0, 0.5, (max_len, d_model)).astype(np.float32))
    x = b.node("Add", [x, b.node("Gather", [pos, pos_ids], f"{emb}/position_embeddings")], emb)
    shape = b.node("Shape", [x], emb)
    bt = b.node("Slice", [shape, b.constant(np.array([0], np.int64), emb),
                          b.constant(np.array([2], np.int64), emb)], emb)
    types = b.node("ConstantOfShape", [bt], emb,
                   value=numpy_helper.from_array(np.array([0], np.int64)))
    tok = b.init("embeddings.token_type_embeddings.weight",
                 b.rng.normal(0, 0.5, (2, d_model)).astype(np.float32))
    x = b.node("Add", [x, b.node("Gather", [tok, types], f"{emb}/token_type_embeddings")], emb)
    x = _layer_norm(b, x, "embeddings.LayerNorm", f"{emb}/LayerNorm", d_model)
    # additive attention mask, [b, 1, 1, t] -------------------------------------------------
    att = "/encoder/layer.0/attention/self"
    if mask == "mul":
        m = b.node("Cast", ["attention_mask"], "", to=TensorProto.FLOAT)
        m = b.node("Sub", [b.constant(np.float32(1.0)), m], "")
        m = b.node("Mul", [m, b.constant(np.float32(-10000.0))], "")
    else:
        m = b.node("Where", ["key_padding_mask", b.constant(np.float32(-np.inf)),
                             b.constant(np.float32(0.0))], "")
    m = b.unsqueeze(m, [1, 2])
    # self-attention --------------------------------------------------------------------------
    pre = "encoder.layer.0.attention"

    def heads_of(name: str, perm: list[int]) -> str:
        y = _linear(b, x, f"{pre}.self.{name}", f"{att}/{name}", d_model, d_model)
        y = _view(b, y, x, [heads, dh], att)
        return b.node("Transpose", [y], att, perm=perm)

    q = heads_of("query", [0, 2, 1, 3])
    k = heads_of("key", [0, 2, 3, 1])
    v = heads_of("value", [0, 2, 1, 3])
    s = b.node("MatMul", [q, k], att)
    s = b.node("Div", [s, b.constant(np.float32(math.sqrt(dh)), att)], att)
    s = b.node("Add", [s, m], att)
    p = b.node("Softmax", [s], att, axis=-1)
    ctx = b.node("Transpose", [b.node("MatMul", [p, v], att)], att, perm=[0, 2, 1, 3])
    ctx = _view(b, ctx, x, [d_model], att)
    out = "/encoder/layer.0/attention/output"
    y = _linear(b, ctx, f"{pre}.output.dense", f"{out}/dense", d_model, d_model)
    x = _layer_norm(b, b.node("Add", [y, x], out), f"{pre}.output.LayerNorm", f"{out}/LayerNorm",
                    d_model)
    # feed-forward --------------------------------------------------------------------------
    mid = "/encoder/layer.0/intermediate"
    h = _linear(b, x, "encoder.layer.0.intermediate.dense", f"{mid}/dense", d_model, ffn)
    if gelu != "erf":
        h = b.node("Gelu", [h], f"{mid}/intermediate_act_fn",
                   approximate="none" if gelu == "op" else "tanh")
    else:
        act = f"{mid}/intermediate_act_fn"
        e = b.node("Erf", [b.node("Div", [h, b.constant(np.float32(math.sqrt(2)), act)], act)],
                   act)
        e = b.node("Add", [e, b.constant(np.float32(1.0), act)], act)
        h = b.node("Mul", [b.node("Mul", [h, e], act), b.constant(np.float32(0.5), act)], act)
    out = "/encoder/layer.0/output"
    y = _linear(b, h, "encoder.layer.0.output.dense", f"{out}/dense", ffn, d_model)
    x = _layer_norm(b, b.node("Add", [y, x], out), "encoder.layer.0.output.LayerNorm",
                    f"{out}/LayerNorm", d_model)
    mask_info = (value_info("attention_mask", TensorProto.INT64, [batch, seq]) if mask == "mul"
                 else value_info("key_padding_mask", TensorProto.BOOL, [batch, seq]))
    return finish(b, "main_graph",
                   [value_info("input_ids", TensorProto.INT64, [batch, seq]), mask_info],
                   [(x, value_info("last_hidden_state", TensorProto.FLOAT,
                                    [batch, seq, d_model]))])


def detection_head(opset: int = 13, batch: int = 1, size: int = 32, anchors: int = 3,
                   classes: int = 4, seed: int = 0) -> onnx.ModelProto:
    """A two-scale YOLO-style detector: images [n, 3, size, size] -> [n, boxes, 4 + classes].

    Backbone: conv/2-bn-relu (P3, size/2), conv/2-relu (P4, size/4). Neck: P4 -> 1x1 conv ->
    Resize(nearest, x2) -> Concat with P3 (FPN-like). Each level's head conv gives
    anchors * (4 + classes) channels, viewed as [n, anchors, 4 + classes, h, w], transposed to
    [n, anchors, h, w, 4 + classes], Split into box and class logits; the box is Sliced into
    xy (Sigmoid) and wh (Exp), classes get Sigmoid; then both levels concatenated.
    """
    b = Builder(seed, opset)
    p3 = b.node("Relu", [b.bn(b.conv("images", "backbone.0", "/backbone/backbone.0", 3, 16, 3, 2),
                              "backbone.1", "/backbone/backbone.1", 16)], "/backbone/backbone.2")
    p4 = b.node("Relu", [b.conv(p3, "backbone.3", "/backbone/backbone.3", 16, 32, 3, 2,
                                bias=True)], "/backbone/backbone.4")
    lat = b.conv(p4, "neck.lateral", "/neck/lateral", 32, 16, 1, bias=True)
    # opsets 11-12 require the roi input (torch passes an empty one); 13 lets it be omitted
    roi = "" if opset >= 13 else b.constant(np.zeros(0, np.float32), "/neck")
    up = b.node("Resize", [lat, roi, b.constant(np.array([1, 1, 2, 2], np.float32), "/neck")],
                "/neck", coordinate_transformation_mode="asymmetric", cubic_coeff_a=-0.75,
                mode="nearest", nearest_mode="floor")
    p3 = b.node("Concat", [up, p3], "/neck", axis=1)
    levels = []
    for i, (x, cin, hw) in enumerate(((p3, 32, size // 2), (p4, 32, size // 4))):
        scope = f"/head/head.{i}"
        y = b.conv(x, f"head.{i}", scope, cin, anchors * (4 + classes), 1, bias=True)
        y = b.node("Reshape", [y, b.constant(np.array([batch, anchors, 4 + classes, hw, hw],
                                                      np.int64), scope)], scope)
        y = b.node("Transpose", [y], scope, perm=[0, 1, 3, 4, 2])
        if opset >= 13:
            b.node("Split", [y, b.constant(np.array([4, classes], np.int64), scope)], scope,
                   n_out=2, axis=-1)
        else:
            b.node("Split", [y], scope, n_out=2, axis=-1, split=[4, classes])
        box, cls = b.nodes[-1].output

        def part(lo: int, hi: int, scope: str = scope, box: str = box) -> str:
            return b.node("Slice", [box, *(b.constant(np.array([v], np.int64), scope)
                                           for v in (lo, hi, -1))], scope)

        xy = b.node("Sigmoid", [part(0, 2)], scope)
        wh = b.node("Exp", [part(2, 4)], scope)
        y = b.node("Concat", [xy, wh, b.node("Sigmoid", [cls], scope)], scope, axis=-1)
        levels.append(b.node("Reshape", [y, b.constant(np.array([batch, -1, 4 + classes],
                                                                np.int64), scope)], scope))
    y = b.node("Concat", levels, "/head", axis=1)
    boxes = anchors * ((size // 2) ** 2 + (size // 4) ** 2)
    return finish(b, "main_graph", [value_info("images", TensorProto.FLOAT,
                                                 [batch, 3, size, size])],
                   [(y, value_info("detections", TensorProto.FLOAT,
                                    [batch, boxes, 4 + classes]))])


def audio_cnn(opset: int = 13, batch: int = 1, samples: int = 1024, classes: int = 10,
              seed: int = 0) -> onnx.ModelProto:
    """A 1-D conv keyword spotter: waveform [n, 1, samples] -> [n, classes].

    Conv1d(1->16, k=9, stride 4) BN ReLU, Conv1d(16->32, k=5, dilation 2) BN ReLU, MaxPool1d(3,
    stride 2), Conv1d(32->32, k=3, stride 2, dilation 3, groups 4) BN ReLU, GlobalAveragePool,
    Flatten, Linear.
    """
    b = Builder(seed, opset)
    x = "waveform"
    layers = ((1, 16, 9, 4, 1, 1), (16, 32, 5, 1, 2, 1), (32, 32, 3, 2, 3, 4))
    for i, (cin, cout, k, stride, dil, groups) in enumerate(layers):
        scope = f"/features/features.{3 * i}"
        w = b.rng.normal(0, math.sqrt(2 / (cin // groups * k)), (cout, cin // groups, k))
        pad = dil * (k - 1) // 2
        x = b.node("Conv", [x, b.init(f"features.{3 * i}.weight", w.astype(np.float32))], scope,
                   dilations=[dil], group=groups, kernel_shape=[k], pads=[pad, pad],
                   strides=[stride])
        x = b.bn(x, f"features.{3 * i + 1}", f"/features/features.{3 * i + 1}", cout)
        x = b.node("Relu", [x], f"/features/features.{3 * i + 2}")
        if i == 1:
            x = b.node("MaxPool", [x], "/pool", ceil_mode=0, dilations=[1], kernel_shape=[3],
                       pads=[1, 1], strides=[2])
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 32, classes)
    return finish(b, "main_graph",
                   [value_info("waveform", TensorProto.FLOAT, [batch, 1, samples])],
                   [(x, value_info("logits", TensorProto.FLOAT, [batch, classes]))])


def nhwc_cnn(opset: int = 13, batch: int = 1, size: int = 16, classes: int = 5,
             seed: int = 0) -> onnx.ModelProto:
    """A Keras CNN as tf2onnx converts it: NHWC image [n, size, size, 3] -> softmax [n, classes].

    Every NCHW op sits between Transpose(0, 3, 1, 2) and Transpose(0, 2, 3, 1); the Keras ops
    that work in NHWC (ReLU, a per-channel Mul, the residual Add) run between those pairs. The
    classifier flattens in NHWC order with Reshape [-1, h * w * c] and uses MatMul + Add.
    """
    b = Builder(seed, opset)
    base = "StatefulPartitionedCall/model"
    to_nchw, to_nhwc = [0, 3, 1, 2], [0, 2, 3, 1]

    def conv(x: str, name: str, cin: int, cout: int, k: int, stride: int) -> str:
        scope = f"{base}/{name}"
        x = b.node("Transpose", [x], scope, perm=to_nchw)
        w = b.rng.normal(0, math.sqrt(2 / (cin * k * k)), (cout, cin, k, k)).astype(np.float32)
        # tf 'same' padding, resolved by tf2onnx into explicit pads
        lo = (k - 1) // 2 if stride == 1 else (k - stride) // 2
        hi = k - 1 - lo if stride == 1 else k - stride - lo
        x = b.node("Conv", [x, b.init(f"{scope}/Conv2D/ReadVariableOp:0", w),
                            b.init(f"{scope}/BiasAdd/ReadVariableOp:0",
                                   b.uniform(-0.1, 0.1, cout))], scope,
                   dilations=[1, 1], group=1, kernel_shape=[k, k], pads=[lo, lo, hi, hi],
                   strides=[stride, stride])
        return b.node("Transpose", [x], scope, perm=to_nhwc)

    x = conv("input_1:0", "conv2d", 3, 16, 3, 1)
    x = b.node("Relu", [x], f"{base}/conv2d/Relu")
    skip = x
    x = conv(x, "conv2d_1", 16, 16, 3, 1)
    x = b.node("Mul", [x, b.init(f"{base}/scale/mul/y:0", b.uniform(0.5, 1.5, 16))],
               f"{base}/scale")
    x = b.node("Relu", [b.node("Add", [x, skip], f"{base}/add")], f"{base}/re_lu")
    pool = f"{base}/max_pooling2d"
    x = b.node("Transpose", [x], pool, perm=to_nchw)
    x = b.node("MaxPool", [x], pool, ceil_mode=0, kernel_shape=[2, 2], pads=[0, 0, 0, 0],
               strides=[2, 2])
    x = b.node("Transpose", [x], pool, perm=to_nhwc)
    x = b.node("Relu", [conv(x, "conv2d_2", 16, 8, 3, 2)], f"{base}/conv2d_2/Relu")
    flat = (size // 4) ** 2 * 8
    x = b.node("Reshape", [x, b.init(f"{base}/flatten/Const:0", np.array([-1, flat], np.int64))],
               f"{base}/flatten")
    w = b.rng.normal(0, math.sqrt(1 / flat), (flat, classes)).astype(np.float32)
    x = b.node("MatMul", [x, b.init(f"{base}/dense/MatMul/ReadVariableOp:0", w)],
               f"{base}/dense")
    x = b.node("Add", [x, b.init(f"{base}/dense/BiasAdd/ReadVariableOp:0",
                                 b.uniform(-0.1, 0.1, classes))], f"{base}/dense")
    x = b.node("Softmax", [x], f"{base}/dense", axis=-1)
    return finish(b, "tf2onnx",
                   [value_info("input_1:0", TensorProto.FLOAT, [batch, size, size, 3])],
                   [(x, value_info("dense:0", TensorProto.FLOAT, [batch, classes]))],
                   producer=("tf2onnx", "1.16.1 15c810"))


TORCH_DOMAIN = "pkg.torch.2.5.0"
TORCHLIB_DOMAIN = "pkg.onnxscript.torch_lib"


def _function(domain: str, name: str, inputs: Sequence[str], outputs: Sequence[str],
              nodes: Sequence[onnx.NodeProto], opset: int, attributes: Sequence[str] = (),
              defaults: Sequence[onnx.AttributeProto] = (),
              calls: Sequence[str] = ()) -> onnx.FunctionProto:
    return helper.make_function(
        domain, name, list(inputs), list(outputs), list(nodes),
        [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in calls],
        attributes=list(attributes), attribute_protos=list(defaults))


def _ref(name: str, ref: str, kind: int) -> onnx.AttributeProto:
    """An attribute whose value is the calling node's attribute `ref` (inside a function)."""
    return onnx.AttributeProto(name=name, ref_attr_name=ref, type=kind)


def torch_functions(opset: int = 18, batch: int = 2, features: int = 16, hidden: int = 32,
                    classes: int = 6, seed: int = 0) -> onnx.ModelProto:
    """An MLP as torch's dynamo exporter writes it: modules become model-local functions.

    `pkg.torch...::Linear(x, weight, bias)` (MatMul of the transposed weight, Add), the torch_lib
    functions `aten_leaky_relu(self){negative_slope}` and `aten_softmax(self){dim}` whose bodies
    read their attributes through `ref_attr_name` (`dim` has a default), and
    `pkg.torch...::Block(x, w, b){negative_slope}`, which calls Linear and passes its own
    attribute on to aten_leaky_relu: functions nested two deep.
    Graph: Block(0.1) -> Block(0.2) -> Linear -> aten_softmax (dim by default).
    """
    b = Builder(seed, opset)
    linear = _function(TORCH_DOMAIN, "Linear", ["x", "weight", "bias"], ["y"], [
        helper.make_node("Transpose", ["weight"], ["wt"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "wt"], ["xw"]),
        helper.make_node("Add", ["xw", "bias"], ["y"])], opset)
    leaky = onnx.NodeProto(op_type="LeakyRelu", input=["self"], output=["result"])
    leaky.attribute.append(_ref("alpha", "negative_slope", onnx.AttributeProto.FLOAT))
    aten_leaky = _function(TORCHLIB_DOMAIN, "aten_leaky_relu", ["self"], ["result"], [leaky],
                           opset, attributes=["negative_slope"])
    softmax = onnx.NodeProto(op_type="Softmax", input=["self"], output=["result"])
    softmax.attribute.append(_ref("axis", "dim", onnx.AttributeProto.INT))
    aten_softmax = _function(TORCHLIB_DOMAIN, "aten_softmax", ["self"], ["result"], [softmax],
                             opset, defaults=[helper.make_attribute("dim", -1)])
    act = helper.make_node("aten_leaky_relu", ["h"], ["y"], domain=TORCHLIB_DOMAIN)
    act.attribute.append(_ref("negative_slope", "negative_slope", onnx.AttributeProto.FLOAT))
    block = _function(TORCH_DOMAIN, "Block", ["x", "weight", "bias"], ["y"], [
        helper.make_node("Linear", ["x", "weight", "bias"], ["h"], domain=TORCH_DOMAIN), act],
        opset, attributes=["negative_slope"], calls=[TORCH_DOMAIN, TORCHLIB_DOMAIN])

    def params(name: str, cin: int, cout: int) -> list[str]:
        w = b.rng.normal(0, math.sqrt(2 / cin), (cout, cin)).astype(np.float32)
        return [b.init(f"{name}.weight", w), b.init(f"{name}.bias", b.uniform(-0.1, 0.1, cout))]

    x = "x"
    for i, (cin, slope) in enumerate(((features, 0.1), (hidden, 0.2))):
        call = helper.make_node("Block", [x, *params(f"blocks.{i}.linear", cin, hidden)],
                                [f"blocks_{i}"], name=f"blocks_{i}", domain=TORCH_DOMAIN,
                                negative_slope=slope)
        b.nodes.append(call)
        x = call.output[0]
    b.nodes.append(helper.make_node("Linear", [x, *params("head", hidden, classes)], ["head"],
                                    name="head", domain=TORCH_DOMAIN))
    # no `dim` at the call: the function's default applies
    b.nodes.append(helper.make_node("aten_softmax", ["head"], ["softmax"], name="softmax",
                                    domain=TORCHLIB_DOMAIN))
    return finish(b, "main_graph", [value_info("x", TensorProto.FLOAT, [batch, features])],
                   [("softmax", value_info("probs", TensorProto.FLOAT, [batch, classes]))],
                   producer=("pytorch", "2.5.0"),
                   opsets=[(TORCH_DOMAIN, 1), (TORCHLIB_DOMAIN, 1)],
                   functions=[linear, aten_leaky, aten_softmax, block])


FAMILIES = {"transformer_encoder": transformer_encoder, "detection_head": detection_head,
            "audio_cnn": audio_cnn, "nhwc_cnn": nhwc_cnn, "torch_functions": torch_functions}

