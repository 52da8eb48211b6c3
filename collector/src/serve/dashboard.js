// The collector dashboard (served as /dashboard.js under a strict Content-Security-Policy).
// Every value from the API is data that anyone who can POST a beacon may have chosen: it only
// ever reaches the page as text (textContent, SVG attributes), never as markup: no HTML
// string sinks and no inline style anywhere (the CSP allows neither inline script nor style,
// and requires Trusted Types for the HTML sinks, so a slip throws instead of injecting).
"use strict";
const $ = (id) => document.getElementById(id);
const NS = "http://www.w3.org/2000/svg";

// The read token: taken from ?token= once, kept for this tab (sessionStorage), and removed
// from the address bar, history and any later Referer; API calls send it as a header.
const TOKEN_KEY = "llm-rum:token";
const token = (() => {
  const url = new URL(location.href);
  let t = url.searchParams.get("token");
  if (t !== null) {
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    try { sessionStorage.setItem(TOKEN_KEY, t); } catch { /* private mode: memory only */ }
  } else {
    try { t = sessionStorage.getItem(TOKEN_KEY); } catch { t = null; }
  }
  return t;
})();
const C = { a: "#2f6fe0", b: "#f08c2e", bad: "#d64545", ok: "#2e9e6a", line: "#e3e7ec", mute: "#6b7685" };
const STAGE_COLORS = ["#9aa5b4", "#5b8def", "#8e6be8", "#f0a23b", "#3fb28a", "#e0679a", "#6fc3df", "#c7a35a"];

/** An SVG element; `text` as text. */
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = String(text);
  if (parent) parent.appendChild(e);
  return e;
}
/** An HTML element; children are nodes or strings (as text). */
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  for (const c of children) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
}
function svg(w, h) { return el("svg", { viewBox: `0 0 ${w} ${h}`, role: "img" }); }
function ms(v) {
  if (v == null || !isFinite(v)) return "–";
  if (v >= 10000) return (v / 1000).toFixed(1) + " s";
  if (v >= 1000) return (v / 1000).toFixed(2) + " s";
  return Math.round(v) + " ms";
}
function pct(v) { return v == null ? "–" : (v * 100).toFixed(1) + "%"; }
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
function params(extra) {
  const p = new URLSearchParams(extra || {});
  const range = +$("range").value;
  // On a whole minute: the collector answers whole minutes from its rollups.
  if (range > 0) p.set("from", String(Math.floor((Date.now() - range * 1000) / 60000) * 60000));
  for (const k of ["route", "model", "provider"]) { const v = $(k).value.trim(); if (v) p.set(k, v); }
  return p.toString();
}
async function api(path, extra) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const r = await fetch(`${path}?${params(extra)}`, { cache: "no-store", headers });
  if (r.status === 401) throw new Error(`read token ${token ? "refused" : "required"}: open this page as /?token=YOUR_TOKEN`);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}
function empty(node, msg) { node.replaceChildren(h("div", { class: "empty" }, msg || "No records in this window yet.")); }

function tiles(s, a) {
  const m = s.metrics;
  const items = [
    ["answers", s.count.toLocaleString(), ""],
    ["ttft p95", ms(m.ttft.p95), `p50 ${ms(m.ttft.p50)}`],
    ["perceived ttft p95", ms(m.perceivedTtft.p95), `p50 ${ms(m.perceivedTtft.p50)}`],
    ["stall rate", pct(s.stallRate), "answers with ≥1 stall"],
    ["buffered", pct(s.bufferedRate), "UI painted only at the end"],
    ["upstream buffered", pct(s.upstreamBufferedRate), "a proxy delivered bursts"],
    ["alerts firing", String(a.firing), a.budgets.length ? `${a.budgets.length} budget${a.budgets.length > 1 ? "s" : ""}` : "no budgets"],
  ];
  $("tiles").replaceChildren(...items.map(([k, v, sub], i) =>
    h("div", { class: `tile${i === items.length - 1 && a.firing ? " alert" : ""}` },
      h("div", { class: "k" }, k), h("div", { class: "v" }, v), h("div", { class: "k" }, sub))));
}

