// Feeds page: a Copy button beside each feed address puts it on the clipboard, and says so.
(function () {
  "use strict";
  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var field = document.getElementById(button.dataset.copy);
      if (!field) { return; }
      var done = function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () {
          field.select(); document.execCommand("copy"); done();
        });
      } else {  // http on another host than localhost: no Clipboard API
        field.select(); document.execCommand("copy"); done();
      }
    });
  });
})();
