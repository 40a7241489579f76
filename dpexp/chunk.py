"""``ChunkRows``: what the splits of one ``run_many`` call share with the other calls of their chunk.

The runner computes a chunk (one dataset variant, one repeat, a block of subsets) size by size; at each size it makes
one split per subset and hands the same splits to every algorithm variant and budget.  Work that is a pure function of
some rows (a layout of the private rows, the public rows' exact statistics, a public-only fit) may then be done once
and kept for the chunk's other calls.  ``ChunkRows`` says explicitly which rows a split holds, so such work is kept
under keys that name rows, never under an object's ``id()``:

* ``subsets`` and ``prefix``: the subset of each split of the call, and the size's prefix lengths, the rows
  ``(n_test, n_public, n_private)`` asked of each part (as ``Sizes``; n_private -1: every row);
* ``nested``: the dataset's promise (``Dataset.nested_sizes``) that within a chunk each part of a subset's split is
  the first rows of that subset's whole part (the rows of the largest size), a function of that part's prefix length
  alone, read-only: so a part is named by (subset, part, its length) at every size.  Without the promise a part is
  named by (subset, part, all three lengths): shared by the calls of one size only;
* ``scratch``: a dict the runner makes for the chunk and drops after it, with the keys above (``kept``);
* ``grid`` and ``splits_of``: the prefix lengths of this call's size and of the chunk's later sizes, in the runner's
  order, and the runner's splits of the chunk's subsets at any of them (``others``), so that a call may do for the
  later sizes, once, the pure work it would do at each (``oplr_paper``'s fits): the runner hands those same splits
  to the later calls.

Nothing drawn or released may be kept (docs/extending.md, Caches): only deterministic functions of the rows the keys
name.  A caller without a chunk (the audit, a library user, a test) passes none and the method makes one of its own
(``ChunkRows.alone``): its splits are named by their positions in the call and the scratch dies with the call.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence, TypeVar

T = TypeVar("T")

#: the parts of a split, as ``ChunkRows.rows`` names them
PARTS = ("test", "public", "private")


#: the runner's splits of a chunk's subsets at a size's prefix lengths, as (subset, split) pairs (``ChunkRows.others``)
SplitsOf = Callable[[tuple[int, int, int]], Sequence[tuple[Hashable, Any]]]


@dataclass(frozen=True)
class ChunkRows:
    """The names of the rows of one ``run_many`` call's splits within their chunk, and the chunk's scratch (module
    docstring)."""

    subsets: tuple[Hashable, ...]
    prefix: tuple[int, int, int] | None = None
    nested: bool = False
    scratch: dict = field(default_factory=dict, repr=False, compare=False)
    grid: tuple[tuple[int, int, int], ...] = ()
    splits_of: SplitsOf | None = field(default=None, repr=False, compare=False)

    @classmethod
    def alone(cls, splits: Sequence[Any]) -> "ChunkRows":
        """A call of its own: splits named by their positions, nothing shared beyond the call."""
        return cls(tuple(range(len(splits))))

    def select(self, keep: Sequence[int]) -> "ChunkRows":
        """The context of the splits ``keep`` of this call (in that order), with the same scratch."""
        return ChunkRows(tuple([self.subsets[i] for i in keep]), self.prefix, self.nested, self.scratch, self.grid,
                         self.splits_of)

    def others(self) -> list[tuple[tuple[int, int, int], "ChunkRows", list[Any]]]:
        """This size and every later size of the chunk (``grid``), each as (its prefix lengths, the ``ChunkRows`` of
        its call over all the chunk's subsets, their splits or split failures, as the runner hands them to that
        call); none without ``splits_of`` (a call of its own)."""
        if self.splits_of is None:
            return []
        out = []
        for prefix in self.grid:
            pairs = self.splits_of(prefix)
            out.append((prefix, ChunkRows(tuple([s for s, _ in pairs]), prefix, self.nested, self.scratch, self.grid,
                                          self.splits_of), [sp for _, sp in pairs]))
        return out

    def rows(self, part: str, ks: Sequence[int]) -> tuple[Hashable, ...]:
        """The names of part ``part`` (``PARTS``) of the splits ``ks``: equal names, equal rows, within the chunk."""
        at = PARTS.index(part)
        subsets = self.subsets
        length = self.prefix if self.prefix is None or not self.nested else self.prefix[at]
        return tuple([(subsets[k], at, length) for k in ks])

    def recurring(self, part: str) -> int:
        """How many distinct lengths of part ``part`` (``PARTS``) are asked at two or more of this and the chunk's
        later sizes (``grid``): the rows a method may keep for a later size of the chunk (``nested`` datasets only:
        otherwise a part's name holds all three lengths, and no later size reads the same rows; 0)."""
        if not self.nested:
            return 0
        at = PARTS.index(part)
        seen: dict[int, int] = {}
        for prefix in self.grid:
            seen[prefix[at]] = seen.get(prefix[at], 0) + 1
        return sum(1 for n in seen.values() if n > 1)

    def kept(self, name: str, key: Hashable, compute: Callable[[], T], maxsize: int | None = None) -> T:
        """``compute()`` once per (``name``, ``key``) in this chunk; ``key`` must name the rows it reads (``rows``)
        and the parameters it depends on.  ``maxsize`` bounds ``name``'s entries (least recently used go first)."""
        table = self.scratch.get(name)
        if table is None:
            table = self.scratch[name] = OrderedDict()
        got = table.get(key, _MISSING)
        if got is not _MISSING:
            if maxsize is not None:
                table.move_to_end(key)
            return got
        got = table[key] = compute()
        while maxsize is not None and len(table) > maxsize:   # a bound may shrink over the chunk (``recurring``)
            table.popitem(last=False)
        return got


_MISSING = object()


def context(chunk: ChunkRows | None, splits: Sequence[Any]) -> ChunkRows:
    """``chunk``, or a context of its own for a call made without one (``ChunkRows.alone``)."""
    return ChunkRows.alone(splits) if chunk is None else chunk
