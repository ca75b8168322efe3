import pytest

from taintport import kconfig
from taintport.errors import InputError


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
    kconfig.validate(tmp_path, config, kconfig.parse(frag))