function histogram(hist) {
  const node = $("hist");
  const series = hist.series.filter((s) => s.count > 0);
  if (!series.length) return empty(node);
  const W = 640, H = 250, L = 44, R = 10, T = 10, B = 30;
  const s = svg(W, H);
  const max = niceMax(Math.max(...series.flatMap((x) => x.counts)));
  const bw = (W - L - R) / hist.bins;
  for (let i = 0; i <= 4; i++) {
    const y = T + (H - T - B) * (1 - i / 4);
    el("line", { x1: L, x2: W - R, y1: y, y2: y, stroke: C.line }, s);
    // Counts: whole numbers where the quarter falls on one, else one decimal (no "1, 1").
    const v = (max * i) / 4;
    el("text", { x: L - 6, y: y + 4, "text-anchor": "end" }, s, Number.isInteger(v) ? v : v.toFixed(1));
  }
  const colors = { ttft: C.a, perceivedTtft: C.b };
  series.forEach((ser, k) => {
    ser.counts.forEach((c, i) => {
      if (!c) return;
      const hgt = ((H - T - B) * c) / max;
      const half = bw / series.length;
      el("rect", { x: L + i * bw + k * half + 0.5, y: H - B - hgt, width: Math.max(half - 1, 1), height: hgt,
        fill: colors[ser.metric] || C.mute, opacity: 0.9, rx: 1 }, s)
        .appendChild(el("title", {}, null, `${ser.metric} ${ms(i * hist.binWidth)}–${ms((i + 1) * hist.binWidth)}: ${c}`));
    });
  });
  const ticks = 5;
  for (let i = 0; i <= ticks; i++) {
    const x = L + ((W - L - R) * i) / ticks;
    el("text", { x, y: H - B + 16, "text-anchor": i === 0 ? "start" : i === ticks ? "end" : "middle" }, s, ms((hist.binWidth * hist.bins * i) / ticks));
  }
  node.replaceChildren(s);
}

