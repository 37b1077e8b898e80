"""The paired bootstrap of benchmarks/paired.py (issue 35's method) on synthetic numbers whose
answers are known."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "paired.py"
_SPEC = importlib.util.spec_from_file_location("paired", _PATH)
paired = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(paired)


def rows(values, clusters=None, groups=None, metric="R@5"):
    return [{"id": f"q{i}", "cluster": (clusters or [0] * len(values))[i],
             "group": (groups or ["g"] * len(values))[i], metric: v, "MRR": v}
            for i, v in enumerate(values)]


def test_percentile_interpolates_between_ranks():
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert paired.percentile(values, 0.0) == 0.0
    assert paired.percentile(values, 1.0) == 4.0
    assert paired.percentile(values, 0.5) == 2.0
    assert paired.percentile(values, 0.125) == pytest.approx(0.5)


def test_a_constant_delta_has_a_zero_width_interval():
    assert paired.bootstrap([0.25] * 50) == (0.25, 0.25, 0.25)
    assert paired.bootstrap([0.25] * 50, clusters=[i % 5 for i in range(50)]) == (0.25, 0.25, 0.25)


def test_the_interval_matches_the_normal_approximation():
    # half the questions gain 1, half nothing: mean 0.5, standard error sqrt(0.25 / 400)
    deltas = [1.0, 0.0] * 200
    delta, low, high = paired.bootstrap(deltas)
    half_width = 1.96 * math.sqrt(0.25 / 400)
    assert delta == 0.5
    assert low == pytest.approx(0.5 - half_width, abs=0.01)
    assert high == pytest.approx(0.5 + half_width, abs=0.01)


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    deltas = [(i % 97) / 97 - 0.3 for i in range(120)]
    assert paired.bootstrap(deltas, seed=1, resamples=500) == \
        paired.bootstrap(deltas, seed=1, resamples=500)
    assert paired.bootstrap(deltas, seed=1, resamples=500) != \
        paired.bootstrap(deltas, seed=2, resamples=500)


def test_clusters_resampled_whole_widen_the_interval_when_questions_move_together():
    # two conversations: every question of one gains 1, of the other 0; the questions look
    # like 100 independent coin flips, the clusters say there are only two draws
    deltas = [1.0] * 50 + [0.0] * 50
    clusters = [0] * 50 + [1] * 50
    _, q_low, q_high = paired.bootstrap(deltas)
    _, c_low, c_high = paired.bootstrap(deltas, clusters)
    assert c_low == 0.0 and c_high == 1.0  # both clusters drawn twice happens 1 time in 4
    assert 0.35 < q_low < q_high < 0.65


def test_cluster_means_weigh_each_question_once():
    # cluster sizes 1 and 3: with both drawn once, the mean is over the 4 questions
    deltas, clusters = [1.0, 0.0, 0.0, 0.0], ["a", "b", "b", "b"]
    delta, low, high = paired.bootstrap(deltas, clusters, resamples=2000)
    assert delta == 0.25
    assert low == 0.0 and high == 1.0


def test_compare_pairs_questions_by_id_and_splits_by_group():
    base = rows([0.0, 0.5, 1.0, 1.0], groups=["a", "a", "b", "b"])
    new = list(reversed(rows([1.0, 1.0, 1.0, 0.0], groups=["a", "a", "b", "b"])))
    result = paired.compare(base, new, metrics=("R@5",), resamples=500)["R@5"]
    assert result["base"] == 0.625 and result["new"] == 0.75
    assert result["questions"][0] == pytest.approx(0.125)
    assert result["groups"]["a"][:2] == (2, 0.75)
    assert result["groups"]["b"][:2] == (2, -0.5)


def test_runs_of_different_questions_are_refused():
    with pytest.raises(SystemExit):
        paired.compare(rows([0.0, 1.0]), rows([0.0]), metrics=("R@5",))


@pytest.mark.parametrize("intervals, expected", [
    ([(0.05, 0.01, 0.09), (0.01, -0.02, 0.04)], True),   # above zero on one, not below on the other
    ([(0.05, 0.01, 0.09), (0.04, 0.00, 0.08)], True),
    ([(0.02, -0.01, 0.05), (0.01, -0.02, 0.04)], False),  # above zero nowhere
    ([(0.05, 0.01, 0.09), (-0.05, -0.09, -0.01)], False),  # a significant loss on the other
])
def test_the_rule(intervals, expected):
    assert paired.kept(intervals) is expected


def test_fit_picks_each_clusters_value_on_the_other_clusters():
    # candidate "x" is best on clusters 0 and 1, "y" on cluster 2 alone: held out, cluster 2
    # still gets "x" (best on 0 and 1), and clusters 0 and 1 get whichever wins without them
    clusters = [0, 0, 1, 1, 2, 2]
    x = rows([1, 1, 1, 1, 0, 0], clusters)
    y = rows([0, 0, 0, 0, 1, 1], clusters)
    base = rows([0] * 6, clusters)
    held, picks = paired.fit(base, {"x": x, "y": y})
    assert picks == {0: "x", 1: "x", 2: "x"}
    assert [r["R@5"] for r in held] == [1, 1, 1, 1, 0, 0]


def test_the_command_line_compares_saved_runs(tmp_path, capsys):
    for name, values in (("base", [0.0] * 60), ("new", [1.0] * 30 + [0.0] * 30)):
        modes = {"bm25": rows(values, clusters=[i % 3 for i in range(60)])}
        (tmp_path / f"{name}.json").write_text(json.dumps({"modes": modes}))
    paired.main(["compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"),
                 "--resamples", "500"])
    out = capsys.readouterr().out
    assert "R@5: base 0.000 -> new 0.500" in out
    assert out.rstrip().endswith("KEPT")
