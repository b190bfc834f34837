// volley HTML report: draws the charts from the JSON block with uPlot, makes tables sortable,
// and writes a self-test into #selftest. Every string from the data reaches the page through
// uPlot (textContent and canvas text) or textContent here: never through innerHTML.
(function () {
  'use strict';
  var st = window.volleySelftest || { errors: [], violations: [], alerts: 0 };
  var data = JSON.parse(document.getElementById('data').textContent);
  var css = getComputedStyle(document.documentElement);
  var palette = [];
  for (var i = 0; i < 10; i++) palette.push(css.getPropertyValue('--c' + i).trim() || '#1f77b4');
  var charts = [];

  function colour(server, alpha) {
    var c = palette[server % palette.length];
    return alpha == null ? c : c + alpha;
  }
  function name(server) { return data.servers[server]; }

  // Three significant digits, as the histograms record.
  function sig3(v) {
    if (v == null || !isFinite(v)) return '–';
    var a = Math.abs(v);
    var d = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    return v.toFixed(d);
  }
  function ms(v) { return v == null ? '–' : sig3(v) + ' ms'; }
  function reqs(v) {
    return v == null ? '–' : Math.round(v).toLocaleString('en-US') + ' req/s';
  }
  function compact(v) {
    if (v == null) return '';
    var a = Math.abs(v);
    if (a >= 1e6) return sig3(v / 1e6) + 'M';
    if (a >= 1e3) return sig3(v / 1e3) + 'k';
    return String(+v.toPrecision(3));
  }
  // x on the nines scale (x = -log10(1 - q)) as a percentile: 0, 90, 99, 99.9, ...
  function percentile(x) {
    if (x == null) return '–';
    var p = 100 * (1 - Math.pow(10, -x));
    if (Math.abs(x - Math.round(x)) < 1e-9) {
      var n = Math.round(x);
      if (n === 0) return '0%';
      if (n === 1) return '90%';
      return '99' + (n > 2 ? '.' + '9'.repeat(n - 2) : '') + '%';
    }
    return (p >= 99.99 ? p.toFixed(4) : p >= 99 ? p.toFixed(3) : p.toFixed(1)) + '%';
  }

  function width(el) { return Math.max(280, Math.floor(el.clientWidth || 560)); }

  function make(el, opts, d) {
    opts.width = width(el);
    opts.height = opts.height || 300;
    // Room on the right for the last x label (99.999%, 4 s).
    opts.padding = [12, 28, 0, 0];
    var u = new uPlot(opts, d, el);
    charts.push({ u: u, el: el, height: opts.height });
  }

  function xSeconds(label) {
    return { label: label || 'seconds from the end of the warm-up', values: function (u, s) { return s.map(function (v) { return v + ' s'; }); } };
  }

  function capacityChart(el, g, lines, o) {
    var tables = lines.map(function (l) {
      var pts = l.x.map(function (x, k) { return [x, l.y[k]]; }).filter(function (p) { return p[1] != null && (!o.log || p[1] > 0); });
      pts.sort(function (a, b) { return a[0] - b[0]; });
      var xs = [], ys = [];
      pts.forEach(function (p) { if (xs.length && xs[xs.length - 1] === p[0]) return; xs.push(p[0]); ys.push(p[1]); });
      return [xs, ys];
    });
    var d = uPlot.join(tables);
    var top = 0, bottom = Infinity, right = 0;
    lines.forEach(function (l) {
      l.y.forEach(function (v) { if (v != null && (!o.log || v > 0)) { top = Math.max(top, v); bottom = Math.min(bottom, v); } });
      l.x.forEach(function (x) { right = Math.max(right, x); });
    });
    o.hlines.forEach(function (h) { top = Math.max(top, h.v); bottom = Math.min(bottom, h.v); });
    g.knees.forEach(function (m) { right = Math.max(right, m.rps); });
    // A closed-loop maximum far beyond the curve would squash it against the left edge: the
    // axis takes it in only when it is near, otherwise its mark is an arrow at the right edge.
    var far = g.closed.filter(function (m) { return m.rps > right * 1.6; });
    g.closed.forEach(function (m) { if (far.indexOf(m) < 0) right = Math.max(right, m.rps); });
    var series = [{ label: 'achieved', value: function (u, v) { return reqs(v); } }];
    lines.forEach(function (l) {
      series.push({ label: l.label, stroke: colour(l.server), width: l.width, dash: l.dash, paths: function () { return null; }, points: { show: false },
        value: function (u, v) { return v == null ? '–' : sig3(v) + o.unit; } });
    });
    // A log axis spans whole decades: uPlot steps its log ticks from the lower end, and from
    // one that is no power of ten (0.095 ms under a fast server's p50) they overflow an array.
    var y = o.log ? { distr: 3, log: 10, range: function () { return uPlot.rangeLog(bottom === Infinity ? 0.01 : bottom / 1.5, (top || 1) * 1.5, 10, true); } }
      : { range: [0, Math.max(100, top) * 1.1] };
    make(el, {
      scales: { x: { time: false, range: [0, (right || 1) * 1.08] }, y: y },
      axes: [{ label: 'achieved rate (req/s)', values: function (u, s) { return s.map(compact); } },
        { label: o.label, values: function (u, s) { return s.map(function (v) { return v == null ? '' : +v.toPrecision(3) + ''; }); }, size: 60 }],
      series: series,
      hooks: { draw: [function (u) {
        var ctx = u.ctx, px = uPlot.pxRatio;
        var left = u.bbox.left, width = u.bbox.width, topY = u.bbox.top, height = u.bbox.height;
        ctx.save();
        ctx.font = (11 * px) + 'px system-ui, sans-serif';
        // uPlot leaves its axis labels' alignment on the context.
        ctx.textAlign = 'left';
        ctx.textBaseline = 'alphabetic';
        o.hlines.forEach(function (h) {
          var yy = u.valToPos(h.v, 'y', true);
          ctx.strokeStyle = '#c92a2a'; ctx.lineWidth = 1.5 * px; ctx.setLineDash([6 * px, 4 * px]);
          ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(left + width, yy); ctx.stroke();
          ctx.setLineDash([]); ctx.fillStyle = '#c92a2a'; ctx.fillText(h.label, left + 6 * px, yy - 4 * px);
        });
        // The rate found is labelled at the top, the closed-loop maximum at the bottom, each
        // server's a line lower than the one before, so marks at one rate stay readable.
        function vline(m, k, dash, text, atTop) {
          var xx = u.valToPos(m.rps, 'x', true);
          ctx.strokeStyle = colour(m.server); ctx.lineWidth = 1.5 * px; ctx.setLineDash(dash);
          ctx.beginPath(); ctx.moveTo(xx, topY); ctx.lineTo(xx, topY + height); ctx.stroke();
          ctx.setLineDash([]); ctx.fillStyle = colour(m.server);
          var w = ctx.measureText(text).width;
          var tx = xx + 4 * px + w > left + width ? xx - 4 * px - w : xx + 4 * px;
          var ty = atTop ? topY + (12 + 13 * k) * px : topY + height - (6 + 13 * k) * px;
          ctx.fillText(text, tx, ty);
        }
        g.knees.forEach(function (m, k) { vline(m, k, [], (m.lower_bound ? '≥ ' : '') + compact(m.rps), true); });
        g.closed.forEach(function (m, k) {
          if (far.indexOf(m) < 0) { vline(m, k, [2 * px, 3 * px], 'closed loop ' + compact(m.rps), false); return; }
          var text = 'closed loop ' + compact(m.rps) + ' →';
          ctx.fillStyle = colour(m.server);
          ctx.fillText(text, left + width - ctx.measureText(text).width - 4 * px, topY + height - (6 + 13 * k) * px);
        });
        lines.forEach(function (l, k) {
          if (!u.series[k + 1].show) return;
          ctx.strokeStyle = colour(l.server); ctx.lineWidth = l.width * px;
          ctx.setLineDash(l.dash.map(function (v) { return v * px; }));
          ctx.beginPath();
          var started = false;
          l.x.forEach(function (x, j) {
            var v = l.y[j];
            if (v == null || (o.log && v <= 0)) return;
            var xx = u.valToPos(x, 'x', true), yy = u.valToPos(v, 'y', true);
            if (started) ctx.lineTo(xx, yy); else { ctx.moveTo(xx, yy); started = true; }
          });
          ctx.stroke();
          ctx.setLineDash([]);
          l.x.forEach(function (x, j) {
            var v = l.y[j];
            if (v == null || (o.log && v <= 0)) return;
            var xx = u.valToPos(x, 'x', true), yy = u.valToPos(v, 'y', true);
            ctx.beginPath(); ctx.arc(xx, yy, 3.5 * px, 0, 2 * Math.PI);
            ctx.fillStyle = l.pass && !l.pass[j] ? '#ffffff' : colour(l.server);
            ctx.fill(); ctx.lineWidth = 1.5 * px; ctx.stroke();
          });
        });
        ctx.restore();
      }] }
    }, d);
  }

  // A percentile plot on the nines scale: one line per entry of `lines` ({x, y_us}), styled
  // by `style(line)` ({label, stroke, width, dash}).
  function nines(el, lines, style) {
    var d = uPlot.join(lines.map(function (l) {
      return [l.x, l.y_us.map(function (v) { return v / 1000; })];
    }));
    var maxX = 1;
    lines.forEach(function (l) { maxX = Math.max(maxX, l.x[l.x.length - 1]); });
    var top = Math.ceil(maxX - 1e-9);
    var series = [{ label: 'percentile', value: function (u, v) { return percentile(v); } }];
    lines.forEach(function (l) {
      var s = style(l);
      series.push({
        label: s.label,
        stroke: s.stroke,
        width: s.width,
        dash: s.dash,
        spanGaps: true,
        points: { show: false },
        value: function (u, v) { return ms(v); }
      });
    });
    make(el, {
      scales: { x: { time: false, range: [0, top] }, y: { distr: 3, log: 10 } },
      axes: [
        {
          label: 'percentile (log scale of 1 − q: each step is one more nine)',
          splits: function () { var s = []; for (var k = 0; k <= top; k++) s.push(k); return s; },
          values: function (u, s) { return s.map(percentile); }
        },
        { label: 'latency (ms, log scale)', values: function (u, s) { return s.map(function (v) { return v == null ? '' : +v.toPrecision(3) + ''; }); }, size: 60 }
      ],
      series: series
    }, d);
  }

  var draw = {
    hdr: function (el, g) {
      nines(el, g.hdr, function (l) {
        return {
          label: name(l.server) + (l.service ? ' (service time)' : ''),
          stroke: colour(l.server),
          width: l.service ? 1.5 : 2,
          dash: l.service ? [7, 5] : undefined
        };
      });
    },

    // One line per (server, named request): with one server a colour per request, with
    // several a colour per server and a dash per request.
    endpoints: function (el, g) {
      var lines = g.endpoints;
      var several = lines.some(function (l) { return l.server !== lines[0].server; });
      var dashes = [undefined, [7, 5], [2, 4], [10, 4, 2, 4], [4, 8]];
      nines(el, lines, function (l) {
        return {
          label: several ? name(l.server) + ' · ' + l.name : l.name,
          stroke: several ? colour(l.server) : colour(l.index),
          width: 2,
          dash: several ? dashes[l.index % dashes.length] : undefined
        };
      });
    },

    throughput: function (el, g) {
      var bars = g.throughput;
      var xs = bars.map(function (b, k) { return k; });
      var d = [xs];
      var series = [{ label: 'server', value: function (u, v) { return v == null ? '–' : name(bars[v].server); } }];
      var top = 0;
      bars.forEach(function (b, k) {
        top = Math.max(top, b.rps.max);
        d.push(xs.map(function (j) { return j === k ? b.rps.median : null; }));
        series.push({
          label: name(b.server),
          stroke: colour(b.server),
          fill: colour(b.server, 'bb'),
          paths: uPlot.paths.bars({ size: [0.6, 90] }),
          points: { show: false },
          value: function (u, v, si, idx) {
            return v == null ? '–' : reqs(v) + (b.runs > 1 ? ' (' + compact(b.rps.min) + '–' + compact(b.rps.max) + ', ' + b.runs + ' runs)' : '');
          }
        });
      });
      make(el, {
        scales: { x: { time: false, range: [-0.5, bars.length - 0.5] }, y: { range: [0, (top || 1) * 1.1] } },
        axes: [
          { splits: function () { return xs; }, values: function (u, s) { return s.map(function (k) { return bars[k] ? name(bars[k].server) : ''; }); }, grid: { show: false } },
          { label: 'req/s', values: function (u, s) { return s.map(compact); }, size: 60 }
        ],
        legend: { show: false },
        series: series,
        hooks: {
          // Whiskers from the smallest to the largest repetition over each bar.
          draw: [function (u) {
            var ctx = u.ctx;
            var px = uPlot.pxRatio;
            ctx.save();
            ctx.strokeStyle = '#1d2127';
            ctx.lineWidth = 1.5 * px;
            bars.forEach(function (b, k) {
              if (b.runs < 2) return;
              var x = u.valToPos(k, 'x', true);
              var lo = u.valToPos(b.rps.min, 'y', true);
              var hi = u.valToPos(b.rps.max, 'y', true);
              var w = 7 * px;
              ctx.beginPath();
              ctx.moveTo(x, lo); ctx.lineTo(x, hi);
              ctx.moveTo(x - w, lo); ctx.lineTo(x + w, lo);
              ctx.moveTo(x - w, hi); ctx.lineTo(x + w, hi);
              ctx.stroke();
            });
            ctx.restore();
          }]
        }
      }, d);
    },

    // Completed responses per second; a run of rate stages adds what was sent (thin, in the
    // server's colour) and the stages' target (dashed, dark: drawn last, over a run that
    // followed it).
    'rps-time': function (el, g) {
      var d = uPlot.join(g.over_time.map(function (s) {
        return s.target_rps ? [s.t_s, s.rps, s.sent_rps, s.target_rps] : [s.t_s, s.rps];
      }));
      var series = [{ label: 'time', value: function (u, v) { return v == null ? '–' : v + ' s'; } }];
      var value = function (u, v) { return reqs(v); };
      g.over_time.forEach(function (s) {
        var who = name(s.server) + ' (rep ' + s.rep + ')';
        if (!s.target_rps) {
          series.push({ label: who, stroke: colour(s.server), width: 2, value: value });
          return;
        }
        series.push({ label: who + ' completed', stroke: colour(s.server), width: 2, value: value });
        series.push({ label: who + ' sent', stroke: colour(s.server, '99'), width: 1, value: value });
        series.push({ label: who + ' target', stroke: '#1d2127', width: 1.5, dash: [7, 5], value: value });
      });
      make(el, {
        scales: { x: { time: false }, y: { range: function (u, lo, hi) { return [0, (hi || 1) * 1.1]; } } },
        axes: [xSeconds(), { label: 'req/s', values: function (u, s) { return s.map(compact); }, size: 60 }],
        series: series
      }, d);
    },

    'latency-time': function (el, g) {
      // GC pauses, when the server's runtime was read, join as points-only series on a
      // second y axis (ms of pause), drawn as diamonds on stems from the axis.
      var pauses = (g.gc || []).filter(function (p) { return p.pause_ms.length > 0; });
      var tables = g.over_time.map(function (s) {
        var toMs = function (v) { return v == null ? null : v / 1000; };
        return [s.t_s, s.p50_us.map(toMs), s.p99_us.map(toMs)];
      });
      pauses.forEach(function (p) { tables.push([p.pause_t_s, p.pause_ms]); });
      var d = uPlot.join(tables);
      var series = [{ label: 'time', value: function (u, v) { return v == null ? '–' : sig3(v) + ' s'; } }];
      g.over_time.forEach(function (s) {
        series.push({ label: name(s.server) + ' p50', stroke: colour(s.server), width: 2, value: function (u, v) { return ms(v); } });
        series.push({ label: name(s.server) + ' p99', stroke: colour(s.server), width: 1.5, dash: [7, 5], value: function (u, v) { return ms(v); } });
      });
      var gcTop = 0;
      pauses.forEach(function (p) {
        p.pause_ms.forEach(function (v) { gcTop = Math.max(gcTop, v); });
        series.push({ label: name(p.server) + ' GC pause', scale: 'gc', stroke: '#1d2127', paths: function () { return null; }, points: { show: false }, value: function (u, v) { return ms(v); } });
      });
      var first = 1 + 2 * g.over_time.length;
      var axes = [xSeconds(), { label: 'latency (ms)', values: function (u, s) { return s.map(function (v) { return +v.toPrecision(3) + ''; }); }, size: 60 }];
      var scales = { x: { time: false }, y: { range: function (u, lo, hi) { return [0, (hi || 1) * 1.1]; } } };
      var hooks = {};
      if (pauses.length) {
        scales.gc = { range: [0, (gcTop || 1) * 1.15] };
        axes.push({ scale: 'gc', side: 1, label: 'GC pause (ms)', stroke: '#5b2a86', grid: { show: false }, values: function (u, s) { return s.map(function (v) { return +v.toPrecision(3) + ''; }); }, size: 50 });
        hooks.draw = [function (u) {
          var ctx = u.ctx, px = uPlot.pxRatio;
          ctx.save();
          ctx.setLineDash([]);
          pauses.forEach(function (p, k) {
            if (!u.series[first + k].show) return;
            var base = u.valToPos(0, 'gc', true);
            p.pause_t_s.forEach(function (t, j) {
              var x = u.valToPos(t, 'x', true), y = u.valToPos(p.pause_ms[j], 'gc', true), r = 4.5 * px;
              ctx.strokeStyle = '#5b2a86';
              ctx.lineWidth = 1.5 * px;
              ctx.beginPath(); ctx.moveTo(x, base); ctx.lineTo(x, y); ctx.stroke();
              ctx.fillStyle = colour(p.server);
              ctx.beginPath(); ctx.moveTo(x, y - r); ctx.lineTo(x + r, y); ctx.lineTo(x, y + r); ctx.lineTo(x - r, y); ctx.closePath();
              ctx.fill(); ctx.stroke();
            });
          });
          ctx.restore();
        }];
      }
      make(el, { scales: scales, axes: axes, series: series, hooks: hooks }, d);
    },

    // Every pause of the representative repetition at its start, by length.
    'gc-pauses': function (el, g) {
      var pauses = g.gc.filter(function (p) { return p.pause_ms.length > 0; });
      var d = uPlot.join(pauses.map(function (p) { return [p.pause_t_s, p.pause_ms]; }));
      var series = [{ label: 'time', value: function (u, v) { return v == null ? '–' : sig3(v) + ' s'; } }];
      var top = 0;
      pauses.forEach(function (p) {
        p.pause_ms.forEach(function (v) { top = Math.max(top, v); });
        series.push({
          label: name(p.server) + ' (' + p.source + ', rep ' + p.rep + ')',
          stroke: colour(p.server),
          paths: function () { return null; },
          points: { show: true, size: 8, width: 1, fill: colour(p.server, 'aa') },
          value: function (u, v) { return ms(v); }
        });
      });
      make(el, {
        scales: { x: { time: false }, y: { range: [0, (top || 1) * 1.15] } },
        axes: [xSeconds(), { label: 'pause (ms)', values: function (u, s) { return s.map(function (v) { return +v.toPrecision(3) + ''; }); }, size: 60 }],
        series: series
      }, d);
    },

    'gc-alloc': function (el, g) {
      var rates = g.gc.filter(function (p) { return p.alloc_mb_s.length >= 2; });
      var d = uPlot.join(rates.map(function (p) { return [p.alloc_t_s, p.alloc_mb_s]; }));
      var series = [{ label: 'time', value: function (u, v) { return v == null ? '–' : sig3(v) + ' s'; } }];
      rates.forEach(function (p) {
        series.push({ label: name(p.server) + ' (rep ' + p.rep + ')', stroke: colour(p.server), width: 2, spanGaps: true, value: function (u, v) { return v == null ? '–' : sig3(v) + ' MB/s'; } });
      });
      make(el, {
        scales: { x: { time: false }, y: { range: function (u, lo, hi) { return [0, (hi || 1) * 1.15]; } } },
        axes: [xSeconds(), { label: 'allocation (MB/s)', values: function (u, s) { return s.map(compact); }, size: 60 }],
        series: series
      }, d);
    },

    'rss-time': function (el, g) {
      var MiB = 1024 * 1024;
      var d = uPlot.join(g.resources.map(function (r) {
        return [r.t_s, r.rss_bytes.map(function (v) { return v / MiB; })];
      }));
      var series = [{ label: 'time', value: function (u, v) { return v == null ? '–' : v.toFixed(1) + ' s'; } }];
      g.resources.forEach(function (r) {
        series.push({ label: name(r.server), stroke: colour(r.server), width: 2, spanGaps: true, value: function (u, v) { return v == null ? '–' : sig3(v) + ' MiB'; } });
      });
      make(el, {
        scales: { x: { time: false }, y: { range: function (u, lo, hi) { return [0, (hi || 1) * 1.15]; } } },
        axes: [xSeconds(), { label: 'RSS (MiB)', values: function (u, s) { return s.map(function (v) { return +v.toPrecision(3) + ''; }); }, size: 60 }],
        series: series
      }, d);
    },

    // Capacity: a latency statistic of each server against the achieved rate, log scale.
    // uPlot gets each line's points sorted by rate (for the axes and the legend); the lines
    // themselves are drawn here in the order the rates were offered, so an overloaded server's
    // curve bends back, with filled points where a rate passed and hollow ones where not. The
    // SLO is a dashed line across, the rate found a solid mark and the closed-loop maximum a
    // dotted one.
    'capacity-latency': function (el, g) {
      capacityChart(el, g, g.lines.map(function (l) {
        return { server: l.server, label: name(l.server) + ' ' + l.stat, x: l.x, y: l.y_ms, pass: l.pass, target: l.target,
          width: l.stat === 'p99' ? 2.5 : 1.5, dash: l.stat === 'p50' ? [2, 3] : l.stat === 'p99.9' ? [7, 4] : [] };
      }), { label: 'corrected latency (ms, log scale)', log: true, unit: ' ms', hlines: g.slo.map(function (s) { return { v: s.ms, label: 'SLO ' + s.label }; }) });
    },

    'capacity-cpu': function (el, g) {
      capacityChart(el, g, g.cpu.map(function (c) {
        return { server: c.server, label: name(c.server) + ' CPU', x: c.x, y: c.util_pct, pass: null, width: 2, dash: [] };
      }), { label: 'server CPU (% of its cores)', log: false, unit: '%', hlines: [{ v: 100, label: 'all cores busy' }] });
    },

    // One server: system CPU stacked on user CPU. The "user + system" area is drawn first and
    // the user area over it, so the visible upper band is the system share.
    cpu: function (el, g, index) {
      var r = g.resources[index];
      var total = r.user_pct.map(function (u, k) { return u + r.sys_pct[k]; });
      var top = 100;
      total.forEach(function (v) { top = Math.max(top, v); });
      var pct = function (v) { return v == null ? '–' : v.toFixed(0) + '%'; };
      make(el, {
        height: 190,
        scales: { x: { time: false }, y: { range: [0, top * 1.1] } },
        axes: [xSeconds('seconds'), { values: function (u, s) { return s.map(function (v) { return v + '%'; }); }, size: 50 }],
        series: [
          { label: 'time', value: function (u, v) { return v == null ? '–' : v.toFixed(1) + ' s'; } },
          { label: 'system', stroke: colour(r.server), fill: colour(r.server, '55'), width: 1, value: function (u, v, si, k) { return k == null ? '–' : pct(r.sys_pct[k]); } },
          { label: 'user', stroke: colour(r.server), fill: colour(r.server, 'cc'), width: 1, value: function (u, v) { return pct(v); } }
        ]
      }, [r.t_s, total, r.user_pct]);
    }
  };

  Array.prototype.forEach.call(document.querySelectorAll('.chart'), function (el) {
    try {
      var g = el.hasAttribute('data-capacity') ? data.capacity[+el.getAttribute('data-capacity')] : data.groups[+el.getAttribute('data-group')];
      draw[el.getAttribute('data-chart')](el, g, +el.getAttribute('data-index'));
    } catch (e) {
      st.errors.push('chart ' + el.getAttribute('data-chart') + ': ' + e);
    }
  });

  var resizing = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      charts.forEach(function (c) { c.u.setSize({ width: width(c.el), height: c.height }); });
    }, 100);
  });

  // Sortable tables: numbers sort by data-v (raw value); empty values go last either way.
  function key(td) {
    if (!td) return null;
    var v = td.getAttribute('data-v');
    if (v === null) v = td.textContent.trim();
    if (v === '' || v === '–') return null;
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }
  function sortBy(table, col, th) {
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      // Rows of servers with no finished run span the numbers: they stay at the bottom.
      var fa = a.classList.contains('failed'), fb = b.classList.contains('failed');
      if (fa !== fb) return fa ? 1 : -1;
      if (fa) return 0;
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      if (typeof x === 'number' && typeof y === 'number') return (x - y) * dir;
      return String(x).localeCompare(String(y)) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    if (!table.tHead) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.title = 'sort by ' + th.textContent;
      th.addEventListener('click', function () { sortBy(table, col, th); });
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') sortBy(table, col, th); });
    });
  });

  // Self-test: a chart counts as drawn when its canvas holds coloured pixels (axes and grid
  // are grey, so only data makes colour), and as having data when a series has a value.
  function coloured(canvas) {
    var n = 0;
    try {
      var px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (var k = 0; k < px.length; k += 4) {
        if (px[k + 3] > 0 && Math.max(px[k], px[k + 1], px[k + 2]) - Math.min(px[k], px[k + 1], px[k + 2]) > 60) n++;
      }
    } catch (e) {
      st.errors.push('self-test: ' + e);
    }
    return n;
  }
  // Sorts a detached copy of the first table with at least three numbers in its second column
  // twice (ascending, then descending) and checks the order: the visible page is not touched.
  function numbers(table) {
    var out = [];
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var v = r.classList.contains('failed') ? null : key(r.cells[1]);
      if (typeof v === 'number') out.push(v);
    });
    return out;
  }
  function sortCheck() {
    var tables = document.querySelectorAll('table.sortable');
    for (var t = 0; t < tables.length; t++) {
      if (!tables[t].tHead || numbers(tables[t]).length < 3) continue;
      var copy = tables[t].cloneNode(true);
      var th = copy.tHead.rows[0].cells[1];
      sortBy(copy, 1, th);
      var up = numbers(copy);
      sortBy(copy, 1, th);
      var down = numbers(copy);
      for (var k = 1; k < up.length; k++) {
        if (up[k] < up[k - 1] || down[k] > down[k - 1]) return 'wrong order';
      }
      return th.getAttribute('aria-sort') === 'descending' ? 'ok' : 'no aria-sort';
    }
    return 'no table';
  }

  function selftest() {
    var drawn = 0, withData = 0;
    charts.forEach(function (c) {
      var has = c.u.data.slice(1).some(function (s) { return s.some(function (v) { return v != null; }); });
      if (has) withData++;
      if (coloured(c.u.ctx.canvas) > 50) drawn++;
    });
    var el = document.getElementById('selftest');
    if (!el) return;
    el.setAttribute('data-errors', st.errors.length);
    el.setAttribute('data-violations', st.violations.length);
    el.setAttribute('data-alerts', st.alerts);
    el.setAttribute('data-slots', document.querySelectorAll('.chart').length);
    el.setAttribute('data-charts', charts.length);
    el.setAttribute('data-with-data', withData);
    el.setAttribute('data-drawn', drawn);
    el.setAttribute('data-scripts', document.querySelectorAll('script').length);
    el.setAttribute('data-sort', sortCheck());
    // Flame graphs (flame.js): each container, and those that drew boxes beyond the root.
    var flames = document.querySelectorAll('.flame[data-flame]');
    el.setAttribute('data-flames', flames.length);
    el.setAttribute('data-flames-drawn', Array.prototype.filter.call(flames, function (f) {
      return f.querySelectorAll('.flame-node').length > 1;
    }).length);
    el.setAttribute('data-done', '1');
    el.textContent = st.errors.concat(st.violations).join('\n');
  }
  // uPlot draws in a microtask after construction; give it (and any late CSP report) a moment.
  setTimeout(selftest, 400);
})();
