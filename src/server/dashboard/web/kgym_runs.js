// kgym dashboard: run folders (kgym agent / grade / train output). The run view draws the report data of one
// trajectory source (GET /v1/runs/<id>?source=...: grade, leaderboard, hack families, training metrics, warnings);
// the served page adds the trajectory viewer. A single-file report runs the same code on data embedded in it.
(function () {
  'use strict';
  const kgym = window.kgym;
  const {el, fmt} = kgym;
  const P = ['1', '1.2', '1.5', '2', '3'];

  const pctPoints = (rows, key, label) => rows.filter((r) => kgym.isNum(r[key][label]))
                                              .map((r) => ({x: r.turn, y: 100 * r[key][label]}));
  function fastChart(rows, key, title, testid) {
    return kgym.lineChart(P.map((p) => ({label: 'Fast@' + p, points: pctPoints(rows, key, p)})),
                          {title, x: 'turn', y: '% of samples', yPercent: true, testid});
  }

  function turnTable(sec) {
    return kgym.table([
      {title: 'turn', num: true, get: (r) => fmt.int(r.turn)},
      {title: 'n', num: true, get: (r) => fmt.int(r.n)},
      {title: 'compiled', num: true, get: (r) => fmt.pct(r.compilation_rate)},
      {title: 'correct', num: true, get: (r) => fmt.pct(r.correctness_rate)},
      ...P.map((p) => ({title: 'Fast@' + p, num: true, get: (r) => fmt.pct(r.fast_in_all[p])})),
      {title: 'hacked', num: true, get: (r) => fmt.pct(r.hacking_rate)},
      {title: 'mean speedup (correct)', num: true, get: (r) => fmt.num(r.mean_performance)},
      {title: 'mean reward', num: true, get: (r) => fmt.num(r.mean_reward)},
    ], sec.turns, {testid: 'turn-table'});
  }

  function bestTable(sec) {
    return kgym.table([
      {title: 'turns 1..T', num: true, get: (r) => fmt.int(r.turn)},
      {title: 'n', num: true, get: (r) => fmt.int(r.n)},
      {title: 'correct', num: true, get: (r) => fmt.pct(r.correctness_rate)},
      ...P.map((p) => ({title: 'Fast@' + p, num: true, get: (r) => fmt.pct(r.fast_in_all[p])})),
    ], sec.best_by_turn, {testid: 'best-table'});
  }

  function levelTable(grade) {
    const rows = Object.entries(grade.levels || {});
    return kgym.table([
      {title: 'level', get: (r) => r[0]},
      {title: 'tasks', num: true, get: (r) => fmt.int(r[1].num_tasks)},
      {title: 'samples', num: true, get: (r) => fmt.int(r[1].num_samples)},
      {title: 'final correct', num: true, get: (r) => fmt.pct(r[1].final.correctness_rate)},
      ...P.map((p) => ({title: 'final Fast@' + p, num: true, get: (r) => fmt.pct(r[1].final.fast_in_all[p])})),
      {title: 'best-of-history Fast@1.2', num: true,
       get: (r) => fmt.pct(r[1].best_by_turn.length ? r[1].best_by_turn[r[1].best_by_turn.length - 1].fast_in_all['1.2'] : null)},
      {title: 'hacked turns', num: true, get: (r) => fmt.pct(r[1].hacking_ratio_turns)},
    ], rows, {testid: 'level-table'});
  }

  function levelChart(grade) {
    const levels = Object.keys(grade.levels || {});
    if (levels.length < 1) return null;
    return kgym.chart({
      type: 'bar',
      data: {labels: levels.map((l) => 'level ' + l),
             datasets: P.map((p, i) => ({label: 'Fast@' + p, backgroundColor: kgym.color(i),
                                         data: levels.map((l) => 100 * (grade.levels[l].final.fast_in_all[p] || 0))}))},
      options: {plugins: {title: {display: true, text: 'Final turn Fast@p per level'}, legend: {position: 'bottom'}},
                scales: {y: {min: 0, max: 100, title: {display: true, text: '% of samples'}}}},
    }, 'level-chart');
  }

  function leaderboard(rows, onTask) {
    return kgym.table([
      {title: '#', num: true, get: (r) => String(rows.indexOf(r) + 1)},
      {title: 'task', get: (r) => (onTask ? el('a', {href: onTask(r.task_id)}, r.task_id) : r.task_id)},
      {title: 'level', get: (r) => r.level},
      {title: 'samples', num: true, get: (r) => fmt.int(r.samples)},
      {title: 'correct samples', num: true, get: (r) => fmt.int(r.correct_samples)},
      {title: 'best speedup', num: true, get: (r) => fmt.num(r.best_speedup)},
      {title: 'at turn', num: true, get: (r) => fmt.int(r.best_turn)},
      {title: 'mean final reward', num: true, get: (r) => fmt.num(r.mean_final_reward)},
      {title: 'hacked turns', num: true, get: (r) => fmt.int(r.hacked_turns)},
    ], rows, {testid: 'leaderboard'});
  }

  function summaryCards(s, families) {
    const pass = Object.entries(s.pass_at_k || {}).map(([k, v]) => 'pass@' + k + ' ' + fmt.pct(v)).join(', ');
    const fam = Object.entries(families || {}).map(([f, n]) => f + ' ×' + n).join(', ');
    const last = s.best_by_turn.length ? s.best_by_turn[s.best_by_turn.length - 1] : null;
    return el('div', {class: 'cards'},
              kgym.card('tasks / samples', fmt.int(s.num_tasks) + ' / ' + fmt.int(s.num_samples), 'run-samples',
                        fmt.int(s.max_turn) + ' turns, ' + fmt.int(s.abnormal_turns) + ' abnormal'),
              kgym.card('final Fast@1.2', fmt.pct(s.final.fast_in_all['1.2']), 'run-final-fast12', 'correct ' + fmt.pct(s.final.correctness_rate)),
              kgym.card('best-of-history Fast@1.2', fmt.pct(last ? last.fast_in_all['1.2'] : null), 'run-best-fast12'),
              kgym.card('hacking ratio', fmt.pct(s.hacking_ratio_turns), 'run-hacking',
                        fmt.pct(s.hacking_ratio_samples) + ' of samples' + (fam ? '; ' + fam : '')),
              kgym.card('mean speedup (correct)', fmt.num(s.mean_speedup), 'run-mean-speedup', 'geomean ' + fmt.num(s.geomean_speedup)),
              kgym.card('mean score', fmt.num(s.mean_score), 'run-score', pass || null));
  }

  // One chart per metric group (the prefix before '/'), a line per key against step: new keys need no change here.
  function metricCharts(metrics) {
    const groups = Object.entries(metrics.groups || {});
    if (!groups.length) return [el('p', {class: 'muted'}, 'metrics.jsonl has no numeric keys yet')];
    return [el('div', {class: 'grid2', 'data-testid': 'metric-charts'}, groups.map(([group, keys]) =>
      el('div', {class: 'panel', 'data-metric-group': group}, el('h3', null, group),
         kgym.lineChart(keys.map((k) => ({label: k, points: metrics.rows.filter((r) => kgym.isNum(r[k])).map((r) => ({x: r.step, y: r[k]}))})),
                        {x: 'step', testid: 'metric-chart-' + group}))))];
  }

  function familiesTable(families) {
    const rows = Object.entries(families || {});
    if (!rows.length) return null;
    return [el('h3', null, 'Hacked turns by family'),
            kgym.table([{title: 'family', get: (r) => r[0]}, {title: 'turns', num: true, get: (r) => String(r[1])}], rows,
                       {testid: 'run-families'})];
  }

  // The run view proper, on report data. opts.sourceLink(source) -> href to switch sources (served page only);
  // opts.trajectories: a node with the trajectory list (served page only).
  kgym.renderRunData = function (root, data, opts) {
    opts = opts || {};
    const run = data.run;
    const parts = [kgym.warnings(run.warnings)];
    const srcs = run.sources || [];
    parts.push(el('div', {class: 'panel'},
      el('h2', null, 'Run ', el('span', {'data-testid': 'run-name'}, run.name), ' ', el('span', {class: 'badge'}, run.kind)),
      el('dl', {class: 'facts'}, el('dt', null, 'folder'), el('dd', null, run.path),
         el('dt', null, 'trajectories'), el('dd', null, srcs.length ? (opts.sourceLink
           ? srcs.map((s, i) => [i ? ' · ' : '', s === run.source ? el('b', null, s) : el('a', {href: opts.sourceLink(s)}, s)])
           : run.source) : 'none')),
      el('details', null, el('summary', null, 'config.json'), kgym.json(run.config))));
    if (data.metrics) parts.push(el('div', {class: 'panel'}, el('h2', null, 'Training curves'), metricCharts(data.metrics)));
    if (data.grade) {
      const s = data.grade.overall;
      parts.push(el('h2', null, 'Grade of ', run.source), summaryCards(s, data.hack_families),
                 el('div', {class: 'grid2'},
                    el('div', {class: 'panel'}, fastChart(s.turns, 'fast_in_all', 'Fast@p by turn (all samples)', 'fast-by-turn')),
                    el('div', {class: 'panel'}, fastChart(s.best_by_turn, 'fast_in_all', 'Fast@p, best of turns 1..T', 'fast-best'))),
                 el('div', {class: 'panel'}, el('h3', null, 'Per turn'), turnTable(s), el('h3', null, 'Best of history'), bestTable(s)),
                 el('div', {class: 'panel'}, el('h3', null, 'Per level'), levelChart(data.grade), levelTable(data.grade),
                    familiesTable(data.hack_families)),
                 el('div', {class: 'panel'}, el('h3', null, 'Per-task leaderboard'), leaderboard(data.leaderboard, opts.taskLink)));
    }
    if (opts.trajectories) parts.push(opts.trajectories);
    kgym.clear(root, parts);
  };

  // ---- served page: list of runs, run view with trajectories, one trajectory ----------------------------------
  const runHref = (id, source) => '#/run/' + encodeURIComponent(id) + (source ? '/' + encodeURIComponent(source) : '');
  const trajHref = (id, source, key) => '#/traj/' + [id, source, key].map(encodeURIComponent).join('/');

  kgym.renderRunList = async function (root) {
    const {runs} = await kgym.api('/v1/runs');
    kgym.clear(root, el('h2', null, 'Runs'), runs.length ? kgym.table([
      {title: 'run', get: (r) => el('a', {href: runHref(r.id)}, r.id)},
      {title: 'kind', get: (r) => r.kind},
      {title: 'trajectory sources', get: (r) => r.sources.join(', ') || '–'},
      {title: 'folder', get: (r) => el('span', {class: 'muted'}, r.path)},
    ], runs, {testid: 'run-list'}) : el('p', {class: 'muted'}, 'No run folders (start kgym serve with --runs DIR, or use kgym view DIR).'));
  };

  function trajectoryList(id, source) {
    const box = el('div', {class: 'panel', 'data-testid': 'trajectories'});
    const search = el('input', {type: 'search', placeholder: 'key contains…', size: 30});
    const list = el('div');
    let offset = 0;
    async function load() {
      const page = await kgym.api('/v1/runs/' + encodeURIComponent(id) + '/trajectories' +
                                  kgym.query({source, q: search.value.trim(), offset, limit: 50}));
      kgym.clear(list, kgym.pager(page.total, page.offset, page.limit, (o) => { offset = o; load(); }),
                 kgym.table([
                   {title: 'key', get: (t) => el('a', {href: trajHref(id, source, t.key)}, t.key)},
                   {title: 'level', get: (t) => t.level},
                   {title: 'status', get: (t) => t.status},
                   {title: 'turns', num: true, get: (t) => fmt.int(t.turns)},
                   {title: 'best speedup', num: true, get: (t) => fmt.num(t.best_speedup)},
                   {title: 'final reward', num: true, get: (t) => fmt.num(t.final_reward)},
                   {title: 'final outcome', get: (t) => (t.final_outcome ? kgym.badge(t.final_outcome) : '–')},
                 ], page.trajectories, {testid: 'trajectory-table'}));
    }
    search.addEventListener('input', () => { offset = 0; load(); });
    kgym.clear(box, el('h3', null, 'Trajectories'), el('div', {class: 'controls'}, search), list);
    load();
    return box;
  }

  kgym.renderRun = async function (root, id, source) {
    kgym.clear(root, el('p', {class: 'muted'}, 'Loading run…'));
    const data = await kgym.api('/v1/runs/' + encodeURIComponent(id) + kgym.query({source}));
    kgym.renderRunData(root, data, {sourceLink: (s) => runHref(id, s),
                                    taskLink: null,
                                    trajectories: data.run.source ? trajectoryList(id, data.run.source) : null});
  };

  function resultLine(r) {
    if (!r || typeof r !== 'object') return el('span', {class: 'muted'}, 'no verdict');
    return [kgym.badge(r.outcome || (r.correctness ? 'correct' : 'incorrect')), ' speedup ', fmt.num(r.speedup),
            ', candidate ', fmt.ms(r.kernel_runtime), ', reference ', fmt.ms(r.reference_runtime)];
  }

  kgym.renderTrajectory = async function (root, id, source, key) {
    const rec = await kgym.api('/v1/runs/' + encodeURIComponent(id) + '/trajectory' + kgym.query({source, key}));
    const firstPrompt = Array.isArray(rec.messages) && rec.messages.length ? rec.messages[0].content : null;
    const turns = Array.isArray(rec.turns) ? rec.turns : [];
    kgym.clear(root,
      el('p', null, el('a', {href: runHref(id, source)}, '← run ' + id + ' / ' + source)),
      el('h2', null, 'Trajectory ', el('span', {'data-testid': 'trajectory-key'}, rec.key || key)),
      el('dl', {class: 'facts'}, el('dt', null, 'task'), el('dd', null, rec.task_id || '–'),
         el('dt', null, 'level'), el('dd', null, rec.level || '–'), el('dt', null, 'status'), el('dd', null, rec.status || '–'),
         el('dt', null, 'model'), el('dd', null, rec.model || '–')),
      turns.map((t, i) => el('div', {class: 'turn', 'data-testid': 'turn'},
        el('h3', null, 'Turn ', String(t.turn || i + 1), ' — reward ', el('span', {'data-testid': 'turn-reward'}, fmt.num(t.reward)),
           ' ', t.abnormal ? kgym.badge('abnormal', t.error) : ''),
        el('div', null, resultLine(t.result)),
        t.result && t.result.outcome_detail ? el('pre', {'data-testid': 'turn-detail'}, t.result.outcome_detail) : null,
        t.result && t.result.error_message ? el('pre', {class: 'error', 'data-testid': 'turn-error'}, t.result.error_message) : null,
        el('details', {open: i === 0 ? true : null}, el('summary', null, 'prompt'),
           kgym.pre(i === 0 ? firstPrompt : (turns[i - 1] || {}).feedback_message)),
        el('details', null, el('summary', null, 'response'), kgym.pre(t.response)),
        el('details', {open: true}, el('summary', null, 'extracted code'), el('pre', {'data-testid': 'turn-code'}, t.code || '')),
        el('details', null, el('summary', null, 'gym feedback'), kgym.pre(t.feedback_message)))));
  };

  // ---- single-file report -----------------------------------------------------------------------------------
  kgym.startReport = function (script) {
    const root = document.getElementById('app');
    try {
      kgym.renderRunData(root, JSON.parse(script.textContent));
    } catch (e) {
      kgym.clear(root, el('div', {class: 'warning'}, 'This report could not be drawn: ' + e.message));
    }
  };
})();
