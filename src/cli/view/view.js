// agentest view: copy buttons for the commands a page shows. Without this script the
// buttons stay hidden and the commands are plain text to select.
"use strict";
for (const button of document.querySelectorAll("button[data-copy]")) {
  const source = document.getElementById(button.dataset.copy);
  if (!source) continue;
  button.hidden = false;
  button.addEventListener("click", async () => {
    const text = source.textContent;
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch {
      // No clipboard (an insecure origin, a denied permission): select the text.
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => {
      button.textContent = "Copy";
    }, 2000);
  });
}

// A page over runs still going names its API (`data-live`): ask it every few seconds
// and reload when what it answers changed, so that a long run can be watched without
// losing a form being filled. (Without script, a meta refresh reloads the page.)
const live = document.body.dataset.live;
if (live) {
  const every = 1000 * Number(document.body.dataset.every || 5);
  let seen = null;
  const look = async () => {
    try {
      const answer = await fetch(live, { cache: "no-store", credentials: "same-origin" });
      const text = await answer.text();
      if (seen !== null && text !== seen) {
        location.reload();
        return;
      }
      seen = text;
    } catch {
      // The viewer stopped or the network blinked: try again next time.
    }
    setTimeout(look, every);
  };
  look();
}
