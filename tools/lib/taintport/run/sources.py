# SPDX-License-Identifier: GPL-2.0
"""How a variant's kernel is made and booted: the strategy for whoever its row in
test-matrix/variants.toml says builds it (built_by).

`taintport`: we build it from the version's source tree with the
variant's quilt groups pushed; `distribution`: the distribution built it,
and only the test modules are built here, against its headers, with the
selftests' modules of the same source tree (which every cell reads). Each says
what decides its cell (the inputs its key is hashed from), how its kernel
is made for a cell (the matrix, `taintport build`) or found again
(`taintport boot`), and how that kernel boots. The run asks the variant's
source; it never asks which variant it is.
"""
import dataclasses
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from taintport import REPO
from taintport.cache import Cache, write_atomic
from taintport.digest import sha256_of, tree_digest
from taintport.errors import InputError
from taintport.judge import verdict
from taintport.kernel import binary, boot, build, kconfig
from taintport.kernel.build import Artifacts
from taintport.results.cells import Cell, Inputs
from taintport.run.stages import BootProfile, Built, Chain, build_with_selftests
from taintport.tree import series
from taintport.tree.variants import Builder, Variant
from taintport.tree.versions import Version

# what our builds boot with (kconfigs/ gives them a serial console and little else)
APPEND = "console=ttyS0 panic=-1"

# What a build of ours was made from, beside its artifacts: the folder is one
# per upload and variant, so a series regenerated since (regen, a --quilt-dir
# of one's own), another fragment or an edited test module would otherwise be
# booted by `taintport boot` under the new inputs' name. Only what a build
# reads: an edited expectations file is judged without a rebuild.
BUILT_FROM = "built-from.json"
BUILD_INPUTS = ("package_version", "deb_sha256", "series", "fragments", "test_matrix_sha256")


def built_from(inputs: Inputs) -> dict[str, object]:
    whole = dataclasses.asdict(inputs)
    return {name: whole[name] for name in BUILD_INPUTS}


def record_built_from(folder: Path, inputs: Inputs) -> None:
    write_atomic(folder / BUILT_FROM, json.dumps(built_from(inputs), indent=1, sort_keys=True))


def check_built_from(folder: Path, inputs: Inputs, again: str) -> None:
    """Refuse artifacts that were not built from inputs (again: the command
    that builds them anew)."""
    try:
        then = json.loads((folder / BUILT_FROM).read_text())
    except FileNotFoundError:
        raise InputError(f"{folder} has no {BUILT_FROM}: its build did not finish, or an "
                         f"older taintport made it; {again}") from None
    except (OSError, ValueError) as err:
        raise InputError(f"{folder / BUILT_FROM}: unreadable ({err}); {again}") from None
    now = built_from(inputs)
    changed = [name for name in BUILD_INPUTS
               if not isinstance(then, dict) or then.get(name) != now[name]]
    if changed:
        raise InputError(f"{folder} was built from other inputs than the cell has now "
                         f"({', '.join(changed)} changed since); {again}")


class Source(ABC):
    # its kernel is built from the version's source tree (every cell reads
    # that tree: the distribution's binary for its selftests)
    from_tree: bool

    @abstractmethod
    def inputs(self, version: Version, quilt_series: series.Series,
               variant: Variant) -> Inputs:
        """What decides the cell (all but the after-build digests go into its key)."""

    @abstractmethod
    def prepare(self, chain: Chain, version: Version, tree: Path,
                quilt_series: series.Series, cell: Cell) -> Built:
        """The cell's kernel, test modules and agent, made now and timed in the cell."""

    @abstractmethod
    def prepared(self, chain: Chain, version: Version, tree: Path,
                 quilt_series: series.Series, cell: Cell) -> Built:
        """The same, as `taintport build` left them (`taintport boot`)."""

    @abstractmethod
    def build(self, cache: Cache, version: Version, tree: Path,
              quilt_series: series.Series, variant: Variant, jobs: int) -> Artifacts:
        """`taintport build`: the artifacts alone, no cell."""


