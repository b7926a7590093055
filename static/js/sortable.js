/* Sortable tables: progressive enhancement for <table class="sortable">.
 *
 * Each column header becomes a button (reachable with Tab, pressed with Enter or Space) that
 * sorts the table's body by that column; pressing it again reverses the order. A header's
 * aria-sort says the current order to screen readers. A cell's data-sort-value, when given,
 * is sorted on instead of its text; numbers sort as numbers, and empty cells or dashes go
 * last either way. Without JavaScript the table stays as the server ordered it.
 */
(function () {
  "use strict";

  var MISSING = /^(|–|-|—|n\/a)$/i;

  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var given = cell.getAttribute("data-sort-value");
    return (given !== null ? given : cell.textContent).trim();
  }

  function asNumber(text) {
    var match = /^[+\-]?\d+(?:[.,]\d+)?(?:e[+-]?\d+)?/i.exec(text.replace("−", "-"));
    return match ? parseFloat(match[0].replace(",", ".")) : NaN;
  }

  function compare(a, b, numeric) {
    if (numeric) return a.number - b.number;
    return a.text.localeCompare(b.text, undefined, {numeric: true, sensitivity: "base"});
  }

  function sortBy(table, header, index) {
    var body = table.tBodies[0];
    if (!body) return;
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows).map(function (row, position) {
      var text = cellValue(row, index);
      return {row: row, text: text, number: asNumber(text), missing: MISSING.test(text),
              position: position};
    });
    var present = rows.filter(function (item) { return !item.missing; });
    var numeric = present.length > 0 && present.every(function (item) {
      return !isNaN(item.number);
    });
    rows.sort(function (a, b) {
      if (a.missing !== b.missing) return a.missing ? 1 : -1;
      var order = a.missing ? 0 : compare(a, b, numeric);
      return (ascending ? order : -order) || a.position - b.position;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(table.querySelectorAll("thead th"), function (other) {
      other.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function enhance(table) {
    if (!table.tHead || table.getAttribute("data-sortable-ready")) return;
    var headerRow = table.tHead.rows[table.tHead.rows.length - 1];
    Array.prototype.forEach.call(headerRow.cells, function (header, index) {
      if (header.getAttribute("data-sort") === "none" || header.colSpan > 1) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = "Sort by this column";
      while (header.firstChild) button.appendChild(header.firstChild);
      header.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, header, index); });
    });
    table.setAttribute("data-sortable-ready", "1");
  }

  function enhanceAll() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), enhance);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", enhanceAll);
  } else {
    enhanceAll();
  }
})();
