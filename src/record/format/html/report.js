(function () {
  "use strict";
  var cases = Array.prototype.slice.call(document.querySelectorAll("tbody.case"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll("[data-filter-status]"));
  var suite = document.getElementById("f-suite");
  var tag = document.getElementById("f-tag");
  var query = document.getElementById("f-q");
  var shown = document.getElementById("shown");
  var empty = document.getElementById("empty");
  var toggleAll = document.getElementById("toggle-all");
  var status = "all";
  var failing = { failed: true, timeout: true, error: true };

  function matches(c) {
    var s = c.getAttribute("data-status");
    if (status === "failing" ? !failing[s] : status !== "all" && s !== status) return false;
    if (suite.value && c.getAttribute("data-suite") !== suite.value) return false;
    if (tag.value && c.getAttribute("data-tags").split("\n").indexOf(tag.value) < 0) return false;
    var q = query.value.trim().toLowerCase();
    return !q || c.getAttribute("data-text").indexOf(q) >= 0;
  }

  function apply() {
    var n = 0;
    cases.forEach(function (c) {
      var ok = matches(c);
      c.hidden = !ok;
      if (ok) n++;
    });
    shown.textContent = "Showing " + n + " of " + cases.length + " cases";
    empty.hidden = n > 0;
  }

  function setOpen(c, open) {
    c.classList.toggle("open", open);
    c.querySelector("tr.row").setAttribute("aria-expanded", open ? "true" : "false");
    c.querySelector("tr.detail").hidden = !open;
  }

  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      status = b.getAttribute("data-filter-status");
      buttons.forEach(function (o) { o.setAttribute("aria-pressed", o === b ? "true" : "false"); });
      apply();
    });
  });
  [suite, tag].forEach(function (el) { el.addEventListener("change", apply); });
  query.addEventListener("input", apply);

  cases.forEach(function (c) {
    var row = c.querySelector("tr.row");
    row.addEventListener("click", function () { setOpen(c, !c.classList.contains("open")); });
    row.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        setOpen(c, !c.classList.contains("open"));
      }
    });
  });

  toggleAll.addEventListener("click", function () {
    var visible = cases.filter(function (c) { return !c.hidden; });
    var open = visible.some(function (c) { return !c.classList.contains("open"); });
    visible.forEach(function (c) { setOpen(c, open); });
    toggleAll.textContent = open ? "Collapse all" : "Expand all";
  });

  function openFromHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    var c = el && (el.classList.contains("case") ? el : el.closest && el.closest("tbody.case"));
    if (c) {
      c.hidden = false;
      setOpen(c, true);
      el.scrollIntoView({ block: "start" });
    }
  }
  window.addEventListener("hashchange", openFromHash);
  apply();
  openFromHash();
})();
