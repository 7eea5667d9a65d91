"""The numbers of the committed figures, and the prose that quotes them.

    python figures/sidecars.py compare figures OTHER   # OTHER's sidecars equal the committed
    python figures/sidecars.py prose FILE...           # rewrite the generated blocks of FILEs
    python figures/sidecars.py prose --check FILE...   # exit 1 if a block is stale

Every figure in figures/ has a sidecar (NAME.json, written by `sweep plot --numbers` in the
same make rule; NAME.*.txt for quoted console output). README.md and docs/ quote run
numbers only inside blocks

    <!-- sidecar: RENDERER -->
    ...generated text...
    <!-- /sidecar -->

whose text RENDERER (below) makes from the sidecars. `make figures` rewrites the blocks;
`make check-figures` regenerates the sidecars from the code and compares both.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK = re.compile(r"(<!-- sidecar: ([\w-]+) -->\n)(.*?)(<!-- /sidecar -->)", re.S)
# these need the trained model (`make figures-trained`): ~10 and ~3 minutes
UNCHECKED = ("trained-vs-random.json", "layers.json", "train-minilm.json",
             "cosine-histograms.json")


def load(name: str) -> dict:
    return json.loads((HERE / name).read_text())


def panels(name: str) -> dict:
    """{panel title: panel} of a sidecar."""
    return {p["panel"]: p for p in load(name)["panels"]}


# ---------------------------------------------------------------- compare

def compare(committed: Path, fresh: Path) -> list[str]:
    """Where the regenerated sidecars differ from the committed ones (exact: the runs are
    deterministic, and sidecars hold no wall-clock time)."""
    problems = []
    made = sorted(p.name for p in fresh.iterdir() if p.suffix in (".json", ".txt"))
    if not made:
        return [f"{fresh}: no sidecars were regenerated"]
    for name in made:
        mine = committed / name
        if not mine.is_file():
            problems.append(f"{mine}: not committed (run make figures)")
            continue
        a, b = mine.read_text(), (fresh / name).read_text()
        if name.endswith(".json"):
            a, b = json.loads(a), json.loads(b)
        if a != b:
            problems.append(f"{mine}: differs from the code's numbers ({first_difference(a, b)})"
                            "; run make figures and commit")
    for mine in sorted(committed.glob("*.json")):
        if mine.name not in made and mine.name not in UNCHECKED:
            problems.append(f"{mine}: no rule regenerates it")
    return problems


def first_difference(a, b, where: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            if a.get(key) != b.get(key):
                return first_difference(a.get(key), b.get(key), f"{where}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{where}[{k}]")
    if isinstance(a, str) and isinstance(b, str):
        lines = [(x, y) for x, y in zip(a.splitlines(), b.splitlines()) if x != y]
        return f"{lines[0][0]!r} now {lines[0][1]!r}" if lines else "line count"
    return f"{where or 'value'}: {a!r} now {b!r}"


# ---------------------------------------------------------------- prose

def pct(x: float) -> str:
    return f"{100 * abs(x):.1f}%"


def deviation_range(panel: dict, low: float = -1e9, high: float = 1e9) -> tuple:
    devs = [r["deviation"] for r in panel.get("deviation", [])
            if r["deviation"] is not None and low <= r["beta"] <= high]
    return min(devs), max(devs)


def side(devs: tuple) -> str:
    """Where the measured boundary lies relative to the ODE's, in words."""
    lo, hi = devs
    if lo > 0:
        return f"later than the ODE's at every beta (by {pct(lo)} to {pct(hi)})"
    if hi < 0:
        return f"earlier than the ODE's at every beta (by {pct(hi)} to {pct(lo)})"
    return f"within {pct(max(abs(lo), abs(hi)))} of the ODE's, on both sides of it"


def within(devs: tuple) -> str:
    return pct(max(map(abs, devs)))


def last_crossing(panel: dict) -> float:
    return max(r["beta"] for r in panel["threshold"] if r["threshold"] is not None)


def demo_console() -> str:
    plan = "\n".join(line.rstrip() for line in (HERE / "demo.plan.txt").read_text().splitlines())
    jobs = re.search(r"(\d+) job\(s\)", plan).group(1)
    runs = load("demo.json")["runs"]
    table = (HERE / "demo.threshold.txt").read_text().rstrip()
    plan = plan.strip("\n")
    return f"""```console
$ sweep plan configs/demo.yaml
{plan}

$ sweep run configs/demo.yaml
demo ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ {jobs}/{jobs} ...
{jobs} job(s) run in ... s (overall rate ... jobs/s, start-up, warm-up and waits included; \
kernel rate ... jobs/s per worker, ...% of worker time integrating), \
0 skipped, {runs.get('failed', 0)} failed, \
{runs.get('non_finite', 0)} non-finite; parts in results/demo.parts
results: results/demo.nc

$ sweep threshold results/demo.nc --var clustered_fraction --along time --level 0.5 \\
      -o results/demo.threshold.nc
  ...
{table}
threshold: results/demo.threshold.nc

$ sweep theory equiangular --n 32 --model softmax --eps 1e-3 --beta 0 9.5 191 \\
      --t-max 30 --save-every 0.25 -o results/theory-equiangular-n32.nc
$ sweep plot results/demo.nc --var clustered_fraction --x beta --y time \\
      --threshold results/demo.threshold.nc --theory results/theory-equiangular-n32.nc \\
      -o figures/demo.png --numbers figures/demo.json
figure: figures/demo.png
numbers: figures/demo.json
```
"""


