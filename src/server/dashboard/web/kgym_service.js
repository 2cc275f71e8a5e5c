// kgym dashboard: the pages of a running `kgym serve` — the overview (queue, devices, throughput, outcome mix,
// jobs) and one job. Both poll the native API (/v1/dashboard/*, /v1/jobs) every 2 s while they are shown.
(function () {
  'use strict';
  const kgym = window.kgym;
  const {el, fmt} = kgym;
  const POLL_MS = 2000;

  function outcomeCell(row) {
    const label = row.outcome || row.state;
    return [kgym.badge(label), row.hack_family ? el('span', {class: 'muted', 'data-col': 'family'}, ' ', row.hack_family) : null];
  }

  const JOB_COLUMNS = [
    {title: 'task id', key: 'id', get: (r) => el('a', {href: '#/job/' + encodeURIComponent(r.id)}, r.id)},
    {title: 'outcome', key: 'outcome', get: outcomeCell},
    {title: 'device', key: 'device', get: (r) => r.device || '–'},
    {title: 'submitted', key: 'created', get: (r) => fmt.time(r.created_at)},
    {title: 'took', key: 'took', num: true,
     get: (r) => fmt.secs(r.finished_at ? r.finished_at - r.created_at : r.started_at ? Date.now() / 1000 - r.started_at : null)},
    {title: 'speedup', key: 'speedup', num: true, get: (r) => fmt.num(r.speedup)},
    {title: 'kernel', key: 'kernel', num: true, get: (r) => fmt.ms(r.kernel_runtime)},
    {title: 'detail', key: 'detail', get: (r) => el('span', {class: 'muted'}, r.outcome_detail || '')},
  ];

  function summaryCards(s) {
    const q = s.queue || {};
    const mem = s.memory || {};
    return [
      kgym.card('queue depth', fmt.int((q.queued || 0) + (q.retrying || 0)), 'queue-depth',
                q.retrying ? q.retrying + ' waiting to retry' : 'waiting for a slot'),
      kgym.card('oldest queued', s.oldest_queued_age_s === null ? '–' : fmt.secs(s.oldest_queued_age_s), 'queue-age'),
      kgym.card('running', fmt.int(q.running), 'running'),
      kgym.card('evaluations / min', fmt.num(s.throughput.per_minute, 1), 'evals-per-minute', 'over the last 5 minutes'),
      kgym.card('jobs in the store', fmt.int(s.jobs.queued + s.jobs.running + s.jobs.done), 'jobs-stored',
                `${s.jobs.done} done`),
      kgym.card('uptime', fmt.secs(s.uptime_s), 'uptime', s.draining ? 'draining' : (s.mode || '') + ' mode'),
      kgym.card('host memory', fmt.pct((mem.memory_percent || 0) / 100, 0), 'host-memory',
                s.admission ? 'admission ' + fmt.bytes(s.admission.reserved_bytes) + ' of ' + fmt.bytes(s.admission.budget_bytes)
                            : fmt.bytes(mem.memory_available) + ' available'),
    ];
  }

  function devicesTable(s) {
    if (!(s.devices || []).length)  // many-node mode: the workers' devices are known from the jobs they run
      return (s.running_jobs || []).length
        ? kgym.table([{title: 'running job', get: (j) => el('a', {href: '#/job/' + encodeURIComponent(j.id)}, j.id)},
                      {title: 'device', get: (j) => j.device || '–'},
                      {title: 'for', num: true, get: (j) => fmt.secs(j.running_s)}], s.running_jobs, {testid: 'devices'})
        : el('p', {class: 'muted'}, 'No device reports here and nothing running (workers of a Redis queue report through their jobs).');
    const gpus = {};
    for (const g of s.gpus || []) gpus[g.device] = g;
    return kgym.table([
      {title: 'device', get: (d) => d.name},
      {title: 'health', get: (d) => kgym.badge(d.health || 'online')},
      {title: 'slots', num: true, get: (d) => fmt.int(d.slots)},
      {title: 'running', num: true, get: (d) => fmt.int(d.running)},
      {title: 'busy', num: true, get: (d) => fmt.pct(d.busy_fraction)},
      {title: 'current jobs', get: (d) => (d.current_jobs || []).map((j, i) => [i ? ', ' : '',
        el('a', {href: '#/job/' + encodeURIComponent(j.id)}, j.id), el('span', {class: 'muted'}, ' ' + fmt.secs(j.running_s))])},
      {title: 'GPU memory', num: true, get: (d) => (gpus[d.name] ? fmt.bytes(gpus[d.name].memory_used_mib * 1048576) + ' / ' +
                                                   fmt.bytes(gpus[d.name].memory_total_mib * 1048576) : '–')},
      {title: 'GPU util', num: true, get: (d) => (gpus[d.name] ? fmt.int(gpus[d.name].utilization_percent) + '%' : '–')},
    ], s.devices || [], {testid: 'devices'});
  }

  function countsTable(counts, title, testidPrefix) {
    const rows = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);
    if (!rows.length) return el('p', {class: 'muted'}, 'none yet');
    return kgym.table([{title, get: (r) => r[0]},
                       {title: 'jobs', num: true, get: (r) => el('span', {'data-testid': testidPrefix + r[0]}, String(r[1]))}],
                      rows);
  }

  // Stacked bars of finished jobs per bucket and outcome; the tooltip lists the hack families of a bucket.
  function outcomeChartConfig(timeline) {
    return {
      type: 'bar',
      data: {labels: [], datasets: kgym.OUTCOMES.map((o) => ({label: o, data: [], backgroundColor: kgym.OUTCOME_COLORS[o]}))},
      options: {scales: {x: {stacked: true}, y: {stacked: true, beginAtZero: true, ticks: {precision: 0}}},
                plugins: {legend: {position: 'bottom', labels: {boxWidth: 12}},
                          tooltip: {callbacks: {footer: (items) => {
                            const b = timeline.buckets && timeline.buckets[items[0].dataIndex];
                            const fam = b ? Object.entries(b.hack_families) : [];
                            return fam.length ? 'hacks: ' + fam.map(([f, n]) => f + ' ×' + n).join(', ') : '';
                          }}}}},
    };
  }

  function updateTimelineCharts(mix, rate, timeline) {
    const labels = timeline.buckets.map((b) => fmt.clock(b.t));
    const m = mix.chartOf && mix.chartOf();
    if (m) {
      m.data.labels = labels;
      m.data.datasets.forEach((ds) => { ds.data = timeline.buckets.map((b) => b.outcomes[ds.label] || 0); });
      m.options.plugins.tooltip.callbacks = outcomeChartConfig(timeline).options.plugins.tooltip.callbacks;
      m.update('none');
    }
    const r = rate.chartOf && rate.chartOf();
    if (r) {
      r.data.labels = labels;
      r.data.datasets[0].data = timeline.buckets.map((b) => (b.total * 60) / timeline.bucket_s);
      r.update('none');
    }
  }

  // The overview. Returns a function that stops its polling.
  kgym.renderDashboard = function (root) {
    const state = {q: '', outcome: '', offset: 0, limit: 50, stopped: false};
    const cards = el('div', {class: 'cards', 'data-testid': 'cards'});
    const devices = el('div');
    const totals = el('div', {class: 'grid2'});
    const timeline0 = {buckets: [], bucket_s: 60};
    const mix = kgym.chart(outcomeChartConfig(timeline0), 'outcome-chart');
    const rate = kgym.chart({type: 'line', data: {labels: [], datasets: [{label: 'evaluations per minute', data: [],
                                                  borderColor: '#1f77b4', pointRadius: 0, fill: true,
                                                  backgroundColor: 'rgba(31,119,180,.15)'}]},
                             options: {scales: {y: {beginAtZero: true}}, plugins: {legend: {position: 'bottom'}}}}, 'rate-chart');
    const search = el('input', {type: 'search', placeholder: 'task id contains…', 'data-testid': 'job-search', size: 30});
    const outcome = el('select', {'data-testid': 'job-outcome-filter'}, el('option', {value: ''}, 'any outcome'),
                       ['queued', 'running', ...kgym.OUTCOMES].map((o) => el('option', {value: o}, o)));
    const jobs = el('div', {'data-testid': 'jobs'});
    const error = el('div');
    let timer = null;
    search.addEventListener('input', () => { state.q = search.value.trim(); state.offset = 0; refreshJobs(); });
    outcome.addEventListener('change', () => { state.outcome = outcome.value; state.offset = 0; refreshJobs(); });

    let asked = 0;
    async function refreshJobs() {
      const mine = ++asked;  // a slower, older answer must not replace a newer one
      const page = await kgym.api('/v1/jobs' + kgym.query({q: state.q, outcome: state.outcome, offset: state.offset,
                                                           limit: state.limit}));
      if (state.stopped || mine !== asked) return;
      kgym.clear(jobs, kgym.pager(page.total, page.offset, page.limit, (o) => { state.offset = o; refreshJobs(); }, 'jobs-range'),
                 kgym.table(JOB_COLUMNS, page.jobs, {testid: 'job-table', rowAttrs: (r) => ({'data-job-id': r.id})}),
                 el('span', {hidden: true, 'data-testid': 'jobs-total'}, String(page.total)));
    }
    async function refresh() {
      try {
        const [s, t] = await Promise.all([kgym.api('/v1/dashboard/summary'),
                                          kgym.api('/v1/dashboard/timeline?window_s=3600&bucket_s=60')]);
        if (state.stopped) return;
        kgym.clear(cards, summaryCards(s));
        kgym.clear(devices, devicesTable(s));
        kgym.clear(totals, el('div', null, el('h3', null, 'Outcomes in the store'), countsTable(s.outcomes, 'outcome', 'outcome-count-')),
                   el('div', null, el('h3', null, 'Hacks caught, by family'), countsTable(s.hack_families, 'hack family', 'family-count-')));
        updateTimelineCharts(mix, rate, t);
        await refreshJobs();
        kgym.clear(error);
        document.getElementById('status') && (document.getElementById('status').textContent = 'updated ' + new Date().toLocaleTimeString());
      } catch (e) {
        kgym.clear(error, el('div', {class: 'warning'}, 'Could not reach the server: ' + e.message));
      }
      if (!state.stopped) timer = setTimeout(refresh, POLL_MS);
    }
    kgym.clear(root, error, cards,
               el('div', {class: 'panel'}, el('h2', null, 'Workers and devices'), devices),
               el('div', {class: 'grid2'},
                  el('div', {class: 'panel'}, el('h2', null, 'Outcome mix, last hour (per minute)'), mix),
                  el('div', {class: 'panel'}, el('h2', null, 'Evaluations per minute'), rate)),
               el('div', {class: 'panel'}, totals),
               el('div', {class: 'panel'}, el('h2', null, 'Jobs'), el('div', {class: 'controls'}, search, outcome), jobs));
    refresh();
    return () => { state.stopped = true; clearTimeout(timer); };
  };

  // ---- one job ----------------------------------------------------------------------------------------------
  // result.timing.{reference,kernel}: n, median_ms, mean_ms, min_ms, max_ms, stddev_ms, samples_ms.
  function timingSeries(result) {
    const t = result.timing || {};
    return [['reference', t.reference], ['candidate', t.kernel]].filter((r) => r[1]);
  }

  function timingTable(result) {
    const rows = timingSeries(result);
    if (!rows.length) return el('p', {class: 'muted'}, 'not timed');
    return kgym.table([
      {title: '', get: (r) => r[0]},
      ...['median', 'mean', 'min', 'max', 'stddev'].map((k) => ({title: k + ' (ms)', num: true, get: (r) => fmt.num(r[1][k + '_ms'], 4)})),
      {title: 'calls', num: true, get: (r) => fmt.int(r[1].n)},
    ], rows, {testid: 'timing-table'});
  }

  function timingChart(result) {
    const series = timingSeries(result).filter((r) => Array.isArray(r[1].samples_ms) && r[1].samples_ms.length)
      .map(([label, t]) => ({label, points: t.samples_ms.map((y, i) => ({x: i + 1, y}))}));
    if (!series.length) return null;
    return kgym.lineChart(series, {x: 'timed call', y: 'ms', showLine: false, testid: 'timing-chart'});
  }

  // Coverage keys and kernel lists of the result's metadata (their names vary with the device and backend).
  function coverageAndKernels(meta) {
    const cov = Object.entries(meta).filter(([k, v]) => /coverage/.test(k) && typeof v !== 'object');
    const kernels = Object.entries(meta).filter(([k, v]) => /kernel/.test(k) && Array.isArray(v));
    const parts = [];
    if (cov.length) parts.push(kgym.table([{title: 'coverage', get: (r) => r[0]}, {title: 'value', num: true, get: (r) => String(r[1])}], cov));
    for (const [k, list] of kernels)
      parts.push(el('h3', null, k), list.length ? el('ul', null, list.map((x) => el('li', null, typeof x === 'string' ? x : JSON.stringify(x))))
                                                : el('p', {class: 'muted'}, 'none'));
    return parts.length ? parts : [el('p', {class: 'muted'}, 'no coverage or kernel list in this result (CPU evaluations have none)')];
  }

  function phaseTable(meta) {
    const phases = meta.phase_s && typeof meta.phase_s === 'object' ? Object.entries(meta.phase_s) : [];
    if (!phases.length) return null;
    return kgym.table([{title: 'phase', get: (r) => r[0]}, {title: 'seconds', num: true, get: (r) => fmt.num(r[1])}], phases);
  }

  function jobView(job) {
    const r = job.result || {};
    const meta = r.metadata || {};
    const req = job.request || {};
    const facts = [
      ['state', kgym.badge(job.state)],
      ['outcome', el('span', {'data-testid': 'job-outcome'}, job.outcome || '–')],
      ['hack family', el('span', {'data-testid': 'job-hack-family'}, job.hack_family || '–')],
      ['speedup', el('span', {'data-testid': 'job-speedup'}, fmt.num(job.speedup))],
      ['device', job.device || '–'], ['attempts', fmt.int(job.attempts)], ['backend', req.backend || '–'],
      ['submitted', fmt.time(job.created_at)], ['started', fmt.time(job.started_at)], ['finished', fmt.time(job.finished_at)],
      ['waited in queue', fmt.secs(job.started_at ? job.started_at - job.created_at : null)],
      ['ran for', fmt.secs(job.finished_at && job.started_at ? job.finished_at - job.started_at : null)],
    ];
    const chart = job.result ? timingChart(r) : null;
    return [
      el('h2', null, 'Job ', el('span', {'data-testid': 'job-id'}, job.id), ' ', kgym.badge(job.outcome || job.state)),
      el('div', {class: 'grid2'},
         el('div', {class: 'panel'}, el('h3', null, 'Verdict'),
            el('dl', {class: 'facts'}, facts.map(([k, v]) => [el('dt', null, k), el('dd', null, v)])),
            el('h3', null, 'outcome_detail'), el('pre', {'data-testid': 'job-detail'}, r.outcome_detail || ''),
            r.error_message ? [el('h3', null, 'error_message ', el('span', {class: 'muted'}, r.error_code || '')),
                               el('pre', {'data-testid': 'job-error'}, r.error_message)] : null),
         el('div', {class: 'panel'}, el('h3', null, 'Timings'), timingTable(r),
            chart ? [el('h3', null, 'Per-call times'), chart] : null,
            phaseTable(meta) ? [el('h3', null, 'Where the time went'), phaseTable(meta)] : null)),
      el('div', {class: 'panel'}, el('h3', null, 'Coverage and kernels'), coverageAndKernels(meta)),
      el('div', {class: 'grid2'},
         el('div', {class: 'panel'}, el('h3', null, 'Reference'), el('pre', {'data-testid': 'job-reference'}, req.reference_code || '')),
         el('div', {class: 'panel'}, el('h3', null, 'Candidate'), el('pre', {'data-testid': 'job-candidate'}, req.kernel_code || ''))),
      el('div', {class: 'panel'}, el('details', null, el('summary', null, 'correctness_detail and metadata'),
                                     kgym.json({correctness_detail: r.correctness_detail, metadata: meta}))),
    ];
  }

  kgym.renderJob = function (root, id) {
    let stopped = false, timer = null;
    async function refresh() {
      try {
        const job = await kgym.api('/v1/jobs/' + encodeURIComponent(id));
        if (stopped) return;
        kgym.destroyCharts();
        kgym.clear(root, jobView(job));
        if (job.state !== 'done') timer = setTimeout(refresh, POLL_MS);
      } catch (e) {
        if (!stopped) kgym.clear(root, el('div', {class: 'warning'}, 'Job ', id, ': ', e.message));
      }
    }
    kgym.clear(root, el('p', {class: 'muted'}, 'Loading job…'));
    refresh();
    return () => { stopped = true; clearTimeout(timer); };
  };
})();
