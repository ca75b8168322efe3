# SPDX-License-Identifier: GPL-2.0
"""The variants of a kernel: one typed record each, from test-matrix/variants.toml.

A record says how its tree is made (base, quilt groups, layer), who builds
the kernel (taintport from the tree, the distribution, or nobody), which cell it may reuse, its host checks and the tests
it cannot observe. Everything after this module takes the record, never a
name: the series pushes its groups, the verdict reads its base and skips,
the run asks its source how to build and boot it, the reports show its
rows in the table's order. A variant is added by adding a row.
"""
import enum
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from taintport import REPO
from taintport.errors import InputError

TABLE = REPO / "test-matrix" / "variants.toml"


class Builder(str, enum.Enum):
    """Who builds the kernel a variant boots (run/sources.py: how, for each)."""
    TAINTPORT = "taintport"        # we do, from the source tree with the groups pushed
    DISTRIBUTION = "distribution"  # the distribution's own binary of the tree as shipped
    NOBODY = "nobody"              # a state regen checks the layer on, never booted


class Base(str, enum.Enum):
    """The tree a variant's groups start from."""
    SHIPPED = "shipped"    # as the distribution ships it
    REVERTED = "reverted"  # every fix it ships removed


class Kind(str, enum.Enum):
    """A check the host makes beside the guest's tests, named for what it compares."""
    SOURCES_IDENTICAL = "sources_identical_to"  # the C files byte-identical to the peer's
    AGREES = "agrees_with"  # every test both cells observed came out the same


@dataclass(frozen=True)
class HostCheck:
    variant: str  # the cell it is judged in
    kind: Kind
    peer: str     # the variant it compares with

    @property
    def name(self) -> str:
        """The check's name in a cell: backported_sources_identical_to_patched."""
        return f"{self.variant}_{self.kind.value}_{self.peer}"


@dataclass(frozen=True)
class Variant:
    name: str
    what: str                         # one line for the CLI's help
    built_by: Builder
    base: Base
    groups: tuple[str, ...]           # quilt groups pushed, in series order
    layer: bool                       # the last group is taintport's layer
    reuses: tuple[str, ...] = ()      # byte-identical to one of these: take its cell
    checks: tuple[HostCheck, ...] = ()  # host checks judged with the guest's tests
    skips: frozenset[str] = frozenset()  # tests the agent cannot observe by design

    def __str__(self) -> str:
        return self.name

    @property
    def from_tree(self) -> bool:
        """Built by taintport from the version's source tree (which must be fetched)."""
        return self.built_by is Builder.TAINTPORT

    @property
    def booted(self) -> bool:
        return self.built_by is not Builder.NOBODY

    @property
    def negative_control(self) -> bool:
        """Booted without the fixes the tree ships: its expected failures are the bugs."""
        return self.base is Base.REVERTED and not self.layer

    def check(self, kind: Kind) -> HostCheck | None:
        return next((c for c in self.checks if c.kind is kind), None)

    def owns(self, check_name: str) -> bool:
        """A host check judged in this variant's cell (its name starts with the variant's)."""
        return check_name.startswith(f"{self.name}_")

    @property
    def layer_group(self) -> str:
        """The group taintport's layer is written to (regen); "" without a layer."""
        return self.groups[-1] if self.layer else ""

    @property
    def folders(self) -> str:
        """Its groups as the folders of quilt/<version>/: "reverted/, backported/"."""
        return ", ".join(f"{g}/" for g in self.groups)


@dataclass(frozen=True)
class Table:
    variants: tuple[Variant, ...]  # in the order the reports show them
    groups: tuple[str, ...]        # the quilt groups, in series order

    def named(self, name: object, where: str = "variant") -> Variant:
        """The variant called name; an InputError naming where the name came from."""
        found = next((v for v in self.variants if v.name == name), None)
        if found is None or not found.booted:
            raise InputError(f"{where}: unknown variant {name!r}; "
                             f"valid: {', '.join(v.name for v in self.booted())}")
        return found

    def booted(self) -> tuple[Variant, ...]:
        """What the matrix runs, in report order."""
        return tuple(v for v in self.variants if v.booted)

    def from_tree(self) -> tuple[Variant, ...]:
        """The variants taintport builds from the source tree."""
        return tuple(v for v in self.variants if v.from_tree)

    def full_state(self) -> Variant:
        """The state regen runs the whole layer on: never built (loaded as exactly one)."""
        return next(v for v in self.variants if not v.booted)

    def built_groups(self) -> frozenset[str]:
        """The groups a built variant pushes: the only ones a switch between them changes."""
        return frozenset(g for v in self.from_tree() for g in v.groups)

    def as_shipped(self) -> Variant:
        """Our build of the tree as the distribution ships it: nothing pushed."""
        return next(v for v in self.from_tree() if v.base is Base.SHIPPED and not v.groups)

    def layer_on(self, base: Base) -> Variant:
        """The variant that carries taintport's layer onto that base."""
        return next(v for v in self.variants if v.layer and v.base is base)

    def generated_on(self, variant: Variant) -> Variant:
        """The variant whose tree a layer variant's last group is generated on:
        the one built from the other groups (backported's is reverted)."""
        return next(v for v in self.from_tree() if v.groups == variant.groups[:-1])

    def index(self, variant: Variant) -> int:
        return self.variants.index(variant)


