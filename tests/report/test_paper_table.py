"""The table for a paper (fasttie.report.paper_table through Comparison.to_*), the effect sizes and
confidence intervals of compare(), and the randomised Tukey HSD test, against independent
references:

- significance marks: brute-force enumeration of every sign vector (itertools.product, integer
  arithmetic) and the textbook Holm step-down rule, recomputed here from the per-query values;
  the bold value: the highest mean recomputed with numpy and rounded as printed.
- LaTeX: parsed back (rows, cells, bold, superscripts), balanced braces, dollars and
  environments; compiled by pdflatex / lualatex / xelatex / tectonic where one is installed.
- Markdown and HTML: parsed back (the HTML with the standard library's html.parser).
- effect size: numpy (mean / sd with n - 1); confidence interval: scipy.stats.ttest_rel's
  ``confidence_interval`` and a closed form with scipy.stats.t.
- randomised Tukey HSD: every row-wise permutation enumerated with itertools (integer
  arithmetic, so no rounding), the paired sign-flip test for two methods, and the Monte Carlo
  p-value within a binomial tolerance of the exact one.
"""

import html.parser
import importlib
import itertools
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fasttie as ft
from fasttie import cli
from fasttie.report.paper_table import escape_latex, escape_markdown
from fasttie.result import Result
from fasttie.report.significance import compare, paired_t_interval, randomization_test, randomized_tukey_hsd

stats = pytest.importorskip("scipy.stats")  # compare() runs the t-test

# the module, even where the package exports a function under its name
sig = importlib.import_module("fasttie.report.significance")


# ---- independent references -----------------------------------------------------------------

def brute_sign_flip_p(int_diffs):
    """#{s: |sum s d| >= |sum d|} / 2**n over every sign vector, in integers."""
    observed = abs(sum(int_diffs))
    hits = sum(abs(sum(s * d for s, d in zip(signs, int_diffs))) >= observed
               for signs in itertools.product((1, -1), repeat=len(int_diffs)))
    return hits / 2 ** len(int_diffs)


def holm_rejected(pvalues, alpha):
    """Indices the Holm step-down procedure rejects."""
    m = len(pvalues)
    out = set()
    for i, index in enumerate(sorted(range(m), key=lambda j: pvalues[j])):
        if pvalues[index] > alpha / (m - i):
            break
        out.add(index)
    return out


def brute_tukey_p(int_matrix):
    """p[i][j] = #{row-wise permutations: max column sum - min column sum >= |S_i - S_j|} / (k!)**n."""
    rows = [list(r) for r in int_matrix]
    k = len(rows[0])
    sums = [sum(r[j] for r in rows) for j in range(k)]
    ranges = []
    for choice in itertools.product(*(list(itertools.permutations(r)) for r in rows)):
        col = [sum(r[j] for r in choice) for j in range(k)]
        ranges.append(max(col) - min(col))
    total = len(ranges)
    return [[sum(r >= abs(sums[i] - sums[j]) for r in ranges) / total for j in range(k)] for i in range(k)]


def result_of(per_metric):
    """A Result from {metric: per-query values}."""
    per_query = {m: np.asarray(v, dtype=np.float64) for m, v in per_metric.items()}
    n = len(next(iter(per_query.values())))
    means = {m: float(np.mean(v[~np.isnan(v)])) if (~np.isnan(v)).any() else float("nan") for m, v in per_query.items()}
    return Result(means, per_query, n, 0)


