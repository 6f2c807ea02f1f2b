// robustlab review: the keyboard, and the rules that keep an answer the one the annotator gave.
// Plain JavaScript, no build step (docs/review.md lists every key).
//
// - The answer form is inert until both frames are decoded; from Enter until the next task is
//   fully shown, keys are ignored (and the page says it is loading), so typing ahead on a slow
//   network never lands on the wrong task.
// - The form shows only what the server rendered: the browser's form restoration (Back, the
//   back/forward cache) is undone, and a page restored from that cache is reloaded.
// - Focus stays in the form (Tab cycles in it); Enter always saves the answer, never logs out.
// - The unsaved answer is kept in this tab (sessionStorage) while it is being saved: when the
//   session was lost, the login brings the annotator back and the page saves it then; a reload
//   of the same task restores unsaved choices. Nothing else is ever filled in.
(function () {
  "use strict";
  var DRAFT = "robustlab-review-draft";
  var POLL_MS = 20000;
  var page = document.body.getAttribute("data-page");

  function store() {
    try { return window.sessionStorage; } catch (e) { return null; }
  }
  function readDraft() {
    var s = store();
    if (!s) { return null; }
    try { return JSON.parse(s.getItem(DRAFT) || "null"); } catch (e) { return null; }
  }
  function writeDraft(draft) {
    var s = store();
    if (!s) { return; }
    if (draft) { s.setItem(DRAFT, JSON.stringify(draft)); } else { s.removeItem(DRAFT); }
  }

  if (page === "error") {
    // the server refused the answer (and said why): keep the choices, but never send them again by itself
    var refused = readDraft();
    if (refused && refused.pending) { refused.pending = false; writeDraft(refused); }
  } else if (page === "admin") {
    adminPage();
  } else if (page === "review") {
    reviewPage();
  }

  // --- the admin page: refresh by itself while nobody is using a form -----------------------------------
  function adminPage() {
    var seconds = parseInt(document.body.getAttribute("data-refresh-seconds"), 10) || 30;
    setInterval(function () {
      var active = document.activeElement;
      if (document.visibilityState !== "visible" || (active && active.closest && active.closest("form"))) { return; }
      var refresh = new URLSearchParams(location.search).get("refresh");
      location.replace(location.pathname + (refresh ? "?refresh=" + encodeURIComponent(refresh) : ""));
    }, seconds * 1000);
  }

  // --- the annotator page --------------------------------------------------------------------------------------
  function reviewPage() {
    var form = document.getElementById("answer-form");
    var undoForm = document.getElementById("undo-form");
    var undoButton = document.getElementById("undo");
    var stateLine = document.getElementById("page-state");
    var keysLine = document.getElementById("keys");
    var history = document.getElementById("history");
    var round = document.body.getAttribute("data-round");
    var user = document.body.getAttribute("data-user");
    var ready = !form;          // the form takes keys only once both frames are shown
    var busy = false;           // from Enter (or Z) until the next page replaces this one
    var inHistory = false;
    var pressed = [];
    var LETTERS = { y: ["label_correct", "yes"], n: ["label_correct", "no"], m: ["label_correct", "unsure"],
                    s: ["similarity", "similar"], d: ["similarity", "dissimilar"], k: ["similarity", "unsure"] };
    var KEY_NAMES = { enter: "\u23ce", escape: "Esc" };

    window.addEventListener("pageshow", function (event) {
      if (event.persisted) { location.reload(); }   // from the back/forward cache: ask the server again
    });
    watchRound();

    function setState(text, kind) {
      if (!stateLine) { return; }
      stateLine.textContent = text;
      stateLine.className = "state" + (kind ? " " + kind : "");
    }
    function record(label, ignored) {
      if (!keysLine) { return; }
      pressed.push(label);
      var shown = pressed.slice(-12).join(" ");
      keysLine.textContent = ignored ? shown + "  (" + ignored + ")" : shown;
    }

    if (!form) {
      writeDraft(null);
      document.addEventListener("keydown", function (event) {
        if (plainKey(event) && event.key.toLowerCase() === "z") { event.preventDefault(); undo(); }
        else if (plainKey(event) && event.key.toLowerCase() === "h") { event.preventDefault(); enterHistory(); }
      });
      return;
    }

    var task = form.getAttribute("data-task");
    var textInput = document.getElementById("added-labels-text");
    var boxes = form.querySelectorAll('input[type="checkbox"][name="added_labels"]');

    // 1. only what the server rendered (the saved answer, an undone one, or the anchor step's label)
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.type === "radio" || el.type === "checkbox") { el.checked = el.defaultChecked; }
      else if (el.type === "text") { el.value = el.defaultValue; }
    });
    syncReason();

    // 2. an unsaved answer of this very task: saved after a new login, restored after a reload
    var draft = readDraft();
    var autoSave = false;
    var nav = window.performance && performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
    if (draft && draft.user === user && draft.task === task && draft.round === round) {
      if (form.getAttribute("data-error") === "yes") {
        draft.pending = false;           // the server refused it and says why; the choices are shown again
        writeDraft(draft);
      } else if (draft.pending) {
        applyDraft(draft);
        autoSave = true;
      } else if (nav && nav.type === "reload") {
        applyDraft(draft);
        note("Your unsaved choices were restored after the reload; Enter saves them.");
      } else {
        writeDraft(null);
      }
    } else {
      writeDraft(null);
    }

    // 3. inert until both frames are decoded and painted
    var images = document.querySelectorAll("#frames img");
    Promise.all(Array.prototype.map.call(images, function (img) { return img.decode(); })).then(function () {
      requestAnimationFrame(function () {
        requestAnimationFrame(function () {
          form.inert = false;
          ready = true;
          form.focus({ preventScroll: true });
          if (autoSave) {
            setState("Saving the answer you gave before logging in ...", "busy");
            var base = form.querySelector('input[name="base"]');
            if (base && draft.base) { base.value = draft.base; }
            form.requestSubmit();
          } else {
            setState("Ready", "ready");
          }
        });
      });
    }, function () {
      setState("A frame could not be loaded: reload the page (F5) before answering.", "failed");
    });

    form.addEventListener("submit", function (event) {
      if (!ready || busy) { event.preventDefault(); return; }
      busy = true;
      saveDraft(true);
      document.body.classList.add("is-busy");
      setState("Saving ...", "busy");
      setTimeout(function () { form.inert = true; }, 0);   // after the browser took the answer
    });
    form.addEventListener("change", function (event) {
      if (event.target.name === "reason" && event.target.checked) {
        radio("similarity", "dissimilar").checked = true;
      }
      if (event.target.name === "added_labels") { syncTextFromBoxes(); }
      syncReason();
      saveDraft(false);
    });
    if (textInput) {
      textInput.addEventListener("input", function () { syncBoxesFromText(); saveDraft(false); });
    }

    // 4. the keys
    document.addEventListener("keydown", onKey, true);
    document.addEventListener("focusin", function (event) {
      // focus never leaves the judging form by accident (a stray Tab, a click on the page)
      var target = event.target;
      if (form.contains(target) || (inHistory && history && history.contains(target)) || document.body.classList.contains("full-view")) { return; }
      inHistory = false;
      if (ready) { form.focus({ preventScroll: true }); }
    });
    var frames = document.getElementById("frames");
    if (frames) { frames.addEventListener("click", toggleFull); }

    function plainKey(event) { return !(event.altKey || event.metaKey || event.ctrlKey); }

    function onKey(event) {
      var key = event.key;
      var lower = key.toLowerCase();
      var target = event.target;
      if (!plainKey(event)) { return; }
      if (target === textInput) {
        if (key === "Enter" || key === "Escape") {   // leave the field; Enter here never saves
          event.preventDefault();
          syncBoxesFromText();
          form.focus({ preventScroll: true });
          record(KEY_NAMES[lower]);
        }
        return;
      }
      if (inHistory && history && history.contains(target)) {
        if (key === "Escape" || lower === "h") { event.preventDefault(); inHistory = false; form.focus({ preventScroll: true }); }
        else if (key === "Tab") { cycle(event, history.querySelectorAll("a")); }
        return;                                      // Enter follows the link
      }
      if (key === "Tab") { cycle(event, tabStops()); return; }
      if (!ready || busy) {                          // between Enter and the next task's full load
        if (key.length === 1 || key === "Enter") {
          event.preventDefault();
          record(key === "Enter" ? KEY_NAMES.enter : key.toUpperCase(), "ignored: loading");
        }
        return;
      }
      if (key === "Enter") { event.preventDefault(); record(KEY_NAMES.enter); save(); return; }
      if (key === "Escape") { if (document.body.classList.contains("full-view")) { toggleFull(); } return; }
      if (lower === "z") { event.preventDefault(); record("Z"); undo(); return; }
      if (lower === "f") { event.preventDefault(); record("F"); toggleFull(); return; }
      if (lower === "h") { event.preventDefault(); record("H"); enterHistory(); return; }
      if (lower === "a" && textInput) { event.preventDefault(); record("A"); textInput.focus(); textInput.select(); return; }
      var input = null;
      if (LETTERS[lower]) {
        input = radio(LETTERS[lower][0], LETTERS[lower][1]);
      } else if (/^[1-9]$/.test(key)) {                // digits: a reason, on every step (none on anchor steps)
        input = form.querySelector('input[name="reason"][data-key="' + key + '"]');
        if (!input) { event.preventDefault(); record(key, "digits choose a reason, on pairs only"); return; }
      }
      if (!input) { return; }
      event.preventDefault();
      record(key.toUpperCase());
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }

    function save() {
      if (!ready || busy) { return; }
      if (!form.checkValidity()) {
        form.reportValidity();
        setState("Answer every question first (the marked one).", "failed");
        return;
      }
      form.requestSubmit();
    }

    function undo() {
      if (busy || !undoForm || !undoButton || undoButton.disabled) { return; }
      busy = true;
      document.body.classList.add("is-busy");
      setState("Undoing ...", "busy");
      undoForm.requestSubmit();
    }

    function enterHistory() {
      var first = history && history.querySelector("a");
      if (!first) { return; }
      inHistory = true;
      first.focus();
    }

    function toggleFull() {
      var on = document.body.classList.toggle("full-view");
      Array.prototype.forEach.call(images, function (img) {
        var full = img.getAttribute("data-full");
        if (on && full && img.getAttribute("src") !== full) {
          img.setAttribute("data-page-src", img.getAttribute("src"));
          img.setAttribute("src", full);
        }
      });
      if (!on) { form.focus({ preventScroll: true }); }
    }

    function tabStops() {
      var seen = {};
      return Array.prototype.filter.call(form.querySelectorAll("input, button"), function (el) {
        if (el.type === "hidden" || el.disabled) { return false; }
        if (el.type !== "radio") { return true; }
        if (seen[el.name]) { return false; }
        var checked = form.querySelector('input[name="' + el.name + '"]:checked');
        if (checked && checked !== el) { return false; }
        seen[el.name] = true;
        return true;
      });
    }

    function cycle(event, list) {
      var items = Array.prototype.slice.call(list);
      if (!items.length) { return; }
      var at = items.indexOf(document.activeElement);
      if (document.activeElement && document.activeElement.type === "radio" && at < 0) {
        items.forEach(function (el, i) { if (el.name === document.activeElement.name) { at = i; } });
      }
      event.preventDefault();
      var next = event.shiftKey ? (at <= 0 ? items.length - 1 : at - 1) : (at < 0 || at === items.length - 1 ? 0 : at + 1);
      items[next].focus();
    }

    function radio(name, value) {
      return form.querySelector('input[name="' + name + '"][value="' + value + '"]');
    }

    function syncReason() {
      // a reason belongs to a dissimilar answer only, and a dissimilar answer needs one
      var dissimilar = radio("similarity", "dissimilar");
      var reasons = form.querySelectorAll('input[name="reason"]');
      if (!dissimilar || !reasons.length) { return; }
      Array.prototype.forEach.call(reasons, function (r) {
        r.required = dissimilar.checked;
        if (!dissimilar.checked) { r.checked = false; }
      });
    }

    function syncTextFromBoxes() {
      if (!textInput) { return; }
      textInput.value = Array.prototype.filter.call(boxes, function (b) { return b.checked && !b.disabled; })
        .map(function (b) { return b.value; }).join(", ");
    }

    function syncBoxesFromText() {
      if (!textInput || !boxes.length) { return; }
      var names = {};
      Array.prototype.forEach.call(boxes, function (b) {   // class names, then numbers (a number wins, as on the server)
        names[b.parentNode.textContent.replace(/\(labelled\)/, "").replace(/^\s*\d+\s*/, "").trim().toLowerCase()] = b.value;
      });
      Array.prototype.forEach.call(boxes, function (b) { names[b.value] = b.value; });
      var wanted = {};
      textInput.value.split(/[,;]/).forEach(function (part) {
        var v = part.trim().toLowerCase();
        if (v && names[v] !== undefined) { wanted[names[v]] = true; }
      });
      Array.prototype.forEach.call(boxes, function (b) { if (!b.disabled) { b.checked = !!wanted[b.value]; } });
    }

    function fields() {
      var out = {};
      Array.prototype.forEach.call(form.elements, function (el) {
        if (!el.name || el.type === "hidden" || el.disabled) { return; }
        if ((el.type === "radio" || el.type === "checkbox") && !el.checked) { return; }
        (out[el.name] = out[el.name] || []).push(el.value);
      });
      return out;
    }

    function saveDraft(pending) {
      var base = form.querySelector('input[name="base"]');
      writeDraft({ user: user, task: task, round: round, base: base ? base.value : "", fields: fields(), pending: pending });
    }

    function applyDraft(d) {
      Array.prototype.forEach.call(form.elements, function (el) {
        if (!el.name || el.type === "hidden" || el.disabled) { return; }
        var values = d.fields[el.name] || [];
        if (el.type === "radio" || el.type === "checkbox") { el.checked = values.indexOf(el.value) >= 0; }
        else if (el.type === "text") { el.value = values.length ? values[0] : ""; }
      });
      syncReason();
    }

    function note(text) {
      var p = document.createElement("p");
      p.className = "note restored";
      p.id = "restored-note";
      p.textContent = text;
      var first = form.querySelector("fieldset");
      form.insertBefore(p, first);
    }

    function watchRound() {
      var notice = document.getElementById("round-notice");
      function check() {
        fetch("/api/round", { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(function (r) { return r.ok ? r.json() : null; })
          .then(function (data) {
            if (!data || String(data.round) === round || !notice) { return; }
            notice.textContent = "";
            notice.appendChild(document.createTextNode(data.round === 2
              ? "Round 2 is open (" + data.round2_pairs + " pairs to review together); round 1 is closed. "
              : "Round 1 is open again. "));
            var link = document.createElement("a");
            link.href = "/review";
            link.textContent = "Go to round " + data.round;
            notice.appendChild(link);
            notice.hidden = false;
          })
          .catch(function () { /* offline for a moment: try again later */ });
      }
      setInterval(check, POLL_MS);
      document.addEventListener("visibilitychange", function () {
        if (document.visibilityState === "visible") { check(); }
      });
    }
  }
})();
