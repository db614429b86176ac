"""The outputs manifest (attnphase.execution.outputs): a job's files are current only for the same
identity with every file as recorded."""

from __future__ import annotations

from attnphase.execution.outputs import outputs_current, record_outputs


def test_outputs_are_current_only_as_recorded(tmp_path) -> None:
    (tmp_path / "a.csv").write_text("1,2\n")
    (tmp_path / "b.png").write_bytes(b"\x89PNG")
    ident = {"tasks": ["k1", "k2"], "presentation": "v1"}
    files = ["a.csv", "b.png"]
    assert not outputs_current(tmp_path, "job", ident, files)  # no manifest yet
    record_outputs(tmp_path, "job", ident, files)
    assert outputs_current(tmp_path, "job", ident, files)
    assert not outputs_current(tmp_path, "other", ident, files)
    assert not outputs_current(tmp_path, "job", ident | {"tasks": ["k1", "k3"]}, files)
    assert not outputs_current(tmp_path, "job", ident, files + ["c.nc"])
    (tmp_path / "a.csv").write_text("1,3\n")
    assert not outputs_current(tmp_path, "job", ident, files)
    record_outputs(tmp_path, "job", ident, files)
    (tmp_path / "b.png").unlink()
    assert not outputs_current(tmp_path, "job", ident, files)
    (tmp_path / ".job.outputs.json").write_text("{not json")
    assert not outputs_current(tmp_path, "job", ident, files)