def demo_prose() -> str:
    p = panels("demo.json")
    low, high = p["d = 3"], p["d = 32"]
    start = {k: v["threshold"][0]["threshold"] for k, v in p.items()}
    seeds = load("demo.json")["seeds"]
    return wrap(f"The colour is the fraction of token pairs with cosine above 1 - 10^-3, "
                f"averaged over the {seeds} seeds. The white curve is the time at which the "
                f"seed mean reaches one half (95% bootstrap interval over the seeds), the dashed "
                f"red curve where the equiangular ODE of docs/theory.md reaches rho = 1 - 10^-3. "
                f"At beta = 0 half of the pairs have merged by t = {start['d = 3']:.3g} (d = 3) "
                f"and {start['d = 32']:.3g} (d = 32); the merger time grows steeply with beta, and "
                f"past beta = {last_crossing(low):g} (d = 3) and {last_crossing(high):g} "
                f"(d = 32) the seed mean does not reach one half by t = 30. In d = 32 the "
                f"measured boundary follows the ODE's, the d -> infinity prediction of arXiv "
                f"2312.10794: within {within(deviation_range(high, 0, 5))} for beta <= 5, "
                f"{side(deviation_range(high))} over all beta. In d = 3 it lies "
                f"{side(deviation_range(low))}: the tokens merge later, through long-lived "
                f"intermediate clusters.")


def phase_glpr_prose() -> str:
    p = panels("phase-glpr.json")
    near = {d: deviation_range(p[f"d = {d}"], 1, 5) for d in (8, 128, 1024)}
    return wrap(f"In d = 8 the measured boundary lies {side(deviation_range(p['d = 8']))}: "
                f"the tokens merge later and more gradually than the ODE says. In d = 128 and "
                f"1024 it lies within {within(near[128])} and {within(near[1024])} of the ODE "
                f"boundary for beta in [1, 5], as the d -> infinity theorem says it must.")


def condensation_prose() -> str:
    panel = load("condensation.json")["panels"][0]
    rows = [r for r in panel["threshold"] if r["threshold"] is not None]
    listed = ", ".join(f"{r['threshold']:.2g} at d = {r['d']:g}" for r in rows)
    never = [r["d"] for r in panel["threshold"] if r["threshold"] is None]
    empty = panel["empty_cells"]
    cells = "; ".join(_cell(c) for c in empty)
    blank = (f" The hatched cells ({cells}) have no plateau: "
             f"{panel['empty_because'].split(': ', 1)[1]}." if empty else "")
    missing = f"; at d = {', '.join(f'{d:g}' for d in never)} it never crosses" if never else ""
    return wrap(f"The threshold grows with d (beta of about {listed}{missing}).{blank}")


def refine_table() -> str:
    """docs/refine.md: refine's threshold per d beside the full grid's, from one sidecar."""
    shown = load("refine-demo.json")
    panel = shown["panels"][0]
    refined, grid = panel["refined"], {r["d"]: r for r in panel["threshold"]}
    rows = ["| d | full grid: threshold | its 95% interval | refine: threshold | its 95% interval"
            " | points sampled |", "|---|---|---|---|---|---|"]
    for r in refined["lines"]:
        g = grid[r["d"]]
        rows.append(f"| {r['d']:g} | {g['threshold']:.4g} | {_ends(g)} "
                    f"| {r['threshold']:.4g} | {_ends(r)} | {r['points']} |")
    jobs, total = refined["jobs"], shown["runs"]["ok"]
    inside = all(grid[r["d"]]["low"] <= r["threshold"] <= grid[r["d"]]["high"]
                 for r in refined["lines"])
    return "\n".join(rows) + "\n\n" + wrap(
        f"Refine ran {jobs} jobs in {refined['rounds']} rounds (tolerance "
        f"{refined['tolerance']}), {jobs / total:.0%} of the full grid's {total} "
        f"({shown['seeds']} seeds each way); its thresholds "
        f"{'lie' if inside else 'do not all lie'} inside the full grid's intervals.")


