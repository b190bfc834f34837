// volley live dashboard: reads the run's server-sent events (meta, then a tick a second, then
// end), draws them with uPlot, and computes exact percentiles over any selected window from
// the seconds' HDR histograms (merged bucket by bucket, never from rounded percentiles).
// At the end the page becomes the final report, the same document `--html` writes.
(function () {
  'use strict';
  var token = new URLSearchParams(location.search).get('token') || '';
  var $ = function (id) { return document.getElementById(id); };
  var state = { meta: null, ticks: [], hists: [], hdr: null, first: 0, over: false, charts: [], sel: null };
  var queue = Promise.resolve();

  // ---- HdrHistogram V2 (compressed, base64) -> sparse counts --------------------------------
  function b64(s) {
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function inflate(bytes) {
    var ds = new DecompressionStream('deflate');
    var stream = new Blob([bytes]).stream().pipeThrough(ds);
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }
  function decode(text) {
    var raw = b64(text);
    var dv = new DataView(raw.buffer);
    var len = dv.getUint32(4);
    return inflate(raw.subarray(8, 8 + len)).then(function (v) {
      var d = new DataView(v.buffer);
      var payload = d.getUint32(4), sig = d.getUint32(12);
      var lowest = Number(d.getBigUint64(16));
      var idx = [], cnt = [], i = 0, p = 40, end = 40 + payload;
      while (p < end) {
        var n = 0, mul = 1, b;
        do { b = v[p++]; n += (b & 0x7f) * mul; mul *= 128; } while (b & 0x80 && p < end);
        var z = (n % 2 === 0) ? n / 2 : -(n + 1) / 2;
        if (z < 0) { i += -z; } else { if (z > 0) { idx.push(i); cnt.push(z); } i++; }
      }
      return { sig: sig, lowest: lowest, idx: idx, cnt: cnt };
    });
  }
  // The bucket layout of (significant figures, lowest discernible value), as HdrHistogram has it.
  function layout(sig, lowest) {
    var largest = 2 * Math.pow(10, sig);
    var subMag = Math.ceil(Math.log2(largest));
    var halfMag = subMag > 1 ? subMag - 1 : 0;
    var unit = Math.floor(Math.log2(lowest));
    return { halfMag: halfMag, half: Math.pow(2, halfMag), unit: unit };
  }
  function bucketOf(L, i) {
    var b = Math.floor(i / L.half) - 1, sub = (i % L.half) + L.half;
    if (b < 0) { sub -= L.half; b = 0; }
    return { low: sub * Math.pow(2, b + L.unit), size: Math.pow(2, b + L.unit) };
  }
  function highest(L, i) { var k = bucketOf(L, i); return k.low + k.size - 1; }
  // Percentiles of a merged set of sparse histograms, as hdrhistogram's value_at_quantile.
  function stats(list) {
    if (!list.length) return null;
    var L = state.hdr, merged = new Map(), total = 0;
    list.forEach(function (h) {
      for (var k = 0; k < h.idx.length; k++) {
        merged.set(h.idx[k], (merged.get(h.idx[k]) || 0) + h.cnt[k]);
        total += h.cnt[k];
      }
    });
    if (!total) return { count: 0 };
    var keys = Array.from(merged.keys()).sort(function (a, b) { return a - b; });
    function at(q) {
      var want = Math.max(1, Math.ceil(q * total)), run = 0;
      for (var k = 0; k < keys.length; k++) {
        run += merged.get(keys[k]);
        if (run >= want) return highest(L, keys[k]);
      }
      return highest(L, keys[keys.length - 1]);
    }
    return { count: total, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: highest(L, keys[keys.length - 1]) };
  }

  // ---- formatting ----------------------------------------------------------------------------
  function us(v) {
    if (v == null) return '—';
    if (v < 1000) return v.toFixed(0) + ' µs';
    if (v < 1e6) return (v / 1000).toPrecision(3) + ' ms';
    return (v / 1e6).toPrecision(3) + ' s';
  }
  function num(v) { return v == null ? '—' : Math.round(v).toLocaleString('en-US'); }
  function fmt(unit, v) {
    if (v == null) return '—';
    if (unit === 'µs') return us(v);
    if (unit === 'MiB') return v.toFixed(1) + ' MiB';
    return num(v);
  }
  function clock(s) { var m = Math.floor(s / 60); return m + ':' + String(Math.floor(s % 60)).padStart(2, '0'); }

  // ---- charts --------------------------------------------------------------------------------
  var palette = ['--c0', '--c1', '--c2', '--c3', '--c4', '--c5'].map(function (v) {
    return getComputedStyle(document.documentElement).getPropertyValue(v).trim() || '#1f77b4';
  });
  var sync = uPlot.sync('volley-live');
  var specs = [
    { title: 'Throughput (per second)', unit: '', series: ['target', 'sent', 'completed'] },
    { title: 'Corrected latency', unit: 'µs', series: ['p50', 'p99', 'p99.9', 'max'], log: true },
    { title: 'Service time', unit: 'µs', series: ['p50', 'p99', 'p99.9', 'max'], log: true },
    { title: 'Errors and failed responses (per second)', unit: '', series: ['connect', 'timeout', 'reset', 'protocol', 'closed', 'failed'] },
    { title: 'Virtual users and connections opened (per second)', unit: '', series: ['users', 'connections opened'] },
    { title: 'Client CPU (% of one core)', unit: '%', series: ['volley', 'cores × 100'] },
    { title: 'Server CPU (% of one core; --pid)', unit: '%', series: ['user', 'system'] },
    { title: 'Server resident memory (--pid)', unit: 'MiB', series: ['RSS'] },
    { title: 'Server syscalls and context switches (per second; --pid)', unit: '', series: ['syscalls', 'context switches'] },
    { title: 'Server GC: stop-the-world ms per second (--pid: a JVM\'s counters, or --gc-log)', unit: '', series: ['paused ms', 'pauses'] }
  ];
  function makeCharts() {
    var box = $('charts');
    specs.forEach(function (sp, n) {
      var fig = document.createElement('figure');
      var cap = document.createElement('figcaption');
      cap.textContent = sp.title;
      fig.appendChild(cap);
      box.appendChild(fig);
      var series = [{ label: 't (s)', value: function (u, v) { return v == null ? '' : clock(v); } }];
      sp.series.forEach(function (name, i) {
        series.push({ label: name, stroke: palette[i % palette.length], width: 1.5, spanGaps: false,
          dash: name === 'target' || name === 'cores × 100' ? [6, 4] : undefined,
          value: function (u, v) { return fmt(sp.unit, v); } });
      });
      var opts = {
        width: 680, height: 220, series: series,
        cursor: { sync: { key: sync.key, setSeries: false }, drag: { x: true, y: false } },
        scales: { x: { time: false }, y: sp.log ? { distr: 3 } : {} },
        axes: [{ incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200], values: function (u, vals) { return vals.map(clock); } },
               { size: 70, values: function (u, vals) { return vals.map(function (v) { return fmt(sp.unit, v); }); } }],
        hooks: { setSelect: [function (u) {
          if (u.select.width < 2) return;
          var a = u.posToVal(u.select.left, 'x'), b = u.posToVal(u.select.left + u.select.width, 'x');
          select(Math.floor(a), Math.ceil(b));
        }] }
      };
      var data = [[]].concat(sp.series.map(function () { return []; }));
      state.charts.push({ plot: new uPlot(opts, data, fig), spec: sp, n: n });
      fig.addEventListener('dblclick', function () { select(null); });
    });
  }
  function columns() {
    var t = state.ticks, col = function (f) { return t.map(f); };
    var x = col(function (k) { return k.t_s; });
    var per = function (k, v) { return v / (k.interval_s || 1); };
    return [
      [x, col(function (k) { return k.target_rps; }), col(function (k) { return per(k, k.sent); }), col(function (k) { return per(k, k.completed); })],
      [x].concat(['p50', 'p99', 'p999', 'max'].map(function (p) { return col(function (k) { return k.lat && k.lat.count ? k.lat[p] : null; }); })),
      [x].concat(['p50', 'p99', 'p999', 'max'].map(function (p) { return col(function (k) { return k.svc && k.svc.count ? k.svc[p] : null; }); })),
      [x].concat(['connect', 'timeout', 'reset', 'protocol', 'closed'].map(function (e) { return col(function (k) { return per(k, k.errors[e]); }); }), [col(function (k) { return per(k, k.failed); })]),
      [x, col(function (k) { return k.users; }), col(function (k) { return per(k, k.connections_opened); })],
      [x, col(function (k) { return k.client.cpu_pct; }), col(function (k) { return k.client.cores * 100; })],
      [x, col(function (k) { return k.server ? k.server.cpu_user_pct : null; }), col(function (k) { return k.server ? k.server.cpu_sys_pct : null; })],
      [x, col(function (k) { return k.server ? k.server.rss_bytes / 1048576 : null; })],
      [x, col(function (k) { return k.server ? k.server.syscalls_per_s : null; }), col(function (k) { return k.server ? k.server.ctx_switches_per_s : null; })],
      [x, gcDelta('pause_total_ms'), gcDelta('pause_count')]
    ];
  }
  // A JVM's cumulative pauses as per-second amounts (null where there is no JVM).
  function gcDelta(key) {
    var prev = null;
    return state.ticks.map(function (k) {
      var g = k.server && k.server.gc;
      if (!g) { prev = null; return null; }
      // The first second seen has no second before it: no amount (not the total so far).
      var v = prev == null ? null : Math.max(0, g[key] - prev);
      prev = g[key];
      return v;
    });
  }
  var drawPending = false;
  function redraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(function () {
      drawPending = false;
      if (state.gone) return;
      var cols = columns();
      state.charts.forEach(function (c, i) {
        c.plot.setData(cols[i]);
        // A chart with nothing to draw (users outside a ramp) is hidden.
        var any = cols[i].slice(1).some(function (s) { return s.some(function (v) { return v != null; }); });
        c.plot.root.parentNode.style.display = any ? '' : 'none';
      });
      showWindow();
      var last = state.ticks[state.ticks.length - 1];
      if (!state.over && last) {
        var m = state.meta || {};
        status('Running: ' + clock(last.t_s + last.interval_s) + (m.duration_s ? ' of ' + clock(m.duration_s) : '') +
          ' · ' + num(last.completed / (last.interval_s || 1)) + ' responses/s in the last second', '');
      }
      window.volleyLive.draws++;
    });
  }

  // ---- the selected window -------------------------------------------------------------------
  function select(from, to) {
    // The report has replaced this page: its own window is selected there.
    if (state.gone) return null;
    state.sel = (from == null) ? null : { from: Math.max(0, from), to: Math.max(from + 1, to) };
    showWindow();
    return window.volleyLive.window;
  }
  function showWindow() {
    if (state.gone) return;
    var sel = state.sel, lat = [], svc = [];
    state.ticks.forEach(function (k, i) {
      if (!sel || (k.t_s >= sel.from && k.t_s < sel.to)) { lat.push(state.hists[i].lat); svc.push(state.hists[i].svc); }
    });
    var a = stats(lat) || { count: 0 }, b = stats(svc) || { count: 0 };
    var first = state.ticks[0];
    var wall = function (t) {
      if (!first || first.unix_ms == null) return '';
      return new Date(first.unix_ms + (t - first.t_s) * 1000).toLocaleTimeString('en-GB');
    };
    $('window-range').textContent = sel
      ? 'seconds ' + clock(sel.from) + ' to ' + clock(sel.to) +
        (wall(sel.from) ? ', ' + wall(sel.from) + ' to ' + wall(sel.to) : '') +
        ' (' + lat.length + ' s; double-click a chart for the whole run)'
      : 'the whole run so far (drag on a chart to select seconds)';
    [['w', a], ['ws', b]].forEach(function (pair) {
      var s = pair[1];
      $(pair[0] + '-count').textContent = num(s.count);
      ['p50', 'p90', 'p99', 'p999', 'max'].forEach(function (p) { $(pair[0] + '-' + p).textContent = s.count ? us(s[p]) : '—'; });
    });
    window.volleyLive.window = { from: sel ? sel.from : null, to: sel ? sel.to : null, seconds: lat.length, corrected: a, service: b };
  }

  // ---- events --------------------------------------------------------------------------------
  function status(text, cls) { var s = $('status'); s.textContent = text; s.className = cls; }
  function onMeta(m) {
    state.meta = m;
    $('load').textContent = m.argv.join(' ');
    $('title').textContent = m.title;
  }
  function onTick(k) {
    if (state.ticks.length && k.t_s <= state.ticks[state.ticks.length - 1].t_s) return;
    return Promise.all([decode(k.latency_hdr), decode(k.service_time_hdr)]).then(function (h) {
      if (!state.hdr) state.hdr = layout(h[0].sig, h[0].lowest);
      k.lat = stats([h[0]]);
      k.svc = stats([h[1]]);
      delete k.latency_hdr; delete k.service_time_hdr;
      state.ticks.push(k);
      state.hists.push({ lat: h[0], svc: h[1] });
      window.volleyLive.ticks++;
      redraw();
    });
  }
  function onRun(r) {
    // A new measured run (a capacity step): its seconds are drawn from zero.
    state.ticks = []; state.hists = []; state.sel = null;
    var h = $('run-title'); h.hidden = false; h.textContent = r.title;
    window.volleyLive.runs++;
    redraw();
  }
  var curve = null;
  function table(head, rows) {
    var h = $('progress-head'), body = $('progress-rows');
    h.textContent = ''; body.textContent = '';
    var tr = document.createElement('tr');
    head.forEach(function (t) { var th = document.createElement('th'); th.textContent = t; tr.appendChild(th); });
    h.appendChild(tr);
    rows.forEach(function (r) {
      var tr = document.createElement('tr');
      r.forEach(function (v) { var td = document.createElement('td'); td.textContent = v == null ? '—' : v; tr.appendChild(td); });
      body.appendChild(tr);
    });
  }
  function onProgress(p) {
    $('progress').hidden = false;
    if (p.kind === 'suite') {
      $('curve').hidden = true;
      $('progress-title').textContent = 'Suite: ' + p.rows.length + ' of ' + p.total + ' cells done';
      table(['server', 'scenario', 'rep', 'status', 'req/s', 'p99', 'why'], p.rows.map(function (r) {
        var h = r.headline || {};
        return [r.server, r.scenario, String(r.rep), r.status, num(h.throughput_rps), us(h.latency_p99_us), r.reason];
      }));
      window.volleyLive.cells = p.rows.length;
      return;
    }
    if (p.kind !== 'capacity') return;
    $('progress-title').textContent = 'Capacity search: ' + p.steps.length + ' step' + (p.steps.length === 1 ? '' : 's') + ' done';
    table(['step', 'target req/s', 'achieved req/s', 'p99', 'verdict', 'why'], p.steps.map(function (s, i) {
      return [String(i + 1), num(s.target_rps), num(s.achieved_rps), us(s.latency_us && s.latency_us.p99), s.verdict, s.reason];
    }));
    var pts = p.steps.filter(function (s) { return s.achieved_rps != null && s.latency_us && s.latency_us.p99 != null; })
      .sort(function (a, b) { return a.achieved_rps - b.achieved_rps; });
    var data = [pts.map(function (s) { return s.achieved_rps; }), pts.map(function (s) { return s.latency_us.p99; })];
    if (!curve) {
      curve = new uPlot({ width: 680, height: 240, scales: { x: { time: false }, y: { distr: 3 } },
        series: [{ label: 'achieved req/s', value: function (u, v) { return num(v); } },
                 { label: 'p99', stroke: palette[0], width: 1.5, points: { show: true, size: 7 }, value: function (u, v) { return us(v); } }],
        axes: [{ values: function (u, vals) { return vals.map(num); } }, { size: 70, values: function (u, vals) { return vals.map(us); } }] },
        data, $('curve'));
    } else {
      curve.setData(data);
    }
    window.volleyLive.steps = p.steps.length;
  }
  function onEnd(e) {
    state.over = true;
    if (e.report_html) {
      // Nothing of this page runs on in the report's document.
      state.gone = true;
      state.charts.forEach(function (c) { c.plot.destroy(); });
      if (curve) curve.destroy();
      window.volleyLive.ended = true;
      document.open();
      document.write(e.report_html);
      document.close();
    } else {
      status('The run is over' + (e.result && e.result.interrupted ? ' (interrupted)' : '') +
        '; volley wrote no report page (add --html PATH for one).', 'over');
    }
  }
  var es;
  function connect() {
    es = new EventSource('/events?token=' + encodeURIComponent(token));
    es.addEventListener('meta', function (ev) { onMeta(JSON.parse(ev.data)); });
    es.addEventListener('gap', function (ev) {
      var g = JSON.parse(ev.data);
      $('window-range').textContent = 'older events were dropped (the oldest tick kept is of second ' + clock(g.first_t_s) + ') (a memory cap of ' + Math.round(g.cap_bytes / 1048576) + ' MiB)';
    });
    es.addEventListener('run', function (ev) {
      var r = JSON.parse(ev.data);
      queue = queue.then(function () { onRun(r); });
    });
    es.addEventListener('progress', function (ev) {
      var p = JSON.parse(ev.data);
      queue = queue.then(function () { onProgress(p); });
    });
    es.addEventListener('tick', function (ev) {
      var k = JSON.parse(ev.data);
      queue = queue.then(function () { return onTick(k); });
    });
    es.addEventListener('end', function (ev) {
      var e = JSON.parse(ev.data);
      es.close();
      queue = queue.then(function () { onEnd(e); });
    });
    es.onerror = function () {
      if (state.over) return;
      status('Connection to volley lost: retrying (the run may have ended; its results are in the files it writes).', 'lost');
    };
  }

  window.volleyLive = { ticks: 0, draws: 0, runs: 0, steps: 0, cells: 0, ended: false, window: null, select: select, stats: stats };
  makeCharts();
  connect();
})();
