"""The kernel IR's op table (kernel_ir/ops.py OPS) against its consumers: the printer, the
interpreter, the C renderer and the LLVM renderer each have an entry for every op, keyed by
`Op`, taking the op's fields by name; and `Expr` checks itself against the table."""

import inspect

import pytest

from edgec.codegen.renderers.c import CRenderer
from edgec.codegen.renderers.llvm_functions import _FunctionBuilder
from edgec.ir.dtypes import DType
from edgec.kernel_ir import interpreter, printer
from edgec.kernel_ir.kernel import (
    Buffer,
    Expr,
    Loop,
    LoopKind,
    Op,
    Role,
    Space,
    Stream,
    const,
    hreduce,
    pairdot,
    vload,
)
from edgec.kernel_ir.ops import OPS, uncovered

# each consumer: its dispatch tables (an op is covered when one of them has it) and, where
# the entries take the op's fields as keyword arguments, how many positional ones come first
CONSUMERS = {
    "printer": ([printer.EXPRESSIONS], ("e", "outer")),
    "interpreter": ([interpreter.COMPILERS], None),
    "C renderer": ([CRenderer.expressions, CRenderer.vector_expressions], ("self", "e")),
    "LLVM renderer": ([_FunctionBuilder.expressions], None),
}


def test_the_table_declares_every_op():
    assert set(OPS) == set(Op)


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_every_op_is_covered(consumer):
    tables, _ = CONSUMERS[consumer]
    assert uncovered(tables) == [], f"the {consumer} has no entry for these ops"
    for t in tables:
        assert all(type(k) is Op for k in t), f"the {consumer}'s table has keys that are no Op"


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_a_missing_entry_is_caught(consumer):
    """Each op in turn taken out of copies of the consumer's tables: the check names it."""
    tables, _ = CONSUMERS[consumer]
    for op in OPS:
        copies = [{k: v for k, v in t.items() if k is not op} for t in tables]
        assert uncovered(copies) == [op]


def test_a_string_keyed_table_is_caught():
    copy = {str(k): v for k, v in printer.EXPRESSIONS.items()}
    assert uncovered([copy]) == []  # the StrEnum's text finds the entries ...
    assert not all(type(k) is Op for k in copy)  # ... which the keys test refuses


@pytest.mark.parametrize("consumer", [c for c, (_, lead) in CONSUMERS.items() if lead])
def test_entries_take_the_ops_fields_by_name(consumer):
    tables, lead = CONSUMERS[consumer]
    for t in tables:
        for op, fn in t.items():
            fields = dict.fromkeys(OPS[op].names)
            try:
                inspect.signature(fn).bind(*lead, **fields)
            except TypeError as e:
                pytest.fail(f"{consumer}: the entry of {op} ({fn.__name__}) does not take the "
                            f"fields {list(fields)}: {e}")


def test_a_misnamed_entry_is_caught():
    def wrong(self, e, buf, index, tail):  # vload's third field is "count"
        return "", 16

    with pytest.raises(TypeError):
        inspect.signature(wrong).bind("self", "e", **dict.fromkeys(OPS[Op.VLOAD].names))


# -- Expr against the table ------------------------------------------------------------------

X = Buffer("x", DType.F32, (16,))


def test_fields_by_name():
    e = vload(X, 4, 8, count=3)
    assert e.op is Op.VLOAD and e.op == "vload"
    assert e.field("buf") is X and e.field("index").value == 4 and e.field("count").value == 3
    assert vload(X, 0, 8).field("count") is None
    assert list(e.fields()) == ["buf", "index", "count"]
    acc = const(0, DType.I32)
    a, b = (Expr(Op.VAR, DType.I8, (n,), 16) for n in "ab")
    p = pairdot(acc, ((a, b), (b, a)), 1)
    assert p.field("half").value == 1 and p.field("pairs") == (a, b, b, a)
    assert hreduce("max", Expr(Op.VAR, DType.F32, ("v",), 8)).field("fold") is Op.MAX
    with pytest.raises(TypeError, match="vload has no field lanes; its fields are buf, index, "
                                        "count"):
        e.field("lanes")