def _ends(row: dict) -> str:
    """A threshold's interval as [low, high]; an end that is None is open."""
    return "[" + ", ".join("open" if v is None else f"{v:.4g}"
                           for v in (row["low"], row["high"])) + "]"


def d_question_table() -> str:
    """The three threshold recipes on one sweep, per d: which question each answers."""
    recipes = load("d-question.json")["recipes"]
    ds = recipes[0]["d"]
    head = ("| recipe | `sweep threshold RESULTS ...` | answers | "
            + " | ".join(f"d = {d}" for d in ds) + " | monotone in d |")
    lines = [head, "|" + "---|" * (len(ds) + 4)]
    for r in recipes:
        cells = ["never" if v is None else f"{v:g}" for v in r["threshold"]]
        lines.append(f"| {r['recipe']} | `{r['options']}` | {r['question']} | "
                     + " | ".join(cells) + f" | {'yes' if r['monotone'] else 'no'} |")
    one_way = [r["recipe"] for r in recipes if r["monotone"]]
    other = [r["recipe"] for r in recipes if not r["monotone"]]
    said = (f"Only {', '.join(one_way)} moves one way with d; "
            f"{' and '.join(other)} {'does' if len(other) == 1 else 'do'} not.")
    return "\n".join(lines) + "\n\n" + wrap(said)


def wrap(text: str) -> str:
    import textwrap

    return textwrap.fill(text, 96) + "\n"


