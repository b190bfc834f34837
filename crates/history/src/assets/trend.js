// The trend charts: per series the commits' medians, each level's mean and its noise band
// (mean ± 2σ), and the change points; a click on a point goes to its row (and its runs).
(function () {
  'use strict';
  var st = window.volleySelftest || { errors: [], violations: [], alerts: 0 };
  var data = JSON.parse(document.getElementById('data').textContent);
  var charts = [];

  function levelAt(levels, i, key) {
    for (var k = 0; k < levels.length; k++) {
      var l = levels[k];
      if (i >= l.from && i < l.to) return key === 'mean' ? l.mean : l.mean + key * 2 * l.std;
    }
    return null;
  }

  function draw(t, n) {
    var el = document.getElementById('chart-' + n);
    if (!el) return;
    var xs = t.points.map(function (p, i) { return i; });
    var med = t.points.map(function (p) { return p.median; });
    var mean = xs.map(function (i) { return levelAt(t.levels, i, 'mean'); });
    var hi = xs.map(function (i) { return levelAt(t.levels, i, 1); });
    var lo = xs.map(function (i) { return levelAt(t.levels, i, -1); });
    var cp = t.points.map(function (p) { return p.change ? p.median : null; });
    var labels = t.points.map(function (p) { return p.label; });
    // Runs saved without a commit are points of their own, labelled by run.
    var noun = t.points.some(function (p) { return p.commit; }) ? 'commit' : 'run';
    var opts = {
      width: Math.max(320, el.clientWidth || 800),
      height: 260,
      scales: { x: { time: false } },
      axes: [
        { values: function (u, ticks) { return ticks.map(function (v) { return labels[v] || ''; }); } },
        { label: t.metric, size: 70 }
      ],
      series: [
        { label: noun, value: function (u, v) { return v == null ? '' : labels[v]; } },
        { label: 'noise band (+2σ)', stroke: 'rgba(120,140,170,0.5)', width: 1, dash: [4, 4] },
        { label: 'noise band (−2σ)', stroke: 'rgba(120,140,170,0.5)', width: 1, dash: [4, 4] },
        { label: 'level', stroke: '#8895a7', width: 1 },
        { label: t.metric + ' (median)', stroke: '#1f6feb', width: 2, points: { show: true, size: 6 } },
        { label: 'change point', stroke: '#d1242f', width: 0, points: { show: true, size: 12, fill: '#d1242f' } }
      ],
      bands: [{ series: [1, 2], fill: 'rgba(120,140,170,0.15)' }],
      hooks: {
        ready: [function (u) {
          u.over.addEventListener('click', function () {
            var i = u.cursor.idx;
            if (i != null) location.hash = 'p-' + n + '-' + i;
          });
        }]
      }
    };
    var u = new uPlot(opts, [xs, hi, lo, mean, med, cp], el);
    charts.push(u);
  }

  data.trends.forEach(function (t, n) {
    try { draw(t, n); } catch (e) { st.errors.push('chart ' + n + ': ' + e); }
  });

  function selftest() {
    var el = document.getElementById('selftest');
    if (!el) return;
    el.setAttribute('data-errors', st.errors.length);
    el.setAttribute('data-violations', st.violations.length);
    el.setAttribute('data-alerts', st.alerts);
    el.setAttribute('data-charts', charts.length);
    el.setAttribute('data-changes', document.querySelectorAll('tr.change').length);
    el.setAttribute('data-canvases', Array.prototype.filter.call(document.querySelectorAll('canvas'),
      function (c) { return c.width > 0 && c.height > 0; }).length);
    el.setAttribute('data-done', '1');
    el.textContent = st.errors.concat(st.violations).join('\n');
  }
  setTimeout(selftest, 300);
})();
