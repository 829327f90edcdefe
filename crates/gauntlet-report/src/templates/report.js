// gauntlet report: table filtering and sorting. Static code: it reads only escaped text and
// attribute values, and writes only text, so nothing in the data can become markup or code.
(function () {
  "use strict";
  var table = document.getElementById("trial-table");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var status = document.getElementById("filter-status");
  var text = document.getElementById("filter-text");
  var shown = document.getElementById("shown");
  function apply() {
    var s = status.value, q = text.value.toLowerCase(), n = 0;
    rows.forEach(function (r) {
      var ok = (!s || r.dataset.status === s) && (!q || r.dataset.search.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = n + " of " + rows.length + " trials";
  }
  status.addEventListener("change", apply);
  text.addEventListener("input", apply);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    var dir = 1;
    th.addEventListener("click", function () {
      var numeric = th.dataset.sort === "num";
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent, y = b.cells[col].textContent;
        return dir * (numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : x.localeCompare(y));
      });
      dir = -dir;
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  // A trajectory is drawn by the shared renderer (transcript.js) the first time it is opened,
  // from the review gauntlet computed (escaped JSON in an attribute, read back as data).
  function draw(d) {
    var box = d.querySelector("div.review");
    if (!box || box.dataset.drawn) { return; }
    box.dataset.drawn = "1";
    try {
      box.replaceChildren(GauntletReview.render(JSON.parse(box.dataset.review), { id: d.id }));
    } catch (e) {
      box.textContent = "this trajectory could not be drawn: " + e;
    }
  }
  Array.prototype.forEach.call(document.querySelectorAll("details.trajectory"), function (d) {
    d.addEventListener("toggle", function () { if (d.open) { draw(d); } });
    if (d.open) { draw(d); }
  });
  // Opening a trial from the table unfolds its trajectory.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    var d = el && el.closest("details");
    if (d) { d.open = true; }
  }
  window.addEventListener("hashchange", reveal);
  reveal();
  apply();

  // Human labels: a pass/fail and a note per trial, kept in this browser (localStorage, keyed by
  // the run) and exported as the JSONL `gauntlet calibrate --labels` reads. No server.
  var run = document.body.dataset.run || "";
  var storeKey = "gauntlet-labels:" + run;
  var sets = Array.prototype.slice.call(document.querySelectorAll("fieldset.labelling"));
  var rater = document.getElementById("rater");
  var out = document.getElementById("labels-jsonl");
  var count = document.getElementById("labelled");
  var cells = {};
  Array.prototype.forEach.call(document.querySelectorAll("td.your-label"), function (td) {
    cells[td.dataset.item] = td;
  });
  function current() {
    var labels = [];
    sets.forEach(function (f) {
      var picked = f.querySelector("input[type=radio]:checked");
      var note = f.querySelector("input.note").value.trim();
      if (picked && picked.value) {
        labels.push({ item: f.dataset.item, value: picked.value, note: note });
      }
    });
    return labels;
  }
  function jsonl(labels) {
    var who = rater.value.trim();
    return labels.map(function (l) {
      var o = { item: l.item, label: l.value === "pass" };
      if (who) { o.rater = who; }
      if (l.note) { o.note = l.note; }
      return JSON.stringify(o) + "\n";
    }).join("");
  }
  function refresh() {
    var labels = current();
    var byItem = {};
    labels.forEach(function (l) { byItem[l.item] = l.value; });
    Object.keys(cells).forEach(function (item) { cells[item].textContent = byItem[item] || ""; });
    count.textContent = labels.length + " labelled";
    out.value = jsonl(labels);
    try {
      localStorage.setItem(storeKey, JSON.stringify({ rater: rater.value, labels: labels }));
    } catch (e) { /* storage may be off for files; labels still export */ }
  }
  try {
    var saved = JSON.parse(localStorage.getItem(storeKey) || "null");
    if (saved) {
      rater.value = saved.rater || "";
      var byItem = {};
      (saved.labels || []).forEach(function (l) { byItem[l.item] = l; });
      sets.forEach(function (f) {
        var l = byItem[f.dataset.item];
        if (!l) { return; }
        var r = f.querySelector("input[type=radio][value=" + (l.value === "pass" ? "pass" : "fail") + "]");
        if (r) { r.checked = true; }
        f.querySelector("input.note").value = l.note || "";
      });
    }
  } catch (e) { /* nothing saved, or storage off */ }
  sets.forEach(function (f) {
    f.addEventListener("change", refresh);
    f.querySelector("input.note").addEventListener("input", refresh);
  });
  rater.addEventListener("input", refresh);
  document.getElementById("export-labels").addEventListener("click", function () {
    var blob = new Blob([jsonl(current())], { type: "application/x-ndjson" });
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "labels-" + (run || "run") + ".jsonl";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  });
  refresh();
})();