def trained_probe_table() -> str:
    """The trained model's own layers (docs/trained.md), from figures/trained-vs-random.json."""
    probe = load("trained-vs-random.json")["probe"]
    rows = [("mean_cosine", "`mean_cosine`", "{:.3f}"),
            ("clustered_fraction", "`clustered_fraction` (cos > 0.999)", "{:.2g}"),
            ("coarse_n_clusters", "`coarse_n_clusters` (cos > 0.9)", "{:.0f}"),
            ("coarse_largest_cluster", "`coarse_largest_cluster`", "{:.3f}"),
            ("pc1_share", "`pc1_share`", "{:.3f}"),
            ("token_norm", "`token_norm`", "{:.3g}"),
            ("model_attention_entropy", "`model_attention_entropy` (max ln 296 = 5.69)",
             "{:.3g}")]
    layers = [f"{x:g}" for x in probe["layer"]]
    lines = ["| layer | " + " | ".join(layers) + " |", "|---" * (len(layers) + 1) + "|"]
    for key, name, form in rows:
        cells = ["-" if v is None else form.format(v) for v in probe[key]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def trained_mean_cosine_table() -> str:
    """Mean cosine at the last time, per matrix set and beta (docs/trained.md)."""
    shown = load("trained-vs-random.json")
    lines = ["| matrices | L1 | L2 | L3 | L4 | L5 | L6 |", "|---|---|---|---|---|---|---|"]
    for panel in shown["panels"]:
        if not panel["panel"].startswith("mean_cosine"):
            continue
        beta = panel["panel"].split("β = ")[1]
        final = {line["label"]: line["y"][-1] for line in panel["lines"]}
        for kind, name in (("trained", "trained"), ("Gaussian", "norm-matched Gaussian")):
            cells = [f"{final[f'{kind} L{k}']:.3f}" for k in range(1, 7)]
            lines.append(f"| {name}, beta = {beta} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def beta_scale_table() -> str:
    """Inter-cluster attention on the multi-cluster plateau per beta_scale and d
    (docs/models.md), from figures/beta-scale.json."""
    facts = load("beta-scale.json")
    lines = ["| beta_scale | d | effective beta | runs with a plateau | groups | from t | "
             "held for | overlap_gap | inter_attention |", "|---|---|---|---|---|---|---|---|---|"]
    for r in facts["rows"]:
        if r["plateaus"]:
            rest = (f"{r['n_groups']:g} | {r['from_time']:g} | {r['held_for']:g} | "
                    f"{r['overlap_gap']:.2g} | {r['inter_attention']:.2g}")
        else:
            rest = f"- | - | - | - | - (no two groups by t = {facts['t_max']:g})"
        lines.append(f"| {r['beta_scale']} | {r['d']} | {r['beta']:g} | {r['plateaus']} of "
                     f"{r['seeds']} | {rest} |")
    return "\n".join(lines) + "\n"


def euclidean_polytope_table() -> str:
    """Limit points of euclidean space's flow per beta (docs/models.md), from
    figures/euclidean-polytope.json."""
    facts = load("euclidean-polytope.json")
    lines = ["| beta | limit points (n_points at t_max): median (range) | vertices of the "
             "start's hull (median) | limits inside the start's hull | limits all vertices "
             "of their hull | limits at a start vertex (median) |", "|---|---|---|---|---|---|"]
    for r in facts["rows"]:
        p = r["n_points"]
        lines.append(f"| {r['beta']:g} | {p['median']:g} ({p['min']} to {p['max']}) | "
                     f"{r['start_vertices']:g} | {r['inside']} of {r['seeds']} | "
                     f"{r['vertices']} of {r['seeds']} | {r['at_start_vertices']:g} |")
    return "\n".join(lines) + "\n"


def euclidean_hyperplanes_table() -> str:
    """Levels, eigenvalue and the residual's decay per beta under V of simple positive top
    eigenvalue (docs/models.md), from figures/euclidean-hyperplanes.json."""
    facts = load("euclidean-hyperplanes.json")
    lines = [f"| beta | levels of <psi, y_i> at t = {facts['t_max']:g}: median (range) | runs "
             "on at most 3 | n_points | v_eigenvalue (median) | v_eigen_residual (median) | "
             f"its decay rate, median (range); theory {facts['theory_rate']:g} |",
             "|---" * 7 + "|"]
    for r in facts["rows"]:
        lv, p = r["levels"], r["n_points"]
        lines.append(f"| {r['beta']:g} | {lv['median']:g} ({lv['min']:g} to {lv['max']:g}) | "
                     f"{r['at_most_three']} of {r['seeds']} | {p['median']:g} ({p['min']:g} to "
                     f"{p['max']:g}) | {r['eigenvalue']['median']:.5f} | "
                     f"{r['residual']['median']:.1e} | {_range(r['rate'], '{:.3f}')} |")
    return "\n".join(lines) + "\n"


def _range(x: dict, form: str = "{:.2g}") -> str:
    return (f"{form.format(x['median'])} ({form.format(x['min'])} to "
            f"{form.format(x['max'])})")


def overlap_gap_table() -> str:
    """Inter-cluster attention at t_max from tight clusters per beta_scale and d
    (docs/models.md), from figures/overlap-gap.json: seed medians (ranges)."""
    facts = load("overlap-gap.json")
    lines = ["| beta_scale | d | effective beta | groups | overlap_gap | inter_attention |",
             "|---|---|---|---|---|---|"]
    for scale in facts["scales"]:
        for r in scale["rows"]:
            lines.append(f"| {scale['beta_scale']} | {r['d']} | {r['beta']:g} | "
                         f"{_range(r['n_groups'], '{:g}')} | {_range(r['overlap_gap'])} | "
                         f"{_range(r['inter_attention'])} |")
    return "\n".join(lines) + "\n"


def overlap_gap_fit() -> str:
    """The decay rates of ln inter_attention against the theory's (docs/models.md)."""
    facts = load("overlap-gap.json")
    lines = ["| beta_scale | rate in beta_eff, fitted | theory's rate | per run: r (theory 1) "
             "| ln(measured / equiangular) |", "|---|---|---|---|---|"]
    for s in facts["scales"]:
        fitted, theory = (("-", "- (beta_eff fixed)") if s["rate_fitted"] is None
                          else (f"{s['rate_fitted']:.3g}", f"{s['rate_theory']:.3g}"))
        lo, hi = s["bounds"]
        lines.append(f"| {s['beta_scale']} | {fitted} | {theory} | {s['per_run_r']:.3g} | "
                     f"{lo:.3g} to {hi:.3g} |")
    d = next(s for s in facts["scales"] if s["beta_scale"] == "d")["rows"]
    tail = wrap(f"Under `d` the seed-median inter_attention falls from "
                f"{d[0]['inter_attention']['median']:.2g} at d = {d[0]['d']} to "
                f"{d[-1]['inter_attention']['median']:.2g} at d = {d[-1]['d']}, with the "
                f"overlap gap's median between {min(r['overlap_gap']['median'] for r in d):.2g} "
                f"and {max(r['overlap_gap']['median'] for r in d):.2g} and "
                f"{min(r['n_groups']['min'] for r in d):g} to "
                f"{max(r['n_groups']['max'] for r in d):g} groups. The theory's bounds for "
                f"k = {facts['clusters']} clusters put ln(measured / equiangular) in "
                f"[{facts['lower_bound']:.3g}, 0].")
    return "\n".join(lines) + "\n\n" + tail


def staircase_table() -> str:
    """The two-cluster merge's plateau lifetimes against the theory's rate (docs/analysis.md),
    from figures/two-cluster-merge.json."""
    facts = load("two-cluster-merge.json")
    lines = ["| seed | initial gap g (theory's slope) | betas that merged | saddle time T | "
             "slope of ln(beta T), T the saddle time | betas with plateau >= "
             f"{facts['long']:g} | slope, T the plateau's duration |",
             "|---|---|---|---|---|---|---|"]
    for r in facts["seeds"]:
        betas = f"{r['merged_betas'][0]:g}-{r['merged_betas'][-1]:g}"
        times = f"{r['saddle_time'][0]:g} to {r['saddle_time'][-1]:g}"
        long = f"{r['long_betas'][0]:g}-{r['long_betas'][-1]:g}"
        lines.append(f"| {r['seed']} | {r['gap']:g} | {betas} | {times} | "
                     f"{r['slope_saddle']:g} | {long} | {r['slope_duration']:g} |")
    return "\n".join(lines) + "\n"


def _peak(values: list) -> tuple[int, float]:
    """(the layer where values peak, their fall from there to the output)."""
    top = max(range(len(values)), key=lambda k: values[k])
    return top, values[top] - values[-1]


def training_table() -> str:
    """docs/training.md: mean cosine per layer after training (before once per D: untrained,
    both tasks and every lambda share the model), where it peaks and its fall to the
    output, groups at the output and the task loss; from figures/training.json."""
    runs = load("training.json")["runs"]
    last = len(runs[0]["mean_cosine"]["before"]) - 1
    head = ["task", "lambda", "D"] + [f"L{k}" for k in range(last + 1)] + \
        ["peak layer", "fall to output", f"n_groups L{last}", "task loss"]
    rows = [head, ["---"] * len(head)]

    def row(task, lam, run, when):
        top, fall = _peak(run["mean_cosine"][when])
        return [task, lam, f"{run['noise']:g}"] + \
            [f"{x:.2f}" for x in run["mean_cosine"][when]] + \
            [str(top), f"{fall:.2f}", f"{run['n_groups'][when][-1]:.1f}",
             f"{run['eval_loss'][0 if when == 'before' else 1]:.3f}"]

    for noise in sorted({r["noise"] for r in runs}):
        rows.append(row("untrained", "-", next(r for r in runs if r["noise"] == noise),
                        "before"))
    rows += [row(r["task"], f"{r['lambda']:g}", r, "after") for r in runs]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"


def training_prose() -> str:
    """docs/training.md: what the runs show, against the abstract's signature (clustering
    rising with depth, then falling near the output after training, for the labels task)."""
    runs = load("training.json")["runs"]
    falls = {t: [_peak(r["mean_cosine"]["after"])[1] for r in runs if r["task"] == t]
             for t in ("labels", "mean")}
    labels = [r for r in runs if r["task"] == "labels"]
    apart = [r["mean_cosine"]["after"][-1] for r in labels]
    before = [r["mean_cosine"]["before"][-1] for r in labels]
    free = next(r["mean_cosine"]["after"] for r in labels if r["lambda"] == r["noise"] == 0)
    low = min(range(len(free)), key=lambda k: free[k])
    return wrap(
        f"Untrained, the output's mean cosine is {min(before):.2f} to {max(before):.2f}. "
        f"Trained on labels it is {min(apart):.2f} to {max(apart):.2f}; at lambda = 0 and "
        f"D = 0 the mean cosine falls from {free[0]:.2f} at the input to {free[low]:.2f} at "
        f"layer {low} and rises to {free[-1]:.2f} at the output. The largest fall of the mean "
        f"cosine from its peak to the output is {max(falls['labels']):.2f} for labels and "
        f"{max(falls['mean']):.2f} for mean.")


SIGNATURE_FALL = 0.3  # the acceptance's fall from the peak, in mean cosine


def _signature(run: dict) -> list[bool]:
    """Per seed: the mean cosine rose to its peak at a layer >= 1 and fell from it by at
    least SIGNATURE_FALL (the escape after clustering)."""
    return [d is not None and d >= 1 and f >= SIGNATURE_FALL
            for d, f in zip(run["escape_depth"], run["peak_fall"])]


def train_phase_table() -> str:
    """docs/training.md: per (lambda, D) of figures/train-phase.json, the escape depth and
    fall from the peak of each seed, the seeds with the signature, the seed-mean peak and
    output mean cosine, and the last block's share of the FFN norm."""
    side = load("train-phase.json")
    head = ["lambda", "D", "escape depth (per seed)", "fall from peak (per seed)",
            "signature", "peak mean cosine (layer)", "output mean cosine untrained",
            "trained", "last block's share of FFN norm"]
    rows = [head, ["---"] * len(head)]
    for r in side["runs"]:
        after = r["mean_cosine"]["after"]
        top = max(range(len(after)), key=lambda k: after[k])
        rows.append([f"{r['lambda']:g}", f"{r['noise']:g}",
                     ", ".join("none" if d is None else f"{d:g}" for d in r["escape_depth"]),
                     ", ".join(f"{f:.2f}" for f in r["peak_fall"]),
                     f"{sum(_signature(r))} of {len(r['peak_fall'])}",
                     f"{after[top]:.2f} ({top})", f"{r['mean_cosine']['before'][-1]:.2f}",
                     f"{after[-1]:.2f}", f"{r['last_share']:.2f}"])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"


def train_phase_prose() -> str:
    """docs/training.md: where the signature appears over (lambda, D) and where it does not."""
    runs = load("train-phase.json")["runs"]
    every = [r for r in runs if all(_signature(r))]
    some = [r for r in runs if any(_signature(r)) and not all(_signature(r))]
    calm = [r for r in runs if r["noise"] == 0]
    stiff = [r for r in runs if r["lambda"] >= 0.1]

    def cells(rs):
        return ", ".join(f"({r['lambda']:g}, {r['noise']:g})" for r in rs) or "none"

    def worst(rs):
        return max(max(r["peak_fall"]) for r in rs)

    def count(rs):
        seeds = sum(len(r["peak_fall"]) for r in rs)
        return f"{sum(sum(_signature(r)) for r in rs)} of {seeds} runs"

    def ends(rs):
        out = [r["mean_cosine"]["after"][-1] for r in rs]
        return f"{min(out):.2f} to {max(out):.2f}"

    shares = [r["last_share"] for r in every]
    return wrap(
        f"The signature (mean cosine rising to a peak at layer >= 1, then falling from it by "
        f">= {SIGNATURE_FALL:g}) appears in every seed at (lambda, D) = {cells(every)}; in some "
        f"seeds at {cells(some)}. At D = 0 it shows in {count(calm)} (largest fall from the "
        f"peak {worst(calm):.2f}, output mean cosine {ends(calm)}); at lambda >= 0.1 in "
        f"{count(stiff)} (largest fall {worst(stiff):.2f}). Where it appears in every seed, "
        f"the last block holds "
        f"{min(shares):.2f} to {max(shares):.2f} of the summed FFN norm (uniform: "
        f"{1 / (len(runs[0]['mean_cosine']['after']) - 1):.2f}).")


T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306,
        10: 2.262}  # Student t quantile 0.975 by number of seeds (degrees of freedom - 1)


def _interval(values: list) -> str:
    """'mean [low, high]': the seed mean and its 95% t interval."""
    import statistics

    mean = statistics.fmean(values)
    half = T975[len(values)] * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]"


