// Copy buttons: the only script of the console; every form works without it.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  field.select();
  navigator.clipboard.writeText(field.value).then(() => { button.textContent = "Copied"; },
                                                  () => { document.execCommand("copy"); button.textContent = "Copied"; });
});
