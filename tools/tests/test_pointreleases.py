"""check --all-point-releases against a local archive holding a fixed and a pre-fix tree."""
from taintport import pointreleases
from taintport.cache import Cache

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
    # 3.10-shaped trees: no TAINT_LIVEPATCH, so that fix cannot apply
    assert outcomes["9.9.2-1"].verdict == "unsigned: already upstream; livepatch: not applicable"
    assert outcomes["9.9.1-1"].verdict.startswith("unsigned: carried define, letter, sigcheck")
    # only the pinned .deb is kept in the cache
    assert [d.name for d in cache.debs().glob("*.deb")] == [fixed.name]