def train_regularizer_table() -> str:
    """docs/training.md: per regulariser and mu (mu = 0: L2 alone), the task loss, the mean
    cosine over the intermediate layers and at the output, seed means with 95% t intervals;
    from figures/train-regularizer.json."""
    side = load("train-regularizer.json")
    head = ["regularizer", "mu", "task loss", "mean cosine, layers 1..L-1", "output"]
    rows = [head, ["---"] * len(head)]
    for r in side["runs"]:
        name = "none (L2 alone)" if r["mu"] == 0 else r["regularizer"]
        rows.append([name, f"{r['mu']:g}", _interval(r["task_loss"]),
                     _interval(r["intermediate_cosine"]), _interval(r["output_cosine"])])
    seen, out = set(), []
    for row in rows:  # mu = 0 is the same run under either regulariser: once
        if tuple(row[1:]) not in seen:
            seen.add(tuple(row[1:]))
            out.append(row)
    return "\n".join("| " + " | ".join(r) + " |" for r in out) + "\n"


def train_init_table() -> str:
    """docs/training.md: per init, the steps until the batch objective first reaches the
    stated loss, the objective at step 0 and the final task loss (seed means, 95% t
    intervals); from figures/train-init.json."""
    side = load("train-init.json")
    head = ["init", f"steps to objective <= {side['target']:g}", "objective at step 0",
            "task loss after training", "per seed: steps"]
    rows = [head, ["---"] * len(head)]
    for r in side["runs"]:
        steps = r["steps_to_target"]
        reached = [x for x in steps if x is not None]
        rows.append([r["init"], _interval(reached) + (
            f" ({len(steps) - len(reached)} never)" if len(reached) < len(steps) else ""),
            _interval(r["first_loss"]), _interval(r["final_task_loss"]),
            ", ".join("never" if x is None else str(x) for x in steps)])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"


