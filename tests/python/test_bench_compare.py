"""bench/compare.py's alternated rounds (--rounds), without a GPU: the order each round times the
backends in, and the median it reports."""
import pytest


@pytest.fixture(scope="module")
def compare(repo_script):
    return repo_script("bench/compare.py")


def _rows(first_ms):
    return [dict(backend=name, ms=ms) for name, ms in first_ms]


def test_rounds_alternate_order_and_take_the_median(compare):
    rows = _rows([("sdpa_cudnn", 2.0), ("ours_fa3", 1.0)])
    calls = []
    later = {"sdpa_cudnn": iter([4.0, 3.0]), "ours_fa3": iter([5.0, 0.5])}

    def again(name):
        def f():
            calls.append(name)
            return next(later[name])
        return f

    compare.time_rounds(rows, [again("sdpa_cudnn"), again("ours_fa3")], 3, fl=6e9)
    # Round 1 timed cuDNN then ours (run_shape's order); round 2 reverses it, round 3 restores it.
    assert calls == ["ours_fa3", "sdpa_cudnn", "sdpa_cudnn", "ours_fa3"]
    assert rows[0]["ms_rounds"] == [2.0, 4.0, 3.0] and rows[0]["ms"] == 3.0
    assert rows[1]["ms_rounds"] == [1.0, 5.0, 0.5] and rows[1]["ms"] == 1.0
    assert rows[0]["tflops"] == pytest.approx(6e9 / 3.0 / 1e9)
    assert rows[1]["tflops"] == pytest.approx(6.0)


def test_a_backend_that_failed_is_not_retimed(compare):
    rows = [dict(backend="sdpa_efficient", ms=None, tflops=None, error="refused"), dict(backend="ours_fa3", ms=2.0)]
    compare.time_rounds(rows, [None, lambda: 4.0], 2, fl=8e9)
    assert "ms_rounds" not in rows[0] and rows[0]["ms"] is None
    assert rows[1]["ms_rounds"] == [2.0, 4.0] and rows[1]["ms"] == 3.0
    assert rows[1]["tflops"] == pytest.approx(8e9 / 3.0 / 1e9)


def _meta():
    return dict(device="test GPU", dtype="bf16", torch="0", cudnn=0, date="today", method="m")


def _shape_rows(tflops):
    return [dict(pass_="fwd", causal=True, d=128, n=512, b=32, h=16, backend=bk, tflops=t)
            for bk, t in tflops.items()]


def test_flex_peer_adds_an_ours_over_flex_column(compare, tmp_path):
    rows = _shape_rows({"sdpa_flash": 100.0, "sdpa_cudnn": 200.0, "flex": 150.0, "ours_fa3": 300.0})
    summary = compare.write_markdown(str(tmp_path / "c.md"), rows, ["fa3"],
                                     ["sdpa_flash", "sdpa_cudnn", "flex"], _meta())
    text = (tmp_path / "c.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| d |"))
    assert header.endswith("| ours/FA2 | ours/cuDNN | ours/Flex |")
    row = next(line for line in text.splitlines() if line.startswith("| 128 |"))
    assert row.endswith("| 3.00 | 1.50 | 2.00 |")
    assert summary[0]["geomean_ours_over_flex"] == pytest.approx(2.0)
    assert summary[0]["min_ours_over_flex"] == pytest.approx(2.0)


def test_without_flex_the_table_keeps_its_columns(compare, tmp_path):
    rows = _shape_rows({"sdpa_flash": 100.0, "sdpa_cudnn": 200.0, "ours_fa3": 300.0})
    summary = compare.write_markdown(str(tmp_path / "c.md"), rows, ["fa3"], ["sdpa_flash", "sdpa_cudnn"], _meta())
    lines = (tmp_path / "c.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| d |"))
    row = next(line for line in lines if line.startswith("| 128 |"))
    # Scripts read these rows by position: d, causal, N, B×H, the backends, ours/FA2, ours/cuDNN.
    assert header.endswith("| ours_fa3 | ours/FA2 | ours/cuDNN |")
    assert len(row.strip().strip("|").split("|")) == 4 + 3 + 2
    assert "geomean_ours_over_flex" not in summary[0]


def test_time_peer_sends_flex_to_flexattention_and_the_rest_to_sdpa(compare, monkeypatch):
    calls = []
    monkeypatch.setattr(compare, "time_flex", lambda *a: calls.append("flex") or (1.0, None))
    monkeypatch.setattr(compare, "time_sdpa", lambda torch, peer, *a: calls.append(peer) or (2.0, None))
    assert compare.time_peer(None, "flex", [], True, "fwd", 1, 20) == (1.0, None)
    assert compare.time_peer(None, "sdpa_cudnn", [], True, "fwd", 1, 20) == (2.0, None)
    assert calls == ["flex", "sdpa_cudnn"]


class _Out:
    """The torch tensor calls check_peer_output makes, on a numpy array."""

    def __init__(self, a):
        import numpy as np
        self.a = np.asarray(a, dtype=float)

    def float(self):
        return self

    def __sub__(self, other):
        return _Out(self.a - other.a)

    def abs(self):
        return _Out(abs(self.a))

    def max(self):
        return _Out(self.a.max())

    def item(self):
        return float(self.a)


@pytest.mark.parametrize("out, warned", [([0.5, -0.25, 1.0], False),   # bf16-level differences
                                         ([0.5, -0.25, 0.9], True),    # one element 0.1 off
                                         ([0.5, float("nan"), 1.0], True)])  # NaN never passes
def test_a_peer_output_is_checked_against_the_first_peer(compare, out, warned):
    rec = {}
    compare.check_peer_output(rec, _Out(out), _Out([0.5, -0.26, 1.0]), "sdpa_flash")
    assert "max_abs_diff_vs_sdpa_flash" in rec
    assert ("warning" in rec) == warned
    if warned:
        assert rec["warning"].startswith("output differs from sdpa_flash")
