/* Folded sections: a link to a place inside a closed <details> (the page's own jump links,
 * or a link from another page) opens it, so that no link leads to something hidden.
 * Without JavaScript every section still opens by its summary.
 */
(function () {
  "use strict";

  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.scrollIntoView();
  }

  window.addEventListener("hashchange", openTarget);
  // Following a link to the place already in the address changes no hash: open it anyway.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[href^='#']");
    if (link && link.getAttribute("href") === window.location.hash) openTarget();
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", openTarget);
  } else {
    openTarget();
  }
})();
