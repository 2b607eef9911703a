"""Every kind of subject behind one interface: a --program value goes to the kind that claims
it, each kind implements the whole interface, and a build is triaged by its own kind's triage."""
import inspect
import json

import pytest

from harnessgen import subjects
from harnessgen.core.errors import ConfigError
from harnessgen.gpukernels.kernel_triage import KernelTriage
from harnessgen.gpukernels.subject import KernelSubject
from harnessgen.subjects.sdfg import SdfgSubject
from harnessgen.triage.classify import Triage


def test_each_program_value_goes_to_the_kind_that_claims_it():
    assert type(subjects.load("gpukernels")) is KernelSubject
    assert type(subjects.load("gpukernels:block_sum")) is KernelSubject
    assert type(subjects.load("kernels:gemm")) is SdfgSubject


def test_every_registered_kind_implements_the_whole_interface():
    for kind in subjects.SUBJECTS:
        cls = subjects.subject_class(kind)
        assert issubclass(cls, subjects.Subject) and cls.kind == kind
        assert not inspect.isabstract(cls), kind
        assert issubclass(cls.triage_class(), Triage)
    with pytest.raises(ConfigError, match="unknown subject kind"):
        subjects.subject_class("pass")


def test_kernels_plan_by_their_own_rules():
    kernels = subjects.plan("gpukernels", None, ["block_sum"])
    [(spec, inst)] = kernels.planned
    assert kernels.label == spec == inst.transformation and inst.program == "block_sum"
    assert kernels.subject.describe(spec, inst)["status"] == "KERNEL"
    with pytest.raises(ConfigError, match="leave out --transformation"):
        subjects.plan("gpukernels", "MapTiling")
    with pytest.raises(ConfigError, match="no such instance"):
        subjects.plan("gpukernels", None, ["no_such_kernel"])


def test_a_build_is_triaged_by_the_kind_that_made_it(tmp_path):
    for kind, triage in (("kernel", KernelTriage), ("sdfg", Triage)):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / "manifest.json").write_text(json.dumps({"subject": kind}))
        assert subjects.subject_class(subjects.kind_of_build(tmp_path / kind)).triage_class() is triage
