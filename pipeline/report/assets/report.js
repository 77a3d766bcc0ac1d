
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var CLASSES = ["device", "host", "link", "other"];
  var rendered = 0;

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var k in attrs) { node.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function text(parent, x, y, s, anchor) {
    var t = el("text", {x: x, y: y, "text-anchor": anchor || "start"}, parent);
    t.textContent = s;
    return t;
  }
  function tip(node, s) { el("title", {}, node).textContent = s; }
  function secs(s) {
    if (s < 60) { return (s < 10 ? s.toFixed(1) : Math.round(s)) + "s"; }
    var m = Math.floor(s / 60), r = Math.round(s % 60);
    return m < 60 ? m + "m " + (r < 10 ? "0" : "") + r + "s" : Math.floor(m / 60) + "h " + (m % 60) + "m";
  }
  function chart(parent, title, kind) {
    var box = document.createElement("div");
    box.className = "chart";
    var h = document.createElement("h3");
    h.textContent = title;
    box.appendChild(h);
    parent.appendChild(box);
    return {box: box, kind: kind};
  }
  function note(c, s) {
    var p = document.createElement("p");
    p.className = "note";
    p.textContent = s;
    c.box.appendChild(p);
  }
  function stacked(c, parts, width, label) {
    var svg = el("svg", {width: width, height: 46, "class": "chart-" + c.kind, role: "img"}, c.box);
    var total = parts.reduce(function (a, p) { return a + p.value; }, 0);
    var x = 0;
    parts.forEach(function (p) {
      if (!total || !p.value) { return; }
      var w = p.value / total * width;
      var r = el("rect", {x: x, y: 0, width: w, height: 22, fill: p.colour, "class": "seg seg-" + p.name}, svg);
      tip(r, p.name + ": " + p.text);
      x += w;
    });
    if (!total) { el("rect", {x: 0, y: 0, width: width, height: 22, fill: "#eee"}, svg); }
    text(svg, 0, 38, label);
    rendered += 1;
    return svg;
  }

  function hitChart(parent, leg) {
    var c = chart(parent, "ccache hit rate", "hit");
    var parts = [
      {name: "hits", value: leg.hits, colour: "#2e8b57", text: String(leg.hits)},
      {name: "misses", value: leg.misses, colour: "#c0392b", text: String(leg.misses)},
      {name: "uncacheable", value: leg.uncacheable, colour: "#bbbbbb", text: String(leg.uncacheable)}
    ];
    var rate = leg.hit_rate === null ? "no compilations" : (leg.hit_rate * 100).toFixed(1) + "% hits";
    stacked(c, parts, 260, rate + " (" + leg.hits + " hits, " + leg.misses + " misses)");
  }

  function splitChart(parent, leg) {
    var c = chart(parent, "Time by step class (summed)", "split");
    if (!leg.classes) { note(c, "no Ninja timings"); return; }
    var parts = CLASSES.map(function (k) {
      return {name: k, value: leg.classes[k], colour: data.colours[k], text: secs(leg.classes[k])};
    });
    var compile = leg.classes.device + leg.classes.host;
    var label = "device " + secs(leg.classes.device) + ", host " + secs(leg.classes.host) +
      (compile ? " (" + Math.round(leg.classes.device / compile * 100) + "% device)" : "");
    stacked(c, parts, 320, label);
  }

  function timelineChart(parent, leg) {
    var c = chart(parent, "Timeline of build steps", "timeline");
    if (!leg.timeline.length) { note(c, "no Ninja timings"); return; }
    var end = 0, lanes = 0;
    leg.timeline.forEach(function (t) { end = Math.max(end, t[1]); lanes = Math.max(lanes, t[4] + 1); });
    var width = 720, row = Math.max(3, Math.min(14, Math.floor(240 / lanes))), top = 4;
    var height = top + lanes * row + 34;
    var svg = el("svg", {width: width + 20, height: height, "class": "chart-timeline", role: "img"}, c.box);
    var scale = end ? width / end : 0;
    leg.timeline.forEach(function (t) {
      var r = el("rect", {
        x: 10 + t[0] * scale, y: top + t[4] * row,
        width: Math.max(1, (t[1] - t[0]) * scale), height: Math.max(1, row - 1),
        fill: data.colours[t[2]] || "#999", stroke: "#fff", "stroke-width": 0.5, "class": "step step-" + t[2]
      }, svg);
      tip(r, t[3] + " (" + t[2] + ", " + secs((t[1] - t[0]) / 1000) + ")");
    });
    var axisY = top + lanes * row + 14;
    el("line", {x1: 10, x2: 10 + width, y1: axisY - 10, y2: axisY - 10, stroke: "#999"}, svg);
    text(svg, 10, axisY + 4, "0s");
    text(svg, 10 + width, axisY + 4, secs(end / 1000), "end");
    var lx = 120;
    CLASSES.forEach(function (k) {
      el("rect", {x: lx, y: axisY - 5, width: 10, height: 10, fill: data.colours[k]}, svg);
      text(svg, lx + 14, axisY + 4, k);
      lx += 70;
    });
    if (leg.timeline_truncated) { note(c, "only the longest steps are shown"); }
    rendered += 1;
  }

  var root = document.getElementById("legs");
  data.legs.forEach(function (leg) {
    var section = document.createElement("section");
    section.className = "leg";
    section.setAttribute("data-leg", leg.leg);
    var h = document.createElement("h2");
    h.textContent = leg.leg + (leg.status === "success" ? "" : " (" + leg.status + ")");
    section.appendChild(h);
    if (leg.warning) {
      var w = document.createElement("p");
      w.className = "note";
      w.textContent = "\u26a0 " + leg.warning;
      section.appendChild(w);
    }
    var charts = document.createElement("div");
    charts.className = "charts";
    section.appendChild(charts);
    hitChart(charts, leg);
    splitChart(charts, leg);
    timelineChart(charts, leg);
    root.appendChild(section);
  });
  document.body.setAttribute("data-charts", String(rendered));
})();
