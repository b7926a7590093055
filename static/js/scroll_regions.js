/* A table wider than a narrow screen scrolls sideways inside its own box. Someone on a
 * keyboard must be able to reach that box to scroll it: a box that scrolls and holds nothing
 * focusable is made focusable, and named after its table's caption or nearest heading.
 */
(function () {
  "use strict";

  var FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";

  function nameOf(box) {
    var caption = box.querySelector("caption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    for (var node = box; node; node = node.previousElementSibling || node.parentElement) {
      if (/^H[1-6]$/.test(node.tagName)) return node.textContent.trim();
      var heading = node !== box && node.querySelector && node.querySelector("h1,h2,h3,h4");
      if (heading) return heading.textContent.trim();
    }
    return "Table";
  }

  function mark() {
    var boxes = document.querySelectorAll("main div.scroll, main .table-scroll, main table");
    Array.prototype.forEach.call(boxes, function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      if (box.getAttribute("data-scroll-region") === "1") {
        if (!scrolls) {
          box.removeAttribute("tabindex");
          box.removeAttribute("role");
          box.removeAttribute("aria-label");
          box.removeAttribute("data-scroll-region");
        }
        return;
      }
      if (!scrolls || box.querySelector(FOCUSABLE)) return;
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", nameOf(box) + " (scrolls sideways)");
      box.setAttribute("data-scroll-region", "1");
    });
  }

  window.addEventListener("resize", mark);
  window.addEventListener("toggle", mark, true);  // a <details> opened shows its tables
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mark);
  } else {
    mark();
  }
})();