def train_minilm_table() -> str:
    """docs/training.md: MiniLM's tokens of two sentences, per (lambda, D) untrained and
    trained, the cosines between and within the sentences, the clusters and the mean cosine
    at the output, and the task loss; from figures/train-minilm.json."""
    side = load("train-minilm.json")
    out = side["layers"]
    mid = out // 2
    head = ["model", "lambda", "D", "between L0", f"between L{mid}", f"between L{out}",
            f"within L{out}", f"mean cosine L{out}", f"clusters L{out}", "task loss"]
    rows = [head, ["---"] * len(head)]
    for noise in sorted({r["noise"] for r in side["runs"]}):
        runs = [r for r in side["runs"] if r["noise"] == noise]
        for name, r, k in [("untrained", runs[0], 0)] + [("trained", r, 1) for r in runs]:
            v = r["after" if k else "before"]
            rows.append([name, f"{r['lambda']:g}" if k else "-", f"{noise:g}",
                         *(f"{v['between_cosine'][i]:.2f}" for i in (0, mid, -1)),
                         f"{v['within_cosine'][-1]:.2f}", f"{v['mean_cosine'][-1]:.2f}",
                         f"{v['n_clusters'][-1]:.0f}", f"{r['eval_loss'][k]:.3f}"])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows) + "\n"


