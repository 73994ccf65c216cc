// The history page: the change points first (what changed, since which night, the commit range),
// then one trend chart per model, three panels over the nights: the paired speed-up, the median
// latency and the compile time, each with its 95% CI as a band; change points marked on their
// panel; a click on a point opens that night's run page. Data: suite/report/pages/history_page.py.
(() => {
  const D = PG.data();
  const { el } = PG;
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"];
  const METRIC_AXIS = { speedup: "y", median_ms: "y2", compile_s: "y3" };
  const METRIC_NAME = { speedup: "speed-up", median_ms: "median latency", compile_s: "compile time" };
  const FAILED = "#b00020";

  // --- filters: one GPU, then build lines, batch sizes, modes --------------------------------------
  const onFilter = () => { renderChanges(); PG.redraw(); };
  let gpu = D.filters.gpus[0];
  const gpuBox = el("fieldset", { class: "filter", "data-filter": "gpu" }, el("legend", { text: "GPU" }),
    el("select", { onchange: (ev) => { gpu = ev.target.value; onFilter(); } },
      D.filters.gpus.map((g) => el("option", { value: g, text: g }))));
  const lines = PG.checkboxes("line", D.filters.lines, "Build line", onFilter);
  const sizes = PG.checkboxes("batch-size", D.filters.batch_sizes, "Batch size", onFilter);
  const modes = PG.checkboxes("mode", D.filters.modes, "Mode", onFilter);
  // a year of every series at once is a crowd (and slow to draw): first the smallest batch size and
  // one compile mode, every build line; the others are a click away
  const firstMode = D.filters.modes.includes("default") ? "default" : D.filters.modes.find((m) => m !== "eager") || D.filters.modes[0];
  const only = (filter, keep) => {
    for (const input of filter.box.querySelectorAll("input")) {
      if (input.value !== String(keep)) { input.checked = false; filter.state.delete(filter.state.has(input.value) ? input.value : Number(input.value)); }
    }
  };
  only(sizes, D.filters.batch_sizes[0]);
  only(modes, firstMode);
  const visible = (s) => s.gpu === gpu && lines.state.has(s.build_line) && sizes.state.has(s.batch_size) && modes.state.has(s.mode);
  const seriesName = (s) => `${s.build_line} · ${s.mode} · bs ${s.batch_size}` + (s.dtype !== "float32" ? ` · ${s.dtype}` : "") +
    (s.scenario !== "inference" ? ` · ${s.scenario}` : "");

  // --- a series as the page carries it (history_page.py: FIGURES) and as the charts read it ---------
  const dateIndex = new Map(D.dates.map((d, i) => [d, i]));
  function full(s) {
    if (s.full) return s.full;
    const night = [];
    s.nights.reduce((at, step) => { night.push(at + step); return at + step; }, 0);
    const n = night.length;
    const nulls = () => new Array(n).fill(null);
    const bound = (key, sign, name) => (s[key] ? s[key].map((v, i) => (PG.num(v) && PG.num(s[`${key}_${name}`][i]) ? v * (1 + sign * s[`${key}_${name}`][i] / D.basis) : null)) : nulls());
    const codes = (exceptions, usual) => { const out = new Array(n).fill(usual); for (const [i, c] of exceptions) out[i] = c; return out; };
    s.full = {
      ...s, night, date: night.map((k) => dateIndex.get(D.nights[k].date)),
      status: codes(s.status, D.usual.status), health: codes(s.health, D.usual.health),
      speedup: s.speedup || nulls(), speedup_ci_low: bound("speedup", -1, "lo"), speedup_ci_high: bound("speedup", 1, "hi"),
      median_ms: s.median_ms || nulls(), median_ci_low_ms: bound("median_ms", -1, "lo"), median_ci_high_ms: bound("median_ms", 1, "hi"),
      compile_s: s.compile_s || nulls(),
    };
    return s.full;
  }

  // --- one model's chart ----------------------------------------------------------------------------
  function hoverTexts(s) {
    return s.date.map((d, i) => {
      const n = D.nights[s.night[i]];
      const status = D.statuses[s.status[i]];
      const health = D.healths[s.health[i]];
      const parts = [`<b>${D.dates[d]}</b> · ${PG.esc(seriesName(s))}`, `${PG.esc(s.build)}: torch ${PG.esc(n.torch)}${n.git ? " (" + n.git.slice(0, 10) + ")" : ""}${n.ran ? ", ran " + n.ran : ""}`];
      if (status !== "ok") parts.push(`<b>${PG.esc(status)}</b>: no figure this night`);
      else {
        // the page keeps 4 significant digits of each figure: shown as kept
        const sig = (v) => (PG.num(v) ? String(Number(v.toPrecision(4))) : "—");
        const ci = (lo, hi) => (PG.num(lo) && PG.num(hi) ? ` [${sig(lo)}, ${sig(hi)}]` : "");
        if (PG.num(s.speedup[i])) parts.push(`speed-up ${sig(s.speedup[i])}x${ci(s.speedup_ci_low[i], s.speedup_ci_high[i])}`);
        parts.push(`median ${sig(s.median_ms[i])} ms${ci(s.median_ci_low_ms[i], s.median_ci_high_ms[i])}`);
        if (PG.num(s.compile_s[i])) parts.push(`compile ${s.compile_s[i].toFixed(1)} s`);
      }
      parts.push(`health: ${health && health !== "ok" ? "§ " + PG.esc(health) + " (suspect)" : health || "—"}`);
      parts.push(n.page ? "click: this night's run page" : "no run page for this night");
      return parts.join("<br>");
    });
  }

  function traces(encoded, color, first) {
    const s = full(encoded);
    const x = s.date.map((d) => D.dates[d]);
    const text = hoverTexts(s);
    const group = `s${D.series.indexOf(encoded)}`;
    const out = [];
    const panels = [["speedup", "speedup_ci_low", "speedup_ci_high", "y"], ["median_ms", "median_ci_low_ms", "median_ci_high_ms", "y2"], ["compile_s", null, null, "y3"]];
    let legend = first;
    for (const [key, lo, hi, axis] of panels) {
      if (!s[key].some(PG.num)) continue;
      if (lo) {  // the CI as closed bands, one per run of nights with a figure: along the highs, back along the lows
        const bx = [], by = [];
        let run = [];
        const close = () => {
          if (run.length) {
            bx.push(...run.map((i) => x[i]), ...run.map((i) => x[i]).reverse(), null);
            by.push(...run.map((i) => s[hi][i]), ...run.map((i) => s[lo][i]).reverse(), null);
          }
          run = [];
        };
        s[lo].forEach((v, i) => (PG.num(v) && PG.num(s[hi][i]) ? run.push(i) : close()));
        close();
        out.push({ type: "scatter", mode: "lines", x: bx, y: by, fill: "toself", fillcolor: color + "33",
          line: { width: 0 }, hoverinfo: "skip", showlegend: false, legendgroup: group, yaxis: axis, connectgaps: false });
      }
      out.push({ type: "scatter", mode: "lines", x, y: s[key], name: seriesName(s), legendgroup: group, showlegend: legend, yaxis: axis,
        line: { color, width: 1.5 }, hovertext: text, hoverinfo: "text", hoverlabel: { align: "left" },
        customdata: s.night, connectgaps: false });
      legend = false;
    }
    // failed nights: a cross on the latency panel at the last figure before them
    const fx = [], fy = [], ft = [], fn = [];
    let last = null;
    s.status.forEach((code, i) => {
      if (D.statuses[code] === "ok") { if (PG.num(s.median_ms[i])) last = s.median_ms[i]; return; }
      fx.push(x[i]); fy.push(last === null ? (s.median_ms.find(PG.num) || 1) : last); ft.push(text[i]); fn.push(s.night[i]);
    });
    if (fx.length) {
      out.push({ type: "scatter", mode: "markers", x: fx, y: fy, yaxis: "y2", name: "failed night", legendgroup: group, showlegend: false,
        marker: { symbol: "x-thin-open", size: 9, color: FAILED, line: { width: 2, color: FAILED } }, hovertext: ft, hoverinfo: "text", customdata: fn });
    }
    // suspect nights (a health flag): a red ring on the latency panel
    const sx = [], sy = [], st = [], sn = [];
    s.health.forEach((code, i) => {
      const h = D.healths[code];
      if (h && h !== "ok" && D.statuses[s.status[i]] === "ok" && PG.num(s.median_ms[i])) { sx.push(x[i]); sy.push(s.median_ms[i]); st.push(text[i]); sn.push(s.night[i]); }
    });
    if (sx.length) {
      out.push({ type: "scatter", mode: "markers", x: sx, y: sy, yaxis: "y2", name: "suspect night", legendgroup: group, showlegend: false,
        marker: { symbol: "circle-open", size: 9, color: "#d62728", line: { width: 2 } }, hovertext: st, hoverinfo: "text", customdata: sn });
    }
    return out;
  }

  function changeMarks(series) {
    const shapes = [], annotations = [];
    for (const c of D.changes) {
      if (c.series < 0 || !series.includes(D.series[c.series])) continue;
      const axis = METRIC_AXIS[c.metric];
      const worse = c.direction === "slower" || c.direction === "larger" || (c.metric === "speedup" && c.direction === "smaller");
      const color = worse ? "#d62728" : "#2ca02c";
      shapes.push({ type: "rect", xref: "x", yref: `${axis} domain`, x0: c.last_good, x1: c.first_bad, y0: 0, y1: 1,
        fillcolor: color, opacity: 0.18, line: { width: 1, color } });
      const pct = PG.num(c.pct) ? `${c.pct > 0 ? "+" : ""}${c.pct.toFixed(1)}%` : "";
      const link = c.url ? ` <a href="${PG.esc(c.url)}" target="_blank">commits</a>` : "";
      annotations.push({ xref: "x", yref: `${axis} domain`, x: c.first_bad, y: 1, yanchor: "bottom", showarrow: false,
        text: `${pct} ${PG.esc(c.direction)}${link}`, font: { size: 10, color }, bgcolor: "rgba(255,255,255,0.85)",
        hovertext: `${METRIC_NAME[c.metric]} ${PG.esc(c.direction)} ${pct}${PG.interval(c.lo, c.hi, 1, "%")}<br>last good ${c.last_good} (${PG.esc(c.last_good_git.slice(0, 10) || "?")}) · first bad ${c.first_bad} (${PG.esc(c.first_bad_git.slice(0, 10) || "?")})` });
    }
    return { shapes, annotations };
  }

  function modelFigure(task, model) {
    const series = D.series.filter((s) => s.task === task && s.model === model && visible(s));
    if (!series.length) return null;
    const data = series.flatMap((s, i) => traces(s, COLORS[i % COLORS.length], true));
    const marks = changeMarks(series);
    return {
      data,
      layout: {
        height: 520, margin: { l: 60, r: 10, t: 24, b: 40 }, hovermode: "closest", font: { size: 11 },
        xaxis: { type: "date", anchor: "y3" },
        yaxis: { domain: [0.70, 1], title: { text: "speed-up (x)", font: { size: 11 } } },
        yaxis2: { domain: [0.36, 0.64], title: { text: "median (ms)", font: { size: 11 } } },
        yaxis3: { domain: [0, 0.28], title: { text: "compile (s)", font: { size: 11 } }, rangemode: "tozero" },
        legend: { orientation: "h", y: 1.12, font: { size: 10 } },
        shapes: marks.shapes, annotations: marks.annotations,
      },
    };
  }

  function openRun(ev) {
    const point = ev.points && ev.points[0];
    if (!point || point.customdata === undefined) return;
    const night = D.nights[point.customdata];
    if (night && night.page) window.open(night.page, "_blank");
  }

  // --- the change points -----------------------------------------------------------------------------
  const changesBox = el("div", { id: "changes-table" });
  function renderChanges() {
    const rows = D.changes.filter((c) => c.gpu === gpu);
    changesBox.replaceChildren();
    if (!rows.length) {
      changesBox.append(el("p", { class: "ok", text: `No change point on ${gpu}.` }));
      return;
    }
    const head = ["first bad night", "Task/Model", "series", "metric", "change [95% CI]", "last good", "first bad", "commits", "measured again", "confirm with"];
    const body = rows.map((c) => {
      const night = (date, git, page) => el("td", {}, page ? el("a", { href: page, text: date }) : date, git ? ` (${git.slice(0, 10)})` : "");
      const pct = PG.num(c.pct) ? `${c.pct > 0 ? "+" : ""}${c.pct.toFixed(1)}%${PG.interval(c.lo, c.hi, 1, "%")} ${c.direction}` : c.direction;
      return el("tr", { class: "change" },
        el("td", { text: c.first_bad }), el("td", { text: `${c.task}/${c.model}` }),
        el("td", { text: `${c.build_line} · ${c.mode} · bs ${c.batch_size}` }), el("td", { text: METRIC_NAME[c.metric] }),
        el("td", { class: "num", text: pct }), night(c.last_good, c.last_good_git, c.last_good_page),
        night(c.first_bad, c.first_bad_git, c.first_bad_page),
        el("td", {}, c.url ? el("a", { href: c.url, text: "compare" }) : "unknown"),
        el("td", { text: c.measured || "—" }),
        el("td", {}, c.confirm ? el("code", { text: c.confirm }) : "—"));
    });
    changesBox.append(el("table", {}, el("thead", {}, el("tr", {}, head.map((h) => el("th", { text: h })))), el("tbody", {}, body)));
  }

  // --- the page --------------------------------------------------------------------------------------
  const M = D.meta;
  PG.app.replaceChildren();
  PG.app.append(
    el("h1", { text: M.title }),
    el("p", { class: "sub", text: `${D.dates.length} night(s) from ${M.first} to ${M.last}, ${D.series.length} series, ${M.points} points. suite ${M.suite_version}.` }),
    el("nav", { class: "filters" }, gpuBox, lines.box, sizes.box, modes.box),
    el("section", { id: "changes" }, el("h2", { text: "Change points" }),
      el("p", { class: "sub", text: "Each: the last good and the first bad night of a series (links: their run pages; a nightly build's nights are its nightlies' dates), the change with its 95% CI, the torch commits between them, what measuring the two nightlies again back to back said (an issue is opened only where it agrees), and the command that bisects it." }),
      changesBox));
  renderChanges();
  const grid = el("section", { id: "trends" }, el("h2", { text: "Trends per model" }),
    el("p", { class: "sub", text: "Per model: the paired speed-up, the median latency and the compile time of each night, their 95% CIs as bands; shaded: a change point (red: worse, green: better) between its last good and first bad night; ✕: a failed night; a red ring: a night timed on an unhealthy machine. Click a point for that night's run page." }));
  const cards = el("div", { class: "grid wide-cards" });
  for (const [task, model] of D.models) {
    const div = el("div", { class: "chart", "data-model": `${task}/${model}`, style: "min-height: 520px" });
    cards.append(el("div", { class: "card", "data-task": task, "data-model": `${task}/${model}` }, el("h3", { text: `${task}/${model}` }), div));
    PG.chart(div, () => modelFigure(task, model), (node) => {
      if (!node.dataset.clicks) { node.on("plotly_click", openRun); node.dataset.clicks = "true"; }
    });
  }
  grid.append(cards);
  const nights = el("section", { id: "nights" }, el("h2", { text: "Nights" }),
    el("details", {}, el("summary", { text: `Every night's run page (${D.nights.length})` }),
      el("table", {}, el("thead", {}, el("tr", {}, ["date", "GPU", "build line", "build", "torch", "commit", "run"].map((h) => el("th", { text: h })))),
        el("tbody", {}, [...D.nights].reverse().map((n) => el("tr", {}, el("td", { text: n.date }), el("td", { text: n.gpu }),
          el("td", { text: n.line }), el("td", { text: n.build }), el("td", { text: n.torch }), el("td", { text: n.git.slice(0, 10) }),
          el("td", {}, n.page ? el("a", { href: n.page, text: n.run }) : n.run + " (no page)")))))));
  PG.app.append(grid, nights);
  if (!D.series.length) PG.app.append(el("p", { class: "empty-note", text: "The history holds no night yet." }));
  PG.started();
})();
