// gauntlet: one trial as a person reviews it, drawn from the review gauntlet computes in Rust
// (crates/gauntlet-report/src/transcript.rs). Shared by `gauntlet view` and the HTML report.
// Every piece of run text is set as text (textContent), never parsed as HTML.
"use strict";
var GauntletReview = (function () {
  function el(tag, attrs) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) { return; }
      if (k.slice(0, 2) === "on") { e.addEventListener(k.slice(2), v); }
      else { e.setAttribute(k, v === true ? "" : String(v)); }
    });
    for (var i = 2; i < arguments.length; i++) { add(e, arguments[i]); }
    return e;
  }
  function add(parent, child) {
    if (child === null || child === undefined || child === false) { return; }
    if (Array.isArray(child)) { child.forEach(function (c) { add(parent, c); }); return; }
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  function text(v) {
    if (v === null || v === undefined) { return "null"; }
    return typeof v === "string" ? v : JSON.stringify(v, null, 2);
  }
  // A value inline: short JSON on one line, strings quoted as JSON writes them.
  function inline(v) {
    var s = JSON.stringify(v);
    return s === undefined ? "" : s;
  }
  function num(x) {
    if (typeof x !== "number") { return String(x); }
    return Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 2 : 1);
  }
  // A block of JSON or text, folded when long.
  function block(v, cls) {
    var s = text(v);
    var pre = el("pre", { class: "rv-pre " + (cls || "") }, s);
    if (s.split("\n").length <= 14 && s.length <= 1200) { return pre; }
    return el("details", { class: "rv-long" }, el("summary", {}, s.split("\n").length + " lines"), pre);
  }
  var LABEL = {
    user: "User", agent: "Agent", reasoning: "Reasoning", question: "Agent asks",
    confirmation_request: "Agent asks to confirm", final_answer: "Final answer"
  };

  function chip(v, i, ctx) {
    return el("button", {
      type: "button", class: "rv-chip " + v.status + " sev-" + v.severity,
      title: v.reason || (v.status === "passed" ? "passed" : v.name),
      onclick: function () { ctx.focusVerdict(i); }
    }, v.status === "failed" ? "✗ " : v.status === "note" ? "· " : "✓ ", v.name);
  }

  function changesTable(rows, cls) {
    return el("table", { class: "rv-diff " + (cls || "") },
      el("thead", {}, el("tr", {}, el("th", {}, "path"), el("th", {}, "before"), el("th", {}, ""), el("th", {}, "after"))),
      el("tbody", {}, rows.map(function (d) {
        return el("tr", { class: "rv-change " + d.op, "data-path": d.path },
          el("td", { class: "rv-path" }, el("code", {}, d.path)),
          el("td", { class: "rv-before" }, d.op === "added" ? el("span", { class: "rv-absent" }, "absent") : el("code", {}, inline(d.before))),
          el("td", { class: "rv-arrow" }, "→"),
          el("td", { class: "rv-after" }, d.op === "removed" ? el("span", { class: "rv-absent" }, "absent") : el("code", {}, inline(d.after))));
      })));
  }

  function card(e) {
    var c = e.call;
    var head = el("div", { class: "rv-card-head" },
      el("span", { class: "rv-tool" }, c.tool),
      c.access ? el("span", { class: "rv-badge " + c.access }, c.access) : null,
      c.fault ? el("span", { class: "rv-badge fault", title: c.fault_source ? "injected by " + c.fault_source : "injected fault" }, "fault: " + c.fault) : null,
      c.error ? el("span", { class: "rv-badge err" }, "error " + c.error.status) : el("span", { class: "rv-badge okb" }, "ok"),
      c.badges.map(function (b) { return el("span", { class: "rv-badge" }, b); }),
      el("span", { class: "rv-meta" }, (e.step !== undefined ? "step " + e.step + " · " : "") + num(c.latency_ms) + " ms · " + c.id));
    var out = c.error
      ? el("div", { class: "rv-io err" }, el("div", { class: "rv-io-label" }, "error"), block(c.error.message + (c.error.retry_after_s ? "\n(retry after " + c.error.retry_after_s + " s)" : "")))
      : el("div", { class: "rv-io" }, el("div", { class: "rv-io-label" }, "result"), c.result === null || c.result === undefined ? el("span", { class: "rv-absent" }, "none") : block(c.result));
    return el("div", { class: "rv-card" }, head,
      el("div", { class: "rv-io-row" },
        el("div", { class: "rv-io" }, el("div", { class: "rv-io-label" }, "arguments"), block(c.arguments)), out),
      c.changes.length ? el("div", { class: "rv-card-changes" }, el("div", { class: "rv-io-label" }, "changed the world"), changesTable(c.changes, "small")) : null);
  }

  function entry(e, n, review, ctx, request) {
    var failing = e.verdicts.filter(function (v) { return review.verdicts[v].status === "failed"; });
    var cls = "rv-entry " + e.kind + (e.tone ? " tone-" + e.tone : "") + (failing.length ? " flagged" : "");
    var body;
    if (e.kind === "tool_call") { body = card(e); }
    else if (e.kind === "reasoning") {
      body = el("details", { class: "rv-reasoning" }, el("summary", {}, "reasoning"), el("div", { class: "rv-text" }, e.text));
    } else if (e.kind === "confirmation") {
      body = el("div", { class: "rv-confirm " + (e.approved ? "yes" : "no") }, e.approved ? "User approves" : "User declines", e.text ? el("span", { class: "rv-said" }, " — “" + e.text + "”") : null);
    } else if (e.kind === "note" || e.kind === "model_call") {
      body = el("div", { class: "rv-note" }, el("b", {}, e.title), e.text ? el("span", {}, " " + e.text) : null);
    } else {
      body = el("div", { class: "rv-bubble" + (request ? " rv-request" : "") }, el("div", { class: "rv-who" }, request ? "User · the request" : LABEL[e.kind] || e.kind), el("div", { class: "rv-text" }, e.text));
    }
    // The verdicts that point here, beside it: a failing one with its reason, a note as a chip.
    var flags = e.verdicts.filter(function (v) { return review.verdicts[v].status !== "passed"; });
    return el("li", { class: cls, id: ctx.id + "-entry-" + n, "data-events": e.events.join(" ") },
      el("div", { class: "rv-body" }, body),
      flags.length ? el("div", { class: "rv-flags" }, flags.map(function (v) {
        var verdict = review.verdicts[v];
        return el("div", { class: "rv-flag " + verdict.status }, chip(verdict, v, ctx),
          verdict.status === "failed" && verdict.reason ? el("span", { class: "rv-flag-reason" }, verdict.reason) : null);
      })) : null);
  }

  function verdictRow(v, i, ctx) {
    return el("li", { class: "rv-verdict " + v.status + " sev-" + v.severity, id: ctx.id + "-verdict-" + i, "data-status": v.status, "data-name": v.name },
      el("div", { class: "rv-verdict-head" },
        el("span", { class: "rv-mark" }, v.status === "failed" ? "✗" : v.status === "note" ? "·" : "✓"),
        el("b", {}, v.name),
        v.status === "failed" && v.severity === "critical" ? el("span", { class: "rv-badge crit" }, "critical") : null,
        v.entries.length ? el("button", { type: "button", class: "rv-goto", title: "show the events it points at", onclick: function () { ctx.focusVerdict(i); } }, "events " + v.events.map(function (x) { return "#" + x; }).join(" ")) : null),
      v.reason ? el("div", { class: "rv-reason" }, v.reason) : null);
  }

  function verdicts(review, ctx) {
    var failed = [], passed = [], notes = [];
    review.verdicts.forEach(function (v, i) {
      (v.status === "failed" ? failed : v.status === "passed" ? passed : notes).push([v, i]);
    });
    var row = function (p) { return verdictRow(p[0], p[1], ctx); };
    return el("section", { class: "rv-verdicts" },
      el("h3", {}, "Verdicts ", el("span", { class: "rv-count" }, failed.length ? failed.length + " failed" : "all passed", " · " + passed.length + " passed")),
      el("ol", { class: "rv-list" }, failed.map(row)),
      passed.length ? el("details", { class: "rv-passed", open: failed.length ? null : true },
        el("summary", {}, passed.length + " passed"), el("ol", { class: "rv-list" }, passed.map(row))) : null,
      notes.length ? el("details", { class: "rv-notes" }, el("summary", {}, notes.length + " notes (measurements, never failures)"),
        el("ol", { class: "rv-list" }, notes.map(row))) : null);
  }

  function judges(review) {
    if (!review.judge_verdicts || !review.judge_verdicts.length) { return null; }
    return el("section", { class: "rv-judges" },
      el("h3", {}, "LLM judges"),
      el("ol", { class: "rv-list" }, review.judge_verdicts.map(function (j) {
        var cls = j.status !== "scored" || j.advisory ? "note" : /^pass/.test(j.verdict) ? "passed" : "failed";
        return el("li", { class: "rv-verdict rv-judge " + cls, "data-status": cls, "data-name": j.judge },
          el("div", { class: "rv-verdict-head" },
            el("span", { class: "rv-mark" }, cls === "failed" ? "✗" : cls === "passed" ? "✓" : "·"),
            el("b", {}, j.judge), el("span", { class: "rv-badge" }, j.verdict + (j.split ? " (split)" : "")),
            j.score ? el("span", { class: "rv-meta" }, "score " + j.score) : null),
          j.reason ? el("div", { class: "rv-reason" }, j.reason) : null,
          j.criteria ? el("div", { class: "rv-reason rv-muted" }, j.criteria) : null,
          j.samples ? el("div", { class: "rv-reason rv-muted" }, j.samples) : null);
      })));
  }

  function stateDiff(review) {
    return el("section", { class: "rv-state" },
      el("h3", {}, "State diff ", el("span", { class: "rv-count" }, review.diff.length + " changed path" + (review.diff.length === 1 ? "" : "s"))),
      review.diff.length ? changesTable(review.diff, "rv-state-diff") : el("p", { class: "rv-muted" }, "Nothing in the world changed."),
      review.mismatches && review.mismatches.length ? [
        el("h4", {}, "Expected by the case, not found"),
        el("table", { class: "rv-mismatch" }, el("thead", {}, el("tr", {}, el("th", {}, "path"), el("th", {}, "expected"), el("th", {}, "actual"))),
          el("tbody", {}, review.mismatches.map(function (m) {
            return el("tr", {}, el("td", {}, el("code", {}, m.path)), el("td", {}, el("code", {}, inline(m.expected))), el("td", { class: "bad" }, el("code", {}, inline(m.actual))));
          })))] : null);
  }

  function casePanel(c) {
    if (!c) { return null; }
    var kv = function (k, v) { return [el("dt", {}, k), el("dd", {}, v)]; };
    var has = function (o) { return o && (Array.isArray(o) ? o.length : Object.keys(o).length); };
    return el("section", { class: "rv-case" },
      el("h3", {}, "Case"),
      el("dl", {},
        kv("request", el("div", { class: "rv-text" }, c.request)),
        c.description ? kv("about", c.description) : null,
        has(c.expected_outcome) ? kv("expected", block(c.expected_outcome)) : null,
        has(c.constraints) ? kv("constraints", block(c.constraints)) : null,
        has(c.expected_tools) ? kv("tools", c.expected_tools.join(", ")) : null,
        has(c.faults) ? kv("faults", block(c.faults)) : null,
        has(c.tags) ? kv("tags", c.tags.map(function (t) { return el("span", { class: "rv-badge" }, t); })) : null,
        kv("file", el("code", { class: "rv-file" }, c.file))));
  }

  // render(review, {id, compact, casePanel}) -> element. `compact` stacks the columns (two
  // trials side by side).
  function render(review, opts) {
    opts = opts || {};
    var root = el("div", { class: "rv" + (opts.compact ? " compact" : ""), "data-status": review.status });
    var ctx = { id: opts.id || "rv" };
    ctx.focusVerdict = function (i) {
      root.querySelectorAll(".pointed").forEach(function (x) { x.classList.remove("pointed"); });
      var v = review.verdicts[i];
      var row = document.getElementById(ctx.id + "-verdict-" + i);
      if (row) { row.classList.add("pointed"); }
      var first = null;
      v.entries.forEach(function (n) {
        var t = document.getElementById(ctx.id + "-entry-" + n);
        if (t) { t.classList.add("pointed"); first = first || t; }
      });
      if (first) { first.scrollIntoView({ block: "center", behavior: "smooth" }); }
      else if (row) { row.scrollIntoView({ block: "center" }); }
    };
    // A conversation that opens with the request shows it there, once.
    var first = review.transcript[0];
    var opened = !!(first && first.kind === "user" && review.request !== null && first.text === review.request);
    var calls = review.transcript.filter(function (e) { return e.kind === "tool_call"; }).length;
    var convo = el("section", { class: "rv-convo" },
      el("h3", {}, "Conversation ", el("span", { class: "rv-count" }, review.transcript.length + " entries · " + calls + " tool call" + (calls === 1 ? "" : "s"))),
      el("ol", { class: "rv-transcript" }, review.transcript.map(function (e, n) {
        return entry(e, n, review, ctx, n === 0 && opened);
      })));
    var head = el("div", { class: "rv-head" },
      review.error ? el("div", { class: "rv-error" }, el("b", {}, "harness error "), review.error) : null,
      opened ? null : el("div", { class: "rv-request" }, el("span", { class: "rv-who" }, "Request"), el("div", { class: "rv-text" }, review.request || (opts.casePanel && opts.casePanel.request) || "(no user message)")));
    var side = el("aside", { class: "rv-side" }, verdicts(review, ctx), judges(review), stateDiff(review), casePanel(opts.casePanel));
    add(root, head);
    add(root, el("div", { class: "rv-grid" }, el("div", { class: "rv-main" }, convo), side));
    return root;
  }

  // The element builder is shared with the viewer's page, which loads this script first.
  return { render: render, el: el, add: add };
})();