def integer_methods(seed, n_methods=3, n_queries=10, metrics=("AP", "P@10")):
    """Per-query values in sixteenths (exact in binary), methods of graded strength."""
    rng = np.random.default_rng(seed)
    ints = {}
    for i in range(n_methods):
        shift = rng.integers(0, 6)
        ints[f"m{i}"] = {m: np.clip(rng.integers(0, 12, n_queries) + shift * i // 2, 0, 16) for m in metrics}
    results = {name: result_of({m: v / 16 for m, v in per.items()}) for name, per in ints.items()}
    return ints, results


def expected_marks(ints, names, metric, alpha=0.05):
    """{name: letters of the methods it beats}, from brute force and Holm."""
    pairs = list(itertools.combinations(range(len(names)), 2))
    pvalues = [brute_sign_flip_p((ints[names[i]][metric] - ints[names[j]][metric]).tolist()) for i, j in pairs]
    rejected = holm_rejected(pvalues, alpha)
    letters = "abcdefghijklmnopqrstuvwxyz"
    marks = {n: "" for n in names}
    for index in sorted(rejected):
        i, j = pairs[index]
        diff = int(ints[names[i]][metric].sum() - ints[names[j]][metric].sum())
        winner, loser = (i, j) if diff > 0 else (j, i)
        if diff != 0:
            marks[names[winner]] += letters[loser]
    return {n: "".join(sorted(v)) for n, v in marks.items()}


# ---- LaTeX parsing --------------------------------------------------------------------------

def split_cells(line):
    """Cells of a tabular row: split on & not escaped as \\&, the final \\\\ dropped."""
    assert line.endswith(" \\\\"), line
    return [c.strip() for c in re.split(r"(?<!\\)&", line[: -len(" \\\\")])]


def parse_latex_value(cell):
    """(printed value, bold, superscript letters, phantom letters, range) of a body cell."""
    m = re.fullmatch(
        r"(\\textbf\{(?P<bold>[-0-9.]+)\}|(?P<plain>[-0-9.]+))(\$\^\{(?P<sup>[a-z]+)\}\$)?"
        r"(\\hphantom\{\$\^\{(?P<phantom>[a-z]+)\}\$\})?( \{\\scriptsize\[(?P<lo>[-0-9.]+), (?P<hi>[-0-9.]+)\]\})?",
        cell,
    )
    assert m, cell
    value = m["bold"] or m["plain"]
    rng = (m["lo"], m["hi"]) if m["lo"] else None
    return value, m["bold"] is not None, m["sup"] or "", m["phantom"] or "", rng


def body_rows(latex):
    lines = latex.splitlines()
    start, stop = lines.index("\\midrule"), lines.index("\\bottomrule")
    return lines[lines.index("\\toprule") + 1], lines[start + 1: stop]


def assert_balanced(latex):
    """Braces balanced outside comments and escapes; $ paired; environments nested."""
    body = "\n".join(line for line in latex.splitlines() if not line.startswith("%"))
    plain = re.sub(r"\\[{}$&%#_]", "", body)
    depth = 0
    for ch in plain:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    assert plain.count("$") % 2 == 0
    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{(\w+)\}", body):
        if kind == "begin":
            stack.append(env)
        else:
            assert stack and stack.pop() == env
    assert not stack


# ---- the table ------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_latex_marks_and_bold_match_independent_computation(seed):
    ints, results = integer_methods(seed)
    names = list(results)
    c = compare(results, n_permutations=2 ** 10)  # 2**10 sign vectors: enumerated, exact
    assert all(t["exact"] for t in c.tests)
    latex = c.to_latex(digits=3)
    assert_balanced(latex)
    assert "\\begin{tabular}{clcc}" in latex and latex.rstrip().endswith("\\end{tabular}")
    assert "\\begin{table}" not in latex  # no caption, no label: the bare tabular
    header, rows = body_rows(latex)
    assert split_cells(header) == ["", "Method", "AP", "P@10"]
    assert len(rows) == len(names)
    for j, metric in enumerate(c.metrics):
        marks = expected_marks(ints, names, metric)
        printed_means = {n: round(float(np.mean(ints[n][metric] / 16)), 3) for n in names}
        top = max(printed_means.values())
        for letter, name, row in zip("abc", names, rows):
            cells = split_cells(row)
            assert cells[:2] == [letter, name]
            value, bold, sup, phantom, rng = parse_latex_value(cells[2 + j])
            assert float(value) == printed_means[name]
            assert bold == (printed_means[name] == top)
            assert sup == marks[name], (seed, metric, name)
            # the phantom holds the other letters, so every cell of a row is as wide
            assert "".join(sorted(sup + phantom + letter)) == "abc" and rng is None


def test_significance_marks_are_exercised():
    """The cases above mark some values and not others, so the comparison can fail."""
    seen = set()
    for seed in range(6):
        ints, results = integer_methods(seed)
        for metric in ("AP", "P@10"):
            seen.update(bool(v) for v in expected_marks(ints, list(results), metric).values())
    assert seen == {True, False}


def test_latex_caption_label_tie_range_digits_and_escaping():
    ints, results = integer_methods(1)
    odd = {"BM25_k1 & 50%": results["m0"], "#2 {dense}": results["m1"], "x~y^z\\<q>$": results["m2"]}
    c = compare(odd, n_permutations=1024)
    low = {"AP": 0.125, "P@10": 0.5}
    high = ft.Result({"AP": 0.75, "P@10": 0.25}, {}, 10, 0)  # smaller first whatever the order given
    latex = c.to_latex(digits=2, caption="Means, $p < 0.05$", label="tab:main", tie_range={"#2 {dense}": (high, low)})
    assert_balanced(latex)
    lines = latex.splitlines()
    assert lines[lines.index("\\begin{table}[t]") + 1:][:3] == ["\\centering", "\\caption{Means, $p < 0.05$}", "\\label{tab:main}"]
    assert lines[-1] == "\\end{table}"
    _, rows = body_rows(latex)
    names = [split_cells(r)[1] for r in rows]
    assert names == [r"BM25\_k1 \& 50\%", r"\#2 \{dense\}",
                     r"x\textasciitilde{}y\textasciicircum{}z\textbackslash{}\textless{}q\textgreater{}\$"]
    cells = split_cells(rows[1])
    assert parse_latex_value(cells[2])[4] == ("0.12", "0.75") and parse_latex_value(cells[3])[4] == ("0.25", "0.50")
    assert parse_latex_value(cells[2])[0] == f"{c.means['#2 {dense}']['AP']:.2f}"
    assert parse_latex_value(split_cells(rows[0])[2])[4] is None
    # every comment line is a comment; the legend names the test and the letters
    comments = [line for line in lines if line.startswith("%")]
    assert "booktabs" in comments[0] and "a = BM25_k1 & 50%" in " ".join(comments)


def test_escape_latex_leaves_no_special_character():
    text = "a_b&c%d#e$f{g}h~i^j\\k<l>m"
    escaped = escape_latex(text)
    stripped = re.sub(r"\\(textbackslash|textasciitilde|textasciicircum|textless|textgreater)\{\}|\\[&%#_${}]", "", escaped)
    assert not set(stripped) & set("\\&%#_${}~^<>") and stripped == "abcdefghijklm"
    assert escape_markdown("a|b*c_d<e>") == "a\\|b\\*c\\_d\\<e\\>"


TEX_ENGINES = [e for e in ("pdflatex", "lualatex", "xelatex", "tectonic") if shutil.which(e)]


@pytest.mark.skipif(not TEX_ENGINES, reason="no TeX engine (pdflatex, lualatex, xelatex, tectonic) on this machine; "
                    "the LaTeX is checked by structure in the other tests")
def test_latex_compiles(tmp_path):
    _, results = integer_methods(2)
    odd = {"BM25_k1 & 50%": results["m0"], "#2 {dense}": results["m1"], "x~y^z\\<q>$": results["m2"]}
    c = compare(odd, n_permutations=1024)
    table = c.to_latex(caption="Means", label="tab:x", tie_range={"#2 {dense}": (results["m0"], results["m2"])})
    (tmp_path / "t.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + table + "\\end{document}\n"
    )
    engine = TEX_ENGINES[0]
    argv = [engine, "t.tex"] if engine == "tectonic" else [engine, "-interaction=nonstopmode", "-halt-on-error", "t.tex"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "t.pdf").exists()


def test_markdown_and_html_show_the_same_cells():
    ints, results = integer_methods(3)
    names = list(results)
    renamed = {"a|b": results["m0"], "c_d": results["m1"], "e<f>&": results["m2"]}
    c = compare(renamed, n_permutations=1024)
    shown = list(renamed)
    tie = {"c_d": ({"AP": 0.1, "P@10": 0.2}, {"AP": 0.3, "P@10": 0.4})}
    md = c.to_markdown(digits=3, tie_range=tie).splitlines()
    assert md[0] == "|   | method | AP | P@10 |" and md[1] == "|---|---|---:|---:|"
    assert "a = a|b" not in md[-1] and "a = a\\|b" in md[-1]
    body = md[2:5]
    assert md[5] == ""

    class Cells(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.in_cell = [], False

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.rows[-1].append("")
                self.in_cell = True
            elif tag in ("b", "sup"):
                self.rows[-1][-1] += {"b": "**", "sup": "<sup>"}[tag]

        def handle_endtag(self, tag):
            if tag in ("b", "sup"):
                self.rows[-1][-1] += {"b": "**", "sup": "</sup>"}[tag]
            elif tag in ("td", "th"):
                self.in_cell = False

        def handle_data(self, data):
            if self.in_cell:
                self.rows[-1][-1] += data

    parser = Cells()
    parser.feed(c.to_html(digits=3, caption="A & B", tie_range=tie))
    header, *html_rows, foot = parser.rows
    assert header == ["", "method", "AP", "P@10"] and len(foot) == 1 and "a = a|b" in foot[0]
    assert "<caption>A &amp; B</caption>" in c.to_html(caption="A & B")
    for j, metric in enumerate(c.metrics):
        marks = expected_marks(ints, names, metric)
        printed = {n: f"{np.mean(ints[n][metric] / 16):.3f}" for n in names}
        top = max(float(v) for v in printed.values())
        for i, (old, new) in enumerate(zip(names, shown)):
            cell = printed[old]
            cell = f"**{cell}**" if float(printed[old]) == top else cell
            cell += f"<sup>{marks[old]}</sup>" if marks[old] else ""
            cell += " [0.100, 0.300]" if (new == "c_d" and metric == "AP") else ""
            cell += " [0.200, 0.400]" if (new == "c_d" and metric == "P@10") else ""
            md_cells = [x.strip() for x in re.split(r"(?<!\\)\|", body[i])[1:-1]]
            assert md_cells[:2] == ["abc"[i], escape_markdown(new)]
            assert md_cells[2 + j] == cell
            assert html_rows[i][:2] == ["abc"[i], new] and html_rows[i][2 + j] == cell


def test_nan_means_print_as_missing_and_are_never_bold():
    a = result_of({"AP": [np.nan, np.nan, np.nan, np.nan]})
    b = result_of({"AP": [0.5, 0.25, 0.75, 0.5]})
    c = compare({"a": a, "b": b}, n_permutations=100)
    _, rows = body_rows(c.to_latex())
    assert split_cells(rows[0])[2] == "--"
    assert parse_latex_value(split_cells(rows[1])[2])[:2] == ("0.500", True)
    assert "| a | a | n/a |" in c.to_markdown() and "<td>n/a</td>" in c.to_html()


def test_ties_in_the_printed_value_are_all_bold():
    a = result_of({"AP": [0.5, 0.25, 0.75, 0.5]})
    b = result_of({"AP": [0.5, 0.2502, 0.75, 0.5]})  # 0.50005 prints as 0.500 too
    _, rows = body_rows(compare({"a": a, "b": b}, n_permutations=100).to_latex(digits=3))
    assert [parse_latex_value(split_cells(r)[2])[1] for r in rows] == [True, True]
    _, rows = body_rows(compare({"a": a, "b": b}, n_permutations=100).to_latex(digits=5))
    assert [parse_latex_value(split_cells(r)[2])[1] for r in rows] == [False, True]


def test_tie_range_from_results_of_the_tie_modes():
    q, db, ql, dl = ft.datasets.synthetic_hashing(30, 400, 64, 4, flip=0.3, seed=4)
    noisy = ft.unpack_codes(q) ^ (np.random.default_rng(0).random((30, 64)) < 0.2)
    metrics = ["AP", "P@10"]
    runs = {name: {ties: ft.evaluate(codes, db, ql, dl, metrics=metrics, ties=ties)
                   for ties in ("average", "pessimistic", "optimistic")}
            for name, codes in (("clean", q), ("noisy", noisy))}
    c = compare({n: r["average"] for n, r in runs.items()}, n_permutations=200)
    tie = {n: (r["pessimistic"], r["optimistic"]) for n, r in runs.items()}
    _, rows = body_rows(c.to_latex(tie_range=tie))
    for name, row in zip(runs, rows):
        for j, metric in enumerate(metrics):
            lo, hi = runs[name]["pessimistic"].mean[metric], runs[name]["optimistic"].mean[metric]
            assert lo < runs[name]["average"].mean[metric] < hi  # ties matter here
            assert parse_latex_value(split_cells(row)[2 + j])[4] == (f"{lo:.3f}", f"{hi:.3f}")


def test_table_option_errors():
    _, results = integer_methods(0)
    c = compare(results, n_permutations=100)
    with pytest.raises(ValueError, match="tie_range names method 'zz'"):
        c.to_latex(tie_range={"zz": ({}, {})})
    with pytest.raises(TypeError, match="tie_range must be a dict"):
        c.to_latex(tie_range=[1, 2])
    with pytest.raises(TypeError, match=r"tie_range\['m0'\] must be a pair"):
        c.to_markdown(tie_range={"m0": results["m0"]})
    with pytest.raises(ValueError, match=r"tie_range\['m0'\] has no value for metric 'P@10'"):
        c.to_html(tie_range={"m0": ({"AP": 0.1}, {"AP": 0.2})})
    with pytest.raises(TypeError, match="must be a number"):
        c.to_latex(tie_range={"m0": ({"AP": "x", "P@10": 1}, {"AP": 0.2, "P@10": 1})})
    with pytest.raises(ValueError, match="digits"):
        c.to_latex(digits=-1)
    with pytest.raises(TypeError, match="caption"):
        c.to_latex(caption=3)


# ---- to_frame -------------------------------------------------------------------------------

def test_to_frame_means_marks_and_pairs():
    pd = pytest.importorskip("pandas")
    ints, results = integer_methods(4)
    c = compare(results, n_permutations=1024)
    frame = c.to_frame()
    assert list(frame.index) == c.names and frame.index.name == "method"
    assert list(frame.columns) == [(m, f) for m in c.metrics for f in ("mean", "beats")]
    means = frame.xs("mean", axis=1, level=1)
    for name in c.names:
        for metric in c.metrics:
            assert means.loc[name, metric] == np.mean(ints[name][metric] / 16)
            assert frame.loc[name, (metric, "beats")] == expected_marks(ints, c.names, metric)[name]
    assert all(means.dtypes == np.float64)
    pairs = c.to_frame(pairs=True)
    assert pairs.index.names == ["metric", "a", "b"] and len(pairs) == len(c.tests)
    assert list(pairs.columns) == [k for k in c.tests[0] if k not in ("metric", "a", "b")]
    for t in c.tests:
        row = pairs.loc[(t["metric"], t["a"], t["b"])]
        assert row["ci_low"] == t["ci_low"] and row["effect_size"] == t["effect_size"]
    assert isinstance(pairs, pd.DataFrame)


def test_to_frame_names_pandas_when_missing(monkeypatch):
    _, results = integer_methods(0)
    c = compare(results, n_permutations=100)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'fasttie\[frame\]'"):
        c.to_frame()


# ---- effect size and confidence interval ----------------------------------------------------

@settings(max_examples=60)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=40),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_effect_size_and_interval_match_numpy_and_scipy(pairs, level):
    x, y = np.array(pairs).T
    d = x - y
    c = compare({"x": result_of({"AP": x}), "y": result_of({"AP": y})}, n_permutations=10, confidence=level)
    (t,) = c.tests
    if np.all(d == d[0]):
        assert t["effect_size"] == 0.0 if d[0] == 0 else math.isnan(t["effect_size"])
        assert t["ci_low"] == t["ci_high"] == np.mean(d)
        return
    sd = np.std(d, ddof=1)
    if sd < 1e-9 * max(np.abs(d).max(), 1e-300):
        return  # variance lost to rounding: nothing to compare
    assert t["effect_size"] == pytest.approx(np.mean(d) / sd, rel=1e-12)
    ci = stats.ttest_rel(x, y).confidence_interval(confidence_level=level)
    assert t["ci_low"] == pytest.approx(ci.low, rel=1e-9, abs=1e-12)
    assert t["ci_high"] == pytest.approx(ci.high, rel=1e-9, abs=1e-12)
    assert t["ci_low"] <= t["mean_diff"] <= t["ci_high"]
    assert c.settings["confidence"] == level


def test_interval_hand_example_and_limits():
    # differences 0.2, 0.3, 0.1, 0.2: mean 0.2, sd sqrt(0.02/3), t_{0.975, 3} = 3.182446305...
    low, high = paired_t_interval([0.2, 0.3, 0.1, 0.2])
    half = 3.182446305284263 * math.sqrt(0.02 / 3) / 2
    assert low == pytest.approx(0.2 - half, rel=1e-12) and high == pytest.approx(0.2 + half, rel=1e-12)
    assert all(math.isnan(v) for v in paired_t_interval([0.3]))
    assert paired_t_interval([0.25, 0.25, 0.25]) == (0.25, 0.25)
    wide, narrow = paired_t_interval([0.2, 0.3, 0.1], confidence=0.99), paired_t_interval([0.2, 0.3, 0.1], confidence=0.5)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    with pytest.raises(ValueError, match="confidence"):
        compare({"x": result_of({"AP": [0.1, 0.2]}), "y": result_of({"AP": [0.2, 0.2]})}, confidence=95)


def test_interval_covers_the_true_difference_at_its_level():
    """Coverage of the 90% interval over 2000 normal samples: 0.9 within 4 binomial sigmas."""
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        d = rng.normal(0.05, 0.2, size=12)
        low, high = paired_t_interval(d, confidence=0.9)
        hits += low <= 0.05 <= high
    assert abs(hits / 2000 - 0.9) <= 4 * math.sqrt(0.9 * 0.1 / 2000)


def test_effect_size_limits():
    c = compare({"x": result_of({"AP": [0.5, 0.25]}), "y": result_of({"AP": [0.25, 0.0]})}, n_permutations=10)
    assert math.isnan(c.tests[0]["effect_size"])  # one nonzero constant difference: no finite d_z
    c = compare({"x": result_of({"AP": [0.5]}), "y": result_of({"AP": [0.25]})}, n_permutations=10)
    assert math.isnan(c.tests[0]["effect_size"]) and math.isnan(c.tests[0]["ci_low"])


# ---- randomised Tukey HSD ---------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(2, 4).flatmap(lambda k: st.lists(
    st.lists(st.integers(0, 10), min_size=k, max_size=k), min_size=1, max_size={2: 8, 3: 4, 4: 2}[k])))