def cosine_histogram_table() -> str:
    """docs/trained.md: per layer, the mean and median pairwise cosine and the share of
    pairs above 0.5, read off the histograms of figures/cosine-histograms.json."""
    layers = load("cosine-histograms.json")["layers"]
    lines = ["| layer | " + " | ".join(str(x["layer"]) for x in layers) + " |",
             "|---" * (len(layers) + 1) + "|"]
    for key, name in (("mean", "mean cosine (binned)"), ("median_bin", "median bin"),
                      ("share_above_0.5", "share of pairs > 0.5")):
        lines.append(f"| {name} | " + " | ".join(f"{x[key]:.3f}" for x in layers) + " |")
    return "\n".join(lines) + "\n"


def _mean_range(x: dict) -> str:
    return f"{x['mean']:.3g} ({x['min']:g}-{x['max']:g})" if x["min"] < x["max"] \
        else f"{x['mean']:g}"


def _clustering(r: dict) -> str:
    tc = "-" if r["t_cluster"] is None else f"{r['t_cluster']:.3g}"
    return (f"{r['clustered']} of {r['runs']} | {tc} | {_mean_range(r['n_clusters'])} | "
            f"{_mean_range(r['span_dimension'])} | {r['span_below_clusters']}")


CLUSTERING = ("clustered by t_max | mean t_cluster | n_clusters at t_max | span_dimension at "
              "t_max | runs with span < clusters |")


def random_matrices_table() -> str:
    """docs/models.md: random matrices drawn once, per (Q^T K, V, beta), from figures/
    random-matrices.json: runs whose energy ever fell, clustering and span at t_max."""
    facts = load("random-matrices.json")
    lines = ["| Q^T K | V | beta | runs whose energy fell | worst relative fall | " + CLUSTERING,
             "|---" * 10 + "|"]
    for r in facts["once"]:
        lines.append(f"| {r['qk']} | {r['v']} | {r['beta']:g} | {r['fell']} of {r['runs']} | "
                     f"{r['worst_fall']:.2g} | {_clustering(r)} |")
    return "\n".join(lines) + "\n"


def redrawn_matrices_table() -> str:
    """docs/models.md: a GOE Q^T K redrawn every tau, per (V, tau, beta), from figures/
    random-matrices.json: energy falls over every interval and within segments only."""
    facts = load("random-matrices.json")
    lines = ["| V | tau | beta | energy fell: runs | within segments: runs | " + CLUSTERING,
             "|---" * 10 + "|"]
    for r in facts["redrawn"]:
        tau = f"{r['redraw_every']:g}" + (" (once)" if r["redraw_every"] >= facts["t_max"]
                                          else "")
        lines.append(f"| {r['v']} | {tau} | {r['beta']:g} | {r['fell']} of {r['runs']} | "
                     f"{r['fell_within']} of {r['runs']} | {_clustering(r)} |")
    return "\n".join(lines) + "\n"


def _between(spreads: list) -> str:
    """'a to b' over spreads' ranges, or 'a' where they are one value."""
    low, high = min(x["min"] for x in spreads), max(x["max"] for x in spreads)
    return f"{low:g}" if low == high else f"{low:g} to {high:g}"


def _runs(rows: list, key: str = "fell") -> str:
    return f"{sum(r[key] for r in rows)} of {sum(r['runs'] for r in rows)} runs"


