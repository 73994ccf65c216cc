// What both pages share: reading the inlined data, building elements, formatting figures the way
// the Markdown tables do, and drawing charts lazily (a chart is drawn when it comes near the
// screen; the page is "ready" once the charts in view are drawn: body[data-ready], window.__pageReadyMs).
"use strict";
const PG = (() => {
  const app = document.getElementById("app");

  function fatal(message) {
    // a page that cannot draw says so on the page, not only on the console
    const box = document.createElement("p");
    box.className = "fatal";
    box.textContent = message;
    app.prepend(box);
    console.error(message);
  }

  function data() {
    if (typeof Plotly === "undefined") {
      fatal("plotly.js did not load: the file named in this page's <script src> must sit beside the page " +
            "(merge and `suite history html` write it there).");
      stopped = true;
      throw new Error("no plotly.js");
    }
    return JSON.parse(document.getElementById("page-data").textContent);
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "html") node.innerHTML = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function esc(text) {
    return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }

  const num = (v) => v !== null && v !== undefined && Number.isFinite(v);
  const ms = (v) => (num(v) ? v.toFixed(3) : "—");
  const factor = (v) => (num(v) ? v.toFixed(2) + "x" : "—");
  function interval(lo, hi, digits, unit) {
    return num(lo) && num(hi) ? ` [${lo.toFixed(digits)}, ${hi.toFixed(digits)}]${unit || ""}` : "";
  }
  function gainText(g) {
    // as the tables print a speed-up: "40.6% · 1.68x [1.54, 2.10]", or the failure's word
    if (!g) return "—";
    if (g.word) return g.word;
    return `${g.pct.toFixed(1)}% · ${factor(g.x)}${interval(g.lo, g.hi, 2)}`;
  }
  function qtyText(q, digits, unit) {
    if (!q) return "—";
    if (q.word) return q.word;
    if (!num(q.v)) return q.text || "—";
    return q.v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) +
      (unit || "") + (q.mark || "");
  }

  function table(columns, rows, numeric) {
    const head = el("tr", {}, columns.map((c) => el("th", { text: c })));
    const body = rows.map((r) => el("tr", {}, r.map((cell, i) =>
      el("td", { text: cell, class: numeric && numeric[i] ? "num" : null }))));
    return el("table", {}, el("thead", {}, head), el("tbody", {}, body));
  }

  // --- charts, drawn when they come near the screen -------------------------------------------
  const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const charts = [];
  let pending = 0;
  let readySet = false;

  function markReady() {
    if (readySet || pending > 0) return;
    readySet = true;
    requestAnimationFrame(() => {
      window.__pageReadyMs = performance.now();
      document.body.dataset.ready = "true";
    });
  }

  function draw(chart) {
    const figure = chart.figure();
    chart.drawn = true;
    if (!figure) {
      chart.div.classList.add("empty");
      return Promise.resolve();
    }
    chart.div.classList.remove("empty");
    pending += 1;
    return Plotly.react(chart.div, figure.data, figure.layout, CONFIG)
      .then(() => {
        chart.div.dataset.drawn = "true";
        if (chart.after) chart.after(chart.div);
      })
      .catch((e) => fatal(`a chart could not be drawn: ${e}`))
      .finally(() => {
        pending -= 1;
        markReady();
      });
  }

  const observer = "IntersectionObserver" in window
    ? new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        observer.unobserve(entry.target);
        const chart = charts.find((c) => c.div === entry.target);
        if (chart && !chart.drawn) draw(chart);
      }
    }, { rootMargin: "300px" })
    : null;

  function chart(div, figure, after) {
    // figure(): {data, layout} with the filters as they are now, or null (nothing to show)
    const entry = { div, figure, after, drawn: false };
    charts.push(entry);
    if (observer) observer.observe(div);
    else draw(entry);
    return entry;
  }

  function redraw() {
    // after a filter changed: charts already drawn are drawn again; the others when they show
    return Promise.all(charts.filter((c) => c.drawn).map(draw));
  }

  function drawAll(selector) {
    // every chart (or those whose element matches `selector`), seen or not: for the tests and the benchmark
    return Promise.all(charts.map((c) => (c.drawn || (selector && !c.div.matches(selector)) ? null : draw(c))));
  }

  function started() {
    // the first screen is drawn by the observer's first callback; with nothing in view, ready now
    requestAnimationFrame(() => requestAnimationFrame(markReady));
  }

  function checkboxes(name, values, label, onchange) {
    const state = new Set(values);
    const box = el("fieldset", { class: "filter", "data-filter": name }, el("legend", { text: label }));
    for (const value of values) {
      const input = el("input", { type: "checkbox", checked: true, value: String(value),
        onchange: (ev) => {
          if (ev.target.checked) state.add(value); else state.delete(value);
          onchange();
        } });
      box.append(el("label", {}, input, " " + String(value)));
    }
    return { box, state };
  }

  function slug(text) {
    return String(text).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  }

  let stopped = false;  // the page stopped on purpose (said so already): not a second message
  window.addEventListener("error", (ev) => { if (!stopped) fatal(`script error: ${ev.message}`); });
  return { app, fatal, data, el, esc, num, ms, factor, interval, gainText, qtyText, table, chart, redraw,
    drawAll, started, checkboxes, slug, charts };
})();
window.PG = PG;
