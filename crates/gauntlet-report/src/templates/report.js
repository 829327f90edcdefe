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
})();
