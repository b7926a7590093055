/* Hotkeys for the review screen: progressive enhancement for <form data-hotkeys>.
 *
 * The form is plain HTML and works without this file. With it, each <fieldset data-group>
 * (a claim, the facts, the techniques, the overall answer) is a group; one group is
 * highlighted at a time. The keys printed beside its choices (1-9, then a-i, the same as
 * templatetags/hotkeys.py) pick a choice in the highlighted group: a radio choice (a claim's
 * label) moves on to the next group, a checkbox is toggled. n / p move to the next / previous
 * group, s saves and opens the next check. In a text field keys type as usual; Esc leaves it.
 * Focus follows the highlight, so a screen reader hears what was chosen.
 */
(function () {
  "use strict";

  var OPTION_KEYS = "123456789abcdefghi";
  var form = document.querySelector("form[data-hotkeys]");
  if (!form) return;
  var groups = Array.prototype.filter.call(
    form.querySelectorAll("fieldset[data-group]"),
    function (group) { return group.querySelector("input:not([disabled])"); });
  if (!groups.length) return;
  var current = -1;

  function inputsOf(group) {
    return Array.prototype.slice.call(
      group.querySelectorAll(".options input[type=radio], .options input[type=checkbox]"));
  }

  function highlight(index) {
    current = Math.max(0, Math.min(groups.length - 1, index));
    groups.forEach(function (group, i) { group.classList.toggle("active", i === current); });
  }

  function activate(index) {
    highlight(index);
    var inputs = inputsOf(groups[current]);
    var target = inputs.filter(function (input) { return input.checked; })[0] || inputs[0];
    if (target) target.focus();
  }

  function typing(element) {
    return element.matches("textarea, select, input:not([type=radio]):not([type=checkbox])");
  }

  form.addEventListener("focusin", function (event) {
    var index = groups.indexOf(event.target.closest("fieldset[data-group]"));
    if (index >= 0 && index !== current) highlight(index);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var key = event.key.toLowerCase();
    var position = OPTION_KEYS.indexOf(key);
    if (key.length === 1 && position >= 0) {
      var input = inputsOf(groups[current])[position];
      if (!input || input.disabled) return;
      event.preventDefault();
      if (input.type === "radio") {
        input.checked = true;
        input.dispatchEvent(new Event("change", {bubbles: true}));
        if (current < groups.length - 1) activate(current + 1); else input.focus();
      } else {
        input.checked = !input.checked;
        input.dispatchEvent(new Event("change", {bubbles: true}));
        input.focus();
      }
    } else if (key === "n" || key === "p") {
      event.preventDefault();
      activate(current + (key === "n" ? 1 : -1));
    } else if (key === "s") {
      var save = form.querySelector("[data-save-next]");
      if (save && !save.disabled) {
        event.preventDefault();
        form.requestSubmit(save);
      }
    }
  });

  form.closest(".review-form").classList.add("keys-on");
  document.getElementById("key-map").hidden = false;
  var unanswered = groups.findIndex(function (group) {
    var inputs = inputsOf(group);
    return inputs.length && inputs[0].type === "radio" &&
      !inputs.some(function (input) { return input.checked; });
  });
  activate(unanswered >= 0 ? unanswered : 0);
})();
