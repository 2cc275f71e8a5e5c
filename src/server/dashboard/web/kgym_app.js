// kgym dashboard: navigation. Routes live in the URL fragment: #/ (overview), #/job/<id>, #/runs,
// #/run/<id>[/<source>], #/traj/<id>/<source>/<key>. /v1/ui says which parts this server has data for.
(function () {
  'use strict';
  const kgym = window.kgym;
  const {el} = kgym;
  let stop = null;
  let features = [];

  function nav() {
    const links = [];
    if (features.includes('service')) links.push(['#/', 'Dashboard']);
    if (features.includes('runs')) links.push(['#/runs', 'Runs']);
    const here = location.hash || '#/';
    kgym.clear(document.getElementById('nav'),
               links.map(([href, text]) => el('a', {href, class: here === href || (href !== '#/' && here.startsWith(href.slice(0, -1))) ? 'active' : null}, text)));
  }

  async function route() {
    if (stop) stop();
    stop = null;
    kgym.destroyCharts();
    nav();
    const root = document.getElementById('app');
    const parts = (location.hash || '#/').slice(2).split('/').map(decodeURIComponent);
    try {
      // Each part was written with encodeURIComponent, so a '/' inside an id, source or key is not a separator.
      if (parts[0] === 'job' && parts[1]) stop = kgym.renderJob(root, parts[1]);
      else if (parts[0] === 'runs') await kgym.renderRunList(root);
      else if (parts[0] === 'run' && parts[1]) await kgym.renderRun(root, parts[1], parts[2] || '');
      else if (parts[0] === 'traj' && parts.length === 4) await kgym.renderTrajectory(root, parts[1], parts[2], parts[3]);
      else if (features.includes('service')) stop = kgym.renderDashboard(root);
      else await kgym.renderRunList(root);
    } catch (e) {
      kgym.clear(root, el('div', {class: 'warning'}, e.message));
    }
  }

  function askToken(root) {
    const input = el('input', {type: 'password', size: 40, placeholder: 'bearer token'});
    kgym.clear(root, el('div', {class: 'panel'}, el('h2', null, 'This server needs a token'),
      el('form', {onsubmit: (ev) => { ev.preventDefault(); kgym.setToken(input.value.trim()); start(); }},
         input, ' ', el('button', {type: 'submit'}, 'open'))));
  }

  async function start() {
    try {
      features = (await kgym.api('/v1/ui')).features || [];
    } catch (e) {
      if (e.status === 401) return askToken(document.getElementById('app'));
      kgym.clear(document.getElementById('app'), el('div', {class: 'warning'}, 'Cannot reach the server: ' + e.message));
      return;
    }
    window.addEventListener('hashchange', route);
    route();
  }

  document.addEventListener('DOMContentLoaded', start);
})();
