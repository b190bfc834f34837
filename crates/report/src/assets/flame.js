// volley flame graphs: draws each `.flame[data-flame]` from `data.flames[i]` (see
// crates/report/src/flame/html.rs) as absolutely positioned boxes, root on top, callees below;
// click to zoom, reset, hover for a tooltip, search to highlight. Names are untrusted: they
// reach the page through textContent only, never as markup. No library, no network.
(function () {
  'use strict';
  var els = document.querySelectorAll('.flame[data-flame]');
  if (!els.length) return;
  var st = window.volleySelftest || { errors: [] };
  var ROW = 18;
  var data;
  try {
    data = JSON.parse(document.getElementById('data').textContent);
  } catch (e) {
    st.errors.push('flame data: ' + e);
    return;
  }
  var tip = document.createElement('div');
  tip.className = 'flame-tip';
  tip.hidden = true;
  document.body.appendChild(tip);

  function us(v) {
    var a = Math.abs(v);
    return v.toFixed(a === 0 || a >= 1 ? 1 : a >= 0.1 ? 2 : 3);
  }
  function signed(v) { return (v > 0 ? '+' : '') + us(v); }
  function pct(v) { return (100 * v).toFixed(1) + ' %'; }

  // A warm colour from the name, the same for a function wherever it appears.
  function warm(name) {
    var h = 0;
    for (var k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) >>> 0;
    return 'hsl(' + (h % 55) + ', ' + (70 + (h >> 8) % 25) + '%, ' + (58 + (h >> 16) % 14) + '%)';
  }
  // Red for growth, blue for a shrink, deeper with the size of the change.
  function changed(v, most) {
    var t = most > 0 ? Math.min(1, Math.abs(v) / most) : 0;
    var fade = Math.round(250 - 175 * t);
    if (Math.abs(v) < 5e-4 || t < 0.02) return 'rgb(246, 246, 246)';
    return v > 0 ? 'rgb(250, ' + fade + ', ' + fade + ')' : 'rgb(' + fade + ', ' + fade + ', 250)';
  }

  function graph(el, d) {
    var nodes = d.nodes, n = nodes.length, unit = d.unit || 'samples';
    var kids = [], depth = new Int32Array(n), low = [];
    for (var i = 0; i < n; i++) {
      kids.push([]);
      low.push(d.names[nodes[i][0]].toLowerCase());
      if (i > 0) { kids[nodes[i][1]].push(i); depth[i] = depth[nodes[i][1]] + 1; }
    }
    var most = 0;
    if (d.change_us) for (i = 1; i < n; i++) most = Math.max(most, Math.abs(d.change_us[i]));
    var section = el.closest('.flame-section') || el.parentNode;
    var search = section.querySelector('.flame-search');
    var reset = section.querySelector('.flame-reset');
    var matched = section.querySelector('.flame-matched');
    var layer = document.createElement('div');
    layer.className = 'flame-layer';
    el.appendChild(layer);
    var focus = 0, term = '';

    // A box; one too narrow for a name has no padding, so it stays as narrow as its share.
    function box(i, x, w, row, above, thin) {
      var b = document.createElement('div');
      b.className = 'flame-node' + (above ? ' above' : '') + (thin ? ' thin' : '');
      b.setAttribute('data-i', i);
      b.style.left = (100 * x) + '%';
      b.style.width = (100 * w) + '%';
      b.style.top = (row * ROW) + 'px';
      var name = d.names[nodes[i][0]];
      b.style.background = d.change_us ? changed(d.change_us[i], most) : i === 0 || name.charAt(0) === '[' ? '#d9dde3' : warm(name);
      if (!thin) b.textContent = name;
      layer.appendChild(b);
    }

    // The focused node and its ancestors span the width; its callees share it by samples.
    function render() {
      layer.textContent = '';
      var chain = [];
      for (var k = focus; ; k = nodes[k][1]) { chain.unshift(k); if (k === 0) break; }
      chain.forEach(function (k, row) { box(k, 0, 1, row, k !== focus, false); });
      var whole = nodes[focus][2] || 1, px = el.clientWidth || 1000, rows = chain.length;
      var x = {}, todo = [focus];
      x[focus] = 0;
      while (todo.length) {
        var p = todo.pop(), at = x[p];
        kids[p].forEach(function (c) {
          var w = nodes[c][2] / whole;
          x[c] = at;
          at += w;
          if (w * px < 0.5) return;
          box(c, x[c], w, depth[c], false, w * px < 10);
          rows = Math.max(rows, depth[c] + 1);
          todo.push(c);
        });
      }
      layer.style.height = (rows * ROW) + 'px';
      reset.disabled = focus === 0;
      highlight();
    }

    // Boxes whose name holds the term, and the share of samples under any of them (a
    // matching box below a matching one counts once).
    function highlight() {
      var under = new Uint8Array(n), share = 0;
      if (term) {
        for (var i = 0; i < n; i++) {
          var hit = low[i].indexOf(term) >= 0;
          if (hit && !(i > 0 && under[nodes[i][1]])) share += nodes[i][2];
          under[i] = hit || (i > 0 && under[nodes[i][1]]) ? 1 : 0;
        }
      }
      Array.prototype.forEach.call(layer.children, function (b) {
        var i = +b.getAttribute('data-i');
        b.classList.toggle('match', !!term && low[i].indexOf(term) >= 0);
      });
      var all = nodes[0][2] || 1;
      section.setAttribute('data-matched', term ? share / all : '');
      matched.textContent = term ? 'matched: ' + pct(share / all) + ' of the ' + unit + ', ' +
        us(share * d.us_per_sample) + ' µs/request' : '';
    }

    function describe(i) {
      var s = nodes[i][2], own = nodes[i][3], lines = [d.names[nodes[i][0]]];
      lines.push(s.toLocaleString('en-US') + ' ' + unit + ', ' + pct(s / (nodes[0][2] || 1)) + ' of all');
      lines.push(us(s * d.us_per_sample) + ' µs/request (' + us(own * d.us_per_sample) + ' of its own)');
      if (d.change_us) {
        var c = d.change_us[i], b = s * d.us_per_sample;
        lines.push('change: ' + signed(c) + ' µs/request (A ' + us(b - c) + ' → B ' + us(b) + ')');
      }
      return lines.join('\n');
    }

    layer.addEventListener('click', function (e) {
      var b = e.target.closest('.flame-node');
      if (!b) return;
      focus = +b.getAttribute('data-i');
      tip.hidden = true;
      render();
    });
    layer.addEventListener('mousemove', function (e) {
      var b = e.target.closest('.flame-node');
      if (!b) { tip.hidden = true; return; }
      tip.textContent = describe(+b.getAttribute('data-i'));
      tip.hidden = false;
      var left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
      tip.style.left = Math.max(4, left) + 'px';
      tip.style.top = (e.clientY + 16) + 'px';
    });
    layer.addEventListener('mouseleave', function () { tip.hidden = true; });
    reset.addEventListener('click', function () { focus = 0; render(); });
    search.addEventListener('input', function () {
      term = search.value.trim().toLowerCase();
      highlight();
    });
    render();
  }

  Array.prototype.forEach.call(els, function (el) {
    try {
      graph(el, data.flames[+el.getAttribute('data-flame')]);
    } catch (e) {
      st.errors.push('flame graph ' + el.getAttribute('data-flame') + ': ' + e);
    }
  });
})();
