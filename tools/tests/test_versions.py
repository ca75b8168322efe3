import pytest

from taintport.errors import InputError
from taintport.tree import versions


def test_repository_descriptors_load():
    loaded = versions.all_versions()
    assert "bookworm-6.1" in [v.name for v in loaded]
    v = versions.select(["bookworm-6.1"])[0]
    assert v.package == "linux-source-6.1"
    assert v.tarball == "usr/src/linux-source-6.1.tar.xz"


def test_unknown_version_lists_valid_ones():
    with pytest.raises(InputError, match=r"unknown version\(s\) nope-1.0; valid: .*bookworm-6.1"):
        versions.select(["nope-1.0"])


def write(tmp_path, stem, **fields):
    base = dict(name=stem, distribution="debian", suite="bookworm",
                archive="http://deb.debian.org/debian", component="main",
                package="linux-source-6.1", version="6.1.1-1", sha256="a" * 64, size=1,
                ships=["unsigned"])
    base.update(fields)
    lines = [f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}".replace("'", '"')
             for k, v in base.items()]
    path = tmp_path / f"{stem}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bad_checksum_field_names_file(tmp_path):
    path = write(tmp_path, "x-1", sha256="xyz")
    with pytest.raises(InputError, match=r"x-1.toml: sha256: 'xyz' is not 64 lower-case hex digits"):
        versions.load(path)


def test_name_must_match_file(tmp_path):
    path = write(tmp_path, "x-1", name="y-1")
    path.rename(tmp_path / "x-1.toml")
    with pytest.raises(InputError, match="does not match the file name"):
        versions.load(tmp_path / "x-1.toml")


def test_unknown_field_is_refused(tmp_path):
    path = write(tmp_path, "x-1", colour="red")
    with pytest.raises(InputError, match="unknown field"):
        versions.load(path)


def test_ships_names_fixes_of_the_family(tmp_path):
    v = versions.load(write(tmp_path, "x-1", ships=["unsigned", "livepatch"]))
    assert v.ships == ("unsigned", "livepatch")
    with pytest.raises(InputError, match=r"x-1.toml: ships: unknown fix 'kpatch'; valid: "):
        versions.load(write(tmp_path, "x-1", ships=["kpatch"]))
    with pytest.raises(InputError, match="x-1.toml: ships must be a list"):
        versions.load(write(tmp_path, "x-1", ships="unsigned"))


def test_repository_descriptors_say_which_fixes_ship():
    ships = {v.name: v.ships for v in versions.all_versions()}
    assert ships["bookworm-6.1"] == ("unsigned",)
    assert ships["bullseye-5.10"] == ("unsigned",)
    assert ships["trixie-6.12"] == ("unsigned", "livepatch")