def test_tukey_exact_enumeration_matches_brute_force(rows):
    """Tenths (P@10-like values, not exact in binary): ties in exact arithmetic must still tie."""
    values = np.array(rows, dtype=np.float64) / 10
    k = values.shape[1]
    p, exact = randomized_tukey_hsd(values, n_permutations=math.factorial(k) ** len(rows))
    assert exact
    np.testing.assert_array_equal(p, np.array(brute_tukey_p(rows)))


def test_tukey_with_two_methods_is_the_sign_flip_test():
    rng = np.random.default_rng(2)
    for _ in range(20):
        ints = rng.integers(0, 17, size=(9, 2))
        p, exact = randomized_tukey_hsd(ints / 16, n_permutations=512)
        sign_p, sign_exact = randomization_test(ints[:, 0] / 16 - ints[:, 1] / 16, n_permutations=512)
        assert exact and sign_exact and p[0, 1] == p[1, 0] == sign_p
        assert sign_p == brute_sign_flip_p((ints[:, 0] - ints[:, 1]).tolist())


def test_tukey_monte_carlo_within_binomial_tolerance_and_reproducible(monkeypatch):
    rng = np.random.default_rng(3)
    ints = rng.integers(0, 12, size=(6, 3)) + np.array([0, 2, 4])  # 6**6 = 46656 shuffles
    exact = np.array(brute_tukey_p(ints.tolist()))
    n_perm = 20000
    p, is_exact = randomized_tukey_hsd(ints / 16, n_permutations=n_perm, seed=5)
    assert not is_exact
    for i, j in itertools.combinations(range(3), 2):
        count = p[i, j] * (1 + n_perm) - 1
        sigma = math.sqrt(exact[i, j] * (1 - exact[i, j]) / n_perm)
        assert abs(count / n_perm - exact[i, j]) <= 5 * sigma + 2 / n_perm
    reference = randomized_tukey_hsd(ints / 16, n_permutations=3001, seed=5)
    for elements in (18, 1000, 1 << 30):  # one shuffle per block, 55 per block, one block
        monkeypatch.setattr(sig, "_SIGN_ELEMENTS", elements)
        again = randomized_tukey_hsd(ints / 16, n_permutations=3001, seed=5)
        np.testing.assert_array_equal(again[0], reference[0])
    monkeypatch.setattr(sig, "_SIGN_ELEMENTS", 7)  # the enumeration is split into blocks too
    np.testing.assert_array_equal(randomized_tukey_hsd(ints[:3] / 16, n_permutations=216)[0], brute_tukey_p(ints[:3].tolist()))
    assert not np.array_equal(randomized_tukey_hsd(ints / 16, n_permutations=3001, seed=6)[0], reference[0])


