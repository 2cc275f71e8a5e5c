// kgym dashboard: shared pieces. Plain JavaScript (no build step), one global namespace `kgym`, so the same files
// run in the served page and inline in a single-file report. Every value that comes from a job or a run is put
// into the page as text (textContent / text nodes), never parsed as HTML.
(function () {
  'use strict';
  const kgym = (window.kgym = window.kgym || {});

  function appendAll(parent, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  // el('td', {class: 'num', 'data-testid': 'x'}, 'text', node, [more]). Attributes are set as strings; handlers
  // are given as on<event> functions.
  kgym.el = function (tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else if (k === 'class') e.className = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    appendAll(e, children);
    return e;
  };
  const el = kgym.el;

  kgym.clear = function (node, ...children) {
    node.replaceChildren();
    appendAll(node, children);
    return node;
  };

  // ---- formatting -------------------------------------------------------------------------------------------
  const isNum = (x) => typeof x === 'number' && Number.isFinite(x);
  kgym.fmt = {
    num: (x, digits = 3) => (isNum(x) ? x.toFixed(digits) : '–'),
    int: (x) => (isNum(x) ? String(Math.round(x)) : '–'),
    pct: (x, digits = 1) => (isNum(x) ? (100 * x).toFixed(digits) + '%' : '–'),
    ms: (x) => (isNum(x) && x >= 0 ? x.toFixed(3) + ' ms' : '–'),
    secs(x) {
      if (!isNum(x)) return '–';
      if (x < 60) return x.toFixed(1) + ' s';
      if (x < 3600) return Math.floor(x / 60) + ' min ' + Math.round(x % 60) + ' s';
      if (x < 86400) return Math.floor(x / 3600) + ' h ' + Math.round((x % 3600) / 60) + ' min';
      return Math.floor(x / 86400) + ' d ' + Math.round((x % 86400) / 3600) + ' h';
    },
    time: (unix) => (isNum(unix) && unix > 0 ? new Date(unix * 1000).toLocaleString() : '–'),
    clock: (unix) => new Date(unix * 1000).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'}),
    bytes(x) {
      if (!isNum(x)) return '–';
      const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      while (x >= 1024 && i < u.length - 1) { x /= 1024; i++; }
      return x.toFixed(i ? 1 : 0) + ' ' + u[i];
    },
  };
  kgym.isNum = isNum;

  // ---- outcomes ---------------------------------------------------------------------------------------------
  kgym.OUTCOMES = ['correct', 'incorrect', 'compile_error', 'runtime_error', 'timeout', 'crashed',
                   'resource_exhausted', 'hacked', 'invalid', 'cancelled'];
  kgym.OUTCOME_COLORS = {correct: '#43a047', incorrect: '#e53935', compile_error: '#fb8c00', runtime_error: '#d81b60',
                         timeout: '#8e24aa', crashed: '#6d4c41', resource_exhausted: '#5e35b1', hacked: '#212121',
                         invalid: '#90a4ae', cancelled: '#cfd8dc', queued: '#64b5f6', running: '#1e88e5'};
  kgym.badge = (label, extra) =>
    el('span', {class: 'badge ' + String(label).replace(/[^a-z_]/g, ''), title: extra || null}, label);

  // ---- data from the server ---------------------------------------------------------------------------------
  const TOKEN_KEY = 'kgym-token';
  kgym.token = () => sessionStorage.getItem(TOKEN_KEY) || '';
  kgym.setToken = (t) => sessionStorage.setItem(TOKEN_KEY, t);
  kgym.api = async function (path) {
    const headers = {Accept: 'application/json'};
    if (kgym.token()) headers.Authorization = 'Bearer ' + kgym.token();
    const r = await fetch(path, {headers, cache: 'no-store'});
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok) {
      const err = new Error((body && body.detail) || ('HTTP ' + r.status));
      err.status = r.status;
      throw err;
    }
    return body;
  };
  kgym.query = (params) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
    const s = q.toString();
    return s ? '?' + s : '';
  };

  // ---- charts (Chart.js, from Debian's libjs-chart.js) -------------------------------------------------------
  const charts = [];
  if (window.Chart) {
    Chart.defaults.animation = false;
    Chart.defaults.maintainAspectRatio = false;
    Chart.defaults.font.family = 'system-ui, sans-serif';
  }
  // A chart in a fixed-height box; kept so a view change can destroy it.
  kgym.chart = function (config, testid) {
    const canvas = el('canvas', {'data-testid': testid || null});
    const box = el('div', {class: 'chart-box'}, canvas);
    if (window.Chart) charts.push(new Chart(canvas, config));
    else box.append(el('p', {class: 'error'}, 'Chart.js did not load'));
    box.chartOf = () => charts.find((c) => c.canvas === canvas);
    return box;
  };
  kgym.destroyCharts = function () {
    while (charts.length) charts.pop().destroy();
  };
  const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                   '#bcbd22', '#17becf'];
  kgym.color = (i) => PALETTE[i % PALETTE.length];
  // Line chart of series [{label, points: [{x, y}]}] against a numeric x axis.
  kgym.lineChart = function (series, opts) {
    opts = opts || {};
    return kgym.chart({
      type: 'line',
      data: {datasets: series.map((s, i) => ({label: s.label, data: s.points, borderColor: s.color || kgym.color(i),
                                               backgroundColor: s.color || kgym.color(i), pointRadius: s.points.length > 60 ? 0 : 2,
                                               borderWidth: 2, spanGaps: true, showLine: opts.showLine !== false}))},
      options: {parsing: false, normalized: true,
                plugins: {title: {display: !!opts.title, text: opts.title}, legend: {position: 'bottom'}},
                scales: {x: {type: 'linear', title: {display: !!opts.x, text: opts.x}, ticks: {precision: 0}},
                         y: {title: {display: !!opts.y, text: opts.y}, ...(opts.yPercent ? {min: 0, max: 100} : {})}}},
    }, opts.testid);
  };

  // ---- tables -----------------------------------------------------------------------------------------------
  // columns: [{title, num, get(row) -> string | Node}]; onRow(row) makes rows clickable.
  kgym.table = function (columns, rows, opts) {
    opts = opts || {};
    const head = el('tr', null, columns.map((c) => el('th', {class: c.num ? 'num' : null}, c.title)));
    const body = rows.map((r) => el('tr', Object.assign({class: opts.onRow ? 'clickable' : null,
                                                         onclick: opts.onRow ? () => opts.onRow(r) : null},
                                                        opts.rowAttrs ? opts.rowAttrs(r) : {}),
                                    columns.map((c) => el('td', {class: c.num ? 'num' : null,
                                                                 'data-col': c.key || null}, c.get(r)))));
    return el('table', {'data-testid': opts.testid || null}, el('thead', null, head), el('tbody', null, body));
  };

  kgym.card = (label, value, testid, sub) =>
    el('div', {class: 'card'}, el('div', {class: 'label'}, label),
       el('div', {class: 'value', 'data-testid': testid || null}, value), sub ? el('div', {class: 'sub'}, sub) : null);

  kgym.pre = (text, cls) => el('pre', {class: cls || null}, text === null || text === undefined ? '' : String(text));
  kgym.json = (value) => kgym.pre(JSON.stringify(value, null, 2));

  kgym.warnings = (list) =>
    (list || []).map((w) => el('div', {class: 'warning', role: 'alert', 'data-testid': 'run-warning'}, '⚠ ', w));

  // A pager: "first–last of total" with previous / next buttons.
  kgym.pager = function (total, offset, limit, go, testid) {
    const first = total ? offset + 1 : 0, last = Math.min(total, offset + limit);
    return el('div', {class: 'controls'},
              el('button', {onclick: () => go(Math.max(0, offset - limit)), disabled: offset <= 0}, '← previous'),
              el('span', {'data-testid': testid || null}, `${first}–${last} of ${total}`),
              el('button', {onclick: () => go(offset + limit), disabled: offset + limit >= total}, 'next →'));
  };
})();
