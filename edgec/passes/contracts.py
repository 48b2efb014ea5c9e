"""What a pass does to the compile record (ir/records.py): the fields it requires, writes and
invalidates, and the check that a pipeline keeps each requirement.

A field a pass requires must hold when the pass runs: on the graph before the pipeline or
written by an earlier pass, and not invalidated by any pass between the writer and the
reader. A pass that declares nothing invalidates the fields that any edit of the graph makes
stale (the memory plan): a pass that cannot edit the graph says `invalidates=()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import PassError
from ..ir.records import RECORDS, record_kind


@dataclass(frozen=True)
class PassContract:
    requires: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    invalidates: tuple[str, ...] = ()


def make_contract(requires: Iterable[str] = (), writes: Iterable[str] = (),
                  invalidates: Iterable[str] | None = None) -> PassContract:
    """A checked contract; `invalidates` None: what an edit of the graph makes stale, less
    what the pass writes itself."""
    requires, writes = tuple(requires), tuple(writes)
    if invalidates is None:
        invalidates = [n for n, k in RECORDS.items() if k.stale_after_edit and n not in writes]
    invalidates = tuple(invalidates)
    for name in (*requires, *writes, *invalidates):
        record_kind(name)  # a PassError for a field the record does not have
    return PassContract(requires, writes, invalidates)


DEFAULT_CONTRACT = make_contract()


def check_contracts(passes: Sequence[tuple[str, PassContract]], present: Iterable[str] = (),
                    needs: Mapping[str, str] | None = None) -> None:
    """Raise PassError where a pass of `passes` (name, contract, in pipeline order) requires
    a field that neither `present` (fields the graph holds before the pipeline) nor an
    earlier pass gives it, or that a pass in between invalidates; `needs`: field -> the
    stage that reads it after the pipeline (code generation reads the memory plan)."""
    pipeline = ",".join(name for name, _ in passes)
    valid: dict[str, str | None] = {f: None for f in present}  # field -> pass that wrote it
    stale: dict[str, tuple[str | None, str]] = {}  # field -> (writer, pass that invalidated)

    def check(field: str, reader: str) -> None:
        kind = record_kind(field)
        if field in valid:
            return
        if field in stale:
            writer, late = stale[field]
            made = f"'{writer}' writes" if writer else "the graph held"
            raise PassError(f"pipeline {pipeline}: {reader} requires the {kind.what} that "
                            f"{made}, but '{late}' runs between them and invalidates it; "
                            f"run '{kind.writer}' after '{late}'")
        raise PassError(f"pipeline {pipeline}: {reader} requires the {kind.what}, which "
                        f"pass '{kind.writer}' writes, and no pass before it does; run "
                        f"'{kind.writer}' before {reader}")

    for name, contract in passes:
        for field in contract.requires:
            check(field, f"'{name}'")
        for field in contract.invalidates:
            if field in valid:
                stale[field] = (valid.pop(field), name)
        for field in contract.writes:
            valid[field] = name
            stale.pop(field, None)
    for field, reader in (needs or {}).items():
        check(field, reader)