def test_tukey_sanity_identical_and_strongly_better():
    rng = np.random.default_rng(4)
    base = rng.random((50, 1))
    p, _ = randomized_tukey_hsd(np.repeat(base, 4, axis=1), n_permutations=500)
    assert np.all(p == 1.0)
    values = np.column_stack([base[:, 0], rng.random(50), rng.random(50), np.clip(base[:, 0] + 0.4, 0, 1.5)])
    p, _ = randomized_tukey_hsd(values, n_permutations=999)
    assert p[0, 3] == 1 / 1000 and p[1, 3] == 1 / 1000  # no shuffle reaches the observed range
    assert np.allclose(p, p.T) and np.all(np.diag(p) == 1)
    with pytest.raises(ValueError, match="NaN"):
        randomized_tukey_hsd(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="k >= 2"):
        randomized_tukey_hsd(np.ones((3, 1)))
    assert np.isnan(randomized_tukey_hsd(np.ones((0, 3)))[0]).all()


def test_compare_with_tukey_hsd():
    rng = np.random.default_rng(9)
    ints = rng.integers(0, 12, size=(5, 3)) + np.array([0, 2, 9])  # 6**5 = 7776 shuffles
    values = ints / 16
    nan_row = np.array([[0.5, np.nan, 0.25]])
    results = {n: result_of({"AP": np.concatenate([values[:, j], nan_row[:, j]])}) for j, n in enumerate("xyz")}
    c = compare(results, n_permutations=10000, correction="tukey-hsd")
    brute = brute_tukey_p(ints.tolist())  # the query with a NaN is left out of every pair
    for t in c.tests:
        i, j = "xyz".index(t["a"]), "xyz".index(t["b"])
        assert t["perm_p"] == t["perm_p_adjusted"] == brute[i][j] and t["exact"]
        assert t["significant"] == (brute[i][j] <= 0.05)
    t_p = [t["t_p"] for t in c.tests]
    np.testing.assert_array_equal([t["t_p_adjusted"] for t in c.tests], sig.adjust_pvalues(t_p, "holm"))
    assert any(t["significant"] for t in c.tests) and not all(t["significant"] for t in c.tests)
    assert "randomised Tukey HSD" in str(c) and "exact enumeration" in c.legend()
    assert c.settings["correction"] == "tukey-hsd"
    with pytest.raises(ValueError, match="tukey-hsd"):
        compare(results, correction="tukey")


