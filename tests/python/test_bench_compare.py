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
