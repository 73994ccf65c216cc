// The run page: the summary, then per GPU (and setup) one chart per model of the compile-vs-eager
// speed-ups with their 95% CIs, every build and compile mode side by side, the guide's figure beside
// ours; the builds and the modes compared; what compiling costs; failures and suspect cells; the
// tables. Data: suite/report/pages/run_data.py.
(() => {
  const D = PG.data();
  const { el } = PG;
  const BUILD_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const MODE_SYMBOLS = { default: "circle", "reduce-overhead": "diamond", "max-autotune": "square" };
  const SUSPECT = "#d62728";
  const FAILED = "#b00020";
  const buildColor = (b) => BUILD_COLORS[D.meta.builds.findIndex((x) => x.name === b) % BUILD_COLORS.length];
  const modeSymbol = (m) => MODE_SYMBOLS[m] || "triangle-up";

  // --- filters -----------------------------------------------------------------------------------
  const onFilter = () => { applyVisibility(); PG.redraw(); };
  const tasks = PG.checkboxes("task", D.filters.tasks, "Task", onFilter);
  const sizes = PG.checkboxes("batch-size", D.filters.batch_sizes, "Batch size", onFilter);
  const modes = PG.checkboxes("mode", D.filters.modes, "Compile mode", onFilter);
  const shown = (task, bs) => tasks.state.has(task) && sizes.state.has(bs);

  function applyVisibility() {
    for (const card of document.querySelectorAll("[data-task]")) {
      card.hidden = !tasks.state.has(card.dataset.task);
    }
  }

  // --- hover text of one compile-vs-eager cell ------------------------------------------------------
  function cellHover(c) {
    const lines = [`<b>${PG.esc(c.label)}</b>`, `${PG.esc(c.build)} (${c.kind}) · batch ${c.bs} · ${PG.esc(c.mode)}`];
    if (c.status !== "ok") {
      lines.push(`<b>compiled cell: ${c.status === "missing" ? "no row" : PG.esc(c.status)}</b>`);
      if (c.error) lines.push(PG.esc(c.error.slice(0, 160)));
    } else {
      lines.push(`speed-up: ${PG.esc(PG.gainText(c.speedup))}`);
    }
    const e = c.eager, k = c.compiled;
    lines.push(`no compile: ${e.ms === null ? (e.word || "—") : PG.ms(e.ms) + " ms" + PG.interval(e.lo, e.hi, 3)}${c.paired ? "" : " ‡ (eager cell's own median)"}`);
    lines.push(`compile: ${k.ms === null ? (k.word || "—") : PG.ms(k.ms) + " ms" + PG.interval(k.lo, k.hi, 3)}`);
    if (c.compile_s) lines.push(`compile time: ${PG.qtyText(c.compile_s, 1, " s")} · break-even: ${PG.qtyText(c.breakeven, 0, " calls")}`);
    lines.push(`health: ${c.health.length ? "§ " + c.health.join(", ") + " (suspect)" : "ok"}`);
    if (c.accuracy) lines.push(`accuracy: ${c.accuracy === "fail" ? "† fail" : c.accuracy}`);
    if (c.guide) {
      const g = c.guide;
      const fig = g.erratum ? "erratum" : g.oom ? "OOM" : `${g.pct.toFixed(1)}% · ${PG.factor(g.x)}`;
      lines.push(`guide (${PG.esc(c.guide_table)}): ${fig}`);
    }
    return lines.join("<br>");
  }

  // --- compile vs eager: one chart per model --------------------------------------------------------
  function modelFigure(cells, gpuBuilds) {
    const xs = D.filters.batch_sizes.filter((bs) => sizes.state.has(bs));
    const data = [];
    const failed = { x: [], y: [], text: [], hovertext: [], type: "scatter", mode: "markers+text",
      name: "failed", showlegend: false, textposition: "top center", textfont: { color: FAILED, size: 10 },
      marker: { symbol: "x-thin-open", size: 12, color: FAILED, line: { width: 2, color: FAILED } },
      hoverinfo: "text", hoverlabel: { align: "left" } };
    for (const build of gpuBuilds) {
      for (const mode of D.filters.modes.filter((m) => modes.state.has(m))) {
        const own = cells.filter((c) => c.build === build && c.mode === mode && xs.includes(c.bs));
        if (!own.length) continue;
        const ok = own.filter((c) => c.speedup && !c.speedup.word && PG.num(c.speedup.x));
        const group = `${build}·${mode}`;
        data.push({
          type: "scatter", mode: "markers", name: `${build} · ${mode}`, legendgroup: group, offsetgroup: group,
          x: ok.map((c) => `bs ${c.bs}`), y: ok.map((c) => c.speedup.x),
          error_y: { type: "data", symmetric: false, thickness: 1.5, width: 4,
            array: ok.map((c) => (PG.num(c.speedup.hi) ? c.speedup.hi - c.speedup.x : 0)),
            arrayminus: ok.map((c) => (PG.num(c.speedup.lo) ? c.speedup.x - c.speedup.lo : 0)) },
          marker: { color: buildColor(build), symbol: modeSymbol(mode), size: 9,
            line: { color: ok.map((c) => (c.health.length || c.accuracy === "fail" ? SUSPECT : "white")),
              width: ok.map((c) => (c.health.length || c.accuracy === "fail" ? 2.5 : 1)) } },
          hovertext: ok.map(cellHover), hoverinfo: "text", hoverlabel: { align: "left" },
          customdata: ok.map((c) => `${c.build}|${c.mode}|${c.bs}`),
        });
        const guide = own.filter((c) => c.guide && PG.num(c.guide.x));
        if (guide.length) {
          data.push({
            type: "scatter", mode: "markers", name: `guide: ${guide[0].guide_table}`, legendgroup: "guide" + mode,
            offsetgroup: group, x: guide.map((c) => `bs ${c.bs}`), y: guide.map((c) => c.guide.x),
            marker: { symbol: "star-open", size: 11, color: "#444", line: { width: 1.5 } },
            hovertext: guide.map((c) => `<b>the guide</b> (${PG.esc(c.guide_table)}, torch ${PG.esc(c.guide.build)})<br>` +
              `${PG.esc(c.label)} · batch ${c.bs} · ${PG.esc(mode)}<br>` +
              `${c.guide.pct.toFixed(1)}% · ${PG.factor(c.guide.x)} (means: ${PG.ms(c.guide.eager_ms)} → ${PG.ms(c.guide.compiled_ms)} ms; no CI published)`),
            hoverinfo: "text", hoverlabel: { align: "left" },
          });
        }
        for (const c of own.filter((x) => !ok.includes(x))) {
          failed.x.push(`bs ${c.bs}`);
          failed.y.push(1);
          failed.text.push(c.status === "missing" ? "no row" : (c.speedup && c.speedup.word) || c.compiled.word || c.status);
          failed.hovertext.push(cellHover(c));
        }
      }
    }
    if (failed.x.length) data.push(failed);
    if (!data.length) return null;
    return {
      data,
      layout: {
        height: 250, margin: { l: 50, r: 10, t: 10, b: 30 }, scattermode: "group", scattergap: 0.3,
        xaxis: { type: "category", categoryorder: "array", categoryarray: xs.map((bs) => `bs ${bs}`) },
        yaxis: { type: "log", title: { text: "speed-up (x)", font: { size: 11 } }, zeroline: false },
        shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { dash: "dot", color: "#888", width: 1 } }],
        showlegend: false, hovermode: "closest", font: { size: 11 },
      },
    };
  }

  const GLYPHS = { circle: "●", diamond: "◆", square: "■", "triangle-up": "▲" };
  function legend(builds) {
    // one legend for the section's charts: a colour per build, a shape per compile mode
    const swatch = (color, glyph, label) => el("span", { class: "key" }, el("span", { style: `color: ${color}`, text: glyph }), " " + label);
    return el("p", { class: "legend" },
      builds.map((b) => swatch(buildColor(b), "●", b)),
      D.filters.modes.map((m) => swatch("#444", GLYPHS[modeSymbol(m)], m)),
      swatch("#444", "☆", "the guide's figure"), swatch(FAILED, "✕", "failed (its word beside it)"),
      swatch(SUSPECT, "◯", "suspect: § unhealthy machine, † accuracy failed"));
  }

  function gpuSection(gpu, setup, index) {
    const cells = D.cells.filter((c) => c.gpu === gpu && c.setup === setup);
    const builds = D.meta.builds.map((b) => b.name).filter((b) => cells.some((c) => c.build === b));
    const section = el("section", { id: `compile-vs-eager-${index}`, class: "gpu" },
      el("h2", { text: `Compile vs eager · ${gpu}` }),
      el("p", { class: "sub", text: `Setup: ${setup}. Builds: ${builds.join(", ") || "none"}. Each point: the compiled cell's paired speed-up (eager median / compiled median) with its 95% CI, per batch size; the guide's published figure where it measured this GPU class. Hover a point for its figures: durations, CI, compile time, health.` }));
    const missing = D.problems.missing_builds.filter((m) => m.gpu === gpu);
    for (const m of missing) {
      section.append(el("p", { class: "warn missing-build", text: `Build ${m.build} (${m.kind}) has no row on this GPU (${m.others.join(", ") || "no other build"} ran here): its job failed or did not run; no comparison with it here.` }));
    }
    section.append(legend(builds));
    const grid = el("div", { class: "grid" });
    for (const model of D.models) {
      const own = cells.filter((c) => c.task === model.task && c.model === model.model);
      const div = el("div", { class: "chart", "data-model": model.label, style: "min-height: 250px" });
      const card = el("div", { class: "card", "data-task": model.task, "data-model": model.label },
        el("h3", { text: model.label }), div);
      if (!own.length) {
        div.append(el("p", { class: "empty-note", text: "no compiled cell of this model on this GPU and setup" }));
      } else {
        PG.chart(div, () => modelFigure(own, builds));
      }
      grid.append(card);
    }
    section.append(grid);
    return section;
  }

  // --- builds and modes compared ----------------------------------------------------------------------
  function rowsShown(rows) {
    return rows.filter((r) => shown(r.task, r.bs));
  }

  function horizontal(rows, traces, title, xTitle) {
    if (!rows.length) return null;
    const labels = rows.map((r) => `${r.label} · bs ${r.bs}`);
    const data = traces.map((t) => {
      const pts = rows.map((r) => t.get(r)).map((g, i) => ({ g, y: labels[i] }))
        .filter((p) => p.g && !p.g.word && PG.num(p.g.x));
      return {
        type: "scatter", mode: "markers", name: t.name, offsetgroup: t.name, orientation: "h",
        y: pts.map((p) => p.y), x: pts.map((p) => p.g.x),
        error_x: { type: "data", symmetric: false, thickness: 1.5, width: 3,
          array: pts.map((p) => (PG.num(p.g.hi) ? p.g.hi - p.g.x : 0)),
          arrayminus: pts.map((p) => (PG.num(p.g.lo) ? p.g.x - p.g.lo : 0)) },
        marker: { color: t.color, symbol: t.symbol || "circle", size: 8,
          line: { color: pts.map((p) => (p.g.unhealthy || p.g.accuracy_failed ? SUSPECT : "white")), width: 1.5 } },
        hovertext: pts.map((p) => `<b>${PG.esc(p.y)}</b><br>${PG.esc(t.name)}: ${PG.esc(PG.gainText(p.g))}` +
          (p.g.unhealthy ? "<br>§ timed on an unhealthy machine" : "") + (p.g.accuracy_failed ? "<br>† accuracy failed" : "")),
        hoverinfo: "text", hoverlabel: { align: "left" },
      };
    });
    const words = [];
    traces.forEach((t) => rows.forEach((r, i) => {
      const g = t.get(r);
      if (g && g.word) words.push(`${labels[i]}: ${t.name} ${g.word}`);
    }));
    return {
      words,
      figure: {
        data,
        layout: {
          height: Math.max(220, 26 * rows.length + 110), margin: { l: 230, r: 10, t: 30, b: 60 },
          title: { text: title, font: { size: 12 } }, scattermode: "group",
          yaxis: { type: "category", autorange: "reversed", categoryorder: "array", categoryarray: labels, automargin: true },
          xaxis: { type: "log", title: { text: xTitle, font: { size: 11 } } },
          shapes: [{ type: "line", yref: "paper", y0: 0, y1: 1, x0: 1, x1: 1, line: { dash: "dot", color: "#888", width: 1 } }],
          legend: { orientation: "h", y: -0.12, font: { size: 10 } }, hovermode: "closest", font: { size: 11 },
        },
      },
    };
  }

  function comparisonChart(container, make) {
    const div = el("div", { class: "chart wide", style: "min-height: 300px" });
    const words = el("p", { class: "warn words" });
    container.append(div, words);
    PG.chart(div, () => {
      const made = make();
      words.textContent = made && made.words.length ? "Failed, so not drawn: " + made.words.join("; ") : "";
      return made ? made.figure : null;
    });
  }

  function comparisonsSection() {
    const section = el("section", { id: "comparisons" }, el("h2", { text: "Builds and compile modes side by side" }));
    const cols = el("div", { class: "columns" });
    const left = el("div", { class: "col" }, el("h3", { text: "Each build against the stable one" }));
    const right = el("div", { class: "col" }, el("h3", { text: "Compile modes (default vs reduce-overhead, ...)" }));
    if (!D.builds_vs.length) left.append(el("p", { class: "empty-note", text: "Needs a stable build and another build with the same GPU, setup and compile mode." }));
    if (!D.modes_vs.length) right.append(el("p", { class: "empty-note", text: "Needs two or more compile modes of one build on one GPU." }));
    for (const t of D.builds_vs) {
      const paired = t.rows.filter((r) => (r.rule || "").startsWith("paired"));
      const how = paired.length
        ? `timed side by side in ${paired.length} of ${t.rows.length} row(s) (a pair: per round base / new, the median over rounds with its bootstrap 95% CI; slower when the interval lies below 0.95x)`
        : "from separate processes, with the widest interval the two medians' CIs allow";
      left.append(el("p", { class: "sub", "data-mode": t.mode, text: `${t.title}. ${t.other} vs ${t.base}: ${t.base}'s duration / ${t.other}'s (> 1x: ${t.other} is faster), ${how}.` }));
      const slower = paired.filter((r) => r.rule !== "paired: unchanged" && r.rule !== "paired: faster");
      if (slower.length) left.append(el("p", { class: "warn", text: `The pair's rule says: ${slower.map((r) => `${r.label} bs ${r.bs} ${r.rule.replace("paired: ", "")}`).join("; ")}.` }));
      comparisonChart(left, () => (modes.state.has(t.mode) ? horizontal(rowsShown(t.rows), [
        { name: `no compile: ${t.other} vs ${t.base}`, color: "#7f7f7f", get: (r) => r.eager_ratio },
        { name: `compile: ${t.other} vs ${t.base}`, color: buildColor(t.other), get: (r) => r.compiled_ratio },
        { name: `${t.base} speed-up`, color: buildColor(t.base), symbol: "diamond-open", get: (r) => r.base_speedup },
        { name: `${t.other} speed-up`, color: buildColor(t.other), symbol: "diamond", get: (r) => r.other_speedup },
      ], `${t.gpu} · mode ${t.mode}`, "ratio (x)") : null));
    }
    for (const t of D.modes_vs) {
      right.append(el("p", { class: "sub", text: `${t.title}. Each mode's paired speed-up with its 95% CI.` }));
      comparisonChart(right, () => horizontal(rowsShown(t.rows),
        t.modes.filter((m) => modes.state.has(m)).map((m, i) => ({
          name: `${m} speed-up`, color: BUILD_COLORS[(i + 2) % BUILD_COLORS.length], symbol: modeSymbol(m),
          get: (r) => r.speedups[m] })), `${t.gpu} · ${t.build}`, "speed-up (x)"));
    }
    cols.append(left, right);
    section.append(cols);
    return section;
  }

  // --- what compiling costs ------------------------------------------------------------------------
  function costFigure(t) {
    const rows = rowsShown(t.rows);
    if (!rows.length || !modes.state.has(t.mode)) return null;
    const labels = rows.map((r) => `${r.label} · bs ${r.bs}`);
    const series = [["cold", "cold compile", "#1f77b4"], ["warm", "warm compile", "#2ca02c"], ["megacache", "mega-cache", "#9467bd"]];
    const data = series.map(([key, name, color]) => {
      const pts = rows.map((r, i) => ({ q: r[key], y: labels[i], r })).filter((p) => p.q && PG.num(p.q.v));
      return { type: "bar", orientation: "h", name: `${name} (s)`, y: pts.map((p) => p.y), x: pts.map((p) => p.q.v),
        marker: { color }, xaxis: "x", yaxis: "y", hoverinfo: "text", hoverlabel: { align: "left" },
        hovertext: pts.map((p) => `<b>${PG.esc(p.y)}</b><br>${name}: ${PG.qtyText(p.q, 1, " s")}<br>first result: eager ${PG.qtyText(p.r.first_eager, 1, " s")}, compiled ${PG.qtyText(p.r.first_compiled, 1, " s")}`) };
    });
    for (const [key, name, color] of [["breakeven", "break-even, cold", "#1f77b4"], ["breakeven_warm", "break-even, warm", "#2ca02c"]]) {
      const pts = rows.map((r, i) => ({ q: r[key], y: labels[i] })).filter((p) => p.q && PG.num(p.q.v));
      data.push({ type: "scatter", mode: "markers", name: `${name} (calls)`, y: pts.map((p) => p.y), x: pts.map((p) => p.q.v),
        xaxis: "x2", yaxis: "y", marker: { color, symbol: key === "breakeven" ? "circle" : "circle-open", size: 9 },
        hoverinfo: "text", hovertext: pts.map((p) => `<b>${PG.esc(p.y)}</b><br>${name}: ${PG.qtyText(p.q, 0, " calls")}`) });
    }
    const never = rows.filter((r) => r.breakeven && !PG.num(r.breakeven.v) && (r.breakeven.text || r.breakeven.word));
    const annotations = never.map((r) => ({ xref: "x2 domain", x: 0.98, y: `${r.label} · bs ${r.bs}`, yref: "y",
      text: r.breakeven.word || r.breakeven.text, showarrow: false, xanchor: "right", font: { color: FAILED, size: 10 } }));
    return {
      data,
      layout: {
        height: Math.max(240, 24 * rows.length + 120), margin: { l: 230, r: 10, t: 30, b: 60 }, barmode: "group",
        grid: { rows: 1, columns: 2 }, annotations,
        xaxis: { type: "log", domain: [0, 0.48], title: { text: "compile (s, log)", font: { size: 11 } } },
        xaxis2: { type: "log", domain: [0.52, 1], title: { text: "calls until compiling pays off (log)", font: { size: 11 } } },
        yaxis: { type: "category", autorange: "reversed", categoryorder: "array", categoryarray: labels, automargin: true },
        legend: { orientation: "h", y: -0.14, font: { size: 10 } }, hovermode: "closest", font: { size: 11 },
      },
    };
  }

  function costSection() {
    const section = el("section", { id: "compile-cost" }, el("h2", { text: "What compiling costs, and when it pays off" }),
      el("p", { class: "sub", text: "Left: compile seconds (cold: fresh caches; warm: a second process on the first one's caches; mega-cache: loaded artifacts). Right: the calls after which compiling has paid for itself, compile seconds / (eager - compiled median per call); \u201cnever\u201d where compiling is not faster." }));
    if (!D.cost.length) section.append(el("p", { class: "empty-note", text: "No compiled cell in the inputs." }));
    for (const t of D.cost) {
      const div = el("div", { class: "chart wide", style: "min-height: 300px" });
      section.append(el("h3", { text: t.title }), div);
      PG.chart(div, () => costFigure(t));
      if (t.plots.length) {
        section.append(el("p", { class: "sub" }, "Amortization plots (time of n calls, compile included): ",
          t.plots.map((p, i) => [i ? " · " : "", el("a", { href: p, text: p.split("/").pop() })])));
      }
    }
    return section;
  }

  // --- failures and suspect cells ------------------------------------------------------------------
  function problemsSection() {
    const P = D.problems;
    const section = el("section", { id: "problems" }, el("h2", { text: "Failures, suspect cells and missing builds" }));
    const where = (r) => [r.gpu, r.build, r.label, String(r.bs), r.mode];
    const block = (title, columns, rows, empty) => {
      section.append(el("h3", { text: `${title} (${rows.length})` }));
      section.append(rows.length ? PG.table(columns, rows) : el("p", { class: "empty-note", text: empty }));
    };
    block("Failed cells", ["GPU", "build", "Task/Model", "batch", "mode", "status", "error"],
      P.failed.map((r) => [...where(r), r.status, r.error]), "None: every cell has its measurement.");
    block("Suspect cells", ["GPU", "build", "Task/Model", "batch", "mode", "why"],
      P.suspect.map((r) => [...where(r), r.why]), "None: every ok cell was timed on a healthy machine and passed its accuracy check.");
    block("Builds missing on a GPU", ["GPU", "build", "kind", "builds that ran there"],
      P.missing_builds.map((r) => [r.gpu, r.build, r.kind, r.others.join(", ")]), "None: every build ran on every GPU.");
    block("Cells a build lacks (another build has them on the same GPU)", ["GPU", "build", "Task/Model", "batch", "mode"],
      P.missing_cells.map(where), "None.");
    return section;
  }

  // --- the tables, as tables.md has them -----------------------------------------------------------
  function tablesSection() {
    const section = el("section", { id: "tables" }, el("h2", { text: "The tables" }),
      el("p", { class: "sub" }, "The same tables as ", el("a", { href: "tables.md", text: "tables.md" }),
        " and each table's Markdown and CSV file beside this page."));
    for (const t of D.tables.filter((x) => x.section !== "summary")) {
      const files = el("p", { class: "sub" }, el("a", { href: `${t.name}.md`, text: `${t.name}.md` }), " · ",
        el("a", { href: `${t.name}.csv`, text: `${t.name}.csv` }),
        t.plots.map((p) => [" · ", el("a", { href: p, text: p.split("/").pop() })]));
      section.append(el("details", { "data-section": t.section }, el("summary", { text: `${t.section}: ${t.title}` }),
        el("p", { class: "sub", text: t.subtitle }), PG.table(t.columns, t.rows, t.numeric), files,
        el("ul", { class: "notes" }, t.notes.map((n) => el("li", { text: n })))));
    }
    return section;
  }

  // --- the page ------------------------------------------------------------------------------------
  function header() {
    const M = D.meta;
    const P = D.problems;
    const counts = el("p", { class: P.failed.length || P.suspect.length || P.missing_builds.length ? "warn" : "ok" },
      el("a", { href: "#problems", text: `${P.failed.length} failed cell(s), ${P.suspect.length} suspect, ` +
        `${P.missing_builds.length} build(s) missing on a GPU, ${P.missing_cells.length} cell(s) one build lacks` }));
    const summary = D.tables.find((t) => t.section === "summary");
    return el("header", {},
      el("h1", { text: M.title }),
      el("p", { class: "sub", text: `GPUs: ${M.gpus.join("; ")}. Setups: ${M.setups.join("; ")}. suite ${M.suite_version}.` }),
      PG.table(["build", "kind", "torch"], M.builds.map((b) => [b.name, b.kind, b.torch.join(", ") || "—"])),
      counts,
      el("section", { id: "summary" }, el("h2", { text: "Summary" }), el("p", { class: "sub", text: summary.subtitle }),
        PG.table(summary.columns, summary.rows, summary.numeric),
        el("ul", { class: "notes" }, summary.notes.map((n) => el("li", { text: n })))),
      el("p", { class: "sub", text: M.legend }),
      el("p", { class: "sub", text: M.guide_figures ? `The guide's figures: ${M.guide_figures} from results/reference/, shown where the GPU class, build kind, mode and batch size match.` : "No reference figures found: no guide comparison." }));
  }

  function inputsSection() {
    const M = D.meta;
    return el("section", { id: "inputs" }, el("h2", { text: "Inputs" }),
      el("ul", {}, M.inputs.map((f) => el("li", { text: f }))),
      el("ul", { class: "notes" }, M.read.map((line) => el("li", { text: line }))),
      el("p", { class: "sub", text: `Build kinds: ${M.kinds_note}.` }));
  }

  PG.app.replaceChildren();
  const filters = el("nav", { class: "filters" }, tasks.box, sizes.box, modes.box);
  PG.app.append(header(), filters);
  const pairs = [];
  for (const c of D.cells) {
    if (!pairs.some(([g, s]) => g === c.gpu && s === c.setup)) pairs.push([c.gpu, c.setup]);
  }
  pairs.forEach(([gpu, setup], i) => PG.app.append(gpuSection(gpu, setup, i)));
  if (!pairs.length) PG.app.append(el("p", { class: "empty-note", text: "No compiled cell in the inputs." }));
  PG.app.append(comparisonsSection(), costSection(), problemsSection(), tablesSection(), inputsSection());
  PG.started();
})();
