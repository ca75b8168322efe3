# SPDX-License-Identifier: GPL-2.0
"""check --all-point-releases against a local archive holding a fixed and a pre-fix tree."""
from taintport.cache import Cache
from taintport.layer import pointreleases

from test_fetch import make_deb, publish, sha, version
from test_layer import _tree


def test_every_offered_version_gets_a_line(tmp_path):
    fixed = make_deb(tmp_path, "9.9.2-1", "fixed", tree=_tree(tmp_path / "fixed", ".res"))
    old = make_deb(tmp_path, "9.9.1-1", "prefix", tree=_tree(tmp_path / "old", ".c"))
    archive = tmp_path / "archive"
    publish(archive, [old, fixed])
    template = version(archive, "9.9.2-1", sha(fixed))
    cache = Cache(tmp_path / "cache")
    outcomes = {o.version: o for o in pointreleases.check_all(cache, [template],
                                                               tmp_path / "log")}
    assert set(outcomes) == {"9.9.1-1", "9.9.2-1"}
    # 3.10-shaped trees: no TAINT_TEST, no TAINT_LIVEPATCH, so those fixes cannot apply
    assert outcomes["9.9.2-1"].verdict == ("unsigned: already upstream; test: not applicable; "
                                           "livepatch: not applicable")
    assert outcomes["9.9.1-1"].verdict.startswith("unsigned: carried define, letter, sigcheck")
    # only the pinned .deb is kept in the cache
    assert [d.name for d in cache.debs().glob("*.deb")] == [fixed.name]


def test_a_cache_path_is_never_run_by_a_shell(tmp_path, monkeypatch):
    """A cache folder named like a shell command, with spaces: data, nothing else."""
    monkeypatch.chdir(tmp_path)
    fixed = make_deb(tmp_path, "9.9.2-1", "fixed", tree=_tree(tmp_path / "fixed", ".res"))
    archive = tmp_path / "archive"
    publish(archive, [fixed])
    cache = Cache(tmp_path / "cache dir;touch PWNED;#")
    outcomes = list(pointreleases.check_all(cache, [version(archive, "9.9.2-1", sha(fixed))],
                                            tmp_path / "log"))
    assert [o.verdict for o in outcomes] == [
        "unsigned: already upstream; test: not applicable; livepatch: not applicable"]
    assert not list(tmp_path.rglob("PWNED"))


def test_a_deb_dpkg_deb_cannot_read_is_an_error_with_the_exit_codes(tmp_path):
    fixed = make_deb(tmp_path, "9.9.2-1", "fixed", tree=_tree(tmp_path / "fixed", ".res"))
    broken = tmp_path / "linux-source-9.9_9.9.3-1_all.deb"
    broken.write_bytes(b"!<arch>\nnot a debian package at all\n")
    archive = tmp_path / "archive"
    publish(archive, [fixed, broken])
    outcomes = {o.version: o.verdict for o in pointreleases.check_all(
        Cache(tmp_path / "cache"), [version(archive, "9.9.2-1", sha(fixed))], tmp_path / "log")}
    assert not outcomes["9.9.2-1"].startswith("error")
    assert outcomes["9.9.3-1"].startswith("error: check: linux-source-9.9_9.9.3-1_all.deb: "
                                          "reading linux-source-9.9.tar.xz failed")
    assert "exit codes (2," in outcomes["9.9.3-1"]
