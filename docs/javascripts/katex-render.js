// Typeset the equations of a page with the KaTeX that the site itself serves (no network).
// pymdownx.arithmatex (generic mode) leaves inline maths as <span class="arithmatex">\(…\)</span> and
// display maths as <div class="arithmatex">\[…\]</div>; each is rendered in place. A formula KaTeX
// cannot parse is shown as a .katex-error element (the browser check of `make docs-check` fails on it).
(function () {
  function strip(tex) {
    tex = tex.trim();
    if ((tex.startsWith("\\(") && tex.endsWith("\\)")) || (tex.startsWith("\\[") && tex.endsWith("\\]"))) {
      return tex.slice(2, -2);
    }
    if (tex.startsWith("$$") && tex.endsWith("$$")) return tex.slice(2, -2);
    return tex;
  }
  function render(root) {
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.dataset.typeset) return;
      var display = el.tagName === "DIV";
      katex.render(strip(el.textContent), el, {
        displayMode: display,
        throwOnError: false,
        strict: "ignore",
        trust: false,
      });
      el.dataset.typeset = "1";
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(function () { render(document.body); });
  } else {
    document.addEventListener("DOMContentLoaded", function () { render(document.body); });
  }
})();