class TreeBuild(Source):
    """Our build of the version's source tree, the variant's groups pushed."""
    from_tree = True

    def inputs(self, version: Version, quilt_series: series.Series,
               variant: Variant) -> Inputs:
        # No digest of semantic-patches/ itself: the generated patches in the
        # series are what the cell builds, so an edit that leaves them alone
        # (a comment) reuses every cell, and make check's regen --check catches
        # an edit whose patches were not regenerated.
        return Inputs(package=version.package, package_version=version.version,
                      release=version.release, suite=version.suite,
                      deb_sha256=version.sha256, ships=list(version.ships),
                      series={p: sha256_of(quilt_series.directory / p)
                              for p in quilt_series.for_variant(variant)},
                      fragments={f.name: sha256_of(f)
                                 for f in kconfig.fragments(version.name)},
                      expectations_sha256=verdict.digest(),
                      test_matrix_sha256=tree_digest(REPO / "test-matrix"))

    def profile(self, chain: Chain) -> BootProfile:
        return BootProfile(APPEND, (), chain.timeout, boot.MEMORY)

    def prepare(self, chain: Chain, version: Version, tree: Path,
                quilt_series: series.Series, cell: Cell) -> Built:
        """Switch the tree to the cell's variant, check it, build."""
        log = chain.fresh_log(cell)
        chain.timed(cell, "apply", series.switch, tree, quilt_series, cell.variant, log)
        identical = chain.identical_check(tree, quilt_series, cell)
        artifacts = self.recorded(chain.cache.artifacts(version, cell.variant.name),
                                  self.inputs(version, quilt_series, cell.variant),
                                  lambda: chain.compile(version, tree, cell, log))
        return chain.built(cell, artifacts, identical, self.profile(chain))

    @staticmethod
    def recorded(folder: Path, inputs: Inputs, make: Callable[[], Artifacts]) -> Artifacts:
        """make() the artifacts in folder, and what they were built from once
        they are all there (no record while a build is under way or failed)."""
        (folder / BUILT_FROM).unlink(missing_ok=True)
        artifacts = make()
        record_built_from(folder, inputs)
        return artifacts

    def prepared(self, chain: Chain, version: Version, tree: Path,
                 quilt_series: series.Series, cell: Cell) -> Built:
        """The artifacts `taintport build` left for the cell's variant, checked
        as a fresh build is."""
        folder = chain.cache.artifacts(version, cell.variant.name)
        if not (folder / "bzImage").exists():
            raise InputError(f"{folder / 'bzImage'} missing; run 'taintport build --version "
                             f"{version.name} --variant {cell.variant}' first")
        check_built_from(folder, self.inputs(version, quilt_series, cell.variant),
                         f"run 'taintport build --version {version.name} --variant "
                         f"{cell.variant}' again")
        build_dir = chain.cache.build(version)
        release = build.kernel_release(tree, build_dir,
                                       *build.make_args(build_dir, 1, chain.cache.root))
        artifacts = Artifacts(directory=folder, bzimage=folder / "bzImage",
                              modules=build.module_files(folder),
                              agent=folder / "taintport-agent", release=release)
        return chain.built(cell, artifacts, chain.identical_check(tree, quilt_series, cell),
                           self.profile(chain))

    def build(self, cache: Cache, version: Version, tree: Path,
              quilt_series: series.Series, variant: Variant, jobs: int) -> Artifacts:
        if series.current_variant(tree) != variant.name:
            series.switch(tree, quilt_series, variant,
                          cache.root / "logs" / f"apply-{version.name}.log")
        log = cache.root / "logs" / f"build-{version.name}-{variant}.log"
        folder = cache.artifacts(version, variant.name)
        return self.recorded(folder, self.inputs(version, quilt_series, variant),
                             lambda: build_with_selftests(tree, cache.build(version),
                                                          version.name, folder, log, jobs,
                                                          cache.root))


class DistributionBinary(Source):
    """The distribution's own binary of the tree as shipped: nothing to switch
    or build but the test modules and the tree's selftests' modules, against
    its headers."""
    from_tree = False

    def inputs(self, version: Version, quilt_series: series.Series,
               variant: Variant) -> Inputs:
        """Its pins and the [shipped] table decide the cell, and the test
        matrix, as for any cell; no series, no fragments."""
        shipped = version.shipped
        if shipped is None:
            raise InputError(f"{version.path} has no [shipped] table: no binary kernel is "
                             "pinned for this version")
        image = shipped.packages[0]
        table = json.dumps(dataclasses.asdict(shipped), sort_keys=True)
        return Inputs(package=image.package, package_version=image.version,
                      release=version.release, suite=version.suite,
                      deb_sha256=image.sha256, ships=list(version.ships),
                      expectations_sha256=verdict.digest(),
                      test_matrix_sha256=tree_digest(REPO / "test-matrix"),
                      # and the source package its selftests come from
                      binaries={**{f"{p.package}={p.version}": p.sha256
                                   for p in shipped.packages},
                                f"{version.package}={version.version}": version.sha256},
                      shipped_sha256=hashlib.sha256(table.encode()).hexdigest())

    def profile(self, version: Version) -> BootProfile:
        """A full distribution kernel under TCG: its own command line, memory
        and timeout; the agent loads its signed module in the signed loads."""
        shipped = binary.pinned(version)
        return BootProfile(shipped.append, (f"taintport.signed={shipped.module_name}",),
                           shipped.timeout, shipped.memory)

    def prepare(self, chain: Chain, version: Version, tree: Path,
                quilt_series: series.Series, cell: Cell) -> Built:
        log = chain.fresh_log(cell)
        top = chain.timed(cell, "fetch", binary.unpack, chain.cache, version, log)
        artifacts = chain.timed(cell, "build", binary.prepare, version, top, tree,
                                chain.cache.artifacts(version, cell.variant.name), log,
                                chain.jobs)
        return chain.built(cell, artifacts, None, self.profile(version))

    def prepared(self, chain: Chain, version: Version, tree: Path,
                 quilt_series: series.Series, cell: Cell) -> Built:
        # they take seconds: made again, as the matrix makes them
        return self.prepare(chain, version, tree, quilt_series, cell)

    def build(self, cache: Cache, version: Version, tree: Path,
              quilt_series: series.Series, variant: Variant, jobs: int) -> Artifacts:
        log = cache.root / "logs" / f"build-{version.name}-{variant}.log"
        return binary.prepare(version, binary.unpack(cache, version, log), tree,
                              cache.artifacts(version, variant.name), log, jobs)


SOURCES: dict[Builder, Source] = {Builder.TAINTPORT: TreeBuild(),
                                  Builder.DISTRIBUTION: DistributionBinary()}


def of(variant: Variant) -> Source:
    """The strategy for whoever builds a booted variant's kernel."""
    return SOURCES[variant.built_by]