# ---- CLI ------------------------------------------------------------------------------------

def test_cli_writes_the_tables(tmp_path, capsys):
    ints, results = integer_methods(5)
    for name, result in results.items():
        result.save(tmp_path / f"{name}.json")
    tex, md, page = tmp_path / "t.tex", tmp_path / "t.md", tmp_path / "t.html"
    argv = ["compare", *(f"{n}={tmp_path / n}.json" for n in results),
        "--permutations", "1024", "--latex", str(tex), "--markdown", str(md), "--html", str(page),
        "--table-digits", "2", "--caption", "Main results", "--label", "tab:main", "--correction", "tukey-hsd"]
    assert cli.main(argv) == 0
    _, err = capsys.readouterr()
    assert f"wrote {tex}" in err
    expected = compare(results, n_permutations=1024, correction="tukey-hsd")
    assert tex.read_text() == expected.to_latex(digits=2, caption="Main results", label="tab:main")
    assert md.read_text() == expected.to_markdown(digits=2)
    assert page.read_text() == expected.to_html(digits=2, caption="Main results")
    files = [str(tmp_path / f"{n}.json") for n in results]
    assert cli.main(["compare", *files, "--latex", str(tmp_path / "t.txt")]) == 2
    assert "--latex" in capsys.readouterr().err and not (tmp_path / "t.txt").exists()
    assert cli.main(["compare", *files, "--label", "x"]) == 2
    assert "--label" in capsys.readouterr().err


def test_cli_help_lists_the_table_options():
    done = subprocess.run([sys.executable, "-m", "fasttie", "compare", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    for option in ("--latex FILE.tex", "--markdown FILE.md", "--html FILE.html", "--table-digits", "tukey-hsd", "--confidence"):
        assert option in done.stdout