function stages(s) {
  const node = $("stages");
  const by = Object.fromEntries(s.stages.map((x) => [x.stage, x]));
  const server = s.stages.filter((x) => x.server);
  if (!s.stages.length) return empty(node);
  const colorOf = Object.create(null); // keyed by stage names from beacons: no prototype
  s.stages.filter((x) => !x.server).forEach((x, i) => (colorOf[x.stage] = STAGE_COLORS[i % STAGE_COLORS.length]));
  server.forEach((x, i) => (colorOf[x.stage] = ["#3d4552", "#737d8c", "#a9b1bd"][i % 3]));
  // Two rows on their own scales: the wait (until the first word is painted) is what people
  // feel most, and would be a sliver next to the decode time on one shared scale.
  const rows = [
    ["until the first word is painted", ["interaction→start", "start→headers", "headers→firstToken", "firstToken→firstPaint"]],
    ["streaming the answer", ["decode", "lastToken→lastPaint"]],
  ].map(([title, names]) => [title, names.map((n) => by[n]).filter(Boolean)]).filter(([, segs]) => segs.length);
  const W = 640, L = 10, R = 10, BW = W - L - R;
  const sv = svg(W, 10);
  let y = 0;
  const bar = (segs, yy, hh, scale, labels) => {
    let x = L;
    segs.forEach((st) => {
      const w = Math.max(st.median, 0) * scale;
      el("rect", { x, y: yy, width: Math.max(w, 0.5), height: hh, fill: colorOf[st.stage] }, sv)
        .appendChild(el("title", {}, null, `${st.stage}: ${ms(st.median)} (n=${st.count})`));
      if (labels && w > 48) el("text", { x: x + w / 2, y: yy + hh / 2 + 4, "text-anchor": "middle", class: "on-bar" }, sv, ms(st.median));
      x += w;
    });
    return x;
  };
  rows.forEach(([title, segs], r) => {
    const total = segs.reduce((a, x) => a + Math.max(x.median, 0), 0) || 1;
    const scale = BW / total;
    el("text", { x: L, y: y + 13, class: "ink bold" }, sv, title);
    el("text", { x: W - R, y: y + 13, "text-anchor": "end" }, sv, `Σ medians ${ms(total)}`);
    bar(segs, y + 20, 28, scale, true);
    y += 54;
    if (r === 0 && server.length) {
      // Server-Timing stages happen inside start→headers→firstToken: drawn beneath, from start.
      const pre = by["interaction→start"];
      const x0 = L + (pre ? Math.max(pre.median, 0) * scale : 0);
      let x = x0;
      server.forEach((st) => {
        const w = Math.max(st.median, 0) * scale;
        el("rect", { x, y, width: Math.max(w, 0.5), height: 10, rx: 2, fill: colorOf[st.stage] }, sv)
          .appendChild(el("title", {}, null, `${st.stage}: ${ms(st.median)}`));
        x += w;
      });
      const label = "server stages (Server-Timing), inside the wait";
      if (x + 8 + 270 < W) el("text", { x: x + 8, y: y + 9 }, sv, label);
      else el("text", { x: x0, y: y + 24 }, sv, label);
      y += x + 8 + 270 < W ? 22 : 34;
    }
    y += 6;
  });
  const items = rows.flatMap(([, segs]) => segs).concat(server);
  items.forEach((st, i) => {
    const cx = L + (i % 2) * (BW / 2 + 8), cy = y + 12 + Math.floor(i / 2) * 21;
    el("rect", { x: cx, y: cy - 9, width: 10, height: 10, rx: 2, fill: colorOf[st.stage] }, sv);
    el("text", { x: cx + 16, y: cy, class: "ink" }, sv, String(st.stage).replace("server:", "server · "));
    el("text", { x: cx + BW / 2 - 24, y: cy, "text-anchor": "end", class: "num" }, sv, ms(st.median));
  });
  sv.setAttribute("viewBox", `0 0 ${W} ${y + 14 + Math.ceil(items.length / 2) * 21}`);
  node.replaceChildren(sv);
}

