// robustlab review: keyboard shortcuts for every answer, undo, and the reason/similarity coupling.
// Plain JavaScript, no build step; the pages work without it (forms post normally).
(function () {
  "use strict";
  var form = document.getElementById("answer-form");
  var undo = document.getElementById("undo-form");
  var LETTERS = { y: ["label_correct", "yes"], n: ["label_correct", "no"], m: ["label_correct", "unsure"],
                  s: ["similarity", "similar"], d: ["similarity", "dissimilar"], k: ["similarity", "unsure"] };

  function radio(name, value) {
    return form && form.querySelector('input[name="' + name + '"][value="' + value + '"]');
  }

  function syncReason() {
    // A reason belongs to a dissimilar answer only: choosing one marks the pair dissimilar;
    // any other similarity answer clears it. The reason is required when dissimilar.
    if (!form) { return; }
    var dissimilar = radio("similarity", "dissimilar");
    var reasons = form.querySelectorAll('input[name="reason"]');
    if (!dissimilar || !reasons.length) { return; }
    reasons.forEach(function (r) {
      r.required = dissimilar.checked;
      if (!dissimilar.checked) { r.checked = false; }
    });
  }

  if (form) {
    form.addEventListener("change", function (event) {
      if (event.target.name === "reason" && event.target.checked) {
        radio("similarity", "dissimilar").checked = true;
      }
      syncReason();
    });
    syncReason();
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.altKey || event.metaKey || (target && (target.tagName === "TEXTAREA" ||
        (target.tagName === "INPUT" && (target.type === "text" || target.type === "password"))))) {
      return;
    }
    var key = event.key.toLowerCase();
    if (key === "z" || (event.ctrlKey && key === "z")) {
      var button = document.getElementById("undo");
      if (undo && button && !button.disabled) { event.preventDefault(); undo.requestSubmit(); }
      return;
    }
    if (event.ctrlKey || !form || (target && target.tagName === "BUTTON")) { return; }
    if (key === "enter") {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    var input = null;
    if (LETTERS[key]) {
      input = radio(LETTERS[key][0], LETTERS[key][1]);
    } else if (/^[0-9]$/.test(key)) {
      input = form.querySelector('input[data-key="' + key + '"]:not([name="label_correct"]):not([name="similarity"])');
    }
    if (!input) { return; }
    event.preventDefault();
    if (input.type === "checkbox") {
      input.checked = !input.checked;
    } else {
      input.checked = true;
    }
    input.dispatchEvent(new Event("change", { bubbles: true }));
  });
})();
