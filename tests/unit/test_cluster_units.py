"""The pieces of --executor dask that need no cluster: the isolation order, a payload's round trip, and which
scheduler addresses and certificates a client accepts (cluster/tls.py)."""
from __future__ import annotations

import pickle
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.autograde.cluster import tls
from autograder.autograde.cluster.payload import Payload
from autograder.autograde.run_policy import RunPolicy, refusal
from autograder.intake.stage import Staged
from autograder.worker.isolation import Level


def test_a_level_is_refused_only_below_the_required_one():
    assert refusal("namespaces", None) is None
    assert refusal("namespaces", "namespaces") is None
    assert refusal("uid+rlimits", "rlimits") is None
    assert "uid+rlimits, below the required namespaces" in refusal("uid+rlimits", "namespaces")
    assert "rlimits, below the required uid+rlimits" in refusal("rlimits", "uid+rlimits")


def test_one_run_policy_decides_for_either_executor():
    untrusted = RunPolicy(None, untrusted=True)
    for level in (Level.NAMESPACES, Level.USERNS, Level.UID_LANDLOCK, Level.LANDLOCK, Level.UID):
        assert untrusted.refusal(level, f"{level} (...)") is None  # (uid+rlimits: the files are checked apart)
    assert "could read the reference solutions" in untrusted.refusal(Level.RLIMITS, "rlimits (...)")
    assert RunPolicy(None, untrusted=False).refusal(Level.RLIMITS, "rlimits (...)") is None
    assert "below the required namespaces" in RunPolicy(Level.NAMESPACES).refusal(Level.UID, "uid+rlimits (...)")


@dataclass
class _Source:
    name: str


@dataclass
class _Job:
    source: _Source
    staged: Staged
    extra: dict


def test_a_payload_carries_the_staged_files_to_a_folder_of_the_workers_own(tmp_path):
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "simple_attention.py").write_bytes(b"def f():\n    return 1\n")
    (staged / "causal_attention.py").write_bytes("# \u00e9\n".encode())
    job = _Job(_Source("ana"), Staged("ana", staged, ["a note"], {"trainable_attention": {"type": "MissingModule"}}),
               {"submission": "ana", "submission_hash": "x"})
    payload = Payload.pack(job, RunPolicy(Level.NAMESPACES, untrusted=True))
    (staged / "simple_attention.py").write_bytes(b"changed after packing")
    node = tmp_path / "node"
    node.mkdir()
    again = payload.unpack(node)
    assert again.folder.parent == node and again.folder != staged
    assert {p.name: p.read_bytes() for p in again.folder.iterdir()} == {
        "simple_attention.py": b"def f():\n    return 1\n", "causal_attention.py": "# \u00e9\n".encode()}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in again.folder.iterdir())
    assert again.notes == ["a note"] and again.module_errors == {"trainable_attention": {"type": "MissingModule"}}
    assert (payload.policy, payload.extra["submission_hash"]) == (RunPolicy("namespaces", True), "x")
    assert pickle.loads(pickle.dumps(payload)).policy == payload.policy  # as Dask sends it
    Payload.discard(again)
    assert not again.folder.exists()


def test_a_payload_of_a_submission_that_could_not_be_staged_has_no_files(tmp_path):
    job = _Job(_Source("bo"), Staged("bo", None, problem="bo.zip: not a zip archive"), {"submission": "bo"})
    again = Payload.pack(job).unpack(tmp_path)
    assert again.folder is None and again.problem == "bo.zip: not a zip archive"
    assert list(tmp_path.iterdir()) == []


def test_a_payload_with_a_path_in_a_file_name_is_refused(tmp_path):
    payload = Payload("eve", {}, {"../escape.py": b"x"})
    with pytest.raises(ValueError, match="escape"):
        payload.unpack(tmp_path)
    # unpack writes into a fresh folder under tmp_path: "../escape.py" would land in tmp_path itself
    assert [p.name for p in tmp_path.rglob("*") if not p.is_dir()] == []


def test_where_an_escaping_file_name_would_land(tmp_path):
    """The control: a payload's folder is a child of the base, so the test above looks where an escape lands."""
    staged = Payload("eve", {}, {"ok.py": b"x"}).unpack(tmp_path)
    assert (staged.folder / "../escape.py").resolve().parent == tmp_path.resolve()
    (staged.folder / "../escape.py").write_bytes(b"x")
    assert sorted(p.name for p in tmp_path.rglob("*") if not p.is_dir()) == ["escape.py", "ok.py"]


def _course_files(folder: Path, key_mode: int = 0o600) -> dict:
    found = {"ca_file": folder / "ca.pem", "cert": folder / "grader.pem", "key": folder / "grader.key"}
    for path in found.values():
        path.write_text("-----BEGIN CERTIFICATE-----\n")
    found["key"].chmod(key_mode)
    return {field: str(path) for field, path in found.items()}


def test_a_scheduler_that_is_not_tls_is_refused_in_one_line_naming_the_way_out(tmp_path):
    for address in ("tcp://login1:8786", "login1:8786", "ws://login1:8786", "TCP://login1:8786"):
        why = tls.refusal(address, insecure=False, found=_course_files(tmp_path))
        assert why and "\n" not in why and "--insecure-scheduler" in why and address in why, why
        assert tls.refusal(address, insecure=True, found={"ca_file": None, "cert": None, "key": None}) is None


def test_a_tls_scheduler_needs_every_file_of_the_course_certificate(tmp_path):
    files = _course_files(tmp_path)
    assert tls.refusal("tls://login1:8786", False, files) is None
    for field, option in tls.OPTIONS.items():
        why = tls.refusal("tls://login1:8786", False, {**files, field: None})
        assert option in why and tls.CONFIG[field] in why, why
    why = tls.refusal("tls://login1:8786", False, {**files, "cert": str(tmp_path / "nowhere.pem")})
    assert "--tls-cert" in why and "nowhere.pem" in why


def test_a_key_others_may_read_is_refused(tmp_path):
    why = tls.refusal("tls://login1:8786", False, _course_files(tmp_path, key_mode=0o640))
    assert "chmod 600" in why and "0640" in why


def test_the_certificate_comes_from_the_options_else_from_dasks_configuration(tmp_path):
    import dask  # noqa: PLC0415 - the cluster extra

    with dask.config.set({"distributed.comm.tls.ca-file": "/etc/course/ca.pem",
                          "distributed.comm.tls.client.cert": "/etc/course/grader.pem"}):
        found = tls.credentials(ca_file=None, cert=tmp_path / "mine.pem", key=None)
    assert found == {"ca_file": "/etc/course/ca.pem", "cert": str(tmp_path / "mine.pem"), "key": None}


def test_a_tls_client_shows_the_course_certificate_and_requires_encryption(tmp_path):
    files = _course_files(tmp_path)
    security = tls.for_a_scheduler("tls://login1:8786", files)
    assert security.require_encryption
    assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == \
        (files["ca_file"], files["cert"], files["key"])
