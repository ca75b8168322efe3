import pytest

from taintport import versions
from taintport.errors import InputError


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
                package="linux-source-6.1", version="6.1.1-1", sha256="a" * 64, size=1)
    base.update(fields)
    lines = [f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in base.items()]
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
