// longhaul UI: hover values, range zoom and live updates for the run page.
// Our own code, no libraries; served from the binary. The page works
// without it (charts and tables are rendered on the server).
(function () {
  "use strict";

  function fmt(v, unit) {
    if (v === null || v === undefined) return "–";
    var a = Math.abs(v), s;
    if (a >= 1000) s = Math.round(v).toLocaleString("en-US");
    else if (a >= 10) s = v.toFixed(1);
    else s = v.toFixed(2);
    return unit ? s + " " + unit : s;
  }
  function fmtMs(v) {
    if (v === null || v === undefined) return "–";
    return v >= 1000 ? (v / 1000).toFixed(2) + " s" : fmt(v, "ms");
  }
  function fmtT(sec) {
    sec = Math.round(sec);
    var d = Math.floor(sec / 86400), h = Math.floor(sec % 86400 / 3600), m = Math.floor(sec % 3600 / 60), s = sec % 60;
    var out = (d ? d + "d" : "") + (h ? h + "h" : "") + (m && !d ? m + "m" : "") + (s && !d && !h ? s + "s" : "");
    return out || "0";
  }

  // The hover data: in the page (a saved report) or fetched once per
  // version of the charts (a live update brings a new element).
  var loaded = new WeakMap();
  function points() {
    var el = document.querySelector("script.points");
    if (!el) return null;
    var p = loaded.get(el);
    if (p) return p === "loading" ? null : p;
    if (el.textContent.trim()) {
      try { p = JSON.parse(el.textContent); } catch (e) { return null; }
      loaded.set(el, p);
      return p;
    }
    if (!el.dataset.src) return null;
    loaded.set(el, "loading");
    fetch(el.dataset.src, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.json();
    }).then(function (p) {
      loaded.set(el, p);
      if (lastMove) lastMove();
    }).catch(function () { loaded.delete(el); });
    return null;
  }
  var lastMove = null;

  // index of the point whose span holds t (or the nearest one).
  function find(p, t) {
    var lo = 0, hi = p.t0.length - 1;
    if (hi < 0) return -1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (p.t0[mid] <= t) lo = mid; else hi = mid - 1;
    }
    if (lo + 1 < p.t0.length && t - p.t1[lo] > p.t0[lo + 1] - t) lo++;
    return lo;
  }

  function rows(p, k, chart) {
    var r = [];
    var win = p.w[k] > 1 ? "windows " + p.i[k] + "–" + p.j[k] + " (" + p.w[k] + " merged)" : "window " + p.i[k];
    r.push(["", win]);
    r.push(["at", fmtT(p.t0[k]) + " – " + fmtT(p.t1[k])]);
    if (p.g[k] > 0) r.push(["lost", p.g[k] + (p.g[k] === 1 ? " window" : " windows")]);
    r.push(["requests", p.n[k].toLocaleString("en-US") + (p.n[k] < 1000 ? " (p99.9 on < 1,000)" : "")]);
    switch (chart) {
      case "throughput":
        r.push(["req/s", fmt(p.rps[k])], ["errors", fmt(p.err[k])], ["dropped", fmt(p.drop[k])]);
        break;
      case "latency":
        r.push(["p50", fmtMs(p.p50[k])], ["p90", fmtMs(p.p90[k])], ["p95", fmtMs(p.p95[k])], ["p99", fmtMs(p.p99[k])], ["p99.9", fmtMs(p.p999[k])], ["max", fmtMs(p.max[k])]);
        break;
      case "cpu":
        r.push(["CPU", fmt(p.cpu[k], "µs/req")]);
        break;
      case "alloc":
        r.push(["allocated", fmt(p.al[k], "KiB/req")], ["GC cycles", fmt(p.gcr[k], "per 1k req")]);
        break;
      case "memory":
        r.push(["RSS", fmt(p.rss[k], "MiB")], ["post-GC heap", fmt(p.heap[k], "MiB") + (p.gc[k] ? " (forced GC)" : "")]);
        break;
      default:
        r.push(["rows read/req", fmt(p.rr[k])]);
    }
    return r;
  }

  function tipHTML(r) {
    var d = document.createElement("div");
    r.forEach(function (kv) {
      var line = document.createElement("div");
      if (kv[0]) {
        var b = document.createElement("b");
        b.textContent = kv[0] + " ";
        line.appendChild(b);
      } else {
        line.className = "tiptitle";
      }
      line.appendChild(document.createTextNode(kv[1]));
      d.appendChild(line);
    });
    return d;
  }

  // Maps a pointer event over a chart to its time and the data area.
  function geometry(svg, ev) {
    var box = svg.getBoundingClientRect();
    var vw = +svg.dataset.vw, px0 = +svg.dataset.px0, px1 = +svg.dataset.px1;
    var t0 = +svg.dataset.t0, t1 = +svg.dataset.t1;
    var x = (ev.clientX - box.left) / box.width * vw;
    return {
      t: t0 + (x - px0) / (px1 - px0) * (t1 - t0),
      inside: x >= px0 && x <= px1,
      // page x (relative to the plot box) of a time
      xOf: function (t) { return (px0 + (t - t0) / (t1 - t0) * (px1 - px0)) / vw * box.width; },
      width: box.width
    };
  }

  function bindCharts(root) {
    root.querySelectorAll("figure.chart").forEach(function (fig) {
      var plot = fig.querySelector(".plot");
      if (!plot) return;
      var svg = plot.querySelector("svg"), cursor = plot.querySelector(".cursor"),
        tip = plot.querySelector(".tip"), sel = plot.querySelector(".sel");
      var chart = fig.dataset.chart, drag = null;
      plot.addEventListener("mouseenter", function () { points(); });
      plot.addEventListener("mousemove", function move(ev) {
        lastMove = function () { move(ev); };
        var g = geometry(svg, ev);
        if (drag !== null) {
          var a = Math.min(drag.x, ev.clientX - plot.getBoundingClientRect().left), b = Math.max(drag.x, ev.clientX - plot.getBoundingClientRect().left);
          sel.hidden = false;
          sel.style.left = a + "px";
          sel.style.width = (b - a) + "px";
        }
        var p = points();
        if (!g.inside || !p) { cursor.hidden = tip.hidden = true; return; }
        var k = find(p, g.t);
        if (k < 0) return;
        var xa = g.xOf(p.t0[k]), xb = g.xOf(p.t1[k]);
        cursor.hidden = false;
        cursor.style.left = xa + "px";
        cursor.style.width = Math.max(1, xb - xa) + "px";
        tip.hidden = false;
        tip.replaceChildren(tipHTML(rows(p, k, chart)));
        var left = xb + 12;
        if (left + tip.offsetWidth > g.width) left = Math.max(0, xa - tip.offsetWidth - 12);
        tip.style.left = left + "px";
      });
      plot.addEventListener("mouseleave", function () {
        lastMove = null;
        cursor.hidden = tip.hidden = true;
        sel.hidden = true;
        drag = null;
      });
      if (document.body.dataset.standalone) return; // no server to zoom with
      plot.addEventListener("mousedown", function (ev) {
        var g = geometry(svg, ev);
        if (!g.inside) return;
        ev.preventDefault();
        drag = { x: ev.clientX - plot.getBoundingClientRect().left, t: g.t };
      });
      plot.addEventListener("mouseup", function (ev) {
        if (drag === null) return;
        var g = geometry(svg, ev), start = drag;
        drag = null;
        sel.hidden = true;
        var dx = Math.abs(ev.clientX - plot.getBoundingClientRect().left - start.x);
        var p = points();
        if (dx < 6 || !p) return;
        var a = find(p, Math.min(start.t, g.t)), b = find(p, Math.max(start.t, g.t));
        var run = document.getElementById("run");
        var q = new URLSearchParams();
        q.set("from", p.i[a]);
        q.set("to", p.j[b] + 1);
        if (run.dataset.op) q.set("op", run.dataset.op);
        location.href = run.dataset.base + "?" + q.toString();
      });
    });
  }

  function bindOpSelect(root) {
    root.querySelectorAll("form.opsel select").forEach(function (s) {
      s.addEventListener("change", function () { s.form.submit(); });
    });
  }

  // Live: poll the run's state; when a window closed or the status changed,
  // fetch the changing part of the page and replace the parts that differ.
  function live() {
    var run = document.getElementById("run");
    if (!run || !run.dataset.live) return;
    // last starts at the state the page was rendered in, so a change
    // between the render and the first poll is not missed.
    var last = run.dataset.key || null, every = +run.dataset.poll || 2000;
    function tick() {
      fetch(run.dataset.state, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (st) {
        var key = st.key;
        if (last !== null && key !== last) refresh();
        last = key;
        if (!st.done) setTimeout(tick, every);
        else if (last !== null) refresh();
      }).catch(function () { setTimeout(tick, every * 2); });
    }
    function refresh() {
      fetch(run.dataset.live, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var changed = false;
        doc.querySelectorAll("[data-part]").forEach(function (part) {
          var cur = run.querySelector('[data-part="' + part.dataset.part + '"]');
          if (cur && cur.innerHTML !== part.innerHTML) {
            cur.replaceWith(document.adoptNode(part));
            changed = true;
          }
        });
        if (changed) { bindCharts(run); bindOpSelect(run); }
        run.dataset.refreshed = String((+run.dataset.refreshed || 0) + 1);
      });
    }
    setTimeout(tick, every);
  }

  document.addEventListener("DOMContentLoaded", function () {
    bindCharts(document);
    bindOpSelect(document);
    live();
  });
})();
