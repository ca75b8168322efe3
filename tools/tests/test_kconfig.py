# SPDX-License-Identifier: GPL-2.0
import pytest

from taintport.errors import InputError
from taintport import guest
from taintport.kernel import kconfig


def test_base_fragment_parses_and_keeps_unset_lines():
    opts = {o.name: o.value for o in kconfig.parse(kconfig.KCONFIG_DIR / "base.config")}
    assert opts["CONFIG_MODULE_SIG"] == "y"
    assert opts["CONFIG_MODULE_SIG_FORCE"] == "n"
    assert opts["CONFIG_MODULE_SIG_KEY"] == '"certs/signing_key.pem"'


def test_garbage_line_is_named(tmp_path):
    frag = tmp_path / "bad.config"
    frag.write_text("CONFIG_A=y\nMODULES=y\n")
    with pytest.raises(InputError, match=r"bad.config:2: not a Kconfig line"):
        kconfig.parse(frag)


def test_dropped_option_is_named_with_reason(tmp_path):
    tree = tmp_path / "tree"
    (tree / "kernel").mkdir(parents=True)
    (tree / "kernel" / "Kconfig").write_text(
        "config MODULE_SIG\n\tbool \"sig\"\n\tdepends on MODULES\n\nconfig OTHER\n\tbool\n")
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_MODULE_SIG=y\n# CONFIG_OTHER is not set\nCONFIG_NOPE=y\n")
    config = tmp_path / ".config"
    config.write_text("# CONFIG_MODULE_SIG is not set\n")
    with pytest.raises(InputError) as err:
        kconfig.validate(tree, config, kconfig.parse(frag))
    text = str(err.value)
    assert "CONFIG_MODULE_SIG=y" in text and "depends on MODULES" in text
    assert "CONFIG_NOPE=y" in text and "no such option" in text
    assert "CONFIG_OTHER" not in text  # asked unset, is unset


def test_present_options_validate(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text('CONFIG_A=y\nCONFIG_S="x"\n# CONFIG_B is not set\n')
    config = tmp_path / ".config"
    config.write_text('CONFIG_A=y\nCONFIG_S="x"\n')
    options = kconfig.parse(frag)
    assert [(o.name, o.value) for o in options] == [
        ("CONFIG_A", "y"), ("CONFIG_S", '"x"'), ("CONFIG_B", "n")]  # "is not set" is n
    # raises InputError on any miss (test_dropped_option_is_named_with_reason); here all three hold
    assert kconfig.validate(tmp_path, config, options) is None


def test_fragments_are_base_then_features_then_the_version(tmp_path):
    kconfigs, versions_dir = tmp_path / "kconfigs", tmp_path / "versions"
    kconfigs.mkdir()
    versions_dir.mkdir()
    for name in ("base", "zeta", "livepatch", "bookworm-6.1", "trixie-6.12"):
        (kconfigs / f"{name}.config").write_text("CONFIG_A=y\n")
    for name in ("bookworm-6.1", "trixie-6.12"):
        (versions_dir / f"{name}.toml").write_text("")
    frags = kconfig.fragments("bookworm-6.1", kconfigs, versions_dir,
                              needs=("zeta.config", "livepatch.config"))
    # trixie's fragment is another version's, never a feature
    assert [f.name for f in frags] == ["base.config", "livepatch.config", "zeta.config",
                                       "bookworm-6.1.config"]


def test_a_fragment_no_fix_needs_is_refused(tmp_path):
    kconfigs = tmp_path / "kconfigs"
    kconfigs.mkdir()
    for name in ("base", "stray"):
        (kconfigs / f"{name}.config").write_text("CONFIG_A=y\n")
    with pytest.raises(InputError, match="stray.config: no fix needs it"):
        kconfig.fragments("bookworm-6.1", kconfigs, tmp_path, needs=())
    with pytest.raises(InputError, match="gone.config: Kconfig fragment missing"):
        kconfig.fragments("bookworm-6.1", kconfigs, tmp_path, needs=("stray.config",
                                                                    "gone.config"))


def test_every_version_gets_the_fragments_the_fixes_name():
    needed = {f.kconfig for f in guest.load().fixes.values() if f.kconfig}
    assert needed, "a fix's test needs CONFIG_LIVEPATCH"
    for name in ("bullseye-5.10", "bookworm-6.1", "experimental-7.3"):
        frags = kconfig.fragments(name)
        assert {kconfig.KCONFIG_DIR / n for n in needed} <= set(frags)


def test_missing_base_fragment_is_named(tmp_path):
    with pytest.raises(InputError, match="base.config: Kconfig fragment missing"):
        kconfig.fragments("bookworm-6.1", tmp_path, tmp_path)


def test_a_later_fragment_overrides_an_earlier_one(tmp_path):
    """As merge_config.sh does, so validation asks for the value that was merged."""
    first, second = tmp_path / "a.config", tmp_path / "b.config"
    first.write_text("CONFIG_A=y\nCONFIG_B=y\n")
    second.write_text("# CONFIG_A is not set\n")
    opts = {o.name: o for o in kconfig.merged([first, second])}
    assert opts["CONFIG_A"].value == "n" and opts["CONFIG_A"].where == f"{second}:1"
    assert opts["CONFIG_B"].value == "y"


def test_a_new_upload_makes_its_config_again_only_when_its_kconfig_changed(tmp_path):
    """The build dir outlives an upload: its .config is made again when the
    tree's Kconfig files changed, not for every upload."""
    from taintport.tree import fetch
    frag = tmp_path / "base.config"
    frag.write_text("CONFIG_X=y\n")
    trees = []
    for name, kconfig_text, source in (("one", "config X\n", "a"), ("two", "config X\n", "b"),
                                       ("three", "config X\n\tdefault y\n", "b")):
        tree = tmp_path / name
        (tree / "init").mkdir(parents=True)
        (tree / "init" / "Kconfig").write_text(kconfig_text)
        (tree / "init" / "main.c").write_text(source)  # not part of the configuration
        (tree / fetch.KCONFIG).write_text(fetch.kconfig_digest(tree) + "\n")
        trees.append(tree)
    one, two, three = (kconfig.inputs_digest([frag], t) for t in trees)
    assert one == two, "a source file changed: the config stays"
    assert one != three, "a Kconfig changed: the config is made again"
