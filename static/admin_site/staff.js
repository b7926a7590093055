/* Mends what Django's admin scripts draw after the page has loaded.
 *
 * The filter of a two-box select (filter_horizontal: a group's or a user's permissions)
 * is drawn by SelectFilter2.js with a magnifier <span aria-label="…">: a name on an
 * element with no role, which assistive technology ignores (axe: aria-prohibited-attr).
 * Giving it role="img" makes the name count. Runs after the admin's own load handlers.
 */
(function () {
  "use strict";
  window.addEventListener("load", function () {
    document.querySelectorAll(".search-label-icon[aria-label]").forEach(function (icon) {
      icon.setAttribute("role", "img");
    });
  });
})();