function timeseries(t) {
  const node = $("ts");
  $("tsTitle").textContent = `${$("tsQ").selectedOptions[0].text} of ${t.metric} over time`;
  const pts = t.points.filter((p) => p.value != null);
  if (!pts.length) return empty(node);
  const W = 860, H = 250, L = 54, R = 14, T = 12, B = 28;
  const s = svg(W, H);
  const budget = t.budgets.find((b) => Math.abs(b.q - t.q) < 1e-9) || t.budgets[0];
  const maxV = niceMax(Math.max(...pts.map((p) => p.value), budget ? budget.limit * 1.1 : 0));
  const t0 = Math.min(...pts.map((p) => p.t)), t1 = Math.max(...pts.map((p) => p.t)) + t.bucketMs;
  const X = (v) => L + ((W - L - R) * (v - t0)) / Math.max(t1 - t0, 1);
  const Y = (v) => T + (H - T - B) * (1 - v / maxV);
  for (let i = 0; i <= 4; i++) {
    const v = (maxV * i) / 4;
    el("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: C.line }, s);
    el("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end" }, s, ms(v));
  }
  for (let i = 0; i <= 4; i++) {
    const tv = t0 + ((t1 - t0) * i) / 4;
    const d = new Date(tv);
    const label = (t1 - t0 > 86400000 ? `${d.getMonth() + 1}/${d.getDate()} ` : "") + d.toTimeString().slice(0, 5);
    el("text", { x: X(tv), y: H - 8, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, s, label);
  }
  const mid = (p) => X(p.t + t.bucketMs / 2);
  const area = `M${mid(pts[0])},${Y(0)} ` + pts.map((p) => `L${mid(p)},${Y(p.value)}`).join(" ") + ` L${mid(pts[pts.length - 1])},${Y(0)} Z`;
  el("path", { d: area, fill: C.a, opacity: 0.08 }, s);
  el("path", { d: pts.map((p, i) => `${i ? "L" : "M"}${mid(p)},${Y(p.value)}`).join(" "), fill: "none", stroke: C.a, "stroke-width": 2 }, s);
  pts.forEach((p) => {
    const over = budget && p.value > budget.limit;
    el("circle", { cx: mid(p), cy: Y(p.value), r: over ? 3.5 : 2.5, fill: over ? C.bad : C.a }, s)
      .appendChild(el("title", {}, null, `${new Date(p.t).toLocaleTimeString()}: ${ms(p.value)} (n=${p.n})`));
  });
  if (budget) {
    el("line", { x1: L, x2: W - R, y1: Y(budget.limit), y2: Y(budget.limit), stroke: C.bad, "stroke-dasharray": "6 4", "stroke-width": 1.5 }, s);
    el("text", { x: L + 6, y: Y(budget.limit) - 6, class: "budget" }, s, `budget ${budget.text}`);
  }
  node.replaceChildren(s);
}

function hbars(sv, y, rows, W, color) {
  const max = Math.max(1, ...rows.map((r) => r[1]));
  rows.forEach(([label, v, col], i) => {
    const yy = y + i * 26;
    el("text", { x: 0, y: yy + 13, class: "ink" }, sv, label);
    const w = ((W - 150) * v) / max;
    el("rect", { x: 96, y: yy + 2, width: Math.max(w, 1), height: 16, rx: 3, fill: col || color }, sv);
    el("text", { x: 100 + w, y: yy + 14 }, sv, v.toLocaleString());
  });
  return y + rows.length * 26;
}

function stallsAndOutcomes(s) {
  const node = $("stalls");
  if (!s.count) return empty(node);
  const W = 380;
  const sv = svg(W, 10);
  el("text", { x: 0, y: 12, class: "ink bold" }, sv, `stall causes · ${pct(s.stallRate)} of answers stalled`);
  let y = hbars(sv, 22, [["network", s.stallCauses.network, C.a], ["render", s.stallCauses.render, C.b]], W);
  el("text", { x: 0, y: y + 22, class: "ink bold" }, sv, "outcomes");
  const oc = { ok: C.ok, error: C.bad, aborted: "#9aa5b4", partial: "#8e6be8" };
  const rows = ["ok", "error", "aborted", "partial"].map((k) => [k, s.outcomes[k] || 0, oc[k]]);
  y = hbars(sv, y + 32, rows, W);
  if (s.dropped) { el("text", { x: 0, y: y + 16 }, sv, `${s.dropped} records dropped by SDK queues`); y += 20; }
  const refused = s.refused ? (s.refused.tooOld || 0) + (s.refused.future || 0) : 0;
  if (refused) { el("text", { x: 0, y: y + 16 }, sv, `${refused} records refused: start time implausible after clock correction`); y += 20; }
  sv.setAttribute("viewBox", `0 0 ${W} ${y + 4}`);
  node.replaceChildren(sv);
}

/** The two kinds of buffering per route, side by side (busiest routes first). */
function routesTable(s) {
  const node = $("routes");
  if (!s.routes || !s.routes.length) return empty(node);
  const head = ["route", "answers", "UI buffered", "upstream buffered"];
  const rows = s.routes.map((r) => h("tr", {}, h("td", {}, r.route == null ? "–" : r.route), h("td", {}, String(r.count)),
    h("td", {}, pct(r.bufferedRate)), h("td", { class: r.upstreamBufferedRate > 0.5 ? "hot" : "" }, pct(r.upstreamBufferedRate))));
  node.replaceChildren(h("table", {}, h("thead", {}, h("tr", {}, ...head.map((t) => h("th", {}, t)))), h("tbody", {}, ...rows)));
}

/** Per model: which one is slow for our users (busiest first; a row's model filters the page). */
function modelsTable(s) {
  const node = $("models");
  if (!s.models || !s.models.length) return empty(node);
  const head = ["model", "answers", "ttft p50 / p95", "perceived ttft p50 / p95", "stalled", "UI buffered", "upstream buffered"];
  const pair = (m) => `${ms(m.p50)} / ${ms(m.p95)}`;
  const rows = s.models.map((r) => h("tr", {},
    h("td", {}, r.model == null ? "– (not named)" : r.model), h("td", {}, String(r.count)),
    h("td", {}, pair(r.ttft)), h("td", {}, pair(r.perceivedTtft)), h("td", {}, pct(r.stallRate)),
    h("td", {}, pct(r.bufferedRate)), h("td", { class: r.upstreamBufferedRate > 0.5 ? "hot" : "" }, pct(r.upstreamBufferedRate))));
  node.replaceChildren(h("table", {}, h("thead", {}, h("tr", {}, ...head.map((t) => h("th", {}, t)))), h("tbody", {}, ...rows)));
}

function alertsTable(a) {
  $("alertsNote").textContent = `percentile over a ${a.windowSecs} s sliding window must stay above budget for ${a.sustainSecs} s to fire`;
  const node = $("alerts");
  const budgets = a.budgets.map((b) =>
    h("span", { class: `pill ${b.current != null && b.current > b.limit ? "firing" : "resolved"}` }, `${b.budget} · now ${ms(b.current)}`));
  const spaced = (nodes) => nodes.flatMap((n, i) => (i ? [" ", n] : [n]));
  if (!a.alerts.length) {
    node.replaceChildren(a.budgets.length
      ? h("div", { class: "empty" }, "No alerts. Budgets: ", ...spaced(budgets))
      : h("div", { class: "empty" }, "No budgets configured (start with --budget 'perceivedTtft p95<=1000')."));
    return;
  }
  const when = (t) => (t ? new Date(t).toLocaleString() : "–");
  const state = (s) => (s === "firing" || s === "resolved" ? s : "");
  const head = ["state", "budget", "value / peak", "breach since", "fired", "resolved", "stage that grew most"];
  const rows = a.alerts.map((x) => h("tr", {},
    h("td", {}, h("span", { class: `pill ${state(x.state)}` }, x.state)),
    h("td", {}, x.budget),
    h("td", {}, `${ms(x.value)} / ${ms(x.peak)}`),
    h("td", {}, when(x.breachSinceMs)), h("td", {}, when(x.firedAtMs)), h("td", {}, when(x.resolvedAtMs)),
    h("td", { class: "grew" }, ...(x.grewMost
      ? [h("b", {}, x.grewMost.stage), ` ${ms(x.grewMost.before)} → ${ms(x.grewMost.during)}`]
      : ["–"]))));
  node.replaceChildren(
    h("div", { class: "tip" }, ...spaced(budgets)),
    h("table", {}, h("thead", {}, h("tr", {}, ...head.map((t) => h("th", {}, t)))), h("tbody", {}, ...rows)));
}

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const [s, hist, t, a] = await Promise.all([
      api("/api/summary"),
      api("/api/histogram", { metrics: "ttft,perceivedTtft", bins: 40 }),
      api("/api/timeseries", { metric: $("tsMetric").value, q: $("tsQ").value,
        // ~60 points, each a whole number of minutes (rollup-sized).
        bucket: String(60 * Math.max(1, Math.round((+$("range").value || 86400) / 3600))) }),
      api("/api/alerts"),
    ]);
    tiles(s, a); histogram(hist); stages(s); timeseries(t); stallsAndOutcomes(s); routesTable(s); modelsTable(s); alertsTable(a);
    $("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
    $("status").className = "";
  } catch (e) {
    $("status").textContent = String(e.message || e);
    $("status").className = "err";
  } finally { busy = false; }
}
for (const id of ["range", "tsMetric", "tsQ"]) $(id).addEventListener("change", refresh);
for (const id of ["route", "model", "provider"]) $(id).addEventListener("change", refresh);
refresh();
setInterval(refresh, 10000);