def test_construction_is_checked():
    one = const(1.0, DType.F32)
    with pytest.raises(TypeError, match="unknown op 'fmadd'"):
        Expr("fmadd", DType.F32, (one, one, one))
    with pytest.raises(TypeError, match=r"add takes 2 args \(a, b\), got 1"):
        Expr(Op.ADD, DType.F32, (one,))
    with pytest.raises(TypeError, match=r"call takes 2 to 3 args \(fn, operands\), got 4"):
        Expr(Op.CALL, DType.F32, ("pow", one, one, one))
    with pytest.raises(TypeError, match="vload's field index takes an expression, not 0"):
        Expr(Op.VLOAD, DType.F32, (X, 0, None), 8)
    with pytest.raises(TypeError, match="load's field buf takes a Buffer"):
        Expr(Op.LOAD, DType.F32, ("x", const(0)))
    with pytest.raises(TypeError, match="lt gives bool, not f32"):
        Expr(Op.LT, DType.F32, (one, one))
    with pytest.raises(TypeError, match="load gives f32, not i32"):
        Expr(Op.LOAD, DType.I32, (X, const(0)))
    with pytest.raises(TypeError, match="hreduce's field fold takes add, max or min"):
        Expr(Op.HREDUCE, DType.F32, ("mul", Expr(Op.VAR, DType.F32, ("v",), 8)))
    assert Expr("add", DType.F32, (one, one)).op is Op.ADD  # the text is accepted
    v = Expr(Op.VAR, DType.F32, ("v",), 8)
    assert Expr("hreduce", DType.F32, ("max", v)).field("fold") is Op.MAX


def test_loop_kinds_spaces_and_roles_are_enums():
    loop = Loop("i", const(4), [], "parallel")
    assert loop.kind is LoopKind.PARALLEL and f"{loop.kind}" == "parallel"
    buf = Buffer("s", DType.F32, (4,), "scratch", space="shared")
    assert buf.role is Role.SCRATCH and buf.space is Space.SHARED
    assert buf == Buffer("s", DType.F32, (4,), Role.SCRATCH, space=Space.SHARED)
    assert Stream("q", DType.F32, 2, "out").role is Role.OUT
    with pytest.raises(ValueError, match="unknown memory space texture; one of global, "
                                         "shared, local"):
        Buffer("t", DType.F32, (4,), space="texture")
    with pytest.raises(ValueError, match="unknown buffer role inout"):
        Buffer("t", DType.F32, (4,), "inout")
    with pytest.raises(ValueError, match="stream q has role const; a stream is in or out"):
        Stream("q", DType.F32, 2, "const")
    with pytest.raises(ValueError, match="unknown loop kind warp"):
        Loop("i", const(4), [], "warp")


# -- the vector ISAs' tables -------------------------------------------------------------------

def test_isa_tables_are_keyed_by_op_or_form():
    from edgec.codegen.renderers.c_isas import AVX2_VNNI, NEON_DOTPROD, VECTOR_ISAS, Form
    for isa in (*VECTOR_ISAS.values(), AVX2_VNNI, NEON_DOTPROD):
        assert isa.ops and all(type(op) in (Op, Form) and isinstance(dt, DType)
                               for op, dt in isa.ops), isa.name
        assert isa.ops[("fma", DType.F32)] == isa.ops[(Op.FMA, DType.F32)]


def test_a_misspelled_isa_entry_is_refused():
    from dataclasses import replace

    from edgec.codegen.renderers.c_isas import AVX2
    with pytest.raises(ValueError, match="'lod_n' is neither a kernel-IR op nor a form"):
        replace(AVX2, ops=AVX2.ops | {("lod_n", DType.F32): "_mm256_maskload_ps({p})"})
    with pytest.raises(ValueError, match="'f32' is no DType"):
        replace(AVX2, ops={("load", "f32"): "_mm256_loadu_ps({p})"})
