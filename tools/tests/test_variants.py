# SPDX-License-Identifier: GPL-2.0
"""test-matrix/variants.toml: one record per variant, and no code that names one."""
import ast
from pathlib import Path

import pytest

from taintport.errors import InputError
from taintport.tree import series, variants
from taintport.tree.variants import Base, Builder, HostCheck, Kind, named

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "tools" / "lib" / "taintport"


def test_the_repository_table():
    table = variants.table()
    assert [v.name for v in table.booted()] == ["upstream", "shipped", "reverted",
                                                "backported", "patched"]
    assert [v.name for v in table.from_tree()] == ["upstream", "reverted", "backported",
                                                   "patched"]
    assert table.full_state().name == "reverted-full" and not table.full_state().booted
    assert table.groups == ("reverted", "backported", "patched", "reverted-full")
    assert table.built_groups() == {"reverted", "backported", "patched"}
    assert table.as_shipped() == named("upstream")
    assert table.layer_on(Base.REVERTED) == named("backported")
    assert table.layer_on(Base.SHIPPED) == named("patched")
    assert table.generated_on(named("backported")) == named("reverted")
    assert table.generated_on(named("patched")) == named("upstream")
    assert named("reverted").negative_control and not named("upstream").negative_control
    assert named("shipped").built_by is Builder.DISTRIBUTION and not named("shipped").from_tree
    assert named("backported").check(Kind.SOURCES_IDENTICAL).name == \
        "backported_sources_identical_to_patched"
    assert named("shipped").checks == (HostCheck("shipped", Kind.AGREES, "upstream"),)
    assert named("backported").reuses == ("upstream",)


ROW = '''
[variants.extra]
what = "the reverted tree again, under another name"
built_by = "taintport"
base = "reverted"
groups = ["reverted"]
layer = false
'''


def table_with(tmp_path, edit):
    path = tmp_path / "variants.toml"
    path.write_text(edit(variants.TABLE.read_text()))
    return path


def test_a_variant_is_a_row(tmp_path):
    table = variants.load(table_with(tmp_path, lambda text: text + ROW))
    extra = table.named("extra")
    assert table.booted()[-1] == extra and extra in table.from_tree()
    assert series.load("bookworm-6.1").for_variant(extra) == \
        series.load("bookworm-6.1").for_variant(named("reverted"))


@pytest.mark.parametrize("edit, complaint", [
    (lambda t: t.replace('built_by = "distribution"', 'built_by = "santa"'),
     "[variants.shipped] built_by must be one of taintport, distribution, nobody"),
    (lambda t: t.replace('groups = ["reverted", "backported"]',
                         'groups = ["backported", "reverted"]'),
     "[variants.backported] groups must be groups of the table's list, in its order"),
    (lambda t: t.replace('sources_match = "patched"', 'sources_match = "fixed"'),
     "[variants.backported] names 'fixed', not another variant"),
    (lambda t: t.replace('reuses = ["backported"]', 'reuses = ["reverted-full"]'),
     "[variants.patched] names 'reverted-full', not another variant of the table that is"),
    (lambda t: t.replace('layer = false\nagrees_with', 'layer = false\ncolour = "red"\n'
                         'agrees_with'),
     "[variants.shipped] has unknown key(s) colour"),
    (lambda t: t.replace('built_by = "nobody"', 'built_by = "taintport"'),
     "exactly one variant is built by nobody"),
    (lambda t: t + ROW.replace("extra", "patched-twice").replace('layer = false',
                                                                  'layer = true'),
     "one variant carries the layer onto the reverted tree"),
    (lambda t: t.replace("[variants.shipped]\n", "[variants.shipped]\ngroups = []\n")
     .replace('built_by = "distribution"', 'built_by = "distribution"\nlayer = true')
     .replace("layer = false\nagrees_with", "agrees_with"),
     "the distribution's binary is the tree as shipped"),
])
def test_a_bad_row_is_refused_naming_it(tmp_path, edit, complaint):
    with pytest.raises(InputError, match=r"variants.toml: .*" + "".join(
            "\\" + c if c in "[]().*" else c for c in complaint)):
        variants.load(table_with(tmp_path, edit))


def test_an_unknown_name_lists_the_variants():
    with pytest.raises(InputError, match=r"cell.json: cells\[0\].variant: unknown variant "
                                         r"'fixed'; valid: upstream, shipped, reverted, "
                                         r"backported, patched$"):
        named("fixed", "cell.json: cells[0].variant")


# Names that are keys of another file, not variants: the [shipped] table of
# versions/*.toml and the [upstream] table of semantic-patches/*/fix.toml.
NOT_VARIANTS = {("tree/versions.py", "shipped"), ("family.py", "upstream"),
                ("layer/dep3.py", "upstream")}


def test_no_code_names_a_variant():
    """Every variant, and its groups, come from the table: no string in the
    tools is a variant's name (or group folder) but in the table's loader."""
    names = {v.name for v in variants.table().variants} | set(variants.table().groups)
    found = []
    for path in sorted(LIB.rglob("*.py")):
        rel = str(path.relative_to(LIB))
        if rel == "tree/variants.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value.rstrip("/") in names and (rel, node.value) not in NOT_VARIANTS:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found
