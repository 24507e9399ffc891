// Copy-link button: the clipboard API where allowed, else select the link so Ctrl+C copies it.
function setUpCopyLink() {
  const button = document.getElementById("copy-link");
  const input = document.getElementById("share-link");
  if (!button || !input) return;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(input.value);
      button.textContent = "Copied";
    } catch (error) {
      input.select();
      button.textContent = "Press Ctrl+C";
    }
  });
}
setUpCopyLink();