KEYS = {"what", "built_by", "base", "groups", "layer", "sources_match", "reuses",
        "agrees_with", "skips"}


def _names(path: Path, where: str, value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(f"{path}: {where} must be a list of {what} names")
    dup = sorted({v for v in value if value.count(v) > 1})
    if dup:
        raise InputError(f"{path}: {where} names {', '.join(dup)} twice")
    return tuple(value)


def _row(path: Path, name: str, spec: object, groups: tuple[str, ...]) -> Variant:
    where = f"{path}: [variants.{name}]"
    if not isinstance(spec, dict):
        raise InputError(f"{where} must be a table")
    extra = sorted(set(spec) - KEYS)
    if extra:
        raise InputError(f"{where} has unknown key(s) {', '.join(extra)}")
    builders = [b.value for b in Builder]
    bases = [b.value for b in Base]
    if spec.get("built_by") not in builders:
        raise InputError(f"{where} built_by must be one of {', '.join(builders)}")
    if spec.get("base") not in bases:
        raise InputError(f"{where} base must be one of {', '.join(bases)}")
    if not isinstance(spec.get("layer"), bool):
        raise InputError(f"{where} layer must be true or false")
    if not isinstance(spec.get("what"), str) or not spec["what"]:
        raise InputError(f"{where} what must say in one line what the variant is")
    built_by = Builder(spec["built_by"])
    mine = _names(path, f"[variants.{name}] groups", spec.get("groups", []), "quilt group")
    if built_by is Builder.DISTRIBUTION and (mine or spec["layer"] or
                                             spec["base"] != Base.SHIPPED.value):
        raise InputError(f"{where}: the distribution's binary is the tree as shipped: "
                         "no groups, no layer, base \"shipped\"")
    if built_by is not Builder.DISTRIBUTION and "groups" not in spec:
        raise InputError(f"{where} groups missing: the quilt groups its tree pushes")
    strange = [g for g in mine if g not in groups]
    if strange or list(mine) != sorted(mine, key=groups.index):
        raise InputError(f"{where} groups must be groups of the table's list, in its "
                         f"order ({', '.join(groups)})")
    if spec["layer"] and not mine:
        raise InputError(f"{where}: a layer is the last of its groups: it has none")
    checks = []
    for key, kind in (("sources_match", Kind.SOURCES_IDENTICAL), ("agrees_with", Kind.AGREES)):
        if key in spec:
            if not isinstance(spec[key], str) or not spec[key]:
                raise InputError(f"{where} {key} must name a variant")
            checks.append(HostCheck(name, kind, spec[key]))
    return Variant(name=name, what=spec["what"], built_by=built_by, base=Base(spec["base"]),
                   groups=mine, layer=spec["layer"],
                   reuses=_names(path, f"[variants.{name}] reuses", spec.get("reuses", []),
                                 "variant"),
                   checks=tuple(checks),
                   skips=frozenset(_names(path, f"[variants.{name}] skips",
                                          spec.get("skips", []), "KTAP test")))


def load(path: Path | str = TABLE) -> Table:
    """test-matrix/variants.toml, checked: every row says how its tree is made
    and who builds it, names only groups and variants the table has, and
    exactly one row is the never-built state regen checks the layer on."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{path}: cannot read the variants: {err}") from None
    extra = sorted(set(data) - {"groups", "variants"})
    if extra:
        raise InputError(f"{path}: unknown key(s) {', '.join(extra)}")
    groups = _names(path, "groups", data.get("groups"), "quilt group")
    rows = data.get("variants")
    if not isinstance(rows, dict) or not rows:
        raise InputError(f"{path}: [variants] missing: one table per variant")
    table = Table(tuple(_row(path, name, spec, groups) for name, spec in rows.items()),
                  groups)
    booted = {v.name for v in table.booted()}
    for v in table.variants:
        for other in (*v.reuses, *(c.peer for c in v.checks)):
            if other not in booted or other == v.name:
                raise InputError(f"{path}: [variants.{v.name}] names {other!r}, not "
                                 "another variant of the table that is booted")
        if v.layer and not any(o.groups == v.groups[:-1] for o in table.from_tree()):
            raise InputError(f"{path}: [variants.{v.name}]: no variant built from the "
                             f"groups {list(v.groups[:-1])} to generate its layer on")
    for base in Base:
        layers = [v.name for v in table.variants if v.layer and v.base is base]
        if len(layers) != 1:
            raise InputError(f"{path}: one variant carries the layer onto the {base.value} "
                             f"tree (regen writes its group), not {len(layers)}")
    if not any(v.base is Base.SHIPPED and not v.groups for v in table.from_tree()):
        raise InputError(f"{path}: no variant is our build of the tree as shipped "
                         "(base \"shipped\", no groups, built by taintport)")
    unbuilt = [v.name for v in table.variants if not v.booted]
    if len(unbuilt) != 1:
        raise InputError(f"{path}: exactly one variant is built by nobody (the full "
                         f"pre-fix state regen checks the layer on), not {len(unbuilt)}")
    return table


@functools.cache
def table() -> Table:
    """The table of this checkout (test-matrix/variants.toml), read once."""
    return load()


def named(name: object, where: str = "variant") -> Variant:
    """A variant the matrix runs, by name; an InputError naming where it came from."""
    return table().named(name, where)
