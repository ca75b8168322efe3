# SPDX-License-Identifier: GPL-2.0
"""`taintport boot` boots what an earlier build left only if that build read
the inputs the cell has now (run/sources.py, built-from.json)."""
import dataclasses

import pytest

from taintport.errors import InputError
from taintport.run import sources
from taintport.tree import series, variants, versions

VERSION = "bookworm-6.1"
AGAIN = "run 'taintport build' again"


@pytest.fixture
def inputs():
    variant = variants.named("backported")
    version = versions.select([VERSION])[0]
    return sources.of(variant).inputs(version, series.load(VERSION), variant)


def test_a_build_of_the_same_inputs_boots(tmp_path, inputs):
    sources.record_built_from(tmp_path, inputs)
    sources.check_built_from(tmp_path, inputs, AGAIN)


def test_a_series_regenerated_since_the_build_is_refused(tmp_path, inputs):
    sources.record_built_from(tmp_path, inputs)
    patch = next(iter(inputs.series))
    now = dataclasses.replace(inputs, series={**inputs.series, patch: "0" * 64})
    with pytest.raises(InputError, match=r"other inputs .*\(series changed since\); "
                                         r"run 'taintport build' again"):
        sources.check_built_from(tmp_path, now, AGAIN)


def test_another_upload_and_test_matrix_are_named(tmp_path, inputs):
    sources.record_built_from(tmp_path, inputs)
    now = dataclasses.replace(inputs, package_version="6.1.999-1", test_matrix_sha256="f" * 64)
    with pytest.raises(InputError, match=r"\(package_version, test_matrix_sha256 changed"):
        sources.check_built_from(tmp_path, now, AGAIN)


def test_new_expectations_need_no_build(tmp_path, inputs):
    sources.record_built_from(tmp_path, inputs)
    sources.check_built_from(tmp_path, dataclasses.replace(inputs, expectations_sha256="e" * 64),
                             AGAIN)


def test_a_build_that_did_not_finish_is_refused(tmp_path, inputs):
    with pytest.raises(InputError, match=f"{tmp_path} has no built-from.json"):
        sources.check_built_from(tmp_path, inputs, AGAIN)


@pytest.mark.parametrize("planted", [b"{not json", b"[1, 2]", b"\xff\xfe", b"null"])
def test_a_planted_record_is_refused(tmp_path, inputs, planted):
    (tmp_path / sources.BUILT_FROM).write_bytes(planted)
    with pytest.raises(InputError, match=AGAIN):
        sources.check_built_from(tmp_path, inputs, AGAIN)