def random_matrices_prose() -> str:
    """docs/models.md: what the two tables say, counted from the sidecar."""
    facts = load("random-matrices.json")
    once, t_max = facts["once"], facts["t_max"]
    sym = [r for r in once if (r["qk"], r["v"]) == ("goe", "qk")]
    other = [r for r in once if r["qk"] != "identity" and r not in sym]
    redrawn = [r for r in facts["redrawn"] if r["redraw_every"] < t_max]
    sym_re = [r for r in redrawn if r["v"] == "qk"]
    fast = min(sym_re, key=lambda r: (r["redraw_every"], r["beta"]))
    free = [r for r in redrawn if r["v"] == "identity"]
    top = max(r["beta"] for r in once)
    free_top = [r for r in free if r["beta"] == top]
    ends = {(r["qk"], r["v"]): r for r in once if r["beta"] == top}
    below = {v: sum(r["span_below_clusters"] for r in once if r["v"] == v)
             for v in ("identity", "qk")}
    return wrap(
        f"Drawn once, the saved energy fell in {_runs([r for r in once if r['qk'] == 'identity'])}"
        f" with the identity, in {_runs(sym)} with the symmetric GOE Q^T K = V, and in "
        f"{_runs(other)} of the other random variants (worst relative fall "
        f"{max(r['worst_fall'] for r in other):.2g}). Redrawn, the symmetric model's saved "
        f"energy fell in {_runs(sym_re)}, within a segment in {_runs(sym_re, 'fell_within')}. "
        f"At t = {t_max:g}, span_dimension is below n_clusters in {below['identity']} runs "
        f"with V = I and in {below['qk']} with V = Q^T K (span 1 with two clusters: an "
        f"antipodal pair). Redrawn every {fast['redraw_every']:g} with V = Q^T K at beta = "
        f"{fast['beta']:g}, {fast['clustered']} of {fast['runs']} runs cluster, at a mean "
        f"t_cluster of {fast['t_cluster']:.3g}, against {sym[0]['t_cluster']:.3g} drawn once. "
        f"With V = I at beta = {top:g}, redrawn every tau < {t_max:g} the runs end in "
        f"{_between([r['n_clusters'] for r in free_top])} cluster(s), against a mean of "
        f"{ends[('goe', 'identity')]['n_clusters']['mean']:.3g} drawn once and "
        f"{ends[('identity', 'identity')]['n_clusters']['mean']:.3g} with the identity.")


def cosine_histograms_flow_table() -> str:
    """docs/results.md: per beta of configs/cosine-histograms-flow.yaml, the share of pairs in
    the last cosine bin and gram_rank at the first and last save (figures/
    cosine-histograms-flow.json)."""
    side = load("cosine-histograms-flow.json")
    lines = [f"| beta | share in the last bin, t = 0 | t = {side['t_max']:g} | mean over "
             f"{side['seeds']} seeds | gram_rank, t = 0 | t = {side['t_max']:g} | mean over "
             f"seeds | n_clusters, t = {side['t_max']:g} |", "|---" * 8 + "|"]
    for b in side["betas"]:
        lines.append(f"| {b['beta']:g} | {b['first']['share_last_bin']:.3f} | "
                     f"{b['last']['share_last_bin']:.3f} | "
                     f"{b['last_seed_mean']['share_last_bin']:.3f} | "
                     f"{b['first']['gram_rank']:g} | {b['last']['gram_rank']:g} | "
                     f"{b['last_seed_mean']['gram_rank']:g} | {b['last']['n_clusters']:g} |")
    return "\n".join(lines) + "\n"


def _cell(c: dict) -> str:
    return ", ".join(f"{k} = {v:g}" for k, v in c.items())


RENDERERS = {"demo-console": demo_console, "demo-prose": demo_prose,
             "phase-glpr-prose": phase_glpr_prose, "condensation-prose": condensation_prose,
             "trained-probe-table": trained_probe_table,
             "trained-mean-cosine-table": trained_mean_cosine_table,
             "beta-scale-table": beta_scale_table,
             "euclidean-polytope-table": euclidean_polytope_table,
             "euclidean-hyperplanes-table": euclidean_hyperplanes_table,
             "overlap-gap-table": overlap_gap_table, "overlap-gap-fit": overlap_gap_fit,
             "staircase-table": staircase_table,
             "training-table": training_table, "training-prose": training_prose,
             "train-phase-table": train_phase_table, "train-phase-prose": train_phase_prose,
             "train-regularizer-table": train_regularizer_table,
             "train-init-table": train_init_table, "refine-table": refine_table,
             "d-question-table": d_question_table, "train-minilm-table": train_minilm_table,
             "cosine-histogram-table": cosine_histogram_table,
             "random-matrices-table": random_matrices_table,
             "redrawn-matrices-table": redrawn_matrices_table,
             "random-matrices-prose": random_matrices_prose,
             "cosine-histograms-flow-table": cosine_histograms_flow_table}


def render(text: str) -> str:
    def block(m: re.Match) -> str:
        if m.group(2) not in RENDERERS:
            raise SystemExit(f"unknown sidecar block {m.group(2)!r}")
        return m.group(1) + RENDERERS[m.group(2)]() + m.group(4)
    return BLOCK.sub(block, text)


def prose(files: list[str], check: bool) -> list[str]:
    stale = []
    for name in files:
        path = Path(name)
        text = path.read_text()
        new = render(text)
        if new != text:
            stale.append(f"{path}: generated numbers are stale (make figures rewrites them)")
            if not check:
                path.write_text(new)
    return stale if check else []


def main(argv: list[str]) -> int:
    if argv[:1] == ["compare"] and len(argv) == 3:
        problems = compare(Path(argv[1]), Path(argv[2]))
    elif argv[:1] == ["prose"]:
        check = "--check" in argv
        problems = prose([a for a in argv[1:] if a != "--check"], check)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
