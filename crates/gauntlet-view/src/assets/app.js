// gauntlet view: one page, routed by the URL's hash; every figure comes from /api/.
// Run text is only ever set as text (textContent), never parsed as HTML.
"use strict";
(function () {
  var TOKEN = new URLSearchParams(location.search).get("token") || "";
  var main = document.getElementById("main");
  var timer = null;

  function api(path, options) {
    options = options || {};
    options.headers = Object.assign({ "Authorization": "Bearer " + TOKEN }, options.headers || {});
    return fetch(path, options).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) { throw new Error(body && body.error ? body.error : "HTTP " + r.status); }
        return body;
      });
    });
  }

  // el("td", {class: "num"}, "text", child, ...): attributes as attributes, children as text or
  // nodes; the review's own builder (transcript.js, loaded before this script).
  var el = GauntletReview.el;
  var add = GauntletReview.add;
  function svgEl(tag, attrs) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c !== null && c !== undefined) { e.appendChild(c instanceof Node ? c : document.createTextNode(String(c))); }
    }
    return e;
  }
  // The report's own SVG plots, parsed as SVG (never HTML) and imported.
  function svgFrom(text) {
    var doc = new DOMParser().parseFromString(text, "image/svg+xml");
    var root = doc.documentElement;
    if (!root || root.nodeName !== "svg") { return el("p", { class: "muted" }, "(plot unavailable)"); }
    root.querySelectorAll("script, foreignObject").forEach(function (n) { n.remove(); });
    return document.importNode(root, true);
  }

  function fmt(x, digits) {
    if (x === null || x === undefined) { return "n/a"; }
    if (typeof x !== "number") { return String(x); }
    return Number.isInteger(x) ? String(x) : x.toFixed(digits === undefined ? 3 : digits);
  }
  function pct(x) { return x === null || x === undefined ? "n/a" : (x * 100).toFixed(1) + "%"; }
  function link(hash, text) { return el("a", { href: hash }, text); }
  function enc(s) { return encodeURIComponent(s); }
  function status(s) { return el("span", { class: s }, s); }
  function table(head, rows, attrs) {
    return el("table", attrs || {},
      el("thead", {}, el("tr", {}, head.map(function (h) { return el("th", {}, h); }))),
      el("tbody", {}, rows));
  }
  function show() {
    main.replaceChildren();
    for (var i = 0; i < arguments.length; i++) { add(main, arguments[i]); }
  }
  function fail(e) { show(el("p", { class: "error", id: "error" }, String(e.message || e))); }

  // Routes -------------------------------------------------------------------------------------

  // The current page's keys (the trajectory page's j and k), replaced on each route.
  var keys = null;
  document.addEventListener("keydown", function (ev) { if (keys) { keys(ev); } });

  function route() {
    if (timer) { clearInterval(timer); timer = null; }
    keys = null;
    var parts = location.hash.replace(/^#\/?/, "").split("/").map(function (p) {
      try { return decodeURIComponent(p); } catch (e) { return p; }
    });
    var page = parts[0] || "";
    if (page === "run") { runPage(parts[1]); }
    else if (page === "trial") { trialPage(parts[1], parts[2], parts[3]); }
    else if (page === "compare") { comparePage(parts[1], parts[2]); }
    else if (page === "label") { labelPage(parts[1]); }
    else if (page === "labels") { labelsPage(); }
    else if (page === "lake") { lakePage(); }
    else { runsPage(); }
  }
  window.addEventListener("hashchange", route);

  // Runs and trends ------------------------------------------------------------------------------

  function metric(r, name) { return r.metrics ? r.metrics[name] : undefined; }
  function interval(r, name) { return r.intervals ? r.intervals[name] : undefined; }

  // Pass rate over a suite's runs, oldest first, with its interval as a band.
  function trend(runs) {
    var pts = runs.filter(function (r) { return typeof metric(r, "pass_rate") === "number"; })
      .slice().reverse();
    var W = 640, H = 180, L = 40, R = 10, T = 10, B = 30;
    var svg = svgEl("svg", { class: "trend", viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" },
      svgEl("title", {}, "pass rate over runs"));
    var x = function (i) { return L + (pts.length < 2 ? (W - L - R) / 2 : i * (W - L - R) / (pts.length - 1)); };
    var y = function (v) { return T + (1 - v) * (H - T - B); };
    [0, 0.5, 1].forEach(function (v) {
      svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#d0d7de" }));
      svg.appendChild(svgEl("text", { x: 4, y: y(v) + 4, "font-size": 11, fill: "#57606a" }, (v * 100) + "%"));
    });
    var band = [], upper = [], lower = [];
    pts.forEach(function (r, i) {
      var iv = interval(r, "pass_rate");
      if (iv) { upper.push(x(i) + "," + y(iv.upper)); lower.unshift(x(i) + "," + y(iv.lower)); }
    });
    if (upper.length > 1) {
      band = upper.concat(lower);
      svg.appendChild(svgEl("polygon", { points: band.join(" "), fill: "#0969da", "fill-opacity": 0.15 }));
    }
    if (pts.length > 1) {
      svg.appendChild(svgEl("polyline", {
        points: pts.map(function (r, i) { return x(i) + "," + y(metric(r, "pass_rate")); }).join(" "),
        fill: "none", stroke: "#0969da", "stroke-width": 2
      }));
    }
    if (pts.length) {
      var day = function (r) { return String(r.started_at || r.run_id).slice(0, 16).replace("T", " "); };
      svg.appendChild(svgEl("text", { x: L, y: H - 8, "font-size": 11, fill: "#57606a" }, day(pts[0])));
      if (pts.length > 1) {
        svg.appendChild(svgEl("text", { x: W - R, y: H - 8, "font-size": 11, fill: "#57606a", "text-anchor": "end" }, day(pts[pts.length - 1])));
      }
    }
    pts.forEach(function (r, i) {
      var c = svgEl("circle", { cx: x(i), cy: y(metric(r, "pass_rate")), r: 4, fill: r.verdict === "passed" ? "#1a7f37" : "#cf222e", class: "point" },
        svgEl("title", {}, r.run_id + ": " + pct(metric(r, "pass_rate"))));
      c.addEventListener("click", function () { location.hash = "#/run/" + enc(r.run_id); });
      svg.appendChild(c);
    });
    return svg;
  }

  function runsPage() {
    api("/api/runs").then(function (runs) {
      var bySuite = new Map();
      runs.forEach(function (r) {
        if (!bySuite.has(r.suite)) { bySuite.set(r.suite, []); }
        bySuite.get(r.suite).push(r);
      });
      var picked = [];
      var compareButton = el("button", { id: "compare", disabled: true, onclick: function () {
        location.hash = "#/compare/" + enc(picked[0]) + "/" + enc(picked[1]);
      } }, "Compare the two runs picked");
      function pick(id, on) {
        picked = picked.filter(function (p) { return p !== id; });
        if (on) { picked.push(id); }
        if (picked.length > 2) { picked.shift(); }
        document.querySelectorAll("input.pick").forEach(function (c) { c.checked = picked.indexOf(c.value) >= 0; });
        compareButton.disabled = picked.length !== 2;
      }
      var sections = Array.from(bySuite.keys()).sort().map(function (suite) {
        var rs = bySuite.get(suite);
        return el("section", { class: "suite", "data-suite": suite },
          el("h2", {}, suite, " ", el("span", { class: "muted" }, rs.length + " run(s)")),
          trend(rs),
          table(["", "run", "started", "agent", "verdict", "passed", "pass rate", "pass^k", "task success", "critical violations", "mean cost (EUR)", "latency p50 (ms)", ""],
            rs.map(function (r) {
              return el("tr", { class: "run", "data-run": r.run_id },
                el("td", {}, el("input", { type: "checkbox", class: "pick", value: r.run_id, disabled: r.finished_at ? null : true,
                  onchange: function (ev) { pick(r.run_id, ev.target.checked); } })),
                el("td", {}, link("#/run/" + enc(r.run_id), r.name || r.run_id), r.name ? el("div", { class: "muted small" }, r.run_id) : null),
                el("td", {}, r.started_at),
                el("td", {}, r.agent),
                el("td", {}, status(r.verdict)),
                el("td", { class: "num" }, r.passed + "/" + r.trials),
                el("td", { class: "num" }, pct(metric(r, "pass_rate")),
                  interval(r, "pass_rate") ? el("span", { class: "muted" }, " [" + pct(interval(r, "pass_rate").lower) + ", " + pct(interval(r, "pass_rate").upper) + "]") : null),
                el("td", { class: "num" }, fmt(metric(r, "pass_hat_" + r.epochs))),
                el("td", { class: "num" }, fmt(metric(r, "task_success_rate"))),
                el("td", { class: "num" }, fmt(metric(r, "critical_policy_violations"))),
                el("td", { class: "num" }, fmt(metric(r, "mean_cost_eur"), 4)),
                el("td", { class: "num" }, fmt(metric(r, "p50_latency_ms"), 1)),
                el("td", {}, link("#/label/" + enc(r.run_id), "label")));
            }), { class: "runs" }));
      });
      show(el("h1", {}, "Runs"),
        runs.length ? el("p", {}, compareButton) : el("p", { class: "muted" }, "No runs under the folders viewed yet: gauntlet run writes them."),
        sections);
    }).catch(fail);
  }

  // A run ---------------------------------------------------------------------------------------

  function runPage(id) {
    var state = { offset: 0, limit: 50 };
    var tableBox = el("div", { id: "trials" });
    var head = el("div", {});
    function filters(run) {
      var f = run.filters;
      var sel = function (name, values) {
        return el("label", {}, name, el("select", { id: "filter-" + name, onchange: reload },
          el("option", { value: "" }, "any"), values.map(function (v) { return el("option", { value: v }, v); })));
      };
      return el("div", { class: "filters" },
        sel("status", ["passed", "failed", "error"]),
        el("label", {}, "case", el("input", { id: "filter-case", size: 16, onchange: reload })),
        sel("tag", f.tags), sel("evaluator", f.evaluators),
        el("label", {}, "search", el("input", { id: "filter-q", size: 20, oninput: reload })));
    }
    function value(name) { var e = document.getElementById("filter-" + name); return e ? e.value : ""; }
    function reload() { state.offset = 0; loadTrials(); }
    function loadTrials() {
      var q = new URLSearchParams({ offset: state.offset, limit: state.limit });
      ["status", "case", "tag", "evaluator", "q"].forEach(function (k) { if (value(k)) { q.set(k, value(k)); } });
      return api("/api/runs/" + enc(id) + "/trials?" + q).then(function (page) {
        var rows = page.trials.map(function (t) {
          return el("tr", { class: "trial " + t.status, "data-item": t.case_id + "#" + t.epoch },
            el("td", {}, link("#/trial/" + enc(id) + "/" + enc(t.case_id) + "/" + t.epoch, t.case_id + "#" + t.epoch)),
            el("td", {}, status(t.status)),
            el("td", {}, t.tags.map(function (g) { return el("span", { class: "badge" }, g); })),
            el("td", {}, t.failed.join(", ")),
            el("td", { class: "num" }, t.tool_calls),
            el("td", { class: "num" }, fmt(t.duration_ms, 1)),
            el("td", { class: "text" }, t.text));
        });
        var last = Math.min(page.total, state.offset + page.trials.length);
        tableBox.replaceChildren(
          el("div", { class: "pager" },
            el("button", { id: "prev", disabled: state.offset === 0 ? true : null, onclick: function () { state.offset = Math.max(0, state.offset - state.limit); loadTrials(); } }, "‹ previous"),
            el("span", { id: "shown" }, page.total ? (state.offset + 1) + "–" + last + " of " + page.total : "no trials match"),
            el("button", { id: "next", disabled: last >= page.total ? true : null, onclick: function () { state.offset += state.limit; loadTrials(); } }, "next ›")),
          table(["trial", "status", "tags", "failed by", "tool calls", "ms", "answer or error"], rows, { id: "trial-table" }));
      });
    }
    function header(run) {
      var live = run.verdict === "running";
      head.replaceChildren(
        el("h1", {}, run.suite, " · ", run.name || run.run_id, run.name ? el("span", { class: "muted small" }, " " + run.run_id) : null),
        el("p", {}, "verdict ", el("strong", { id: "verdict", class: run.verdict }, run.verdict),
          live ? el("span", { class: "live", id: "live" }, " · live, following the run") : null,
          " · ", el("span", { id: "counts" }, run.passed + " passed, " + run.failed + " failed, " + run.errors + " errors of " + run.trials),
          " · agent ", run.agent, " · started ", run.started_at,
          " · ", link("#/label/" + enc(run.run_id), "label its trials")));
      return live;
    }
    function gates(run) {
      var out = [];
      if (run.gates && run.gates.length) {
        out.push(el("h2", {}, "Gates"), table(["gate", "expression", "result"], run.gates.map(function (g) {
          return el("tr", { class: "gate " + (g.passed ? "pass" : "fail") }, el("td", {}, g.name), el("td", {}, el("code", {}, g.expr)), el("td", {}, status(g.passed ? "passed" : "failed")));
        }), { class: "gates" }));
      }
      if (run.rubric && run.rubric.dimensions) {
        out.push(el("h2", {}, "Rubric"), el("p", {}, "weighted score ", fmt(run.rubric.score)));
      }
      return out;
    }
    // Metrics and plots, below the trials. A metric that is n/a or zero (for every trial, as
    // the run's figure says) is folded away: it says nothing about this run.
    function details(run) {
      var out = [];
      var names = Object.keys(run.metrics || {}).filter(function (k) { return typeof run.metrics[k] === "number" || run.metrics[k] === null; });
      var row = function (k) {
        var iv = run.intervals && run.intervals[k];
        return el("tr", {}, el("td", {}, k), el("td", { class: "num" }, fmt(run.metrics[k])), el("td", { class: "num" }, iv ? "[" + fmt(iv.lower) + ", " + fmt(iv.upper) + "]" : ""));
      };
      var empty = function (k) { return run.metrics[k] === null || run.metrics[k] === 0; };
      var shown = names.filter(function (k) { return !empty(k); }), folded = names.filter(empty);
      out.push(el("h2", {}, "Metrics"), table(["metric", "value", "95% interval"], shown.map(row), { class: "metrics" }));
      if (folded.length) {
        out.push(el("details", { class: "folded", id: "folded-metrics" }, el("summary", {}, folded.length + " metrics n/a or zero for every trial"),
          table(["metric", "value", "95% interval"], folded.map(row), { class: "metrics" })));
      }
      if (run.plots && run.plots.length) {
        out.push(el("h2", {}, "Plots"), el("div", { class: "grid" }, run.plots.map(function (p) {
          return el("figure", { class: "plot" }, el("figcaption", {}, p.title), svgFrom(p.svg));
        })));
      }
      return out;
    }
    api("/api/runs/" + enc(id)).then(function (run) {
      var live = header(run);
      show(head, el("div", { id: "gates" }, gates(run)), el("h2", {}, "Trials"), filters(run), tableBox, el("div", { id: "details" }, details(run)));
      return loadTrials().then(function () {
        if (!live) { return; }
        timer = setInterval(function () {
          api("/api/runs/" + enc(id)).then(function (r) {
            if (!header(r)) {
              clearInterval(timer); timer = null;
              var box = document.getElementById("details");
              box.replaceChildren();
              add(box, details(r));
              var g = document.getElementById("gates");
              g.replaceChildren();
              add(g, gates(r));
            }
            return loadTrials();
          }).catch(function () {});
        }, 1000);
      });
    }).catch(fail);
  }

  // A trajectory --------------------------------------------------------------------------------

  function runName(run, id) { return run && run.name ? run.name : id; }

  function trialPage(id, caseId, epoch) {
    api("/api/runs/" + enc(id) + "/trial?case=" + enc(caseId) + "&epoch=" + enc(epoch)).then(function (t) {
      var c = t.case;
      var nav = el("span", { class: "review-nav", id: "review-nav" });
      // The run's failing trials in turn: the previous and the next one (keys k and j).
      api("/api/runs/" + enc(id) + "/trials?status=failed&limit=1000").then(function (page) {
        var items = page.trials.map(function (x) { return [x.case_id, x.epoch]; });
        var here = items.findIndex(function (x) { return x[0] === caseId && String(x[1]) === String(epoch); });
        var to = function (x) { return "#/trial/" + enc(id) + "/" + enc(x[0]) + "/" + x[1]; };
        var prev = here > 0 ? items[here - 1] : here < 0 && items.length ? items[items.length - 1] : null;
        var next = here >= 0 ? items[here + 1] : items[0];
        nav.replaceChildren(
          prev ? el("a", { href: to(prev), id: "prev-failed", title: "k" }, "‹ previous failed") : el("span", { class: "muted" }, "‹ previous failed"),
          el("span", { class: "muted" }, here >= 0 ? " · " + (here + 1) + " of " + items.length + " failed · " : " · " + items.length + " failed · "),
          next ? el("a", { href: to(next), id: "next-failed", title: "j" }, "next failed ›") : el("span", { class: "muted" }, "next failed ›"));
        keys = function (ev) {
          if (ev.target && /INPUT|SELECT|TEXTAREA/.test(ev.target.tagName)) { return; }
          if (location.hash.indexOf("#/trial/") !== 0) { return; }
          if (ev.key === "j" && next) { location.hash = to(next); }
          if (ev.key === "k" && prev) { location.hash = to(prev); }
        };
      }).catch(function () {});
      show(
        el("p", { class: "crumbs" }, link("#/run/" + enc(id), "‹ " + (t.run ? t.run.suite + " · " : "") + runName(t.run, id)), nav),
        el("h1", { class: "trial-title" }, caseId + "#" + epoch, " ", el("span", { class: "pill " + t.status }, t.status),
          el("span", { class: "muted small" }, " " + (t.trajectory.events.length) + " events · " + fmt(t.duration_ms, 0) + " ms")),
        c && c.changed_since_run ? el("p", { class: "muted", id: "case-changed" }, "The suite's cases changed since this run: the case panel shows the case as it is now.") : null,
        GauntletReview.render(t, { id: "trial", casePanel: c }),
        el("details", { class: "raw" }, el("summary", {}, "The stored record (JSON)"), el("pre", {}, JSON.stringify({ trajectory: t.trajectory, scores: t.scores, final_state: t.final_state }, null, 2))));
    }).catch(fail);
  }

  // Compare -------------------------------------------------------------------------------------

  function cellOf(c) {
    if (!c) { return el("td", { class: "cell missing" }, "—"); }
    var why = c.reasons.length ? c.reasons.join("\n") : c.status;
    return el("td", { class: "cell " + c.status + (c.critical ? " critical" : ""), title: why }, c.status === "passed" ? "✓ passed" : c.status === "error" ? "! error" : "✗ failed");
  }

  function comparePage(a, b) {
    api("/api/compare?a=" + enc(a) + "&b=" + enc(b)).then(function (c) {
      var p = c.pass;
      var names = c.names || {};
      var nameA = names.a || c.run_a, nameB = names.b || c.run_b;
      var side = el("div", { id: "side-by-side" });
      function open(row, tr) {
        document.querySelectorAll("#matrix tr.selected").forEach(function (x) { x.classList.remove("selected"); });
        tr.classList.add("selected");
        var one = function (run, label, cls) {
          var box = el("div", { class: "side " + cls }, el("h3", {}, label), el("p", { class: "muted" }, "Loading…"));
          api("/api/runs/" + enc(run) + "/trial?case=" + enc(row.case_id) + "&epoch=" + row.epoch).then(function (t) {
            box.replaceChildren(el("h3", {}, label, " ", el("span", { class: "pill " + t.status }, t.status), " ",
              link("#/trial/" + enc(run) + "/" + enc(row.case_id) + "/" + row.epoch, "open")),
              GauntletReview.render(t, { id: "side-" + cls, compact: true }));
          }).catch(function (e) { box.replaceChildren(el("h3", {}, label), el("p", { class: "error" }, String(e.message || e))); });
          return box;
        };
        side.replaceChildren(el("h2", {}, row.case_id + "#" + row.epoch + ", side by side"),
          el("div", { class: "pair" }, row.a ? one(c.run_a, "A · " + nameA, "a") : el("div", { class: "side a" }, el("p", { class: "muted" }, "not in A")),
            row.b ? one(c.run_b, "B · " + nameB, "b") : el("div", { class: "side b" }, el("p", { class: "muted" }, "not in B"))));
        side.scrollIntoView({ block: "start" });
      }
      var matrix = c.matrix || [];
      var flipped = matrix.filter(function (r) { return r.flipped; }).length;
      var rows = matrix.map(function (r) {
        var why = r.b && r.b.reasons.length ? r.b.reasons[0] + (r.b.reasons.length > 1 ? " (+" + (r.b.reasons.length - 1) + " more)" : "") : "";
        var tr = el("tr", { class: "case-row" + (r.flipped ? " flipped" : ""), "data-case": r.case_id, "data-epoch": r.epoch },
          el("td", {}, r.flipped ? el("span", { class: "flip-mark", title: "flipped" }, "⇄ ") : null, r.case_id, r.epoch ? el("span", { class: "muted" }, "#" + r.epoch) : null),
          cellOf(r.a), cellOf(r.b), el("td", { class: "why" }, why));
        tr.addEventListener("click", function () { open(r, tr); });
        return tr;
      });
      var segmentRow = function (s) {
        return el("tr", { class: s.diff < 0 ? "bad" : s.diff > 0 ? "ok" : "" }, el("td", {}, s.kind), el("td", {}, s.value), el("td", { class: "num" }, (s.diff * 100).toFixed(1) + " pts"));
      };
      var moved = (c.segments || []).filter(function (s) { return s.diff !== 0; });
      var still = (c.segments || []).filter(function (s) { return s.diff === 0; });
      var cv = c.critical_violations || {};
      var nf = c.noise_floor || {};
      show(el("h1", {}, "Compare ", el("span", { class: "run-a" }, nameA), " → ", el("span", { class: "run-b" }, nameB)),
        el("p", { id: "compare-verdict", class: "verdict-line " + (c.regression || c.direction === "worse" ? "bad" : c.direction === "better" ? "ok" : "") }, c.verdict),
        el("div", { class: "tiles" },
          el("div", { class: "tile" }, el("b", {}, pct(p.a_rate) + " → " + pct(p.b_rate)), el("span", {}, "pass rate (" + (p.diff >= 0 ? "+" : "") + (p.diff * 100).toFixed(1) + " pts)")),
          el("div", { class: "tile" + (flipped ? " warn" : "") }, el("b", {}, String(flipped)), el("span", {}, "trials flipped")),
          el("div", { class: "tile" + ((cv.new_in_b || []).length ? " bad" : "") }, el("b", {}, (cv.a || 0) + " → " + (cv.b || 0)), el("span", {}, "critical violations" + ((cv.new_in_b || []).length ? ", new on " + cv.new_in_b.join(", ") : ""))),
          nf.single_run_difference_95 !== null && nf.single_run_difference_95 !== undefined ? el("div", { class: "tile" }, el("b", {}, "±" + fmt(nf.single_run_difference_95, 1) + " pts"), el("span", {}, "noise floor of two single runs")) : null),
        el("h2", {}, "Cases × runs ", el("span", { class: "muted small" }, flipped ? "flipped first; click a row for both trajectories side by side" : "none flipped; click a row for both trajectories side by side")),
        table(["case", "A · " + nameA, "B · " + nameB, "why (B)"], rows, { id: "matrix", class: "matrix" }),
        side,
        el("h2", {}, "Statistics"),
        table(["", "baseline (A)", "candidate (B)", "B − A", "95% interval", "McNemar p", "only A passed", "only B passed"], [
          el("tr", { class: "pass-row" }, el("td", {}, "pass rate"), el("td", { class: "num" }, pct(p.a_rate)), el("td", { class: "num" }, pct(p.b_rate)),
            el("td", { class: "num" }, (p.diff * 100).toFixed(1) + " pts"), el("td", { class: "num" }, "[" + (p.interval.lower * 100).toFixed(1) + ", " + (p.interval.upper * 100).toFixed(1) + "]"),
            el("td", { class: "num", id: "p-value" }, fmt(p.p_value, 4)), el("td", { class: "num" }, p.a_only), el("td", { class: "num" }, p.b_only))
        ], { id: "compare-pass" }),
        el("p", { class: "muted" }, c.pairs + " paired trials"),
        el("h2", {}, "Per-trial quantities"),
        table(["metric", "A", "B", "B − A"], (c.metrics || []).map(function (m) {
          return el("tr", {}, el("td", {}, m.name), el("td", { class: "num" }, fmt(m.a_mean)), el("td", { class: "num" }, fmt(m.b_mean)), el("td", { class: "num" }, fmt(m.diff)));
        })),
        el("h2", {}, "What moved"),
        table(["segment", "value", "B − A"], moved.map(segmentRow), { id: "moved" }),
        still.length ? el("details", { class: "folded" }, el("summary", {}, still.length + " segments did not move"), table(["segment", "value", "B − A"], still.map(segmentRow))) : null,
        (c.changed || []).length ? [el("h2", {}, "Changed between the runs"), el("ul", {}, c.changed.map(function (x) { return el("li", {}, x); }))] : null,
        (c.warnings || []).length ? [el("h2", {}, "Warnings"), el("ul", {}, c.warnings.map(function (x) { return el("li", {}, x); }))] : null);
    }).catch(fail);
  }

  // Labelling -----------------------------------------------------------------------------------

  function raterInput() {
    var input = el("input", { id: "rater", placeholder: "your name", value: localStorage.getItem("gauntlet-rater") || "" });
    input.addEventListener("change", function () { localStorage.setItem("gauntlet-rater", input.value.trim()); });
    return input;
  }

  function labelPage(id) {
    var state = { offset: 0, limit: 25 };
    var rater = raterInput();
    var statusSel = el("select", { id: "queue-status", onchange: function () { state.offset = 0; load(); } },
      el("option", { value: "" }, "all trials"), el("option", { value: "failed" }, "failed"), el("option", { value: "passed" }, "passed"));
    var box = el("div", { id: "queue" });
    var saved = el("p", { id: "saved", class: "muted" });
    function load() {
      var q = new URLSearchParams({ offset: state.offset, limit: state.limit });
      if (statusSel.value) { q.set("status", statusSel.value); }
      return Promise.all([api("/api/runs/" + enc(id) + "/trials?" + q), api("/api/labels")]).then(function (res) {
        var page = res[0], file = res[1];
        saved.textContent = file.labels.length + " label(s) in " + file.file;
        var byItem = new Map();
        file.labels.forEach(function (l) {
          if (!byItem.has(l.item)) { byItem.set(l.item, []); }
          byItem.get(l.item).push(l);
        });
        box.replaceChildren(table(["trial", "status", "answer or error", "labels so far", "your label", "note", ""], page.trials.map(function (t) {
          var item = t.case_id + "#" + t.epoch;
          var mine = (byItem.get(item) || []).filter(function (l) { return l.rater === rater.value.trim(); })[0];
          var note = el("input", { class: "note", size: 24, value: mine && mine.note ? mine.note : "" });
          var result = el("span", { class: "result muted" });
          function send(verdict) {
            if (!rater.value.trim()) { result.textContent = "give your name first"; rater.focus(); return; }
            api("/api/labels", { method: "POST", headers: { "Content-Type": "application/json" },
              body: JSON.stringify({ item: item, label: verdict, rater: rater.value.trim(), note: note.value }) })
              .then(function () { result.textContent = "saved"; return load(); })
              .catch(function (e) { result.textContent = String(e.message); });
          }
          return el("tr", { class: "labelrow", "data-item": item },
            el("td", {}, link("#/trial/" + enc(id) + "/" + enc(t.case_id) + "/" + t.epoch, item)),
            el("td", {}, status(t.status)),
            el("td", { class: "text" }, t.text),
            el("td", { class: "others" }, (byItem.get(item) || []).map(function (l) { return el("span", { class: "badge" }, l.rater + ": " + (l.label === true ? "pass" : l.label === false ? "fail" : String(l.label))); })),
            el("td", { class: "your" }, mine ? (mine.label ? "pass" : "fail") : ""),
            el("td", {}, note),
            el("td", {}, el("button", { class: "label-pass", onclick: function () { send("pass"); } }, "pass"), " ",
              el("button", { class: "label-fail", onclick: function () { send("fail"); } }, "fail"), " ", result));
        }), { id: "label-table" }),
        el("div", { class: "pager" },
          el("button", { disabled: state.offset === 0 ? true : null, onclick: function () { state.offset = Math.max(0, state.offset - state.limit); load(); } }, "‹ previous"),
          el("span", {}, page.total + " trial(s)"),
          el("button", { disabled: state.offset + state.limit >= page.total ? true : null, onclick: function () { state.offset += state.limit; load(); } }, "next ›")));
      });
    }
    show(el("p", {}, link("#/run/" + enc(id), "‹ run " + id)), el("h1", {}, "Label the trials of ", id),
      el("p", {}, "Each rater gives their name; a label saved again replaces that rater's earlier one. ",
        "The file is what ", el("code", {}, "gauntlet calibrate --labels"), " reads."),
      el("div", { class: "filters" }, el("label", {}, "rater", rater), el("label", {}, "queue", statusSel)), saved, box);
    load().catch(fail);
  }

  function labelsPage() {
    api("/api/labels").then(function (file) {
      show(el("h1", {}, "Labels"), el("p", {}, file.labels.length + " label(s) in ", el("code", {}, file.file)),
        table(["item", "rater", "label", "note"], file.labels.map(function (l) {
          return el("tr", {}, el("td", {}, l.item), el("td", {}, l.rater || ""), el("td", {}, String(l.label)), el("td", {}, l.note || ""));
        }), { id: "labels" }),
        el("p", { class: "muted" }, "Calibrate a judge with: gauntlet calibrate --labels " + file.file + " --verdicts RUN_FOLDER"));
    }).catch(fail);
  }

  // The lake ------------------------------------------------------------------------------------

  function lakePage() {
    api("/api/lakes").then(function (lakes) {
      var detail = el("div", { id: "candidates" });
      show(el("h1", {}, "Production traces"),
        lakes.length ? null : el("p", { class: "muted" }, "No lake under the folders viewed (gauntlet online --lake DIR writes one)."),
        lakes.map(function (l) {
          var series = l.days.map(function (d) { return { run_id: d.day, metrics: { pass_rate: d.pass_rate }, verdict: d.pass_rate === 1 ? "passed" : "failed" }; }).reverse();
          return el("section", { class: "suite lake" }, el("h2", {}, l.dir), trend(series),
            table(["day", "traces", "passed", "failed", "errors", "pass rate", ""], l.days.map(function (d) {
              return el("tr", { class: "day" }, el("td", {}, d.day), el("td", { class: "num" }, d.traces), el("td", { class: "num" }, d.passed),
                el("td", { class: "num" }, d.failed), el("td", { class: "num" }, d.errors), el("td", { class: "num" }, pct(d.pass_rate)),
                el("td", {}, el("button", { onclick: function () { candidates(l.lake, d.day, detail); } }, "harvest candidates")));
            })));
        }), detail);
    }).catch(fail);
  }

  function candidates(lake, day, box) {
    api("/api/lakes/candidates?lake=" + lake + "&day=" + enc(day)).then(function (rows) {
      box.replaceChildren(el("h2", {}, "Failed traces of " + day), el("p", { class: "muted" }, "gauntlet harvest LAKE@" + day + ".." + day + " --out SUITE turns them into cases."),
        table(["trace", "agent", "status", "failed by", "user input"], rows.map(function (r) {
          return el("tr", {}, el("td", {}, el("code", {}, r.trace_id)), el("td", {}, r.agent), el("td", {}, status(r.status)),
            el("td", {}, (r.failed_evaluators || []).join(", ")), el("td", {}, r.user_input || ""));
        })));
    }).catch(fail);
  }

  route();
})();
