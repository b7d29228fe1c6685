// routebr-kit report: the trace explorer. Hand-written, no framework, no network. Every value from the data reaches
// the page through textContent (never innerHTML), so no text in a case can add markup or script.
(function () {
  "use strict";
  const started = performance.now();
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("rk-data").textContent);
  const ex = data.explorer;
  const cols = ex.columns, num = ex.numeric;
  const n = cols.task.codes.length;
  const PAGE = 100;
  const timing = { openMs: 0, lastFilterMs: 0, lastSortMs: 0, rows: n };
  window.__rkReport = { timing: timing, data: data };

  // ---- typed columns (codes as Int32Array: filters are integer comparisons over all rows)
  const code = {};
  for (const name of Object.keys(cols)) code[name] = Int32Array.from(cols[name].codes);
  const caseOf = Int32Array.from(num.case);
  const ok = Uint8Array.from(num.ok);
  const cases = ex.cases;
  let caseText = null; // lower-cased "id utterance" per case, built on the first search

  // ---- the table's columns (a task is shown without the folder every task shares, which is said once above)
  const taskPrefix = sharedFolder(cols.task.values);
  if (taskPrefix) $("rk-task-prefix").textContent = "Task paths are relative to " + taskPrefix + ".";
  const view = [
    ["task", "task", (i) => cols.task.values[code.task[i]].slice(taskPrefix.length)],
    ["case", "case", (i) => cases[caseOf[i]][0]],
    ["split", "split", (i) => cols.split.values[code.split[i]]],
    ["system", "system", (i) => cols.system.values[code.system[i]]],
    ["gold", "gold path", (i) => cols.gold.values[code.gold[i]]],
    ["pred", "final path", (i) => cols.pred.values[code.pred[i]]],
    ["reason", "reason", (i) => cols.reason.values[code.reason[i]]],
    ["rule", "rule", (i) => cols.rule.values[code.rule[i]]],
    ["ok", "exact", (i) => (ok[i] ? "✓" : "✗")],
  ];
  if (ex.diff) {
    view.splice(5, 0, ["base_pred", "base path", (i) => cols.base_pred.values[code.base_pred[i]]]);
    view.push(["change", "change", (i) => cols.change.values[code.change[i]]]);
    view.push(["stage", "first changed stage", (i) => cols.stage.values[code.stage[i]]]);
  }

  function sharedFolder(values) {
    if (values.length < 2) return "";
    let prefix = values[0].slice(0, values[0].lastIndexOf("/") + 1);
    for (const v of values) while (prefix && !v.startsWith(prefix)) {
      prefix = prefix.slice(0, prefix.slice(0, -1).lastIndexOf("/") + 1);
    }
    return prefix;
  }

  // ---- filters
  const selects = Array.from(document.querySelectorAll("#rk-controls select[data-col]"));
  for (const sel of selects) {
    const col = sel.dataset.col;
    if (col === "change" && !ex.diff) { sel.parentElement.hidden = true; continue; }
    const counts = new Int32Array(cols[col].values.length);
    for (let i = 0; i < n; i++) counts[code[col][i]]++;
    const all = document.createElement("option");
    all.value = ""; all.textContent = "all";
    sel.appendChild(all);
    if (col === "change") {
      const changedOpt = document.createElement("option");
      changedOpt.value = "changed"; changedOpt.textContent = "changed (any class)";
      sel.appendChild(changedOpt);
    }
    // tasks keep the report's order (headline runs first, side runs after); other values are sorted
    const order = cols[col].values.map((v, k) => k);
    if (col !== "task") order.sort((a, b) => cols[col].values[a] < cols[col].values[b] ? -1 : 1);
    for (const k of order) {
      const opt = document.createElement("option");
      opt.value = String(k);
      opt.textContent = cols[col].values[k] + " (" + counts[k] + ")";
      sel.appendChild(opt);
    }
    sel.addEventListener("change", refresh);
  }
  $("rk-f-ok").addEventListener("change", refresh);
  let searchTimer = 0;
  $("rk-search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(refresh, 150); });
  const unchangedCode = ex.diff ? cols.change.values.indexOf("unchanged") : -1;

  let shown = new Int32Array(0);
  let page = 0;
  let sortKey = null, sortDir = 1;

  function filtered() {
    const wanted = [];
    for (const sel of selects) {
      if (sel.parentElement.hidden || sel.value === "") continue;
      const col = code[sel.dataset.col];
      if (sel.value === "changed") wanted.push((i) => col[i] !== unchangedCode);
      else { const k = Number(sel.value); wanted.push((i) => col[i] === k); }
    }
    const okWanted = $("rk-f-ok").value;
    const query = $("rk-search").value.trim().toLowerCase();
    let caseHit = null;
    if (query) {
      if (caseText === null) caseText = cases.map((c) => (c[0] + " " + c[2]).toLowerCase());
      caseHit = new Uint8Array(cases.length);
      for (let c = 0; c < cases.length; c++) caseHit[c] = caseText[c].indexOf(query) >= 0 ? 1 : 0;
    }
    const out = new Int32Array(n);
    let m = 0;
    outer: for (let i = 0; i < n; i++) {
      if (caseHit !== null && !caseHit[caseOf[i]]) continue;
      if (okWanted !== "" && ok[i] !== Number(okWanted)) continue;
      for (let w = 0; w < wanted.length; w++) if (!wanted[w](i)) continue outer;
      out[m++] = i;
    }
    return out.subarray(0, m);
  }

  function sortRows(rows) {
    if (sortKey === null) return rows;
    const t0 = performance.now();
    let keyOf;
    if (sortKey === "case") {
      const rank = rankOf(cases.map((c) => c[0]));
      keyOf = (i) => rank[caseOf[i]];
    } else if (sortKey === "ok") {
      keyOf = (i) => ok[i];
    } else {
      const rank = rankOf(cols[sortKey].values);
      const codes = code[sortKey];
      keyOf = (i) => rank[codes[i]];
    }
    const keys = new Float64Array(rows.length);
    for (let j = 0; j < rows.length; j++) keys[j] = keyOf(rows[j]);
    const idx = Array.from(rows.keys()).sort((a, b) => sortDir * (keys[a] - keys[b]) || a - b);
    const out = Int32Array.from(idx, (j) => rows[j]);
    timing.lastSortMs = performance.now() - t0;
    return out;
  }

  function rankOf(values) {
    const order = values.map((v, k) => k).sort((a, b) => (values[a] < values[b] ? -1 : values[a] > values[b] ? 1 : 0));
    const rank = new Int32Array(values.length);
    order.forEach((k, r) => { rank[k] = r; });
    return rank;
  }

  function refresh() {
    const t0 = performance.now();
    shown = sortRows(filtered());
    page = 0;
    render();
    timing.lastFilterMs = performance.now() - t0;
  }

  // ---- the table
  const head = $("rk-head");
  for (const [key, label] of view) {
    const th = document.createElement("th");
    th.textContent = label;
    th.dataset.key = key;
    th.title = "sort by " + label;
    th.addEventListener("click", () => {
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      shown = sortRows(shown);
      page = 0;
      render();
    });
    head.appendChild(th);
  }
  const body = $("rk-body");

  function render() {
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    $("rk-count").textContent = shown.length + " of " + n + " rows";
    $("rk-page").textContent = "page " + (page + 1) + " of " + pages;
    $("rk-prev").disabled = page === 0;
    $("rk-next").disabled = page >= pages - 1;
    const frag = document.createDocumentFragment();
    const end = Math.min(shown.length, (page + 1) * PAGE);
    for (let j = page * PAGE; j < end; j++) {
      const i = shown[j];
      const tr = document.createElement("tr");
      tr.dataset.row = String(i);
      if (ex.diff && code.change[i] !== unchangedCode) tr.className = "rk-changed rk-" + cols.change.values[code.change[i]];
      for (const [key, , get] of view) {
        const td = document.createElement("td");
        if (WRAPS.has(key)) breakable(td, get(i));
        else td.textContent = get(i);
        if (key === "task") td.title = cols.task.values[code.task[i]];
        td.dataset.key = key;
        tr.appendChild(td);
      }
      tr.addEventListener("click", () => openRow(i));
      frag.appendChild(tr);
    }
    body.replaceChildren(frag);
  }
  // the columns whose values may wrap (the rest keep one line: CSS nowrap, and no <wbr>, which Chromium honours even
  // inside nowrap)
  const WRAPS = new Set(["task", "gold", "base_pred", "pred", "reason", "change", "stage"]);
  // a value with a line-break opportunity after each "/" and "_" (its text is unchanged: <wbr> holds none), so a
  // narrow window wraps a long path or code inside its cell instead of pushing the last columns out of view
  function breakable(td, value) {
    let start = 0;
    for (let k = 0; k < value.length; k++) {
      if ((value[k] === "/" || value[k] === "_") && k + 1 < value.length) {
        td.appendChild(document.createTextNode(value.slice(start, k + 1)));
        td.appendChild(document.createElement("wbr"));
        start = k + 1;
      }
    }
    td.appendChild(document.createTextNode(value.slice(start)));
  }

  $("rk-prev").addEventListener("click", () => { page--; render(); });
  $("rk-next").addEventListener("click", () => { page++; render(); });

  // ---- details: compressed chunks, inflated when a case opens
  let chunkBlobs = null, baseBlobs = null, caseStages = null;
  const chunkCache = new Map();

  async function inflate(b64) {
    if (typeof DecompressionStream === "undefined") {
      throw new Error("this browser has no DecompressionStream (Chromium 80+, Firefox 113+, Safari 16.4+ have it); " +
                      "the case details cannot be shown");
    }
    const bin = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("deflate"));
    return JSON.parse(await new Response(stream).text());
  }

  async function chunk(which, k) {
    const key = which + ":" + k;
    if (!chunkCache.has(key)) {
      if (chunkBlobs === null) {
        chunkBlobs = JSON.parse($("rk-chunks").textContent);
        baseBlobs = JSON.parse($("rk-base-chunks").textContent);
      }
      chunkCache.set(key, inflate((which === "base" ? baseBlobs : chunkBlobs)[k]));
    }
    return chunkCache.get(key);
  }

  async function detailOf(i) {
    const rows = await chunk("row", Math.floor(i / ex.chunk_rows));
    return rows[i % ex.chunk_rows];
  }

  async function baseDetailOf(i) {
    const b = num.base_detail[i];
    if (b < 0) return null;
    const rows = await chunk("base", Math.floor(b / ex.chunk_rows));
    return rows[b % ex.chunk_rows];
  }

  async function openRow(i) {
    const panel = $("rk-detail");
    panel.hidden = false;
    panel.replaceChildren(text("p", "loading …"));
    try {
      if (caseStages === null) caseStages = inflate(JSON.parse($("rk-cases").textContent));
      const [stagesOfCases, detail, base] = await Promise.all([caseStages, detailOf(i), baseDetailOf(i)]);
      const c = cases[caseOf[i]];
      const frag = document.createDocumentFragment();
      const title = text("h3", c[0] + " — " + cols.task.values[code.task[i]] + " (repeat " +
                         cols.repeat.values[code.repeat[i]] + ")");
      frag.appendChild(title);
      const close = text("button", "close");
      close.type = "button";
      close.id = "rk-close";
      close.addEventListener("click", () => { panel.hidden = true; });
      frag.appendChild(close);
      frag.appendChild(stagesBlock(stagesOfCases[caseOf[i]], "rk-case-stages", []));
      const highlight = ex.diff ? (ex.change_stage_keys[cols.stage.values[code.stage[i]]] || []) : [];
      if (base) {
        const info = text("p", "Changed: " + cols.change.values[code.change[i]] + "; first changed stage: " +
                          cols.stage.values[code.stage[i]] + " (highlighted).");
        info.id = "rk-change-info";
        frag.appendChild(info);
        const pair = document.createElement("div");
        pair.className = "rk-pair";
        pair.appendChild(side("base", base, highlight));
        pair.appendChild(side("candidate", detail, highlight));
        frag.appendChild(pair);
      } else {
        frag.appendChild(side(ex.diff ? "candidate" : "row", detail, []));
      }
      panel.replaceChildren(frag);
      panel.dataset.row = String(i);
      panel.scrollIntoView({ block: "start" });
    } catch (err) {
      panel.replaceChildren(text("p", "cannot show this case: " + err.message));
    }
  }

  function side(name, detail, highlight) {
    const wrap = document.createElement("div");
    wrap.className = "rk-side";
    wrap.id = "rk-side-" + name;
    wrap.appendChild(text("h4", name + " — stages from " + (ex.source_text[detail.source] || detail.source)));
    wrap.appendChild(stagesBlock(detail.stages, "rk-row-stages", highlight));
    return wrap;
  }

  function stagesBlock(stages, cls, highlight) {
    const box = document.createElement("div");
    box.className = cls;
    for (const s of stages) {
      const card = document.createElement("section");
      card.className = "rk-stage" + (highlight.indexOf(s.key) >= 0 ? " rk-first-change" : "");
      card.dataset.stage = s.key;
      const h = text("h5", s.title);
      h.appendChild(text("span", " — " + (ex.source_text[s.source] || s.source), "rk-source"));
      card.appendChild(h);
      if (s.note) card.appendChild(text("p", s.note, "rk-stage-note"));
      if (s.items.length) {
        const table = document.createElement("table");
        for (const it of s.items) {
          const tr = document.createElement("tr");
          tr.appendChild(text("th", it[1]));
          const td = text("td", it[2]);
          td.dataset.field = it[0];
          tr.appendChild(td);
          table.appendChild(tr);
        }
        card.appendChild(table);
      }
      for (const b of s.blocks) {
        card.appendChild(text("div", b.label, "rk-block-label"));
        const pre = text("pre", "text" in b ? b.text : JSON.stringify(b.json, null, 1));
        pre.dataset.field = b.field;
        pre.dataset.kind = "text" in b ? "text" : "json";
        card.appendChild(pre);
      }
      box.appendChild(card);
    }
    return box;
  }

  function text(tag, value, cls) {
    const el = document.createElement(tag);
    el.textContent = value;
    if (cls) el.className = cls;
    return el;
  }

  refresh();
  timing.openMs = performance.now() - started;
  document.body.dataset.ready = "1";
})();
